"""The embedding family on the CPU, end to end: F.embedding_bag (sum with per-sample
weights, mean with padding_idx, max, include_last_offset) exported by torch, which calls
the _embedding_bag_forward_only C shim, run by `build/aotrt run`, compared with eager
(Note [Embedding bag semantics] in src/ops/embedding.h).

Tolerance: 1e-5 (float32) / 1e-12 (float64) relative to the largest output; aotrt sums a
bag in float (double for float64) as ATen's fast path does, in another order.
"""

from __future__ import annotations

import pytest
import torch

from one_op import Case, assert_matches, cache_dir, eager_outputs, export_all, outputs, run_aotrt, shims

torch.manual_seed(0)

F = torch.nn.functional


def bags(w, idx, off, psw):
    return (F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=psw),
            F.embedding_bag(idx, w, off, mode="mean", padding_idx=3),
            F.embedding_bag(idx, w, off, mode="max"))


def bags_last_offset(w, idx, off):
    return (F.embedding_bag(idx, w, off, mode="sum", include_last_offset=True),
            F.embedding_bag(idx, w, off, mode="max", include_last_offset=True))


def bags_2d(w, idx):
    return F.embedding_bag(idx, w, mode="mean")


CASES = [
    Case("bags_f32", bags, [torch.randn(20, 8), torch.randint(0, 20, (30,)),
                            torch.tensor([0, 5, 5, 17, 29]), torch.randn(30)]),
    Case("bags_f64_strided_weight", bags,
         [torch.randn(8, 20, dtype=torch.float64).t(), torch.randint(0, 20, (12,)),
          torch.tensor([0, 4, 9]), torch.randn(12, dtype=torch.float64)]),
    Case("bags_last_offset", bags_last_offset,
         [torch.randn(16, 5), torch.randint(0, 16, (10,)), torch.tensor([0, 3, 3, 10])]),
    Case("bags_2d_input", bags_2d, [torch.randn(10, 6), torch.randint(0, 10, (4, 3))]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all(CASES, cache_dir(tmp_path_factory, "ops_embedding"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case):
    pkg = packages[case.name]
    imported = shims(pkg)
    assert "aoti_torch_cpu__embedding_bag_forward_only" in imported, imported
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case),
                   lambda dtype: 1e-12 if dtype == torch.float64 else 1e-5)
