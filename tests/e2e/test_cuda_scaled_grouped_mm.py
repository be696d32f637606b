"""torch._scaled_grouped_mm on CUDA end to end (the float8 mixture-of-experts GEMM with
rowwise scales): modules whose float32 activations are quantized to float8_e4m3fn in the
graph and multiplied by float8 expert weights (column-major buffers) with offs given at run
time, on the device, exported with aotrt_tools.export.export_package for cuda; the package
calls aoti_torch_cuda__scaled_grouped_mm (inductor's extern choice when no Triton template
is autotuned), which aotrt serves without reading offs on the host (Note [Scaled grouped
matmul] in src/ops/matmul.h). `aotrt run` is compared with eager (ATen's CUTLASS kernel) on
the same GPU. Eager needs compute capability 9.0 (the H200's).

CUDA only: skipped without a CUDA torch (the whole module). Needs an aotrt built with
-DAOTRT_CUDA=ON (AOTRT_BIN).

Tolerance 2**-7 relative to max(1, largest |eager|), one bfloat16 ulp in [1, 2): both sum
the exact float8 products in float32 (in different orders) and scale, then round once.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="CUDA-only: this torch sees no CUDA device")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from aotrt_tools import export  # noqa: E402
from aotrt_tools.export import package_imports  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op import outputs, run_aotrt  # noqa: E402

SHIM = "aoti_torch_cuda__scaled_grouped_mm"
F8 = torch.float8_e4m3fn


class Experts(nn.Module):
    """2d x 3d: tokens [M, K] (sorted by expert, offs the experts' row ends) times each
    expert's weight [K, N]."""

    def __init__(self, experts: int, k: int, n: int):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        w = torch.randn(experts, n, k, generator=g) * 0.5
        self.register_buffer("w", w.to(F8).transpose(-2, -1))  # [E, K, N], column-major
        self.register_buffer("w_scale", torch.rand(experts, n, generator=g) * 0.02 + 0.01)

    def forward(self, x, offs):
        x_scale = x.abs().amax(dim=-1).clamp(min=1e-4) / 448.0
        xq = (x / x_scale[:, None]).to(F8)
        return torch._scaled_grouped_mm(xq, self.w, x_scale, self.w_scale, offs=offs,
                                        out_dtype=torch.bfloat16)


class Batched(nn.Module):
    """3d x 3d: no offs."""

    def __init__(self, groups: int, k: int, n: int):
        super().__init__()
        g = torch.Generator().manual_seed(4)
        w = torch.randn(groups, n, k, generator=g)
        self.register_buffer("w", w.to(F8).transpose(-2, -1))
        self.register_buffer("w_scale", torch.rand(groups, n, generator=g) + 0.5)

    def forward(self, x):
        x_scale = x.abs().amax(dim=-1).clamp(min=1e-4) / 448.0  # [G, M]
        xq = (x / x_scale[..., None]).to(F8)
        return torch._scaled_grouped_mm(xq, self.w, x_scale, self.w_scale,
                                        out_dtype=torch.bfloat16)


def _check(aotrt_bin, tmp_path, module, xs, name):
    pkg = tmp_path / f"{name}.pt2"
    export.export_package(module, xs, pkg, device="cuda")
    assert SHIM in package_imports(pkg)
    with torch.no_grad():
        want = module(*(x.cuda() for x in xs)).float().cpu().numpy()
    r = run_aotrt(aotrt_bin, pkg, xs, tmp_path / "run")
    assert r.returncode == 0, r.stderr
    (got,) = outputs(tmp_path / "run")
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    diff = float(np.abs(got.astype(np.float32) - want).max())
    print(f"{name}: max abs diff {diff:.3g}")
    assert diff <= 2.0 ** -7 * scale, f"max abs diff {diff}"


@pytest.mark.parametrize("ends", [[16, 48, 48, 96], [8, 40, 72, 100]], ids=["empty_expert", "ragged"])
def test_experts_match_eager(aotrt_bin, tmp_path, ends):
    torch.manual_seed(0)
    module = Experts(len(ends), 64, 32).eval()
    x = torch.randn(ends[-1], 64, generator=torch.Generator().manual_seed(5))
    offs = torch.tensor(ends, dtype=torch.int32)
    _check(aotrt_bin, tmp_path, module, [x, offs], "experts_" + "_".join(map(str, ends)))


def test_batched_matches_eager(aotrt_bin, tmp_path):
    module = Batched(3, 32, 48).eval()
    x = torch.randn(3, 20, 32, generator=torch.Generator().manual_seed(6))
    _check(aotrt_bin, tmp_path, module, [x], "batched")
