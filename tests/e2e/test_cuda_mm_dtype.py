"""torch.mm(a, b, out_dtype=torch.float32) on float16/bfloat16 operands on CUDA, end to end:
inductor's mm lowering takes ATen's mm.dtype_out for it (an extern choice), which the package
calls as aoti_torch_cuda_mm_dtype_out; aotrt serves it on cuBLASLt with float32 C/D (Note
[Matmul with an output dtype] in src/ops/matmul.h). Each case exports with
aotrt_tools.export.export_package on cuda, checks the package calls the shim, and compares
`aotrt run` with eager on the same GPU.

CUDA only: skipped without a CUDA torch (the whole module). Needs an aotrt built with
-DAOTRT_CUDA=ON (AOTRT_BIN).

Tolerance 1e-5 relative to max(1, largest |eager|): both are cuBLAS GEMMs accumulating in
float32 that may split K differently.
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

SHIM = "aoti_torch_cuda_mm_dtype_out"


class WideningMm(nn.Module):
    """x @ w (a weight) and x @ x^T, both into float32."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) * 0.1)

    def forward(self, x):
        return (torch.mm(x, self.w, out_dtype=torch.float32),
                torch.mm(x, x.t(), out_dtype=torch.float32))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(8, 64, 32), (33, 200, 72)], ids=lambda s: "x".join(map(str, s)))
def test_mm_out_dtype_matches_eager(aotrt_bin, tmp_path, dtype, shape):
    m, k, n = shape
    torch.manual_seed(0)
    module = WideningMm(k, n).eval()
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(1))
    pkg = tmp_path / "mm_dtype.pt2"
    export.export_package(module, [x], pkg, device="cuda", dtype=dtype)
    assert SHIM in package_imports(pkg)
    with torch.no_grad():
        want = [t.cpu().numpy() for t in module(x.to("cuda", dtype))]
    assert all(w.dtype == np.float32 for w in want)
    r = run_aotrt(aotrt_bin, pkg, [x.to(dtype).float()], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    got = outputs(tmp_path / "run")
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == np.float32, (i, g.shape, g.dtype)
        diff = float(np.abs(g - w).max())
        print(f"{dtype} {shape} output {i}: max abs diff {diff:.3g}")
        assert diff <= 1e-5 * max(1.0, float(np.abs(w).max())), f"output {i}: {diff}"
