"""The linalg family on the CPU, end to end: one-op packages exported by torch, run by
`build/aotrt run`, compared with eager.

Ops without a C shim (linalg_inv_ex, _linalg_solve_ex, linalg_lu_factor_ex,
linalg_cholesky_ex, _linalg_check_errors) reach aotrt through its proxy executor; the
others (triangular_solve, cholesky_solve, cholesky_inverse, geqrf, ormqr) through their
C shims. Each case asserts which path its package really takes, so a torch that changes
the lowering fails here instead of testing nothing.

Tolerances: float32 2e-5 and float64 1e-12, relative to the largest magnitude of eager's
output (LAPACK from OpenBLAS on both sides, blocked differently).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from one_op import (Case, assert_matches, cache_dir, eager_outputs, export_all, extern_targets,
                    outputs, run_aotrt, shims)

torch.manual_seed(0)


def _spd(n, batch=(), dtype=torch.float32):
    a = torch.randn(*batch, n, n, dtype=dtype)
    return a @ a.mT + n * torch.eye(n, dtype=dtype)


def _wellcond(n, batch=(), dtype=torch.float32):
    return torch.randn(*batch, n, n, dtype=dtype) + n * torch.eye(n, dtype=dtype)


def inv(a):
    return torch.linalg.inv(a)


def inv_ex(a):
    r = torch.linalg.inv_ex(a)
    return r.inverse, r.info


def solve(a, b):
    return torch.linalg.solve(a, b)


def solve_right(a, b):
    return torch.linalg.solve(a, b, left=False)


def cholesky(a):
    return torch.linalg.cholesky(a)


def cholesky_upper(a):
    return torch.linalg.cholesky(a, upper=True)


def lu_factor(a):
    lu, piv = torch.linalg.lu_factor(a)
    return lu, piv


def solve_triangular(a, b):
    return torch.linalg.solve_triangular(a, b, upper=True)


def solve_triangular_right(a, b):
    return torch.linalg.solve_triangular(a, b, upper=False, left=False, unitriangular=True)


def det(a):
    return torch.linalg.det(a)


def slogdet(a):
    r = torch.linalg.slogdet(a)
    return r.sign, r.logabsdet


def triangular_solve(b, a):
    r = torch.triangular_solve(b, a, upper=True)
    return r.solution, r.cloned_coefficient


def triangular_solve_lower_t(b, a):
    r = torch.triangular_solve(b, a, upper=False, transpose=True, unitriangular=True)
    return r.solution, r.cloned_coefficient


def cholesky_solve(b, l):
    return torch.cholesky_solve(b, l)


def cholesky_inverse(l):
    return torch.cholesky_inverse(l)


def cholesky_inverse_upper(u):
    return torch.cholesky_inverse(u, upper=True)


def geqrf(a):
    return tuple(torch.geqrf(a))


def ormqr(a, tau, c):
    return torch.ormqr(a, tau, c, left=True, transpose=True)


def lu_unpack(lu, pivots):
    return tuple(torch.lu_unpack(lu, pivots))


_L = torch.linalg.cholesky(_spd(5, (2,)))
_LU = torch.linalg.lu_factor(torch.randn(2, 5, 4))
_QR = torch.geqrf(torch.randn(6, 4))
# (case, path, extern targets or shims it must use)
CASES = [
    (Case("inv_f32", inv, [_wellcond(5, (3,))]), "proxy", ["aten::linalg_inv_ex"]),
    (Case("inv_f64", inv, [_wellcond(6, (), torch.float64)]), "proxy", ["aten::linalg_inv_ex"]),
    (Case("inv_strided", inv, [_wellcond(4, (2,)).mT]), "proxy", ["aten::linalg_inv_ex"]),
    (Case("inv_ex", inv_ex, [_wellcond(4, (2,))]), "proxy", ["aten::linalg_inv_ex"]),
    (Case("solve", solve, [_wellcond(5, (2,)), torch.randn(2, 5, 3)]), "proxy",
     ["aten::_linalg_solve_ex"]),
    (Case("solve_bcast", solve, [_wellcond(5), torch.randn(3, 5, 2)]), "proxy",
     ["aten::_linalg_solve_ex"]),
    (Case("solve_vec", solve, [_wellcond(5, (2,)), torch.randn(2, 5)]), "proxy",
     ["aten::_linalg_solve_ex"]),
    (Case("solve_right", solve_right, [_wellcond(4, (2,)), torch.randn(2, 3, 4)]), "proxy",
     ["aten::_linalg_solve_ex"]),
    (Case("cholesky", cholesky, [_spd(6, (2,))]), "proxy", ["aten::linalg_cholesky_ex"]),
    (Case("cholesky_upper", cholesky_upper, [_spd(5, (), torch.float64)]), "proxy",
     ["aten::linalg_cholesky_ex"]),
    (Case("lu_factor", lu_factor, [torch.randn(2, 5, 4)]), "proxy",
     ["aten::linalg_lu_factor_ex"]),
    (Case("solve_triangular", solve_triangular, [_wellcond(4, (2,)), torch.randn(2, 4, 3)]),
     "proxy", ["aten::linalg_solve_triangular"]),
    (Case("solve_triangular_right", solve_triangular_right,
          [_wellcond(4), torch.randn(2, 3, 4)]), "proxy", ["aten::linalg_solve_triangular"]),
    (Case("det", det, [torch.randn(3, 4, 4)]), "proxy", ["aten::_linalg_det"]),
    (Case("det_singular_f64", det, [torch.ones(2, 3, 3, dtype=torch.float64)]), "proxy",
     ["aten::_linalg_det"]),
    (Case("slogdet", slogdet, [torch.randn(3, 5, 5)]), "proxy", ["aten::_linalg_slogdet"]),
    (Case("triangular_solve", triangular_solve, [torch.randn(2, 4, 3), _wellcond(4, (2,))]),
     "shim", ["aoti_torch_cpu_triangular_solve"]),
    (Case("triangular_solve_lt", triangular_solve_lower_t,
          [torch.randn(4, 2), _wellcond(4, (3,))]), "shim", ["aoti_torch_cpu_triangular_solve"]),
    (Case("cholesky_solve", cholesky_solve, [torch.randn(2, 5, 3), _L]), "shim",
     ["aoti_torch_cpu_cholesky_solve"]),
    (Case("cholesky_inverse", cholesky_inverse, [_L[0]]), "shim",
     ["aoti_torch_cpu_cholesky_inverse"]),
    (Case("cholesky_inverse_upper", cholesky_inverse_upper, [_L[1].mT.contiguous()]), "shim",
     ["aoti_torch_cpu_cholesky_inverse"]),
    (Case("geqrf", geqrf, [torch.randn(2, 6, 4)]), "shim", ["aoti_torch_cpu_geqrf"]),
    (Case("ormqr", ormqr, [_QR.a, _QR.tau, torch.randn(6, 3)]), "shim",
     ["aoti_torch_cpu_ormqr"]),
    (Case("lu_unpack", lu_unpack, [_LU.LU.mT.contiguous().mT, _LU.pivots]), "shim",
     ["aoti_torch_cpu_lu_unpack"]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    cases = [c for c, _, _ in CASES] + [Case("inv_singular", inv, [torch.ones(2, 3, 3)])]
    return export_all(cases, cache_dir(tmp_path_factory, "ops_linalg"))


def _tolerance(dtype):
    return 1e-12 if dtype == torch.float64 else 2e-5


@pytest.mark.parametrize("case,path,names", CASES, ids=[c.name for c, _, _ in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case, path, names):
    pkg = packages[case.name]
    used = extern_targets(pkg) if path == "proxy" else shims(pkg)
    for n in names:
        assert n in used, f"{case.name}: expected the package to use {n}, it uses {used}"
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case), _tolerance)


def test_singular_inverse_is_refused_with_atens_message(aotrt_bin, packages, tmp_path):
    proc = run_aotrt(aotrt_bin, packages["inv_singular"], [torch.ones(2, 3, 3)], tmp_path)
    assert proc.returncode != 0
    # ATen: "linalg.inv: (Batch element 0): The diagonal element 2 is zero, ..."
    assert "linalg.inv: (Batch element 0): The diagonal element 2 is zero" in proc.stderr, (
        proc.stderr)
    with pytest.raises(torch.linalg.LinAlgError, match="The diagonal element 2 is zero"):
        torch.linalg.inv(torch.ones(2, 3, 3))
