"""Text about cases for the sweep's records (not part of the packages' cache key)."""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree


def describe(sample, limit: int = 160) -> str:
    """Short text of a sample: tensor shapes (nc: not contiguous) and the other arguments."""

    def fmt(x):
        if isinstance(x, torch.Tensor):
            s = "x".join(map(str, x.shape)) or "scalar"
            try:
                nc = "" if x.is_contiguous() else "nc"
            except RuntimeError:  # sparse layouts have no strides
                nc = str(x.layout).removeprefix("torch.")
            return f"T[{s}]{nc}"
        return repr(x)

    def show(x):
        return str(pytree.tree_map(fmt, x)).replace("'", "")

    parts = [show(sample.input)] + [show(a) for a in sample.args]
    parts += [f"{k}={show(v)}" for k, v in sample.kwargs.items()]
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."
