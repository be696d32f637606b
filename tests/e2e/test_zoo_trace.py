"""The GPU zoo on a machine without a GPU: every entry meant only for CUDA still builds and
goes through torch.export on the CPU, in its own dtype.

This is the only check CI (no GPU) makes of those definitions: each traces, and the traced
graph run eagerly on the CPU gives the module's own outputs; compiling and running them
is scripts/gpu_e2e.sh's job on the CUDA machine. Entries that share a factory and dtype
(yolov8n and yolov8n_no_layout_opt differ only in inductor options) are traced once.
"""

from __future__ import annotations

import pytest
import torch

from aotrt_tools import zoo


def _distinct_gpu_entries() -> list[str]:
    seen, picked = set(), []
    for name in zoo.names("cuda"):
        e = zoo.entry(name)
        if e.devices != ("cuda",) or (e.build, e.dtype) in seen:
            continue
        seen.add((e.build, e.dtype))
        picked.append(name)
    return picked


@pytest.mark.parametrize("name", _distinct_gpu_entries())
def test_gpu_entry_traces_on_cpu(name):
    e = zoo.entry(name)
    module, inputs, _ = zoo.get(name)
    module = module.to(e.dtype)
    inputs = tuple(t.to(e.dtype) if t.is_floating_point() else t for t in inputs)
    with torch.no_grad():
        ep = torch.export.export(module, inputs)
        want = zoo.eager_outputs(module, inputs)
        got = zoo.eager_outputs(ep.module(), inputs)
    # The traced graph, run by ATen on the CPU, computes what the module does.
    assert len(got) == len(want) >= 1
    for k, (g, w) in enumerate(zip(got, want)):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), f"{name} output_{k}: {g.dtype}{list(g.shape)} vs eager {w.dtype}{list(w.shape)}"
        torch.testing.assert_close(g, w, atol=e.atol, rtol=e.rtol, msg=lambda m: f"{name} output_{k}: {m}")
