"""freezing=True packages on the CPU: inductor's inference path (issue 13, item 4).

Packages come from torch 2.13's own flow (torch.export + aoti_compile_and_package with
aot_inductor.link_libtorch=False and freezing=True). See Note [Frozen CPU packages]
(src/runtime/preflight.cpp):
- with cpp.weight_prepack=False the batch norms are folded into the convolutions and the
  weights constant-folded into plain strided constants; the model calls
  aoti_torch_cpu_convolution / aoti_torch_cpu_addmm_out, no oneDNN fused op. aotrt runs
  these, compared here with eager PyTorch on the unfrozen module;
- with cpp.weight_prepack=True (the default) the weights become oneDNN-blocked (_mkldnn)
  constants for the fused ops of torch's shim_cpu.h (mkldnn._convolution_pointwise, its
  _binary form, _linear_pointwise, ...). aotrt decodes their oneDNN 3.x descriptors (Note
  [Serialized oneDNN descriptors], src/core/onednn_md.h), copies them to plain memory at load
  and runs the fused ops on its conv and gemm; each package is checked to import the fused
  ops it is meant to test (the test fails if inductor stops emitting them), and the output is
  compared with eager at the same tolerance. A package with fused linears is also run by
  tests/unit/test_linear_fused_real.cpp, which checks that they took the fused oneDNN matmul
  (Note [Fused linears], src/cpu/linear.cpp) on weights reordered once.

Tolerance: 1e-4 absolute and relative on fp32. Folding a batch norm into a conv changes the
arithmetic (w * gamma / sqrt(var + eps) once, instead of the normalization after the conv),
and oneDNN and OpenBLAS may sum the products in another order than eager's kernels; the
measured max abs diffs are about 1e-6 (reported by the test ids' asserts when exceeded).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))  # also as an export worker
from aotrt_tools import cpu_models  # noqa: E402
from aotrt_tools.export import package_imports  # noqa: E402
from aotrt_tools.cpu_models import SmallCNN  # noqa: E402

ATOL, RTOL = 1e-4, 1e-4

BASE = {"aot_inductor.link_libtorch": False, "freezing": True}
ONEDNN_FUSED = ("aoti_torch_cpu_mkldnn_", "aoti_torch_cpu__linear_pointwise", "aoti_torch_cpu__mkl_linear")


def _randomize_bn(module: nn.Module) -> nn.Module:
    """Batch norms with non-trivial statistics, so that folding them changes the weights."""
    g = torch.Generator().manual_seed(3)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=g) * 0.1)
    return module


class ResBlock(nn.Module):
    """resnet18's basic block (torchvision is not installed): conv-bn-relu-conv-bn + x, relu."""

    def __init__(self, c: int = 16):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + x)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(64, 128), nn.Linear(128, 32)

    def forward(self, x):
        return self.l2(nn.functional.gelu(self.l1(x)))


class Grouped(nn.Module):
    """A depthwise and a grouped conv (5-d grouped weight descriptors), with silu and hardswish."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.g = nn.Conv2d(16, 32, 1, groups=4)
        self.pw = nn.Conv2d(32, 8, 3, stride=2)

    def forward(self, x):
        return nn.functional.hardswish(self.pw(nn.functional.silu(self.g(self.dw(x)))))


class ConvAddRelu(nn.Module):
    """conv(x) + y then relu: the binary fused op with a unary after it."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(8, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = self.c2(x)
        return torch.relu(self.c(x) + y)


class Activations(nn.Module):
    """Convolutions and linears followed by the unary post-ops inductor fuses."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.c3 = (nn.Conv2d(4, 4, 3, padding=1) for _ in range(3))
        self.l1, self.l2 = nn.Linear(64, 32), nn.Linear(32, 16)

    def forward(self, x):
        y = nn.functional.leaky_relu(self.c1(x), 0.1)
        y = nn.functional.hardtanh(self.c2(y), -0.5, 0.5)
        y = torch.sigmoid(self.c3(y)).flatten(1)
        y = torch.tanh(self.l1(y))
        return nn.functional.gelu(self.l2(y), approximate="tanh")


class Transposed(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 8, 3, padding=1)
        self.t = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return torch.relu(self.t(torch.relu(self.c(x))))


def _models():
    g = torch.Generator().manual_seed(1)
    return {
        "grouped": (Grouped, lambda: torch.randn(2, 16, 20, 20, generator=g)),
        "convadd": (ConvAddRelu, lambda: torch.randn(2, 8, 14, 14, generator=g)),
        "activations": (Activations, lambda: torch.randn(3, 4, 4, 4, generator=g)),
        "transposed": (Transposed, lambda: torch.randn(1, 3, 10, 10, generator=g)),
        "cnn": (SmallCNN, lambda: torch.randn(1, 3, 224, 224, generator=g)),
        "resblock": (ResBlock, lambda: torch.randn(2, 16, 56, 56, generator=g)),
        "mlp": (MLP, lambda: torch.randn(8, 64, generator=g)),
        "encoder": (lambda: nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True),
                    lambda: torch.randn(2, 16, 64, generator=g)),
    }


def _build(name: str) -> tuple[nn.Module, torch.Tensor]:
    make, inp = _models()[name]
    torch.manual_seed(0)
    m = _randomize_bn(make()).eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m, inp()


def _export_here(name: str, prepack: bool, path: Path) -> None:
    module, x = _build(name)
    with torch.no_grad():
        ep = torch.export.export(module, (x,))
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path), inductor_configs={**BASE, "cpp.weight_prepack": prepack})


def _export(name: str, prepack: bool, path: Path) -> Path:
    """Exports in a fresh process: with torch 2.13, a prepack=True export that followed a
    prepack=False one in the same process got no fused ops (plain convolutions).

    With AOTRT_E2E_CACHE set, the package is kept there, keyed by this file's and
    cpu_models.py's source, torch's version and the case, and reused while they are unchanged."""
    cache = os.environ.get("AOTRT_E2E_CACHE")
    if cache:
        sources = Path(__file__).read_bytes() + Path(cpu_models.__file__).read_bytes()
        key = hashlib.sha256(sources + torch.__version__.encode() +
                             f"{name} {prepack}".encode()).hexdigest()[:16]
        kept = Path(cache) / "freezing" / key / path.name
        if not kept.exists():
            kept.parent.mkdir(parents=True, exist_ok=True)
            tmp = kept.with_name(kept.stem + ".partial.pt2")
            _export_in_process(name, prepack, tmp)
            tmp.replace(kept)
        shutil.copyfile(kept, path)
        return path
    _export_in_process(name, prepack, path)
    return path


def _export_in_process(name: str, prepack: bool, path: Path) -> None:
    r = subprocess.run([sys.executable, __file__, name, str(int(prepack)), str(path)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]



def _run(cmd) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)


def _run_matches(aotrt_bin, pkg: Path, d: Path, x: torch.Tensor, want: np.ndarray, what: str) -> None:
    """`aotrt run` on pkg with x gives want, at ATOL/RTOL."""
    np.save(d / "x.npy", x.numpy())
    r = _run([aotrt_bin, "run", pkg, "-i", d / "x.npy", "-o", d / "out"])
    assert r.returncode == 0, r.stderr
    got = np.load(d / "out" / "output_0.npy")
    assert got.shape == want.shape
    diff = float(np.max(np.abs(got - want)))
    assert np.allclose(got, want, atol=ATOL, rtol=RTOL), f"{what}: max abs diff {diff}"
    print(f"{what}: max abs diff {diff:.3g}")


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("freezing")


@pytest.mark.parametrize("name", ["cnn", "resblock", "mlp", "encoder"])
def test_frozen_plain_weights_match_eager(aotrt_bin, work, name):
    module, x = _build(name)
    with torch.no_grad():
        want = module(x).numpy()
    d = work / name
    d.mkdir()
    pkg = _export(name, False, d / f"{name}.pt2")
    imports = package_imports(pkg)
    # The export took the frozen path with plain weights: no fused op, no _mkldnn constant.
    assert not [s for s in imports if s.startswith(ONEDNN_FUSED) or s == "aoti_torch_layout__mkldnn"], imports
    assert imports & {"aoti_torch_cpu_convolution", "aoti_torch_cpu_addmm_out"}, imports
    _run_matches(aotrt_bin, pkg, d, x, want, name)


# The fused ops each prepacked export must call (a subset: inductor may add others).
PREPACKED = {
    "cnn": {"aoti_torch_cpu_mkldnn__convolution_pointwise"},
    "resblock": {"aoti_torch_cpu_mkldnn__convolution_pointwise"},
    "mlp": {"aoti_torch_cpu__linear_pointwise"},
    "encoder": {"aoti_torch_cpu__linear_pointwise"},
    "grouped": {"aoti_torch_cpu_mkldnn__convolution_pointwise"},
    "convadd": {"aoti_torch_cpu_mkldnn__convolution_pointwise_binary_"},  # in place on y
    "activations": {"aoti_torch_cpu_mkldnn__convolution_pointwise", "aoti_torch_cpu__linear_pointwise"},
    "transposed": {"aoti_torch_cpu_mkldnn__convolution_transpose_pointwise"},
}


@pytest.mark.parametrize("name", list(PREPACKED))
def test_prepacked_weights_match_eager(aotrt_bin, unit_tests, work, name):
    module, x = _build(name)
    with torch.no_grad():
        want = module(x).numpy()
    d = work / f"{name}_prepacked"
    d.mkdir()
    pkg = _export(name, True, d / f"{name}.pt2")
    imports = package_imports(pkg)
    # torch really emitted the fused ops on _mkldnn constants (else this test proves nothing).
    assert "aoti_torch_layout__mkldnn" in imports, imports
    assert PREPACKED[name] <= imports, (PREPACKED[name] - imports, sorted(imports))
    _run_matches(aotrt_bin, pkg, d, x, want, f"{name} prepacked")
    if "aoti_torch_cpu__linear_pointwise" in PREPACKED[name]:
        _linears_run_fused(unit_tests, pkg, x, want, d / "fused_linear")


def _linears_run_fused(unit_tests, pkg: Path, x: torch.Tensor, want: np.ndarray, d: Path) -> None:
    """FusedLinearReal.*: the package's linears took the fused oneDNN primitive (Note [Fused
    linears] in src/cpu/linear.cpp) on weights reordered once, with eager's values."""
    d.mkdir()
    shutil.copyfile(pkg, d / "model.pt2")
    np.save(d / "input_0.npy", x.numpy())
    np.save(d / "expected_0.npy", want)
    env = dict(os.environ, AOTRT_FROZEN_LINEAR_DIR=str(d))
    r = subprocess.run([str(unit_tests), "--gtest_filter=FusedLinearReal.*"], capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-3000:]
    assert "[  PASSED  ] 1 test" in r.stdout and "SKIPPED" not in r.stdout, r.stdout[-4000:]


# --- The decoder and the fused ops at the shim, against torch's own oneDNN -----------------
# torch reorders a known weight into the blocked form its freezing pass makes
# (mkldnn._reorder_convolution_weight / _reorder_linear_weight); aotrt's
# aoti_torch_create_tensor_from_blob_v2 gets its bytes and descriptor as a package's model
# gives them, and must give back every element in place (exact). The fused ops then run on
# that handle and are compared with ATen's mkldnn fused op on the blocked weight.

import ctypes  # noqa: E402

from aotrt_tools.shim_harness import ShimHarness  # noqa: E402

_P, _I64, _I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32


@pytest.fixture(scope="module")
def shim(aotrt_bin) -> ShimHarness:
    return ShimHarness(aotrt_bin.parent / "libaotrt.so")


def _blob(t: torch.Tensor) -> bytes:
    return bytes(torch.ops.mkldnn._get_mkldnn_serialized_md(t).tolist())


def _opaque(shim, t: torch.Tensor, sizes, dtype=torch.float32, blob: bytes | None = None):
    """(rc, handle) of aotrt's tensor for the blocked tensor t, registered as a model does."""
    blob = _blob(t) if blob is None else blob
    n = len(sizes)
    sz, st = (_I64 * n)(*sizes), (_I64 * n)(*([1] + [0] * (n - 1)))
    buf = (ctypes.c_uint8 * max(len(blob), 1)).from_buffer_copy(blob or b"\0")
    out = _P()
    rc = shim.lib.aoti_torch_create_tensor_from_blob_v2(
        _P(torch.ops.mkldnn.data_ptr(t)), _I64(n), sz, st, _I64(0), _I32(shim.codes[dtype]),
        _I32(0), _I32(0), ctypes.byref(out), _I32(3), buf, _I64(len(blob)))
    return rc, out.value


CONV_WEIGHTS = [  # (weight sizes, groups, padding, stride, input sizes)
    ((8, 3, 3, 3), 1, [1, 1], [1, 1], (2, 3, 16, 16)),
    ((32, 16, 3, 3), 1, [1, 1], [1, 1], (2, 16, 16, 16)),
    ((16, 1, 3, 3), 16, [1, 1], [1, 1], (2, 16, 12, 12)),
    ((64, 16, 1, 1), 2, [0, 0], [2, 2], (1, 32, 9, 9)),
    ((24, 8, 5, 5), 1, [2, 2], [1, 1], (1, 8, 11, 11)),
    ((12, 5, 3, 3), 3, [1, 1], [2, 2], (2, 15, 8, 8)),
]


@pytest.mark.parametrize("case", CONV_WEIGHTS, ids=lambda c: "x".join(map(str, c[0])) + f"g{c[1]}")
def test_decoder_gives_back_conv_weights(shim, case):
    shape, groups, pad, stride, in_sizes = case
    w = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape)
    t = torch.ops.mkldnn._reorder_convolution_weight(w, pad, stride, [1, 1], groups, list(in_sizes))
    rc, h = _opaque(shim, t, shape)
    assert rc == 0, shim.last_error()
    got = shim.take(h)
    assert got.is_contiguous(memory_format=torch.channels_last)  # conv weights: channels-last
    assert torch.equal(got, w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(10, 16), (128, 64), (32, 128), (7, 5)])
def test_decoder_gives_back_linear_weights(shim, shape, dtype):
    w = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape).to(dtype)
    try:
        t = torch.ops.mkldnn._reorder_linear_weight(w, 8)
    except RuntimeError as e:  # torch's bf16 prepack needs avx512bw/vl/dq or avx_ne_convert
        pytest.skip(f"torch cannot prepack a {dtype} linear weight on this CPU: {e}")
    rc, h = _opaque(shim, t, shape, dtype)
    assert rc == 0, shim.last_error()
    got = shim.take(h)
    assert got.dtype == dtype and got.is_contiguous()
    assert torch.equal(got, w)


def test_decoder_refuses_bad_descriptors(shim):
    w = torch.randn(8, 3, 3, 3)
    t = torch.ops.mkldnn._reorder_convolution_weight(w, [1, 1], [1, 1], [1, 1], 1, [1, 3, 8, 8])
    good = bytearray(_blob(t))
    cases = {
        "truncated": (bytes(good[:400]), (8, 3, 3, 3), "bytes"),
        "other sizes": (bytes(good), (8, 3, 5, 5), "dims [8, 3, 3, 3]"),
        "ndims": (bytes(good[:4]) + (13).to_bytes(4, "little") + bytes(good[8:]), (8, 3, 3, 3), "13 dims"),
        "format kind": (bytes(good[:312]) + (3).to_bytes(4, "little") + bytes(good[316:]), (8, 3, 3, 3),
                        "format kind 3"),
        "extra flags": (bytes(good[:640]) + (1).to_bytes(8, "little") + bytes(good[648:]), (8, 3, 3, 3),
                        "extra flags 1"),
        "version": ((7).to_bytes(4, "little") + bytes(good[4:]), (8, 3, 3, 3), "starts with 7"),
    }
    for what, (blob, sizes, needle) in cases.items():
        rc, _ = _opaque(shim, t, sizes, blob=blob)
        err = shim.last_error()
        assert rc != 0, what
        assert "aoti_torch_create_tensor_from_blob_v2" in err and needle in err, (what, err)


UNARY = [("none", [], ""), ("relu", [], ""), ("sigmoid", [], ""), ("tanh", [], ""),
         ("hardswish", [], ""), ("hardsigmoid", [], ""), ("swish", [], ""),
         ("gelu", [], "none"), ("gelu", [], "tanh"), ("leaky_relu", [0.2], ""),
         ("hardtanh", [-0.3, 0.4], "")]


def _scalars(values):
    held = [ctypes.c_double(v) for v in values]
    arr = (ctypes.POINTER(ctypes.c_double) * max(len(held), 1))(*[ctypes.pointer(v) for v in held])
    return held, arr


def _conv_call(shim, name, x, wh, b, pad, stride, groups, attr, scalars, algorithm, other=None,
               binary=None):
    held, arr = _scalars(scalars)
    alg = ctypes.c_char_p(algorithm.encode()) if algorithm else None
    xh, bh = shim.handle(x), shim.handle(b)
    oh = shim.handle(other) if other is not None else None
    bptr = _P(bh)
    ret = _P()
    ints = lambda v: (_I64 * len(v))(*v)  # noqa: E731
    fn = getattr(shim.lib, name)
    if binary is None:
        rc = fn(_P(xh), _P(wh), ctypes.byref(bptr), ints(pad), _I64(2), ints(stride), _I64(2),
                ints([1, 1]), _I64(2), _I64(groups), attr.encode(), arr, _I64(len(scalars)),
                ctypes.byref(alg) if alg else None, ctypes.byref(ret))
    else:
        alpha = ctypes.c_double(1.0)
        ua = ctypes.c_char_p(attr.encode()) if attr != "none" else None
        rc = fn(_P(xh), _P(oh), _P(wh), ctypes.byref(bptr), ints(pad), _I64(2), ints(stride), _I64(2),
                ints([1, 1]), _I64(2), _I64(groups), binary.encode(), ctypes.byref(alpha),
                ctypes.byref(ua) if ua else None, arr, _I64(len(scalars)), ctypes.byref(alg) if alg else None,
                ctypes.byref(ret))
    for h in (xh, bh, oh):
        if h is not None:
            shim.delete(h)
    return rc, ret.value


@pytest.mark.parametrize("attr,scalars,algorithm", UNARY, ids=lambda v: str(v))
def test_fused_conv_matches_aten(shim, attr, scalars, algorithm):
    g = torch.Generator().manual_seed(5)
    w = torch.randn(16, 4, 3, 3, generator=g)
    b = torch.randn(16, generator=g)
    x = torch.randn(2, 8, 10, 10, generator=g).to(memory_format=torch.channels_last)
    t = torch.ops.mkldnn._reorder_convolution_weight(w, [1, 1], [1, 1], [1, 1], 2, list(x.shape))
    want = torch.ops.mkldnn._convolution_pointwise(x, t, b, [1, 1], [1, 1], [1, 1], 2, attr,
                                                   scalars, algorithm or None)
    rc, wh = _opaque(shim, t, w.shape)
    assert rc == 0, shim.last_error()
    rc, h = _conv_call(shim, "aoti_torch_cpu_mkldnn__convolution_pointwise", x, wh, b, [1, 1], [1, 1], 2,
                       attr, scalars, algorithm)
    shim.delete(wh)
    assert rc == 0, shim.last_error()
    got = shim.take(h)
    assert got.stride() == want.stride()  # channels-last, as inductor's mkldnn_ir expects
    torch.testing.assert_close(got, want, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("binary", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("attr", ["none", "relu"])
def test_fused_conv_binary_matches_aten(shim, binary, attr):
    g = torch.Generator().manual_seed(6)
    w = torch.randn(8, 8, 3, 3, generator=g)
    b = torch.randn(8, generator=g)
    x = torch.randn(2, 8, 7, 7, generator=g).to(memory_format=torch.channels_last)
    other = (torch.rand(2, 8, 7, 7, generator=g) + 0.5).to(memory_format=torch.channels_last)
    t = torch.ops.mkldnn._reorder_convolution_weight(w, [1, 1], [1, 1], [1, 1], 1, list(x.shape))
    want = torch.ops.mkldnn._convolution_pointwise(x, other, t, b, [1, 1], [1, 1], [1, 1], 1, binary,
                                                   1.0, None if attr == "none" else attr, [], None)
    rc, wh = _opaque(shim, t, w.shape)
    assert rc == 0, shim.last_error()
    rc, h = _conv_call(shim, "aoti_torch_cpu_mkldnn__convolution_pointwise_binary", x, wh, b, [1, 1],
                       [1, 1], 1, attr, [], "", other=other, binary=binary)
    shim.delete(wh)
    assert rc == 0, shim.last_error()
    torch.testing.assert_close(shim.take(h), want, atol=ATOL, rtol=RTOL)


def _linear_call(shim, x, wh, b, attr, scalars, algorithm):
    held, arr = _scalars(scalars)
    alg = ctypes.c_char_p(algorithm.encode()) if algorithm else None
    xh, bh = shim.handle(x), shim.handle(b)
    bptr, ret = _P(bh), _P()
    rc = shim.lib.aoti_torch_cpu__linear_pointwise(_P(xh), _P(wh), ctypes.byref(bptr), attr.encode(), arr,
                                                   _I64(len(scalars)), ctypes.byref(alg) if alg else None,
                                                   ctypes.byref(ret))
    shim.delete(xh)
    shim.delete(bh)
    return rc, ret.value


@pytest.mark.parametrize("attr,scalars,algorithm", UNARY, ids=lambda v: str(v))
def test_fused_linear_matches_aten(shim, attr, scalars, algorithm):
    g = torch.Generator().manual_seed(7)
    w, b = torch.randn(24, 40, generator=g), torch.randn(24, generator=g)
    x = torch.randn(3, 5, 40, generator=g)
    t = torch.ops.mkldnn._reorder_linear_weight(w, 15)
    want = torch.ops.mkldnn._linear_pointwise(x, t, b, attr, scalars, algorithm or "")
    rc, wh = _opaque(shim, t, w.shape)
    assert rc == 0, shim.last_error()
    rc, h = _linear_call(shim, x, wh, b, attr, scalars, algorithm)
    shim.delete(wh)
    assert rc == 0, shim.last_error()
    got = shim.take(h)
    assert got.shape == want.shape and got.is_contiguous()
    torch.testing.assert_close(got, want, atol=ATOL, rtol=RTOL)


def test_fused_ops_refuse_a_bad_attr_by_name(shim):
    w, b, x = torch.randn(4, 8), torch.randn(4), torch.randn(2, 8)
    t = torch.ops.mkldnn._reorder_linear_weight(w, 2)
    rc, wh = _opaque(shim, t, w.shape)
    assert rc == 0, shim.last_error()
    for attr, scalars, needle in (("mish", [], "attr 'mish'"), ("leaky_relu", [], "needs scalar 0"),
                                  ("gelu", [], "algorithm 'exact'")):
        rc, _ = _linear_call(shim, x, wh, b, attr, scalars, "exact" if attr == "gelu" else "")
        err = shim.last_error()
        assert rc != 0 and "aoti_torch_cpu__linear_pointwise" in err and needle in err, err
    shim.delete(wh)


def test_fused_conv_binary_in_place_writes_other(shim):
    g = torch.Generator().manual_seed(8)
    w, b = torch.randn(8, 8, 3, 3, generator=g), torch.randn(8, generator=g)
    x = torch.randn(1, 8, 6, 6, generator=g).to(memory_format=torch.channels_last)
    other = torch.randn(1, 8, 6, 6, generator=g).to(memory_format=torch.channels_last)
    t = torch.ops.mkldnn._reorder_convolution_weight(w, [1, 1], [1, 1], [1, 1], 1, list(x.shape))
    want = torch.ops.mkldnn._convolution_pointwise(x, other, t, b, [1, 1], [1, 1], [1, 1], 1, "add",
                                                   1.0, "relu", [], None)
    rc, wh = _opaque(shim, t, w.shape)
    assert rc == 0, shim.last_error()
    target = other.clone()
    ints = lambda v: (_I64 * len(v))(*v)  # noqa: E731
    xh, bh, oh = shim.handle(x), shim.handle(b), shim.handle(target)
    bptr, ret, alpha, ua = _P(bh), _P(), ctypes.c_double(1.0), ctypes.c_char_p(b"relu")
    _, arr = _scalars([])
    rc = shim.lib.aoti_torch_cpu_mkldnn__convolution_pointwise_binary_(
        _P(oh), _P(xh), _P(wh), ctypes.byref(bptr), ints([1, 1]), _I64(2), ints([1, 1]), _I64(2),
        ints([1, 1]), _I64(2), _I64(1), b"add", ctypes.byref(alpha), ctypes.byref(ua), arr, _I64(0),
        None, ctypes.byref(ret))
    assert rc == 0, shim.last_error()
    returned = shim.take(ret.value)
    for h in (xh, bh, oh, wh):
        shim.delete(h)
    torch.testing.assert_close(target, want, atol=ATOL, rtol=RTOL)  # other was written
    torch.testing.assert_close(returned, want, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("binary", ["add", "sub", "mul", "div"])
def test_fused_linear_binary_matches_aten(shim, binary):
    g = torch.Generator().manual_seed(9)
    w, b = torch.randn(12, 20, generator=g), torch.randn(12, generator=g)
    x, other = torch.randn(6, 20, generator=g), torch.rand(6, 12, generator=g) + 0.5
    t = torch.ops.mkldnn._reorder_linear_weight(w, 6)
    want = torch.ops.mkldnn._linear_pointwise(x, other, t, b, binary)
    rc, wh = _opaque(shim, t, w.shape)
    assert rc == 0, shim.last_error()
    xh, oh, bh = shim.handle(x), shim.handle(other), shim.handle(b)
    bptr, ret = _P(bh), _P()
    rc = shim.lib.aoti_torch_cpu__linear_pointwise_binary(_P(xh), _P(oh), _P(wh), ctypes.byref(bptr),
                                                          binary.encode(), ctypes.byref(ret))
    for h in (xh, oh, bh, wh):
        shim.delete(h)
    assert rc == 0, shim.last_error()
    torch.testing.assert_close(shim.take(ret.value), want, atol=ATOL, rtol=RTOL)


def test_mkl_linear_runs_on_the_origin_weight(shim):
    g = torch.Generator().manual_seed(10)
    w, b, x = torch.randn(16, 24, generator=g), torch.randn(16, generator=g), torch.randn(5, 24, generator=g)
    packed = torch.ops.mkl._mkl_reorder_linear_weight(w, 5)
    want = torch.ops.mkl._mkl_linear(x, packed, w, b, 5)
    # MKL's packed W is an opaque tensor no handle can view; aotrt does not read W (any
    # tensor stands in for it) and computes on origin_W.
    xh, ph, wh, bh = (shim.handle(v) for v in (x, torch.zeros(1), w, b))
    bptr, ret = _P(bh), _P()
    rc = shim.lib.aoti_torch_cpu__mkl_linear(_P(xh), _P(ph), _P(wh), ctypes.byref(bptr), _I64(5),
                                             ctypes.byref(ret))
    for h in (xh, ph, wh, bh):
        shim.delete(h)
    assert rc == 0, shim.last_error()
    torch.testing.assert_close(shim.take(ret.value), want, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("attr", ["none", "relu"])
def test_fused_conv_transpose_matches_aten(shim, groups, attr):
    g = torch.Generator().manual_seed(11)
    w = torch.randn(8, 6 // groups, 3, 3, generator=g)  # torch's [I, O/g, kh, kw]
    b = torch.randn(6, generator=g)
    x = torch.randn(2, 8, 5, 5, generator=g).to(memory_format=torch.channels_last)
    pad, out_pad, stride, dil = [1, 1], [1, 1], [2, 2], [1, 1]
    t = torch.ops.mkldnn._reorder_convolution_transpose_weight(w, pad, out_pad, stride, dil, groups,
                                                               list(x.shape))
    want = torch.ops.mkldnn._convolution_transpose_pointwise(x, t, b, pad, out_pad, stride, dil, groups,
                                                             attr, [], None)
    rc, wh = _opaque(shim, t, list(t.shape))  # the constant's sizes: oneDNN's [O, I/g, kh, kw]
    assert rc == 0, shim.last_error()
    ints = lambda v: (_I64 * len(v))(*v)  # noqa: E731
    xh, bh = shim.handle(x), shim.handle(b)
    bptr, ret = _P(bh), _P()
    _, arr = _scalars([])
    rc = shim.lib.aoti_torch_cpu_mkldnn__convolution_transpose_pointwise(
        _P(xh), _P(wh), ctypes.byref(bptr), ints(pad), _I64(2), ints(out_pad), _I64(2), ints(stride),
        _I64(2), ints(dil), _I64(2), _I64(groups), attr.encode(), arr, _I64(0), None, ctypes.byref(ret))
    for h in (xh, bh, wh):
        shim.delete(h)
    assert rc == 0, shim.last_error()
    got = shim.take(ret.value)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got, want, atol=ATOL, rtol=RTOL)


def test_preflight_refuses_an_unreadable_descriptor_naming_the_constant(aotrt_bin, work):
    """The preflight decodes every _mkldnn constant the generated source lists before the .so is
    loaded: a descriptor edited there to 13 dims is refused naming the constant (a clean error)."""
    d = work / "mlp_bad_descriptor"
    d.mkdir()
    pkg = _export("mlp", True, d / "mlp.pt2")
    bad = d / "bad.pt2"
    with zipfile.ZipFile(pkg) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith(".wrapper.cpp"):
                text = data.decode()
                key = ".opaque_metadata = {"
                at = text.index(key) + len(key)
                name_at = text.rindex("constants_info_[", 0, at)
                index = text[name_at + len("constants_info_["):text.index("]", name_at)]
                name = text.split(f"constants_info_[{index}].name = \"")[1].split('"')[0]
                values = text[at:text.index("}", at)].split(", ")
                values[4] = "13L"  # ndims
                text = text[:at] + ", ".join(values) + text[text.index("}", at):]
                data = text.encode()
            dst.writestr(item, data)
    _, x = _build("mlp")
    np.save(d / "x.npy", x.numpy())
    for cmd, rc in ((["info", bad], 0), (["run", bad, "-i", d / "x.npy", "-o", d / "out"], 1)):
        r = _run([aotrt_bin, *cmd])
        assert r.returncode == rc, (cmd[0], r.returncode, r.stderr)
        text = r.stdout + r.stderr
        assert f"the oneDNN-blocked (_mkldnn) constant '{name}'" in text and "13 dims" in text, text
    assert not (d / "out" / "output_0.npy").exists()


if __name__ == "__main__":  # the export worker of _export
    _export_here(sys.argv[1], sys.argv[2] == "1", Path(sys.argv[3]))
