"""The int4 weight-only matmul on the CPU: aotrt against eager, rounds alternated.

One `aten._weight_int4pack_mm_for_cpu` of x [M, K] by an int4 weight [N, K] (groups of 128,
packed by `_convert_weight_to_int4pack_for_cpu` on this machine into a buffer), exported by
torch's own flow (aoti_compile_and_package, link_libtorch=False) and timed with `aotrt bench`
(p50); eager is the same module called in torch (median of --iters calls). Prints a markdown
table of the median over rounds and each ratio (below 1: aotrt is faster).

    python3 bench/cpu_int4.py --threads 1 --rounds 5 --out bench/results/cpu-int4-DATE.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [(1, 2048, 2048, "bfloat16"), (32, 2048, 2048, "bfloat16"),
           (1, 2048, 2048, "float32"), (32, 2048, 2048, "float32")]
GROUP = 128


def module(n: int, k: int, dtype):
    import torch

    class Int4Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(0)
            q = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=g)
            self.register_buffer("w", torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1))
            sz = torch.stack([torch.rand(k // GROUP, n, generator=g) * 0.05 + 0.01,
                              torch.randn(k // GROUP, n, generator=g) * 0.05], dim=-1)
            self.register_buffer("sz", sz.to(dtype))

        def forward(self, x):
            return torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.w, GROUP, self.sz)

    return Int4Linear().eval()


def export(cfg, path: Path) -> None:
    import torch
    m, n, k, dt = cfg
    mod = module(n, k, getattr(torch, dt))
    x = torch.randn(m, k).to(getattr(torch, dt))
    with torch.no_grad():
        ep = torch.export.export(mod, (x,))
        torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path), inductor_configs={"aot_inductor.link_libtorch": False})


def eager_ms(cfg, iters: int) -> float:
    import torch
    m, n, k, dt = cfg
    mod, x = module(n, k, getattr(torch, dt)), torch.randn(m, k).to(getattr(torch, dt))
    times = []
    with torch.no_grad():
        for i in range(iters + 3):
            t = time.perf_counter()
            mod(x)
            if i >= 3:
                times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def aotrt_ms(aotrt: Path, pkg: Path, threads: int, iters: int) -> float:
    r = subprocess.run([str(aotrt), "bench", str(pkg), "--warmup", "3", "--iters", str(iters), "--json"],
                       capture_output=True, text=True, check=True,
                       env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    return json.loads(r.stdout)["latency_us"]["p50"] / 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--work", default="/tmp/aotrt-bench-int4")
    ap.add_argument("--aotrt", default=str(REPO / "build" / "aotrt"))
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    pkgs = {}
    for cfg in CONFIGS:
        pkgs[cfg] = work / ("m%d_n%d_k%d_%s_%s.pt2" % (*cfg, torch.backends.cpu.get_cpu_capability()))
        if not pkgs[cfg].exists():
            export(cfg, pkgs[cfg])
    load_before = os.getloadavg()[0]
    times = {cfg: {"aotrt": [], "eager": []} for cfg in CONFIGS}
    for _ in range(a.rounds):
        for cfg in CONFIGS:
            times[cfg]["aotrt"].append(aotrt_ms(Path(a.aotrt), pkgs[cfg], a.threads, a.iters))
            times[cfg]["eager"].append(eager_ms(cfg, a.iters))
    lines = [f"# int4 weight-only matmul on the CPU ({time.strftime('%Y-%m-%d')})", "",
             f"Command: `python3 bench/cpu_int4.py {' '.join(sys.argv[1:])}`", "",
             f"Machine: {os.uname().machine}, {os.cpu_count()} cores, torch {torch.__version__}, ATen "
             f"capability {torch.backends.cpu.get_cpu_capability()}, {a.threads} thread(s) per contender; "
             f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after.", "",
             f"Median over {a.rounds} alternated rounds of each round's median over {a.iters} calls, in ms "
             f"(int4 groups of {GROUP}). `aotrt vs eager` below 1: aotrt is faster.", "",
             "| M x K by N x K | dtype | aotrt | eager | aotrt vs eager |", "|---|---|---|---|---|"]
    for cfg in CONFIGS:
        m, n, k, dt = cfg
        ta, te = statistics.median(times[cfg]["aotrt"]), statistics.median(times[cfg]["eager"])
        lines.append(f"| {m} x {k} by {n} x {k} | {dt} | {ta:.2f} | {te:.2f} | {ta / te:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
