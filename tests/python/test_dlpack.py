"""aotrt.Tensor and DLPack/numpy with torch on the CPU: zero-copy both ways, strides kept,
memory alive as long as any consumer holds it (after the Model and the aotrt.Tensor are gone).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

import aotrt


def _churn(model, x, times=8):
    """Runs allocate and free CPU blocks: memory freed too early would be handed out again."""
    for _ in range(times):
        for t in model(x):
            t.numpy()[...] = -1.0


@pytest.mark.parametrize("name", ["pointwise_c2f"])
def test_output_into_torch_is_zero_copy_and_keeps_strides(exported, name):
    info = exported(name)
    model = aotrt.load(info["package"])
    x = np.load(info["package"].replace(".pt2", ".input_0.npy"))
    (y,) = model(x)
    assert y.strides == (102400, 1, 2560, 64), "pointwise_c2f's output is channels-last"
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.data_ptr
    assert t.stride() == y.strides and tuple(t.shape) == y.shape and t.dtype == torch.float32
    a = y.numpy()
    assert a.__array_interface__["data"][0] == y.data_ptr
    assert a.strides == tuple(4 * s for s in y.strides)
    # __array__ (np.asarray) is the same view.
    assert np.asarray(y).__array_interface__["data"][0] == y.data_ptr


@pytest.mark.parametrize("name", ["linear_bias"])
def test_exported_memory_outlives_model_and_tensor(exported, name):
    info = exported(name)
    x = np.load(info["package"].replace(".pt2", ".input_0.npy"))
    want = np.load(info["package"].replace(".pt2", ".expected_0.npy"))
    model = aotrt.load(info["package"])
    (y,) = model(x)
    t = torch.from_dlpack(y)
    a = y.numpy()
    del y, model
    gc.collect()
    other = aotrt.load(info["package"])
    _churn(other, x)
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-5, atol=1e-5)
    del a
    gc.collect()
    _churn(other, x)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-5, atol=1e-5)


def test_torch_tensor_into_aotrt_is_zero_copy():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    for t in (base, base.t(), base[1:, ::2]):
        a = aotrt.as_tensor(t)
        assert a.data_ptr == t.data_ptr()
        assert a.strides == t.stride() and a.shape == tuple(t.shape)
        back = torch.from_dlpack(a)
        assert back.data_ptr() == t.data_ptr() and back.stride() == t.stride()
        assert torch.equal(back, t)


def test_bfloat16_round_trip():
    t = torch.randn(3, 5).to(torch.bfloat16)
    a = aotrt.as_tensor(t)
    assert a.dtype == "bfloat16"
    back = torch.from_dlpack(a)
    assert back.dtype == torch.bfloat16 and back.data_ptr() == t.data_ptr()
    # numpy has no bfloat16: numpy() converts, exactly.
    n = a.numpy()
    assert n.dtype == np.float32
    np.testing.assert_array_equal(n, t.float().numpy())


def test_output_viewing_an_input_keeps_that_input_alive(small_packages):
    """view_of_input returns x[1:] and x.t(): views of the caller's memory, not copies."""
    model = aotrt.load(small_packages["view_of_input"])
    x = np.random.default_rng(0).standard_normal((4, 6), dtype=np.float32)
    want = [x[1:].copy(), x.T.copy()]
    base = x.__array_interface__["data"][0]
    tail, transposed = model(x)
    assert tail.data_ptr == base + 6 * 4, "x[1:] should be a view of the input"
    assert transposed.data_ptr == base and transposed.strides == (1, 6)
    as_torch = torch.from_dlpack(transposed)
    del x, model
    gc.collect()
    np.testing.assert_array_equal(tail.numpy(), want[0])
    del transposed
    gc.collect()
    np.testing.assert_array_equal(as_torch.numpy(), want[1])
    assert as_torch.stride() == (1, 6)


def test_torch_input_used_in_place(small_packages):
    """A torch tensor input is viewed, not copied: the output view sees later writes."""
    model = aotrt.load(small_packages["view_of_input"])
    x = torch.zeros(4, 6)
    tail, _ = model(x)
    x[1:] = 7.0
    np.testing.assert_array_equal(tail.numpy(), np.full((3, 6), 7.0, np.float32))


def test_dlpack_device_and_versioned_capsule():
    a = aotrt.as_tensor(np.ones((2, 3), np.float32))
    assert a.__dlpack_device__() == (1, 0)
    capsule = a.__dlpack__(max_version=(1, 0))
    assert type(capsule).__name__ == "PyCapsule"
    assert torch.from_dlpack(a).shape == (2, 3)


def test_numpy_negative_strides_are_copied():
    x = np.arange(10, dtype=np.float32)[::-1]
    a = aotrt.as_tensor(x)
    assert a.strides == (1,)
    np.testing.assert_array_equal(a.numpy(), x)
