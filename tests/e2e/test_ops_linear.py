"""The linear family on the CPU, end to end: torch.addbmm, F.bilinear (the _trilinear C
shim) and aten._addmm_activation (relu and GELU) exported by torch, run by `build/aotrt
run`, compared with eager (Note [Linear semantics] in src/ops/linear.h). torch 2.13's
inductor decomposes addmv and _fused_rms_norm into its own code, so packages never import
those two shims; their unit rows (tests/unit/ops/test_ops_linear.cpp) cover them.

Tolerance: 1e-5 (float32) / 1e-12 (float64) relative to the largest output: other gemm
kernels (oneDNN, another summation order) than ATen's.
"""

from __future__ import annotations

import pytest
import torch

from one_op import Case, assert_matches, cache_dir, eager_outputs, export_all, outputs, run_aotrt, shims

torch.manual_seed(0)

A = torch.ops.aten


def linear_ops(s, b1, b2, x1, x2, w, bias, m1, m2):
    return (torch.addbmm(s, b1, b2, beta=0.5, alpha=2.0),
            torch.nn.functional.bilinear(x1, x2, w, bias),
            A._addmm_activation(bias, m1, m2, use_gelu=True),
            A._addmm_activation(bias, m1, m2, beta=0.5, alpha=-1.0, use_gelu=False))


def _inputs(dtype):
    r = lambda *s: torch.randn(*s, dtype=dtype)
    return [r(4, 5), r(3, 4, 6), r(3, 5, 6).transpose(1, 2), r(2, 3), r(2, 4), r(7, 3, 4), r(7),
            r(6, 5).t(), r(6, 7)]


def int_addbmm(s32, b1_32, b2_32, s64, b1_64, b2_64):
    return (torch.addbmm(s32, b1_32, b2_32), torch.addbmm(s64, b1_64, b2_64, beta=3, alpha=-2),
            torch.addbmm(s64, b1_64, b2_64, beta=0))


def _int_inputs():
    r = lambda dtype, *s: torch.randint(-2**20, 2**20, s, dtype=dtype)  # int32 sums wrap
    return [r(torch.int32, 4, 5), r(torch.int32, 3, 4, 6), r(torch.int32, 3, 5, 6).transpose(1, 2),
            r(torch.int64, 1, 5), r(torch.int64, 3, 4, 6), r(torch.int64, 3, 6, 5)]


CASES = [Case("linear_f32", linear_ops, _inputs(torch.float32)),
         Case("linear_f64", linear_ops, _inputs(torch.float64))]
# Integer addbmm: through the integer matmul (exact), compared for equality.
INT_CASE = Case("addbmm_int", int_addbmm, _int_inputs())


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all(CASES + [INT_CASE], cache_dir(tmp_path_factory, "ops_linear"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case):
    pkg = packages[case.name]
    imported = shims(pkg)
    for s in ("aoti_torch_cpu_addbmm", "aoti_torch_cpu__trilinear",
              "aoti_torch_cpu__addmm_activation"):
        assert s in imported, imported
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case),
                   lambda dtype: 1e-12 if dtype == torch.float64 else 1e-5)


def test_integer_addbmm_matches_eager_exactly(aotrt_bin, packages, tmp_path):
    pkg = packages[INT_CASE.name]
    assert "aoti_torch_cpu_addbmm" in shims(pkg), shims(pkg)
    proc = run_aotrt(aotrt_bin, pkg, INT_CASE.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    got, want = outputs(tmp_path), eager_outputs(INT_CASE)
    assert_matches(INT_CASE.name, got, want, lambda dtype: 0.0)  # integers: equal
    s, b1, b2 = (t.long() for t in INT_CASE.inputs[:3])
    assert not torch.equal(torch.addbmm(s, b1, b2), want[0].long()), "the int32 sums do not wrap"
