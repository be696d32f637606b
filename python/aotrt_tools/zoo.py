"""A registry of small reference models for aotrt's end-to-end tests.

Each entry is a factory returning `(module, example_inputs, tolerance)` where `tolerance` is
`dict(atol=..., rtol=..., reason=...)`, compared with numpy `allclose` semantics
(`|actual - expected| <= atol + rtol * |expected|`).

The models are chosen for what they make AOTInductor emit, not for what they compute:
- the "seed" modules (from ExecuTorch's Metal-backend tests) produce non-packed views at a
  storage offset (chunk/narrow along a non-outermost dim) that are written through, read by
  library ops (`aoti_torch_cpu_addmm_out`, `..._convolution`) or returned as model outputs;
- the rest cover the fallback ops a CPU model calls: mm/addmm/bmm/convolution (1d, 2d,
  transposed, grouped, dilated), and the ops of a ResNet block and a transformer layer.

All models are small so that a CPU export takes seconds. Factories are deterministic:
`get()` seeds torch before calling one, so the weights and inputs do not depend on which
other models were built first.

Tolerances: fp32 models default to atol = rtol = 1e-5. A model that needs more has its bound
written beside it with the measurement behind it. The yardstick is eager fp32 against eager
fp64 of the same weights and inputs (`fp64_noise()` below, reproduced by
`python -m aotrt_tools.zoo --noise`): a correct fp32 implementation that sums in another
order (a different GEMM/conv library, Inductor's fused kernels) lands within a small
multiple of that distance from eager fp32.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_ATOL = 1e-5
DEFAULT_RTOL = 1e-5
DEFAULT_REASON = "fp32 default"


@dataclasses.dataclass(frozen=True)
class ZooEntry:
    name: str
    build: Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]
    atol: float
    rtol: float
    reason: str
    description: str


_REGISTRY: dict[str, ZooEntry] = {}


def register(
    name: str,
    *,
    atol: float = DEFAULT_ATOL,
    rtol: float = DEFAULT_RTOL,
    reason: str = DEFAULT_REASON,
):
    """Decorator: adds `build() -> (module, inputs)` to the zoo under `name`."""

    def wrap(build):
        doc = (build.__doc__ or "").strip()
        _REGISTRY[name] = ZooEntry(name, build, atol, rtol, reason, doc.splitlines()[0] if doc else "")
        return build

    return wrap


def names() -> list[str]:
    return list(_REGISTRY)


def entry(name: str) -> ZooEntry:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown zoo model {name!r}; known: {', '.join(_REGISTRY)}") from None


def get(name: str, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...], dict]:
    """Builds zoo model `name` in eval mode: `(module, example_inputs, tolerance dict)`."""
    e = entry(name)
    torch.manual_seed(seed)
    module, inputs = e.build()
    module.eval()
    return module, tuple(inputs), dict(atol=e.atol, rtol=e.rtol, reason=e.reason)


# --------------------------------------------------------------------------------------
# Seed modules: non-packed views (ExecuTorch Metal backend tests)
# --------------------------------------------------------------------------------------


class PointwiseC2f(nn.Module):
    """YOLO's C2f block with every conv reduced to 1x1 (Conv = conv + SiLU, BN folded away).

    In channels-last layout a chunk along C is a non-packed view at an offset; the cat is
    filled by kernels writing through views of its result.
    """

    def __init__(self, c1: int = 64, c2: int = 64, n: int = 2):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = nn.Conv2d(c1, 2 * self.c, 1)
        self.m = nn.ModuleList(nn.Conv2d(self.c, self.c, 1) for _ in range(n))
        self.cv2 = nn.Conv2d((2 + n) * self.c, c2, 1)

    def forward(self, x):
        y = list(F.silu(self.cv1(x)).chunk(2, dim=1))
        for m in self.m:
            y.append(F.silu(m(y[-1])))
        return F.silu(self.cv2(torch.cat(y, dim=1)))


@register("pointwise_c2f")
def _pointwise_c2f():
    """C2f block, 1x1 convs, 64ch 40x40 b1, model and input channels-last."""
    model = PointwiseC2f().to(memory_format=torch.channels_last)
    x = torch.randn(1, 64, 40, 40).contiguous(memory_format=torch.channels_last)
    return model, (x,)


class LinearChunk(nn.Module):
    """Linear(7, 16) -> chunk(2, dim) -> second chunk through Linear(in, 5)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.l1 = nn.Linear(7, 16)
        self.l2 = nn.Linear(16 if dim == 0 else 8, 5)

    def forward(self, x):
        _, b = self.l1(x).chunk(2, dim=self.dim)
        return self.l2(b)


@register("linear_chunk_first_dim")
def _linear_chunk_first_dim():
    """Linear -> chunk(2, dim=0) -> second chunk (packed, at an offset) into a Linear."""
    return LinearChunk(dim=0), (torch.randn(12, 7),)


@register("linear_chunk_last_dim")
def _linear_chunk_last_dim():
    """Linear -> chunk(2, dim=-1) -> second chunk (non-packed, offset 8) into a Linear."""
    return LinearChunk(dim=-1), (torch.randn(12, 7),)


class LinearChunkCat(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(7, 16)
        self.la = nn.Linear(8, 5)
        self.lb = nn.Linear(8, 5)

    def forward(self, x):
        a, b = self.l1(x).chunk(2, dim=-1)
        return torch.cat([self.la(a), self.lb(b)], dim=-1)


@register("linear_chunk_cat_last_dim")
def _linear_chunk_cat_last_dim():
    """Linear -> chunk(2, -1) -> each chunk through a Linear -> cat(-1)."""
    return LinearChunkCat(), (torch.randn(12, 7),)


class LinearNestedChunk(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(7, 16)
        self.l2 = nn.Linear(8, 5)

    def forward(self, x):
        # [12,16] -> [12,8] stride 16 offset 8 -> [6,8] stride 16 offset 6*16+8.
        inner = self.l1(x).chunk(2, dim=-1)[1].chunk(2, dim=0)[1]
        return self.l2(inner)


@register("linear_nested_chunk")
def _linear_nested_chunk():
    """Chunk of a chunk: a view of a view, both offsets adding up, into a Linear."""
    return LinearNestedChunk(), (torch.randn(12, 7),)


class LinearChunkOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(7, 16)

    def forward(self, x):
        return self.l1(x).chunk(2, dim=-1)[1]


@register("linear_chunk_last_dim_output")
def _linear_chunk_last_dim_output():
    """Returns linear(x).chunk(2, -1)[1]: the model output is a non-packed view at an offset."""
    return LinearChunkOutput(), (torch.randn(12, 7),)


class LinearChunkTwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(7, 16)

    def forward(self, x):
        a, b = self.l1(x).chunk(2, dim=-1)
        return a, b


@register("linear_chunk_two_outputs")
def _linear_chunk_two_outputs():
    """Returns both chunks of one Linear: two outputs that are views of the same buffer."""
    return LinearChunkTwoOutputs(), (torch.randn(12, 7),)


class NarrowLastDim(nn.Module):
    def forward(self, x):
        a = x.narrow(-1, 0, 8)
        b = x.narrow(-1, 8, 8)
        return a * 2 + b


@register("narrow_last_dim")
def _narrow_last_dim():
    """x (2,4,16): narrow(-1, 0, 8) * 2 + narrow(-1, 8, 8); pure pointwise over input views."""
    return NarrowLastDim(), (torch.randn(2, 4, 16),)


# --------------------------------------------------------------------------------------
# Fallback-op coverage
# --------------------------------------------------------------------------------------


class MatMul(nn.Module):
    def forward(self, a, b):
        return a @ b


@register("mm")
def _mm():
    """(3,4) @ (4,5) with both operands as model inputs: aoti_torch_cpu_mm_out."""
    return MatMul(), (torch.randn(3, 4), torch.randn(4, 5))


@register("linear_bias")
def _linear_bias():
    """Linear(7, 101) on (127, 7): addmm with odd sizes."""
    return nn.Linear(7, 101), (torch.randn(127, 7),)


@register("conv1d_bias")
def _conv1d_bias():
    """Conv1d(8, 16, 3) with bias on (1, 8, 50)."""
    return nn.Conv1d(8, 16, 3), (torch.randn(1, 8, 50),)


class BmmPermuted(nn.Module):
    """bmm whose first operand is the permuted input: sizes [2,64,400], strides [1,800,2].

    This is the shape of the call yolo11n makes in its attention block, which ExecuTorch's
    Metal bmm rejected. x is (64, 400, 2) contiguous, so x.permute(2, 0, 1) has strides
    (1, 400*2, 2) = (1, 800, 2): no dim of the matrix has stride 1.
    """

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(2, 400, 16) / 20.0)

    def forward(self, x):
        return torch.bmm(x.permute(2, 0, 1), self.w)


@register("bmm_permuted")
def _bmm_permuted():
    """bmm(x.permute(2,0,1) [2,64,400] strides [1,800,2], w [2,400,16])."""
    return BmmPermuted(), (torch.randn(64, 400, 2),)


def _randomize_bn(bn: nn.BatchNorm2d) -> None:
    # Fresh BN stats are the identity (mean 0, var 1, weight 1, bias 0), which would hide a
    # runtime that ignores them.
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock, written out (torchvision is not available here)."""

    def __init__(self, inplanes: int, planes: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = nn.Sequential(
            nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
        )
        for bn in (self.bn1, self.bn2, self.downsample[1]):
            _randomize_bn(bn)

    def forward(self, x):
        identity = self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


@register("resnet_basic_block")
def _resnet_basic_block():
    """ResNet BasicBlock 32->64, stride 2, 1x1 conv + BN downsample, on (1,32,32,32)."""
    return BasicBlock(32, 64, stride=2), (torch.randn(1, 32, 32, 32),)


@register("transformer_encoder_layer")
def _transformer_encoder_layer():
    """nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first) on (2,16,64)."""
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    return layer, (torch.randn(2, 16, 64),)


@register("conv_transposed")
def _conv_transposed():
    """ConvTranspose2d(8, 12, 3, stride 2, padding 1, output_padding 1, groups 2) on (1,8,10,10)."""
    conv = nn.ConvTranspose2d(8, 12, 3, stride=2, padding=1, output_padding=1, groups=2)
    return conv, (torch.randn(1, 8, 10, 10),)


@register("conv_grouped_dilated")
def _conv_grouped_dilated():
    """Conv2d(8, 16, 3, groups 4, stride 2, padding 2, dilation 2) on (1,8,20,20)."""
    conv = nn.Conv2d(8, 16, 3, stride=2, padding=2, dilation=2, groups=4)
    return conv, (torch.randn(1, 8, 20, 20),)


# --------------------------------------------------------------------------------------
# Tolerance yardstick
# --------------------------------------------------------------------------------------


def eager_outputs(module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    """Runs `module` under no_grad and flattens its output(s) into a list of tensors."""
    with torch.no_grad():
        out = module(*inputs)
    flat, _ = torch.utils._pytree.tree_flatten(out)
    return [t for t in flat if isinstance(t, torch.Tensor)]


def fp64_noise(name: str) -> list[dict]:
    """Eager fp32 vs eager fp64 of the same model: per output, the max abs diff, the max
    relative diff (where |fp64| > 1e-3) and max |fp64|. This is the scale of rounding noise a
    correct fp32 runtime can show against eager fp32."""
    module, inputs, _ = get(name)
    out32 = eager_outputs(module, inputs)
    module64 = module.double()
    inputs64 = tuple(t.double() if t.is_floating_point() else t for t in inputs)
    out64 = eager_outputs(module64, inputs64)
    rows = []
    for a, b in zip(out32, out64):
        diff = (a.double() - b).abs()
        big = b.abs() > 1e-3
        rel = (diff[big] / b.abs()[big]).max().item() if big.any() else 0.0
        rows.append(dict(max_abs=diff.max().item(), max_rel=rel, max_ref=b.abs().max().item()))
    return rows


def _main() -> None:
    parser = argparse.ArgumentParser(description="List the zoo, or measure fp32-vs-fp64 eager noise.")
    parser.add_argument("--noise", action="store_true", help="print eager fp32 vs fp64 distance per model")
    args = parser.parse_args()
    for name in names():
        e = entry(name)
        line = f"{name:30s} atol={e.atol:g} rtol={e.rtol:g}  {e.description}"
        if args.noise:
            for i, r in enumerate(fp64_noise(name)):
                line += f"\n    out{i}: max|fp32-fp64|={r['max_abs']:.3g} max_rel={r['max_rel']:.3g} max|ref|={r['max_ref']:.3g}"
        print(line)


if __name__ == "__main__":
    _main()
