"""segment_reduce on the CPU, end to end: torch.segment_reduce (lengths and offsets forms,
every reduction, an initial value, a 2-d axis) exported by torch, run by `build/aotrt run`,
compared with eager (Note [Segment reduce semantics] in src/ops/segment.h).

Tolerance: 1e-5 (float32) / 1e-12 (float64) relative to the largest output: aotrt
accumulates in double, ATen in the data's type.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from one_op import Case, assert_matches, cache_dir, eager_outputs, export_all, outputs, run_aotrt, shims

torch.manual_seed(0)


def segments(data, lengths, offsets, data2, lengths2):
    S = torch.segment_reduce
    return (S(data, "sum", lengths=lengths), S(data, "mean", lengths=lengths),
            S(data, "max", offsets=offsets), S(data, "min", lengths=lengths, initial=0.5),
            S(data, "prod", offsets=offsets, initial=2.0),
            S(data2, "sum", lengths=lengths2, axis=1))


CASES = [
    Case("segments_f32", segments,
         [torch.randn(10, 3), torch.tensor([3, 0, 5, 2]), torch.tensor([0, 3, 3, 8, 10]),
          torch.randn(4, 6).t(), torch.tensor([[2, 2], [0, 4], [4, 0], [1, 3], [3, 1], [2, 2]])]),
    Case("segments_f64", segments,
         [torch.randn(7, dtype=torch.float64), torch.tensor([1, 6]), torch.tensor([0, 0, 7]),
          torch.randn(2, 5, dtype=torch.float64), torch.tensor([[5], [5]])]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all(CASES, cache_dir(tmp_path_factory, "ops_segment"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case):
    pkg = packages[case.name]
    imported = shims(pkg)
    assert "aoti_torch_cpu_segment_reduce" in imported, imported
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    got, want = outputs(tmp_path), eager_outputs(case)
    # Empty segments give NaN (mean) and -inf/inf (max/min): the same non-finite values at
    # the same places, then the finite ones within tolerance.
    for i, (g, w) in enumerate(zip(got, want)):
        wn = w.numpy()
        assert g.shape == wn.shape, f"output {i}: shape {g.shape} vs {wn.shape}"
        np.testing.assert_array_equal(np.isnan(g), np.isnan(wn), err_msg=f"output {i}: NaN places")
        np.testing.assert_array_equal(np.where(np.isinf(g), g, 0), np.where(np.isinf(wn), wn, 0),
                                      err_msg=f"output {i}: infinities")
    finite = lambda a: np.where(np.isfinite(a), a, 0)
    assert_matches(case.name, [finite(g) for g in got],
                   [torch.from_numpy(finite(w.numpy())) for w in want],
                   lambda dtype: 1e-12 if dtype == torch.float64 else 1e-5)
