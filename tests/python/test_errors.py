"""Bad inputs raise aotrt's exceptions with aotrt's message (what was asked, what was wrong)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import aotrt


# Zoo models are exported for the tests that name them in a `name` parameter
# (tests/e2e/conftest.py), hence the one-value parametrizations.
uses_c2f = pytest.mark.parametrize("name", ["pointwise_c2f"])


@pytest.fixture
def c2f(exported, name):
    info = exported(name)
    x = np.load(info["package"].replace(".pt2", ".input_0.npy"))
    return aotrt.load(info["package"]), x


@uses_c2f
def test_wrong_count(c2f):
    model, x = c2f
    with pytest.raises(aotrt.InvalidArgumentError, match=r"takes 1 input\(s\), got 2"):
        model(x, x)
    with pytest.raises(aotrt.InvalidArgumentError, match=r"takes 1 input\(s\), got 0"):
        model()


@uses_c2f
def test_wrong_dtype(c2f):
    model, x = c2f
    with pytest.raises(aotrt.InvalidArgumentError,
                       match=r"input 0 \('arg8_1'\) is float64 but the model expects float32"):
        model(x.astype(np.float64))


@uses_c2f
def test_wrong_shape(c2f):
    model, x = c2f
    with pytest.raises(aotrt.InvalidArgumentError,
                       match=r"expected float32 \[1, 64, 40, 40\].* got float32 \[1, 3, 40, 40\]"):
        model(x[:, :3])


@uses_c2f
def test_not_an_array(c2f):
    model, _ = c2f
    with pytest.raises(aotrt.InvalidArgumentError, match=r"input 0 \('arg8_1'\): a str is not an array"):
        model("abc")


def test_errors_carry_kind():
    with pytest.raises(aotrt.PackageError, match="cannot open package /nonexistent.pt2") as e:
        aotrt.load("/nonexistent.pt2")
    assert e.value.kind == "bad package" and isinstance(e.value, aotrt.Error)
    assert issubclass(aotrt.InvalidArgumentError, ValueError)


@uses_c2f
def test_device_mismatch(exported, name):
    with pytest.raises(aotrt.InvalidArgumentError, match="is a cpu package but device 'cuda:0'"):
        aotrt.load(exported(name)["package"], device="cuda:0")
    with pytest.raises(aotrt.InvalidArgumentError, match="device 'gpu' is not"):
        aotrt.load(exported(name)["package"], device="gpu")


@uses_c2f
def test_non_dense_inputs_are_laid_out(c2f, exported, name):
    """Any layout of the right sizes is served when the package records the exported one."""
    model, x = c2f
    want = np.load(exported(name)["package"].replace(".pt2", ".expected_0.npy"))
    wide = np.zeros((1, 64, 40, 80), np.float32)
    wide[..., ::2] = x
    strided = wide[..., ::2]
    assert not strided.flags.c_contiguous
    (y,) = model(strided)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)


def test_torch_export_layout_learnt(small_packages):
    """torch's own export (no aotrt_tools metadata): the channels-last layout comes from the
    package's generated source, so a dense array is laid out and served."""
    ref = torch.load(small_packages["plain_channels_last"].with_suffix(".ref.pt"))
    model = aotrt.load(small_packages["plain_channels_last"])
    assert model.info.inputs[0].strides == list(ref["x"].stride())
    for given in (ref["x"].contiguous(), ref["x"], ref["x"].numpy()):
        (y,) = model(given)
        torch.testing.assert_close(torch.from_dlpack(y), ref["y"], rtol=1e-5, atol=1e-5)


@uses_c2f
def test_bad_hints(c2f):
    model, x = c2f
    with pytest.raises(aotrt.InvalidArgumentError, match=r"layouts= has 2 entries for 1 inputs"):
        model(x, layouts=[None, None])
    with pytest.raises(aotrt.InvalidArgumentError, match=r"layout 'nhwc' is not"):
        model(x, layouts=["nhwc"])
    with pytest.raises(aotrt.InvalidArgumentError, match=r"'float33' is not a dtype"):
        model(x, dtypes=["float33"])
    with pytest.raises(aotrt.InvalidArgumentError,
                       match=r"the layout asked for .* is not the one the model was exported with"):
        model(x, layouts=["contiguous"])
    with pytest.raises(aotrt.InvalidArgumentError, match=r"given as float16 but the model expects float32"):
        model(x, dtypes=["float16"])
