"""A Llama-3-8B-shaped decoder exported by torch's defaults, loaded and run by aotrt on a GPU.

For the GPU machine (torch 2.11 with CUDA, transformers 5.17, no network), in one device call
of 10 minutes. Builds LlamaForCausalLM from a config (hidden 4096, 32 layers, 32 heads, 8 KV
heads, intermediate 14336, vocab 128256, bfloat16, random weights made on the GPU), exports one
decode step the way Hugging Face exports for runtimes
(transformers.integrations.executorch.TorchExportableModuleForDecoderOnlyLM, batch 1, static
cache of --cache-len) with torch's default options plus aot_inductor.link_libtorch=False: its
16 GB of constants are above 2 GB, so inductor appends them to the model .so (Note [Weights
appended to the .so] in src/runtime/model_mmap.h). Then, each a separate process:

  eager     step 0 (token --token at position 0) in the same Python process, after the export
            (the export captured the empty cache), as the reference logits
  aotrt run the package on the same inputs: logits compared with eager's (bf16: inductor's
            fusions round differently, so argmax and the max abs diff are printed, and the run
            fails only when the logits are not finite or the max abs diff exceeds --max-diff)
  aotrt bench  --iters decode steps at position 0 (the same inputs): Model::load's time, the
            process's peak host RSS (VmHWM) and the per-step latency
  aotrt generate  --new-tokens greedy tokens after --token (its first must be aotrt run's
            argmax), tokens/s and inter-token latency

Every phase prints its time. Usage (the lead, on the GPU machine, after build-gpu/ is built):

    python3 bench/llm_large.py --aotrt build-gpu/aotrt --work /tmp/llm --out $OUT/llm_large.json

--package PATH reuses an exported package (skips the model, the export and eager).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
T0 = time.perf_counter()


def phase(name: str, since: float) -> float:
    now = time.perf_counter()
    print(f"[{now - T0:7.1f} s] {name}: {now - since:.1f} s", flush=True)
    return now


def run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def export(args, work: Path) -> tuple[Path, "object"]:
    import numpy as np
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    t = time.perf_counter()
    config = LlamaConfig(hidden_size=4096, num_hidden_layers=args.layers, num_attention_heads=32,
                         num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
                         max_position_embeddings=8192, rope_theta=500000.0, torch_dtype=torch.bfloat16)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    model.generation_config.cache_implementation = "static"
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params / 1e9:.2f} B parameters, {params * 2 / 2**30:.1f} GiB of bf16", flush=True)
    t = phase("model on the GPU", t)

    wrapper = TorchExportableModuleForDecoderOnlyLM(model, batch_size=1, max_cache_len=args.cache_len)
    ids = torch.tensor([[args.token]], dtype=torch.long, device="cuda")
    pos = torch.tensor([0], dtype=torch.long, device="cuda")
    with torch.no_grad():
        ep = wrapper.export(input_ids=ids, cache_position=pos)
    t = phase("torch.export", t)
    pkg = work / "llama3_8b_shape.pt2"
    with torch.no_grad():
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(pkg), inductor_configs={"aot_inductor.link_libtorch": False})
    print(f"package: {pkg} ({pkg.stat().st_size / 2**30:.2f} GiB)", flush=True)
    t = phase("aoti_compile_and_package", t)

    with torch.no_grad():  # the cache is empty: the export captured it before this step
        logits = wrapper.model(input_ids=ids, cache_position=pos)
    logits = logits.float().cpu().numpy()
    np.save(work / "eager_logits.npy", logits)
    np.save(work / "input_ids.npy", ids.cpu().numpy())
    np.save(work / "cache_position.npy", pos.cpu().numpy())
    t = phase("eager step 0", t)
    del wrapper, model, ep
    torch.cuda.empty_cache()
    return pkg, logits


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--aotrt", default=str(REPO / "build-gpu" / "aotrt"))
    ap.add_argument("--work", default="/tmp/llm_large")
    ap.add_argument("--package", help="an exported package to reuse")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--cache-len", type=int, default=1024)
    ap.add_argument("--token", type=int, default=128000)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--new-tokens", type=int, default=64, help="tokens aotrt generate makes")
    ap.add_argument("--max-diff", type=float, default=1.0, help="max abs logit difference allowed")
    ap.add_argument("--info", action="store_true", help="also run `aotrt info` (one more load)")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()

    import numpy as np

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    if args.package:
        pkg = Path(args.package)
        eager = np.load(work / "eager_logits.npy") if (work / "eager_logits.npy").exists() else None
    else:
        pkg, eager = export(args, work)
    t = time.perf_counter()
    results: dict = {"package": str(pkg), "package_bytes": pkg.stat().st_size}

    if args.info:  # `aotrt info` loads the model too (the container copies its constants)
        info = run([args.aotrt, "info", str(pkg)], 300)
        layout = [line for line in info.stdout.splitlines() if line.startswith("weights layout:")]
        print(layout[0] if layout else info.stdout[-2000:] + info.stderr[-2000:], flush=True)
        results["weights_layout"] = layout[0] if layout else None
        t = phase("aotrt info", t)

    out = work / "aotrt_out"
    r = run([args.aotrt, "run", str(pkg), "-i", str(work / "input_ids.npy"), "-i", str(work / "cache_position.npy"),
             "-o", str(out)], 300)
    t = phase("aotrt run (load + step 0)", t)
    ok = r.returncode == 0
    results["whole_extraction_fallback"] = "extracting the whole" in r.stderr
    if not ok:
        print(r.stdout[-4000:], r.stderr[-4000:], flush=True)
    else:
        got = np.load(out / "output_0.npy")
        results["finite"] = bool(np.isfinite(got).all())
        if eager is not None:
            diff = float(np.max(np.abs(got - eager)))
            results.update(max_abs_logit_diff=diff, argmax_aotrt=int(got.argmax()), argmax_eager=int(eager.argmax()),
                           logit_range=[float(eager.min()), float(eager.max())])
            print(f"logits: max abs diff {diff:.4f} (eager range {eager.min():.2f}..{eager.max():.2f}); "
                  f"argmax aotrt {got.argmax()} eager {eager.argmax()}", flush=True)
            ok = results["finite"] and diff <= args.max_diff
        else:
            ok = results["finite"]

    b = run([args.aotrt, "bench", str(pkg), "-i", str(work / "input_ids.npy"), "-i", str(work / "cache_position.npy"),
             "--iters", str(args.iters), "--warmup", "3", "--json"], 300)
    t = phase("aotrt bench (load + steps)", t)
    if b.returncode == 0:
        rep = json.loads(b.stdout.strip().splitlines()[-1])
        results.update(load_s=rep["load_s"], peak_host_rss_bytes=rep["peak_host_bytes"],
                       step_p50_us=rep["latency_us"]["p50"], first_run_s=rep["first_run_s"],
                       constants_bytes=rep.get("constants_bytes"))
        print(f"load {rep['load_s']:.2f} s; peak host RSS {rep['peak_host_bytes'] / 2**30:.2f} GiB "
              f"for {pkg.stat().st_size / 2**30:.2f} GiB of package; decode step p50 "
              f"{rep['latency_us']['p50'] / 1000:.2f} ms", flush=True)
    else:
        ok = False
        print(b.stdout[-4000:], b.stderr[-4000:], flush=True)
    # Generation: the package as a torch-flow decoder (one token a step; the cache length read
    # from its state), greedy, from the same first token: its first new token is step 0's argmax.
    g = run([args.aotrt, "generate", str(pkg), "--prompt-ids", str(args.token), "--max-new-tokens",
             str(args.new_tokens), "--json"], 300)
    t = phase("aotrt generate (load + tokens)", t)
    if g.returncode == 0:
        gen = json.loads(g.stdout.strip().splitlines()[-1])
        results.update(generate_tokens=gen["tokens"], generate_tokens_per_s=gen["tokens_per_s"],
                       generate_ttft_ms=gen["ttft_ms"], generate_itl_ms=gen["inter_token_ms"])
        print(f"generate: {len(gen['tokens'])} tokens, {gen['tokens_per_s']:.1f} tokens/s, "
              f"inter-token p50 {gen['inter_token_ms']['p50']:.3f} ms", flush=True)
        if "argmax_aotrt" in results:
            ok = ok and gen["tokens"][0] == results["argmax_aotrt"]
    else:
        ok = False
        print(g.stdout[-4000:], g.stderr[-4000:], flush=True)
    results["ok"] = ok
    print(json.dumps(results, indent=1), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    phase("total", T0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
