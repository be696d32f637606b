"""Complex tensors through the proxy executor on the CPU, end to end: inductor has no
codegen for complex dtypes, so the ops that make, conjugate, copy or pad them in the
torch.fft decompositions and in torch.complex / .to(complex) reach aotrt as extern nodes
(aten::_conj, _conj_physical, clone, constant_pad_nd, complex, prims::convert_element_type),
plus aten::index_add, which inductor leaves to the proxy executor for bfloat16. One-op
packages exported by torch, run by `build/aotrt run`, compared with eager; each case
asserts the extern nodes its package really calls, so a torch that lowers differently
fails here instead of testing nothing (Note [Conjugate views] in src/ops/pointwise.h).

Tolerances, relative to the largest magnitude of eager's output (at least 1): exact (0)
for the conversions, conjugates and torch.complex, which only move or negate values;
float32 FFTs 2e-6 and float64 1e-13 per log2 of the longest transform (as
test_ops_fft.py); bfloat16 index_add exact (the sums round the way ATen's do: one add at
a time, in index order).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from one_op import (Case, assert_matches, cache_dir, eager_outputs, export_all, extern_targets,
                    outputs, run_aotrt)

torch.manual_seed(0)


def fft2_pad(x):
    return torch.fft.fft2(x, s=(6, 9))


def ifftn_crop_pad(x):
    return torch.fft.ifftn(x, s=(3, 8))


def ifft_real(x):
    return torch.fft.ifft(x)


def ifft_strided(x):
    return torch.fft.ifft(x.transpose(0, 1))


def ihfft(x):
    return torch.fft.ihfft(x, norm="ortho")


def hfft(x):
    return torch.fft.hfft(x)


def hfft_complex(z):
    return torch.fft.hfft(z, n=8)


def hfft2(x):
    return torch.fft.hfft2(x)


def ihfft2(x):
    return torch.fft.ihfft2(x)


def make_complex(a, b):
    return torch.complex(a, b)


def make_complex_broadcast(a, b):
    return torch.complex(a.transpose(0, 1), b)


def to_complex64(x):
    return x.to(torch.complex64)


def to_complex128(x):
    return x.cdouble()


def to_complex32(x):
    return x.chalf()


def index_add_bf16(a, i, s):
    return a.index_add(0, i, s)


def index_add_bf16_dim1(a, i, s):
    return a.index_add(1, i, s)


_BF = torch.bfloat16
# (case, proxy ops its package must call)
CASES = [
    (Case("fft2_pad", fft2_pad, [torch.randn(3, 4, 5)]), ["aten::constant_pad_nd"]),
    (Case("ifftn_crop_pad_f64", ifftn_crop_pad, [torch.randn(4, 5, dtype=torch.float64)]),
     ["aten::constant_pad_nd"]),
    (Case("ifft_real", ifft_real, [torch.randn(4, 8)]), ["aten::_conj"]),
    (Case("ifft_strided", ifft_strided, [torch.randn(12, 5)]), ["aten::_conj"]),
    (Case("ihfft", ihfft, [torch.randn(3, 10)]), ["aten::_conj"]),
    (Case("hfft", hfft, [torch.randn(4, 8)]), ["aten::_conj", "aten::clone", "aten::_fft_c2r"]),
    (Case("hfft_complex", hfft_complex, [torch.randn(3, 5, dtype=torch.complex64)]),
     ["aten::_conj", "aten::clone"]),
    (Case("hfft2", hfft2, [torch.randn(3, 6, 5)]), ["aten::_conj", "aten::clone"]),
    (Case("ihfft2", ihfft2, [torch.randn(4, 8)]), ["aten::_conj_physical"]),
    (Case("complex", make_complex, [torch.randn(3, 4), torch.randn(3, 4)]), ["aten::complex"]),
    (Case("complex_half", make_complex, [torch.randn(2, 5).half(), torch.randn(2, 5).half()]),
     ["aten::complex"]),
    (Case("complex_broadcast_f64", make_complex_broadcast,
          [torch.randn(5, 3, dtype=torch.float64), torch.randn(1, 5, dtype=torch.float64)]),
     ["aten::complex"]),
    # Inductor lowers a cast of a tensor with dims to aoti_torch_copy_; a 0-d one (the
    # OpInfo cfloat/cdouble/chalf rows' first sample) stays prims.convert_element_type.
    (Case("to_complex64_0d", to_complex64, [torch.randn(())]), ["prims::convert_element_type"]),
    (Case("to_complex128_0d_int", to_complex128, [torch.tensor(-7)]),
     ["prims::convert_element_type"]),
    (Case("to_complex32_0d", to_complex32, [torch.tensor(0.375)]), ["prims::convert_element_type"]),
    (Case("index_add_bf16", index_add_bf16,
          [torch.randn(5, 3).to(_BF), torch.tensor([0, 2, 2, 4]), torch.randn(4, 3).to(_BF)]),
     ["aten::index_add"]),
    (Case("index_add_bf16_dim1", index_add_bf16_dim1,
          [torch.randn(3, 6).to(_BF), torch.tensor([5, 0, 5]), torch.randn(3, 3).to(_BF)]),
     ["aten::index_add"]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all([c for c, _ in CASES], cache_dir(tmp_path_factory, "ops_complex"))


@pytest.mark.parametrize("case,want_proxy", CASES, ids=[c.name for c, _ in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case, want_proxy):
    pkg = packages[case.name]
    for t in want_proxy:
        assert t in extern_targets(pkg), extern_targets(pkg)
    # numpy has no bfloat16: such inputs go in as float32, which the CLI converts to the
    # bfloat16 the package expects, and such outputs come back as float32.
    feed = [x.float() if x.dtype == _BF else x for x in case.inputs]
    proc = run_aotrt(aotrt_bin, pkg, feed, tmp_path)
    assert proc.returncode == 0, proc.stderr
    # ifft / ihfft of a real input return eager's lazy conjugate view: its values. The CLI
    # writes complex32 outputs as complex64 (numpy has no complex32), which holds them.
    widen = {_BF: torch.float32, torch.complex32: torch.complex64}
    want = [w.resolve_conj().to(widen.get(w.dtype, w.dtype)) for w in eager_outputs(case)]
    ffts = any(t.startswith("aten::_fft") for t in extern_targets(pkg)) or case.name.startswith(
        ("fft", "ifft", "ihfft", "hfft"))
    longest = max(max(x.shape, default=1) for x in case.inputs)

    def tolerance(dtype):
        if not ffts:
            return 0.0
        double = dtype in (torch.float64, torch.complex128)
        return (1e-13 if double else 2e-6) * math.log2(max(longest, 2))

    assert_matches(case.name, outputs(tmp_path), want, tolerance)
