"""The FFT family on the CPU, end to end: torch.fft functions exported by torch (which lower
them to _fft_r2c / _fft_c2c, C shims, and _fft_c2r, through the proxy executor), run by
`build/aotrt run`, compared with eager (Note [FFT layout and scaling] in src/ops/fft.h).

Tolerances, relative to the largest magnitude of eager's output (at least 1): float32 2e-6 per log2 of
the longest transform (KISS FFT against eager's MKL/pocketfft, both O(eps log n)), float64
1e-13 likewise. Lengths include primes (7, 13) and mixed radices (12, 15, 30). The
modules avoid complex elementwise ops (inductor leaves those to mul_Tensor / add_Tensor /
view_as_real / _conj fallbacks, which are not this family's).
"""

from __future__ import annotations

import math

import pytest
import torch

from one_op import (Case, assert_matches, cache_dir, eager_outputs, export_all, extern_targets,
                    outputs, run_aotrt, shims)

torch.manual_seed(0)


def rfft(x):
    return torch.fft.rfft(x)


def fft_real(x):
    return torch.fft.fft(x, dim=0)


def fftn_ortho(x):
    return torch.fft.fftn(x, norm="ortho")


def rfft2(x):
    return torch.fft.rfft2(x, norm="forward")


def ifft_roundtrip(x):
    return torch.fft.ifft(torch.fft.fft(x), norm="forward")


def irfft(x):
    return torch.fft.irfft(torch.fft.rfft(x), n=x.shape[-1])


def irfftn(x):
    return torch.fft.irfftn(torch.fft.rfftn(x), s=x.shape[-2:], norm="ortho")


def fft_strided(x):
    return torch.fft.fft(x.transpose(0, 1), dim=-1)


# (case, shims it must import, proxy ops it must call)
CASES = [
    (Case("rfft", rfft, [torch.randn(3, 30)]), ["aoti_torch_cpu__fft_r2c"], []),
    (Case("fft_real_dim0", fft_real, [torch.randn(13, 4)]), ["aoti_torch_cpu__fft_r2c"], []),
    (Case("fftn_ortho", fftn_ortho, [torch.randn(2, 7, 12)]), ["aoti_torch_cpu__fft_c2c"], []),
    (Case("rfft2_f64", rfft2, [torch.randn(5, 6, 8, dtype=torch.float64)]),
     ["aoti_torch_cpu__fft_r2c"], []),
    (Case("ifft", ifft_roundtrip, [torch.randn(4, 15)]), ["aoti_torch_cpu__fft_c2c"], []),
    (Case("irfft", irfft, [torch.randn(3, 14)]), ["aoti_torch_cpu__fft_r2c"], ["aten::_fft_c2r"]),
    (Case("irfftn", irfftn, [torch.randn(2, 6, 10)]), [], ["aten::_fft_c2r"]),
    (Case("fft_strided", fft_strided, [torch.randn(12, 5)]), ["aoti_torch_cpu__fft_r2c"], []),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all([c for c, _, _ in CASES], cache_dir(tmp_path_factory, "ops_fft"))


@pytest.mark.parametrize("case,want_shims,want_proxy", CASES, ids=[c.name for c, _, _ in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case, want_shims, want_proxy):
    pkg = packages[case.name]
    for s in want_shims:
        assert s in shims(pkg), shims(pkg)
    for t in want_proxy:
        assert t in extern_targets(pkg), extern_targets(pkg)
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    longest = max(max(x.shape) for x in case.inputs)

    def tolerance(dtype):
        double = dtype in (torch.float64, torch.complex128)
        return (1e-13 if double else 2e-6) * math.log2(max(longest, 2))

    assert_matches(case.name, outputs(tmp_path), eager_outputs(case), tolerance)
