"""CI's OpInfo slice: the ops of tests/opinfo/ci_slice.py (CI_OPS in float32 and
CI_DTYPE_CASES in bf16, float64, int64 and bool; CPU, first sample), swept once per session
exactly as `python3 -m tests.opinfo.sweep --slice ci` does, and checked against the committed
tables docs/opinfo/cpu-torch<version>.md (float32) and cpu-torch<version>-dtypes.md (the others):

- an (op, dtype) row the tables list as `ok` must still be `ok` (a regression fails its test);
- an op the table lists otherwise passes its test whatever it does now, and the terminal
  summary lists every such known-not-served op with its reason (and says which now pass, so
  the table can be regenerated).

Environment:
  AOTRT_BIN              the aotrt CLI (default build/aotrt); missing is an error
  AOTRT_OPINFO_CACHE     package cache (default build/opinfo-cache); a warm one only reruns aotrt
  AOTRT_OPINFO_WORKERS   compile processes (default 2)
  AOTRT_OPINFO_OPS       comma-separated ops to sweep in float32 instead of the whole slice (a quick check)
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
DTYPE_TABLE = TABLE.with_name(TABLE.stem + "-dtypes.md")


@pytest.fixture(scope="session")
def swept(tmp_path_factory) -> dict[tuple[str, str], dict]:
    """(op, dtype) -> the case record of this run's sweep of the CI slice."""
    from tests.opinfo import sweep

    binary = Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt"))
    if not binary.is_file():
        pytest.fail(f"aotrt binary not found at {binary}; build it or set AOTRT_BIN", pytrace=False)
    out = tmp_path_factory.mktemp("opinfo")
    cache = os.environ.get("AOTRT_OPINFO_CACHE", str(REPO / "build" / "opinfo-cache"))
    workers = os.environ.get("AOTRT_OPINFO_WORKERS", "2")
    only = os.environ.get("AOTRT_OPINFO_OPS")
    rc = sweep.main(["--device", "cpu", "--out", str(out), "--cache", cache,
                     "--workers", workers, "--aotrt", str(binary)]
                    + (["--ops", only, "--dtypes", "float32"] if only else ["--slice", "ci"]))
    assert rc == 0
    data = json.loads((out / "results.json").read_text())
    return {(c["op"], c["dtype"]): c for c in data["cases"]}


@pytest.fixture(scope="session")
def committed() -> dict[tuple[str, str], dict[str, str]]:
    rows = {}
    for table in (TABLE, DTYPE_TABLE):
        if not table.exists():
            pytest.fail(f"no committed table {table} for torch {TORCH}; run the sweep with --table "
                        f"{table.relative_to(REPO)} (docs/opinfo/README.md)", pytrace=False)
        rows.update(report.read_table(table))
    return rows


_ONLY = [o for o in os.environ.get("AOTRT_OPINFO_OPS", "").split(",") if o]
CASES = ([(o, "float32") for o in _ONLY] if _ONLY
         else [(o, "float32") for o in ci_slice.CI_OPS] + list(ci_slice.CI_DTYPE_CASES))


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_op_has_not_regressed(op, dtype, swept, committed, opinfo_notes):
    got = swept.get((op, dtype))
    assert got is not None, f"{op} {dtype}: the sweep produced no case"
    table = TABLE if dtype == "float32" else DTYPE_TABLE
    was = committed.get((op, dtype))
    assert was is not None, f"{op} {dtype} is not in {table.name}: regenerate the table"
    if was["outcome"] == "ok":
        assert got["outcome"] == "ok", (
            f"{op} {dtype} passed in {table.name} and is now {got['outcome']}: {got.get('message')}")
        return
    if got["outcome"] == "ok":
        opinfo_notes["now_passing"].append(f"{op} {dtype}: {was['outcome']} in the table, ok now")
    opinfo_notes["not_served"].append(f"{op} {dtype}: {got['outcome']}: {got.get('message', '')[:200]}")


def test_slice_serves_most_families(swept):
    """The slice tests something: at least half its ops run and match eager."""
    ok = [key for key, c in swept.items() if c["outcome"] == "ok"]
    assert len(ok) >= len(CASES) // 2, f"only {len(ok)} of {len(CASES)} cases ok: {ok}"
