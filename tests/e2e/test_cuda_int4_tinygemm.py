"""CUDA's int4 weight matmul end to end, against torch's own packing and kernel: a module
whose weight is packed by real torch on the GPU (torch.ops.aten._convert_weight_to_int4pack,
the tinygemm layout) and kept as a buffer, its forward aten._weight_int4pack_mm, exported
with aotrt_tools.export.export_package for cuda; the package calls
aoti_torch_cuda__weight_int4pack_mm, which aotrt serves by reading that layout (Note [Int4
tinygemm layout] in src/ops/int_matmul.h). `aotrt run` is compared with eager (torch's
tinygemm kernel) on the same GPU. Also checks, with no aotrt involved, that
gen_ops_reference.py's tinygemm_pack (the unit rows' packer, written from the layout facts)
gives torch's packed tensor bit for bit.

CUDA only: skipped without a CUDA torch (the whole module). Needs an aotrt built with
-DAOTRT_CUDA=ON (AOTRT_BIN).

Tolerance: 2**-7 relative to max(1, largest |eager|), one bfloat16 ulp in [1, 2): both
dequantize the weight to the same bfloat16 values (one fma rounding), then tinygemm sums
on tensor cores in its order and aotrt in k order, in float32, before the one rounding to
bfloat16.
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

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "tests" / "unit" / "ops"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from aotrt_tools import export  # noqa: E402
from aotrt_tools.export import package_imports  # noqa: E402
from gen_ops_reference import tinygemm_pack  # noqa: E402
from one_op import outputs, run_aotrt  # noqa: E402

SHIM = "aoti_torch_cuda__weight_int4pack_mm"


def _uint8_weight(q: torch.Tensor) -> torch.Tensor:
    """q [N, K] (0..15) as _convert_weight_to_int4pack takes it: byte j of row n holds
    q[n, 2j] in its high nibble, q[n, 2j+1] in its low one."""
    return ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)


class Int4Linear(nn.Module):
    def __init__(self, q: torch.Tensor, scale_zeros: torch.Tensor, group: int, inner: int):
        super().__init__()
        self.group = group
        packed = torch.ops.aten._convert_weight_to_int4pack(_uint8_weight(q).cuda(), inner)
        self.register_buffer("packed", packed)
        self.register_buffer("scale_zeros", scale_zeros.cuda())

    def forward(self, x):
        return torch.ops.aten._weight_int4pack_mm(x, self.packed, self.group, self.scale_zeros)


# (M, N, K, qGroupSize, innerKTiles)
CASES = [(1, 64, 256, 128, 8), (7, 48, 512, 32, 2), (33, 256, 1024, 64, 4), (16, 32, 256, 256, 8)]


def _data(M, N, K, group, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 16, (N, K), generator=g)
    scale = torch.rand(K // group, N, generator=g) * 0.05 + 0.005
    zero = (torch.rand(K // group, N, generator=g) - 0.5) * 0.1
    sz = torch.stack([scale, zero], dim=-1).to(torch.bfloat16)
    x = torch.randn(M, K, generator=g).to(torch.bfloat16)
    return q, sz, x


@pytest.mark.parametrize("inner", [2, 4, 8])
def test_reference_packer_matches_torch(inner):
    q = torch.randint(0, 16, (24, inner * 16 * 3), generator=torch.Generator().manual_seed(inner))
    want = torch.ops.aten._convert_weight_to_int4pack(_uint8_weight(q).cuda(), inner).cpu()
    got = tinygemm_pack(q, inner)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert torch.equal(got, want), "tinygemm_pack differs from torch's CUDA packer"


@pytest.mark.parametrize("case", CASES, ids=lambda c: "m{}_n{}_k{}_g{}_inner{}".format(*c))
def test_int4_matmul_matches_eager(aotrt_bin, tmp_path, case):
    M, N, K, group, inner = case
    q, sz, x = _data(M, N, K, group, seed=M + N)
    module = Int4Linear(q, sz, group, inner).eval()
    pkg = tmp_path / "int4.pt2"
    export.export_package(module, [x], pkg, device="cuda")
    assert SHIM in package_imports(pkg)
    with torch.no_grad():
        want = module(x.cuda()).float().cpu().numpy()
    # aotrt converts the float32 .npy input to the package's bfloat16 (exact: x is bfloat16).
    r = run_aotrt(aotrt_bin, pkg, [x.float()], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    (got,) = outputs(tmp_path / "run")
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    diff = float(np.abs(got.astype(np.float32) - want).max())
    print(f"{case}: max abs diff {diff:.3g}")
    assert diff <= 2.0 ** -7 * scale, f"max abs diff {diff}"
