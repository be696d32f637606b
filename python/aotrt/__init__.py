"""aotrt: run PyTorch models compiled ahead of time by AOTInductor, without libtorch.

    import aotrt, numpy as np
    model = aotrt.load("model.pt2")              # device=None: the package's own
    (y,) = model(np.ones((3, 8), np.float32))     # numpy, torch, CuPy, aotrt.Tensor
    y.numpy()                                     # zero-copy for CPU outputs
    torch.from_dlpack(y)                          # zero-copy, CPU or CUDA

Inputs are laid out as the model was exported (copied only when they are not
already) and moved to the model's device; outputs are ``aotrt.Tensor`` views
with the strides the model gave them. Errors are ``aotrt.Error`` subclasses
carrying aotrt's message. numpy is the only dependency.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from . import _aotrt
from ._aotrt import (ConstantInfo, GenerateResult, InputInfo, Model, ModelInfo, Program,
                     Sequence, Session, Tensor, as_tensor)
from ._errors import (
    CLASSES as _ERROR_CLASSES,
    BackendError,
    Error,
    InternalError,
    InvalidArgumentError,
    InvalidHandleError,
    OutOfBoundsError,
    OutOfMemoryError,
    PackageError,
    UnsupportedError,
)

_aotrt._set_error_classes(_ERROR_CLASSES)

from ._generate import LanguageModel, load_generator, load_program  # noqa: E402

__all__ = [
    "load", "Model", "ModelInfo", "InputInfo", "ConstantInfo", "Tensor", "as_tensor",
    "load_generator", "load_program", "LanguageModel", "Program", "Session", "Sequence",
    "GenerateResult",
    "Error", "InvalidArgumentError", "InvalidHandleError", "OutOfBoundsError",
    "UnsupportedError", "OutOfMemoryError", "PackageError", "BackendError", "InternalError",
]


def load(path: str | os.PathLike[str], device: Any = None, cuda_graph: bool | None = None,
         weights: str | os.PathLike[str] | Mapping[str, Any] | None = None, *,
         model_name: str = "model", check_inputs: bool = True,
         allow_unused_weights: bool = False) -> Model:
    """Loads a ``.pt2`` package exported with ``aot_inductor.link_libtorch=False``.

    device: None (the package's device; for CUDA the current one), "cpu", "cuda",
      "cuda:N", an int N or a torch.device. A package runs on the kind of device it
      was exported for; asking for another raises InvalidArgumentError.
    cuda_graph: CUDA packages. None (default): automatic CUDA graphs - a layout of
      inputs seen a second time is captured and replayed, where a graph changes
      nothing but the speed (``Model.cuda_graph_status`` says what happened). True:
      capture the first run and replay it (later runs must give inputs of the first
      run's dtypes, sizes and strides). False: no graphs.
    weights: instead of the package's own (required for a package exported with
      aot_inductor.package_constants_in_so=False): a safetensors file (memory-mapped)
      or a dict of original FQN (``ConstantInfo.original_fqn``, the nn.Module's
      parameter or buffer name) -> array. Every constant is checked (name, dtype,
      sizes, strides) before anything is loaded. Arrays that already have the model's
      dtype, layout and device are used in place: the model keeps them alive.
    model_name: the folder under data/aotinductor/ (aoti_compile_and_package's
      model_name).
    check_inputs: turn on the input checks compiled into the model (dtype, sizes,
      strides, device of each input; AOTI_RUNTIME_CHECK_INPUTS=1).
    allow_unused_weights: accept weights the model has no constant for.

    Inputs of ``Model.run`` are converted where the package says what the model expects
    (its recorded or generated input checks): moved to the model's device, laid out
    in the strides it was exported with, and float32 converted to bfloat16/float16.
    """
    return _aotrt.load(os.fspath(path), device, cuda_graph, weights, model_name, check_inputs,
                       allow_unused_weights)
