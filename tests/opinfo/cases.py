"""One case of the OpInfo sweep: an op of PyTorch's OpInfo database, one of its sample inputs,
a dtype and a device, made into a one-op nn.Module that torch.export and AOTInductor accept.

The module takes the sample's tensors as inputs (in pytree order of (input, args, kwargs)) and
bakes everything else in (dims, scalars, dtypes, lists of ints). Its outputs are the tensors of
the op's result, flattened to a tuple (torch.return_types named tuples do not export); a
non-tensor leaf of the result (an int, a bool) is dropped and noted.

Every input goes into the package with the sample's own dtype, bf16 included: the package's
input is bf16, as a user's would be. numpy has no bfloat16, so its .npy holds float32 (which
holds each bf16 value exactly) and the sweep hands it to `aotrt run` as `FILE:bfloat16`
(input_npy_arg); aotrt writes bf16 outputs as float32, which the sweep casts back to bf16
before comparing.

This file decides what a package contains, so it is part of the cache key (harness_hash).
"""

from __future__ import annotations

import hashlib
import itertools
import random
from pathlib import Path
from typing import Any, Callable

import torch
from torch.utils import _pytree as pytree

HERE = Path(__file__).resolve().parent

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
    "float64": torch.float64,
}
# The order a sweep takes dtypes in; float64 only on the CPU (brief of issue 10).
DEFAULT_DTYPES = {
    "cpu": ["float32", "bfloat16", "float16", "int64", "int32", "bool", "float64"],
    "cuda": ["float32", "bfloat16", "float16", "int64", "int32", "bool"],
}

# Dtypes numpy cannot hold: their .npy files hold float32, which aotrt converts when told the
# dtype (`--input FILE:bfloat16`).
NPY_AS_FLOAT32 = (torch.bfloat16,)

# Ops whose outputs are uninitialized memory: values cannot be compared, only shapes and dtypes.
UNINITIALIZED_OPS = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
                     "new_empty_strided"}


def harness_hash() -> str:
    """Hash of the code that decides what a case and its package hold: this file and
    compile.PACKAGE_CODE (not the bookkeeping around them, so that fixing a message does
    not recompile every package)."""
    import inspect

    from tests.opinfo import compile as comp

    h = hashlib.sha256((HERE / "cases.py").read_bytes())
    for name in comp.PACKAGE_CODE:
        h.update(inspect.getsource(getattr(comp, name)).encode())
    return h.hexdigest()[:12]


def full_name(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


_OPS: dict[str, Any] | None = None


def op_table() -> dict[str, Any]:
    """'name[.variant]' -> OpInfo, for every entry of torch's op_db (needs expecttest)."""
    global _OPS
    if _OPS is None:
        from torch.testing._internal.common_methods_invocations import op_db

        _OPS = {full_name(op): op for op in op_db}
    return _OPS


def supported_dtypes(op, device: str) -> set[str]:
    got = op.supported_dtypes(torch.device(device).type)
    return {name for name, dt in DTYPES.items() if dt in got}


def case_key(op_name: str, sample: int, dtype: str, device: str, harness: str) -> str:
    """The cache key of a case: torch version, op, sample index, dtype, device, harness."""
    text = "|".join([torch.__version__, op_name, str(sample), dtype, device, harness])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def samples(op_name: str, dtype: str, device: str, count: int) -> list[Any]:
    """The op's first `count` SampleInputs, made the same way every time (seeded)."""
    torch.manual_seed(0)
    random.seed(0)
    op = op_table()[op_name]
    gen = op.sample_inputs(device, DTYPES[dtype], requires_grad=False)
    return list(itertools.islice(gen, count))


class OneOp(torch.nn.Module):
    """op(input, *args, **kwargs) with the sample's tensors as forward() inputs."""

    def __init__(self, fn: Callable, sample) -> None:
        super().__init__()
        self.fn = fn
        self.leaves, self.spec = pytree.tree_flatten((sample.input, list(sample.args), dict(sample.kwargs)))
        self.tensor_slots = [i for i, leaf in enumerate(self.leaves) if isinstance(leaf, torch.Tensor)]
        self.dropped_outputs: list[str] = []

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        """The module's inputs: the sample's tensors, each with its own dtype."""
        return tuple(self.leaves[i].detach() for i in self.tensor_slots)

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        leaves = list(self.leaves)
        for slot, t in zip(self.tensor_slots, tensors):
            leaves[slot] = t
        inp, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        result = self.fn(inp, *args, **kwargs)
        outs = []
        for leaf in pytree.tree_leaves(result):
            if isinstance(leaf, torch.Tensor):
                outs.append(leaf)
            elif not self.dropped_outputs or type(leaf).__name__ not in self.dropped_outputs:
                self.dropped_outputs.append(type(leaf).__name__)
        return tuple(outs)


def one_op(op_name: str, sample) -> OneOp:
    return OneOp(op_table()[op_name].op, sample)


def npy_array(t: torch.Tensor):
    """t as a numpy array for its .npy file (bf16 as float32, exact; see NPY_AS_FLOAT32)."""
    t = t.cpu().contiguous()
    return (t.float() if t.dtype in NPY_AS_FLOAT32 else t).numpy()


def input_npy_arg(path: Path, dtype: str) -> str:
    """`aotrt run --input` for an input .npy of `dtype`: FILE:DTYPE where the file holds
    another dtype (bf16 as float32)."""
    return f"{path}:{dtype}" if DTYPES[dtype] in NPY_AS_FLOAT32 else str(path)


# --------------------------------------------------------------------------------------
# Tolerances
# --------------------------------------------------------------------------------------

# The OpInfo test whose tolerance overrides apply: inductor's own comparison of compiled code
# with eager (test/inductor/test_torchinductor_opinfo.py), what this sweep does too.
_OVERRIDE_TEST = ("TestInductorOpInfo", "test_comprehensive")


def tolerance(op_name: str, dtype: str, device: str) -> tuple[float, float, str]:
    """(rtol, atol, where from) for the outputs of a case of `dtype`: op_db's toleranceOverride
    for the op, dtype and device in TestInductorOpInfo.test_comprehensive where it declares one,
    else torch.testing.assert_close's default for the dtype."""
    from torch.testing._comparison import default_tolerances
    from torch.testing._internal.common_device_type import toleranceOverride

    dt = DTYPES[dtype]
    dev = torch.device(device).type
    op = op_table()[op_name]
    for info in op.decorators:
        if (getattr(info, "cls_name", None), getattr(info, "test_name", None)) != _OVERRIDE_TEST:
            continue
        if info.device_type not in (None, dev) or (info.dtypes is not None and dt not in info.dtypes):
            continue
        for d in info.decorators:
            if isinstance(d, toleranceOverride) and dt in d.d:
                return d.d[dt].rtol, d.d[dt].atol, "op_db override (TestInductorOpInfo)"
    rtol, atol = default_tolerances(dt) if dt.is_floating_point else (0.0, 0.0)
    return rtol, atol, "default"
