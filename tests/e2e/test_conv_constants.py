"""CPU convolutions on constant weights (Note [Constant weights] in src/cpu/conv.cpp): a real package
torch 2.13 exports, run by tests/unit/test_conv_constants_real.cpp (ConvConstantsReal.*).

The model convolves with a Parameter (aotrt keeps its weight reordered once) and with a Buffer the
model itself scales in place after each run (never cached: a cached copy would go stale). Exported
with layout_optimization off, so that the convolutions read the constants themselves (with it on,
inductor's generated code copies each weight into a channels-last temporary on every run). Eager's
outputs of three successive runs, with the package's weights and after a swap to set B, are the
references; tolerance 1e-5 absolute + 1e-5 relative (float32).
"""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

safetensors_torch = pytest.importorskip("safetensors.torch")

OPTIONS = {
    "aot_inductor.link_libtorch": False,
    "cpp.vec_isa_ok": True,
    "layout_optimization": False,
}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.register_buffer("w", torch.randn(16, 16, 3, 3))

    def forward(self, x):
        out = self.conv(x), torch.nn.functional.conv2d(x, self.w, padding=1)
        self.w.mul_(1.5)  # after the conv read it: the next run's conv reads the new values
        return out


def _input() -> torch.Tensor:
    return torch.randn(1, 16, 12, 12, generator=torch.Generator().manual_seed(1))


def _state(seed: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(seed)
    return {k: v.detach().clone().contiguous() for k, v in Net().state_dict().items()}


def _eager_runs(net: torch.nn.Module, d: Path, stem: str) -> None:
    with torch.no_grad():
        for r in range(3):
            for k, out in enumerate(net(_input())):
                np.save(d / f"{stem}_run{r}_{k}.npy", out.numpy())


@pytest.fixture(scope="module")
def conv_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("conv_constants")
    torch.manual_seed(0)
    net = Net().eval()
    reference = copy.deepcopy(net)  # before export, whatever export does to the buffer
    with torch.no_grad():
        ep = torch.export.export(net, (_input(),))
        torch._inductor.aoti_compile_and_package(ep, package_path=str(d / "net.pt2"),
                                                 inductor_configs=dict(OPTIONS))
    _eager_runs(reference, d, "expected")
    b = _state(20)
    safetensors_torch.save_file(b, str(d / "b.safetensors"))
    with_b = Net().eval()
    with_b.load_state_dict(b)
    _eager_runs(with_b, d, "expected_b")
    c = _state(30)
    safetensors_torch.save_file(c, str(d / "c.safetensors"))
    with torch.no_grad():
        out_c = torch.nn.functional.conv2d(_input(), c["conv.weight"], c["conv.bias"], padding=1)
    np.save(d / "expected_c_0.npy", out_c.numpy())
    np.save(d / "input_0.npy", _input().numpy())
    return d


def test_wrapper_passes_the_constants_to_the_convolutions(conv_dir):
    """The cases below test what they say only if the generated code hands the convolution the
    constants themselves (not copies)."""
    import zipfile

    with zipfile.ZipFile(conv_dir / "net.pt2") as z:
        src = next(z.read(n).decode() for n in z.namelist() if n.endswith(".wrapper.cpp"))
    calls = [line for line in src.splitlines() if "aoti_torch_cpu_convolution(" in line]
    assert len(calls) == 2, calls
    assert any("conv_weight" in c for c in calls), calls
    assert any(c.split("(", 2)[2].split(",")[1].strip() in ("w", "w_handle") or ", w," in c
               for c in calls), calls


def test_conv_constants_cpp(unit_tests, conv_dir):
    """ConvConstantsReal.*: the Parameter cached once, the mutated Buffer read every run, swaps
    seen, the caller's in-place memory read every run."""
    env = dict(os.environ, AOTRT_CONV_CONSTANTS_DIR=str(conv_dir))
    r = subprocess.run([str(unit_tests), "--gtest_filter=ConvConstantsReal.*"], capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-3000:]
    assert "[  PASSED  ] 3 tests" in r.stdout and "SKIPPED" not in r.stdout, r.stdout[-4000:]
