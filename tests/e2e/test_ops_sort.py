"""The sort family's ops with no C shim on the CPU, end to end: one-op packages exported by
torch, run by `build/aotrt run`, compared with eager.

torch.unique, torch.unique(dim=), torch.unique_consecutive (dim None and a dim),
torch.nanmedian(dim=) and torch.median(dim=) reach aotrt through its proxy executor as
aten::_unique2, aten::unique_dim, aten::unique_consecutive, aten::nanmedian.dim and
aten::median.dim (Note [Unique], Note [Sort semantics]). Each case asserts the package
really calls those extern nodes, so a torch that lowers them otherwise fails here instead
of testing nothing. Outputs are exact (values, indices, counts); median indices of tied
values are not in these inputs (ATen leaves them unspecified).
"""

from __future__ import annotations

import math

import pytest
import torch

from one_op import (Case, assert_matches, cache_dir, eager_outputs, export_all, extern_targets,
                    outputs, run_aotrt)

nan = math.nan


def uniques(x, rows):
    v, inv, cnt = torch.unique(x, sorted=True, return_inverse=True, return_counts=True)
    rv, rinv, rcnt = torch.unique(rows, dim=0, return_inverse=True, return_counts=True)
    return v, inv, cnt, torch.unique(x), rv, rinv, rcnt


def consecutive(x, cols):
    v, inv, cnt = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
    cv, cinv, ccnt = torch.unique_consecutive(cols, return_inverse=True, return_counts=True, dim=1)
    return v, inv, cnt, cv, cinv, ccnt


def medians(x):
    nv, ni = torch.nanmedian(x, dim=1)
    kv, ki = torch.nanmedian(x, dim=0, keepdim=True)
    mv, mi = torch.median(x, dim=1)
    return nv, ni, kv, ki, mv, mi


_X = torch.tensor([[3., 1, nan, 2], [1, 3, -0.0, 0.0], [nan, 5, 1, 7]])
_ROWS = torch.tensor([[2, 1, 0], [1, 1, 0], [2, 1, 0], [0, 1, 2], [1, 1, 0]])
_COLS = torch.tensor([[1., 1, 2, 2, 1], [4, 4, 5, 5, 4]]).t().contiguous().t()  # column-major
_M = torch.tensor([[nan, 1, 4, 3, 2], [1, nan, nan, 0, nan], [5, 6, 9, 7, 8], [nan] * 5]).t()
# (case, extern targets it must call)
CASES = [
    (Case("unique", uniques, [torch.randint(-4, 5, (6, 7)).float(), _ROWS]),
     ["aten::_unique2", "aten::unique_dim"]),
    (Case("unique_nan_strided", uniques, [_X.t(), _ROWS.t().contiguous().t()]),
     ["aten::_unique2", "aten::unique_dim"]),
    (Case("unique_int64", uniques, [torch.randint(0, 9, (40,)), _ROWS]),
     ["aten::_unique2", "aten::unique_dim"]),
    (Case("unique_consecutive", consecutive, [torch.tensor([3., 3, 1, nan, nan, 1, 1, 2]), _COLS]),
     ["aten::unique_consecutive"]),
    (Case("nanmedian_median_dim", medians, [_M]), ["aten::nanmedian.dim", "aten::median.dim"]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all([c for c, _ in CASES], cache_dir(tmp_path_factory, "ops_sort"))


@pytest.mark.parametrize("case,names", CASES, ids=[c.name for c, _ in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case, names):
    pkg = packages[case.name]
    used = extern_targets(pkg)
    for n in names:
        assert n in used, f"{case.name}: expected the package to call {n}, it calls {used}"
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case), lambda dtype: 0.0)
