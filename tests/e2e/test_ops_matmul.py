"""torch._grouped_mm on the CPU, end to end (Note [Grouped matmul] in src/ops/matmul.h): the
grouped GEMM of mixture-of-experts layers, exported by torch's own flow (inductor lowers it only
for bfloat16, so float32 inputs are cast inside the module and the result back). Tolerance: 1e-2
relative to the largest output, a little over two bfloat16 steps (2^-8): both sides accumulate in
float32 and round each output once, in orders that may differ.
"""

from __future__ import annotations

import pytest
import torch

from one_op import Case, assert_matches, cache_dir, eager_outputs, export_all, outputs, run_aotrt, shims

torch.manual_seed(0)


def experts(x, w, offs):
    """Token rows routed to experts: rows offs[g-1]..offs[g] of x through expert g."""
    return torch._grouped_mm(x.bfloat16(), w.bfloat16(), offs=offs).float()


def experts_transposed(x, w, offs):
    """The experts' weights stored [G, N, K] and read transposed, as nn.Linear keeps them."""
    return torch._grouped_mm(x.bfloat16(), w.bfloat16().transpose(-2, -1), offs=offs).float()


def batched(a, b):
    return torch._grouped_mm(a.bfloat16(), b.bfloat16()).float()


CASES = [
    Case("grouped_mm_experts", experts,
         [torch.randn(24, 32), torch.randn(4, 32, 16), torch.tensor([5, 5, 17, 24], dtype=torch.int32)]),
    Case("grouped_mm_experts_transposed", experts_transposed,
         [torch.randn(12, 16), torch.randn(3, 24, 16), torch.tensor([0, 7, 12], dtype=torch.int32)]),
    Case("grouped_mm_batched", batched, [torch.randn(2, 6, 16), torch.randn(2, 16, 8)]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all(CASES, cache_dir(tmp_path_factory, "ops_matmul"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case):
    pkg = packages[case.name]
    assert "aoti_torch_cpu__grouped_mm" in shims(pkg), shims(pkg)
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case), lambda dtype: 1e-2)
