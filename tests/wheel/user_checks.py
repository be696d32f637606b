"""What a user does after `pip install aotrt-*.whl`, run by that environment's own python.

Only the standard library and numpy are imported (the environment holds nothing else):
tests/wheel/test_wheel.py runs it in fresh venvs holding numpy and the wheel, and
scripts/wheel_gpu.sh runs it on the GPU machine after installing the CUDA wheel there.

    python user_checks.py --site SITE_PACKAGES --package DIR/NAME.pt2 --rtol R --atol A [--cuda]

It loads the package with `aotrt.load`, runs it on DIR/NAME.input_K.npy and compares with
DIR/NAME.expected_K.npy, then checks, from /proc/self/maps, that every library the run
loaded came from the wheel: aotrt, oneDNN, OpenBLAS, libzip, Sleef and libgomp from
SITE_PACKAGES (one libgomp in the process: Note [OpenMP in the wheel] in CMakeLists.txt),
and with --cuda or --nvidia the CUDA libraries from SITE_PACKAGES/nvidia (the declared
nvidia-* wheels; --nvidia: a CPU package run by the CUDA wheel, which loads them all the same).
Prints one JSON line (the loaded libraries, the max abs diff); exits non-zero on a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

CPU_LIBRARIES = ["libaotrt.so", "libaotrt_abi.so", "libdnnl", "libopenblas", "libzip", "libsleef", "libgomp"]
# What libaotrt links (NEEDED); cuRAND is not among them (aotrt draws from its own Philox).
CUDA_LIBRARIES = ["libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libcufft.so",
                  "libcusolver.so"]


def _numbered(stem: Path, kind: str) -> list[Path]:
    files = []
    while (p := stem.parent / f"{stem.name}.{kind}_{len(files)}.npy").exists():
        files.append(p)
    return files


def _mapped_libraries() -> dict[str, set[str]]:
    """File name -> the paths it is mapped from, for every shared library in the process."""
    found: dict[str, set[str]] = {}
    for line in Path("/proc/self/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and ".so" in parts[5]:
            path = parts[5].strip()
            found.setdefault(Path(path).name, set()).add(path)
    return found


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--site", required=True, type=Path, help="the site-packages the wheel went into")
    ap.add_argument("--package", required=True, type=Path)
    ap.add_argument("--rtol", type=float, required=True)
    ap.add_argument("--atol", type=float, required=True)
    ap.add_argument("--cuda", action="store_true", help="a CUDA package, run by the CUDA wheel")
    ap.add_argument("--nvidia", action="store_true",
                    help="the CUDA wheel: its CUDA libraries must come from SITE/nvidia (implied by --cuda)")
    a = ap.parse_args()
    site = a.site.resolve()
    failures = []

    import aotrt

    if site not in Path(aotrt.__file__).resolve().parents:
        failures.append(f"imported {aotrt.__file__}, not the install in {site}")
    if "torch" in sys.modules:
        failures.append("importing aotrt imported torch")

    stem = a.package.with_suffix("")
    inputs = [np.load(p) for p in _numbered(stem, "input")]
    expected = [np.load(p) for p in _numbered(stem, "expected")]
    if not inputs or not expected:
        failures.append(f"no {stem}.input_K.npy / .expected_K.npy beside the package")
    model = aotrt.load(a.package)
    want_device = "cuda" if a.cuda else "cpu"
    if not str(model.device).startswith(want_device):
        failures.append(f"model runs on {model.device}, expected {want_device}")
    outputs = model(*inputs)
    max_diff = 0.0
    if len(outputs) != len(expected):
        failures.append(f"{len(outputs)} outputs, expected {len(expected)}")
    for k, (got, want) in enumerate(zip(outputs, expected)):
        got = np.asarray(got.numpy())  # a host copy for a CUDA output
        if got.shape != want.shape or got.dtype != want.dtype:
            failures.append(f"output_{k}: {got.dtype}{got.shape}, expected {want.dtype}{want.shape}")
            continue
        max_diff = max(max_diff, float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0)
        if not np.allclose(got, want, rtol=a.rtol, atol=a.atol):
            failures.append(f"output_{k} differs from eager: max abs diff {max_diff}")

    mapped = _mapped_libraries()
    loaded = {}
    for prefix in CPU_LIBRARIES + (CUDA_LIBRARIES if a.cuda or a.nvidia else []):
        paths = sorted({p for name, ps in mapped.items() if name.startswith(prefix) for p in ps})
        loaded[prefix] = paths
        under = site / "nvidia" if prefix in CUDA_LIBRARIES else site
        if not paths:
            failures.append(f"{prefix}: not loaded")
        elif any(under not in Path(p).parents for p in paths):
            failures.append(f"{prefix}: loaded from {paths}, not from the wheel's {under}")
    if len(loaded["libgomp"]) > 1:
        failures.append(f"more than one OpenMP runtime in the process: {loaded['libgomp']}")

    print(json.dumps({"package": str(a.package), "max_abs_diff": max_diff, "loaded": loaded}))
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
