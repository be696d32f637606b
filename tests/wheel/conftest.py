"""Fixtures for the wheel as a user installs it (tests/wheel/test_wheel.py).

scripts/build_wheel.sh makes the wheels first; each CPython it finds (build_wheel.sh
--list-pythons) gets a fresh venv in the pytest temp dir holding numpy and nothing else, and
the wheel that serves it is installed there with `pip install --no-index` (so the wheel's
declared dependencies must already be satisfied: numpy). The packages run there are the
e2e zoo's, exported here with torch as for tests/e2e (its fixtures are reused, so
AOTRT_E2E_CACHE shares the exports with that suite).

The CUDA wheel (aotrt_cu13-*, build_wheel.sh --cuda) cannot run here (no GPU, and its
nvidia-* dependencies are not installed): test_cuda_wheel_* check its layout and metadata,
and that a venv with the nvidia-* libraries in site-packages/nvidia, where pip puts them,
loads them from there. scripts/wheel_gpu.sh runs it on a GPU machine.

Environment:
  AOTRT_WHEEL_DIR    the folder holding the wheels (default <repo>/dist)
  AOTRT_CUDA_WHEELS  the nvidia-* wheels scripts/install_deps.sh unpacked (default
                     /opt/aotrt-cuda-wheels), the stand-ins for the CUDA wheel's dependencies
  AOTRT_E2E_CACHE    as for tests/e2e
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WHEEL_DIR = Path(os.environ.get("AOTRT_WHEEL_DIR", REPO / "dist"))


if str(REPO) not in sys.path:  # for tests.zoo_fixtures (the root holds no `aotrt` to shadow)
    sys.path.insert(0, str(REPO))
from tests.zoo_fixtures import e2e_conftest  # noqa: E402

_e2e = e2e_conftest()
zoo_exports = _e2e.zoo_exports  # session fixture: exports every zoo model the tests ask for
exported = _e2e.exported        # name -> export info; fails the test if that export failed


def pythons() -> list[tuple[str, str]]:
    """(version, interpreter) for every CPython the wheels serve here, as build_wheel.sh finds them."""
    out = subprocess.run(["bash", str(REPO / "scripts" / "build_wheel.sh"), "--list-pythons"],
                         capture_output=True, text=True, check=True).stdout
    return [tuple(line.split(maxsplit=1)) for line in out.splitlines() if line.strip()]


def wheels() -> list[Path]:
    return sorted(WHEEL_DIR.glob("aotrt-*.whl"))


def cuda_wheels() -> list[Path]:
    return sorted(WHEEL_DIR.glob("aotrt_cu13-*.whl"))


def wheel_for(version: str) -> Path:
    """The CPU wheel that serves CPython `version`: its own (3.10, 3.11) or cp312-abi3."""
    major, minor = (int(v) for v in version.split("."))
    tag = f"cp{major}{minor}-cp{major}{minor}" if minor < 12 else "cp312-abi3"
    found = [w for w in wheels() if f"-{tag}-manylinux_" in w.name]
    if len(found) != 1:
        pytest.fail(f"no single {tag} manylinux wheel for CPython {version} in {WHEEL_DIR} "
                    f"(found {[w.name for w in wheels()]}); run scripts/build_wheel.sh", pytrace=False)
    return found[0]


@pytest.fixture(scope="session")
def cuda_python() -> str:
    """The interpreter that builds the CUDA wheel in scripts/test.sh (3.12, else the newest)."""
    found = dict(pythons())
    return found.get("3.12") or list(found.values())[-1]


@dataclass
class UserEnv:
    version: str
    wheel: Path
    root: Path     # the venv
    python: Path   # its interpreter
    site: Path     # its site-packages (purelib == platlib in a venv)

    @property
    def bin(self) -> Path:
        return self.root / "bin"


_ENVS: dict[str, UserEnv] = {}


def make_user_env(python_version: str, tmp_path_factory) -> UserEnv:
    """A venv of `python_version` holding numpy and the wheel, made once per session."""
    if python_version in _ENVS:
        return _ENVS[python_version]
    interpreter = dict(pythons())[python_version]
    wheel = wheel_for(python_version)
    root = tmp_path_factory.mktemp(f"venv-{python_version}")
    run = lambda *cmd: subprocess.run(cmd, check=True, capture_output=True, text=True)  # noqa: E731
    run(interpreter, "-m", "venv", str(root))
    py = root / "bin" / "python"
    run(str(py), "-m", "pip", "install", "-q", "numpy")
    run(str(py), "-m", "pip", "install", "-q", "--no-index", str(wheel))
    site = Path(run(str(py), "-c", "import sysconfig; print(sysconfig.get_path('platlib'))").stdout.strip())
    env = UserEnv(python_version, wheel, root, py, site)
    _ENVS[python_version] = env
    return env


@pytest.fixture
def user_env(python_version, tmp_path_factory) -> UserEnv:
    return make_user_env(python_version, tmp_path_factory)


@pytest.fixture
def newest_user_env(tmp_path_factory) -> UserEnv:
    """The venv of the newest CPython found (its wheel is cp312-abi3 where there is one)."""
    return make_user_env(pythons()[-1][0], tmp_path_factory)


def pytest_generate_tests(metafunc):
    if "python_version" in metafunc.fixturenames:
        metafunc.parametrize("python_version", [v for v, _ in pythons()])
    for fixture, find in (("wheel", wheels), ("cuda_wheel", cuda_wheels)):
        if fixture in metafunc.fixturenames:
            found = find()
            metafunc.parametrize(fixture, found or [None], ids=[w.name for w in found] or ["none-built"])
