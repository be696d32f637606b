"""torchvision and timm image classifiers for the sweep (tests/hf/sweep.py), beside the
transformers entries of tests/hf/models.py: the libraries' own models at full size, random
weights (weights=None / pretrained=False: the GPU machine has no network), batch 2, 3x224x224.

Importing this module registers the entries in models.ENTRIES (source "torchvision" or
"timm"). Where the library is not installed the sweep records `not-installed` for its entries
(never counted as ok). Detection and segmentation models (maskrcnn, ...) are left out: their
data-dependent box handling does not go through torch.export.

Random weights need two fixes to give outputs worth comparing:
- BatchNorm running stats are set from one forward pass on an input like the test's
  (aotrt_tools.gpu_models.calibrate_batchnorm, as the GPU zoo does): with fresh stats the
  activations of a deep random net vanish or blow up;
- a Linear whose weight is all zero at init (torchvision's ViT zeroes its head) is drawn from
  N(0, 0.02) instead, else the logits are 0 and match anything.

Tolerance (fp32): |aotrt - eager| <= atol + rtol |eager| with rtol 1e-4 and atol the larger of
1e-4 and 4x the largest |eager fp32 - eager fp64| of the same run (TF32 off): the GPU zoo's
yardstick (python/aotrt_tools/zoo.py: an fp32 implementation that sums in another order lands
within a small multiple of eager's own distance from fp64; the zoo's resnet50 bound is ~4x
that distance). 50-100 layers of convolutions at 224x224 drift further from fp64 than the
2-layer transformers entries, whose 1e-4 (models.FP32_TOL) stays as it is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

from tests.hf.models import entry

REPO = Path(__file__).resolve().parents[2]

BATCH, SIZE = 2, 224
RTOL = 1e-4
MIN_ATOL = 1e-4
NOISE_FACTOR = 4.0


def tolerance(noise: float) -> dict:
    """The fp32 tolerance of a run whose eager fp32 output is `noise` from eager fp64."""
    return dict(atol=max(MIN_ATOL, NOISE_FACTOR * noise), rtol=RTOL)


def _ready(model: nn.Module) -> nn.Module:
    """Random weights made comparable (module docstring); returns the model in eval mode."""
    if str(REPO / "python") not in sys.path:
        sys.path.insert(0, str(REPO / "python"))
    from aotrt_tools.gpu_models import calibrate_batchnorm

    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear) and not m.weight.any():
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * 0.02)
    return calibrate_batchnorm(model, torch.randn(4, 3, SIZE, SIZE, generator=g))


def _tv(arch: str):
    import torchvision

    model = getattr(torchvision.models, arch)(weights=None)
    return _ready(model), None, (torch.randn(BATCH, 3, SIZE, SIZE),)


def _timm(arch: str):
    import timm

    model = timm.create_model(arch, pretrained=False)
    return _ready(model), None, (torch.randn(BATCH, 3, SIZE, SIZE),)


TORCHVISION = {
    "resnet50": "ResNet-50 (bottleneck blocks, batch norm)",
    "mobilenet_v3_large": "MobileNetV3-Large (depthwise convs, squeeze-excitation, hardswish)",
    "efficientnet_b0": "EfficientNet-B0 (MBConv, SiLU, squeeze-excitation)",
    "convnext_tiny": "ConvNeXt-T (7x7 depthwise convs, layer norm, layer scale)",
    "vit_b_16": "ViT-B/16 (12 encoder layers, nn.MultiheadAttention)",
    "swin_t": "Swin-T (shifted windows, relative position bias)",
    "regnet_y_400mf": "RegNetY-400MF (group convs, squeeze-excitation)",
    "densenet121": "DenseNet-121 (concatenated dense blocks)",
}
TIMM = {
    "resnet50d": "ResNet-50-D (deep stem, avg-pool downsampling)",
    "efficientnet_b0": "EfficientNet-B0 (timm's, BatchNormAct)",
    "vit_small_patch16_224": "ViT-S/16 (fused qkv attention, F.sdpa)",
    "convnext_nano": "ConvNeXt-Nano (conv MLP, layer norm)",
    "deit_small_patch16_224": "DeiT-S/16",
    "mobilenetv3_large_100": "MobileNetV3-Large 1.0 (timm's)",
}

for _arch, _doc in TORCHVISION.items():
    entry(f"tv_{_arch}", f"torchvision {_doc}; random weights, {BATCH}x3x{SIZE}x{SIZE}",
          source="torchvision")(lambda a=_arch: _tv(a))
for _arch, _doc in TIMM.items():
    entry(f"timm_{_arch}", f"timm {_doc}; random weights, {BATCH}x3x{SIZE}x{SIZE}",
          source="timm")(lambda a=_arch: _timm(a))
