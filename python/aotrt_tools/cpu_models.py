"""Small CPU models shared by the freezing test (tests/e2e/test_cpu_freezing.py) and its
benchmark (bench/cpu_freezing.py)."""

from __future__ import annotations

from torch import nn


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
