"""libaotrt.so exports aotrt's own names and nothing else (Note [Exported symbols], CMakeLists.txt).

Loading a model makes libaotrt.so global, so every name it exports comes first for libraries
loaded before it: a std:: instantiation, nlohmann::json, oneDNN's C++ wrappers or KISS FFT
exported from it would take the place of libtorch's own in a process that holds both.
AOTRT_BUILD_DIR picks the build (default <repo>/build).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The C ABI, aotrt's C entry points and the redirected imports (src/exports.map), and the
# aotrt namespace in its mangled forms: entities, typeinfo, vtables, inline statics.
OWN = re.compile(r"^(aoti_|aotrt_|(secure_)?aotenv$|aoModuleLoad(Data)?$|aomm(64)?$|_Z(N|NK|TIN|TSN|TVN|ZN|ZNK|GVZN|GVZNK|THN|TWN)5aotrt)")


def exported(lib: Path) -> list[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], check=True, capture_output=True,
                         text=True).stdout
    # nm prints "address type name"; version definitions (type A) name no code.
    return [f[2] for f in (line.split() for line in out.splitlines()) if len(f) == 3 and f[1] != "A"]


def test_only_aotrts_own_names_are_exported():
    lib = Path(os.environ.get("AOTRT_BUILD_DIR", REPO / "build")) / "libaotrt.so"
    assert lib.exists(), f"no {lib}: build it first"
    names = exported(lib)
    assert any(n.startswith("aoti_torch_empty_strided") for n in names), "the C ABI is not exported"
    others = sorted(n for n in names if not OWN.match(n))
    assert not others, f"{len(others)} foreign symbol(s) exported, e.g. {others[:10]}"
