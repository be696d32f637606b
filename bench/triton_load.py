"""Triton Inference Server with the aotrt backend under load, beside `aotrt bench` on the
same package.

Exports resnet_basic_block with a dynamic batch of 2..8 (or takes --package), serves it
from a tritonserver on 127.0.0.1 (one instance, dynamic batching), and for each concurrency
runs that many gRPC clients, each sending one-row requests back to back for --seconds (and
at most --max-requests in all): throughput, p50/p99 latency, failed requests and the mean
batch the server formed (from its statistics). Then `aotrt bench` times the package alone
at batch 2 (its smallest) and 8 (its largest). Writes a markdown table and the raw JSON.

    python3 bench/triton_load.py --device cpu --seconds 30 --out bench/results/triton_cpu
    python3 bench/triton_load.py --device cuda --kind KIND_GPU --out bench/results/triton_h200

Every loop is bounded in count and time; the server listens on loopback only.
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

MAX_BATCH = 8


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def load_level(server: triton.Server, input_name: str, output_name: str, concurrency: int,
               seconds: float, max_requests: int) -> dict:
    import tritonclient.grpc as grpcclient

    x = np.random.default_rng(0).standard_normal((1, 32, 32, 32)).astype(np.float32)
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    failures = [0] * concurrency
    budget = threading.Semaphore(max_requests)
    deadline = time.monotonic() + seconds
    before = server.statistics("resnet_block")

    def client_loop(k: int) -> None:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        inp = grpcclient.InferInput(input_name, list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        out = [grpcclient.InferRequestedOutput(output_name)]
        try:
            while time.monotonic() < deadline and budget.acquire(blocking=False):
                t0 = time.perf_counter()
                try:
                    r = client.infer("resnet_block", [inp], outputs=out, client_timeout=60)
                    if r.as_numpy(output_name).shape != (1, 64, 16, 16):
                        failures[k] += 1
                        continue
                except Exception:  # noqa: BLE001 - every failed request is counted
                    failures[k] += 1
                    continue
                latencies[k].append((time.perf_counter() - t0) * 1e3)
        finally:
            client.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    wall = time.monotonic() - t0
    after = server.statistics("resnet_block")
    done = [v for per in latencies for v in per]
    executions = int(after["execution_count"]) - int(before["execution_count"])
    rows = int(after["inference_count"]) - int(before["inference_count"])
    return dict(concurrency=concurrency, requests=len(done), failed=sum(failures), wall_s=round(wall, 2),
                throughput_per_s=len(done) / wall, p50_ms=percentile(done, 50), p99_ms=percentile(done, 99),
                executions=executions, mean_batch=rows / executions if executions else float("nan"))


def aotrt_bench(aotrt: Path, package: Path, batch: int, iters: int, workdir: Path) -> dict:
    x = np.random.default_rng(0).standard_normal((batch, 32, 32, 32)).astype(np.float32)
    path = workdir / f"x{batch}.npy"
    np.save(path, x)
    out = subprocess.run([str(aotrt), "bench", str(package), "--input", str(path), "--iters", str(iters), "--json"],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    r = json.loads(out)
    lat = r["latency_us"]
    return dict(batch=batch, iters=iters, p50_ms=lat["p50"] / 1e3, p99_ms=lat["p99"] / 1e3,
                runs_per_s=r["runs_per_s"], samples_per_s=r["samples_per_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--kind", default=None, help="instance kind (default KIND_CPU, KIND_GPU for cuda)")
    ap.add_argument("--package", type=Path, help="a resnet_basic_block package with a dynamic batch")
    ap.add_argument("--build", type=Path, default=REPO / "build")
    ap.add_argument("--concurrency", default="1,2,4,8,16")
    ap.add_argument("--seconds", type=float, default=30, help="per concurrency level")
    ap.add_argument("--max-requests", type=int, default=200000, help="per concurrency level")
    ap.add_argument("--bench-iters", type=int, default=200)
    ap.add_argument("--queue-delay-us", type=int, default=2000)
    ap.add_argument("--out", type=Path, required=True, help="writes OUT.md and OUT.json")
    args = ap.parse_args()
    kind = args.kind or ("KIND_GPU" if args.device == "cuda" else "KIND_CPU")

    with tempfile.TemporaryDirectory(prefix="aotrt_triton_load_") as tmp:
        root = Path(tmp)
        package = args.package
        if package is None:
            from aotrt_tools import export

            info = export.export_model(root / "zoo", name="resnet_basic_block", stem="resnet_block",
                                       device=args.device, dynamic_batch=MAX_BATCH)
            package = Path(info["package"])
        repo = root / "models"
        triton.add_model(repo, "resnet_block", package, {
            "max_batch_size": MAX_BATCH,
            "dynamic_batching": {"max_queue_delay_microseconds": args.queue_delay_us},
            "instance_group": {"kind": kind, "count": 1},
        })
        names_in, names_out = triton.package_tensor_names(package)
        server = triton.Server(triton.tritonserver(), repo, triton.backend_directory(args.build, root / "backends"),
                               root / "tritonserver.log")
        levels = []
        with server:
            server.wait_ready(["resnet_block"], timeout_s=240)
            load_level(server, names_in[0], names_out[0], 2, 3, 200)  # warm-up
            for c in (int(v) for v in args.concurrency.split(",")):
                levels.append(load_level(server, names_in[0], names_out[0], c, args.seconds, args.max_requests))
                print(json.dumps(levels[-1]), flush=True)
        benches = [aotrt_bench(args.build / "aotrt", package, b, args.bench_iters, root) for b in (2, MAX_BATCH)]

    machine = dict(host=platform.node(), cpus=os.cpu_count(), load_avg=os.getloadavg(),
                   device=args.device, kind=kind, omp_num_threads=os.environ.get("OMP_NUM_THREADS"))
    result = dict(machine=machine, seconds_per_level=args.seconds, queue_delay_us=args.queue_delay_us,
                  triton=levels, aotrt_bench=benches, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    lines = [
        f"# Triton + aotrt backend under load: resnet_basic_block, {args.device} ({kind})",
        "",
        f"{result['date']}, {machine['cpus']} CPUs, load average at the end {tuple(round(v, 1) for v in machine['load_avg'])}."
        f" Package: resnet_basic_block exported with --dynamic-batch {MAX_BATCH} (batches 2..{MAX_BATCH}).",
        f"tritonserver 2.51.0 on 127.0.0.1, one instance, dynamic batching (max_batch_size {MAX_BATCH},"
        f" max_queue_delay {args.queue_delay_us} us); each client sends one-row requests over gRPC back to back"
        f" for {args.seconds:g} s. Latency is the client's, request to response.",
        "",
        "| concurrency | requests | failed | throughput (req/s) | p50 (ms) | p99 (ms) | mean batch |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in levels:
        lines.append(f"| {r['concurrency']} | {r['requests']} | {r['failed']} | {r['throughput_per_s']:.1f} |"
                     f" {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['mean_batch']:.2f} |")
    lines += ["", "`aotrt bench` on the same package (no server; one process, back-to-back runs):", "",
              "| batch | runs | p50 (ms) | p99 (ms) | runs/s | samples/s |", "|---:|---:|---:|---:|---:|---:|"]
    for b in benches:
        lines.append(f"| {b['batch']} | {b['iters']} | {b['p50_ms']:.2f} | {b['p99_ms']:.2f} | {b['runs_per_s']:.1f} |"
                     f" {b['samples_per_s']:.1f} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if any(r["failed"] for r in levels) else 0


if __name__ == "__main__":
    sys.exit(main())
