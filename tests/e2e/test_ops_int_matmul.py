"""The integer matmul family on the CPU, end to end (Note [Integer matmul semantics] in
src/ops/int_matmul.h): torch._int_mm (exact) and aten._weight_int8pack_mm (float32: 1e-5
relative to the largest output). A bfloat16 case cannot be made here: numpy has no bfloat16
for the inputs, and casting inside the module does not compile in torch 2.13 itself
(inductor's lowering of _weight_int8pack_mm asserts on a computed input).
"""

from __future__ import annotations

import pytest
import torch

from one_op import Case, assert_matches, cache_dir, eager_outputs, export_all, outputs, run_aotrt, shims

torch.manual_seed(0)


def int_mm(a, b):
    return torch._int_mm(a, b)


def int8pack(a, w, s):
    return torch.ops.aten._weight_int8pack_mm(a, w, s)


def _i8(*shape):
    return torch.randint(-128, 128, shape, dtype=torch.int8)


CASES = [
    (Case("int_mm", int_mm, [_i8(17, 64), _i8(64, 24)]), "aoti_torch_cpu__int_mm_out"),
    (Case("int8pack_f32", int8pack, [torch.randn(5, 32), _i8(12, 32), torch.rand(12)]),
     "aoti_torch_cpu__weight_int8pack_mm"),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all([c for c, _ in CASES], cache_dir(tmp_path_factory, "ops_int_matmul"))


@pytest.mark.parametrize("case,shim", CASES, ids=[c.name for c, _ in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case, shim):
    pkg = packages[case.name]
    assert shim in shims(pkg), shims(pkg)
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case), lambda dtype: 1e-5)
