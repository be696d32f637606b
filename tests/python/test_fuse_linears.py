"""aotrt_tools.fuse_linears on toy modules (CPU): which siblings are fused, which are left alone,
and that the fused module computes what the original does (Note [Sibling linears fused]).

Modules are exported as llm.py exports them (torch.export, strict) and the pass runs on
`ep.module()`, the unlifted GraphModule that compile_graph hands to aot_compile. The CUDA int4 op
cannot run here: its concatenation rule is tested as a pure function on hand-made packed
tensors, the graph rewrite on an export traced with fake tensors, and the numbers by
test_int4pack_cuda_concat_equals_separate_matmuls where CUDA is present.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from aotrt_tools import fuse_linears as fl

aten = torch.ops.aten
GROUP = 32


def _export(module: nn.Module, *inputs: torch.Tensor):
    with torch.no_grad():
        return torch.export.export(module.eval(), inputs, strict=True)


def _matmuls(gm: torch.fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target in fl.KINDS)


def _fuse_and_compare(module: nn.Module, *inputs: torch.Tensor, rtol: float = 1e-5):
    """(fused module, groups): the pass on ep.module(), its outputs checked against the module's."""
    ep = _export(module, *inputs)
    gm = ep.module()
    with torch.no_grad():
        expected = module(*inputs)
        groups = fl.fuse_linears(gm)
        got = gm(*inputs)
    for e, g in zip(expected, got):
        # Not bit-exact in general: the BLAS blocks a [K, N1 + N2 + N3] product differently from
        # three narrower ones, so the sums may be reassociated.
        scale = e.abs().max().item()
        assert (e - g).abs().max().item() <= rtol * scale, (e - g).abs().max().item()
    return gm, groups


class Floats(nn.Module):
    """(a) q/k/v without bias, and a biased pair beside an unbiased sibling; (b) a linear on
    another input; (c) a pair one of whose weights is also read elsewhere."""

    def __init__(self):
        super().__init__()
        self.attn = nn.Module()
        self.attn.q_proj = nn.Linear(16, 24, bias=False)
        self.attn.k_proj = nn.Linear(16, 8, bias=False)
        self.attn.v_proj = nn.Linear(16, 8, bias=False)
        self.a = nn.Linear(16, 12)
        self.b = nn.Linear(16, 20)
        self.c = nn.Linear(16, 4, bias=False)  # same input as a/b, no bias: not with them
        self.other = nn.Linear(16, 8)  # (b) alone on its input
        self.e1 = nn.Linear(16, 8, bias=False)
        self.e2 = nn.Linear(16, 8, bias=False)  # (c) e1.weight is read again below

    def forward(self, x):
        q, k, v = self.attn.q_proj(x), self.attn.k_proj(x), self.attn.v_proj(x)
        h = x * 2
        y = x - 1
        e = self.e1(y) + self.e2(y) + self.e1.weight.sum()
        return q, k * v.sum(-1, keepdim=True), self.a(h), self.b(h), self.c(h), self.other(x + 1), e


def test_floats_fuse_siblings_and_leave_the_rest():
    module = Floats()
    gm, groups = _fuse_and_compare(module, torch.randn(2, 3, 16))
    assert [(g.name, g.sizes, g.op) for g in groups] == [
        ("attn.fused_q_proj_k_proj_v_proj_weight", [24, 8, 8], "linear"),
        ("fused_a_b_weight", [12, 20], "linear"),
    ]
    assert groups[0].members == ["attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight"]
    assert [t["name"] for t in groups[1].tensors] == ["fused_a_b_weight", "fused_a_b_bias"]
    assert _matmuls(gm) == 9 - 3
    for m in (gm.attn.q_proj, gm.attn.k_proj, gm.attn.v_proj, gm.a, gm.b):
        assert not hasattr(m, "weight"), m
    assert not hasattr(gm.a, "bias") and not hasattr(gm.b, "bias")
    for m in (gm.c, gm.other, gm.e1, gm.e2):
        assert isinstance(m.weight, nn.Parameter)
    # Parameters stay parameters; the state holds each weight once, fused or not.
    assert isinstance(gm.attn.fused_q_proj_k_proj_v_proj_weight, nn.Parameter)
    before = sum(t.numel() for t in module.state_dict().values())
    assert sum(t.numel() for t in gm.state_dict().values()) == before


def test_a_second_trace_names_the_fused_tensors_alike():
    module = Floats()
    x = torch.randn(1, 1, 16)
    first = fl.fuse_linears(_export(module, x).module())
    second = fl.fuse_linears(_export(module, torch.randn(4, 5, 16)).module())
    assert [g.record() for g in first] == [g.record() for g in second]


class Int8Linear(nn.Module):
    """bench/decode.py's int8 weight-only module: per-channel scales, aten._weight_int8pack_mm."""

    def __init__(self, k: int, n: int):
        super().__init__()
        w = torch.randn(n, k)
        scale = w.abs().amax(dim=1) / 127
        self.register_buffer("weight", torch.round(w / scale[:, None]).to(torch.int8))
        self.register_buffer("scales", scale)
        self.n = n

    def forward(self, x):
        y = aten._weight_int8pack_mm(x.reshape(-1, x.shape[-1]), self.weight, self.scales)
        return y.reshape(*x.shape[:-1], self.n)


class Int4CpuLinear(nn.Module):
    """bench/decode.py's int4 module on the CPU: aten._weight_int4pack_mm_for_cpu, groups of 32."""

    def __init__(self, k: int, n: int):
        super().__init__()
        q = torch.randint(0, 16, (n, k), dtype=torch.int32)
        self.register_buffer("weight", aten._convert_weight_to_int4pack_for_cpu(q, 1))
        self.register_buffer("scales_and_zeros", torch.rand(k // GROUP, n, 2) * 0.1)
        self.n = n

    def forward(self, x):
        y = aten._weight_int4pack_mm_for_cpu(x.reshape(-1, x.shape[-1]), self.weight, GROUP, self.scales_and_zeros)
        return y.reshape(*x.shape[:-1], self.n)


class Quantized(nn.Module):
    def __init__(self, cls: type):
        super().__init__()
        # N 128 and 64 fill ATen's CPU int4 packing blocks (64 rows at most); the last may not.
        self.q_proj, self.k_proj, self.v_proj = cls(64, 128), cls(64, 64), cls(64, 48)
        self.down = cls(64, 64)  # another input: left alone
        # On one input, but a first member of N 32: fused with int8, not with int4 (a short block).
        self.gate_proj, self.up_proj = cls(64, 32), cls(64, 32)

    def forward(self, x):
        h = x - 1
        return self.q_proj(x), self.k_proj(x), self.v_proj(x), self.down(torch.relu(x)), self.gate_proj(h), \
            self.up_proj(h)


@pytest.mark.parametrize("cls,op,second", [(Int8Linear, "int8pack_mm", "scales"),
                                           (Int4CpuLinear, "int4pack_mm_for_cpu", "scales_and_zeros")])
def test_weight_only_siblings_fuse(cls, op, second):
    torch.manual_seed(0)
    # The weight-only kernels compute each output column alone: the fused op gives the same bits.
    gm, groups = _fuse_and_compare(Quantized(cls), torch.randn(3, 64), rtol=0)
    expected = [("fused_q_proj_k_proj_v_proj_weight", [128, 64, 48], op)]
    if op == "int8pack_mm":
        expected.append(("fused_gate_proj_up_proj_weight", [32, 32], op))
    assert [(g.name, g.sizes, g.op) for g in groups] == expected
    assert [(t["name"], t["dim"]) for t in groups[0].tensors] == [
        ("fused_q_proj_k_proj_v_proj_weight", 0), (f"fused_q_proj_k_proj_v_proj_{second}", 0 if op == "int8pack_mm" else 1)]
    assert _matmuls(gm) == 6 - 2 - (len(expected) - 1)
    for m in (gm.q_proj, gm.k_proj, gm.v_proj):
        assert not hasattr(m, "weight") and not hasattr(m, second)
    assert isinstance(gm.down.weight, torch.Tensor)
    # Buffers stay buffers; each member had its own reshape of x, and only one is left.
    assert "fused_q_proj_k_proj_v_proj_weight" in dict(gm.named_buffers())
    reshapes = [n for n in gm.graph.nodes if n.target == aten.reshape.default and n.args[0].name == "x"
                and n.args[1] == [-1, 64]]
    assert len(reshapes) == 1, reshapes


def _tiles(member: int, n_tiles: int, k_tiles: int, inner: int) -> torch.Tensor:
    """A hand-made tinygemm-packed weight whose every int32 says (member, n tile, k tile, lane, j)."""
    idx = torch.arange(n_tiles * k_tiles * 32 * (inner // 2), dtype=torch.int32)
    return (idx + member * 1_000_000).reshape(n_tiles, k_tiles, 32, inner // 2)


def test_int4pack_cuda_concat_rule():
    # w [N/8, K/(16*inner), 32, inner/2]: dim 0 is the tile of 8 output rows, and a tile's 32 lanes
    # carry only its own rows, so the fused weight is the members' tiles in turn.
    inner, k_tiles = 8, 2  # K = 2 * 16 * 8 = 256
    ws = [_tiles(0, 3, k_tiles, inner), _tiles(1, 1, k_tiles, inner)]  # N 24 and 8
    szs = [torch.full((256 // GROUP, 24, 2), 1.0), torch.full((256 // GROUP, 8, 2), 2.0)]
    w, sz = fl.concat_int4pack_cuda(ws, szs)
    assert w.shape == (4, k_tiles, 32, inner // 2) and sz.shape == (256 // GROUP, 32, 2)
    assert torch.equal(w[:3], ws[0]) and torch.equal(w[3:], ws[1])
    assert torch.equal(sz[:, :24], szs[0]) and torch.equal(sz[:, 24:], szs[1])
    with pytest.raises(ValueError, match="inner tiles"):  # another innerKTiles: another layout
        fl.concat_int4pack_cuda([ws[0], _tiles(1, 2, 4, 4)], [szs[0], torch.ones(256 // GROUP, 16, 2)])
    with pytest.raises(ValueError, match="do not match"):
        fl.concat_int4pack_cuda(ws, [szs[0], torch.ones(256 // GROUP, 16, 2)])


class Int4CudaLinear(nn.Module):
    def __init__(self, w: torch.Tensor, sz: torch.Tensor):
        super().__init__()
        self.register_buffer("weight", w)
        self.register_buffer("scales_and_zeros", sz)

    def forward(self, x):
        return aten._weight_int4pack_mm(x, self.weight, GROUP, self.scales_and_zeros)


class Int4CudaPair(nn.Module):
    def __init__(self, inner: int = 8):
        super().__init__()
        k_tiles = 256 // (16 * inner)
        self.gate_proj = Int4CudaLinear(_tiles(0, 4, k_tiles, inner), torch.rand(256 // GROUP, 32, 2))
        self.up_proj = Int4CudaLinear(_tiles(1, 2, k_tiles, inner), torch.rand(256 // GROUP, 16, 2))

    def forward(self, x):
        return self.gate_proj(x), self.up_proj(x)


def test_int4pack_cuda_graph_is_rewritten():
    """The CUDA op's graph rewrite, traced with fake tensors on the CPU (its meta kernel)."""
    module = Int4CudaPair()
    x = torch.randn(2, 256, dtype=torch.bfloat16)
    try:
        gm = _export(module, x).module()
    except Exception as e:  # noqa: BLE001 - a torch whose meta kernel refuses these CPU tensors
        pytest.skip(f"cannot trace aten._weight_int4pack_mm on the CPU here: {e}")
    groups = fl.fuse_linears(gm)
    assert [(g.name, g.sizes, g.op) for g in groups] == [("fused_gate_proj_up_proj_weight", [32, 16], "int4pack_mm")]
    assert torch.equal(gm.fused_gate_proj_up_proj_weight, torch.cat([module.gate_proj.weight, module.up_proj.weight]))
    assert torch.equal(gm.fused_gate_proj_up_proj_scales_and_zeros,
                       torch.cat([module.gate_proj.scales_and_zeros, module.up_proj.scales_and_zeros], dim=1))
    assert _matmuls(gm) == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (tinygemm's int4 matmul)")
@pytest.mark.parametrize("inner", [2, 4, 8])
def test_int4pack_cuda_concat_equals_separate_matmuls(inner):
    """On a GPU: the fused packed weight gives each member's own output (a misplaced tile would
    give another row's weights, far outside bfloat16's rounding)."""
    torch.manual_seed(0)
    k, sizes = 512, [64, 24, 8]
    ws, szs = [], []
    for n in sizes:
        q = torch.randint(0, 16, (n, k), dtype=torch.int32, device="cuda")
        nibbles = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)
        ws.append(aten._convert_weight_to_int4pack(nibbles, inner))
        szs.append((torch.rand(k // GROUP, n, 2, device="cuda") * 0.1).to(torch.bfloat16))
    x = torch.randn(3, k, device="cuda", dtype=torch.bfloat16)
    w, sz = fl.concat_int4pack_cuda(ws, szs)
    fused = aten._weight_int4pack_mm(x, w, GROUP, sz)
    separate = torch.cat([aten._weight_int4pack_mm(x, a, GROUP, b) for a, b in zip(ws, szs)], dim=1)
    torch.testing.assert_close(fused, separate)
