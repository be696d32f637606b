"""fp8 matmuls (torch._scaled_mm) and dynamically quantized int4 matmuls
(_dyn_quant_pack_4bit_weight / _dyn_quant_matmul_4bit) on the CPU, end to end (Notes
[Scaled matmul] in src/ops/matmul.h, [Dynamic int4 matmul] in src/ops/int_matmul.h).

Packages come from torch 2.13's own flow (torch.export + aoti_compile_and_package,
aot_inductor.link_libtorch=False, CPU). Inductor keeps aten._scaled_mm as a fallback and emits
aoti_torch_cpu__scaled_mm_out (into a buffer it allocates), with the float8 quantization of
the activation fused into its own C++ kernel before it; _dyn_quant_* are fallbacks too
(torch/_inductor/quantized_lowerings.py). torchao 0.18's float8 configs refuse the CPU
("requires CUDA compute capability >= 8.9"), so the modules call the ops themselves:
- fp8_linear_bias_bf16: activation times a power of two, clamped and cast to e4m3fn in
  forward, a float8 weight buffer used transposed (column-major, as torchao lays it), tensorwise
  scales, a bfloat16 bias, bfloat16 out;
- fp8_rowwise_mlp_f32: two rowwise-scaled float8 linears (e4m3fn activations, e5m2 and e4m3fn
  weights), the second fed by the first's output through relu and another cast;
- fp8_out_scale_result: a float8_e4m3fn out with scale_result (which ATen's CPU divides by),
  read back as float32. torch 2.13's inductor drops scale_result from the call it generates
  (`aoti_torch_cpu__scaled_mm_out(..., bias nullptr, scale_result nullptr, ...)`, and the
  constant is not in the package): the test reads the generated wrapper and, when the argument
  is gone, compares with eager without it - the code torch really generated - and says so;
- fp8_random_f32: random activations and weights, float32 out;
- dyn_int4_groupwise_packed_in_forward: _dyn_quant_pack_4bit_weight on the weight buffers in
  forward (a run-time call), then _dyn_quant_matmul_4bit with a bias;
- dyn_int4_channelwise_bf16: a prepacked float32 weight vector (ATen's x86 layout) and a
  bfloat16 activation, one scale per output channel.

Tolerances, relative to the largest magnitude of eager's output (1 when that is smaller): 0
for the integer-valued fp8 cases (small integers and power-of-two scales: every product and
sum is exact in float32 in any order, so only the final rounding is left, which both make the
same way) and for the int4 ones (aotrt runs ATen's reference kernel bit for bit); 1e-5 for
fp8_random_f32 (float32 sums in another order than eager's gemm).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))  # also as an export worker
from aotrt_tools.export import package_imports  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_op import export_in_worker, run_against_eager  # noqa: E402

E4, E5 = torch.float8_e4m3fn, torch.float8_e5m2


def _ints(g: torch.Generator, *sizes: int, lo: int = -3, hi: int = 3) -> torch.Tensor:
    return torch.randint(lo, hi + 1, sizes, generator=g).float()


def _quantize(x: torch.Tensor, scale: float) -> torch.Tensor:
    # A power-of-two scale: the product is exact, whatever order inductor computes it in.
    return (x * scale).clamp(-448.0, 448.0).to(E4)


class Fp8LinearBias(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.register_buffer("w", _ints(g, 48, 64).to(E4))  # [N, K], used as w.t()
        self.register_buffer("sa", torch.tensor(0.25))
        self.register_buffer("sw", torch.tensor(0.5))
        self.register_buffer("b", (_ints(g, 48) / 4).to(torch.bfloat16))

    def forward(self, x):
        return torch._scaled_mm(_quantize(x, 4.0), self.w.t(), self.sa, self.sw, bias=self.b,
                                out_dtype=torch.bfloat16)


class Fp8RowwiseMlp(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(2)
        self.register_buffer("w1", _ints(g, 32, 64).to(E5))
        self.register_buffer("w2", _ints(g, 16, 32).to(E4))
        pow2 = lambda *s: 2.0 ** torch.randint(-2, 2, s, generator=g).float()
        self.register_buffer("sa1", pow2(8, 1))
        self.register_buffer("sw1", pow2(1, 32))
        self.register_buffer("sa2", pow2(8, 1))
        self.register_buffer("sw2", pow2(1, 16))

    def forward(self, x):
        h = torch._scaled_mm(_quantize(x, 1.0), self.w1.t(), self.sa1, self.sw1,
                             out_dtype=torch.float32)
        h = torch.relu(h).clamp(max=64.0).floor()  # integers again: exact in e4m3fn up to 16
        return torch._scaled_mm(_quantize(h / 4, 1.0), self.w2.t(), self.sa2, self.sw2,
                                out_dtype=torch.float32)


class Fp8OutScaleResult(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.register_buffer("w", _ints(g, 32, 64).to(E4))
        self.register_buffer("one", torch.tensor(1.0))
        self.register_buffer("sr", torch.tensor(4.0))
        self.drop_scale_result = False  # the reference for a package whose call lost it

    def forward(self, x):
        y = torch._scaled_mm(_quantize(x, 1.0), self.w.t(), self.one, self.one,
                             scale_result=None if self.drop_scale_result else self.sr,
                             out_dtype=E4)
        return y.float()


class Fp8Random(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(4)
        self.register_buffer("w", torch.randn(40, 96, generator=g).to(E4))
        self.register_buffer("sa", torch.tensor(1.0 / 64))
        self.register_buffer("sw", torch.tensor(0.37))

    def forward(self, x):
        return torch._scaled_mm(_quantize(x, 64.0), self.w.t(), self.sa, self.sw,
                                out_dtype=torch.float32)


class DynInt4PackedInForward(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(5)
        self.register_buffer("w", torch.randint(0, 256, (48, 64), dtype=torch.uint8, generator=g))
        self.register_buffer("sz", torch.rand(48, 128 // 32, generator=g) * 0.05 + 0.01)
        self.register_buffer("b", torch.randn(48, generator=g))

    def forward(self, x):
        p = torch.ops.aten._dyn_quant_pack_4bit_weight(self.w, self.sz, self.b, 32, 128, 48)
        return torch.relu(torch.ops.aten._dyn_quant_matmul_4bit(x, p, 32, 128, 48))


class DynInt4ChannelwiseBf16(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(6)
        w = torch.randint(0, 256, (24, 48), dtype=torch.uint8, generator=g)
        sz = torch.rand(24, 1, generator=g) * 0.05 + 0.01
        b = torch.randn(24, generator=g)
        self.register_buffer("p", torch.ops.aten._dyn_quant_pack_4bit_weight(w, sz, b, 96, 96, 24))

    def forward(self, x):
        return torch.ops.aten._dyn_quant_matmul_4bit(x, self.p, 96, 96, 24)


SCALED = {"aoti_torch_cpu__scaled_mm_out", "aoti_torch_cpu__scaled_mm"}
DYN = {"aoti_torch_cpu__dyn_quant_matmul_4bit"}

# name -> (module, input, tolerance, shims of which the package must import at least one,
# shims it must import)
CASES = {
    "fp8_linear_bias_bf16": (Fp8LinearBias, lambda g: _ints(g, 8, 64, lo=-8, hi=8) / 4, 0.0,
                             SCALED, set()),
    "fp8_rowwise_mlp_f32": (Fp8RowwiseMlp, lambda g: _ints(g, 8, 64), 0.0, SCALED, set()),
    "fp8_out_scale_result": (Fp8OutScaleResult, lambda g: _ints(g, 8, 64, lo=-2, hi=2), 0.0, SCALED,
                             set()),
    "fp8_random_f32": (Fp8Random, lambda g: torch.randn(16, 96, generator=g), 1e-5, SCALED, set()),
    "dyn_int4_groupwise_packed_in_forward": (DynInt4PackedInForward,
                                             lambda g: torch.randn(5, 128, generator=g), 0.0, DYN,
                                             {"aoti_torch_cpu__dyn_quant_pack_4bit_weight"}),
    "dyn_int4_channelwise_bf16": (DynInt4ChannelwiseBf16,
                                  lambda g: torch.randn(3, 96, generator=g).to(torch.bfloat16), 0.0,
                                  DYN, set()),
}


def _build(name: str):
    make, inp = CASES[name][:2]
    return make().eval(), inp(torch.Generator().manual_seed(7))


def _export_here(name: str, path: Path) -> None:
    module, x = _build(name)
    with torch.no_grad():
        ep = torch.export.export(module, (x,))
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path),
            inductor_configs={"aot_inductor.link_libtorch": False, "cpp.vec_isa_ok": True})


def _export(name: str, path: Path) -> Path:
    return export_in_worker(__file__, name, path, "quant_matmul")


def _scaled_mm_calls(pkg: Path) -> list[list[str]]:
    """The argument lists of the aoti_torch_cpu__scaled_mm_out calls in the package's wrapper."""
    with zipfile.ZipFile(pkg) as z:
        src = "".join(z.read(n).decode() for n in z.namelist() if n.endswith("wrapper.cpp"))
    calls = []
    for chunk in src.split("aoti_torch_cpu__scaled_mm_out(")[1:]:
        depth, args, cur = 0, [], ""
        for ch in chunk:
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            if ch == "," and depth == 0:
                args.append(cur.strip())
                cur = ""
            else:
                cur += ch
        calls.append(args + [cur.strip()])
    return calls



@pytest.mark.parametrize("name", list(CASES))
def test_quantized_matmul_matches_eager(aotrt_bin, tmp_path, name):
    module, x = _build(name)
    pkg = _export(name, tmp_path / f"{name}.pt2")
    if name == "fp8_out_scale_result":
        calls = _scaled_mm_calls(pkg)
        assert len(calls) == 1 and len(calls[0]) == 9, calls
        if calls[0][6] == "nullptr":  # (out, self, mat2, scale_a, scale_b, bias, scale_result, ...)
            print("torch's generated call dropped scale_result: eager without it is the reference")
            module.drop_scale_result = True
    with torch.no_grad():
        want = module(x).float().numpy()
    imported = package_imports(pkg)
    any_of, all_of = CASES[name][3], CASES[name][4]
    assert imported & any_of, sorted(imported)
    assert all_of <= imported, sorted(imported)
    info = subprocess.run([str(aotrt_bin), "info", str(pkg)], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    assert "problems (0)" in info.stdout, info.stdout
    run_against_eager(aotrt_bin, pkg, x, want, CASES[name][2], tmp_path, name)


if __name__ == "__main__":  # the export worker: NAME PATH
    _export_here(sys.argv[1], Path(sys.argv[2]))
