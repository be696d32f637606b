"""One case of the OpInfo sweep: an op of PyTorch's OpInfo database, one of its sample inputs,
a dtype and a device, made into a one-op nn.Module that torch.export and AOTInductor accept.

The module takes the sample's tensors as inputs (in pytree order of (input, args, kwargs)) and
bakes everything else in (dims, scalars, dtypes, lists of ints). Its outputs are the tensors of
the op's result, flattened to a tuple (torch.return_types named tuples do not export); a
non-tensor leaf of the result (an int, a bool) is dropped and noted.

numpy has no bfloat16 and `aotrt run` reads .npy inputs, so a bf16 tensor input is handed to
the module as float32 (which holds each bf16 value exactly) and cast back to bf16 inside the
module, before the op: the op itself still sees bf16. Every other dtype goes in as itself.

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

# Dtypes numpy cannot hold: passed as float32 and cast inside the module.
_CAST_INSIDE = (torch.bfloat16,)

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
        # Dtype each input must have when the op sees it (bf16 arrives as float32).
        self.op_dtypes = [self.leaves[i].dtype for i in self.tensor_slots]
        self.dropped_outputs: list[str] = []

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        """The module's inputs: the sample's tensors, bf16 ones as float32."""
        out = []
        for i in self.tensor_slots:
            t = self.leaves[i].detach()
            out.append(t.float() if t.dtype in _CAST_INSIDE else t)
        return tuple(out)

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        leaves = list(self.leaves)
        for slot, t, dt in zip(self.tensor_slots, tensors, self.op_dtypes):
            leaves[slot] = t.to(dt) if t.dtype != dt else t
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
