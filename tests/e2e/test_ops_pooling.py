"""The pooling family on the CPU, end to end: packages exported by torch's own flow
(link_libtorch=False), run by `build/aotrt run`, compared with eager.

Inductor (torch 2.13) lowers max_pool*_with_indices (any window: the low-memory
offsets path), fractional_max_pool* and max_unpool* (decomposed to a scatter) to its
own kernels, so no package calls their shims; it falls back to the C shims for
avg_pool2d and the adaptive 2-d pools when a window holds more than 25 taps (the
adaptive ones only when the bins do not divide), and always for avg_pool3d, the
adaptive 3-d pools and grid_sampler_3d. Each package asserts the shims it imports, so
a torch that changes the lowering fails here instead of testing nothing. The ops
inductor does not emit are covered by tests/unit/ops/test_ops_pooling.cpp.
interpolate(..., mode="bilinear", antialias=True) has no C shim: its package calls
aten::_upsample_bilinear2d_aa through aotrt's proxy executor (test_upsample_aa).

Several ops share a module (each export costs 10-20 s of CPU): one float32 module on
contiguous, channels-last and strided inputs, one float64 module on unbatched inputs.
Tolerances: float32 1e-5, float64 1e-12, relative to the largest magnitude of eager's
output (sums in another order than ATen's vectorised kernels). NaN inputs are the unit
rows' (assert_matches compares finite outputs).
"""

from __future__ import annotations

import pytest
import torch

from one_op import (Case, assert_matches, cache_dir, eager_outputs, export_all, extern_targets,
                    outputs, run_aotrt, shims)

F = torch.nn.functional
torch.manual_seed(0)


def pools_f32(x4, x4_cl, x5, x5_cl, grid):
    return (
        F.avg_pool2d(x4, 7, 2, 3),                                   # 49 taps: fallback
        F.avg_pool2d(x4_cl, (6, 5), 3, (2, 1), ceil_mode=True, count_include_pad=False),
        F.avg_pool2d(x4, 6, 2, 1, divisor_override=7),
        F.adaptive_avg_pool2d(x4, (3, 2)),                           # bins of 5x8: fallback
        F.adaptive_avg_pool2d(x4_cl, (2, 3)),
        *F.adaptive_max_pool2d(x4, (3, 2), return_indices=True),
        *F.adaptive_max_pool2d(x4_cl, (2, 3), return_indices=True),
        F.avg_pool3d(x5, 3, 2, 1),
        F.avg_pool3d(x5_cl, (2, 3, 2), (1, 2, 2), (1, 1, 0), ceil_mode=True,
                     count_include_pad=False),
        F.adaptive_avg_pool3d(x5, (2, 3, 4)),
        *F.adaptive_max_pool3d(x5_cl, (3, 2, 4), return_indices=True),
        F.grid_sample(x5, grid, mode="bilinear", padding_mode="zeros", align_corners=False),
        F.grid_sample(x5_cl, grid, mode="nearest", padding_mode="border", align_corners=True),
        F.grid_sample(x5, grid, mode="bilinear", padding_mode="reflection", align_corners=True),
    )


def pools_f64(x3, x4, grid):
    return (
        F.avg_pool2d(x3, 6, 2, 3, ceil_mode=True),
        F.adaptive_avg_pool2d(x3, (3, 5)),
        *F.adaptive_max_pool2d(x3, (4, 3), return_indices=True),
        F.avg_pool3d(x4, 3, 2, 1, divisor_override=5),
        F.adaptive_avg_pool3d(x4, (3, 2, 3)),
        *F.adaptive_max_pool3d(x4, (2, 3, 2), return_indices=True),
        F.grid_sample(x4.unsqueeze(0), grid, mode="bilinear", padding_mode="border",
                      align_corners=False),
    )


def _inputs_f32():
    x4 = torch.randn(2, 3, 16, 17)
    x5 = torch.randn(2, 3, 6, 7, 9)
    grid = torch.rand(2, 4, 5, 3, 3) * 2.4 - 1.2
    return [x4, torch.randn(2, 3, 15, 16).to(memory_format=torch.channels_last), x5,
            torch.randn(2, 3, 6, 7, 9).to(memory_format=torch.channels_last_3d), grid]


def _inputs_f64():
    x3 = torch.randn(3, 18, 13, dtype=torch.float64)[:, :, 1:]   # offset, gapped rows
    x4 = torch.randn(2, 7, 8, 9, dtype=torch.float64).transpose(1, 3)
    grid = torch.rand(1, 3, 4, 2, 3, dtype=torch.float64) * 2.4 - 1.2
    return [x3, x4, grid]


def upsample_aa(x, x_cl, x64):
    return (
        F.interpolate(x, size=(5, 7), mode="bilinear", antialias=True),
        F.interpolate(x, scale_factor=(2.5, 0.4), mode="bilinear", antialias=True),
        F.interpolate(x_cl, size=(4, 20), mode="bilinear", antialias=True, align_corners=True),
        F.interpolate(x64, size=(3, 3), mode="bilinear", antialias=True),
    )


AA = Case("upsample_aa", upsample_aa,
          [torch.randn(2, 3, 16, 17), torch.randn(1, 4, 9, 8).to(memory_format=torch.channels_last),
           torch.randn(1, 2, 11, 10, dtype=torch.float64)[:, :, 1:]])

SHIMS_F32 = ["aoti_torch_cpu_avg_pool2d", "aoti_torch_cpu__adaptive_avg_pool2d",
             "aoti_torch_cpu_adaptive_max_pool2d", "aoti_torch_cpu_avg_pool3d",
             "aoti_torch_cpu__adaptive_avg_pool3d", "aoti_torch_cpu_adaptive_max_pool3d",
             "aoti_torch_cpu_grid_sampler_3d"]
CASES = [
    (Case("pools_f32", pools_f32, _inputs_f32()), SHIMS_F32),
    (Case("pools_f64", pools_f64, _inputs_f64()), SHIMS_F32),
]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    return export_all([c for c, _ in CASES] + [AA], cache_dir(tmp_path_factory, "ops_pooling"))


def _tolerance(dtype):
    return 1e-12 if dtype == torch.float64 else 1e-5


@pytest.mark.parametrize("case,names", CASES, ids=[c.name for c, _ in CASES])
def test_matches_eager(aotrt_bin, packages, tmp_path, case, names):
    pkg = packages[case.name]
    used = shims(pkg)
    for n in names:
        assert n in used, f"{case.name}: expected the package to use {n}, it uses {used}"
    proc = run_aotrt(aotrt_bin, pkg, case.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(case.name, outputs(tmp_path), eager_outputs(case), _tolerance)


def test_upsample_aa(aotrt_bin, packages, tmp_path):
    pkg = packages[AA.name]
    used = extern_targets(pkg)
    assert used.count("aten::_upsample_bilinear2d_aa") == 4, used
    proc = run_aotrt(aotrt_bin, pkg, AA.inputs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_matches(AA.name, outputs(tmp_path), eager_outputs(AA), _tolerance)
