"""The `aotrt` console script of the wheel: execs the C++ command-line tool it ships.

The tool is aotrt/bin/aotrt (Note [The wheel's layout] in CMakeLists.txt), which finds
libaotrt.so.0 beside the package through its RPATH; this only gives it a place on the
environment's PATH (bin/aotrt), as pip installs console scripts. The process is replaced,
so exit codes, signals and output are the tool's own.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def executable() -> Path:
    """Path of the command-line tool inside the installed package."""
    return Path(__file__).resolve().parent / "bin" / "aotrt"


def main() -> None:
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.exit(f"aotrt: the command-line tool is missing from this install ({exe})")
    os.execv(exe, ["aotrt", *sys.argv[1:]])


if __name__ == "__main__":
    main()
