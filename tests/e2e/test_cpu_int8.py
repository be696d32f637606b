"""Int8 models quantized with PT2E's X86InductorQuantizer on the CPU, end to end (issue 13,
item 4; Note [Quantized oneDNN ops] in src/ops/quantized.h).

Each model is quantized the way torchao documents for x86 (torch.export, prepare_pt2e with
X86InductorQuantizer's default static config, one calibration batch, convert_pt2e), exported
by torch 2.13's own flow with freezing=True (aoti_compile_and_package,
aot_inductor.link_libtorch=False), and must import the int8 oneDNN ops of torch's
c/shim_cpu.h the case names: _qconv_pointwise_tensor, _qconv2d_pointwise_binary_tensor (the
residual "sum" into the other buffer), _qlinear_pointwise_tensor and
_qlinear_pointwise_binary_tensor. The cases cover relu, gelu, hardswish and hardtanh, "sum" into
a float other (3x3 and 1x1 convolutions) and "add" of one (linear), uint8 outputs with zero and
nonzero zero points, a bias-less convolution with computed scales, and int8-mixed-bf16 (exported
under autocast: bfloat16 outputs and others). aotrt runs them all with oneDNN's int8
primitives (Note [Int8 primitives] in src/cpu/quantized.cpp). Its outputs are compared with two
references:
- libtorch running the same package (aotrt_tools.reference: oneDNN 3.x's int8 kernels, what
  torch itself deploys): the same quantized graph and the same exact int32 sums; where a
  requantized y / output_scale falls within float32 rounding of a half step, one uint8
  activation lands one step away and the step moves the next layer's output by about
  x_scale * |w|: max abs diff at most 2% of the output's largest magnitude, mean abs diff at
  most 1e-4 of it. Measured on this machine: chain_cnn 8.7e-4 max (libtorch's one step away
  from both aotrt and eager), the others 6e-8 or less, bfloat16 cases equal.
- eager PyTorch on the converted model (quantize/dequantize reference ops in float32): the
  same bound (measured 3.6e-7 max); under autocast (the bf16 cases) eager rounds to bfloat16
  where the compiled graph does not and back, so the mean bound is one bfloat16 rounding,
  2^-8 of the largest magnitude (measured 2e-3 and 1.4e-3 of ~1).
On a CPU without VNNI (AVX2 alone, e.g. an AMD EPYC before Zen 4) oneDNN's int8 kernels
saturate pairs of u8 * s8 products to int16 (Note [oneDNN's ISA] in src/cpu/onednn.cpp):
libtorch's output is then wrong (measured: gelu_mlp 0.074 max abs diff of 0.25, where aotrt
and eager agree within 6e-8), so it is no reference there and eager alone judges; aotrt runs
every quantized op on its float32 path (QuantizedReal checks that).
"""

from __future__ import annotations

import os
import shutil
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
from one_op import export_in_worker  # noqa: E402


QCONV = "aoti_torch_cpu__qconv_pointwise_tensor"
QCONV_SUM = "aoti_torch_cpu__qconv2d_pointwise_binary_tensor"
QLINEAR = "aoti_torch_cpu__qlinear_pointwise_tensor"
QLINEAR_BINARY = "aoti_torch_cpu__qlinear_pointwise_binary_tensor"


class ResidualCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.c3 = nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=4, bias=False)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y) + y)
        y = nn.functional.hardswish(self.c3(y))
        return self.fc(y.mean((2, 3)))


class ResidualMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(32, 64)
        self.l2 = nn.Linear(64, 64)
        self.l3 = nn.Linear(64, 10, bias=False)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        h = torch.relu(self.l2(h) + h)
        return self.l3(h)


class GeluMlp(nn.Module):
    """A gelu fused into a linear whose output is uint8 with a nonzero zero point."""

    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(32, 64)
        self.l2 = nn.Linear(64, 64)
        self.l3 = nn.Linear(64, 16)

    def forward(self, x):
        h = nn.functional.gelu(self.l1(x))
        h = nn.functional.silu(self.l2(h))
        return self.l3(h)


class ChainCnn(nn.Module):
    """Two residual sums (a 3x3 and a 1x1 convolution), a hardtanh, a bias-less last conv."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.c3 = nn.Conv2d(16, 16, 1)
        self.c4 = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        z = torch.relu(self.c2(y) + y)
        w = self.c3(z) + z
        return self.c4(nn.functional.hardtanh(w, 0.0, 6.0))


# name -> (module, input shape, shims its package must import, bfloat16: exported under
# autocast, so the ops' float outputs and the add's other are bfloat16 (int8-mixed-bf16))
CASES = {
    "residual_cnn": (ResidualCnn, (2, 3, 16, 16), (QCONV, QCONV_SUM, QLINEAR), False),
    "residual_mlp": (ResidualMlp, (8, 32), (QLINEAR, QLINEAR_BINARY), False),
    "gelu_mlp": (GeluMlp, (8, 32), (QLINEAR,), False),
    "chain_cnn": (ChainCnn, (2, 3, 16, 16), (QCONV, QCONV_SUM), False),
    "chain_cnn_bf16": (ChainCnn, (2, 3, 16, 16), (QCONV, QCONV_SUM), True),
    "residual_mlp_bf16": (ResidualMlp, (8, 32), (QLINEAR, QLINEAR_BINARY), True),
}


def _autocast(name: str):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=CASES[name][3])


def _quantized(name: str):
    import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    torch.manual_seed(0)
    module = CASES[name][0]().eval()
    x = torch.randn(*CASES[name][1], generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        graph = torch.export.export(module, (x,)).module()
        quantizer = xiq.X86InductorQuantizer()
        quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())
        prepared = prepare_pt2e(graph, quantizer)
        prepared(x)  # calibration
        converted = convert_pt2e(prepared)
    return converted, x


def _export_here(name: str, path: Path) -> None:
    converted, x = _quantized(name)
    with torch.no_grad(), _autocast(name):
        ep = torch.export.export(converted, (x,))
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path),
            inductor_configs={"aot_inductor.link_libtorch": False, "freezing": True})


def _close(name: str, what: str, got: np.ndarray, want: np.ndarray, mean_rel: float = 1e-4) -> None:
    scale = max(float(np.abs(want).max()), 1e-6)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    print(f"{name} vs {what}: max abs diff {diff.max():.3g}, mean {diff.mean():.3g}, "
          f"largest |{what}| {scale:.3g}")
    assert diff.max() <= 0.02 * scale, f"{name} vs {what}: max abs diff {diff.max()}"
    assert diff.mean() <= mean_rel * scale, f"{name} vs {what}: mean abs diff {diff.mean()}"


def _host_vnni() -> bool:
    """Whether the CPU multiplies int8 exactly in oneDNN (AVX-512 VNNI, AVX-VNNI or AMX)."""
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return False
    return any(f in flags for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


_HOST_VNNI = _host_vnni()


@pytest.mark.parametrize("name", list(CASES))
def test_int8_model_matches_torch(aotrt_bin, unit_tests, tmp_path, name):
    converted, x = _quantized(name)
    with torch.no_grad(), _autocast(name):
        eager = converted(x).float().numpy()
    pkg = export_in_worker(__file__, name, tmp_path / f"{name}.pt2", "int8",
                           torch.backends.cpu.get_cpu_capability().encode())
    imports = package_imports(pkg)
    for shim in CASES[name][2]:
        assert shim in imports, f"{name}: the package does not import {shim}: {imports}"
    info = subprocess.run([str(aotrt_bin), "info", str(pkg)], capture_output=True, text=True)
    assert info.returncode == 0 and "problems (0)" in info.stdout, info.stdout + info.stderr
    np.save(tmp_path / "x.npy", x.numpy())
    r = subprocess.run([str(aotrt_bin), "run", str(pkg), "--input", str(tmp_path / "x.npy"),
                        "--output-dir", str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out" / "output_0.npy").astype(np.float32)
    assert got.shape == eager.shape
    if _HOST_VNNI:
        _close(name, "libtorch", got, _libtorch_output(pkg, tmp_path / "x.npy", tmp_path / "libtorch"))
    else:
        print(f"{name}: no VNNI on this CPU, libtorch's int8 kernels saturate: eager alone judges")
    # Eager under autocast rounds to bfloat16 where the compiled graph does not and back:
    # one bfloat16 rounding (2^-8 relative) of the mean.
    _close(name, "eager", got, eager, 2.0**-8 if CASES[name][3] else 1e-4)
    _runs_in_int8(unit_tests, pkg, x, tmp_path / "int8")


def _libtorch_output(pkg: Path, x_npy: Path, out: Path) -> np.ndarray:
    """The package run by libtorch's own AOTI loader, in a process of its own: the loader needs
    libtorch_cpu.so in the global symbol scope (aotrt_tools.reference), and a process with it
    there breaks Debian's oneDNN for whatever loads libaotrt.so later in it (dnnl_sgemm returned
    status 3, unimplemented, in test_diff_ops after this test had run in the same pytest)."""
    r = subprocess.run([sys.executable, "-m", "aotrt_tools.reference", "run", str(pkg), "--input",
                        str(x_npy), "--output-dir", str(out)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "python")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return np.load(out / "output_0.npy").astype(np.float32)


def _runs_in_int8(unit_tests, pkg: Path, x: torch.Tensor, d: Path) -> None:
    """QuantizedReal.*: every quantized op ran on oneDNN's int8 primitives (on the float32 path
    without VNNI), the constant weights
    reordered once; a second run makes no primitive and reorders nothing."""
    d.mkdir()
    shutil.copyfile(pkg, d / "model.pt2")
    np.save(d / "input_0.npy", x.numpy())
    env = dict(os.environ, AOTRT_INT8_MODEL_DIR=str(d))
    r = subprocess.run([str(unit_tests), "--gtest_filter=QuantizedReal.*"], capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-3000:]
    assert "[  PASSED  ] 1 test" in r.stdout and "SKIPPED" not in r.stdout, r.stdout[-4000:]


if __name__ == "__main__":  # the export worker: NAME PATH
    _export_here(sys.argv[1], Path(sys.argv[2]))
