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


class TinyKVDecoder(torch.nn.Module):
    """A gpt-fast-style decoder: its own KV cache buffers, written with index_copy_ at the
    given positions, attention over the whole cache under a position mask, logits out.
    forward(idx [1, T] int64, input_pos [T] int64) -> logits [1, T, vocab]."""

    def __init__(self, vocab=64, dim=32, heads=2, layers=2, max_len=48, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.heads, self.head_dim, self.max_len = heads, dim // heads, max_len
        self.emb = torch.nn.Parameter(torch.randn(vocab, dim, generator=g))
        self.wqkv = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(3 * dim, dim, generator=g) / dim**0.5) for _ in range(layers)])
        self.wo = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(dim, dim, generator=g) / dim**0.5) for _ in range(layers)])
        self.head = torch.nn.Parameter(torch.randn(vocab, dim, generator=g) * 2 / dim**0.5)
        for i in range(layers):
            self.register_buffer(f"k_cache_{i}", torch.zeros(1, heads, max_len, self.head_dim))
            self.register_buffer(f"v_cache_{i}", torch.zeros(1, heads, max_len, self.head_dim))
        self.layers = layers

    def forward(self, idx, input_pos):
        x = self.emb[idx]  # [1, T, dim]
        T = idx.shape[1]
        mask = torch.arange(self.max_len, device=idx.device)[None, :] <= input_pos[:, None]  # [T, L]
        for i in range(self.layers):
            q, k, v = (x @ self.wqkv[i].t()).split(x.shape[-1], dim=-1)
            q, k, v = (t.view(1, T, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
            kc, vc = getattr(self, f"k_cache_{i}"), getattr(self, f"v_cache_{i}")
            kc.index_copy_(2, input_pos, k)
            vc.index_copy_(2, input_pos, v)
            att = torch.nn.functional.scaled_dot_product_attention(q, kc, vc, attn_mask=mask)
            x = x + att.transpose(1, 2).reshape(1, T, -1) @ self.wo[i].t()
        return x @ self.head.t()


def tiny_kv_greedy(model: TinyKVDecoder, prompt: list[int], n: int) -> list[int]:
    """Eager greedy decoding with the model's own cache, prompt token by token."""
    for name, buf in model.named_buffers():
        buf.zero_()
    out: list[int] = []
    with torch.no_grad():
        pos = 0
        logits = None
        for t in prompt:
            logits = model(torch.tensor([[t]]), torch.tensor([pos]))
            pos += 1
        for _ in range(n):
            tok = int(logits[0, -1].argmax())
            out.append(tok)
            logits = model(torch.tensor([[tok]]), torch.tensor([pos]))
            pos += 1
    return out
