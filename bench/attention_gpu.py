"""Attention on the GPU, side by side: eager PyTorch against `aotrt bench`.

Two parts, each exported by torch's own flow (aoti_compile_and_package with
link_libtorch=False) and timed with the contenders alternated:
  * sdpa: one-op packages of F.scaled_dot_product_attention in bf16 (fp32 in and
    out, cast inside, so that the inputs can be .npy files) over L = 128 ... 8192,
    head dim 64 and 128, causal or not; eager runs the same module;
  * llama: a Hugging Face LlamaConfig decoder (hidden 1024, 8 layers, 16 heads,
    32k vocabulary, sequence 1024, batch 1, random weights) in bf16.
Correctness of each package is checked against eager (bf16 tolerance: 2e-2 of the
output's largest value, bf16's 8-bit mantissa over a 1024-long softmax sum).

Usage: python3 bench/attention_gpu.py --aotrt build-gpu/aotrt [--part sdpa|llama|all]
       [--jobs 8] [--iters 50] [--rounds 3] [--lengths 128,1024,...] --out DIR
Writes DIR/attention.md and DIR/attention.json. Needs a CUDA torch (and transformers
for the llama part).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SDPA_LENGTHS = [128, 512, 1024, 2048, 4096, 8192]
SDPA_HEAD_DIMS = [64, 128]
LINK_OPTS = {"aot_inductor.link_libtorch": False}


def sdpa_cases(lengths=SDPA_LENGTHS):
    for d in SDPA_HEAD_DIMS:
        for L in lengths:
            for causal in (True, False):
                batch = 4 if L <= 1024 else 1
                yield {"name": f"sdpa_b{batch}_h16_L{L}_d{d}_{'causal' if causal else 'full'}",
                       "B": batch, "H": 16, "L": L, "d": d, "causal": causal}


def make_sdpa(case):
    import torch
    import torch.nn.functional as F

    class Sdpa(torch.nn.Module):
        def forward(self, q, k, v):
            o = F.scaled_dot_product_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(),
                                               is_causal=case["causal"])
            return o.float()

    g = torch.Generator().manual_seed(0)
    shape = (case["B"], case["H"], case["L"], case["d"])
    args = tuple(torch.randn(shape, generator=g).cuda() for _ in range(3))
    return Sdpa().cuda().eval(), args


def make_llama(_case):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                      num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                      max_position_embeddings=2048, use_cache=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16).cuda().eval()

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False, return_dict=False)[0].float()

    ids = torch.randint(0, cfg.vocab_size, (1, 1024), generator=torch.Generator().manual_seed(0))
    return Logits(model).eval(), (ids.cuda(),)


MAKERS = {"sdpa": make_sdpa, "llama": make_llama}


def export_case(part, case, out_dir):
    """Runs in a spawned worker: export, write inputs and the eager output."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    model, args = MAKERS[part](case)
    d = Path(out_dir) / case["name"]
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with torch.no_grad():
        ep = torch.export.export(model, args)
        pkg = torch._inductor.aoti_compile_and_package(
            ep, package_path=str(d / "model.pt2"), inductor_configs=LINK_OPTS)
        ref = model(*args)
    inputs = []
    for i, a in enumerate(args):
        p = d / f"input_{i}.npy"
        np.save(p, a.cpu().numpy())
        inputs.append(str(p))
    np.save(d / "eager.npy", ref.float().cpu().numpy())
    return {"name": case["name"], "package": pkg, "inputs": inputs, "export_s": time.time() - t0}


def eager_time(part, case, iters, rounds):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    model, args = MAKERS[part](case)
    times = []
    with torch.no_grad():
        for _ in range(5):
            model(*args)
        torch.cuda.synchronize()
        for _ in range(rounds):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                model(*args)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / iters)
    return times


def aotrt_time(aotrt, exp, iters, cuda_graph=False):
    cmd = [aotrt, "bench", exp["package"], "--iters", str(iters), "--json"]
    for p in exp["inputs"]:
        cmd += ["--input", p]
    cmd.append("--cuda-graph" if cuda_graph else "--no-cuda-graph")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"aotrt bench failed: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout)["latency_us"]["p50"]


def check(aotrt, exp, tmp):
    out = Path(tmp) / exp["name"]
    cmd = [aotrt, "run", exp["package"], "--output-dir", str(out)]
    for p in exp["inputs"]:
        cmd += ["--input", p]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None, r.stderr.strip()[-300:]
    got = np.load(out / "output_0.npy").astype(np.float64)
    ref = np.load(Path(exp["package"]).parent / "eager.npy").astype(np.float64)
    scale = max(float(np.abs(ref).max()), 1e-6)
    return float(np.abs(got - ref).max()) / scale, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aotrt", required=True)
    ap.add_argument("--part", choices=["sdpa", "llama", "all"], default="all")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lengths", default=",".join(map(str, SDPA_LENGTHS)),
                    help="sequence lengths of the sdpa part (comma-separated)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = Path(a.out)
    work = out / "attention_pkgs"
    parts = ["sdpa", "llama"] if a.part == "all" else [a.part]
    lengths = [int(x) for x in a.lengths.split(",")]
    cases = [("sdpa", c) for c in sdpa_cases(lengths)] if "sdpa" in parts else []
    if "llama" in parts:
        cases.append(("llama", {"name": "llama_bf16_h1024_l8_s1024"}))

    exports = {}
    with cf.ProcessPoolExecutor(a.jobs, mp_context=mp.get_context("spawn")) as pool:
        futs = {pool.submit(export_case, part, c, str(work)): (part, c) for part, c in cases}
        for f in cf.as_completed(futs):
            part, c = futs[f]
            try:
                exports[c["name"]] = f.result()
            except Exception as e:  # one failing export does not stop the others
                exports[c["name"]] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
            print(f"exported {c['name']}: {exports[c['name']].get('error', 'ok')}", flush=True)

    rows = []
    for part, c in cases:
        e = exports[c["name"]]
        row = {"name": c["name"], "part": part}
        if "error" in e:
            row["error"] = e["error"]
            rows.append(row)
            continue
        row["rel_err"], msg = check(a.aotrt, e, out / "attention_out")
        if msg:
            row["error"] = msg
            rows.append(row)
            continue
        eager, plain, graph = [], [], []
        for _ in range(a.rounds):  # contenders alternated, round by round
            eager.append(float(np.median(eager_time(part, c, a.iters, 1))))
            plain.append(aotrt_time(a.aotrt, e, a.iters))
            graph.append(aotrt_time(a.aotrt, e, a.iters, cuda_graph=True))
        row.update(eager_us=float(np.median(eager)), aotrt_us=float(np.median(plain)),
                   aotrt_graph_us=float(np.median(graph)))
        if part == "sdpa":
            flops = 4 * c["B"] * c["H"] * c["L"] * c["L"] * c["d"] * (0.5 if c["causal"] else 1.0)
            row["aotrt_tflops"] = flops / row["aotrt_us"] / 1e6
        row["ratio"] = row["aotrt_us"] / row["eager_us"]
        rows.append(row)
        print(json.dumps(row), flush=True)

    (out / "attention.json").write_text(json.dumps(rows, indent=1))
    lines = ["| case | eager us | aotrt us | aotrt graph us | aotrt/eager | aotrt TFLOP/s | rel err |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | error: {r['error']} | | | | | |")
            continue
        lines.append(f"| {r['name']} | {r['eager_us']:.1f} | {r['aotrt_us']:.1f} | {r['aotrt_graph_us']:.1f} | "
                     f"{r['ratio']:.2f}x | {r.get('aotrt_tflops', float('nan')):.1f} | {r['rel_err']:.2e} |")
    (out / "attention.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
