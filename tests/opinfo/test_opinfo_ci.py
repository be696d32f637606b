"""CI's OpInfo slice: the ops of tests/opinfo/ci_slice.py (float32, CPU, first sample), swept
once per session exactly as `python3 -m tests.opinfo.sweep --slice ci` does, and checked
against the committed table docs/opinfo/cpu-torch<version>.md:

- an op the table lists as `ok` must still be `ok` (a regression fails its test);
- an op the table lists otherwise passes its test whatever it does now, and the terminal
  summary lists every such known-not-served op with its reason (and says which now pass, so
  the table can be regenerated).

Environment:
  AOTRT_BIN              the aotrt CLI (default build/aotrt); missing is an error
  AOTRT_OPINFO_CACHE     package cache (default build/opinfo-cache); a warm one only reruns aotrt
  AOTRT_OPINFO_WORKERS   compile processes (default 2)
  AOTRT_OPINFO_OPS       comma-separated ops to sweep instead of the whole slice (a quick check)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.opinfo import ci_slice, report  # noqa: E402

TORCH = __import__("torch").__version__.split("+")[0]
TABLE = REPO / "docs" / "opinfo" / f"cpu-torch{'.'.join(TORCH.split('.')[:2])}.md"


@pytest.fixture(scope="session")
def swept(tmp_path_factory) -> dict[str, dict]:
    """op -> the case record of this run's sweep of the CI slice."""
    from tests.opinfo import sweep

    binary = Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt"))
    if not binary.is_file():
        pytest.fail(f"aotrt binary not found at {binary}; build it or set AOTRT_BIN", pytrace=False)
    out = tmp_path_factory.mktemp("opinfo")
    cache = os.environ.get("AOTRT_OPINFO_CACHE", str(REPO / "build" / "opinfo-cache"))
    workers = os.environ.get("AOTRT_OPINFO_WORKERS", "2")
    only = os.environ.get("AOTRT_OPINFO_OPS")
    rc = sweep.main(["--device", "cpu", "--dtypes", "float32", "--out", str(out), "--cache", cache,
                     "--workers", workers, "--aotrt", str(binary)]
                    + (["--ops", only] if only else ["--slice", "ci"]))
    assert rc == 0
    data = json.loads((out / "results.json").read_text())
    return {c["op"]: c for c in data["cases"]}


@pytest.fixture(scope="session")
def committed() -> dict[tuple[str, str], dict[str, str]]:
    if not TABLE.exists():
        pytest.fail(f"no committed table {TABLE} for torch {TORCH}; run the sweep with "
                    f"--table {TABLE.relative_to(REPO)}", pytrace=False)
    return report.read_table(TABLE)


OPS = [o for o in os.environ["AOTRT_OPINFO_OPS"].split(",") if o] if os.environ.get("AOTRT_OPINFO_OPS") else ci_slice.CI_OPS


@pytest.mark.parametrize("op", OPS)
def test_op_has_not_regressed(op, swept, committed, opinfo_notes):
    got = swept.get(op)
    assert got is not None, f"{op}: the sweep produced no case"
    was = committed.get((op, "float32"))
    assert was is not None, f"{op} float32 is not in {TABLE.name}: regenerate the table"
    if was["outcome"] == "ok":
        assert got["outcome"] == "ok", (
            f"{op} passed in {TABLE.name} and is now {got['outcome']}: {got.get('message')}")
        return
    if got["outcome"] == "ok":
        opinfo_notes["now_passing"].append(f"{op}: {was['outcome']} in the table, ok now")
    opinfo_notes["not_served"].append(f"{op}: {got['outcome']}: {got.get('message', '')[:200]}")


def test_slice_serves_most_families(swept):
    """The slice tests something: at least half its ops run and match eager."""
    ok = [op for op, c in swept.items() if c["outcome"] == "ok"]
    assert len(ok) >= len(OPS) // 2, f"only {len(ok)} ops ok: {ok}"
