"""Every public (CPU) zoo model through the Python API, compared with eager PyTorch.

Inputs are the exporter's dense C-order arrays (pointwise_c2f's model wants channels-last:
aotrt.Model.run lays it out), once as numpy arrays and once as torch tensors (DLPack).
Tolerances are the zoo entry's (|got - want| <= atol + rtol * |want|), as in tests/e2e.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import aotrt
from aotrt_tools import zoo


def _numbered(out_dir: Path, pattern: str) -> list[Path]:
    files = []
    while (p := out_dir / pattern.format(len(files))).exists():
        files.append(p)
    return files


@pytest.mark.parametrize("name", zoo.names("cpu"))
def test_zoo_model_matches_eager(name, exported):
    info = exported(name)
    src = Path(info["out_dir"])
    inputs = [np.load(p) for p in _numbered(src, name + ".input_{}.npy")]
    expected = [np.load(p) for p in _numbered(src, name + ".expected_{}.npy")]
    model = aotrt.load(info["package"])
    assert model.device == "cpu"
    assert model.cuda_graph_status["mode"] == "off"  # graphs are for CUDA models
    assert len(model.info.inputs) == len(inputs)
    assert len(model.info.outputs) == len(expected)
    tol = zoo.entry(name)

    for given in (inputs, [torch.from_numpy(a) for a in inputs]):
        outputs = model(*given)
        assert len(outputs) == len(expected)
        for k, (got, want) in enumerate(zip(outputs, expected)):
            assert isinstance(got, aotrt.Tensor), f"output_{k}: {type(got)}"
            assert got.dtype == str(want.dtype) and got.shape == want.shape, (got, want.dtype, want.shape)
            np.testing.assert_allclose(got.numpy(), want, rtol=tol.rtol, atol=tol.atol,
                                       err_msg=f"{name} output_{k} vs eager ({tol.reason})")
