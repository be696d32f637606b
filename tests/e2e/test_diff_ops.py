"""Differential tests: aotrt's op shims against eager PyTorch, property-based (hypothesis).

Each test draws an op of a family, shapes (empty dims among them), dtypes, layouts (contiguous,
permuted, sliced with a step, at a storage offset, broadcast with stride 0) and values (NaN, inf,
signed zeros, ties among them where the family allows), calls the op through libaotrt.so's C shim
on the very memory of torch tensors (aotrt_tools.shim_harness: ctypes, no package, no compile),
and compares with eager on the same tensors, with the tolerance each test states. Ops of a family
that libaotrt.so does not export are left out of that family's draw, and a family none of whose
ops are served is skipped, saying so.

Devices: AOTRT_DIFF_DEVICES (default "cpu"); "cpu,cuda" on a CUDA build runs every test again
with CUDA tensors and the `aoti_torch_cuda_<op>` entry points (on the H200:
`AOTRT_DIFF_DEVICES=cpu,cuda AOTRT_LIB=build-gpu/libaotrt.so python3 -m pytest tests/e2e/test_diff_ops.py`).
AOTRT_DIFF_EXAMPLES sets the examples per test (default 60: about a minute on the CPU in CI).
A failure prints the falsifying example and a @reproduce_failure blob.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis", reason="scripts/install_deps.sh installs hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from aotrt_tools.robust_log import record  # noqa: E402
from aotrt_tools.shim_harness import ShimHarness  # noqa: E402

DEVICES = [d.strip() for d in os.environ.get("AOTRT_DIFF_DEVICES", "cpu").split(",") if d.strip()]
EXAMPLES = int(os.environ.get("AOTRT_DIFF_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def shims(aotrt_bin) -> ShimHarness:
    path = Path(os.environ.get("AOTRT_LIB", aotrt_bin.parent / "libaotrt.so"))
    if not path.is_file():
        pytest.fail(f"libaotrt.so not found at {path}; build it or set AOTRT_LIB", pytrace=False)
    return ShimHarness(path)


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    if request.param.startswith("cuda") and not torch.cuda.is_available():
        pytest.skip("AOTRT_DIFF_DEVICES asks for CUDA, and torch sees no GPU")
    return request.param


def served(shims: ShimHarness, device: str, ops: list[str]) -> list[str]:
    prefix = "aoti_torch_cuda_" if device.startswith("cuda") else "aoti_torch_cpu_"
    # Served by libaotrt.so, and declared by this torch's headers (the signature to call it by).
    names = [op for op in ops if shims.has(prefix + op) and prefix + op in shims.ops]
    if not names:
        pytest.skip(f"libaotrt.so serves none of {ops} on {device} (or this torch does not declare them)")
    return names


def check(family: str, shims: ShimHarness, device: str, body) -> None:
    """Runs body(shims, device, data) on hypothesis's examples; records the case when all passed."""
    @SETTINGS
    @given(data=st.data())
    def run(data):
        body(shims, device, data)

    run()
    record("differential", f"{family} ({device}): random shapes, layouts, dtypes, NaN/inf/ties",
           "matches eager", f"up to {EXAMPLES} examples per run (hypothesis), tolerances in tests/e2e/test_diff_ops.py")


def shim(device: str, op: str) -> str:
    return ("aoti_torch_cuda_" if device.startswith("cuda") else "aoti_torch_cpu_") + op


# --- Tensors: layouts and values ----------------------------------------------------------------
LAYOUTS = ["contiguous", "permuted", "sliced", "offset", "broadcast"]
OUT_LAYOUTS = ["contiguous", "permuted", "sliced", "offset"]


@st.composite
def tensors(draw, shape, dtype, device, layouts=LAYOUTS, specials=True, low=-4.0, high=4.0):
    """A tensor of `shape` in one of `layouts`, its values drawn from a seed: uniform in
    [low, high], some made 0 / -0 / ties, and, with `specials`, some NaN / inf / -inf."""
    shape = list(shape)
    layout = draw(st.sampled_from(layouts))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    if layout == "broadcast" and shape:
        d = draw(st.integers(0, len(shape) - 1))
        small = shape.copy()
        small[d] = 1
        base = _values(small, dtype, g, specials and draw(st.booleans()), low, high, draw)
        return base.to(device).expand(shape)
    values = _values(shape, dtype, g, specials and draw(st.booleans()), low, high, draw)
    if layout == "permuted" and len(shape) >= 2:
        perm = draw(st.permutations(range(len(shape))))
        inv = [perm.index(i) for i in range(len(shape))]
        t = torch.empty([shape[p] for p in perm], dtype=dtype, device=device).permute(inv)
    elif layout == "sliced" and shape:
        t = torch.empty(shape[:-1] + [2 * shape[-1] + 1], dtype=dtype, device=device)[..., 1::2]
    elif layout == "offset":
        n = math.prod(shape)
        t = torch.empty(n + 3, dtype=dtype, device=device)[3:].view(shape)
    else:
        t = torch.empty(shape, dtype=dtype, device=device)
    t.copy_(values)
    return t


def _values(shape, dtype, g, specials, low, high, draw):
    v = torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low
    if dtype.is_floating_point:
        v = v.to(dtype)
    else:
        v = v.round().to(dtype)
    n = v.numel()
    if n:
        flat = v.view(-1)
        k = draw(st.integers(0, min(n, 4)))
        for _ in range(k):  # ties and signed zeros
            i, j = torch.randint(0, n, (2,), generator=g).tolist()
            flat[i] = flat[j]
        if dtype.is_floating_point:
            flat[torch.randint(0, n, (1,), generator=g)] = -0.0
            if specials:
                for s in draw(st.lists(st.sampled_from([math.nan, math.inf, -math.inf]), max_size=3)):
                    flat[torch.randint(0, n, (1,), generator=g)] = s
    return v


def out_like(shape, dtype, device, layout):
    """An output tensor of `layout`, filled with NaN: an op that reads what it should only write
    shows it."""
    t = {"contiguous": lambda: torch.empty(shape, dtype=dtype, device=device),
         "permuted": lambda: torch.empty(shape[::-1], dtype=dtype, device=device).permute(
             *range(len(shape) - 1, -1, -1)),
         "sliced": lambda: torch.empty(shape[:-1] + [2 * shape[-1] + 1], dtype=dtype, device=device)[..., 1::2],
         "offset": lambda: torch.empty(math.prod(shape) + 5, dtype=dtype, device=device)[5:].view(shape)}[layout]()
    if dtype.is_floating_point:
        t.fill_(math.nan)
    return t


def assert_same(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float, what: str,
                strides: bool = False):
    """Values within rtol/atol (NaN where eager has NaN); with `strides`, also eager's strides
    in every dim of size > 1 (an op's own output follows ATen's layout rules)."""
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, eager {tuple(want.shape)}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, eager {want.dtype}"
    if strides and got.numel() > 0:
        mine = [s for s, n in zip(got.stride(), got.shape) if n > 1]
        theirs = [s for s, n in zip(want.stride(), want.shape) if n > 1]
        assert mine == theirs, f"{what}: strides {got.stride()}, eager {want.stride()}"
    g, w = got.cpu().double(), want.cpu().double()
    assert torch.equal(g.isnan(), w.isnan()), f"{what}: NaN at other places\n got {g}\n eager {w}"
    torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}")


def scale_of(*ts) -> float:
    m = 1.0
    for t in ts:
        if t is not None and t.numel():
            f = t.double().abs()
            f = f[f.isfinite()]
            if f.numel():
                m = max(m, float(f.max()))
    return m


# --- Matrix products ----------------------------------------------------------------------------
MATMUL = ["mm_out", "addmm_out", "bmm_out", "baddbmm_out"]
TOL = {torch.float32: 2e-6, torch.float64: 1e-13}


def _integer_matmul(shims, op, dtype, data):
    """_matmul_family's integer draw (CPU): exact, wrapping as eager's."""
    bound = 2.0**40 if dtype == torch.int64 else 2.0**20
    M, K, N = (data.draw(st.integers(0, 9)) for _ in range(3))
    B = data.draw(st.integers(0, 3))
    batched = op.startswith(("bmm", "baddbmm"))
    a_shape, b_shape, o_shape = ([B, M, K], [B, K, N], [B, M, N]) if batched else ([M, K], [K, N], [M, N])
    a = data.draw(tensors(a_shape, dtype, "cpu", low=-bound, high=bound))
    b = data.draw(tensors(b_shape, dtype, "cpu", low=-bound, high=bound))
    out = out_like(o_shape, dtype, "cpu", data.draw(st.sampled_from(OUT_LAYOUTS)))
    out.fill_(-7)
    if op in ("mm_out", "bmm_out"):
        rc, _ = shims.call(shim("cpu", op), out, a, b, device="cpu")
        want = torch.mm(a, b) if op == "mm_out" else torch.bmm(a, b)
    else:
        self_shape = data.draw(st.sampled_from([o_shape, o_shape[-1:], [1] * len(o_shape)]))
        s = data.draw(tensors(self_shape, dtype, "cpu", low=-bound, high=bound))
        beta, alpha = data.draw(st.sampled_from([0, 1, -2, 3])), data.draw(st.sampled_from([1, 2, -1, 0]))
        rc, _ = shims.call(shim("cpu", op), out, s, a, b, float(beta), float(alpha), device="cpu")
        want = (torch.addmm if op == "addmm_out" else torch.baddbmm)(s, a, b, beta=beta, alpha=alpha)
    assert rc == 0, f"{op} refused: {shims.last_error()}"
    assert_same(out, want, 0.0, 0.0, f"{op} {dtype} {a_shape}x{b_shape}")


def _matmul_family(shims, device, data):
    """mm / addmm / bmm / baddbmm (_out) against eager, any operand layouts, out strided and
    prefilled with NaN, beta 0 (self not read: NaN in it does not propagate) and alpha any
    (alpha 0: see below). On the CPU also int64 and int32 (Note [Integer matmul on the CPU]),
    with values up to 2^40 / 2^20 so that products wrap, integer beta and alpha.
    Tolerance: rtol 0, atol = eps * (K + 2) * (largest |operand|)^2 * 8; integers exact."""
    op = data.draw(st.sampled_from(served(shims, device, MATMUL)))
    ints = [torch.int64, torch.int32] if device == "cpu" else []
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64] + ints))
    if not dtype.is_floating_point:
        _integer_matmul(shims, op, dtype, data)
        return
    M, K, N = (data.draw(st.integers(0, 9)) for _ in range(3))
    B = data.draw(st.integers(0, 3))
    batched = op.startswith(("bmm", "baddbmm"))
    a_shape, b_shape, o_shape = ([B, M, K], [B, K, N], [B, M, N]) if batched else ([M, K], [K, N], [M, N])
    a = data.draw(tensors(a_shape, dtype, device))
    b = data.draw(tensors(b_shape, dtype, device))
    out = out_like(o_shape, dtype, device, data.draw(st.sampled_from(OUT_LAYOUTS)))
    if op in ("mm_out", "bmm_out"):
        rc, _ = shims.call(shim(device, op), out, a, b, device=device)
        want = torch.mm(a, b) if op == "mm_out" else torch.bmm(a, b)
        scale = scale_of(a, b)
    else:
        self_shape = data.draw(st.sampled_from([o_shape, o_shape[-1:], [1] * len(o_shape)]))
        s = data.draw(tensors(self_shape, dtype, device))
        beta = data.draw(st.sampled_from([0.0, 1.0, 0.5, -2.0]))
        alpha = data.draw(st.sampled_from([1.0, 2.0, -0.5, 0.0]))
        rc, _ = shims.call(shim(device, op), out, s, a, b, beta, alpha, device=device)
        ref = torch.addmm if op == "addmm_out" else torch.baddbmm
        want = ref(s, a, b, beta=beta, alpha=alpha)
        scale = scale_of(a, b, s) * max(1.0, abs(alpha), abs(beta))
    assert rc == 0, f"{op} refused: {shims.last_error()}"
    tol = TOL[dtype] * (K + 2) * scale * scale * 8
    if op in ("addmm_out", "baddbmm_out") and alpha == 0.0:
        # Eager disagrees with itself here: baddbmm's own loop (small matrices) gives
        # 0 * NaN = NaN, BLAS (addmm, large baddbmm) skips the product. aotrt's BLAS answer,
        # beta * self (nothing of self when beta is 0), is eager's for addmm.
        blas = torch.zeros_like(want) if beta == 0.0 else (beta * s).expand(o_shape).clone()
        try:
            assert_same(out, want, 0.0, tol, f"{op} alpha 0")
        except AssertionError:
            assert_same(out, blas, 0.0, tol, f"{op} alpha 0 (BLAS semantics)")
        return
    assert_same(out, want, 0.0, tol, f"{op} {a_shape}x{b_shape}")


def test_matmul_family(shims, device):
    check('matrix products (mm, addmm, bmm, baddbmm _out)', shims, device, _matmul_family)


# --- Convolution --------------------------------------------------------------------------------
def guarded(t: torch.Tensor) -> torch.Tensor:
    """A copy of t with t's sizes and strides whose storage extends past both ends of its span."""
    span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) if t.numel() else 0
    pad = max(span, 256)
    storage = torch.zeros(span + 2 * pad, dtype=t.dtype, device=t.device)
    return storage.as_strided(t.shape, t.stride(), pad).copy_(t)


def _convolution(shims, device, data):
    """aoti_torch_<dev>_convolution against torch.convolution: 1-d and 2-d, transposed or not,
    groups, stride, padding, dilation, output padding, bias or none, any input and weight layout
    (channels-last among them), batch 0 among the shapes. Values finite (a convolution's
    algorithm may turn one inf into NaN where the direct sum does not). fp32 (oneDNN) and, on
    the CPU, fp64 (Note [Direct convolution]); cuDNN's fp64 is not drawn.
    Tolerance: rtol 1e-4 (fp64 1e-10), atol 1e-5 (fp64 1e-12) * (terms per output) *
    (largest |operand|)^2."""
    served(shims, device, ["convolution"])
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64])) if device == "cpu" else torch.float32
    nd = data.draw(st.sampled_from([1, 2]))
    groups = data.draw(st.integers(1, 2))
    cin, cout = groups * data.draw(st.integers(1, 3)), groups * data.draw(st.integers(1, 3))
    n = data.draw(st.integers(0, 2))
    ks = [data.draw(st.integers(1, 3)) for _ in range(nd)]
    stride = [data.draw(st.integers(1, 2)) for _ in range(nd)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(nd)]
    padding = [data.draw(st.integers(0, 2)) for _ in range(nd)]
    transposed = data.draw(st.booleans())
    out_pad = [data.draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation)] if transposed else [0] * nd
    spatial = [data.draw(st.integers((k - 1) * d + 1 if not transposed else 1, 7)) for k, d in zip(ks, dilation)]
    if not transposed:
        spatial = [max(s, (k - 1) * d + 1 - 2 * p) for s, k, d, p in zip(spatial, ks, dilation, padding)]
    x = data.draw(tensors([n, cin] + spatial, dtype, device, specials=False))
    w_shape = [cin, cout // groups] + ks if transposed else [cout, cin // groups] + ks
    w = data.draw(tensors(w_shape, dtype, device, specials=False))
    if data.draw(st.booleans()) and nd == 2:
        x = x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x
        w = w.contiguous(memory_format=torch.channels_last)
    bias = data.draw(st.one_of(st.none(), tensors([cout], dtype, device, specials=False)))
    args = (stride, padding, dilation, transposed, out_pad, groups)
    try:
        # Values from eager on dense copies; the layout from eager on copies with the operands'
        # own strides, placed inside guard space (Note [Eager convolution's reference] below).
        layout = torch.convolution(guarded(x), guarded(w), bias, *args)
        dense = torch.convolution(x.contiguous(), w.contiguous(), bias, *args)
        want = torch.empty_strided(layout.shape, layout.stride(), dtype=dense.dtype, device=device).copy_(dense)
    except RuntimeError:
        hypothesis.assume(False)  # eager refuses these arguments too: draw others
    rc, (h,) = shims.call(shim(device, "convolution"), x, w, bias, stride, padding, dilation, int(transposed),
                          out_pad, groups, device=device)
    assert rc == 0, f"convolution refused: {shims.last_error()}"
    got = shims.take(h, device)
    terms = (cin // groups) * math.prod(ks) + 1
    tol = {torch.float32: 1e-5, torch.float64: 1e-12}[dtype] * terms * scale_of(x, w, bias) ** 2
    assert_same(got, want, 1e-4 if dtype == torch.float32 else 1e-10, tol,
                f"convolution x{list(x.shape)} w{w_shape}", strides=True)


# Note [Eager convolution's reference]
# torch 2.13's CPU convolution (its oneDNN path) misreads a channels-last weight whose size-1
# dim has a stride other than the one .contiguous(channels_last) would give: for x [1, 4, 2, 1]
# channels-last and w [2, 2, 2, 1] with strides (4, 1, 2, 1) (channels-last by torch's own
# is_contiguous, reached from a sliced draw), groups 2, eager gives [10.2496, -9.2129] where
# the sum is [14.1998, 14.8010] (eager on w.contiguous(), float64, and eager with mkldnn off
# all give the latter; so does aotrt). torch's issues #82060 and #99519 are of the same kind
# (channels-last operands with size-1 dims, wrong or garbage values). The reference values are
# therefore eager's on dense copies, and the output layout aotrt must match is the one eager
# gives for operands of the drawn strides (meta tensors would not do: the meta function's
# memory-format rule differs from the CPU kernel's, which aotrt follows), computed on copies of
# those strides with guard space on both sides, so that a misread stays in memory. This also explains the signal eager died on for one draw
# on 2026-12-01 with libaotrt loaded (the test then only ran with AOTRT_DIFF_CONV=1): a
# misread layout reads past its operand; with dense copies 40 rounds of 300 draws ran clean.
def test_convolution(shims, device):
    check('convolution (1-d, 2-d, transposed, groups)', shims, device, _convolution)


def test_convolution_int32_transposed_is_refused(shims):
    """The CPU refuses what ATen's CPU kernels refuse (a transposed int32 convolution: its slow
    transposed kernels serve float64 and int64 only): a clear error, no crash."""
    served(shims, "cpu", ["convolution"])
    x, w = torch.ones(1, 2, 5, 5, dtype=torch.int32), torch.ones(2, 3, 3, 3, dtype=torch.int32)
    with pytest.raises(RuntimeError):
        torch.convolution(x, w, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1)
    rc, (h,) = shims.call("aoti_torch_cpu_convolution", x, w, None, [1, 1], [0, 0], [1, 1], 1, [0, 0], 1)
    assert rc == 1 and h is None
    assert "aoti_torch_cpu_convolution" in shims.last_error() and "int32" in shims.last_error()


# --- Attention ----------------------------------------------------------------------------------
def _sdpa_flash_for_cpu(shims, device, data):
    """_scaled_dot_product_flash_attention_for_cpu against eager's (CPU only: it is a CPU op):
    causal or not, an additive float mask or none, a given scale or the default, any q/k/v
    layout (eager's own kernel is given dense copies, see below; output strides compared when
    q, k, v are dense). Tolerance: fp32 rtol 1e-4, atol 1e-5 * max|v| (softmax weights are <= 1)."""
    if device != "cpu":
        pytest.skip("a CPU-only op")
    served(shims, device, ["_scaled_dot_product_flash_attention_for_cpu"])
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64]))
    B, H = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    L, S, E = (data.draw(st.integers(1, 7)) for _ in range(3))
    Ev = E  # eager's flash kernel wants one head size
    q = data.draw(tensors([B, H, L, E], dtype, device, specials=False))
    k = data.draw(tensors([B, H, S, E], dtype, device, specials=False))
    v = data.draw(tensors([B, H, S, Ev], dtype, device, specials=False))
    causal = data.draw(st.booleans())
    mask = None if causal or data.draw(st.booleans()) else data.draw(
        tensors([B, H, L, S], dtype, device, layouts=["contiguous", "broadcast"], specials=False))
    scale = data.draw(st.sampled_from([None, 0.5, 1.0 / math.sqrt(E)]))
    # Eager's kernel on dense copies: on other strides the raw kernel reads its operands as if
    # dense (eager's dispatcher never passes it others), and gives garbage, up to 1e37.
    dense = [t.contiguous() for t in (q, k, v)]
    want, want_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        *dense, 0.0, causal, attn_mask=None if mask is None else mask.contiguous(), scale=scale)
    same_layout = all(t.is_contiguous() for t in (q, k, v))
    rc, (h, h_lse) = shims.call(shim(device, "_scaled_dot_product_flash_attention_for_cpu"), q, k, v, 0.0,
                                int(causal), mask, scale, device=device)
    assert rc == 0, f"sdpa refused: {shims.last_error()}"
    got, got_lse = shims.take(h, device), shims.take(h_lse, device)
    rtol, atol = (1e-4, 1e-5) if dtype == torch.float32 else (1e-10, 1e-12)
    assert_same(got, want, rtol, atol * scale_of(v), f"sdpa q{[B, H, L, E]} k{[B, H, S, E]}", strides=same_layout)
    assert_same(got_lse, want_lse, rtol, atol * 10, "sdpa logsumexp", strides=True)


def test_sdpa_flash_for_cpu(shims, device):
    check('CPU flash attention', shims, device, _sdpa_flash_for_cpu)


# --- Scans --------------------------------------------------------------------------------------
SCANS = ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"]


@st.composite
def shape_and_dim(draw, max_rank=3, max_size=5):
    shape = draw(st.lists(st.integers(0, max_size), max_size=max_rank))
    r = max(len(shape), 1)
    return shape, draw(st.integers(-r, r - 1))


def _scan_family(shims, device, data):
    """cumsum / cumprod (with and without a dtype) / logcumsumexp / cummax / cummin along any dim
    (negative too) of any layout, 0-d and empty tensors among them, NaN/inf/ties in the values.
    Values: rtol 1e-5 (fp32; 1e-12 fp64), atol 1e-5 * n * max|x|^n-ish bounded by the values
    themselves; indices of cummax/cummin exact (ATen's tie rule: the last of equal values)."""
    op = data.draw(st.sampled_from(served(shims, device, SCANS)))
    shape, dim = data.draw(shape_and_dim())
    floats = [torch.float32, torch.float64]
    dtype = data.draw(st.sampled_from(floats if op == "logcumsumexp" else floats + [torch.int32, torch.int64]))
    low, high = (-2.0, 2.0) if op == "cumprod" else (-4.0, 4.0)
    x = data.draw(tensors(shape, dtype, device, low=low, high=high))
    args, ref_kw = [], {}
    if op in ("cumsum", "cumprod"):
        out_dtype = data.draw(st.sampled_from([None, torch.float64, torch.int64] if dtype.is_floating_point is False
                                              else [None, torch.float64]))
        args = [shims.codes[out_dtype] if out_dtype is not None else None]
        ref_kw = {"dtype": out_dtype}
    rc, res = shims.call(shim(device, op), x, dim, *args, device=device)
    assert rc == 0, f"{op} refused: {shims.last_error()}"
    got = [shims.take(h, device) for h in res]
    want = getattr(torch, op)(x, dim, **ref_kw)
    want = [want] if isinstance(want, torch.Tensor) else [want.values, want.indices]
    n = max(x.shape[dim] if x.dim() else 1, 1)
    rtol = 1e-5 if torch.float32 in (x.dtype, got[0].dtype) else 1e-12
    assert_same(got[0], want[0], rtol, rtol * n * scale_of(x), f"{op} {shape} dim {dim}")
    if len(want) > 1:
        assert torch.equal(got[1].cpu(), want[1].cpu()), f"{op} indices:\n got {got[1]}\n eager {want[1]}\n x {x}"


def test_scan_family(shims, device):
    check('scans (cumsum, cumprod, logcumsumexp, cummax, cummin)', shims, device, _scan_family)


# --- Sorting and selection ----------------------------------------------------------------------
SORTS = ["sort", "sort_stable", "topk", "kthvalue", "mode", "median", "nanmedian"]


def _sort_family(shims, device, data):
    """sort (stable or not, either direction), topk (largest or not, sorted or not), kthvalue,
    mode, median, nanmedian, with ties and NaN. Values exact. Indices exact where ATen defines
    them (stable sort); elsewhere, ties may be broken either way, so the indices must pick the
    returned values out of the input (x.gather(dim, idx) == values)."""
    op = data.draw(st.sampled_from(served(shims, device, SORTS)))
    shape, dim = data.draw(shape_and_dim(max_size=6))
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64, torch.int32, torch.int64]))
    x = data.draw(tensors(shape, dtype, device, low=-3.0, high=3.0))
    size = x.shape[dim] if x.dim() else 1
    kw = {}
    if op == "sort":
        desc = data.draw(st.booleans())
        args, want = [dim, int(desc)], torch.sort(x, dim, descending=desc)
    elif op == "sort_stable":
        desc, stable = data.draw(st.booleans()), data.draw(st.sampled_from([None, 0, 1]))
        args, want = [stable, dim, int(desc)], torch.sort(x, dim=dim, descending=desc, stable=bool(stable))
        kw["exact_indices"] = bool(stable)
    elif op == "topk":
        k, largest, srt = data.draw(st.integers(0, size)), data.draw(st.booleans()), data.draw(st.booleans())
        args, want = [k, dim, int(largest), int(srt)], torch.topk(x, k, dim, largest, srt)
        kw["unordered"] = not srt
    elif op in ("kthvalue", "mode"):
        hypothesis.assume(size > 0)
        keep = data.draw(st.booleans())
        if op == "kthvalue":
            k = data.draw(st.integers(1, size))
            args, want = [k, dim, int(keep)], torch.kthvalue(x, k, dim, keep)
        else:
            args, want = [dim, int(keep)], torch.mode(x, dim, keep)
        kw["keepdim"] = keep
    else:
        hypothesis.assume(x.numel() > 0)
        args, want = [], getattr(torch, op)(x)
    rc, res = shims.call(shim(device, op), x, *args, device=device)
    assert rc == 0, f"{op} refused: {shims.last_error()}"
    got = [shims.take(h, device) for h in res]
    want = [want] if isinstance(want, torch.Tensor) else [want.values, want.indices]
    what = f"{op} {list(x.shape)} dim {dim} {args}"
    if kw.get("unordered"):  # topk(sorted=False): the same multiset per row, in any order
        got[0], order = got[0].sort(dim)
        got[1] = got[1].gather(dim, order)
        want[0] = want[0].sort(dim).values
    assert_same(got[0], want[0], 0.0, 0.0, what)
    if len(want) > 1:
        idx = got[1].to(torch.int64)
        assert idx.dtype == want[1].dtype or got[1].dtype == want[1].dtype, f"{what}: index dtype {got[1].dtype}"
        if kw.get("exact_indices"):
            assert torch.equal(got[1].cpu(), want[1].cpu()), f"{what}: indices {got[1]} eager {want[1]}"
        elif x.numel() and idx.numel():
            src = x if x.dim() else x.view(1)
            ii = idx if x.dim() else idx.view(1)
            if op in ("kthvalue", "mode") and not kw["keepdim"] and x.dim():
                ii = ii.unsqueeze(dim)
            picked = src.gather(dim if x.dim() else 0, ii)
            vals = got[0] if x.dim() else got[0].view(1)
            if op in ("kthvalue", "mode") and not kw["keepdim"] and x.dim():
                vals = vals.unsqueeze(dim)
            assert_same(picked, vals, 0.0, 0.0, f"{what}: x.gather(indices) is not the values")


def test_sort_family(shims, device):
    check('sorting (sort, topk, kthvalue, mode, median, nanmedian)', shims, device, _sort_family)


# --- Indexing -----------------------------------------------------------------------------------
def _indexing_family(shims, device, data):
    """index.Tensor (int64 indices, negative ones too, or a bool mask, on any subset of dims),
    nonzero, masked_select (broadcast mask), bucketize and searchsorted (left/right, int32 or
    int64 out, a sorter), scatter_reduce (sum/prod/mean/amax/amin, with or without self, duplicate
    indices). Exact, except sums and means of duplicates: rtol 1e-5 (fp32)."""
    ops = ["index_Tensor", "nonzero", "masked_select", "bucketize_Tensor", "searchsorted_Tensor",
           "scatter_reduce_two_out"]
    op = data.draw(st.sampled_from(served(shims, device, ops)))
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64, torch.int64]))
    shape = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
    x = data.draw(tensors(shape, dtype, device, low=-3.0, high=3.0))
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 2**31 - 1)))
    what = f"{op} {shape} {dtype}"
    if op == "index_Tensor":
        if data.draw(st.booleans()):
            mask = (torch.rand(shape, generator=g) > 0.5).to(device)
            indices = [mask]
        else:
            ishape = data.draw(st.lists(st.integers(0, 3), max_size=2))
            dims = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
            hypothesis.assume(any(dims))
            indices = [torch.randint(-n, n, ishape, generator=g).to(device) if use and n > 0 else None
                       for use, n in zip(dims, shape)]
            hypothesis.assume(any(i is not None for i in indices))
            while indices and indices[-1] is None:
                indices.pop()
        want = torch.ops.aten.index.Tensor(x, indices)  # (Python's x[...] reads None as a new dim)
        rc, (h,) = shims.call(shim(device, op), x, indices, device=device)
        assert rc == 0, f"{what} refused: {shims.last_error()}"
        assert_same(shims.take(h, device), want, 0.0, 0.0, what)
    elif op == "nonzero":
        rc, (h,) = shims.call(shim(device, op), x, device=device)
        assert rc == 0, f"{what} refused: {shims.last_error()}"
        assert_same(shims.take(h, device), torch.nonzero(x), 0.0, 0.0, what)
    elif op == "masked_select":
        mshape = data.draw(st.sampled_from([shape, shape[-1:], [1] * len(shape)]))
        mask = (torch.rand(mshape, generator=g) > 0.5).to(device)
        rc, (h,) = shims.call(shim(device, op), x, mask, device=device)
        assert rc == 0, f"{what} refused: {shims.last_error()}"
        assert_same(shims.take(h, device), torch.masked_select(x, mask), 0.0, 0.0, what)
    elif op in ("bucketize_Tensor", "searchsorted_Tensor"):
        n = data.draw(st.integers(0, 6))
        bounds = torch.sort(torch.randint(-3, 4, (n,), generator=g).to(dtype)).values.to(device)
        out_int32, right = data.draw(st.booleans()), data.draw(st.booleans())
        if op == "bucketize_Tensor":
            want = torch.bucketize(x, bounds, out_int32=out_int32, right=right)
            rc, (h,) = shims.call(shim(device, op), x, bounds, int(out_int32), int(right), device=device)
        else:
            rows = shape[:-1]
            seq = torch.sort(torch.randint(-3, 4, rows + [n], generator=g).to(dtype), dim=-1).values.to(device)
            seq = data.draw(st.sampled_from([seq, bounds]))
            side = data.draw(st.sampled_from([None, "left", "right"]))
            right = side == "right" if side is not None else right
            sorter = None
            if data.draw(st.booleans()) and seq.numel():
                perm = torch.stack([torch.randperm(seq.shape[-1], generator=g) for _ in range(max(seq[..., 0].numel(), 1))])
                perm = perm.view(list(seq.shape[:-1]) + [seq.shape[-1]]).to(device)
                sorter, seq = perm, torch.empty_like(seq).scatter_(-1, perm, seq)
            try:
                want = torch.searchsorted(seq, x, out_int32=out_int32, right=right, side=side, sorter=sorter)
            except RuntimeError:
                hypothesis.assume(False)  # eager refuses these shapes too
            rc, (h,) = shims.call(shim(device, op), seq, x, int(out_int32), int(right), side, sorter, device=device)
        assert rc == 0, f"{what} refused: {shims.last_error()}"
        assert_same(shims.take(h, device), want, 0.0, 0.0, what)
    else:  # scatter_reduce.two_out
        dim = data.draw(st.integers(-len(shape), len(shape) - 1))
        ishape = [data.draw(st.integers(0, s)) for s in shape]
        n = shape[dim]
        hypothesis.assume(n > 0 or math.prod(ishape) == 0)
        index = torch.randint(0, max(n, 1), ishape, generator=g).to(device)
        src = data.draw(tensors(ishape, dtype, device, low=-3.0, high=3.0))
        reduce = data.draw(st.sampled_from(["sum", "prod", "mean", "amax", "amin"]))
        include_self = data.draw(st.booleans())
        out = out_like(shape, dtype, device, data.draw(st.sampled_from(OUT_LAYOUTS)))
        want = torch.scatter_reduce(x, dim, index, src, reduce, include_self=include_self)
        rc, _ = shims.call(shim(device, op), out, x, dim, index, src, reduce, int(include_self), device=device)
        assert rc == 0, f"{what} refused: {shims.last_error()}"
        exact = reduce in ("amax", "amin") or not dtype.is_floating_point
        tol = 0.0 if exact else 1e-5 if dtype == torch.float32 else 1e-12
        assert_same(out, want, tol, tol * scale_of(x, src) ** 2 * 8, f"{what} {reduce} dim {dim}")



def test_indexing_family(shims, device):
    check('indexing (index, nonzero, masked_select, bucketize, searchsorted, scatter_reduce)', shims, device, _indexing_family)
