"""The shims libaotrt.so exports against torch's generated C-shim headers.

Runs scripts/ops_coverage.py --check: every op row's C signature equals torch's header,
the library exports exactly the rows of the devices it was built for (no aoti_torch_cuda_*
in a CPU-only build), and docs/ops/coverage.md is up to date. Prints what is missing.
AOTRT_BUILD_DIR picks the build (default <repo>/build).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_shims_match_torch_headers_and_the_committed_coverage_list():
    build = os.environ.get("AOTRT_BUILD_DIR", str(REPO / "build"))
    assert (Path(build) / "libaotrt.so").exists(), f"no libaotrt.so in {build}: build it first"
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "ops_coverage.py"), "--build", build, "--check"],
                       capture_output=True, text=True)
    print(r.stdout)
    assert r.returncode == 0, r.stderr
