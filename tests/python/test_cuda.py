"""The Python API on CUDA (the H200: scripts/python_gpu.sh runs these with AOTRT_TEST_CUDA=1).

Packages are exported for cuda here (two zoo models and a view-returning one); eager
references are computed on the GPU with TF32 off (zoo.exact_fp32), tolerances the zoo's, and
aotrt runs with AOTRT_CUDNN_ALLOW_TF32=0 to match (the fixture checks it).
Inputs are torch.cuda tensors given zero-copy through DLPack, outputs go back to torch
zero-copy; aotrt runs on the calling thread's current stream (the legacy default stream
unless set), which is torch's default stream too.
"""

from __future__ import annotations

import gc
import os
import threading

import numpy as np
import pytest

import aotrt

pytestmark = pytest.mark.skipif(os.environ.get("AOTRT_TEST_CUDA") != "1",
                                reason="CUDA tests run with AOTRT_TEST_CUDA=1 (scripts/python_gpu.sh)")

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cuda_models(tmp_path_factory):
    """name -> (package, cuda inputs, eager outputs on cuda, tolerance dict)."""
    from aotrt_tools import export, zoo

    assert torch.cuda.is_available(), "AOTRT_TEST_CUDA=1 but torch sees no CUDA device"
    # Exact fp32 on both sides: eager with TF32 off (zoo.exact_fp32), aotrt's cuDNN convolutions
    # too, which only the environment of the process decides (Note [TF32] in src/cuda/handles.h).
    assert os.environ.get("AOTRT_CUDNN_ALLOW_TF32") == "0", (
        "run the CUDA tests with AOTRT_CUDNN_ALLOW_TF32=0 (scripts/python_gpu.sh sets it): the references "
        "are exact fp32, and aotrt's fp32 convolutions use TF32 by default")
    out = tmp_path_factory.mktemp("cuda")
    models = {}
    for name in ("linear_bias", "pointwise_c2f"):
        module, inputs, tol = zoo.get(name)
        module = module.cuda()
        inputs = tuple(t.cuda() for t in inputs)
        with zoo.exact_fp32(), torch.no_grad():
            want = zoo.eager_outputs(module, inputs)
        export.export_package(module, inputs, out / f"{name}.pt2", device="cuda")
        models[name] = (out / f"{name}.pt2", inputs, want, dict(atol=zoo.GPU_ATOL, rtol=zoo.GPU_RTOL))

    from small_models import ViewOfInput

    export.export_package(ViewOfInput(), (torch.randn(4, 6, device="cuda"),), out / "view_of_input.pt2",
                          device="cuda")
    models["view_of_input"] = (out / "view_of_input.pt2", None, None, None)
    return models


def _close(got, want, tol):
    torch.testing.assert_close(got, want, rtol=tol["rtol"], atol=tol["atol"])


@pytest.mark.parametrize("name", ["linear_bias", "pointwise_c2f"])
def test_cuda_tensors_in_and_out_zero_copy(name, cuda_models):
    pkg, inputs, want, tol = cuda_models[name]
    model = aotrt.load(pkg, device="cuda")
    assert model.device == "cuda:0" and model.info.device == "cuda:0"
    outputs = model(*inputs)
    for y, w in zip(outputs, want):
        assert y.device == "cuda:0" and y.__dlpack_device__() == (2, 0)
        t = torch.from_dlpack(y)
        assert t.is_cuda and t.data_ptr() == y.data_ptr and t.stride() == y.strides
        _close(t, w, tol)
        np.testing.assert_allclose(y.numpy(), w.cpu().numpy(), rtol=tol["rtol"], atol=tol["atol"])


def test_numpy_input_to_cuda_model(cuda_models):
    pkg, inputs, want, tol = cuda_models["pointwise_c2f"]
    model = aotrt.load(pkg, device=torch.device("cuda:0"))
    (y,) = model(*(t.cpu().numpy() for t in inputs))  # dense host arrays: copied and laid out
    _close(torch.from_dlpack(y), want[0], tol)


def test_cuda_graph_mode(cuda_models):
    pkg, inputs, want, tol = cuda_models["linear_bias"]
    model = aotrt.load(pkg, device="cuda", cuda_graph=True)
    first = [torch.from_dlpack(y).clone() for y in model(*inputs)]
    again = [torch.from_dlpack(y) for y in model(*inputs)]
    for a, b, w in zip(first, again, want):
        _close(a, w, tol)
        assert torch.equal(a, b)


def test_cuda_graphs_are_automatic_by_default(cuda_models):
    pkg, inputs, want, tol = cuda_models["linear_bias"]
    model = aotrt.load(pkg, device="cuda")
    assert model.cuda_graph_status["mode"] == "auto"
    for run in range(4):
        for y, w in zip(model(*inputs), want):
            _close(torch.from_dlpack(y), w, tol)
    st = model.cuda_graph_status
    # The first run of a layout is plain; the second captures it, and later ones replay.
    assert (st["graphs"], st["plain_runs"], st["replays"], st["declined"]) == (1, 1, 3, "")
    off = aotrt.load(pkg, device="cuda", cuda_graph=False)
    off(*inputs)
    off(*inputs)
    assert off.cuda_graph_status["mode"] == "off" and off.cuda_graph_status["replays"] == 0


def test_cuda_output_outlives_model(cuda_models):
    pkg, inputs, want, tol = cuda_models["linear_bias"]
    model = aotrt.load(pkg, device="cuda")
    (y,) = model(*inputs)
    t = torch.from_dlpack(y)
    del y, model
    gc.collect()
    other = aotrt.load(pkg, device="cuda")
    for _ in range(8):
        for z in other(*inputs):
            torch.from_dlpack(z).fill_(-1.0)
    torch.cuda.synchronize()
    _close(t, want[0], tol)


def test_cuda_view_of_input_keeps_input_alive(cuda_models):
    model = aotrt.load(cuda_models["view_of_input"][0], device="cuda")
    x = torch.randn(4, 6, device="cuda")
    want = x.t().clone()
    _, transposed = model(x)
    assert transposed.data_ptr == x.data_ptr()
    t = torch.from_dlpack(transposed)
    del x, transposed, model
    gc.collect()
    torch.cuda.synchronize()
    assert torch.equal(t, want) and t.stride() == (1, 6)


def test_cuda_threads_match_serial(cuda_models):
    pkg, inputs, _, _ = cuda_models["pointwise_c2f"]
    model = aotrt.load(pkg, device="cuda")
    xs = [inputs[0] + 0.01 * k for k in range(16)]
    serial = [torch.from_dlpack(model(x)[0]).clone() for x in xs]
    torch.cuda.synchronize()
    got, errors = {}, []

    def worker(k):
        try:
            for j in range(k, len(xs), 4):
                got[j] = torch.from_dlpack(model(xs[j])[0]).cpu()  # .cpu() waits for the run
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for j, want in enumerate(serial):
        assert torch.equal(got[j], want.cpu()), f"run {j} differs from the serial run"
