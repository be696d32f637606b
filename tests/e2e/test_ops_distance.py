"""The distance family on the CPU, end to end: torch.cdist and F.pdist exported by torch
(the _cdist_forward and _pdist_forward C shims), run by `build/aotrt run`, compared with
eager (Note [Distance semantics] in src/ops/distance.h). Where ATen would take its matmul
path (p = 2 with more than 25 rows, or compute_mode="use_mm_for_euclid_dist"), inductor
decomposes cdist into bmm and pointwise code itself, so packages reach _cdist_forward only
for the direct path; the large case forces it with "donot_use_mm_for_euclid_dist".

Tolerance: 1e-5 (float32) / 1e-12 (float64) relative to the largest output; aotrt
accumulates in double where ATen accumulates in the input's type.
"""

from __future__ import annotations

import pytest
import torch

from one_op import Case, assert_matches, cache_dir, eager_outputs, export_all, outputs, run_aotrt, shims

torch.manual_seed(0)


def cdist2(a, b):
    return torch.cdist(a, b)


def cdist_p(a, b):
    return (torch.cdist(a, b, p=1.0), torch.cdist(a, b, p=0.0), torch.cdist(a, b, p=3.0),
            torch.cdist(a, b, p=float("inf")))


def cdist_no_mm(a, b):
    return torch.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist")


def pdist(a):
    return torch.nn.functional.pdist(a), torch.nn.functional.pdist(a, p=1.5)


_A = torch.randn(2, 30, 6)
CASES = [
    Case("cdist_small", cdist2, [torch.randn(3, 5, 4), torch.randn(3, 7, 4)]),
    Case("cdist_large_no_mm", cdist_no_mm,
         [_A, torch.cat([_A[:, :3], torch.randn(2, 9, 6)], 1)]),
    Case("cdist_bcast_p", cdist_p, [torch.randn(2, 1, 5, 3).round(), torch.randn(4, 6, 3).round()]),
    Case("cdist_f64", cdist2, [torch.randn(4, 5, dtype=torch.float64),
                               torch.randn(6, 5, dtype=torch.float64)]),
    Case("pdist", pdist, [torch.randn(9, 5)]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all(CASES, cache_dir(tmp_path_factory, "ops_distance"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case):
    pkg = packages[case.name]
    imported = shims(pkg)
    assert any(s in imported for s in ("aoti_torch_cpu__cdist_forward",
                                       "aoti_torch_cpu__pdist_forward")), imported
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case),
                   lambda dtype: 1e-12 if dtype == torch.float64 else 1e-5)
