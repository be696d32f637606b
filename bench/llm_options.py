#!/usr/bin/env python3
"""Which inductor options make the fastest decode step (issue 28, item 6).

Exports the decode graph of a small random LLaMA (transformers' TorchExportableModuleFor-
DecoderOnlyLM, static cache) once per candidate, each through aotrt_tools.llm (the generation
command's own path, with aotrt_tools.export's options plus the candidate's), then times every
package with `aotrt bench --model-name decode` in rounds that alternate the candidates (the
machine is shared: a load change hits them all). Prints a Markdown table: the median and the
minimum over the rounds of each round's p50, and the compile time. Packages already in --work
are reused (their compile time is then not known).

CPU candidates (`--device cpu`): aotrt's defaults (freezing=True), freezing=False, and each
with max_autotune=True. CUDA candidates (`--device cuda`): aotrt_tools.llm.CUDA_CANDIDATE_OPTIONS.
Threads: --threads N (default 1; OMP_NUM_THREADS for the aotrt subprocesses), as
bench/cpu_freezing.py explains for this project's shared 2-core machine.

Usage: python3 bench/llm_options.py [--device cpu] [--rounds 5] [--iters 200] [--out FILE.md]
       [--hidden 256 --layers 4 --vocab 4096 --cache 512] [--dtype float32|bfloat16] [--only NAME ...]
On a GPU (AOTRT_BIN: a CUDA build of the CLI), TinyLlama's shape in bf16:
       AOTRT_BIN=build-cuda/aotrt python3 bench/llm_options.py --device cuda --dtype bfloat16 \
           --hidden 2048 --layers 22 --kv-heads 4 --vocab 32000 --cache 1024 --rounds 5 --iters 200
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from aotrt_tools import llm  # noqa: E402  (needs the sys.path entry above)

AOTRT = Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt"))

CPU_CANDIDATES = {
    "freezing (aotrt default)": {"freezing": True},
    "no freezing": {"freezing": False},
    "freezing + max_autotune": {"freezing": True, "max_autotune": True},
    "no freezing + max_autotune": {"freezing": False, "max_autotune": True},
}


def small_llama(hidden: int, layers: int, vocab: int, kv_heads: int | None = None) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 11 // 4,
                      num_hidden_layers=layers, num_attention_heads=max(4, hidden // 64),
                      num_key_value_heads=kv_heads or max(2, hidden // 128), max_position_embeddings=4096)
    model = LlamaForCausalLM(cfg).eval()
    model.generation_config.cache_implementation = "static"
    return model


def export_decode(model: torch.nn.Module, out: Path, options: dict, cache: int, device: str,
                  dtype: torch.dtype) -> float:
    """The decode graph alone, compiled with aotrt's options plus `options`; returns seconds."""
    t0 = time.perf_counter()
    model = model.to(device=device, dtype=dtype)
    src = llm.Source(model, "decoder", "hf", "bench small llama")
    (graph,) = llm.hf_decoder_graphs(model, cache, 2, device=device, which=("decode",))
    opts, _ = llm.aotrt_export.resolve_options(options, device)
    record = llm.generation_record(src, graph, cache, model.config.vocab_size, dtype)
    files = llm.compile_graph(graph, opts, record)
    from torch._inductor.package import package_aoti

    package_aoti(str(out), {"decode": files})
    return time.perf_counter() - t0


def bench(pkg: Path, inputs: list[Path], iters: int) -> float:
    cmd = [str(AOTRT), "bench", str(pkg), "--model-name", "decode", "--iters", str(iters), "--json"]
    for f in inputs:
        cmd += ["--input", str(f)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(json.loads(out)["latency_us"]["p50"]) / 1000.0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--cache", type=int, default=512)
    p.add_argument("--kv-heads", type=int, help="default: max(2, hidden / 128)")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--only", action="append", help="candidate names to run (default: all)")
    p.add_argument("--work", type=Path, help="folder for the packages (default: a temp dir)")
    p.add_argument("--out", type=Path, help="write the Markdown table here too")
    args = p.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    candidates = CPU_CANDIDATES if args.device == "cpu" else llm.CUDA_CANDIDATE_OPTIONS
    if args.only:
        candidates = {k: v for k, v in candidates.items() if k in args.only}
    work = args.work or Path(tempfile.mkdtemp(prefix="llm_options_"))
    work.mkdir(parents=True, exist_ok=True)
    np.save(work / "ids.npy", np.array([[7]], np.int64))
    np.save(work / "pos.npy", np.array([args.cache // 2], np.int64))
    inputs = [work / "ids.npy", work / "pos.npy"]

    compile_s, pkgs = {}, {}
    for name, options in candidates.items():
        slug = "".join(c if c.isalnum() else "_" for c in name)
        pkg = work / f"decode_{args.device}_{args.dtype}_{args.hidden}x{args.layers}_{slug}.pt2"
        if not pkg.exists():
            compile_s[name] = export_decode(small_llama(args.hidden, args.layers, args.vocab, args.kv_heads), pkg, options,
                                            args.cache, args.device, getattr(torch, args.dtype))
        pkgs[name] = pkg
        print(f"exported {name}: {pkg} ({compile_s.get(name, 0):.0f} s)", flush=True)

    # Candidates whose options change nothing give byte-identical graphs: timed once, one row.
    same: dict[str, list[str]] = {}
    for name, pkg in pkgs.items():
        with zipfile.ZipFile(pkg) as zf:
            digest = hashlib.sha256(b"".join(zf.read(n) for n in sorted(zf.namelist())
                                             if n.endswith((".so", ".blob")))).hexdigest()
        same.setdefault(digest, []).append(name)
    rows = {names[0]: names for names in same.values()}

    times: dict[str, list[float]] = {n: [] for n in rows}
    for r in range(args.rounds):
        for name in rows:
            times[name].append(bench(pkgs[name], inputs, args.iters))
        print(f"round {r + 1}: " + ", ".join(f"{n} {t[-1]:.3f} ms" for n, t in times.items()), flush=True)

    base = statistics.median(next(iter(times.values())))
    lines = [f"# Decode step of a small LLaMA, per inductor option set ({args.device})", "",
             f"{datetime.date.today()}, {platform.node()}, torch {torch.__version__}, {args.threads} thread(s); "
             f"LLaMA hidden {args.hidden}, {args.layers} layers, vocab {args.vocab}, cache {args.cache}, {args.dtype}; "
             f"`aotrt bench --model-name decode --iters {args.iters}`, {args.rounds} alternated rounds. "
             "Option sets that gave byte-identical packages share a row.", "",
             "| options | p50 per round (ms) | median (ms) | min (ms) | median vs first | compile (s) |",
             "|---|---|---|---|---|---|"]
    for name, t in times.items():
        med = statistics.median(t)
        label = "; ".join(f"{n}: `{json.dumps(candidates[n])}`" for n in rows[name])
        lines.append(f"| {label} | {' '.join(f'{x:.3f}' for x in t)} | {med:.3f} | {min(t):.3f} | "
                     f"{med / base:.2f}x | {compile_s.get(name, float('nan')):.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
