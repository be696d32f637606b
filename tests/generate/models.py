"""The generation tests' models, their Hugging Face references, and reference loops over aotrt.

Models: the tiny random ones of aotrt_tools.llm_models (fp32, seeded, greedy margins made
comfortable: Note [Greedy margins of random models] there), the same modules
`python -m aotrt_tools.llm export --model NAME` exports. `CASES` says, per model, what it is
and which prompt it is tested with.

References: `hf_greedy` is transformers' eager `generate(do_sample=False)` (Whisper's from
log-mel features); the gpt-fast model, which has no `generate`, is its own eager module run
greedily (`llm_models.gptfast_greedy`). Each returns the new tokens, the smallest top-1/top-2
logit gap over the steps (so that a token flip on a thin margin can be told from a bug) and
the per-step logits.

Reference loops over aotrt (`aotrt_decoder_greedy`, `aotrt_whisper_greedy`): aotrt's per-graph
API, one `aotrt.Model` per graph, each holding its own copy of the buffers, so the loop feeds
the prompt through `decode` one token at a time (positions 0, 1, ...) and then its own argmax.
They test the packages without the generate API (aotrt.load_generator, tested in
test_generate_api.py), so a failure of both points at a package, of the API alone at the API.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
# Appended, not prepended: python/aotrt (the source, without its compiled extension) must not
# shadow the installed aotrt package.
if str(REPO / "python") not in sys.path:
    sys.path.append(str(REPO / "python"))

from aotrt_tools import llm_models  # noqa: E402
from aotrt_tools.llm_models import TINY, gptfast_greedy, whisper_features  # noqa: E402,F401

NEW_TOKENS = 64
MAX_CACHE_LEN = 128
MAX_PREFILL_LEN = 32
PROMPT = [1, 17, 42, 99, 5, 200, 31, 64, 7, 150, 11]  # bos first; 11 tokens


@dataclass(frozen=True)
class Case:
    name: str  # key of llm_models.TINY
    kind: str  # "decoder" | "encoder_decoder"
    family: str  # "hf" | "gptfast"
    doc: str


CASES = {c.name: c for c in [
    Case("llama-tiny", "decoder", "hf", "LlamaForCausalLM, 2 layers, GQA 4/2"),
    Case("qwen2-tiny", "decoder", "hf", "Qwen2ForCausalLM: q/k/v biases"),
    Case("qwen3-tiny", "decoder", "hf", "Qwen3ForCausalLM: q/k norms, explicit head_dim"),
    Case("gemma3-tiny", "decoder", "hf", "Gemma3ForCausalLM: sliding + global layers (hybrid cache), tied head"),
    Case("whisper-tiny", "encoder_decoder", "hf", "WhisperForConditionalGeneration, Whisper-tiny's layout scaled down"),
    Case("gptfast-tiny", "decoder", "gptfast", "hand-written gpt-fast-style model, own k/v buffers, index_copy_"),
]}


def build(name: str, max_cache_len: int = MAX_CACHE_LEN) -> torch.nn.Module:
    """A fresh copy of the model (same seed, same weights every call)."""
    if name.startswith("gptfast"):
        return TINY[name](max_seq_length=max_cache_len)
    return TINY[name]()


def prompt_ids() -> torch.Tensor:
    return torch.tensor([PROMPT])


@dataclass
class Greedy:
    tokens: list[int]  # the new tokens (Whisper: after the forced prefix)
    min_margin: float  # smallest top-1 minus top-2 logit over the steps
    logits: list[np.ndarray]  # per step, [V] float32, the logits the token was picked from


def _greedy_from_logits(steps: list[torch.Tensor], tokens: list[int]) -> Greedy:
    margins, logits = [], []
    for step, tok in zip(steps, tokens):
        row = step.reshape(-1).float()
        top = row.topk(2)
        if int(top.indices[0]) != tok:
            raise AssertionError(f"generate picked {tok}, its logits' argmax is {int(top.indices[0])}")
        margins.append(float(top.values[0] - top.values[1]))
        logits.append(row.numpy().copy())
    return Greedy(tokens, min(margins), logits)


@torch.no_grad()
def hf_greedy(model: torch.nn.Module, prompt: torch.Tensor | None = None, max_new_tokens: int = NEW_TOKENS,
              input_features: torch.Tensor | None = None, stop_at_eos: bool = False) -> Greedy:
    """transformers' eager greedy `generate` (its default dynamic cache, not the static one the
    export uses): the new tokens, with the logits each was picked from. Decoders take
    `prompt` [1, T]; Whisper takes `input_features` and starts from its forced prefix. With
    stop_at_eos=False the model's eos does not end generation (exactly max_new_tokens)."""
    gen = dict(do_sample=False, max_new_tokens=max_new_tokens, output_logits=True,
               return_dict_in_generate=True)
    if not stop_at_eos:
        gen["eos_token_id"] = None
    gc = model.generation_config
    saved = gc.cache_implementation, gc.eos_token_id
    gc.cache_implementation = None  # eager reference: transformers' dynamic cache
    if not stop_at_eos:  # Whisper's generate reads its eos from the generation config alone
        gc.eos_token_id = None
    try:
        if input_features is not None:
            out = model.generate(input_features=input_features, **gen)
        else:
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), **gen)
    finally:
        gc.cache_implementation, gc.eos_token_id = saved
    seq = out.sequences[0].tolist()
    new = seq[-len(out.logits):]  # Whisper returns its prefix too on some versions; decoders the prompt
    return _greedy_from_logits(list(out.logits), new)


def reference_greedy(name: str, model: torch.nn.Module, max_new_tokens: int = NEW_TOKENS) -> Greedy:
    """The reference of a CASES model: hf_greedy, or the gpt-fast model's own eager loop."""
    case = CASES[name]
    if case.family == "gptfast":
        logits: list[torch.Tensor] = []
        tokens, _ = gptfast_greedy(model, prompt_ids(), max_new_tokens, record=logits)
        return _greedy_from_logits(logits, tokens)
    if case.kind == "encoder_decoder":
        return hf_greedy(model, max_new_tokens=max_new_tokens, input_features=whisper_features(model))
    return hf_greedy(model, prompt_ids(), max_new_tokens)


# --------------------------------------------------------------------------------------
# Reference loops over aotrt's per-graph API
# --------------------------------------------------------------------------------------


@dataclass
class Loop:
    tokens: list[int]
    logits: list[np.ndarray]  # per generated token, [V] float32


def host_array(y: Any) -> np.ndarray:
    """An aotrt output as a numpy array on the host (CUDA outputs through DLPack and torch;
    bfloat16, which numpy lacks, as float32, which holds every value)."""
    if str(getattr(y, "device", "cpu")).startswith("cuda"):
        t = torch.from_dlpack(y).cpu()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return np.asarray(y.numpy() if hasattr(y, "numpy") else y)


def _last_row(y: Any) -> np.ndarray:
    arr = host_array(y).astype(np.float32)
    return arr.reshape(-1, arr.shape[-1])[-1].copy()


def _greedy(step: Any, prefix: list[int], max_new_tokens: int) -> Loop:
    """The loop both kinds share: `step(token, position)` gives the logits; the prefix token by
    token at positions 0..k-1, then each argmax at the next position."""
    y = None
    for pos, tok in enumerate(prefix):
        y = step(tok, pos)
    tokens, logits = [], []
    for i in range(max_new_tokens):
        row = _last_row(y)
        tok = int(np.argmax(row))
        tokens.append(tok)
        logits.append(row)
        if i + 1 < max_new_tokens:
            y = step(tok, len(prefix) + i)
    return Loop(tokens, logits)


def aotrt_decoder_greedy(decode: Any, prompt: list[int], max_new_tokens: int = NEW_TOKENS) -> Loop:
    """Greedy generation over one decode graph (an aotrt.Model or anything called the same
    way): the prompt token by token at positions 0..T-1, then each argmax at the next position."""
    def step(tok: int, pos: int) -> np.ndarray:
        (y,) = decode(np.array([[tok]], np.int64), np.array([pos], np.int64))
        return y
    return _greedy(step, prompt, max_new_tokens)


def aotrt_whisper_greedy(encoder: Any, decode: Any, features: np.ndarray, prefix: list[int],
                         max_new_tokens: int = NEW_TOKENS) -> Loop:
    """Whisper (Note [Whisper graphs] in aotrt_tools/llm.py): the encoder once, then the forced
    prefix through decode at positions 0..k-1, each step given the same encoder output."""
    (hidden,) = encoder(features)  # kept on the model's device, given to every decode step

    def step(tok: int, pos: int) -> np.ndarray:
        (y,) = decode(np.array([[tok]], np.int64), hidden, np.array([pos], np.int64))
        return y
    return _greedy(step, prefix, max_new_tokens)


def compare(ref: Greedy, got: Loop) -> dict[str, Any]:
    """Where the two token streams first differ (None if never), and the largest logit
    difference up to there: a first difference at a step whose margin is below that logit
    difference is a flip on a thin margin, anything else a bug."""
    first = next((i for i, (a, b) in enumerate(zip(ref.tokens, got.tokens)) if a != b), None)
    upto = len(ref.tokens) if first is None else first + 1
    diff = max(float(np.abs(a - b).max()) for a, b in zip(ref.logits[:upto], got.logits[:upto]))
    margins = [float(np.sort(r)[-1] - np.sort(r)[-2]) for r in ref.logits]
    return dict(first_difference=first, max_logit_diff=diff, min_margin=ref.min_margin,
                margin_at_difference=None if first is None else margins[first], steps=len(ref.tokens))


def describe(name: str, result: dict[str, Any]) -> str:
    where = "all equal" if result["first_difference"] is None else \
        f"first difference at step {result['first_difference']} (margin there {result['margin_at_difference']:.3g})"
    return (f"{name}: {result['steps']} tokens, {where}; max |logit diff| {result['max_logit_diff']:.3g}, "
            f"smallest top-1/top-2 margin {result['min_margin']:.3g}")
