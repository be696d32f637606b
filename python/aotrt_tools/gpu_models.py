"""Hand-written models for the GPU zoo (registered in `aotrt_tools.zoo`).

- `YOLOv8n`: the ultralytics yolov8n detector (depth 0.33, width 0.25) written out: Conv =
  conv + BN + SiLU, C2f, SPPF, and the anchor-free Detect head with its DFL decode.
- `C2PSA`: yolo11's attention stage: 1x1 convs produce q, k, v, which are views of one
  buffer; the attention matmuls run on their transposes.
- `GPT2`: a GPT-2-small-style decoder (pre-LN blocks, causal SDPA, tied LM head).

The layer arithmetic follows the public ultralytics and GPT-2 definitions (shapes, channel
counts, the order of operations); the code is our own. Nothing here needs torchvision.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --------------------------------------------------------------------------------------
# YOLO building blocks
# --------------------------------------------------------------------------------------


class Conv(nn.Module):
    """conv (no bias) + BatchNorm + SiLU (or no activation), 'same' padding."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, g: int = 1, act: bool = True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU() if act else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c1: int, c2: int, shortcut: bool = True):
        super().__init__()
        self.cv1 = Conv(c1, c2, 3)
        self.cv2 = Conv(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """Split the 1x1 conv's output in two along C, run n bottlenecks on the second half,
    concatenate everything: chunk views at a channel offset feed the next conv."""

    def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1: int, c2: int, k: int = 5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1)
        self.cv2 = Conv(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))


class DFL(nn.Module):
    """Distribution focal loss decode: softmax over 16 bins, expectation by a fixed 1x1 conv."""

    def __init__(self, c1: int = 16):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float).view(1, c1, 1, 1)
        self.c1 = c1

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


class Detect(nn.Module):
    """Anchor-free head: per level a box branch (4 x 16 DFL bins) and a class branch, then
    the decode to (cx, cy, w, h) in pixels and class probabilities: (B, 4 + nc, anchors)."""

    def __init__(self, nc: int, ch: tuple[int, ...], strides: tuple[int, ...]):
        super().__init__()
        self.nc, self.reg_max = nc, 16
        self.no = nc + 4 * self.reg_max
        self.strides = strides
        c2 = max(16, ch[0] // 4, self.reg_max * 4)
        c3 = max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(
            nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * self.reg_max, 1)) for x in ch)
        self.cv3 = nn.ModuleList(
            nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1)) for x in ch)
        self.dfl = DFL(self.reg_max)

    def _anchors(self, feats: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        points, strides = [], []
        for f, s in zip(feats, self.strides):
            h, w = f.shape[2:]
            sx = torch.arange(w, device=f.device, dtype=f.dtype) + 0.5
            sy = torch.arange(h, device=f.device, dtype=f.dtype) + 0.5
            yy, xx = torch.meshgrid(sy, sx, indexing="ij")
            points.append(torch.stack((xx, yy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), float(s), dtype=f.dtype, device=f.device))
        return torch.cat(points).transpose(0, 1), torch.cat(strides).transpose(0, 1)

    def forward(self, xs: list[torch.Tensor]):
        feats = [torch.cat((b(x), c(x)), 1) for x, b, c in zip(xs, self.cv2, self.cv3)]
        bsz = feats[0].shape[0]
        x_cat = torch.cat([f.view(bsz, self.no, -1) for f in feats], 2)
        anchors, strides = self._anchors(feats)
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        lt, rb = self.dfl(box).chunk(2, 1)
        a = anchors.unsqueeze(0)
        x1y1, x2y2 = a - lt, a + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
        return torch.cat((dbox, cls.sigmoid()), 1)


class YOLOv8n(nn.Module):
    """yolov8n.yaml at scale n: backbone P1..P5 + SPPF, PAN neck, Detect on P3, P4, P5."""

    def __init__(self, nc: int = 80):
        super().__init__()
        self.b0 = Conv(3, 16, 3, 2)
        self.b1 = Conv(16, 32, 3, 2)
        self.b2 = C2f(32, 32, 1, True)
        self.b3 = Conv(32, 64, 3, 2)
        self.b4 = C2f(64, 64, 2, True)
        self.b5 = Conv(64, 128, 3, 2)
        self.b6 = C2f(128, 128, 2, True)
        self.b7 = Conv(128, 256, 3, 2)
        self.b8 = C2f(256, 256, 1, True)
        self.b9 = SPPF(256, 256, 5)
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.h12 = C2f(256 + 128, 128, 1)
        self.h15 = C2f(128 + 64, 64, 1)
        self.h16 = Conv(64, 64, 3, 2)
        self.h18 = C2f(64 + 128, 128, 1)
        self.h19 = Conv(128, 128, 3, 2)
        self.h21 = C2f(128 + 256, 256, 1)
        self.detect = Detect(nc, (64, 128, 256), (8, 16, 32))

    def forward(self, x):
        p3 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h12 = self.h12(torch.cat((self.up(p5), p4), 1))
        h15 = self.h15(torch.cat((self.up(h12), p3), 1))
        h18 = self.h18(torch.cat((self.h16(h15), h12), 1))
        h21 = self.h21(torch.cat((self.h19(h18), p5), 1))
        return self.detect([h15, h18, h21])


# --------------------------------------------------------------------------------------
# yolo11's attention stage
# --------------------------------------------------------------------------------------


class Attention(nn.Module):
    """Multi-head self-attention over the H*W positions of a feature map (yolo11).

    One 1x1 conv makes q, k and v for all heads: (B, heads, 2*key_dim + head_dim, N) split
    along dim 2, so q, k, v are views of the same buffer at channel offsets. The matmuls run
    on q^T and attn^T, i.e. bmm operands that are transposed views, never packed copies.
    """

    def __init__(self, dim: int, num_heads: int, attn_ratio: float = 0.5):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.key_dim = int(self.head_dim * attn_ratio)
        self.scale = self.key_dim ** -0.5
        self.qkv = Conv(dim, dim + 2 * self.key_dim * num_heads, 1, act=False)
        self.proj = Conv(dim, dim, 1, act=False)
        self.pe = Conv(dim, dim, 3, 1, g=dim, act=False)

    def forward(self, x):
        b, c, h, w = x.shape
        n = h * w
        q, k, v = self.qkv(x).view(b, self.num_heads, self.key_dim * 2 + self.head_dim, n).split(
            [self.key_dim, self.key_dim, self.head_dim], dim=2)
        attn = ((q.transpose(-2, -1) @ k) * self.scale).softmax(dim=-1)
        x = (v @ attn.transpose(-2, -1)).view(b, c, h, w) + self.pe(v.reshape(b, c, h, w))
        return self.proj(x)


class PSABlock(nn.Module):
    def __init__(self, c: int, num_heads: int):
        super().__init__()
        self.attn = Attention(c, num_heads)
        self.ffn = nn.Sequential(Conv(c, c * 2, 1), Conv(c * 2, c, 1, act=False))

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.ffn(x)


class C2PSA(nn.Module):
    """yolo11n's layer 10: 1x1 conv, split in two along C, attention on one half, cat, 1x1."""

    def __init__(self, c1: int = 256, c2: int = 256, n: int = 1):
        super().__init__()
        self.c = c1 // 2
        self.cv1 = Conv(c1, 2 * self.c, 1)
        self.cv2 = Conv(2 * self.c, c2, 1)
        self.m = nn.Sequential(*(PSABlock(self.c, num_heads=self.c // 64) for _ in range(n)))

    def forward(self, x):
        a, b = self.cv1(x).split((self.c, self.c), dim=1)
        return self.cv2(torch.cat((a, self.m(b)), 1))


def calibrate_batchnorm(model: nn.Module, example: torch.Tensor) -> nn.Module:
    """Sets every BatchNorm's running stats from one forward pass on `example`.

    Fresh stats (mean 0, var 1) would hide a runtime that ignores them, and with random
    weights the activations of a deep net drift to 0 or blow up; after this each BN output
    is roughly N(0, 1) on inputs like `example`. Returns the model in eval mode.
    """
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average: one batch sets the stats
    model.train()
    with torch.no_grad():
        model(example)
    for bn, momentum in zip(bns, momenta):
        bn.momentum = momentum
    return model.eval()


# --------------------------------------------------------------------------------------
# GPT-2-small-style decoder
# --------------------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, d))


class GPT2Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    """GPT-2 small: token + position embeddings, n pre-LN blocks, final LN, LM head tied to
    the token embedding. Takes int64 token ids (B, T), returns logits (B, T, vocab)."""

    def __init__(self, vocab: int = 50257, ctx: int = 1024, d: int = 768, heads: int = 12, layers: int = 12):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList(GPT2Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        # GPT-2's initialisation, N(0, 0.02) with residual projections scaled by 1/sqrt(2 n),
        # except that biases and LayerNorm affine terms are not left at 0 and 1, which
        # would hide a runtime that drops them.
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.normal_(p, 0.0, 0.02)
            else:  # LayerNorm weight
                nn.init.uniform_(p, 0.8, 1.2)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))
