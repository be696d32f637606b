"""Run an aotrt package with libtorch's own AOTI loader, as an oracle.

A package built with `link_libtorch=False` leaves its `aoti_torch_*` imports undefined, and
libtorch's Python extension loads libtorch_cpu.so with RTLD_LOCAL, so
`torch._inductor.aoti_load_package` refuses it ("undefined symbol: aoti_torch_layout_strided").
Re-opening libtorch_cpu.so with RTLD_GLOBAL first puts libtorch's shim implementations in the
global scope, and the same package then loads and runs, weights blob included.

This tells apart "the export is wrong" from "aotrt is wrong": if the oracle matches eager and
aotrt does not, the bug is in aotrt. It needs libtorch, so it is a development aid only.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Sequence

import torch

_preloaded = False


def _preload_libtorch_global() -> None:
    global _preloaded
    if not _preloaded:
        lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
        ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
        _preloaded = True


def libtorch_run(pt2_path: str | os.PathLike, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Runs the package's model once on `inputs` (strides as given) through libtorch."""
    _preload_libtorch_global()
    with zipfile.ZipFile(pt2_path) as zf:
        blobs = [i for i in zf.infolist() if i.filename.endswith("_weights.blob")]
        so = next(n for n in zf.namelist() if n.endswith(".so"))
        if blobs and blobs[0].file_size == 0:
            # A model without constants still gets a 0-byte blob, and libtorch's package
            # loader fails on it with "mmap() failed" (mmap of length 0). Run the bare .so.
            with tempfile.TemporaryDirectory(prefix="aotrt_ref_") as tmp:
                runner = torch._C._aoti.AOTIModelContainerRunnerCpu(zf.extract(so, tmp), 1)
                return list(runner.run(list(inputs)))
    # Constructing the loader directly skips aoti_load_package's device-information probe,
    # which compiles ISA test programs only to print a warning.
    loader = torch._C._aoti.AOTIModelPackageLoader(str(pt2_path), "model", False, 1, -1)
    return list(loader.run(list(inputs)))


def with_strides(t: torch.Tensor, strides: Sequence[int]) -> torch.Tensor:
    """A copy of `t` laid out with `strides` (e.g. a dense NCHW array as channels-last), which
    is how a runtime must hand an input to the compiled model. See "aotrt.inputs" in the
    package metadata."""
    out = torch.empty_strided(t.shape, tuple(strides), dtype=t.dtype)
    out.copy_(t)
    return out


def package_input_strides(pt2_path: str | os.PathLike) -> list[list[int]] | None:
    """Input strides recorded by aotrt_tools.export ("aotrt.inputs" metadata), if any."""
    from .export import read_member

    meta = json.loads(read_member(pt2_path, ".wrapper_metadata.json") or "{}")
    specs = meta.get("aotrt.inputs")
    return [s["strides"] for s in json.loads(specs)] if specs else None


def main(argv: Sequence[str] | None = None) -> int:
    """`run` and `info` with aotrt's CLI contract, backed by libtorch: a stand-in for
    build/aotrt to check the e2e harness itself (AOTRT_BIN=<script calling this>)."""
    import numpy as np

    from .export import inspect_package

    parser = argparse.ArgumentParser(prog="python -m aotrt_tools.reference")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("package")
    run.add_argument("--input", action="append", default=[])
    run.add_argument("--output-dir", required=True)
    info = sub.add_parser("info")
    info.add_argument("package")
    args = parser.parse_args(argv)

    if args.cmd == "info":
        pkg = inspect_package(args.package)
        print(f"device: {pkg['metadata'].get('AOTI_DEVICE_KEY')}")
        print(f"inputs: {pkg['metadata'].get('aotrt.inputs')}")
        for sym in pkg["undefined"]["shim"]:
            print(f"  {sym} provided")  # libtorch provides every shim
        return 0

    strides = package_input_strides(args.package)
    inputs = [torch.from_numpy(np.load(p)) for p in args.input]
    if strides:
        inputs = [with_strides(t, s) for t, s in zip(inputs, strides)]
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for k, t in enumerate(libtorch_run(args.package, inputs)):
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16: widened exactly
            t = t.float()
        np.save(out_dir / f"output_{k}.npy", np.ascontiguousarray(t.numpy()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
