"""The linalg family on the CPU, end to end: one-op packages exported by torch, run by
`build/aotrt run`, compared with eager.

Ops without a C shim (linalg_inv_ex, _linalg_solve_ex, linalg_lu_factor_ex,
linalg_cholesky_ex, _linalg_check_errors) reach aotrt through its proxy executor; the
others (triangular_solve, cholesky_solve, cholesky_inverse, geqrf, ormqr) through their
C shims. Each case asserts which path its package really takes, so a torch that changes
the lowering fails here instead of testing nothing.

Tolerances: float32 2e-5 and float64 1e-12, relative to the largest magnitude of eager's
output (LAPACK from OpenBLAS on both sides, blocked differently).

The decompositions added with linalg_qr, _linalg_svd, _linalg_eigh, linalg_eig, linalg_lu,
linalg_lu_solve, cholesky, linalg_householder_product, linalg_ldl_factor_ex,
linalg_ldl_solve and linalg_pinv are compared with eager the same way and the same
tolerances scaled by the matrix size (1e-4 float32, 1e-10 float64: torch's LAPACK is MKL,
aotrt's OpenBLAS). Singular vectors and eigenvectors are defined up to a sign (a complex
phase for eig) per vector: before the comparison each of aotrt's vectors is multiplied by
the unit factor that best aligns it with eager's (U's column and Vh's row of svd by the same
sign), and the outputs are also checked to reconstruct the input (U S Vh, V diag(w) V^T,
A V = V diag(w)), so a wrong vector cannot pass by being flipped.
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


def qr_modes(a, w, t):
    q, r = torch.linalg.qr(a)
    qc, rc = torch.linalg.qr(t, mode="complete")
    qw, rw = torch.linalg.qr(w, mode="complete")
    return q, r, qc, rc, qw, rw, torch.linalg.qr(a, mode="r").R


def householder(a, tau):
    return torch.linalg.householder_product(a, tau)


def svd_all(a, w):
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    uf, sf, vhf = torch.linalg.svd(w, full_matrices=True)
    return u, s, vh, uf, sf, vhf, torch.linalg.svdvals(a)


def eigh_all(s):
    w, v = torch.linalg.eigh(s)
    return w, v, torch.linalg.eigvalsh(s, UPLO="U")


def eig_all(a):
    w, v = torch.linalg.eig(a)
    return w, v, torch.linalg.eigvals(a)


def lu_all(a, w, lu, piv, b, bt):
    p, l, u = torch.linalg.lu(a)
    pw, lw, uw = torch.linalg.lu(w)
    x = torch.linalg.lu_solve(lu, piv, b)
    xr = torch.linalg.lu_solve(lu, piv, bt, left=False, adjoint=True)
    xa = torch.linalg.lu_solve(lu, piv, b, adjoint=True)
    return p, l, u, pw, lw, uw, x, xr, xa


def cholesky_old(a):
    return torch.cholesky(a), torch.cholesky(a, upper=True)


def ldl(s, b):
    ld, piv, info = torch.linalg.ldl_factor_ex(s)
    return ld, piv, info, torch.linalg.ldl_solve(ld, piv, b)


def pinv_all(a, s, atol):
    return (torch.linalg.pinv(a), torch.linalg.pinv(s, hermitian=True),
            torch.linalg.pinv(a, atol=atol), torch.linalg.pinv(s, rtol=0.3))


def matrix_exp(a, b, c):
    return torch.linalg.matrix_exp(a), torch.linalg.matrix_exp(b), torch.linalg.matrix_exp(c)


def _norm_ladder(n, dtype):
    """Matrices of 1-norms across every degree's interval of ATen's matrix_exp (and past
    the last, where it scales and squares)."""
    a = torch.randn(8, n, n, dtype=dtype)
    a = a / a.abs().sum(-2).amax(-1)[:, None, None]  # 1-norm 1
    return a * torch.tensor([1e-17, 1e-9, 1e-5, 0.02, 0.2, 0.9, 2.5, 40.0],
                            dtype=dtype)[:, None, None]


def _sym(n, batch=(), dtype=torch.float32):
    a = torch.randn(*batch, n, n, dtype=dtype)
    return a + a.mT


_G = torch.geqrf(torch.randn(2, 6, 4, dtype=torch.float64))
_LUS = torch.linalg.lu_factor(_wellcond(4, (2,)))
_SING = torch.randn(2, 5, 2) @ torch.randn(2, 2, 4)  # rank 2
# (case, extern targets it must use, per-output vector alignment: None, ("svd", u, vh) or
# ("eigh", w, v) / ("eig", w, v) naming the outputs that carry vectors)
DECOMPOSITIONS = [
    (Case("qr", qr_modes, [torch.randn(2, 5, 3), torch.randn(3, 5), torch.randn(6, 4).mT.mT]),
     ["aten::linalg_qr"], []),
    (Case("qr_f64_strided", qr_modes,
          [torch.randn(2, 3, 5, dtype=torch.float64).mT, torch.randn(2, 3, 4, dtype=torch.float64),
           torch.randn(7, 3, dtype=torch.float64)]), ["aten::linalg_qr"], []),
    (Case("householder_product", householder, [_G.a, _G.tau]),
     ["aten::linalg_householder_product"], []),
    (Case("svd", svd_all, [torch.randn(2, 6, 4), torch.randn(3, 4, dtype=torch.float64).mT]),
     ["aten::_linalg_svd"], [("svd", 0, 1, 2), ("svd", 3, 4, 5)]),
    (Case("eigh", eigh_all, [_sym(5, (3,))]), ["aten::_linalg_eigh"], [("eigh", 0, 1)]),
    (Case("eigh_f64", eigh_all, [_sym(6, (), torch.float64).mT]), ["aten::_linalg_eigh"],
     [("eigh", 0, 1)]),
    (Case("eig", eig_all, [torch.randn(2, 5, 5)]), ["aten::linalg_eig"], [("eig", 0, 1)]),
    (Case("eig_f64", eig_all, [torch.randn(6, 6, dtype=torch.float64)]), ["aten::linalg_eig"],
     [("eig", 0, 1)]),
    (Case("lu", lu_all, [torch.randn(2, 5, 3), torch.randn(3, 6, dtype=torch.float32), _LUS.LU,
                         _LUS.pivots, torch.randn(3, 2, 4, 2), torch.randn(2, 3, 4)]),
     ["aten::linalg_lu", "aten::linalg_lu_solve"], []),
    (Case("cholesky_deprecated", cholesky_old, [_spd(5, (2,))]), ["aten::cholesky"], []),
    (Case("ldl", ldl, [_sym(5, (2,)), torch.randn(2, 5, 3)]),
     ["aten::linalg_ldl_factor_ex", "aten::linalg_ldl_solve"], []),
    (Case("matrix_exp", matrix_exp, [_norm_ladder(4, torch.float32),
                                     _norm_ladder(5, torch.float64).mT, torch.randn(3, 1, 1)]),
     ["aten::linalg_matrix_exp"], []),
    (Case("pinv", pinv_all, [_SING, _sym(4, (2,)), torch.tensor([0.5, 100.0])]),
     ["aten::linalg_pinv.atol_rtol_tensor"], []),
]


def _align(ours: np.ndarray, ref: np.ndarray, axis: int) -> np.ndarray:
    """The unit factors (one per vector; vectors run along `axis` of the last two dims) that
    best align ours with ref: sign(<ours, ref>) for real vectors, its phase for complex."""
    dot = (np.conj(ours) * ref).sum(axis=axis, keepdims=True)
    mag = np.abs(dot)
    return np.where(mag > 0, dot / np.where(mag > 0, mag, 1), 1)


def _decomposition_tolerance(dtype):
    return 1e-10 if dtype in (torch.float64, torch.complex128) else 1e-4


@pytest.mark.parametrize("case,names,vectors", DECOMPOSITIONS,
                         ids=[c.name for c, _, _ in DECOMPOSITIONS])
def test_decompositions_match_eager(aotrt_bin, packages, tmp_path, case, names, vectors):
    pkg = packages[case.name]
    used = extern_targets(pkg)
    for n in names:
        assert n in used, f"{case.name}: expected the package to use {n}, it uses {used}"
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = outputs(tmp_path)
    want = eager_outputs(case)
    for kind, *idx in vectors:
        if kind == "svd":
            iu, i_s, iv = idx
            u, s, vh = got[iu], got[i_s], got[iv]
            k = s.shape[-1]
            # The reconstruction from aotrt's own factors.
            a = np.matmul(u[..., :, :k] * s[..., None, :], vh[..., :k, :])
            ref = (want[iu][..., :, :k] * want[i_s][..., None, :]) @ want[iv][..., :k, :]
            err = np.abs(a - ref.numpy()).max() / max(float(ref.abs().max()), 1.0)
            assert err <= _decomposition_tolerance(want[iu].dtype), f"U S Vh: {err:.3g}"
            f = _align(u, want[iu].numpy(), -2)  # one sign per column of U
            got[iu] = u * f
            fk = f[..., :, :k]
            got[iv] = vh.copy()
            got[iv][..., :k, :] *= np.swapaxes(fk, -1, -2)
            if vh.shape[-2] > k:  # the rows of a full Vh past k: their own signs
                rest = got[iv][..., k:, :]
                got[iv][..., k:, :] = rest * _align(rest, want[iv].numpy()[..., k:, :], -1)
        else:
            iw, iv = idx
            w, v = got[iw], got[iv]
            if kind == "eigh":
                ref_a = (v * w[..., None, :]) @ np.swapaxes(v, -1, -2)
                a = (want[iv] * want[iw][..., None, :]) @ want[iv].mT
            else:  # A V = V diag(w): compare V diag(w) V^-1 with eager's
                ref_a = (v * w[..., None, :]) @ np.linalg.inv(v)
                a = (want[iv] * want[iw][..., None, :]) @ torch.linalg.inv(want[iv])
            err = np.abs(ref_a - a.numpy()).max() / max(float(a.abs().max()), 1.0)
            assert err <= _decomposition_tolerance(want[iv].dtype), f"V diag(w) V^-1: {err:.3g}"
            got[iv] = v * _align(v, want[iv].numpy(), -2)
    assert_matches(case.name, got, want, _decomposition_tolerance)


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    cases = ([c for c, _, _ in CASES] + [c for c, _, _ in DECOMPOSITIONS] +
             [Case("inv_singular", inv, [torch.ones(2, 3, 3)])])
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
