"""Fixtures of the generation tests: the exported packages (cached) and the aotrt module.

Environment:
  AOTRT_E2E_CACHE   packages are kept in its generate/ folder and reused while the export
                    code, the models, torch and transformers are unchanged (exports.fingerprint);
                    also holds the inductor cache. Default: a fresh pytest temp dir.
  AOTRT_E2E_JOBS    parallel export processes (default 2).
The tests need the Python package (`import aotrt`: pip install ., as scripts/test.sh's Python
step does); its absence is a failure, not a skip.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # as tests/hf: `tests.generate.models`, no clash with tests/hf/models.py
    sys.path.insert(0, str(REPO))

from tests.generate import exports, models  # noqa: E402,F401

REPORT: dict[str, str] = {}  # test id -> one line (tokens, margins, logit differences)
EXPORT_TIMES: dict[str, float] = {}


@pytest.fixture(scope="session")
def aotrt_module():
    try:
        import aotrt
    except ImportError as e:
        pytest.fail(f"import aotrt failed ({e}): install the Python package first "
                    "(python3 -m pip install . from the repository root)", pytrace=False)
    return aotrt


@pytest.fixture(scope="session")
def generate_report() -> dict[str, str]:
    return REPORT


def _requested(session, device: str) -> list[tuple[str, str]]:
    """(model, package kind) pairs the collected tests of `device` use (their `name`, `package`
    and `device` parameters; no `device`: the CPU), so `-k llama` exports only LLaMA's."""
    wanted = []
    for item in session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "name" in params and "package" in params and params.get("device", "cpu") == device:
            pair = (params["name"], params["package"])
            if pair not in wanted:
                wanted.append(pair)
    return wanted


def _packages(request, tmp_path_factory, device: str) -> dict:
    cache = os.environ.get("AOTRT_E2E_CACHE")
    out_dir = Path(cache) / "generate" if cache else tmp_path_factory.mktemp(f"generate-{device}")
    out_dir.mkdir(parents=True, exist_ok=True)
    if cache:  # inherited by the spawned export workers
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(cache) / "inductor_cache"))
    t0 = time.perf_counter()
    results = exports.export_all(_requested(request.session, device), out_dir, device,
                                 int(os.environ.get("AOTRT_E2E_JOBS", "2")))
    for (name, kind), info in results.items():
        if "total_s" in info:
            EXPORT_TIMES[f"{exports.stem(name, kind, device)}"] = info["total_s"]
    EXPORT_TIMES[f"(wall, {device} exports and cache lookups)"] = round(time.perf_counter() - t0, 1)
    return results


def _getter(results: dict):
    def get(name: str, kind: str) -> dict:
        info = results.get((name, kind))
        if info is None:
            pytest.fail(f"{name} ({kind}) was not exported (not requested at collection?)", pytrace=False)
        if "error" in info:
            pytest.fail(f"export of {name} ({kind}) failed:\n{info.get('traceback', info['error'])}", pytrace=False)
        return info
    return get


@pytest.fixture(scope="session")
def cpu_packages(request, tmp_path_factory):
    """(name, kind) -> export info of a CPU package; fails the test if its export failed."""
    return _getter(_packages(request, tmp_path_factory, "cpu"))


@pytest.fixture(scope="session")
def cuda_packages(request, tmp_path_factory):
    return _getter(_packages(request, tmp_path_factory, "cuda"))


@pytest.fixture
def packages(request, device):
    """The package getter of the test's `device` parameter (cpu_packages or cuda_packages)."""
    return request.getfixturevalue(f"{device}_packages")


def pytest_terminal_summary(terminalreporter):
    """Tokens compared, margins and logit differences, printed even without -s."""
    if not REPORT and not EXPORT_TIMES:
        return
    tr = terminalreporter
    if REPORT:
        tr.section("aotrt generation: tokens against the reference")
        for test, line in REPORT.items():
            tr.write_line(f"{test}: {line}")
    if EXPORT_TIMES:
        tr.section("aotrt generation: export times (s)")
        for name, s in EXPORT_TIMES.items():
            tr.write_line(f"{name:48s} {s}")
