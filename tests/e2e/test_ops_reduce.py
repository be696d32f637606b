"""The reduce family on the CPU, end to end: torch.hash_tensor has no C shim, so its
package calls aten::hash_tensor through aotrt's proxy executor (asserted), run by
`build/aotrt run` and compared with eager bit for bit (uint64 outputs; Note [Hash tensor
semantics] in src/ops/reduce.h).
"""

from __future__ import annotations

import torch

from one_op import (Case, assert_matches, cache_dir, eager_outputs, export_all, extern_targets,
                    outputs, run_aotrt)

torch.manual_seed(0)


def hashes(x, i, h):
    return (torch.hash_tensor(x), torch.hash_tensor(x, dim=1), torch.hash_tensor(x.t(), dim=0, keepdim=True),
            torch.hash_tensor(i, dim=(0, 2)), torch.hash_tensor(h))


CASE = Case("hashes", hashes, [torch.randn(5, 7), torch.randint(-1000, 1000, (3, 4, 5), dtype=torch.int32),
                               torch.randn(6, dtype=torch.float64)])


def test_hash_tensor_matches_eager(aotrt_bin, tmp_path_factory, tmp_path):
    pkg = export_all([CASE], cache_dir(tmp_path_factory, "ops_reduce"))[CASE.name]
    assert extern_targets(pkg).count("aten::hash_tensor") == 5, extern_targets(pkg)
    proc = run_aotrt(aotrt_bin, pkg, CASE.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(CASE.name, outputs(tmp_path), eager_outputs(CASE), lambda dtype: 0.0)
