"""Weights outside the package through the Python API (aotrt.load(weights=...),
Model.swap_weights / update_weights), and inputs converted to the model's dtype.

no_weights was exported with package_constants_in_so=False: the package holds no weights.
References are eager PyTorch with the same weights (fp32, atol = rtol = 1e-5).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

import aotrt
from small_models import no_weights_eager, no_weights_state, write_safetensors

TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture
def x():
    return np.random.default_rng(3).standard_normal((4, 16), dtype=np.float32)


def test_package_without_weights_needs_them(small_packages):
    with pytest.raises(aotrt.Error, match="weights"):
        aotrt.load(small_packages["no_weights"])


def test_weights_from_dict(small_packages, x):
    state = no_weights_state(1)
    model = aotrt.load(small_packages["no_weights"], weights=dict(state))
    assert {c.original_fqn for c in model.info.constants} == set(state)
    del state  # the model keeps what it uses in place
    gc.collect()
    (y,) = model(x)
    np.testing.assert_allclose(y.numpy(), no_weights_eager(no_weights_state(1), x), **TOL)


def test_weights_from_torch_tensors_and_safetensors(small_packages, x, tmp_path):
    state = no_weights_state(2)
    want = no_weights_eager(state, x)
    as_torch = {k: torch.from_numpy(v) for k, v in state.items()}
    (y,) = aotrt.load(small_packages["no_weights"], weights=as_torch)(x)
    np.testing.assert_allclose(y.numpy(), want, **TOL)
    path = write_safetensors(tmp_path / "w.safetensors", state)
    model = aotrt.load(small_packages["no_weights"], weights=path)
    assert model.info.weights_source == str(path)
    np.testing.assert_allclose(model(x)[0].numpy(), want, **TOL)


def test_swap_and_update_while_serving(small_packages, x, tmp_path):
    first, second = no_weights_state(1), no_weights_state(2)
    model = aotrt.load(small_packages["no_weights"], weights=first)
    before = model(x)[0].numpy().copy()
    np.testing.assert_allclose(before, no_weights_eager(first, x), **TOL)
    model.swap_weights(write_safetensors(tmp_path / "second.safetensors", second))
    np.testing.assert_allclose(model(x)[0].numpy(), no_weights_eager(second, x), **TOL)
    # Only the buffer: the Linear keeps the second set's values.
    mixed = dict(second, scale=first["scale"])
    model.update_weights({"scale": first["scale"].copy()})
    np.testing.assert_allclose(model(x)[0].numpy(), no_weights_eager(mixed, x), **TOL)


def test_bad_weights_name_the_constant(small_packages):
    state = no_weights_state(1)
    wrong = dict(state, **{"lin.weight": state["lin.weight"][:, :8].copy()})
    with pytest.raises(aotrt.InvalidArgumentError, match="lin.weight"):
        aotrt.load(small_packages["no_weights"], weights=wrong)
    missing = {k: v for k, v in state.items() if k != "scale"}
    with pytest.raises(aotrt.Error, match="scale"):
        aotrt.load(small_packages["no_weights"], weights=missing)
    with pytest.raises(aotrt.InvalidArgumentError, match="give a safetensors file's path or a dict"):
        aotrt.load(small_packages["no_weights"], weights=[1, 2])


def test_float32_array_into_bfloat16_input(small_packages):
    """numpy has no bfloat16: a float32 array is converted to the model's bf16 input."""
    ref = torch.load(small_packages["bf16_linear"].with_suffix(".ref.pt"))
    model = aotrt.load(small_packages["bf16_linear"])
    assert model.info.inputs[0].dtype == "bfloat16"
    (y,) = model(ref["x"].float().numpy())
    assert y.dtype == "bfloat16"
    # Same bf16 input values as eager (float32 holds them exactly): only the kernels'
    # accumulation order differs, within a bf16 ulp or two of values of magnitude ~1.
    torch.testing.assert_close(torch.from_dlpack(y), ref["y"], rtol=2e-2, atol=2e-2)
    (same,) = model(ref["x"])  # a torch bf16 tensor, as it is
    assert torch.equal(torch.from_dlpack(same), torch.from_dlpack(y))
