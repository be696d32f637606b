"""The special family on the CPU, end to end: torch's CPU inductor inlines these functions
into its C++, so the packages here are exported with inductor's `fallback_by_default`, which
makes it call ATen for every op, as its triton backend does for these on CUDA: through the
proxy executor (no c_shim entry exists), each a node of the package's wrapper.json. aotrt
runs them (src/shim/ops/special.cpp) and the outputs are compared with eager.

Two packages (float32 unary ops, float64 binary ones; the unit rows cover the dtypes).
Tolerance: 1e-5 (float32) / 1e-10 (float64) relative to the output's largest magnitude;
inputs avoid the ranges where ATen's own values are off the true ones (test_ops_special.cpp
lists them).
"""

from __future__ import annotations

import pytest
import torch

from one_op import Case, assert_matches, cache_dir, eager_outputs, export_all, extern_targets, outputs, run_aotrt

torch.manual_seed(0)
FALLBACK = {"fallback_by_default": True}


def unary_ops(x, p):
    return (torch.digamma(x), torch.polygamma(1, x), torch.polygamma(3, x), torch.special.i0e(x),
            torch.special.i1e(x), torch.special.ndtri(p), torch.special.modified_bessel_k0(x),
            torch.special.modified_bessel_k1(x), torch.special.scaled_modified_bessel_k0(x),
            torch.special.scaled_modified_bessel_k1(x), torch.special.spherical_bessel_j0(x),
            torch.special.airy_ai(x))


def binary_ops(a, x, n, y, s):
    return (torch.igamma(a, x), torch.igammac(a, x), torch.special.zeta(s, x),
            torch.special.zeta(x, 2.0), torch.special.zeta(3.0, x),
            torch.special.chebyshev_polynomial_t(y, n), torch.special.chebyshev_polynomial_u(y, 5),
            torch.special.shifted_chebyshev_polynomial_w(0.25, n), torch.special.hermite_polynomial_h(x, n),
            torch.special.hermite_polynomial_he(x, n), torch.special.laguerre_polynomial_l(x, n),
            torch.special.legendre_polynomial_p(y, n))


UNARY = {"aten::digamma", "aten::polygamma", "aten::special_i0e", "aten::special_i1e", "aten::special_ndtri",
         "aten::special_modified_bessel_k0", "aten::special_modified_bessel_k1",
         "aten::special_scaled_modified_bessel_k0", "aten::special_scaled_modified_bessel_k1",
         "aten::special_spherical_bessel_j0", "aten::special_airy_ai"}
BINARY = {"aten::igamma", "aten::igammac", "aten::special_zeta", "aten::special_zeta.other_scalar",
          "aten::special_zeta.self_scalar", "aten::special_chebyshev_polynomial_t",
          "aten::special_chebyshev_polynomial_u.n_scalar", "aten::special_shifted_chebyshev_polynomial_w.x_scalar",
          "aten::special_hermite_polynomial_h", "aten::special_hermite_polynomial_he",
          "aten::special_laguerre_polynomial_l", "aten::special_legendre_polynomial_p"}

CASES = [
    (Case("special_unary_f32", unary_ops, [torch.rand(6, 7) * 4 + 0.05, torch.rand(7, 6).t()], FALLBACK), UNARY, 1e-5),
    (Case("special_binary_f64", binary_ops, [torch.rand(5, 1, dtype=torch.float64) * 30,
                                             torch.rand(8, dtype=torch.float64) * 2 + 0.1,
                                             torch.tensor([0., 1, 2, 3, 5, 6, 9, 30], dtype=torch.float64),
                                             torch.rand(8, 5, dtype=torch.float64).t() * 2.4 - 1.2,
                                             torch.rand(8, dtype=torch.float64) * 3 + 1.5],
          FALLBACK), BINARY, 1e-10),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all([c for c, _, _ in CASES], cache_dir(tmp_path_factory, "ops_special"))


@pytest.mark.parametrize("case,targets,tol", CASES, ids=[c.name for c, _, _ in CASES])
def test_matches_eager_through_the_proxy_executor(aotrt_bin, packages, tmp_path, case, targets, tol):
    pkg = packages[case.name]
    assert set(extern_targets(pkg)) == targets, extern_targets(pkg)
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case), lambda dtype: tol)
