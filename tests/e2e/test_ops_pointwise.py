"""The pointwise family on the CPU, end to end: complex abs, angle, add, mul, pow and
torch.polar, and integer torch.gcd, exported by torch (inductor's C++ backend falls back to
these ATen ops for complex dtypes), run by `build/aotrt run`, compared with eager (Note
[Pointwise semantics] in src/ops/pointwise.h). Each case asserts the shims its package
really imports.

Tolerance: 1e-5 (complex64/float32) / 1e-12 (complex128/float64) relative to the largest
output: libm's complex exp/log against ATen's.
"""

from __future__ import annotations

import pytest
import torch

from one_op import Case, assert_matches, cache_dir, eager_outputs, export_all, outputs, run_aotrt, shims

torch.manual_seed(0)


def complex_ops(z, w, a, b):
    return (torch.abs(z), torch.angle(z), z + w, torch.add(z, w, alpha=2.0), z * w, z * 0.5,
            z + 1.5, z ** 2, z ** w, torch.polar(a, b))


def gcd(i, j):
    return torch.gcd(i, j)


def _case(name, cdtype, rdtype):
    z = torch.randn(3, 4, dtype=cdtype)
    return Case(name, complex_ops, [z.t(), torch.randn(4, 3, dtype=cdtype),
                                    torch.rand(5, dtype=rdtype), torch.randn(5, dtype=rdtype)])


# torch 2.13 turns angle, z * 0.5 and z + 1.5 into other code (mul_Tensor / add_Tensor
# with a 0-d operand, or its own kernels); the rest stay fallbacks.
_COMPLEX_SHIMS = ["aoti_torch_cpu_abs", "aoti_torch_cpu_add_Tensor", "aoti_torch_cpu_mul_Tensor",
                  "aoti_torch_cpu_polar", "aoti_torch_cpu_pow_Tensor_Scalar",
                  "aoti_torch_cpu_pow_Tensor_Tensor"]
CASES = [
    (_case("complex64", torch.complex64, torch.float32), _COMPLEX_SHIMS),
    (_case("complex128", torch.complex128, torch.float64), _COMPLEX_SHIMS),
    (Case("gcd", gcd, [torch.randint(-50, 50, (6, 1)), torch.randint(-50, 50, (5,))]),
     ["aoti_torch_cpu_gcd"]),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all([c for c, _ in CASES], cache_dir(tmp_path_factory, "ops_pointwise"))


@pytest.mark.parametrize("case,names", CASES, ids=[c.name for c, _ in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case, names):
    pkg = packages[case.name]
    imported = shims(pkg)
    ours = {s for s in imported if s.startswith("aoti_torch_cpu_") and any(
        s.endswith(op) for op in ("_abs", "_angle", "_add_Tensor", "_add_Scalar", "_mul_Tensor",
                                  "_mul_Scalar", "_pow_Tensor_Tensor", "_pow_Tensor_Scalar",
                                  "_pow_Scalar", "_polar", "_gcd"))}
    assert ours, imported
    for n in names:
        assert n in imported, imported
    print(case.name, "imports", sorted(ours))
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case),
                   lambda dtype: 1e-12 if dtype in (torch.float64, torch.complex128) else 1e-5)
