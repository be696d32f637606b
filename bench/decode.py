#!/usr/bin/env python3
"""Decode benchmark: LLaMA-shaped decoders, aotrt against torch eager and torch.compile.

    python3 bench/decode.py --device cuda --shapes 1b --dtypes bf16 --batches 1 --caches 1024 \\
        --aotrt build-gpu/aotrt --out $OUT
    python3 bench/decode.py --device cpu --shapes 1b --dtypes fp32,bf16,int8,int4 --batches 1 \\
        --caches 1024 --prompt-len 32 --new-tokens 16 --aotrt build/aotrt --out bench/results

Models (Note [Decode bench models]): Hugging Face's LlamaForCausalLM built from a config with
random weights (seeded), directly on the device in its dtype; shapes `1b` (TinyLlama-1.1B:
hidden 2048, 22 layers, 32 heads, 4 KV heads, intermediate 5632, vocab 32000), `3b`
(Llama-3.2-3B: 3072, 28, 24, 8, 8192, 128256), `8b` (Llama-3-8B: 4096, 32, 32, 8, 14336,
128256), and `tiny` (256, 2 layers: a smoke test). Dtypes: `bf16`, `fp32`, and weight-only
`int8` (per-channel, aten._weight_int8pack_mm) and `int4` (groups of 128, tinygemm's layout,
aten._weight_int4pack_mm on CUDA and _weight_int4pack_mm_for_cpu on the CPU) with bfloat16
activations, or float32 ones as `int8-fp32` / `int4-fp32` (Note [Decode bench quantization]).

Per (shape, dtype) the model is built once; per (batch, cache) it is wrapped by transformers'
TorchExportableModuleForDecoderOnlyLM (static cache of `cache` positions) and exported once by
torch's own flow (torch.export, aoti_compile_and_package with aot_inductor.link_libtorch=False,
plus cpp.vec_isa_ok on the CPU: README, "Using it"): a one-token decode graph, so aotrt feeds the
prompt token by token. Contenders, alternated in --rounds rounds (the order rotates each round):
  eager    the wrapper's module (TorchExportableModuleWithStaticCache), under no_grad
  compile  torch.compile of the same module, fullgraph, mode="reduce-overhead" on CUDA (CUDA
           graphs), the default mode on the CPU; dynamic=False (a graph for the prompt's
           shape and one for a decode step), compiled before round 1 (its time is printed)
  aotrt    `aotrt generate PKG --prompt-ids ... --warmup 1 --json` (batch 1: TTFT and inter-token times,
           sampling on the device, one step queued ahead) or `aotrt bench PKG` on the decode
           step at position --prompt-len (batch > 1: aotrt's generator decodes one sequence)
  aotrt[S] the same on a package exported with the inductor option set S (--export-options);
           aotrt[prefill]: aotrt's generation export (prefill and decode graphs, batch 1), whose
           prompt runs through the prefill graph
What each contender does per round (Note [Decode bench timing]): a --prompt-len prompt (random
token ids, the same for everyone), then --new-tokens greedy steps. ms/step p50 is the median step
of the round, the table shows the median over rounds; tokens/s = batch * 1000 / ms per step;
TTFT = from the call to the first new token on the host.

Bytes read per step (Note [Decode bench bytes]): every weight byte (quantized weights with their
scales and zeros), the embedding rows the step looks up, and the K/V entries of the positions
the step attends to (layers x 2 x batch x KV heads x head dim x (position + 1), at the mean
position of the timed steps). Hugging Face's static cache hands attention the whole cache and a
mask, so eager and torch.compile read all `cache` positions (and repeat_kv copies them per query
head); that figure is the column `GB whole cache`; the fraction of bandwidth uses the first.
Bandwidth: the card's read bandwidth measured here (a sum over a 4 GiB buffer, CUDA events; a
device-to-device copy is printed beside it) and the datasheet's (H100 3.35 TB/s, H200 4.8 TB/s).

--profile: Nsight Compute's kernel table of one aotrt decode step (`aotrt bench --profiler-range`)
and one torch.compile step (the same module, between cudaProfilerStart/Stop in a child process):
kernels by name, time, share, DRAM bytes read per second (bench/kernel_times.py's ncu options).
--attention gqa: every contender's model attends through SDPA with enable_gqa on the unrepeated
cache (aotrt_tools.llm's Note [GQA attention in exports]) instead of transformers' repeat_kv.
--export-options default,max_autotune,...: aotrt on packages exported with each option set,
timed in the same rounds; the table says which won (issue 29, item 5).

Estimated time of a slice on an H100 (each config = one shape x dtype x batch x cache; export
and torch.compile dominate; `--dry-run` prints the plan and this estimate without running):
  1b  bf16 b1 c1024, eager+compile+aotrt, 3 rounds          ~ 4 min
  1b  int8,int4 b1 c1024, all contenders                     ~ 7 min (2 exports, 2 compiles)
  3b  bf16 b1 c1024, all contenders                          ~ 5 min
  8b  bf16 b1 c1024, all contenders                          ~ 6.5 min (16 GB package)
  8b  int4 b1 c1024, all contenders                          ~ 5 min
  1b  bf16 b1,8 c1024,8192 (4 configs), all contenders       ~ 9+ min: split it
  1b  bf16 b1 c1024 --profile                                ~ +2.5 min
  1b  bf16 b1 c1024 --contenders aotrt --export-options default,max_autotune,coordinate_descent,both
                                                              ~ 7 min (four exports)
These are estimates from the reference points (1B step 2.1 ms aotrt / 17 ms eager on an H100,
exports ~1.5-3 min), not measurements; --time-limit skips a config that would not fit.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import inspect
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
T0 = time.perf_counter()

# Note [Decode bench models]
# LlamaConfig fields per shape: hidden, layers, heads, KV heads, intermediate, vocab, rope theta.
# Untied embeddings everywhere (Llama-3.2-3B ties them; a step reads the output projection whole
# either way and one embedding row per sequence, so the bytes read per step are the same).
SHAPES: dict[str, dict[str, Any]] = {
    "tiny": dict(hidden=256, layers=2, heads=8, kv_heads=2, inter=768, vocab=32000, theta=10000.0),
    "1b": dict(hidden=2048, layers=22, heads=32, kv_heads=4, inter=5632, vocab=32000, theta=10000.0),
    "3b": dict(hidden=3072, layers=28, heads=24, kv_heads=8, inter=8192, vocab=128256, theta=500000.0),
    "8b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, inter=14336, vocab=128256, theta=500000.0),
}
# name: (activation dtype, weight quantization or None)
DTYPES: dict[str, tuple[str, str | None]] = {
    "bf16": ("bfloat16", None), "fp32": ("float32", None),
    "int8": ("bfloat16", "int8"), "int4": ("bfloat16", "int4"),
    "int8-fp32": ("float32", "int8"), "int4-fp32": ("float32", "int4"),
}
INT4_GROUP = 128
# Inductor option sets for --export-options (each on top of the flow's own options).
OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "max_autotune": {"max_autotune": True},
    "coordinate_descent": {"coordinate_descent_tuning": True},
    "both": {"max_autotune": True, "coordinate_descent_tuning": True},
    # freezing=True: the weights become constants, so inductor's freezing patterns may fold
    # linears that share an input into one matmul on concatenated weights (gate and up; q, k
    # and v where their shapes agree), fewer launches a layer.
    "freezing": {"freezing": True},
    "freezing_cd": {"freezing": True, "coordinate_descent_tuning": True},
    # Not an option set: aotrt's own generation export (aotrt_tools.llm.export_generation, its
    # options), a prefill graph of up to --prompt-len tokens beside the decode step, so that the
    # prompt runs as one graph (TTFT) instead of token by token. Batch 1 only.
    "prefill": {},
    # The same without fusing sibling linears (Note [Sibling linears fused]): the fusion's share of it.
    "prefill_nofuse": {},
}
# The sets made by aotrt's generation export, and export_generation's arguments for each.
GENERATION_SETS: dict[str, dict[str, Any]] = {"prefill": {}, "prefill_nofuse": {"fuse_linears": False}}
DATASHEET_TBPS = {"H100": 3.35, "H200": 4.8}
CHILD_TIMEOUT_S = 900


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", flush=True)


# --------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------

# Note [Decode bench quantization]
# The GPU machine has no torchao, so the bench quantizes with modules of its own, run alike by
# eager, torch.compile and the export (whose packages call the same ATen ops through their C
# shims): int8 per output channel, symmetric (scale = max |w| / 127), y = _weight_int8pack_mm(x,
# q, scale); int4 in groups of 128 along K, asymmetric as gpt-fast and tinygemm do it (q in
# 0..15, w ~ (q - 8) * scale + zero with zero = min + 8 * scale), packed by
# _convert_weight_to_int4pack (CUDA, innerKTiles 8, from two nibbles a byte) or
# _convert_weight_to_int4pack_for_cpu, scales and zeros as [K / 128, N, 2] in the activation
# dtype. Every nn.Linear is replaced (the output projection too); the embedding stays in the
# activation dtype. On the CPU torchao's PrototypeInt4WeightOnlyConfig lowers to the same
# _weight_int4pack_mm_for_cpu; its Int8WeightOnlyConfig (version 2) lowers to a cast of the whole
# int8 weight and a floating-point mm, not a weight-only kernel, so the int8 rows use the module.


def _int8_module():
    import torch
    from torch import nn

    class Int8Linear(nn.Module):
        def __init__(self, lin: nn.Linear):
            super().__init__()
            w = lin.weight.detach().float()
            scale = w.abs().amax(dim=1).clamp_min(1e-8) / 127
            self.out_features = w.shape[0]
            self.register_buffer("weight", torch.round(w / scale[:, None]).clamp(-128, 127).to(torch.int8))
            self.register_buffer("scales", scale.to(lin.weight.dtype))

        def forward(self, x):
            y = torch.ops.aten._weight_int8pack_mm(x.reshape(-1, x.shape[-1]), self.weight, self.scales)
            if y.dtype != x.dtype:  # an older CUDA ATen returns float32 for bfloat16 A
                y = y.to(x.dtype)
            return y.reshape(*x.shape[:-1], self.out_features)

    return Int8Linear


def _int4_module():
    import torch
    from torch import nn

    class Int4Linear(nn.Module):
        def __init__(self, lin: nn.Linear):
            super().__init__()
            w = lin.weight.detach().float()
            n, k = w.shape
            g = w.reshape(n, k // INT4_GROUP, INT4_GROUP)
            lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
            scale = (hi - lo).clamp_min(1e-6) / 15
            q = ((g - lo) / scale).round().clamp(0, 15).to(torch.int32).reshape(n, k)
            zero = lo + 8 * scale
            sz = torch.cat([scale, zero], dim=-1).transpose(0, 1).contiguous().to(lin.weight.dtype)
            self.cuda_layout = w.is_cuda
            if w.is_cuda:
                nibbles = ((q[:, ::2] << 4) | q[:, 1::2]).to(torch.uint8)
                packed = torch.ops.aten._convert_weight_to_int4pack(nibbles, 8)
            else:
                packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)
            self.out_features = n
            self.register_buffer("weight", packed)
            self.register_buffer("scales_and_zeros", sz)

        def forward(self, x):
            x2 = x.reshape(-1, x.shape[-1])
            if self.cuda_layout:
                y = torch.ops.aten._weight_int4pack_mm(x2, self.weight, INT4_GROUP, self.scales_and_zeros)
            else:
                y = torch.ops.aten._weight_int4pack_mm_for_cpu(x2, self.weight, INT4_GROUP,
                                                               self.scales_and_zeros)
            return y.reshape(*x.shape[:-1], self.out_features)

    return Int4Linear


def quantize(model, how: str) -> None:
    """Every nn.Linear of `model` replaced by its int8 or int4 weight-only module."""
    from torch import nn

    cls = {"int8": _int8_module, "int4": _int4_module}[how]()
    targets = [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    for name, lin in targets:
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        setattr(parent, name.rsplit(".", 1)[-1], cls(lin))
        del lin


def build_model(shape: str, dtype_name: str, device: str, seed: int = 0):
    """LlamaForCausalLM of `shape` with random weights, made on `device` in its dtype."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    s = SHAPES[shape]
    act, quant = DTYPES[dtype_name]
    dtype = getattr(torch, act)
    config = LlamaConfig(hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                         num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"],
                         intermediate_size=s["inter"], vocab_size=s["vocab"],
                         max_position_embeddings=8192, rope_theta=s["theta"],
                         tie_word_embeddings=False)
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device), torch.no_grad():
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    model = model.to(dtype).eval()
    model.generation_config.cache_implementation = "static"
    if quant:
        with torch.no_grad():
            quantize(model, quant)
    return model


def set_attention(model, attention: str) -> None:
    """"hf": transformers' SDPA (repeat_kv under a mask); "gqa": aotrt_tools.llm's SDPA with
    enable_gqa on the unrepeated cache (Note [GQA attention in exports]), for every contender."""
    if attention == "hf":
        model.set_attn_implementation("sdpa")
        return
    sys.path.insert(0, str(REPO / "python"))
    from aotrt_tools import llm

    if llm.use_gqa_attention(model) is None:
        raise ValueError("--attention gqa: the model does not attend through SDPA")


def weights_checksum(model) -> str:
    """A few floats of the weights, to tell a cached package of the same seed from another."""
    import torch

    vals = []
    for _, t in list(model.state_dict().items())[:4] + list(model.state_dict().items())[-2:]:
        vals.append(float(t.flatten()[: 1 << 20].double().sum().item()))
    return hashlib.sha1(json.dumps(vals).encode()).hexdigest()[:16]


def model_fingerprint() -> str:
    """What a cached package depends on in this file: the model, its quantization, the export."""
    src = "".join(inspect.getsource(f) for f in (_int8_module, _int4_module, quantize, build_model,
                                                 export_package))
    src += json.dumps([SHAPES, DTYPES, INT4_GROUP])
    return hashlib.sha1(src.encode()).hexdigest()[:16]


def make_wrapper(model, batch: int, cache: int):
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    return TorchExportableModuleForDecoderOnlyLM(model, batch_size=batch, max_cache_len=cache)


def flow_options(device: str) -> dict[str, Any]:
    """torch's own flow as the README tells a user to run it (vectorized CPU kernels)."""
    opts: dict[str, Any] = {"aot_inductor.link_libtorch": False}
    if device == "cpu":
        opts["cpp.vec_isa_ok"] = True
    return opts


def export_package(wrapper, batch: int, device: str, path: Path, extra: dict[str, Any]) -> None:
    """One decode step (input_ids [batch, 1], cache_position [1]) by torch's own flow."""
    import torch

    ids = torch.zeros(batch, 1, dtype=torch.long, device=device)
    pos = torch.tensor([0], dtype=torch.long, device=device)
    with torch.no_grad():
        ep = wrapper.export(input_ids=ids, cache_position=pos)
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path), inductor_configs={**flow_options(device), **extra})


def export_generation_package(model, cache: int, prompt_len: int, device: str, path: Path,
                              **how: Any) -> None:
    """aotrt[prefill]: the generation export (prefill up to prompt_len tokens, and decode) of the
    same model, in its dtype, with aotrt_tools.llm's options for the device (`how`: more of
    export_generation's arguments)."""
    import torch

    sys.path.insert(0, str(REPO / "python"))
    from aotrt_tools import llm

    dtype = next(p.dtype for p in model.parameters() if p.is_floating_point())
    src = llm.Source(model, "decoder", "hf", "bench/decode.py")
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.cache_implementation = "static"  # as llm.load_source sets it
        model.generation_config.use_cache = True
    with torch.no_grad():
        report = llm.export_generation(src, path.with_suffix(""), cache, max(prompt_len, llm.MIN_PREFILL_LEN),
                                       dtype=dtype, device=device, **how)
    if Path(report["package"]) != path:
        raise RuntimeError(f"generation export wrote {report['package']}, not {path}")


# --------------------------------------------------------------------------------------
# Bytes and bandwidth
# --------------------------------------------------------------------------------------

# Note [Decode bench bytes]: see the module's docstring; the embedding table counts only the
# rows a step looks up, everything else of the model's parameters and buffers whole.
def step_bytes(model, shape: str, batch: int, cache: int, mean_pos: float) -> dict[str, float]:
    import itertools

    s = SHAPES[shape]
    emb = model.get_input_embeddings().weight
    weights = 0
    for _, t in itertools.chain(model.named_parameters(), model.named_buffers()):
        if t is emb:
            weights += batch * emb.shape[1] * emb.element_size()
        else:
            weights += t.numel() * t.element_size()
    head_dim = s["hidden"] // s["heads"]
    per_pos = s["layers"] * 2 * batch * s["kv_heads"] * head_dim * emb.element_size()
    return {"weights": float(weights), "kv_attended": per_pos * (mean_pos + 1), "kv_whole": float(per_pos * cache)}


def measure_bandwidth(device: str, threads: int) -> dict[str, float]:
    """Read bandwidth (a sum over a large buffer) and copy bandwidth (read + written), GB/s."""
    import torch

    if device == "cuda":
        n = 4 << 30
        x = torch.ones(n // 2, dtype=torch.bfloat16, device="cuda")
        y = torch.empty_like(x)
        out = {}
        for what, fn, moved in (("read", lambda: x.sum(dtype=torch.float32), n),
                                ("copy", lambda: y.copy_(x), 2 * n)):
            for _ in range(3):
                fn()
            times = []
            for _ in range(10):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) / 1e3)
            out[what] = moved / min(times) / 1e9
        del x, y
        torch.cuda.empty_cache()
        return out
    torch.set_num_threads(threads)
    n = 1 << 30
    x = torch.ones(n // 4, dtype=torch.float32)
    y = torch.empty_like(x)
    out = {}
    for what, fn, moved in (("read", lambda: x.sum(), n), ("copy", lambda: y.copy_(x), 2 * n)):
        fn()
        times = []
        for _ in range(5):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        out[what] = moved / min(times) / 1e9
    return out


def card_name(device: str) -> str:
    if device == "cuda":
        try:
            res = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            if res.returncode == 0 and res.stdout.strip():
                return res.stdout.strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
        import torch
        return torch.cuda.get_device_name()
    model = platform.processor() or "cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical cores"


def datasheet_tbps(card: str) -> float | None:
    for key, v in DATASHEET_TBPS.items():
        if key in card:
            return v
    return None


# --------------------------------------------------------------------------------------
# Contenders
# --------------------------------------------------------------------------------------

# Note [Decode bench timing]
# torch (eager, compile): the prompt in one call (a [batch, prompt] forward that fills the
# cache), its last logits' argmax as the first token, then one call per token at the next
# position, the argmax fed back on the device: no host read per step, so the GPU never waits
# for Python. On CUDA a CUDA event is recorded after each step; the step times are the
# intervals between them (the device's pace, which the host's launches set when they are the
# slower side). On the CPU, wall time per step. torch.compiler.cudagraph_mark_step_begin()
# precedes each reduce-overhead call (each step's logits are dead once the argmax is taken).
# aotrt at batch 1: `aotrt generate`'s inter-token times (Note [The decode loop]: sampling on
# the device, one step queued ahead, a host wait per token for its 8 bytes) and its TTFT, which
# includes feeding the prompt token by token (torch's flow exports a one-token step), of the
# call after one warm-up call in the same process (Note [Warm TTFT]; eager and torch.compile are
# timed after their warm-up too; the first call's TTFT is kept beside it). aotrt at
# batch > 1: `aotrt bench` of the decode step at position --prompt-len (the same inputs each
# run, a stream sync after each: a slightly pessimistic step), no TTFT and no tokens.


class TorchContender:
    def __init__(self, name: str, module, device: str, compiled: bool):
        import torch

        self.name, self.device, self.compiled = name, device, compiled
        self.module = module
        self.fn = module
        if compiled:
            mode = "reduce-overhead" if device == "cuda" else None
            self.fn = torch.compile(module, mode=mode, fullgraph=True, dynamic=False)
        self.graphs = compiled and device == "cuda"

    def _call(self, ids, pos):
        import torch

        if self.graphs:
            torch.compiler.cudagraph_mark_step_begin()
        return self.fn(input_ids=ids, cache_position=pos)

    def generate(self, prompt, positions, n_steps: int) -> dict[str, Any]:
        import torch

        cuda = self.device == "cuda"
        plen = prompt.shape[1]
        with torch.no_grad():
            if cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            logits = self._call(prompt, positions[:plen])
            tok = logits[:, -1, :].argmax(-1, keepdim=True)
            del logits
            first = tok.cpu()
            ttft = (time.perf_counter() - t0) * 1e3
            toks = [tok]
            step_ms: list[float] = []
            if cuda:
                events = [torch.cuda.Event(enable_timing=True) for _ in range(n_steps + 1)]
                events[0].record()
            t_steps = time.perf_counter()
            for k in range(n_steps):
                t = time.perf_counter()
                logits = self._call(tok, positions[plen + k: plen + k + 1])
                tok = logits[:, -1, :].argmax(-1, keepdim=True)
                del logits
                toks.append(tok)
                if cuda:
                    events[k + 1].record()
                else:
                    step_ms.append((time.perf_counter() - t) * 1e3)
            if cuda:
                torch.cuda.synchronize()
                step_ms = [events[k].elapsed_time(events[k + 1]) for k in range(n_steps)]
            wall = time.perf_counter() - t_steps
            tokens = torch.cat(toks, dim=1).cpu()
        assert torch.equal(tokens[:, :1], first)
        return {"ttft_ms": ttft, "step_ms": step_ms, "steps_wall_s": wall, "tokens": tokens.tolist()}


def _aotrt_json(cmd: list[str], env: dict[str, str]) -> tuple[dict[str, Any], float]:
    """Runs an aotrt command with --json: (its JSON object, the process's wall seconds)."""
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise RuntimeError(f"aotrt {cmd[1]} failed ({res.returncode}): {res.stderr.strip()[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1]), wall


def aotrt_generate(aotrt: str, pkg: Path, prompt: list[int], n_steps: int, env: dict[str, str]) -> dict[str, Any]:
    cmd = [aotrt, "generate", str(pkg), "--prompt-ids", ",".join(str(t) for t in prompt),
           "--max-new-tokens", str(n_steps + 1), "--warmup", "1", "--json"]
    rep, wall = _aotrt_json(cmd, env)
    return {"ttft_ms": rep["ttft_ms"], "ttft_first_call_ms": rep.get("first_call_ttft_ms"), "step_p50_ms": rep["inter_token_ms"]["p50"],
            "step_ms_summary": rep["inter_token_ms"], "tokens": [rep["tokens"]], "process_s": wall,
            "tokens_per_s_reported": rep["tokens_per_s"]}


def aotrt_bench(aotrt: str, pkg: Path, inputs: list[Path], n_steps: int, env: dict[str, str],
                extra: list[str] | None = None) -> dict[str, Any]:
    cmd = [aotrt, "bench", str(pkg), "--warmup", "10", "--iters", str(n_steps), "--json", *(extra or [])]
    for f in inputs:
        cmd += ["-i", str(f)]
    rep, wall = _aotrt_json(cmd, env)
    return {"step_p50_ms": rep["latency_us"]["p50"] / 1e3, "step_ms_summary": rep["latency_us"],
            "load_s": rep.get("load_s"), "process_s": wall}


def aotrt_shim_profile(aotrt: str, pkg: Path, inputs: list[Path], env: dict[str, str]) -> str:
    """`aotrt bench --profile` of the decode step: host time per shim call (the CPU's "why")."""
    cmd = [aotrt, "bench", str(pkg), "--warmup", "3", "--iters", "10", "--profile"]
    for f in inputs:
        cmd += ["-i", str(f)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env)
    text = (res.stdout + res.stderr).splitlines()
    start = next((i for i, ln in enumerate(text) if "shim profile" in ln), None)
    if res.returncode != 0 or start is None:
        return f"aotrt bench --profile failed ({res.returncode}): {(res.stdout + res.stderr)[-600:]}"
    latency = [ln.strip() for ln in text if ln.strip().startswith("latency:")]
    table = [ln for ln in text[start:] if ln.strip()]
    rows = [ln for ln in table[2:] if not ln.strip().startswith(("all shims", "(rows", "run()"))]
    tail = [ln for ln in table if ln.strip().startswith(("all shims", "run()"))]
    return "\n".join(latency + table[:2] + rows[:8] + tail)


def first_divergence(a: list[list[int]], b: list[list[int]]) -> int | None:
    """The first step (0: the token after the prompt) where any sequence differs; None if none
    differs over the common length."""
    first = None
    for ra, rb in zip(a, b):
        for i, (x, y) in enumerate(zip(ra, rb)):
            if x != y:
                first = i if first is None else min(first, i)
                break
    return first


# --------------------------------------------------------------------------------------
# One configuration
# --------------------------------------------------------------------------------------


def cached_export(args, model, wrapper, shape, dtype_name, batch, cache, opt_set: str,
                  checksum: str, attention: str) -> tuple[Path, float | None]:
    """The package for this config and option set, exported when missing or stale; returns
    (path, export seconds or None when reused)."""
    import torch
    import transformers

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    stem = f"{shape}-{dtype_name}-b{batch}-c{cache}-{attention}-{opt_set}"
    pkg, meta = work / f"{stem}.pt2", work / f"{stem}.json"
    want = {"fingerprint": model_fingerprint(), "torch": torch.__version__,
            "transformers": transformers.__version__, "options": {**flow_options(args.device),
                                                                  **OPTION_SETS[opt_set]},
            "checksum": checksum, "seed": args.seed, "attention": attention}
    try:
        if json.loads(meta.read_text()) == want and pkg.exists():
            log(f"  reusing {pkg}")
            return pkg, None
    except (OSError, ValueError):
        pass
    log(f"  export {stem} (options {want['options']}) ...")
    t = time.perf_counter()
    if opt_set in GENERATION_SETS:
        export_generation_package(model, cache, args.prompt_len, args.device, pkg, gqa=attention == "gqa",
                                  **GENERATION_SETS[opt_set])
    else:
        export_package(wrapper, batch, args.device, pkg, OPTION_SETS[opt_set])
    secs = time.perf_counter() - t
    import gc
    gc.collect()  # the export's reference cycles (graph modules, weights) before the next one
    if args.device == "cuda":  # what the compile's autotuning left cached goes back for aotrt
        torch.cuda.empty_cache()
    meta.write_text(json.dumps(want))
    log(f"  exported in {secs:.0f} s: {pkg.stat().st_size / 2**30:.2f} GiB")
    return pkg, secs


def run_config(args, model, shape, dtype_name, batch, cache, checksum, publish,
               attention: str = "hf") -> dict[str, Any]:
    """Times one config; publish(row) writes the tables (after the timing, again after a profile,
    so that a call cut short by its limit keeps the timing)."""
    import numpy as np
    import torch

    device = args.device
    row: dict[str, Any] = {"shape": shape, "dtype": dtype_name, "batch": batch, "cache": cache,
                           "attention": attention, "prompt_len": args.prompt_len, "new_tokens": args.new_tokens}
    plen, n = args.prompt_len, args.new_tokens
    if plen + n + 1 > cache:
        raise ValueError(f"prompt {plen} + {n} new tokens do not fit a cache of {cache}")
    wrapper = make_wrapper(model, batch, cache)
    module = wrapper.model
    row["bytes"] = step_bytes(model, shape, batch, cache, plen + (n - 1) / 2)

    contenders = list(args.contenders)
    aotrt_sets = []
    if "aotrt" in contenders:
        aotrt_sets = args.export_options or ["default"]
        contenders = [c for c in contenders if c != "aotrt"] + \
            [aotrt_contender(s) for s in aotrt_sets]
    packages: dict[str, Path] = {}
    row["export_s"] = {}
    if batch != 1 and any(s in GENERATION_SETS for s in aotrt_sets):
        raise ValueError("--export-options prefill serves batch 1 only (aotrt's generator decodes one sequence)")
    for s in aotrt_sets:
        name = aotrt_contender(s)
        packages[name], row["export_s"][name] = cached_export(args, model, wrapper, shape, dtype_name, batch,
                                                              cache, s, checksum, attention)

    # --aotrt-env: the default package again, under other environment variables (a kernel
    # path switched off), alternated with the rest.
    env_of: dict[str, dict[str, str]] = {}
    if "aotrt" in packages:
        for label, extra in args.aotrt_env:
            name = f"aotrt<{label}>"
            contenders.append(name)
            packages[name] = packages["aotrt"]
            row["export_s"][name] = row["export_s"]["aotrt"]
            env_of[name] = extra

    g = torch.Generator().manual_seed(args.seed + 1)
    prompt_cpu = torch.randint(0, SHAPES[shape]["vocab"], (batch, plen), generator=g)
    prompt = prompt_cpu.to(device)
    positions = torch.arange(cache, device=device)
    work = Path(args.work)
    ids_file, pos_file = work / f"ids_b{batch}.npy", work / f"pos_{plen}.npy"
    np.save(ids_file, prompt_cpu[:, -1:].numpy().astype(np.int64))
    np.save(pos_file, np.array([plen], dtype=np.int64))
    env = dict(os.environ)
    if device == "cpu":
        env["OMP_NUM_THREADS"] = str(args.threads)

    torch_runs: dict[str, TorchContender] = {}
    row["compile_s"] = None
    for c in contenders:
        if c in ("eager", "compile"):
            torch_runs[c] = TorchContender(c, module, device, compiled=(c == "compile"))
    if "compile" in torch_runs:
        t = time.perf_counter()
        # The first call of each graph compiles it (and warms it up under reduce-overhead), the
        # second records its CUDA graph; rounds then replay.
        torch_runs["compile"].generate(prompt, positions, 3)
        torch_runs["compile"].generate(prompt, positions, 3)
        row["compile_s"] = time.perf_counter() - t
        log(f"  torch.compile warm-up (prompt and decode graphs): {row['compile_s']:.0f} s")
    if "eager" in torch_runs:
        torch_runs["eager"].generate(prompt, positions, 2)

    results: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    for r in range(args.rounds):
        order = contenders[r % len(contenders):] + contenders[: r % len(contenders)]
        for c in order:
            try:
                if c in torch_runs:
                    res = torch_runs[c].generate(prompt, positions, n)
                    res["step_p50_ms"] = statistics.median(res["step_ms"])
                    del res["step_ms"]
                elif batch == 1:
                    res = aotrt_generate(args.aotrt, packages[c], prompt_cpu[0].tolist(), n,
                                         {**env, **env_of.get(c, {})})
                else:
                    res = aotrt_bench(args.aotrt, packages[c], [ids_file, pos_file], n,
                                      {**env, **env_of.get(c, {})})
            except Exception as e:  # one contender's failure is a row, not the end of the run
                log(f"  round {r + 1} {c}: FAILED {type(e).__name__}: {str(e)[:800]}")
                res = {"error": f"{type(e).__name__}: {str(e)[-600:]}"}
            results[c].append(res)
            if "step_p50_ms" in res:
                log(f"  round {r + 1} {c}: {res['step_p50_ms']:.3f} ms/step"
                    + (f", TTFT {res['ttft_ms']:.1f} ms" if res.get("ttft_ms") is not None else ""))
    row["contenders"] = {}
    for c, runs in results.items():
        ok = [x for x in runs if "step_p50_ms" in x]
        entry: dict[str, Any] = {"rounds": runs}
        if ok:
            entry["step_p50_ms"] = statistics.median(x["step_p50_ms"] for x in ok)
            entry["tokens_per_s"] = batch * 1e3 / entry["step_p50_ms"]
            ttfts = [x["ttft_ms"] for x in ok if x.get("ttft_ms") is not None]
            entry["ttft_ms"] = statistics.median(ttfts) if ttfts else None
            firsts = [x["ttft_first_call_ms"] for x in ok if x.get("ttft_first_call_ms") is not None]
            if firsts:
                entry["ttft_first_call_ms"] = statistics.median(firsts)
            entry["tokens"] = next((x["tokens"] for x in ok if "tokens" in x), None)
        else:
            entry["error"] = runs[0].get("error") if runs else "not run"
        row["contenders"][c] = entry
    ref = row["contenders"].get("eager", {}).get("tokens")
    for c, entry in row["contenders"].items():
        if c != "eager" and ref and entry.get("tokens"):
            entry["diverges_from_eager_at"] = first_divergence(ref, entry["tokens"])
            entry["compared_tokens"] = min(len(ref[0]), len(entry["tokens"][0]))
    comp = row["contenders"].get("compile", {}).get("tokens")
    for c, entry in row["contenders"].items():
        if c.startswith("aotrt") and comp and entry.get("tokens"):
            entry["diverges_from_compile_at"] = first_divergence(comp, entry["tokens"])
    if len(aotrt_sets) > 1:
        timed = {c: row["contenders"][c]["step_p50_ms"] for c in packages if "step_p50_ms" in row["contenders"][c]}
        if timed:
            row["export_options_winner"] = min(timed, key=timed.get)

    a, c = row["contenders"].get("aotrt", {}), row["contenders"].get("compile", {})
    if device == "cpu" and "aotrt" in packages and (args.profile or (
            "step_p50_ms" in a and "step_p50_ms" in c and a["step_p50_ms"] > c["step_p50_ms"])):
        row["shim_profile"] = aotrt_shim_profile(args.aotrt, packages["aotrt"], [ids_file, pos_file], env)
    if "compile" in torch_runs:
        torch._dynamo.reset()
    del torch_runs, wrapper, module
    if device == "cuda":
        torch.cuda.empty_cache()
    publish(row)
    if args.profile and device == "cuda":
        row["profile"] = profile_config(args, shape, dtype_name, batch, cache, packages,
                                        [ids_file, pos_file], row)
        publish(row)
    if not args.keep_packages:
        for p in set(packages.values()):
            p.unlink(missing_ok=True)
            p.with_suffix(".json").unlink(missing_ok=True)
    return row


# --------------------------------------------------------------------------------------
# --profile: Nsight Compute kernel tables
# --------------------------------------------------------------------------------------

PROFILE_METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum"]


def child_profile_compile(args) -> int:
    """In a process under ncu: one torch.compile decode step between cudaProfilerStart/Stop."""
    import torch

    shape, dtype_name, batch, cache = args.shapes[0], args.dtypes[0], args.batches[0], args.caches[0]
    model = build_model(shape, dtype_name, "cuda", args.seed)
    set_attention(model, args.attention[0])
    wrapper = make_wrapper(model, batch, cache)
    c = TorchContender("compile", wrapper.model, "cuda", compiled=True)
    g = torch.Generator().manual_seed(args.seed + 1)
    prompt = torch.randint(0, SHAPES[shape]["vocab"], (batch, args.prompt_len), generator=g).cuda()
    positions = torch.arange(cache, device="cuda")
    c.generate(prompt, positions, 3)
    c.generate(prompt, positions, 3)
    tok = prompt[:, -1:].contiguous()
    with torch.no_grad():
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        c._call(tok, positions[args.prompt_len: args.prompt_len + 1])
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


def kernel_table(kernels: list[tuple[str, dict[str, float]]], top: int) -> dict[str, Any]:
    from collections import defaultdict

    # per name: launches, ns, DRAM bytes read, ns of the launches whose bytes ncu gave
    acc: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for name, m in kernels:
        a = acc[name[:100]]
        a[0] += 1
        a[1] += m.get("gpu__time_duration.sum", 0.0)
        if "dram__bytes_read.sum" in m:
            a[2] += m["dram__bytes_read.sum"]
            a[3] += m.get("gpu__time_duration.sum", 0.0)
    total_ns = sum(a[1] for a in acc.values())
    total_bytes = sum(a[2] for a in acc.values())
    rows = sorted(acc.items(), key=lambda kv: -kv[1][1])
    return {"launches": sum(a[0] for a in acc.values()), "time_us": total_ns / 1e3,
            "dram_read_bytes": total_bytes if any(a[3] for a in acc.values()) else None,
            "top": [{"kernel": k, "launches": a[0], "us": a[1] / 1e3,
                     "share": a[1] / total_ns if total_ns else 0.0,
                     "dram_read_gbps": (a[2] / a[3]) if a[3] else None}  # bytes / ns
                    for k, a in rows[:top]]}


def aotrt_contender(opt_set: str) -> str:
    """The contender timing the package of an --export-options set: aotrt, aotrt[S]."""
    return "aotrt" if opt_set == "default" else f"aotrt[{opt_set}]"


def profiled_aotrt(row: dict[str, Any], packages: dict[str, Path]) -> str | None:
    """The aotrt contender whose decode step --profile records: the fastest one timed in this
    config on a package of its own (aotrt, aotrt[S]; not aotrt<env>, whose environment the
    profile would not carry)."""
    timed = {c: e["step_p50_ms"] for c, e in row["contenders"].items()
             if c in packages and c.startswith("aotrt") and "<" not in c and "step_p50_ms" in e}
    return min(timed, key=timed.get) if timed else None


def profile_config(args, shape, dtype_name, batch, cache, packages: dict[str, Path], inputs: list[Path],
                   row: dict[str, Any]) -> dict[str, Any]:
    """ncu kernel tables of one decode step, keyed by contender (an aotrt one, "compile")."""
    import kernel_times

    out: dict[str, Any] = {}
    work = Path(args.work)
    sides: dict[str, list[str]] = {}
    if "aotrt" in args.profile_sides:
        name = profiled_aotrt(row, packages)
        if name is None:
            out["aotrt"] = {"error": "no aotrt contender was timed in this config"}
        else:
            # A generation package (aotrt[prefill]) holds prefill and decode graphs: its decode
            # graph takes the same inputs as torch's one-token step.
            cmd = [args.aotrt, "bench", str(packages[name]), "--warmup", "5", "--iters", "1", "--profiler-range"]
            if name in {aotrt_contender(s) for s in GENERATION_SETS}:
                cmd += ["--model-name", "decode"]
            for f in inputs:
                cmd += ["-i", str(f)]
            sides[name] = cmd
    if "compile" in args.profile_sides:
        sides["compile"] = [sys.executable, str(Path(__file__).resolve()), "--child-profile-compile",
                                  "--device", "cuda", "--shapes", shape, "--dtypes", dtype_name,
                                  "--batches", str(batch), "--caches", str(cache), "--prompt-len",
                                  str(args.prompt_len), "--seed", str(args.seed),
                                  "--attention", row.get("attention", "hf")]
    for side, cmd in sides.items():
        log(f"  ncu: one {side} decode step ...")
        t = time.perf_counter()
        ncu_log = work / f"ncu_{side.replace('.', '_')}_{shape}_{dtype_name}_b{batch}_c{cache}.log"
        left = CHILD_TIMEOUT_S if args.time_limit is None else args.time_limit - (time.perf_counter() - T0)
        try:
            if left < 30:
                raise RuntimeError(f"not run: {left:.0f} s left of --time-limit")
            try:
                kernels = kernel_times.run_ncu_metrics(cmd, ncu_log, PROFILE_METRICS, timeout=left)
            except RuntimeError:
                log("  ncu with DRAM bytes failed; timing only")
                left = CHILD_TIMEOUT_S if args.time_limit is None else args.time_limit - (time.perf_counter() - T0)
                kernels = kernel_times.run_ncu_metrics(cmd, ncu_log, PROFILE_METRICS[:1], timeout=max(left, 1))
            out[side] = kernel_table(kernels, args.profile_top)
            out[side]["log"] = str(ncu_log)
        except Exception as e:
            out[side] = {"error": f"{type(e).__name__}: {e}"}
        log(f"  ncu {side}: {time.perf_counter() - t:.0f} s")
    return out


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


def fmt(v, spec: str, none: str = "-") -> str:
    return none if v is None else format(v, spec)


def dtype_label(row: dict[str, Any]) -> str:
    """The dtype cell: the dtype, and the attention where it is not transformers' own."""
    att = row.get("attention", "hf")
    return row["dtype"] if att == "hf" else f"{row['dtype']} ({att} attention)"


def render(report: dict[str, Any]) -> str:
    bw = report["bandwidth_gbps"]
    ds = report.get("datasheet_tbps")
    lines = [f"# Decode benchmark: {report['device']} ({report['date']})", "",
             f"Command: `{report['command']}`", "",
             f"Card: {report['card']}; torch {report['torch']}, transformers {report['transformers']}; "
             f"aotrt {report['aotrt_commit']}; {report['threads_note']}", "",
             f"Bandwidth measured here: read {bw['read']:.0f} GB/s (a sum over a large buffer), copy "
             f"{bw['copy']:.0f} GB/s (bytes read + written); datasheet: "
             + (f"{ds * 1000:.0f} GB/s." if ds else "-."), "",
             f"Prompt {report['prompt_len']} tokens (random ids), then {report['new_tokens']} greedy "
             f"steps; {report['rounds']} rounds, contenders alternated (order rotated each round); "
             "median over rounds of each round's median step. GB/step = weights + the K/V of the "
             "attended positions (the whole static cache, which eager and torch.compile read, in "
             "brackets); % BW = GB/step / step time against the read bandwidth measured here and "
             "the datasheet's. TTFT of aotrt: `aotrt generate --warmup 1`'s second call in its "
             "process (Note [Warm TTFT]; the process's first call in brackets), the prompt fed "
             "token by token (torch's flow exports a one-token step) or, for aotrt[prefill], "
             "through the prefill graph; eager and torch.compile prefill the prompt in one call, "
             "after their warm-up. "
             "Divergence: the first generated token (0 = the one after the prompt) where a "
             "contender's greedy tokens leave eager's (any row of the batch; in brackets, where "
             "aotrt's leave torch.compile's); `=` none differs in "
             f"the {report['new_tokens'] + 1} compared; `-` not compared (no tokens: aotrt at "
             "batch > 1 times `aotrt bench`). export / compile s: the package's export (`reused`: "
             "an earlier call's) and torch.compile's two compiles with their warm-up.", "",
             "| shape | dtype | batch | cache | contender | ms/step p50 | tokens/s | GB/step | "
             "% BW measured | % BW datasheet | TTFT ms | diverges from eager at | export / compile s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        if "skipped" in row or "error" in row:
            lines.append(f"| {row['shape']} | {dtype_label(row)} | {row['batch']} | {row['cache']} | "
                         f"{row.get('skipped') or row.get('error')} |||||||||")
            continue
        b = row["bytes"]
        need = b["weights"] + b["kv_attended"]
        whole = b["weights"] + b["kv_whole"]
        for c, e in row["contenders"].items():
            label = {"compile": "torch.compile" + (" (reduce-overhead)" if report["device"] == "cuda"
                                                   else " (default)")}.get(c, c)
            if "step_p50_ms" not in e:
                lines.append(f"| {row['shape']} | {dtype_label(row)} | {row['batch']} | {row['cache']} | "
                             f"{label} | failed: {e.get('error', '?')[:200]} |||||||")
                continue
            gbps = need / (e["step_p50_ms"] / 1e3) / 1e9
            def at(key: str) -> str:
                return "-" if key not in e else ("=" if e[key] is None else str(e[key]))

            div = at("diverges_from_eager_at")
            if "diverges_from_compile_at" in e:
                div += f" (torch.compile: {at('diverges_from_compile_at')})"
            timing = row["export_s"].get(c) if c.startswith("aotrt") else (row["compile_s"] if c == "compile" else None)
            timing_s = fmt(timing, ".0f", "reused" if c.startswith("aotrt") else "-")
            lines.append(
                f"| {row['shape']} | {dtype_label(row)} | {row['batch']} | {row['cache']} | {label} | "
                f"{e['step_p50_ms']:.3f} | {e['tokens_per_s']:.1f} | {need / 1e9:.3f} ({whole / 1e9:.3f}) | "
                f"{100 * gbps / bw['read']:.1f} | "
                + (f"{100 * gbps / (ds * 1000):.1f}" if ds else "-")
                + f" | {fmt(e.get('ttft_ms'), '.1f')}"
                + (f" ({e['ttft_first_call_ms']:.0f})" if e.get("ttft_first_call_ms") is not None else "")
                + f" | {div} | {timing_s} |")
        if row.get("error_after_timing"):
            lines.append(f"| {row['shape']} | {dtype_label(row)} | {row['batch']} | {row['cache']} | "
                         f"after the timing: {row['error_after_timing'][:200]} |||||||||")
        if row.get("export_options_winner"):
            lines.append(f"| {row['shape']} | {dtype_label(row)} | {row['batch']} | {row['cache']} | "
                         f"export options: **{row['export_options_winner']}** won |||||||||")
    lines += [""] + targets(report)
    for row in report["rows"]:
        if row.get("shim_profile"):
            lines += ["", f"## Where aotrt's CPU step goes: {row['shape']} {dtype_label(row)} batch {row['batch']} "
                          f"cache {row['cache']}", "",
                      "`aotrt bench --profile` of the decode step at position --prompt-len (host time in "
                      "each aoti_* shim call: the ATen-level ops the package calls; the rest is "
                      "inductor's generated code):", "", "```", row["shim_profile"], "```"]
        for side, prof in (row.get("profile") or {}).items():
            who = "torch.compile" if side == "compile" else side
            lines += ["", f"## Kernels of one {who} decode step: {row['shape']} {dtype_label(row)} "
                          f"batch {row['batch']} cache {row['cache']}", ""]
            if "error" in prof:
                lines.append(f"ncu failed: {prof['error']}")
                continue
            p50 = row["contenders"].get(side, {}).get("step_p50_ms")
            dram = prof.get("dram_read_bytes")
            lines.append(f"Nsight Compute (kernels serialized, clocks and caches left alone): "
                         f"{prof['launches']} launches, {prof['time_us']:.1f} µs of kernel time"
                         + (f" against a step of {p50 * 1e3:.1f} µs" if p50 else "")
                         + (f"; {dram / 1e9:.3f} GB read from DRAM" if dram else "") + ".")
            lines += ["", "| kernel | launches | µs | share | DRAM read GB/s |", "|---|---|---|---|---|"]
            for k in prof["top"]:
                lines.append(f"| `{k['kernel']}` | {k['launches']} | {k['us']:.1f} | {100 * k['share']:.1f}% | "
                             f"{fmt(k['dram_read_gbps'], '.0f')} |")
    return "\n".join(lines) + "\n"


def _find(report, shape, dtype, batch, contender):
    for row in report["rows"]:
        if row.get("shape") == shape and row.get("dtype") == dtype and row.get("batch") == batch \
                and "contenders" in row:
            e = row["contenders"].get(contender)
            if e and "step_p50_ms" in e:
                return row, e
    return None, None


def _best_aotrt(report, shape, dtype, batch):
    """The fastest aotrt contender of a config (aotrt, aotrt[prefill], aotrt<env>, ...): the targets
    judge what a user can run, and the generation export is aotrt's own flow."""
    best = (None, None, None)
    for row in report["rows"]:
        if row.get("shape") == shape and row.get("dtype") == dtype and row.get("batch") == batch \
                and "contenders" in row:
            for c, e in row["contenders"].items():
                if c.startswith("aotrt") and "step_p50_ms" in e and \
                        (best[1] is None or e["step_p50_ms"] < best[1]["step_p50_ms"]):
                    best = (row, e, c)
    return best


def targets(report: dict[str, Any]) -> list[str]:
    """Issue 29's targets, for the rows this run measured."""
    bw = report["bandwidth_gbps"]["read"]
    ds = report.get("datasheet_tbps")
    out = ["## Targets (issue 29), from this run", ""]

    def frac(row, e):
        b = row["bytes"]
        return (b["weights"] + b["kv_attended"]) / (e["step_p50_ms"] / 1e3) / 1e9

    if report["device"] == "cuda":
        for shape, goal in (("8b", 0.80), ("1b", 0.60)):
            row, e, who = _best_aotrt(report, shape, "bf16", 1)
            if not row:
                out.append(f"- {shape} bf16 batch 1, >= {goal:.0%} of HBM bandwidth: not measured in this run.")
                continue
            f = frac(row, e)
            verdict = "met" if f / bw >= goal else "MISSED"
            line = (f"- {shape} bf16 batch 1 cache {row['cache']}, >= {goal:.0%} of HBM bandwidth: {who} "
                    f"{100 * f / bw:.1f}% of the measured read bandwidth"
                    + (f", {100 * f / (ds * 1000):.1f}% of the datasheet's" if ds else "") + f": {verdict}")
            if shape == "8b":
                _, ce = _find(report, shape, "bf16", 1, "compile")
                if ce:
                    line += (f"; against torch.compile reduce-overhead {e['step_p50_ms']:.3f} vs "
                             f"{ce['step_p50_ms']:.3f} ms: "
                             + ("faster" if e["step_p50_ms"] < ce["step_p50_ms"] else "NOT faster"))
            if verdict == "MISSED" or "NOT" in line:
                line += (" (why: the kernel table below)" if row.get("profile")
                         else " (why: run this slice with --profile for the kernel table)")
            out.append(line + ".")
        for shape in SHAPES:
            for batch in (1, 8):
                r4, e4, w4 = _best_aotrt(report, shape, "int4", batch)
                rb, eb, wb = _best_aotrt(report, shape, "bf16", batch)
                if e4 and eb:
                    ratio = e4["tokens_per_s"] / eb["tokens_per_s"]
                    out.append(f"- int4 >= 2.5x bf16 tokens/s, {shape} batch {batch}: {w4} over {wb} {ratio:.2f}x: "
                               + ("met" if ratio >= 2.5 else "MISSED (why: run with --profile)") + ".")
        out.append("- int4 matmul at least as fast as ATen's at every M: bench/quant_gpu.py "
                   "(scripts/gpu_kernels_check.sh), not this bench.")
    else:
        for row in report["rows"]:
            if "contenders" not in row:
                continue
            a, c = row["contenders"].get("aotrt", {}), row["contenders"].get("compile", {})
            if "tokens_per_s" in a and "tokens_per_s" in c:
                ok = a["tokens_per_s"] >= c["tokens_per_s"]
                out.append(f"- CPU {row['shape']} {dtype_label(row)} batch {row['batch']}: aotrt "
                           f"{a['tokens_per_s']:.2f} tokens/s vs torch.compile {c['tokens_per_s']:.2f}: "
                           + ("at or above: met" if ok else "below: MISSED (why: the shim profile below)") + ".")
    return out


# --------------------------------------------------------------------------------------
# Plan, estimate, main
# --------------------------------------------------------------------------------------


def estimate_s(args, shape, dtype_name, batch, cache) -> float:
    """A rough guess of a config's seconds on an H100 (or this CPU), from the reference points."""
    s = SHAPES[shape]
    params = s["layers"] * (2 * s["hidden"] * s["hidden"] + 2 * s["hidden"] * s["kv_heads"] * (s["hidden"] // s["heads"])
                            + 3 * s["hidden"] * s["inter"]) + s["vocab"] * s["hidden"]
    quant = DTYPES[dtype_name][1]
    bytes_w = params * {None: 2, "int8": 1, "int4": 0.5}[quant] * (2 if DTYPES[dtype_name][0] == "float32" and not quant else 1)
    if args.device == "cuda":
        step_aotrt = max(0.4e-3, bytes_w / 2.6e12) * (1 + 0.5 * (batch > 1))
        step_eager = 17e-3 * s["layers"] / 22
        export = 60 + 2.5 * s["layers"] + bytes_w / 0.5e9
        compile_s = 40 + 1.5 * s["layers"]
        build = 5 + bytes_w / 2e9
        load = 2 + bytes_w / 3e9
    else:
        step_aotrt = bytes_w / 5e9
        step_eager = step_aotrt * 1.3
        export = 120 + 8 * s["layers"] + bytes_w / 0.2e9
        compile_s = 60 + 4 * s["layers"]
        build = 5 + bytes_w / 0.5e9
        load = 2 + bytes_w / 1e9
    n, p = args.new_tokens, args.prompt_len
    t = build
    sets = len(args.export_options or ["default"]) if "aotrt" in args.contenders else 0
    t += sets * export * (1.8 if any(x in ("max_autotune", "both") for x in (args.export_options or [])) else 1)
    if "compile" in args.contenders:
        t += compile_s
    per_round = 0.0
    if "eager" in args.contenders:
        per_round += step_eager * (n + 3) + 0.05
    if "compile" in args.contenders:
        per_round += step_aotrt * 1.2 * (n + 3) + 0.05
    per_round += sets * (load + step_aotrt * ((p if batch == 1 else 10) + n))
    t += args.rounds * per_round
    if args.profile:
        t += 150
    return t * len(args.attention)  # each attention exports and times the config again


def parse_env_variants(text: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for item in filter(None, text.split(";")):
        label, sep, assigns = item.partition(":")
        pairs = [a.partition("=") for a in assigns.split(",") if a]
        if not sep or not label or not pairs or any(not k or not eq for k, eq, _ in pairs):
            raise argparse.ArgumentTypeError(f"'{item}' is not LABEL:VAR=VAL[,VAR=VAL]")
        out.append((label, {k: v for k, _, v in pairs}))
    return out


def parse_list(text: str, allowed=None, conv=str) -> list:
    items = [conv(x.strip()) for x in text.split(",") if x.strip()]
    if allowed is not None:
        bad = [x for x in items if x not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {bad}; choose from {', '.join(map(str, allowed))}")
    return items


def git_commit() -> str:
    try:
        res = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return res.stdout.strip() + ("+dirty" if dirty else "") if res.returncode == 0 else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--shapes", type=lambda t: parse_list(t, SHAPES), default=["1b"])
    p.add_argument("--dtypes", type=lambda t: parse_list(t, DTYPES), default=None,
                   help="default: bf16 on cuda, fp32,bf16 on cpu")
    p.add_argument("--batches", type=lambda t: parse_list(t, conv=int), default=[1])
    p.add_argument("--caches", type=lambda t: parse_list(t, conv=int), default=[1024])
    p.add_argument("--contenders", type=lambda t: parse_list(t, ["eager", "compile", "aotrt"]),
                   default=["eager", "compile", "aotrt"])
    p.add_argument("--export-options", type=lambda t: parse_list(t, OPTION_SETS), default=None,
                   help=f"aotrt packages under these inductor option sets ({', '.join(OPTION_SETS)})")
    p.add_argument("--aotrt-env", type=parse_env_variants, default=[],
                   help="LABEL:VAR=VAL[,VAR=VAL][;LABEL:...]: also run the default aotrt package "
                        "under these variables as contender aotrt<LABEL> (e.g. "
                        "'lt:AOTRT_DECODE_GEMV=0': cuBLASLt in place of the decode GEMV kernel)")
    p.add_argument("--attention", type=lambda t: parse_list(t, ["hf", "gqa"]), default=["hf"],
                   help="hf: transformers' SDPA (repeat_kv before attention under a mask); gqa: SDPA with "
                        "enable_gqa on the unrepeated cache, for every contender (aotrt_tools.llm); "
                        "hf,gqa: each config twice")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--prompt-len", type=int, default=None, help="default 512 on cuda, 32 on cpu")
    p.add_argument("--new-tokens", type=int, default=None, help="timed decode steps (default 64 cuda, 16 cpu)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads (torch and aotrt)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--aotrt", default=None, help="the aotrt CLI (default build-gpu/aotrt on cuda, build/aotrt on cpu)")
    p.add_argument("--work", default=None, help="exports (default build-bench/decode-<device>)")
    p.add_argument("--keep-packages", action="store_true", help="keep each package after its config")
    p.add_argument("--out", default=".", help="folder for decode-<device>-<date>.md and .json")
    p.add_argument("--profile", action="store_true", help="ncu kernel tables (cuda)")
    p.add_argument("--profile-sides", type=lambda t: parse_list(t, ["aotrt", "compile"]),
                   default=["aotrt", "compile"], help="whose decode step --profile records")
    p.add_argument("--profile-top", type=int, default=15)
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds: a config (after the first) whose estimate would end past it is skipped")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimate only")
    p.add_argument("--child-profile-compile", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    cpu = args.device == "cpu"
    args.dtypes = args.dtypes or (["fp32", "bf16"] if cpu else ["bf16"])
    args.prompt_len = args.prompt_len if args.prompt_len is not None else (32 if cpu else 512)
    args.new_tokens = args.new_tokens if args.new_tokens is not None else (16 if cpu else 64)
    args.aotrt = args.aotrt or str(REPO / ("build/aotrt" if cpu else "build-gpu/aotrt"))
    args.work = args.work or str(REPO / "build-bench" / f"decode-{args.device}")
    if args.child_profile_compile:
        return child_profile_compile(args)
    if not cpu and any(DTYPES[d][0] == "float32" and DTYPES[d][1] == "int4" for d in args.dtypes):
        p.error("int4 on CUDA takes bfloat16 activations (tinygemm): use int4")

    configs = [(s, d, b, c) for s in args.shapes for d in args.dtypes for b in args.batches for c in args.caches]
    total = 0.0
    for cfg in configs:
        est = estimate_s(args, *cfg)
        total += est
        print(f"plan: {cfg[0]} {cfg[1]} batch {cfg[2]} cache {cfg[3]}: ~{est / 60:.1f} min (estimate)")
    print(f"plan: {len(configs)} config(s), ~{total / 60:.1f} min in all (estimate)", flush=True)
    if args.dry_run:
        return 0
    if "aotrt" in args.contenders and not Path(args.aotrt).exists():
        p.error(f"{args.aotrt} does not exist (build it, or leave aotrt out of --contenders)")

    import torch
    import transformers

    if cpu:
        torch.set_num_threads(args.threads)
    elif not torch.cuda.is_available():
        print("decode: this torch sees no CUDA device", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    date = datetime.date.today().isoformat()
    card = card_name(args.device)
    report: dict[str, Any] = {
        "device": args.device, "date": date, "card": card, "torch": torch.__version__,
        "transformers": transformers.__version__, "aotrt_commit": git_commit(),
        "command": "python3 bench/decode.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "threads_note": (f"{args.threads} threads (torch.set_num_threads, OMP_NUM_THREADS for aotrt)"
                         if cpu else "one GPU"),
        "datasheet_tbps": None if cpu else datasheet_tbps(card),
        "prompt_len": args.prompt_len, "new_tokens": args.new_tokens, "rounds": args.rounds, "rows": []}
    log(f"{card}; torch {torch.__version__}; measuring bandwidth ...")
    report["bandwidth_gbps"] = measure_bandwidth(args.device, args.threads)
    log(f"bandwidth: read {report['bandwidth_gbps']['read']:.0f} GB/s, copy {report['bandwidth_gbps']['copy']:.0f} GB/s")
    stem = out / f"decode-{args.device}-{date}"

    def write() -> None:
        stem.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str))
        stem.with_suffix(".md").write_text(render(report))

    for shape in args.shapes:
        for dtype_name in args.dtypes:
            sub = [c for c in configs if c[0] == shape and c[1] == dtype_name]
            # The first config always runs: the estimate is a guess, and a slice of one config is
            # the lead's own choice.
            if args.time_limit is not None and report["rows"] and \
                    time.perf_counter() - T0 + estimate_s(args, *sub[0]) > args.time_limit:
                for c in sub:
                    report["rows"].append({"shape": c[0], "dtype": c[1], "batch": c[2], "cache": c[3],
                                           "skipped": "skipped: past --time-limit"})
                write()
                continue
            log(f"model {shape} {dtype_name} on {args.device} ...")
            t = time.perf_counter()
            try:
                model = build_model(shape, dtype_name, args.device, args.seed)
                checksum = weights_checksum(model)
            except Exception as e:
                log(f"model {shape} {dtype_name}: FAILED {type(e).__name__}: {e}")
                for c in sub:
                    report["rows"].append({"shape": c[0], "dtype": c[1], "batch": c[2], "cache": c[3],
                                           "error": f"model failed: {type(e).__name__}: {str(e)[:300]}"})
                write()
                continue
            log(f"model built in {time.perf_counter() - t:.1f} s")
            for (_, _, batch, cache) in sub:
                if args.time_limit is not None and report["rows"] and \
                        time.perf_counter() - T0 + estimate_s(args, shape, dtype_name, batch, cache) > args.time_limit:
                    report["rows"].append({"shape": shape, "dtype": dtype_name, "batch": batch, "cache": cache,
                                           "skipped": "skipped: past --time-limit"})
                    write()
                    continue
                log(f"config {shape} {dtype_name} batch {batch} cache {cache}")
                published: list[dict[str, Any]] = []

                def publish(row: dict[str, Any]) -> None:
                    if not any(r is row for r in report["rows"]):
                        report["rows"].append(row)
                        published.append(row)
                    write()

                for attention in args.attention:
                    published.clear()
                    try:
                        set_attention(model, attention)
                        run_config(args, model, shape, dtype_name, batch, cache, checksum, publish, attention)
                    except Exception as e:
                        log(f"config FAILED: {type(e).__name__}: {e}")
                        why = f"{type(e).__name__}: {str(e)[:300]}"
                        if published:  # timed; what came after failed
                            published[0]["error_after_timing"] = why
                            write()
                        else:
                            publish({"shape": shape, "dtype": dtype_name, "batch": batch, "cache": cache,
                                     "attention": attention, "error": why})
            del model
            if not cpu:
                torch.cuda.empty_cache()
    write()
    print(render(report), flush=True)
    log(f"wrote {stem}.md and .json")
    return 0 if all("contenders" in r for r in report["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
