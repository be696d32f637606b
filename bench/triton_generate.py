"""Generation through Triton Inference Server with the aotrt backend under load, beside
`aotrt generate` alone on the same package.

Exports a Llama-shaped decoder with random weights by torch's own flow (Hugging Face's
TorchExportableModuleForDecoderOnlyLM, a static cache, aoti_compile_and_package with
link_libtorch=False; one token a step), or takes --package. Serves it from a tritonserver on
127.0.0.1 as a decoupled generation model (one instance, max_sessions = the largest
concurrency), warms every session up, then for each concurrency runs that many gRPC streaming
clients, each sending requests back to back (a random prompt of --prompt-len tokens,
--new-tokens new ones, sampled with a seed of its own) for --seconds (and at most
--max-requests in all): total tokens/s, time to first token and inter-token latency (p50/p99,
as the client sees the responses arrive), failed requests (an error, or not exactly
--new-tokens tokens). The server's resident memory (and, on CUDA, the device's used memory)
is sampled every second over the whole run. Then `aotrt generate` runs the same requests
alone, one process each. Writes OUT.md and OUT.json.

    python3 bench/triton_generate.py --shape small --device cpu --seconds 60 \
        --out bench/results/triton_generate_cpu
    python3 bench/triton_generate.py --shape 1b --device cuda --seconds 60 --out $OUT/triton_generate_gpu

Shapes: small (hidden 256, 4 layers, 8 heads, 2 KV heads, vocab 32000, fp32, cache 512) and
1b (TinyLlama's: hidden 2048, intermediate 5632, 22 layers, 32 heads, 4 KV heads, vocab 32000,
bf16, cache 1024). Every loop is bounded in count and time; the server listens on loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from aotrt_tools import triton  # noqa: E402

SHAPES = {
    "small": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
                  num_key_value_heads=2, vocab_size=32000, dtype="float32", max_cache_len=512),
    "1b": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
               num_key_value_heads=4, vocab_size=32000, dtype="bfloat16", max_cache_len=1024),
}


def export_llama(shape: str, device: str, path: Path) -> dict:
    """A LlamaForCausalLM of `shape` with random weights, exported one token a step."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    s = dict(SHAPES[shape])
    dtype, cache = getattr(torch, s.pop("dtype")), s.pop("max_cache_len")
    torch.manual_seed(0)
    config = LlamaConfig(**s, max_position_embeddings=max(cache, 2048))
    model = LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
    model.generation_config.cache_implementation = "static"  # what the exportable module wants
    model.generation_config.use_cache = True
    t0 = time.perf_counter()
    with torch.no_grad():
        wrapper = TorchExportableModuleForDecoderOnlyLM(model, batch_size=1, max_cache_len=cache,
                                                        device=torch.device(device))
        ep = wrapper.export(input_ids=torch.zeros(1, 1, dtype=torch.long, device=device),
                            cache_position=torch.zeros(1, dtype=torch.long, device=device))
        options = {"aot_inductor.link_libtorch": False}
        if device == "cpu":
            options["cpp.vec_isa_ok"] = True  # Note [CPU vectorization and Sleef] in aotrt_tools/export.py
        torch._inductor.aoti_compile_and_package(ep, package_path=str(path), inductor_configs=options)
    params = sum(p.numel() for p in model.parameters())
    return dict(shape=shape, params=params, export_s=round(time.perf_counter() - t0, 1), **SHAPES[shape])


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


class MemorySampler:
    """The server's resident memory and (CUDA) the device's used memory, every `period` s."""

    def __init__(self, pid: int, cuda: bool, period: float = 1.0):
        self.pid, self.cuda, self.period = pid, cuda, period
        self.samples: list[tuple[float, float, float | None]] = []  # (t, rss MiB, device MiB)
        self.stop = threading.Event()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self) -> tuple[float, float | None]:
        rss = float("nan")
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
        dev = None
        if self.cuda:
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                      "-i", os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]],
                                     capture_output=True, text=True, timeout=10).stdout
                dev = float(out.strip().splitlines()[0])
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                dev = None
        return rss, dev

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                rss, dev = self.sample()
            except OSError:
                return
            self.samples.append((time.monotonic() - self.t0, rss, dev))
            self.stop.wait(self.period)

    def mark(self) -> float:
        return time.monotonic() - self.t0

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def window(self, start: float, end: float) -> dict:
        rows = [s for s in self.samples if start <= s[0] <= end]
        if not rows:
            return {}
        rss = [r[1] for r in rows]
        out = dict(rss_first_mib=rss[0], rss_last_mib=rss[-1], rss_max_mib=max(rss), samples=len(rows))
        dev = [r[2] for r in rows if r[2] is not None]
        if dev:
            out.update(device_first_mib=dev[0], device_last_mib=dev[-1], device_max_mib=max(dev))
        return out


def load_level(server: triton.Server, concurrency: int, seconds: float, max_requests: int,
               prompt_len: int, new_tokens: int, vocab: int, sampling: dict) -> dict:
    """`concurrency` streams for `seconds`; a request still running at the end is cut there
    (cancelled: its tokens so far count, it does not count as a request)."""
    budget = threading.Semaphore(max_requests)
    stop_at = time.monotonic() + seconds
    per = [dict(tokens=0, ttft=[], itl=[], failed=0, requests=0, cut=0, errors=[]) for _ in range(concurrency)]

    def client(k: int) -> None:
        rng = np.random.default_rng(1000 * concurrency + k)
        stream = triton.GenerationStream(server.grpc_url)
        mine = per[k]
        try:
            while time.monotonic() < stop_at and budget.acquire(blocking=False):
                prompt = rng.integers(0, vocab, prompt_len).tolist()
                inputs = triton.generation_inputs(prompt, new_tokens, seed=int(rng.integers(0, 2**31)), **sampling)
                try:
                    got = stream.receive(stream.send("llm", inputs), timeout_s=seconds + 600, stop_at=stop_at)
                except Exception as e:  # noqa: BLE001 - every failed request is counted
                    mine["requests"] += 1
                    mine["failed"] += 1
                    mine["errors"].append(repr(e)[:200])
                    stream.close()  # unusable after a timeout: a new one
                    stream = triton.GenerationStream(server.grpc_url)
                    continue
                mine["tokens"] += len(got.tokens)
                if got.arrivals:
                    mine["ttft"].append(got.arrivals[0] * 1e3)
                mine["itl"] += [(b - a) * 1e3 for a, b in zip(got.arrivals, got.arrivals[1:])]
                if got.cut:
                    mine["cut"] += 1
                    break
                mine["requests"] += 1
                if got.error is not None or len(got.tokens) != new_tokens or not got.final_empty:
                    mine["failed"] += 1
                    mine["errors"].append((got.error or f"{len(got.tokens)} tokens")[:200])
        finally:
            stream.close()  # cancels a cut request on the server

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 900)
    wall = time.monotonic() - t0
    # The cut requests' sessions are freed before the next level starts.
    deadline = time.monotonic() + 120
    while (server.metric("aotrt_generation_active_sessions", model="llm") or 0) > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    ttft = [v for p in per for v in p["ttft"]]
    itl = [v for p in per for v in p["itl"]]
    tokens = sum(p["tokens"] for p in per)
    return dict(concurrency=concurrency, requests=sum(p["requests"] for p in per),
                failed=sum(p["failed"] for p in per), cut=sum(p["cut"] for p in per),
                errors=[e for p in per for e in p["errors"]][:5],
                tokens=tokens, wall_s=round(wall, 2), tokens_per_s=tokens / wall,
                ttft_p50_ms=percentile(ttft, 50), ttft_p99_ms=percentile(ttft, 99),
                itl_p50_ms=percentile(itl, 50), itl_p99_ms=percentile(itl, 99))


def aotrt_generate(aotrt: Path, package: Path, runs: int, prompt_len: int, new_tokens: int, vocab: int,
                   sampling: dict) -> dict:
    """`aotrt generate --json` alone, one process a request (load excluded from its timings)."""
    rng = np.random.default_rng(7)
    results = []
    for _ in range(runs):
        prompt = rng.integers(0, vocab, prompt_len).tolist()
        args = [str(aotrt), "generate", str(package), "--prompt-ids", ",".join(map(str, prompt)),
                "--max-new-tokens", str(new_tokens), "--json", "--seed", str(int(rng.integers(0, 2**31)))]
        for flag, key in (("--temperature", "temperature"), ("--top-k", "top_k"), ("--top-p", "top_p")):
            if key in sampling:
                args += [flag, str(sampling[key])]
        out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=900).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    # Each run's first token includes its prompt, one decode step a token.
    tps = [len(r["tokens"]) / (r["total_ms"] / 1e3) for r in results]
    return dict(runs=runs, tokens_per_s=percentile(tps, 50),
                decode_tokens_per_s=percentile([r["tokens_per_s"] for r in results], 50),
                ttft_p50_ms=percentile([r["ttft_ms"] for r in results], 50),
                itl_p50_ms=percentile([r["inter_token_ms"]["p50"] for r in results], 50),
                itl_p99_ms=percentile([r["inter_token_ms"]["p99"] for r in results], 50),
                device=results[0]["device"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="small")
    ap.add_argument("--package", type=Path, help="serve this package instead of exporting one")
    ap.add_argument("--keep-package", type=Path, help="export into (or reuse) this path")
    ap.add_argument("--build", type=Path, default=REPO / "build")
    ap.add_argument("--concurrency", default="1,4,16,64")
    ap.add_argument("--seconds", type=float, default=60, help="per concurrency level")
    ap.add_argument("--max-requests", type=int, default=100000, help="per concurrency level")
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--top-k", type=int, default=50)
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--warm-up-seconds", type=float, default=20,
                    help="every session made (and its CUDA graphs captured) at the largest concurrency")
    ap.add_argument("--generate-runs", type=int, default=5, help="aotrt generate runs beside")
    ap.add_argument("--out", type=Path, required=True, help="writes OUT.md and OUT.json")
    args = ap.parse_args()
    kind = "KIND_GPU" if args.device == "cuda" else "KIND_CPU"
    levels_wanted = [int(v) for v in args.concurrency.split(",")]
    sampling = dict(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)

    with tempfile.TemporaryDirectory(prefix="aotrt_triton_generate_") as tmp:
        root = Path(tmp)
        package, model_info = args.package, dict(shape="given", package=str(args.package))
        if package is None:
            package = args.keep_package or root / f"llama_{args.shape}.pt2"
            if package.exists():
                model_info = dict(shape=args.shape, reused=str(package), **SHAPES[args.shape])
            else:  # renamed when whole: a killed export leaves nothing to reuse
                partial = package.with_name(package.stem + ".partial.pt2")
                model_info = export_llama(args.shape, args.device, partial)
                partial.rename(package)
            print(json.dumps(model_info), flush=True)
        vocab = SHAPES[args.shape]["vocab_size"] if args.package is None else 32000
        repo = root / "models"
        triton.add_model(repo, "llm", package, {
            "model_transaction_policy": {"decoupled": True},
            "instance_group": {"kind": kind, "count": 1},
            "parameters": {"key": "max_sessions", "value": {"string_value": str(max(levels_wanted))}},
        })
        server = triton.Server(triton.tritonserver(), repo, triton.backend_directory(args.build, root / "backends"),
                               root / "tritonserver.log", metrics=True)
        levels = []
        with server:
            server.wait_ready(["llm"], timeout_s=600)
            memory = MemorySampler(server.process.pid, args.device == "cuda")
            try:
                # Every session made and its CUDA graphs captured before anything is measured.
                warm = load_level(server, max(levels_wanted), args.warm_up_seconds, max(levels_wanted),
                                  args.prompt_len, 4, vocab, sampling)
                print(json.dumps(dict(warm_up=warm)), flush=True)
                start = memory.mark()
                for c in levels_wanted:
                    t = memory.mark()
                    levels.append(load_level(server, c, args.seconds, args.max_requests, args.prompt_len,
                                             args.new_tokens, vocab, sampling))
                    levels[-1]["memory"] = memory.window(t, memory.mark())
                    print(json.dumps(levels[-1]), flush=True)
                end = memory.mark()
                sessions = server.metric("aotrt_generation_sessions", model="llm")
                served_tokens = server.metric("aotrt_generation_tokens", model="llm")
            finally:
                memory.close()
            overall = memory.window(start, end)
        alone = aotrt_generate(args.build / "aotrt", package, args.generate_runs, args.prompt_len,
                               args.new_tokens, vocab, sampling)
        print(json.dumps(dict(aotrt_generate=alone)), flush=True)

    machine = dict(host=platform.node(), cpus=os.cpu_count(), load_avg=os.getloadavg(), device=args.device,
                   kind=kind, omp_num_threads=os.environ.get("OMP_NUM_THREADS"))
    result = dict(machine=machine, model=model_info, seconds_per_level=args.seconds, prompt_len=args.prompt_len,
                  new_tokens=args.new_tokens, sampling=sampling, triton=levels, memory=overall,
                  sessions=sessions, server_tokens=served_tokens, aotrt_generate=alone,
                  command=" ".join(["python3 bench/triton_generate.py",
                                    *sys.argv[1:]]),
                  date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    s = SHAPES.get(args.shape, {})
    dev_mem = ""
    if "device_first_mib" in overall:
        dev_mem = (f" Device memory used: {overall['device_first_mib']:.0f} MiB at the start of the first level,"
                   f" {overall['device_last_mib']:.0f} MiB at the end, {overall['device_max_mib']:.0f} MiB at most.")
    lines = [
        f"# Generation through Triton + the aotrt backend: Llama {args.shape}, {args.device} ({kind})",
        "",
        f"{result['date']}, {machine['cpus']} CPUs, load average at the end "
        f"{tuple(round(v, 1) for v in machine['load_avg'])}, OMP_NUM_THREADS={machine['omp_num_threads'] or 'unset'}."
        f" Model: LlamaForCausalLM with random weights, hidden {s.get('hidden_size')}, {s.get('num_hidden_layers')}"
        f" layers, {s.get('num_attention_heads')} heads / {s.get('num_key_value_heads')} KV heads, vocab"
        f" {s.get('vocab_size')}, {s.get('dtype')}, static cache of {s.get('max_cache_len')} positions, exported by"
        f" torch's flow (TorchExportableModuleForDecoderOnlyLM, one token a step: the prompt goes through the"
        f" decode graph token by token).",
        f"tritonserver 2.51.0 on 127.0.0.1, one decoupled instance with max_sessions {max(levels_wanted)};"
        f" each client streams requests over gRPC back to back for {args.seconds:g} s: a random prompt of"
        f" {args.prompt_len} tokens, {args.new_tokens} new tokens sampled (temperature {args.temperature},"
        f" top-k {args.top_k}, top-p {args.top_p}, a seed each). Times are the client's: first token from the"
        f" request sent, inter-token between responses arriving. Tokens count every token streamed within"
        f" the level; a request still running at its end is cut there (cancelled, its session freed) and"
        f" is not counted among the requests; failed: an error, or a finished request without exactly"
        f" {args.new_tokens} tokens and an empty final response.",
        "",
        "| streams | requests | failed | cut | tokens | total tokens/s | TTFT p50 (ms) | TTFT p99 (ms) |"
        " inter-token p50 (ms) | inter-token p99 (ms) | server RSS (MiB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in levels:
        m = r.get("memory", {})
        lines.append(f"| {r['concurrency']} | {r['requests']} | {r['failed']} | {r['cut']} | {r['tokens']} |"
                     f" {r['tokens_per_s']:.1f} |"
                     f" {r['ttft_p50_ms']:.1f} | {r['ttft_p99_ms']:.1f} | {r['itl_p50_ms']:.2f} | {r['itl_p99_ms']:.2f} |"
                     f" {m.get('rss_first_mib', float('nan')):.0f} -> {m.get('rss_last_mib', float('nan')):.0f} |")
    lines += [
        "",
        f"Memory over the {overall.get('samples', 0)} s of load (sampled every second, after a warm-up that made"
        f" all {sessions and int(sessions)} sessions): server RSS {overall.get('rss_first_mib', float('nan')):.0f} MiB"
        f" at the start, {overall.get('rss_last_mib', float('nan')):.0f} MiB at the end,"
        f" {overall.get('rss_max_mib', float('nan')):.0f} MiB at most.{dev_mem}"
        f" Tokens the server counted (aotrt_generation_tokens, warm-up included): {served_tokens and int(served_tokens)}.",
        "",
        f"`aotrt generate` alone on the same package ({alone['runs']} runs, one process each, the same prompt"
        f" length and sampling; medians over the runs):",
        "",
        "| tokens/s (first token included) | decode tokens/s | TTFT (ms) | inter-token p50 (ms) | inter-token p99 (ms) |",
        "|---:|---:|---:|---:|---:|",
        f"| {alone['tokens_per_s']:.1f} | {alone['decode_tokens_per_s']:.1f} | {alone['ttft_p50_ms']:.1f} |"
        f" {alone['itl_p50_ms']:.2f} | {alone['itl_p99_ms']:.2f} |",
        "",
        f"Made by `{result['command']}`.",
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if any(r["failed"] for r in levels) else 0


if __name__ == "__main__":
    sys.exit(main())
