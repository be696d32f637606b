"""freezing=True packages on the CPU: inductor's inference path (issue 13, item 4).

Packages come from torch 2.13's own flow (torch.export + aoti_compile_and_package with
aot_inductor.link_libtorch=False and freezing=True). See Note [Frozen CPU packages]
(src/runtime/preflight.cpp):
- with cpp.weight_prepack=False the batch norms are folded into the convolutions and the
  weights constant-folded into plain strided constants; the model calls
  aoti_torch_cpu_convolution / aoti_torch_cpu_addmm_out, no oneDNN fused op. aotrt runs
  these, compared here with eager PyTorch on the unfrozen module;
- with cpp.weight_prepack=True (the default) the weights become oneDNN-blocked (_mkldnn)
  constants for the fused ops of torch's shim_cpu.h, which aotrt refuses at load with a
  message naming the setting (checked here: a clean error, not a crash).

Tolerance: 1e-4 absolute and relative on fp32. Folding a batch norm into a conv changes the
arithmetic (w * gamma / sqrt(var + eps) once, instead of the normalization after the conv),
and oneDNN and OpenBLAS may sum the products in another order than eager's kernels; the
measured max abs diffs are about 1e-6 (reported by the test ids' asserts when exceeded).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

ATOL, RTOL = 1e-4, 1e-4

BASE = {"aot_inductor.link_libtorch": False, "freezing": True}
ONEDNN_FUSED = ("aoti_torch_cpu_mkldnn_", "aoti_torch_cpu__linear_pointwise", "aoti_torch_cpu__mkl_linear")


def _randomize_bn(module: nn.Module) -> nn.Module:
    """Batch norms with non-trivial statistics, so that folding them changes the weights."""
    g = torch.Generator().manual_seed(3)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=g) * 0.1)
    return module


class SmallCNN(nn.Module):
    """Four conv-bn-relu blocks at 224x224 (the CNN of issue 13's CPU figures)."""

    def __init__(self):
        super().__init__()
        ch = [3, 16, 32, 32, 64]
        layers = []
        for i in range(4):
            layers += [nn.Conv2d(ch[i], ch[i + 1], 3, padding=1, stride=2 if i % 2 else 1),
                       nn.BatchNorm2d(ch[i + 1]), nn.ReLU()]
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class ResBlock(nn.Module):
    """resnet18's basic block (torchvision is not installed): conv-bn-relu-conv-bn + x, relu."""

    def __init__(self, c: int = 16):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + x)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(64, 128), nn.Linear(128, 32)

    def forward(self, x):
        return self.l2(nn.functional.gelu(self.l1(x)))


def _models():
    g = torch.Generator().manual_seed(1)
    return {
        "cnn": (SmallCNN, lambda: torch.randn(1, 3, 224, 224, generator=g)),
        "resblock": (ResBlock, lambda: torch.randn(2, 16, 56, 56, generator=g)),
        "mlp": (MLP, lambda: torch.randn(8, 64, generator=g)),
        "encoder": (lambda: nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True),
                    lambda: torch.randn(2, 16, 64, generator=g)),
    }


def _build(name: str) -> tuple[nn.Module, torch.Tensor]:
    make, inp = _models()[name]
    torch.manual_seed(0)
    m = _randomize_bn(make()).eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m, inp()


def _export_here(name: str, prepack: bool, path: Path) -> None:
    module, x = _build(name)
    with torch.no_grad():
        ep = torch.export.export(module, (x,))
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path), inductor_configs={**BASE, "cpp.weight_prepack": prepack})


def _export(name: str, prepack: bool, path: Path) -> Path:
    """Exports in a fresh process: with torch 2.13, a prepack=True export that followed a
    prepack=False one in the same process got no fused ops (plain convolutions)."""
    r = subprocess.run([sys.executable, __file__, name, str(int(prepack)), str(path)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    return path


def _imports(pkg: Path) -> set[str]:
    """The aoti_* symbols the package's model .so imports (nm -D --undefined-only)."""
    d = pkg.parent / (pkg.stem + "_so")
    d.mkdir(exist_ok=True)
    with zipfile.ZipFile(pkg) as z:
        so = next(n for n in z.namelist() if n.endswith(".so"))
        target = d / "model.so"
        target.write_bytes(z.read(so))
    out = subprocess.run(["nm", "-D", "--undefined-only", str(target)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if "aoti_" in line}


def _run(cmd) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("freezing")


@pytest.mark.parametrize("name", ["cnn", "resblock", "mlp", "encoder"])
def test_frozen_plain_weights_match_eager(aotrt_bin, work, name):
    module, x = _build(name)
    with torch.no_grad():
        want = module(x).numpy()
    d = work / name
    d.mkdir()
    pkg = _export(name, False, d / f"{name}.pt2")
    imports = _imports(pkg)
    # The export took the frozen path with plain weights: no fused op, no _mkldnn constant.
    assert not [s for s in imports if s.startswith(ONEDNN_FUSED) or s == "aoti_torch_layout__mkldnn"], imports
    assert imports & {"aoti_torch_cpu_convolution", "aoti_torch_cpu_addmm_out"}, imports
    np.save(d / "x.npy", x.numpy())
    r = _run([aotrt_bin, "run", pkg, "-i", d / "x.npy", "-o", d / "out"])
    assert r.returncode == 0, r.stderr
    got = np.load(d / "out" / "output_0.npy")
    assert got.shape == want.shape
    diff = float(np.max(np.abs(got - want)))
    assert np.allclose(got, want, atol=ATOL, rtol=RTOL), f"{name}: max abs diff {diff}"
    print(f"{name}: max abs diff {diff:.3g}")


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_prepacked_weights_are_refused_naming_the_setting(aotrt_bin, work, name):
    _, x = _build(name)
    d = work / f"{name}_prepacked"
    d.mkdir()
    pkg = _export(name, True, d / f"{name}.pt2")
    imports = _imports(pkg)
    # torch really emitted the fused ops on _mkldnn constants (else this test proves nothing).
    assert "aoti_torch_layout__mkldnn" in imports, imports
    assert [s for s in imports if s.startswith(ONEDNN_FUSED)], imports
    np.save(d / "x.npy", x.numpy())
    # `aotrt info` lists the problem (and exits 0: it reports); `aotrt run` refuses to load.
    for cmd, rc in ((["info", pkg], 0), (["run", pkg, "-i", d / "x.npy", "-o", d / "out"], 1)):
        r = _run([aotrt_bin, *cmd])
        assert r.returncode == rc, (cmd[0], r.returncode, r.stderr)  # an error, not a signal
        text = r.stdout + r.stderr
        assert "oneDNN's blocked (_mkldnn) layout" in text, text
        assert '"cpp.weight_prepack": False' in text, text
    assert not (d / "out" / "output_0.npy").exists()


if __name__ == "__main__":  # the export worker of _export
    _export_here(sys.argv[1], sys.argv[2] == "1", Path(sys.argv[3]))
