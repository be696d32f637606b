"""Fixtures for aotrt's end-to-end tests: export the zoo once, find the aotrt binary.

Environment:
  AOTRT_BIN          the aotrt CLI (default <repo>/build/aotrt). Required: a missing binary
                     is an error, not a skip.
  AOTRT_E2E_CACHE    where exported packages live. Reused across runs when the export code
                     and torch version are unchanged (see export.source_fingerprint); also
                     holds the inductor cache. Default: a fresh pytest temp dir.
  AOTRT_E2E_JOBS     parallel export processes (default 2).
  AOTRT_E2E_CHECK_INPUTS  AOTI_RUNTIME_CHECK_INPUTS for the model (default 1). See
                     Note [AOTI_RUNTIME_CHECK_INPUTS] in test_zoo_cpu.py.

Export dominates the run time: about 4-7 s of g++ per model, 2 processes on 2 cores.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from aotrt_tools import export, zoo  # noqa: E402  (needs the sys.path entry above)

# name -> list of max abs diffs, reported at the end of the run whatever -s says.
DIFFS: dict[str, list[float]] = {}
EXPORT_TIMES: dict[str, float] = {}


@pytest.fixture(scope="session")
def diff_report() -> dict[str, list[float]]:
    """Tests record their max abs diffs here for pytest_terminal_summary."""
    return DIFFS


@pytest.fixture(scope="session")
def aotrt_bin() -> Path:
    path = Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt"))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"aotrt binary not found or not executable at {path}. Build it first "
            "(cmake -S . -B build && cmake --build build) or point AOTRT_BIN at it.",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def unit_tests(aotrt_bin) -> Path:
    """build/aotrt_unit_tests (beside the CLI), or AOTRT_UNIT_TESTS: the C++ cases on real packages."""
    path = Path(os.environ.get("AOTRT_UNIT_TESTS", aotrt_bin.parent / "aotrt_unit_tests"))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"aotrt_unit_tests not found at {path}; build it or set AOTRT_UNIT_TESTS", pytrace=False)
    return path


def _requested_models(session) -> list[str]:
    """Zoo models the collected tests use, so `-k mm` doesn't export the whole zoo."""
    wanted = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("name") if callspec else None
        if name and name not in wanted:
            wanted.append(name)
    return wanted


@pytest.fixture(scope="session")
def zoo_exports(request, tmp_path_factory) -> dict[str, dict]:
    """name -> export_model() result (or {'error', 'traceback'}) for every requested model.

    Exports run in spawned worker processes; the inductor cache goes in the export cache
    dir when one is given, so a second run only re-links what changed.
    """
    cache = os.environ.get("AOTRT_E2E_CACHE")
    out_dir = Path(cache) if cache else tmp_path_factory.mktemp("zoo")
    out_dir.mkdir(parents=True, exist_ok=True)
    if cache:
        # Inherited by the spawned export workers.
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(out_dir / "inductor_cache"))

    fingerprint = export.source_fingerprint()
    results: dict[str, dict] = {}
    to_export = []
    for name in _requested_models(request.session):
        hit = export.cached_export(out_dir, name, fingerprint)
        if hit is not None:
            results[name] = hit
        else:
            to_export.append(name)

    if to_export:
        jobs = int(os.environ.get("AOTRT_E2E_JOBS", "2"))
        t0 = time.perf_counter()
        for info in export.export_many([dict(out_dir=out_dir, name=n) for n in to_export], processes=jobs):
            results[info["name"]] = info
            if "total_s" in info:
                EXPORT_TIMES[info["name"]] = info["total_s"]
        EXPORT_TIMES["(wall, all exports)"] = round(time.perf_counter() - t0, 1)
    for info in results.values():
        info["out_dir"] = str(out_dir)
    return results


@pytest.fixture
def exported(zoo_exports):
    """Returns a function name -> export info that fails the test if that export failed."""

    def get(name: str) -> dict:
        info = zoo_exports.get(name)
        if info is None:
            pytest.fail(f"{name} was not exported (not requested at collection?)", pytrace=False)
        if "package" not in info:
            pytest.fail(f"export of {name} failed:\n{info.get('traceback', info.get('error'))}", pytrace=False)
        return info

    return get


def pytest_terminal_summary(terminalreporter):
    """Max abs diff per model and export times, printed even without -s."""
    if not DIFFS and not EXPORT_TIMES:
        return
    tr = terminalreporter
    tr.section("aotrt e2e: max abs diff vs eager")
    for name, diffs in DIFFS.items():
        e = zoo.entry(name)
        tr.write_line(f"{name:32s} {' '.join(f'{d:.3g}' for d in diffs):24s} (atol {e.atol:g}, rtol {e.rtol:g})")
    if EXPORT_TIMES:
        tr.section("aotrt e2e: export times (s)")
        for name, s in EXPORT_TIMES.items():
            tr.write_line(f"{name:32s} {s}")
