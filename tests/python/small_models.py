"""Small modules the tests export beside the zoo (conftest.small_packages), and a writer of
safetensors files (the format: an 8-byte little-endian header length, a JSON header of
name -> {dtype, shape, data_offsets}, then the raw bytes)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import torch


class ViewOfInput(torch.nn.Module):
    def forward(self, x):
        return x[1:], x.t()


class SlowMatmuls(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(512, 512) / 512**0.5)

    def forward(self, x):
        for _ in range(8):
            x = torch.tanh(x @ self.w)
        return x


class NoWeights(torch.nn.Module):
    """A Linear and a buffer: constants of 2 and 1 dims."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 32)
        self.register_buffer("scale", torch.rand(32) + 0.5)

    def forward(self, x):
        return torch.relu(self.lin(x)) * self.scale


def no_weights_state(seed: int) -> dict[str, np.ndarray]:
    torch.manual_seed(seed)
    return {k: v.detach().numpy().copy() for k, v in NoWeights().state_dict().items()}


def no_weights_eager(state: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    net = NoWeights().eval()
    net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    with torch.no_grad():
        return net(torch.from_numpy(x)).numpy()


_SAFETENSORS_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> Path:
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        data = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": _SAFETENSORS_DTYPES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return path
