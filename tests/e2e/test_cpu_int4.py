"""Int4 weight-only quantized linears on the CPU, end to end (issue 13, item 4; Note [Int4
packed weights] in src/ops/int_matmul.h).

Packages come from torch 2.13's own flow (torch.export + aoti_compile_and_package,
aot_inductor.link_libtorch=False, CPU); inductor lowers aten._weight_int4pack_mm_for_cpu to
aoti_torch_cpu__weight_int4pack_mm_cpu_tensor (torch's c/shim_cpu.h), which each package is
checked to import:
- torchao_mlp_bf16: torchao 0.18's PrototypeInt4WeightOnlyConfig (Int4OpaqueTensor, the CPU
  tinygemm layout) on a bfloat16 Linear-GELU-Linear; the packed weights reach aotrt as plain
  uint8 [N, K/2] constants and the scales and zeros as bfloat16 [K/g, N, 2] ones;
- forward_pack_f32: a float32 module holding int4 values as an int32 buffer and packing them
  in forward: aten._convert_weight_to_int4pack_for_cpu has no C shim and stays a
  proxy-executor call, which aotrt serves; with freezing=True (forward_pack_frozen_f32)
  inductor constant-folds the packing and the packed weight is a uint8 constant;
- packed_buffer_f32: a float32 module holding the packed weight itself (a uint8 constant),
  two int4 linears with bias, M = 7 rows (not a multiple of ATen's 4-row blocks), N = 80
  (a full 32/64-column block and a tail).

Tolerances, relative to the largest magnitude of eager's output (1 when that is smaller):
float32 1e-5 (both accumulate the int4 product in float32, aotrt in its gemm's order over k;
ATen's AVX2 kernel dequantizes as q * scale + (zero - 8 * scale) in one fma, aotrt as
(q - 8) * scale + zero; the measured max abs diffs are 1e-7 to 4e-7 of the output's largest
value).
bfloat16 2**-7 (two bfloat16 roundings at the output's scale): eager's tensor subclass rounds
the product, the bias add and the GELU each to bfloat16, inductor's generated code fuses bias
and GELU in float32 after the int4 product; the measured max abs diff is one bfloat16 ulp.
A package packed on this machine is read in this machine's ATen layout, so the cache below
is also keyed by the CPU's ATen capability.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))  # also as an export worker
from aotrt_tools.export import package_imports  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op import export_in_worker, run_against_eager  # noqa: E402

SHIM = "aoti_torch_cpu__weight_int4pack_mm_cpu_tensor"


def _int4_weights(n: int, k: int, group: int, dtype: torch.dtype, g: torch.Generator):
    """q [n, k] int32 in 0..15 and qScaleAndZeros [k/group, n, 2] of dtype."""
    q = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=g)
    scale = torch.rand(k // group, n, generator=g) * 0.05 + 0.01
    zero = torch.randn(k // group, n, generator=g) * 0.05
    return q, torch.stack([scale, zero], dim=-1).to(dtype)


class ForwardPack(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(5)
        q, sz = _int4_weights(48, 128, 64, torch.float32, g)
        self.register_buffer("q", q)
        self.register_buffer("sz", sz)

    def forward(self, x):
        w = torch.ops.aten._convert_weight_to_int4pack_for_cpu(self.q, 1)
        return torch.relu(torch.ops.aten._weight_int4pack_mm_for_cpu(x, w, 64, self.sz))


class PackedBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(6)
        q1, sz1 = _int4_weights(80, 256, 32, torch.float32, g)
        q2, sz2 = _int4_weights(32, 80 * 2, 32, torch.float32, g)
        pack = torch.ops.aten._convert_weight_to_int4pack_for_cpu
        for name, t in (("w1", pack(q1, 1)), ("sz1", sz1), ("w2", pack(q2, 1)), ("sz2", sz2),
                        ("b1", torch.randn(80, generator=g)), ("b2", torch.randn(32, generator=g))):
            self.register_buffer(name, t)

    def forward(self, x):
        h = torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.w1, 32, self.sz1) + self.b1
        h = torch.cat([torch.tanh(h), h], dim=1)
        return torch.ops.aten._weight_int4pack_mm_for_cpu(h, self.w2, 32, self.sz2) + self.b2


def _torchao_mlp() -> nn.Module:
    from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig
    from torchao.quantization import quantize_
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(128, 64), nn.GELU(), nn.Linear(64, 32)).to(torch.bfloat16).eval()
    quantize_(m, PrototypeInt4WeightOnlyConfig(group_size=32))
    return m


# name -> (module factory, input, inductor options beyond link_libtorch, tolerance, whether
# the packing stays a proxy-executor call)
CASES = {
    "torchao_mlp_bf16": (_torchao_mlp, lambda g: torch.randn(4, 128, generator=g).to(torch.bfloat16),
                         {}, 2.0 ** -7, False),
    "forward_pack_f32": (ForwardPack, lambda g: torch.randn(5, 128, generator=g), {}, 1e-5, True),
    "forward_pack_frozen_f32": (ForwardPack, lambda g: torch.randn(5, 128, generator=g),
                                {"freezing": True}, 1e-5, False),
    "packed_buffer_f32": (PackedBuffer, lambda g: torch.randn(7, 256, generator=g), {}, 1e-5,
                          False),
}


def _build(name: str):
    make, inp = CASES[name][:2]
    module = make().eval()
    return module, inp(torch.Generator().manual_seed(2))


def _export_here(name: str, path: Path) -> None:
    module, x = _build(name)
    with torch.no_grad():
        ep = torch.export.export(module, (x,))
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path),
            inductor_configs={"aot_inductor.link_libtorch": False, **CASES[name][2]})


def _export(name: str, path: Path) -> Path:
    return export_in_worker(__file__, name, path, "int4",
                            torch.backends.cpu.get_cpu_capability().encode())



@pytest.mark.parametrize("name", list(CASES))
def test_int4_linear_matches_eager(aotrt_bin, tmp_path, name):
    module, x = _build(name)
    with torch.no_grad():
        want = module(x).float().numpy()
    pkg = _export(name, tmp_path / f"{name}.pt2")
    assert SHIM in package_imports(pkg)
    info = subprocess.run([str(aotrt_bin), "info", str(pkg)], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    assert "problems (0)" in info.stdout, info.stdout
    if CASES[name][4]:
        assert "aten::_convert_weight_to_int4pack_for_cpu  served" in info.stdout, info.stdout
    else:
        assert "uint8 [" in info.stdout, info.stdout  # the packed weight, a plain constant
    run_against_eager(aotrt_bin, pkg, x, want, CASES[name][3], tmp_path, name)


if __name__ == "__main__":  # the export worker: NAME PATH
    _export_here(sys.argv[1], Path(sys.argv[2]))
