"""scripts/check_system_python.sh, which .ci/run runs scripts/install_deps.sh under (issue 32):
it must pass a command that leaves the watched Python alone and fail one that installs into
it. A throwaway interpreter (a venv without pip, made here) stands for the system's, so that
nothing is written into the real one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_system_python.sh"


@pytest.fixture
def fake_system_python(tmp_path) -> tuple[Path, Path]:
    """(interpreter, its site-packages) of a fresh venv standing for the system's Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "py")], check=True)
    python = tmp_path / "py" / "bin" / "python3"
    site = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    return python, site


def _check(python: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *command], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
                               "AOTRT_SYSTEM_PYTHON": str(python)})


def test_unchanged_python_passes(fake_system_python):
    python, _ = fake_system_python
    r = _check(python, "true")
    assert r.returncode == 0, r.stderr
    assert "unchanged" in r.stdout


def test_a_package_installed_into_it_fails(fake_system_python):
    """What `pip install` leaves (a dist-info folder and the module) is caught and named."""
    python, site = fake_system_python
    install = (f"mkdir -p {site}/evil-1.0.dist-info && "
               f"printf 'Metadata-Version: 2.1\\nName: evil\\nVersion: 1.0\\n' > {site}/evil-1.0.dist-info/METADATA && "
               f"touch {site}/evil.py")
    r = _check(python, "bash", "-c", install)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "changed the system Python" in r.stderr
    assert "evil==1.0" in r.stderr and f"{site}/evil.py" in r.stderr, r.stderr


def test_a_file_without_metadata_fails(fake_system_python):
    """A .pth file changes what the Python imports though pip freeze would not list it."""
    python, site = fake_system_python
    r = _check(python, "bash", "-c", f"echo /somewhere > {site}/extra.pth")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{site}/extra.pth" in r.stderr


def test_the_command_failing_fails(fake_system_python):
    python, _ = fake_system_python
    assert _check(python, "false").returncode != 0
