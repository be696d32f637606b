"""Models for generation packages: tiny random Hugging Face models and a gpt-fast-style one.

`python -m aotrt_tools.llm export --model NAME` takes the names in `TINY` as well as Hugging
Face folders; tests/generate/ builds its models from here, so the command and the tests export
the same modules. Every tiny model has random fp32 weights, seeded, small enough to export in
well under a minute on a 2-core machine.

Note [Greedy margins of random models]
A random model with the libraries' default init (std 0.02) gives logits within ~0.1 of each
other over the whole vocabulary, so its greedy token is decided by differences that fp32
reassociation (1e-6 relative) can flip, and it often repeats one token forever, which tests a
cache poorly. The factories scale the init up (`INIT_STD`) so that the top-1/top-2 logit gap of
greedy decoding stays far above fp32 noise and the token stream wanders; the harness
(tests/generate/models.py: `hf_greedy`) reports the smallest gap it saw, so that a token flip on
a thin margin can be told from a wrong cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 256
INIT_STD = 0.25  # Note [Greedy margins of random models]

# name -> factory returning the model in eval mode, fp32, generation_config set for export.
TINY: dict[str, Callable[[], nn.Module]] = {}


def tiny(name: str):
    def deco(fn):
        TINY[name] = fn
        return fn
    return deco


def _seeded(build: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)
    model = build().eval()
    # Static cache: what transformers' exportable modules require (they refuse anything else).
    gc = getattr(model, "generation_config", None)
    if gc is not None:
        gc.cache_implementation = "static"
    return model


_LM = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
           initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0,
           tie_word_embeddings=False)


@tiny("llama-tiny")
def llama_tiny() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    return _seeded(lambda: LlamaForCausalLM(LlamaConfig(**_LM)))


@tiny("qwen2-tiny")
def qwen2_tiny() -> nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    # Qwen2's q/k/v projections carry biases (LLaMA's do not).
    return _seeded(lambda: Qwen2ForCausalLM(Qwen2Config(**_LM, use_sliding_window=False)))


@tiny("qwen3-tiny")
def qwen3_tiny() -> nn.Module:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    # Qwen3 normalises q and k per head (q_norm/k_norm) and sets head_dim apart from hidden/heads.
    return _seeded(lambda: Qwen3ForCausalLM(Qwen3Config(**_LM, head_dim=16, use_sliding_window=False)))


@tiny("gemma3-tiny")
def gemma3_tiny() -> nn.Module:
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    # Gemma 3: sliding-window and global layers (transformers exports it through its hybrid
    # static cache, every layer a full StaticLayer), q/k norms, embeddings scaled by
    # sqrt(hidden), tied lm_head, GELU-tanh MLP. The window (128) is wider than any test's
    # cache, so eager's sliding masks and the export's full ones attend to the same tokens.
    cfg = dict(_LM, tie_word_embeddings=True)
    cfg.update(head_dim=16, sliding_window=128, layer_types=["sliding_attention", "full_attention"],
               query_pre_attn_scalar=16, final_logit_softcapping=None, attn_logit_softcapping=None)
    return _seeded(lambda: Gemma3ForCausalLM(Gemma3TextConfig(**cfg)))


@tiny("whisper-tiny")
def whisper_tiny() -> nn.Module:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    # Whisper-tiny's layout (4 heads, GELU, learned decoder positions, sinusoidal encoder
    # positions, conv stem) scaled down: 16 mel bins, 64 frames (32 encoder positions), 2+2
    # layers. Encoder and decoder have as many layers and heads: transformers' exportable
    # decoder sizes its StaticCache from the config's (encoder-mapped) num_hidden_layers.
    # No suppressed tokens: generate's logits processors would otherwise mask logits that a
    # plain argmax loop keeps.
    cfg = WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
        decoder_ffn_dim=128, max_source_positions=32, max_target_positions=256,
        init_std=INIT_STD, decoder_start_token_id=3, bos_token_id=1, eos_token_id=2,
        pad_token_id=0, suppress_tokens=None, begin_suppress_tokens=None)
    return _seeded(lambda: WhisperForConditionalGeneration(cfg))


def whisper_features(model: nn.Module, seed: int = 0) -> torch.Tensor:
    """Random log-mel features of the length the encoder takes ([1, mel bins, 2 * positions])."""
    g = torch.Generator().manual_seed(seed)
    cfg = model.config
    return torch.randn(1, cfg.num_mel_bins, 2 * cfg.max_source_positions, generator=g)


# --------------------------------------------------------------------------------------
# gpt-fast-style model: its own cache buffers, updated with index_copy_
# --------------------------------------------------------------------------------------


@dataclass
class GptFastConfig:
    vocab_size: int = VOCAB
    n_layer: int = 2
    n_head: int = 4
    n_local_heads: int = 2  # grouped-query attention, as in LLaMA-2/3 checkpoints
    dim: int = 64
    intermediate_size: int = 128
    max_seq_length: int = 256  # the cache length
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    bos_token_id: int = 1
    eos_token_id: int = 2

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_head


class KVCache(nn.Module):
    """[B, local heads, max_seq_length, head dim] key and value buffers, written in place."""

    def __init__(self, cfg: GptFastConfig, batch_size: int, dtype: torch.dtype):
        super().__init__()
        shape = (batch_size, cfg.n_local_heads, cfg.max_seq_length, cfg.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype))
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype))

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        self.k_cache.index_copy_(2, input_pos, k)
        self.v_cache.index_copy_(2, input_pos, v)
        return self.k_cache, self.v_cache


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding on interleaved pairs (x[..., 2i], x[..., 2i+1]), as gpt-fast does."""
    x2 = x.float().reshape(*x.shape[:-1], -1, 2)
    a, b = x2[..., 0], x2[..., 1]
    out = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1)
    return out.flatten(-2).type_as(x)


class Attention(nn.Module):
    def __init__(self, cfg: GptFastConfig):
        super().__init__()
        self.cfg = cfg
        kv = cfg.n_local_heads * cfg.head_dim
        self.wqkv = nn.Linear(cfg.dim, cfg.dim + 2 * kv, bias=False)  # q, k, v in one matmul
        self.wo = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.kv_cache: KVCache | None = None

    def forward(self, x, cos, sin, mask, input_pos):
        cfg = self.cfg
        b, t, _ = x.shape
        kv = cfg.n_local_heads * cfg.head_dim
        q, k, v = self.wqkv(x).split([cfg.dim, kv, kv], dim=-1)
        q = _rotate(q.view(b, t, cfg.n_head, cfg.head_dim), cos, sin).transpose(1, 2)
        k = _rotate(k.view(b, t, cfg.n_local_heads, cfg.head_dim), cos, sin).transpose(1, 2)
        v = v.view(b, t, cfg.n_local_heads, cfg.head_dim).transpose(1, 2)
        k, v = self.kv_cache.update(input_pos, k, v)
        rep = cfg.n_head // cfg.n_local_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, cfg.dim))


class FeedForward(nn.Module):
    def __init__(self, cfg: GptFastConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.intermediate_size, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.intermediate_size, bias=False)
        self.w2 = nn.Linear(cfg.intermediate_size, cfg.dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg: GptFastConfig):
        super().__init__()
        self.attention = Attention(cfg)
        self.feed_forward = FeedForward(cfg)
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)

    def forward(self, x, cos, sin, mask, input_pos):
        h = x + self.attention(self.attention_norm(x), cos, sin, mask, input_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    """A LLaMA-style decoder written the way gpt-fast writes one.

    forward(idx [B, T] int64, input_pos [T] int64) -> logits of the last position, [B, 1, V]:
    writes the T new keys/values at `input_pos` of every layer's cache (index_copy_), attends
    through a causal mask row per position (`causal_mask[input_pos]`), and applies the output
    projection to the last position only. One module serves as prefill (T > 1) and decode (T = 1).
    """

    def __init__(self, cfg: GptFastConfig, batch_size: int = 1, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.config = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        for layer in self.layers:
            layer.attention.kv_cache = KVCache(cfg, batch_size, dtype)
        half = cfg.head_dim // 2
        freqs = 1.0 / cfg.rope_base ** (torch.arange(half, dtype=torch.float32) / half)
        angles = torch.outer(torch.arange(cfg.max_seq_length, dtype=torch.float32), freqs)
        self.register_buffer("rope_cos", angles.cos(), persistent=False)
        self.register_buffer("rope_sin", angles.sin(), persistent=False)
        self.register_buffer("causal_mask", torch.tril(torch.ones(cfg.max_seq_length, cfg.max_seq_length,
                                                                  dtype=torch.bool)), persistent=False)

    def reset_caches(self) -> None:
        for layer in self.layers:
            layer.attention.kv_cache.k_cache.zero_()
            layer.attention.kv_cache.v_cache.zero_()

    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        mask = self.causal_mask[None, None, input_pos]
        cos = self.rope_cos[input_pos][None, :, None, :]
        sin = self.rope_sin[input_pos][None, :, None, :]
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x, cos, sin, mask, input_pos)
        return self.output(self.norm(x[:, -1:, :]))


@tiny("gptfast-tiny")
def gptfast_tiny(max_seq_length: int = 256) -> nn.Module:
    """The cache length is the model's own (its buffers' shape): the export command passes
    its --max-cache-len here. The weights do not depend on it."""
    def build():
        model = Transformer(GptFastConfig(max_seq_length=max_seq_length))
        for name, p in model.named_parameters():
            if p.dim() == 2:  # Note [Greedy margins of random models]
                nn.init.normal_(p, std=INIT_STD)
        return model

    return _seeded(build)


@torch.no_grad()
def gptfast_greedy(model: Transformer, prompt_ids: torch.Tensor, max_new_tokens: int,
                   record: list | None = None) -> tuple[list[int], float]:
    """Eager greedy generation of the gpt-fast model (its caches reset first): prefill the
    prompt in one call, then one token at a time. Returns (new tokens, smallest top-1/top-2
    logit gap seen); `record`, when given, receives each step's logits [V]."""
    model.reset_caches()
    t = prompt_ids.shape[1]
    logits = model(prompt_ids, torch.arange(t))
    tokens, margin = [], math.inf
    for step in range(max_new_tokens):
        row = logits[0, -1].float()
        if record is not None:
            record.append(row.clone())
        top = row.topk(2)
        margin = min(margin, float(top.values[0] - top.values[1]))
        tok = int(top.indices[0])
        tokens.append(tok)
        if step + 1 < max_new_tokens:
            logits = model(torch.tensor([[tok]]), torch.tensor([t + step]))
    return tokens, margin
