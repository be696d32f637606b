"""Export a language model (or Whisper) to an aotrt generation package.

    PYTHONPATH=python python3 -m aotrt_tools.llm export --model llama-tiny --out /tmp/gen/llama \\
        --max-cache-len 256 --max-prefill-len 64 --dtype float32 --device cpu
    PYTHONPATH=python python3 -m aotrt_tools.llm export --model /path/to/hf_folder --out DIR/NAME ...
    PYTHONPATH=python python3 -m aotrt_tools.llm export --model /path/to/config.json --out DIR/NAME ...
    PYTHONPATH=python python3 -m aotrt_tools.llm export --model gptfast-tiny --out DIR/NAME ...

Writes DIR/NAME.pt2 (one graph per model folder, Note [Generation package]),
DIR/NAME.generation.json (the graphs' shared "aotrt.generation" record, for tools that do not
open the zip) and DIR/NAME.tokenizer.json (a Hugging Face folder's tokenizer.json, when it has
one), and prints the inductor options it chose.

`--model` is a Hugging Face folder (config.json plus weights; a folder without weights, or a
config.json, gives random weights), a name in aotrt_tools.llm_models.TINY (tiny random
models; `gptfast-tiny` is a hand-written gpt-fast-style model), or `--factory module:function`
returning a model.

Note [Generation package]
One .pt2 holds every graph of a model, each compiled by `torch._inductor.aot_compile` with
`aot_inductor.package=True` and put in one archive by `package_aoti(path, {graph: files})`, so
each graph is a model folder `data/aotinductor/<graph>/` (torch's multi-model packaging; aotrt
loads one with model_name=<graph>).
- Decoder-only LMs (kind "decoder"): graph `decode` takes (input_ids int64 [B, 1],
  cache_position int64 [1]) and returns logits [B, 1, V]; graph `prefill` takes (input_ids
  int64 [B, T], cache_position int64 [T]), T dynamic in [2, max_prefill_len] (Note [Prefill
  lengths]), and returns the logits of the last position only, [B, 1, V] (the module computes the lm_head for that row
  alone: transformers' `logits_to_keep=1`, gpt-fast's slice before its output projection).
  Both graphs write the same cache buffers (same FQNs, dtypes and shapes) in place at
  cache_position; cache_position must be consecutive positions starting where the previous
  call stopped (transformers' static layers place the T new entries at cache_position[0] ..
  cache_position[0] + T - 1: `cumulative_length` is set from cache_position[0]).
- Encoder-decoders (kind "encoder_decoder", Whisper): Note [Whisper graphs].
Every graph's <hash>.wrapper_metadata.json carries "aotrt.generation" (`generation_record`) and
the "aotrt.inputs"/"aotrt.outputs" records of aotrt_tools.export. Each graph keeps its own copy
of the weights as torch writes them (the caches too, zero-filled); a runtime that loads several
graphs may share constants of equal FQN.

Note [Exporting transformers' static caches]
transformers' exportable modules keep their caches in a StaticCache object and register the
same tensors as module buffers (`key_cache_<i>`, `value_cache_<i>`, `cumulative_length_<i>`).
The model reaches them through the cache object, not through module attributes, so only the
strict (dynamo) export sees that they are those buffers; torch.export's non-strict mode lifts
them as anonymous constants (`lifted_tensor_<n>`), and prefill and decode would not name their
caches alike. So transformers' modules are exported with strict=True, as transformers' own
`export()` does. The graph writes the buffers in place (index_copy_ at the positions, copy_ of
cumulative_length); inductor compiles that as writes to the package's constants.

Note [Whisper graphs]
Measured on transformers 5.24 (`Seq2SeqLMExportableModule` and its parts):
- `Seq2SeqLMEncoderExportableModule` calls `encoder(input_ids=...)`, which Whisper's encoder
  does not take (it takes `input_features`), so the `encoder` graph here is the same one-line
  module over `input_features`: log-mel features float [B, num_mel_bins, 2 *
  max_source_positions] (exactly that length: Whisper's encoder refuses any other) -> encoder
  hidden states [B, max_source_positions, d_model].
- `decode` is `Seq2SeqLMDecoderExportableModuleWithStaticCache` as transformers writes it (given
  Whisper's decoder and output projection through `_Seq2SeqParts`: the module reads
  `model.lm_head`, which Whisper calls `proj_out`): inputs (decoder_input_ids int64 [B, 1], encoder_hidden_states [B, S, d_model],
  cache_position int64 [1]) -> logits [B, 1, V]. Its self-attention cache is a StaticCache
  (buffers key_cache_<i>/value_cache_<i>/cumulative_length_<i>, written in place as above). Its
  cross-attention cache is a DynamicCache that is empty when the graph is traced, so the graph
  computes the cross-attention keys and values from `encoder_hidden_states` at every step (two
  projections per layer) and keeps nothing: there is no cross-attention buffer in the package,
  nothing to fill, and every decode call must be given the encoder output.
- So a transcript is: encoder once; then decode for each token of the forced prefix
  (`decoder_start_token_ids`, at positions 0..k-1), the argmax of the last of those steps
  being the first generated token, and so on, one token per call, the same encoder output
  every time. transformers' wrapper makes its cache float32 whatever the model's dtype; the
  buffers are cast to the model's dtype here so that bfloat16 exports have bfloat16 caches.

Note [Generation graphs fuse linears]
Every graph is compiled after aotrt_tools.fuse_linears (on both devices; `--no-fuse-linears`
for A/B runs): linears that read the same input (q/k/v, gate/up; the int8/int4 weight-only
ops too) become one matmul over their weights concatenated along N, split back after, since a
decode step at batch 1 pays a launch and a tail per matmul. The members' weights leave the
package and the fused one is named from them on their common module
(`...self_attn.fused_q_proj_k_proj_v_proj_weight`); each graph's record lists the groups under
"fused_linears" (name, members, sizes, each fused tensor's members and dim) for users of external
weights. Left alone: mixed dtypes, bias or K, weights that are inputs or read elsewhere (tied
weights, caches the graph writes). See Note [Sibling linears fused] in fuse_linears.py.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from torch import nn

from . import export as aotrt_export
from . import llm_models
from .fuse_linears import fuse_linears as fuse_sibling_linears

GENERATION_KEY = "aotrt.generation"
GENERATION_VERSION = 1

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# Note [Generation inductor options]
# A generation package is compiled with aotrt_tools.export's options (resolve_options: no
# libtorch, weights in a blob, vectorized CPU kernels, freezing=True on the CPU) plus the
# device's row below, plus --option. Measured on the CPU with bench/llm_options.py (decode step
# of a small LLaMA, `aotrt bench --model-name decode`; bench/results/cpu-llm-options-2026-12-06.md):
# freezing=True and False give byte-identical decoder packages (linears stay mm_out on plain
# weights, nothing to fold); max_autotune=True won at hidden 256 (best round 1.43 vs 1.90 ms,
# its C++ GEMM template beating mm's call overhead) and tied at hidden 512 (17.7 ms both), for
# 2-2.5x the compile time, 26% more weight bytes (packed copies) and picks that depend on timings
# taken while exporting. So the CPU row adds nothing. CUDA_CANDIDATE_OPTIONS are for the lead to
# measure on a GPU (bench/llm_options.py --device cuda); until then CUDA adds nothing either.
CPU_GENERATION_OPTIONS: dict[str, Any] = {}

# Candidates for CUDA, each added to aotrt_tools.export's options; the command uses the "aotrt" row.
CUDA_CANDIDATE_OPTIONS: dict[str, dict[str, Any]] = {
    "aotrt": {},
    "freezing": {"freezing": True},
    "max_autotune": {"max_autotune": True},
    "max_autotune_triton_gemm": {"max_autotune": True, "max_autotune_gemm_backends": "TRITON"},
    "coordinate_descent": {"coordinate_descent_tuning": True},
    "max_autotune_coordinate_descent": {"max_autotune": True, "coordinate_descent_tuning": True},
}
CUDA_GENERATION_OPTIONS: dict[str, Any] = CUDA_CANDIDATE_OPTIONS["aotrt"]


def generation_options(device: str, extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The inductor options of a generation package on `device` (Note [Generation inductor
    options]); `extra` wins. Returns (options, names this torch lacks)."""
    base = CPU_GENERATION_OPTIONS if torch.device(device).type == "cpu" else CUDA_GENERATION_OPTIONS
    return aotrt_export.resolve_options({**base, **(extra or {})}, device)


class Unservable(ValueError):
    """What was asked cannot be made into a generation package (the message says why)."""


# --------------------------------------------------------------------------------------
# Sources: what --model names
# --------------------------------------------------------------------------------------


@dataclass
class Source:
    """A model to export and what the generation record says about it."""

    model: nn.Module
    kind: str  # "decoder" | "encoder_decoder"
    family: str  # "hf" | "gptfast"
    source: str
    tokenizer_json: Path | None = None
    eos_token_ids: list[int] = field(default_factory=list)
    bos_token_id: int | None = None
    pad_token_id: int | None = None
    decoder_start_token_ids: list[int] = field(default_factory=list)


def _ids(value: Any) -> list[int]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return [int(value)]


def _hf_model_class(config: Any):
    import transformers

    for arch in getattr(config, "architectures", None) or []:
        cls = getattr(transformers, arch, None)
        if cls is not None:
            return cls
    if getattr(config, "is_encoder_decoder", False):
        return transformers.AutoModelForSpeechSeq2Seq
    return transformers.AutoModelForCausalLM


def _load_hf(path: Path) -> tuple[nn.Module, Path | None]:
    """A transformers model from a folder (its weights when it has any, else random) or a
    config.json (random weights, seeded)."""
    from transformers import AutoConfig

    if path.is_dir():
        folder, config = path, AutoConfig.from_pretrained(str(path))
    else:
        folder, fields = path.parent, json.loads(path.read_text())
        config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    cls = _hf_model_class(config)
    if path.is_dir() and (any(folder.glob("*.safetensors")) or any(folder.glob("pytorch_model*.bin"))):
        model = cls.from_pretrained(str(folder), dtype=torch.float32)
    else:
        torch.manual_seed(0)
        model = cls._from_config(config) if hasattr(cls, "_from_config") else cls.from_config(config)
    tok = folder / "tokenizer.json"
    return model.eval(), tok if tok.is_file() else None


def _whisper_prefix(model: nn.Module, language: str | None) -> list[int]:
    """The forced prefix Whisper's generate starts the decoder with (start of transcript,
    language, task, no-timestamps), from transformers' own `_retrieve_init_tokens`."""
    import copy

    gc = copy.deepcopy(model.generation_config)
    if language is not None:
        gc.language = language
    elif hasattr(gc, "lang_to_id") and getattr(gc, "forced_decoder_ids", None) is None:
        raise Unservable("a multilingual Whisper detects its language at run time; pass --language "
                         "(e.g. en) so that the package can record its forced prefix")
    if getattr(gc, "return_timestamps", None) is None:
        gc.return_timestamps = False  # generate's default (transcripts without timestamps)
    tokens = model._retrieve_init_tokens(None, 1, gc, model.config, 2 * model.config.max_source_positions, {})
    return [int(t) for t in tokens[0].tolist()]


def load_source(spec: str | None, factory: str | None = None, max_cache_len: int = 256,
                language: str | None = None) -> Source:
    """--model / --factory -> Source (the model in eval mode, float32)."""
    tok = None
    if factory is not None:
        model = aotrt_export.load_factory(factory)()
        source = factory
    elif spec in llm_models.TINY:
        builder = llm_models.TINY[spec]
        model = builder(max_seq_length=max_cache_len) if spec.startswith("gptfast") else builder()
        source = spec
    else:
        path = Path(spec)
        if not path.exists():
            raise Unservable(f"--model {spec!r} is neither a Hugging Face folder, a config.json nor one of "
                             f"{sorted(llm_models.TINY)}")
        model, tok = _load_hf(path)
        source = str(path.resolve())
    model = model.eval()
    if isinstance(model, llm_models.Transformer):
        cfg = model.config
        if cfg.max_seq_length != max_cache_len:
            raise Unservable(f"{source}: the gpt-fast model's cache holds {cfg.max_seq_length} positions, "
                             f"not --max-cache-len {max_cache_len}")
        return Source(model, "decoder", "gptfast", source, tok, _ids(cfg.eos_token_id), cfg.bos_token_id)
    config = model.config
    gc = getattr(model, "generation_config", None)
    eos = _ids(getattr(gc, "eos_token_id", None) if gc is not None else None) or _ids(config.eos_token_id)
    bos = getattr(gc, "bos_token_id", None) if gc is not None else None
    pad = getattr(gc, "pad_token_id", None) if gc is not None else None
    bos = config.bos_token_id if bos is None else bos
    pad = getattr(config, "pad_token_id", None) if pad is None else pad
    if gc is not None:
        gc.cache_implementation = "static"  # what transformers' exportable modules require
        gc.use_cache = True
    if getattr(config, "is_encoder_decoder", False):
        if config.model_type != "whisper":
            raise Unservable(f"{source}: encoder-decoder {config.model_type!r} is not served; Whisper is")
        return Source(model, "encoder_decoder", "hf", source, tok, eos, bos, pad, _whisper_prefix(model, language))
    return Source(model, "decoder", "hf", source, tok, eos, bos, pad)


# --------------------------------------------------------------------------------------
# Graphs
# --------------------------------------------------------------------------------------


@dataclass
class Graph:
    """One graph of a package: an exported program and the role of each of its inputs."""

    name: str
    program: Any  # torch.export.ExportedProgram
    roles: list[str]
    max_prefill_len: int | None = None


_ROLES = {"input_ids": "input_ids", "decoder_input_ids": "input_ids", "idx": "input_ids",
          "cache_position": "cache_position", "input_pos": "cache_position",
          "encoder_hidden_states": "encoder_hidden_states", "input_features": "input_features"}


def _roles(program: Any) -> list[str]:
    names = list(program.graph_signature.user_inputs)
    unknown = [n for n in names if n not in _ROLES]
    if unknown:
        raise Unservable(f"graph inputs {unknown} have no generation role (known: {sorted(_ROLES)})")
    return [_ROLES[n] for n in names]


def _prefill_class(base: type, model: nn.Module) -> type:
    """transformers' static-cache module (`base`: TorchExportableModuleWithStaticCache or
    ...WithHybridCache) with a forward that returns the last position's logits only. A
    subclass, not a wrapper, so that its buffers have the FQNs of the decode graph's."""
    import inspect

    # transformers 5.24 names the model's cache argument `cache`, 5.17 (the GPU machine's)
    # `past_key_values`.
    params = inspect.signature(type(model).forward).parameters
    cache_arg = "cache" if "cache" in params else "past_key_values"

    class LastPositionLogits(base):
        def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor) -> torch.Tensor:
            cache = getattr(self, "static_cache", None) or self.cache
            for layer in cache.layers:  # as transformers' forward: the write position
                layer.cumulative_length.copy_(cache_position[0])
            out = self.model(input_ids=input_ids, attention_mask=None, use_cache=True, logits_to_keep=1,
                             **{cache_arg: cache})
            return out.logits

    LastPositionLogits.__name__ = f"LastPositionLogits[{base.__name__}]"
    return LastPositionLogits


# Note [Prefill lengths]
# The prefill graph takes T from MIN_PREFILL_LEN = 2 to max_prefill_len, not from 1: inductor
# assumes a backed size is at least 2 and the compiled model's own input checks refuse T = 1
# ("dim value is too small at 1, expected it to be >= 2") whatever lower bound the Dim gives,
# as Note [Dynamic batch export] in export.py found for the batch. Exporting under
# backed_size_oblivious instead fails on guards `T != 1` that reshape/view add (measured on the
# gpt-fast model, torch 2.13). A one-token prompt goes through `decode`, which is the same
# computation at T = 1 (same caches, same [B, 1, V] logits). The record says "min_prefill_len".
MIN_PREFILL_LEN = 2


def _prefill_dim(max_prefill_len: int) -> tuple[Any, int]:
    """The prefill length's Dim and the example length to export with."""
    if max_prefill_len < MIN_PREFILL_LEN:
        raise Unservable(f"--max-prefill-len must be at least {MIN_PREFILL_LEN} (Note [Prefill lengths])")
    return torch.export.Dim("prefill_len", min=MIN_PREFILL_LEN, max=max_prefill_len), min(max_prefill_len, 8)


def _check_lengths(max_cache_len: int, max_prefill_len: int) -> None:
    if max_prefill_len > max_cache_len:
        raise Unservable(f"--max-prefill-len {max_prefill_len} exceeds --max-cache-len {max_cache_len}")


# Note [GQA attention in exports]
# transformers' SDPA attention repeats a grouped-query model's keys and values to the query's head
# count (repeat_kv) whenever it is given a mask, and a static cache always gives one; an exported
# decode step then copies every layer's whole K/V cache per step (an H100 profile of the 1B-shape
# step: 88 copy kernels, 0.24 ms of a 1.8 ms step) and attention reads the copies. SDPA itself
# takes fewer key/value heads (`enable_gqa=True`, torch >= 2.5), and so do aotrt's attention ops
# (cuDNN's and the decode kernel on CUDA, sdpa.cpp on the CPU). So a decoder exported here
# attends through `_gqa_sdpa_attention`, registered with transformers' AttentionInterface under
# GQA_ATTENTION: SDPA with enable_gqa on the unrepeated cache, otherwise what transformers' SDPA
# does. Cases it does not handle (softcap, position bias, head dims that differ) go to
# transformers' own SDPA function. The model's attention implementation is set for the export
# and restored after it. On by default on both devices (`hf_decoder_graphs(gqa=False)` turns it
# off), as measured: the 1B Llama step on an H100 1.828 -> 1.609 ms
# (bench/results/decode-h100-gqa-2026-12-07.md), on the 2-core CPU 164.4 -> 124.2 ms
# (decode-cpu-gqa-2026-12-07.md; the CPU copied the repeated caches too).
GQA_ATTENTION = "aotrt_gqa_sdpa"


def _gqa_sdpa_attention(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                        is_causal: bool | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: query [B, H, T, E], key/value [B, Hk, L, E]
    -> ([B, T, H, Ev], None), through one SDPA call with enable_gqa (Note [GQA attention in exports])."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    unusual = (kwargs.get("softcap") is not None or kwargs.get("position_bias") is not None
               or key.shape[-1] != value.shape[-1] or query.shape[1] == key.shape[1])
    if unusual:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = query.shape[2] > 1 and attention_mask is None and causal
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, is_causal=causal,
        enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


def use_gqa_attention(model: nn.Module) -> str | None:
    """Makes `model` (a transformers model using SDPA) attend through _gqa_sdpa_attention (Note
    [GQA attention in exports]); returns the implementation it replaced, None if it left the
    model as it was (not a transformers model, or not on SDPA)."""
    before = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if before != "sdpa" or not hasattr(model, "set_attn_implementation"):
        return None
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    AttentionInterface.register(GQA_ATTENTION, _gqa_sdpa_attention)
    AttentionMaskInterface.register(GQA_ATTENTION, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
    model.set_attn_implementation(GQA_ATTENTION)
    return before


@contextlib.contextmanager
def gqa_attention(model: nn.Module, enabled: bool = True):
    """use_gqa_attention within the block, the model's implementation restored after it."""
    before = use_gqa_attention(model) if enabled else None
    try:
        yield
    finally:
        if before is not None:
            model.set_attn_implementation(before)


def hf_decoder_graphs(model: nn.Module, max_cache_len: int, max_prefill_len: int, batch_size: int = 1,
                      device: str = "cpu", which: Sequence[str] = ("prefill", "decode"),
                      gqa: bool = True) -> list[Graph]:
    """`decode` through transformers' TorchExportableModuleForDecoderOnlyLM.export as is, and
    `prefill` through the same static-cache module returning the last position's logits
    (`which`: the graphs to export); `gqa`: attention on the unrepeated K/V cache (Note [GQA
    attention in exports])."""
    dev = torch.device(device)
    with gqa_attention(model, gqa):
        return _hf_decoder_graphs(model, max_cache_len, max_prefill_len, batch_size, dev, which)


def _hf_decoder_graphs(model: nn.Module, max_cache_len: int, max_prefill_len: int, batch_size: int,
                       dev: torch.device, which: Sequence[str]) -> list[Graph]:
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    _check_lengths(max_cache_len, max_prefill_len)
    hf = TorchExportableModuleForDecoderOnlyLM(model, batch_size=batch_size, max_cache_len=max_cache_len,
                                               device=dev)
    graphs = []
    with torch.no_grad():
        if "prefill" in which:
            length, t = _prefill_dim(max_prefill_len)
            prefill_module = _prefill_class(type(hf.model), model)(model, batch_size, max_cache_len, dev)
            prefill = torch.export.export(
                prefill_module, (), kwargs=dict(input_ids=torch.zeros(batch_size, t, dtype=torch.long, device=dev),
                                                cache_position=torch.arange(t, device=dev)),
                dynamic_shapes=dict(input_ids={1: length}, cache_position={0: length}), strict=True)
            graphs.append(Graph("prefill", prefill, _roles(prefill), max_prefill_len))
        if "decode" in which:
            decode = hf.export(input_ids=torch.zeros(batch_size, 1, dtype=torch.long, device=dev),
                               cache_position=torch.zeros(1, dtype=torch.long, device=dev), strict=True)
            graphs.append(Graph("decode", decode, _roles(decode)))
    return graphs


def gptfast_graphs(model: llm_models.Transformer, max_cache_len: int, max_prefill_len: int,
                   device: str = "cpu") -> list[Graph]:
    """The gpt-fast model's own forward, exported twice: T = 1 and T dynamic. Its buffers are
    module attributes, so the non-strict export names them (unlike transformers' caches)."""
    _check_lengths(max_cache_len, max_prefill_len)
    dev = torch.device(device)
    length, t = _prefill_dim(max_prefill_len)
    with torch.no_grad():
        decode = torch.export.export(model, (torch.zeros(1, 1, dtype=torch.long, device=dev),
                                             torch.zeros(1, dtype=torch.long, device=dev)))
        prefill = torch.export.export(model, (torch.zeros(1, t, dtype=torch.long, device=dev),
                                              torch.arange(t, device=dev)),
                                      dynamic_shapes=({1: length}, {0: length}))
    return [Graph("prefill", prefill, _roles(prefill), max_prefill_len),
            Graph("decode", decode, _roles(decode))]


class WhisperEncoderGraph(nn.Module):
    """Whisper's encoder over log-mel features (Note [Whisper graphs])."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.encoder = model.get_encoder()

    def forward(self, input_features: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_features=input_features).last_hidden_state


class _Seq2SeqParts(nn.Module):
    """What Seq2SeqLMDecoderExportableModuleWithStaticCache reads of a model (get_decoder(),
    lm_head, config, parameters()): Whisper names its output projection proj_out."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.decoder = model.get_decoder()
        self.lm_head = model.get_output_embeddings()
        self.config = model.config

    def get_decoder(self) -> nn.Module:
        return self.decoder


def whisper_decoder_module(model: nn.Module, max_cache_len: int, batch_size: int = 1) -> nn.Module:
    """transformers' Seq2SeqLMDecoderExportableModuleWithStaticCache over Whisper's decoder and
    output projection, its cache in the model's dtype (transformers makes it float32)."""
    from transformers.integrations.executorch import Seq2SeqLMDecoderExportableModuleWithStaticCache

    module = Seq2SeqLMDecoderExportableModuleWithStaticCache(_Seq2SeqParts(model), max_cache_len, batch_size).eval()
    dtype = next(model.parameters()).dtype
    for i, layer in enumerate(module.static_cache.layers):
        if layer.keys.dtype != dtype:
            layer.keys, layer.values = layer.keys.to(dtype), layer.values.to(dtype)
            module.register_buffer(f"key_cache_{i}", layer.keys, persistent=False)
            module.register_buffer(f"value_cache_{i}", layer.values, persistent=False)
    return module


def whisper_graphs(model: nn.Module, max_cache_len: int, batch_size: int = 1, device: str = "cpu") -> list[Graph]:
    cfg = model.config
    if max_cache_len > cfg.max_target_positions:
        raise Unservable(f"--max-cache-len {max_cache_len} exceeds Whisper's {cfg.max_target_positions} "
                         "decoder positions")
    dev = torch.device(device)
    dtype = next(model.parameters()).dtype
    frames = 2 * cfg.max_source_positions
    with torch.no_grad():
        features = torch.zeros(batch_size, cfg.num_mel_bins, frames, dtype=dtype, device=dev)
        encoder = torch.export.export(WhisperEncoderGraph(model).eval(), (features,))
        hidden = torch.zeros(batch_size, cfg.max_source_positions, cfg.d_model, dtype=dtype, device=dev)
        decode = torch.export.export(
            whisper_decoder_module(model, max_cache_len, batch_size),
            (torch.zeros(batch_size, 1, dtype=torch.long, device=dev), hidden,
             torch.zeros(1, dtype=torch.long, device=dev)), strict=True)
    return [Graph("encoder", encoder, _roles(encoder)), Graph("decode", decode, _roles(decode))]


# --------------------------------------------------------------------------------------
# Compile and package
# --------------------------------------------------------------------------------------


def generation_record(src: Source, graph: Graph, max_cache_len: int, vocab_size: int, dtype: torch.dtype,
                      batch_size: int = 1) -> dict[str, Any]:
    """The "aotrt.generation" record of one graph (Note [Generation package])."""
    record: dict[str, Any] = {
        "version": GENERATION_VERSION, "kind": src.kind, "graph": graph.name, "inputs": graph.roles,
        "max_cache_len": max_cache_len, "batch_size": batch_size, "vocab_size": vocab_size,
        "eos_token_ids": src.eos_token_ids, "bos_token_id": src.bos_token_id,
        "pad_token_id": src.pad_token_id, "dtype": str(dtype).removeprefix("torch."), "source": src.source,
    }
    if graph.max_prefill_len is not None:
        record["min_prefill_len"] = MIN_PREFILL_LEN
        record["max_prefill_len"] = graph.max_prefill_len
    if src.kind == "encoder_decoder":
        record["decoder_start_token_ids"] = src.decoder_start_token_ids
    return record


def _flat_example_inputs(program: Any) -> list[Any]:
    """The example inputs in the order of the graph's user inputs (what the compiled model takes)."""
    args, kwargs = program.example_inputs
    flat = list(args)
    names = list(program.graph_signature.user_inputs)[len(flat):]
    missing = [n for n in names if n not in kwargs]
    if missing:
        raise Unservable(f"cannot match graph inputs {missing} to the example's {sorted(kwargs)}")
    return flat + [kwargs[n] for n in names]


def compile_graph(graph: Graph, options: dict[str, Any], record: dict[str, Any],
                  fuse_linears: bool = True) -> list[Any]:
    """aot_compile of one graph with aot_inductor.package=True: the files package_aoti takes.
    fuse_linears: fuse sibling linears first (Note [Sibling linears fused]), listing them in `record`."""
    program = graph.program
    try:
        module = program.module(check_guards=False)
    except TypeError:  # torch 2.11: no check_guards
        module = program.module()
    if fuse_linears:
        record["fused_linears"] = [g.record() for g in fuse_sibling_linears(module)]
    inputs = _flat_example_inputs(program)
    opts = dict(options)
    opts["aot_inductor.package"] = True
    metadata = dict(opts.get("aot_inductor.metadata", {}))
    metadata["aotrt.inputs"] = json.dumps(aotrt_export._tensor_specs(inputs, aotrt_export._input_dynamic_dims(program)))
    metadata["aotrt.outputs"] = json.dumps(aotrt_export._output_specs(program))
    metadata[GENERATION_KEY] = json.dumps(record)
    opts["aot_inductor.metadata"] = metadata
    args, kwargs = program.example_inputs
    aotrt_export.forget_vec_isa_probes()
    files = torch._inductor.aot_compile(module, args, kwargs, options=opts)
    if not isinstance(files, list):
        raise RuntimeError(f"aot_compile returned {files!r}, not the package's files")
    return files


def _vocab_size(src: Source) -> int:
    if src.family == "gptfast":
        return src.model.config.vocab_size
    # The logits' width: the output projection's out_features. Not its weight's rows: a quantized
    # projection's weight is packed (tinygemm's int4 has N / 8 rows), and the generator refuses
    # prompt tokens at or past this figure.
    out = src.model.get_output_embeddings()
    n = getattr(out, "out_features", None)
    return int(n) if isinstance(n, int) else int(src.model.config.get_text_config().vocab_size)


def export_generation(src: Source, out: str | os.PathLike, max_cache_len: int, max_prefill_len: int,
                      dtype: torch.dtype = torch.float32, device: str = "cpu",
                      extra_options: dict[str, Any] | None = None, fuse_linears: bool = True,
                      gqa: bool = True) -> dict[str, Any]:
    """Exports `src` to OUT.pt2 (+ OUT.generation.json, OUT.tokenizer.json); returns a report.
    fuse_linears: Note [Sibling linears fused]; gqa: Note [GQA attention in exports]."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pt2 = out.with_name(out.name + ".pt2")
    model = src.model.to(device=device, dtype=dtype)
    if src.family == "gptfast":
        model.reset_caches()
    options, missing = generation_options(device, extra_options)
    if missing:
        print(f"warning: torch {torch.__version__} lacks inductor options {missing}", file=sys.stderr)
    t0 = time.perf_counter()
    if src.kind == "encoder_decoder":
        graphs = whisper_graphs(model, max_cache_len, device=device)
    elif src.family == "gptfast":
        graphs = gptfast_graphs(model, max_cache_len, max_prefill_len, device=device)
    else:
        graphs = hf_decoder_graphs(model, max_cache_len, max_prefill_len, device=device, gqa=gqa)
    t1 = time.perf_counter()
    vocab = _vocab_size(src)
    records = {g.name: generation_record(src, g, max_cache_len, vocab, dtype) for g in graphs}
    files = {}
    with _fp32_exact(dtype):
        for g in graphs:
            files[g.name] = compile_graph(g, options, records[g.name], fuse_linears)
            # What a compile leaves (the graph module with its fused weights, inductor's graphs)
            # is held in reference cycles that only the collector frees, and tensors never
            # trigger it: a second 1B export in one process began 11 GB above the first.
            gc.collect()
    from torch._inductor.package import package_aoti

    if pt2.exists():
        pt2.unlink()
    package_aoti(str(pt2), files)
    t2 = time.perf_counter()

    per_graph = ("inputs", "min_prefill_len", "max_prefill_len", "fused_linears")
    shared = {k: v for k, v in records["decode"].items() if k != "graph" and k not in per_graph}
    shared["graphs"] = {name: {k: r[k] for k in per_graph if k in r}
                        for name, r in records.items()}
    sidecar = out.with_name(out.name + ".generation.json")
    sidecar.write_text(json.dumps(shared, indent=1) + "\n")
    tokenizer = None
    if src.tokenizer_json is not None:
        tokenizer = out.with_name(out.name + ".tokenizer.json")
        shutil.copyfile(src.tokenizer_json, tokenizer)
    report = {
        "package": str(pt2), "generation_json": str(sidecar), "tokenizer_json": str(tokenizer) if tokenizer else None,
        "torch_version": torch.__version__, "device": device, "dtype": str(dtype).removeprefix("torch."),
        "options": {k: v for k, v in options.items() if k != "aot_inductor.metadata"},
        "missing_options": missing, "export_s": round(t1 - t0, 1), "compile_s": round(t2 - t1, 1),
        "records": records, "graphs": graph_sizes(pt2), "bytes": pt2.stat().st_size,
    }
    if torch.device(device).type == "cpu":
        report["cpu_inference"] = aotrt_export.cpu_inference(options)
    return report


@contextlib.contextmanager
def _fp32_exact(dtype: torch.dtype):
    """TF32 off for float32 exports (inductor reads the flags for matmuls it generates)."""
    if dtype != torch.float32:
        yield
        return
    from . import zoo

    with zoo.exact_fp32():
        yield


def read_generation_records(pt2: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """graph -> its "aotrt.generation" record, read from each model folder's metadata."""
    records = {}
    with zipfile.ZipFile(pt2) as zf:
        for name in zf.namelist():
            if name.endswith(".wrapper_metadata.json") and "/data/aotinductor/" in "/" + name:
                graph = name.split("data/aotinductor/")[1].split("/")[0]
                meta = json.loads(zf.read(name))
                if GENERATION_KEY in meta:
                    records[graph] = json.loads(meta[GENERATION_KEY])
    return records


def graph_sizes(pt2: str | os.PathLike) -> dict[str, dict[str, int]]:
    """graph -> bytes of its .so and weights blob (uncompressed)."""
    sizes: dict[str, dict[str, int]] = {}
    with zipfile.ZipFile(pt2) as zf:
        for info in zf.infolist():
            if "data/aotinductor/" not in info.filename:
                continue
            graph = info.filename.split("data/aotinductor/")[1].split("/")[0]
            entry = sizes.setdefault(graph, {"so": 0, "weights": 0, "other": 0})
            kind = "so" if info.filename.endswith(".so") else "weights" if info.filename.endswith(".blob") else "other"
            entry[kind] += info.file_size
    return sizes


def summarize(report: dict[str, Any]) -> str:
    rec = report["records"]["decode"]
    lines = [f"== {report['package']} ({report['bytes'] / 2**20:.1f} MiB)",
             f"   {rec['kind']} from {rec['source']}: {report['dtype']} on {report['device']}, "
             f"cache {rec['max_cache_len']}, vocab {rec['vocab_size']}, torch {report['torch_version']}, "
             f"export {report['export_s']} s + compile {report['compile_s']} s",
             f"   inductor options: {json.dumps(report['options'], sort_keys=True)}"]
    if report.get("cpu_inference"):
        lines.append(f"   CPU export: {report['cpu_inference']} (Note [Generation inductor options])")
    for name, r in report["records"].items():
        size = report["graphs"].get(name, {})
        extra = f", {r['min_prefill_len']} to {r['max_prefill_len']} tokens" if "max_prefill_len" in r else ""
        if "fused_linears" in r:
            extra += f"; {len(r['fused_linears'])} fused linear groups"
        lines.append(f"   graph {name}: inputs {r['inputs']}{extra}; .so {size.get('so', 0) / 2**20:.2f} MiB, "
                     f"weights {size.get('weights', 0) / 2**20:.2f} MiB")
    lines.append(f"   eos {rec['eos_token_ids']}, bos {rec['bos_token_id']}, pad {rec['pad_token_id']}"
                 + (f", decoder prefix {rec['decoder_start_token_ids']}" if "decoder_start_token_ids" in rec else ""))
    lines.append(f"   {report['generation_json']}" + (f", {report['tokenizer_json']}" if report['tokenizer_json'] else ""))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aotrt_tools.llm",
                                     description="Export a language model or Whisper to an aotrt generation package.")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="export prefill/decode (or encoder/decode) graphs into one .pt2")
    src = ex.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help=f"Hugging Face folder, config.json, or one of {sorted(llm_models.TINY)}")
    src.add_argument("--factory", help="module:function returning a model (transformers or gpt-fast-style)")
    ex.add_argument("--out", required=True, help="DIR/NAME: writes NAME.pt2, NAME.generation.json[, NAME.tokenizer.json]")
    ex.add_argument("--max-cache-len", type=int, required=True)
    ex.add_argument("--max-prefill-len", type=int, default=None, help="default: min(cache length, 128)")
    ex.add_argument("--dtype", choices=sorted(_DTYPES), default="float32")
    ex.add_argument("--device", default="cpu")
    ex.add_argument("--language", help="Whisper: the language of the forced prefix (e.g. en)")
    ex.add_argument("--option", action="append", type=aotrt_export._parse_option, default=[],
                    help="extra inductor option key=value (JSON value), e.g. freezing=false")
    ex.add_argument("--no-fuse-linears", dest="fuse_linears", action="store_false",
                    help="keep sibling linears (q/k/v, gate/up) apart, for A/B runs (Note [Sibling linears fused])")
    ex.add_argument("--no-gqa-attention", dest="gqa", action="store_false",
                    help="attend through transformers' SDPA (repeat_kv), for A/B runs (Note [GQA attention in exports])")
    ex.add_argument("--json", action="store_true", help="print the full report as JSON")
    args = parser.parse_args(argv)

    prefill = args.max_prefill_len or min(args.max_cache_len, 128)
    try:
        src_ = load_source(args.model, args.factory, args.max_cache_len, args.language)
        report = export_generation(src_, args.out, args.max_cache_len, prefill, _DTYPES[args.dtype], args.device,
                                   dict(args.option) or None, args.fuse_linears, args.gqa)
    except Unservable as e:  # what the user asked for cannot be exported: say so, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1, default=str) if args.json else summarize(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
