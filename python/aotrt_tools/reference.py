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

import ctypes
import os
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
