"""nn.LSTM on the CPU, end to end: torch's decomposition of aten.lstm calls
aten.mkldnn_rnn_layer once per layer and direction (inference, float32 or bfloat16, no
projections), which inductor lowers to aoti_torch_cpu_mkldnn_rnn_layer (torch's c/shim_cpu.h);
aotrt serves it (Note [LSTM layer] in src/ops/rnn.h). Packages come from torch 2.13's own flow
(torch.export + aoti_compile_and_package, aot_inductor.link_libtorch=False); each case checks
that its package imports the shim, then compares every output (y, h_n, c_n) with eager.

Tolerances (absolute; h and y are products of tanh and sigmoid, within [-1, 1], and c stays
within a few units): float32 1e-6: aotrt sums the input and hidden products in another order
than oneDNN's fused kernel and 7-16 steps carry the rounding forward; measured 3e-8 to 1.2e-7.
bfloat16 2**-7, one bfloat16 ulp at magnitudes in [1, 2): eager's oneDNN kernel rounds h to
bfloat16 at each step while aotrt keeps float32 states and rounds once (Note [LSTM layer]);
measured 9.8e-4 on y and h, 2e-3 on c.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))  # also as an export worker
from aotrt_tools.export import package_imports  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op import export_in_worker, outputs, run_aotrt  # noqa: E402

SHIM = "aoti_torch_cpu_mkldnn_rnn_layer"


class WithState(nn.Module):
    """An LSTM given its initial (h_0, c_0), and a linear head on its output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(12, 20, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(40, 3)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return self.head(y), h, c


# name -> (module factory, inputs (generator -> tuple), dtype, tolerance)
CASES = {
    "time_major_f32": (lambda: nn.LSTM(16, 32), lambda g: (torch.randn(10, 3, 16, generator=g),),
                       torch.float32, 1e-6),
    "batch_first_2layer_bidir_f32": (
        lambda: nn.LSTM(8, 24, num_layers=2, batch_first=True, bidirectional=True),
        lambda g: (torch.randn(4, 16, 8, generator=g),), torch.float32, 1e-6),
    "no_bias_f32": (lambda: nn.LSTM(8, 16, bias=False),
                    lambda g: (torch.randn(7, 2, 8, generator=g),), torch.float32, 1e-6),
    "initial_state_f32": (WithState, lambda g: (torch.randn(2, 9, 12, generator=g),
                                                torch.randn(4, 2, 20, generator=g) * 0.5,
                                                torch.randn(4, 2, 20, generator=g) * 0.5),
                          torch.float32, 1e-6),
    "batch_first_bf16": (lambda: nn.LSTM(16, 32, batch_first=True),
                         lambda g: (torch.randn(2, 12, 16, generator=g),), torch.bfloat16,
                         2.0 ** -7),
}


def _build(name: str):
    make, inputs, dtype = CASES[name][:3]
    torch.manual_seed(0)
    module = make().to(dtype).eval()
    xs = tuple(t.to(dtype) for t in inputs(torch.Generator().manual_seed(1)))
    return module, xs


def _export_here(name: str, path: Path) -> None:
    module, xs = _build(name)
    with torch.no_grad():
        ep = torch.export.export(module, xs)
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path), inductor_configs={"aot_inductor.link_libtorch": False})


@pytest.mark.parametrize("name", list(CASES))
def test_lstm_matches_eager(aotrt_bin, tmp_path, name):
    module, xs = _build(name)
    with torch.no_grad():
        out = module(*xs)
        flat = [out[0], *out[1]] if isinstance(out[1], tuple) else list(out)  # nn.LSTM's (y, (h, c))
        want = [t.float().numpy() for t in flat]
    pkg = export_in_worker(__file__, name, tmp_path / f"{name}.pt2", "lstm")
    assert SHIM in package_imports(pkg)
    info = subprocess.run([str(aotrt_bin), "info", str(pkg)], capture_output=True, text=True)
    assert info.returncode == 0 and "problems (0)" in info.stdout, info.stdout + info.stderr
    # Inputs go in as float32 .npy files; aotrt converts them to the package's dtype.
    r = run_aotrt(aotrt_bin, pkg, [x.float() for x in xs], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    got = outputs(tmp_path / "run")
    assert len(got) == len(want)
    tol = CASES[name][3]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (i, g.shape, w.shape)
        diff = float(np.abs(g.astype(np.float32) - w).max()) if w.size else 0.0
        print(f"{name} output {i}: max abs diff {diff:.3g}")
        assert diff <= tol, f"{name} output {i}: max abs diff {diff} > {tol}"


if __name__ == "__main__":  # the export worker: NAME PATH
    _export_here(sys.argv[1], Path(sys.argv[2]))
