"""CI's slice of the Hugging Face sweep (tests/hf/sweep.py CI_SLICE), swept once per session
exactly as `python3 -m tests.hf.sweep --slice ci` does: each entry must end `ok` (exported by
torch's own flow, no MISSING shim, every run within the entry's tolerance of eager). The whole
sweep runs by command and its table is docs/hf/cpu-torch2.13.md.

Environment:
  AOTRT_BIN        the aotrt CLI (default build/aotrt); missing is an error
  AOTRT_HF_CACHE   package cache (default build/hf-cache); a warm one only reruns aotrt
  AOTRT_HF_JOBS    export processes (default 2)
transformers is installed by scripts/install_deps.sh: its absence is a failure, not a skip.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.hf import sweep  # noqa: E402


@pytest.fixture(scope="session")
def swept(tmp_path_factory) -> dict[str, dict]:
    aotrt = Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt"))
    if not aotrt.is_file():
        pytest.fail(f"aotrt CLI not found at {aotrt}; build it or set AOTRT_BIN", pytrace=False)
    cache = Path(os.environ.get("AOTRT_HF_CACHE", REPO / "build" / "hf-cache"))
    records = sweep.sweep(sweep.CI_SLICE, cache, tmp_path_factory.mktemp("hf"), aotrt,
                          int(os.environ.get("AOTRT_HF_JOBS", "2")))
    return {r["name"]: r for r in records}


@pytest.mark.parametrize("name", sweep.CI_SLICE)
def test_hf_architecture_matches_eager(name, swept):
    r = swept[name]
    assert r["outcome"] == "ok", f"{name}: {r['outcome']}: {r.get('message')}\n{r.get('traceback', '')}"
    assert not r["missing"], f"{name}: aotrt lacks {r['missing']}"
    assert r["shims"], f"{name}: the package imports no op shim (the sweep would prove nothing of aotrt's ops)"
    for run in r["runs"]:
        print(f"{name} {run['shapes']}: max |aotrt - eager| = {run['max_abs_diff']:.3g} "
              f"(max |eager| {run['max_abs_eager']:.3g}, tolerance {r['tol']})")
