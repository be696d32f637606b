"""Fixtures of the OpInfo CI slice: notes printed at the end whatever -s says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # for `tests.opinfo.*`

NOTES: dict[str, list[str]] = {"not_served": [], "now_passing": []}


@pytest.fixture(scope="session")
def opinfo_notes() -> dict[str, list[str]]:
    return NOTES


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if NOTES["not_served"]:
        tr.section(f"OpInfo CI slice: {len(NOTES['not_served'])} ops known not served")
        for line in NOTES["not_served"]:
            tr.write_line(line)
    if NOTES["now_passing"]:
        tr.section("OpInfo CI slice: now passing, not yet `ok` in the committed table")
        for line in NOTES["now_passing"]:
            tr.write_line(line)
