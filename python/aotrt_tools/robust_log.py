"""Records a robustness case for docs/robustness.md (scripts/robustness_table.py).

With AOTRT_ROBUSTNESS_LOG naming a file, record() appends one JSON line per case, as
tests/unit/robust_cases.h's record_case() does for the C++ tests.
"""

from __future__ import annotations

import json
import os


def record(area: str, case: str, outcome: str, message: str = "") -> None:
    path = os.environ.get("AOTRT_ROBUSTNESS_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(dict(area=area, case=case, outcome=outcome, message=message, source="pytest")) + "\n")
