#!/usr/bin/env python3
"""Where a CUDA run's time goes: the kernels of one run, for aotrt and for torch.compile.

Each side runs under Nsight Compute with capture off until its timed region (aotrt bench
--profiler-range; torch.cuda.profiler.start/stop around one torch.compile call), which records
the duration of every kernel launched in one run (gpu__time_duration, clocks and caches left
alone). Printed and written as markdown: the kernel count and time sum of each side, the
kernels grouped by name, and aotrt's host overhead = aotrt's p50 wall time (a plain `aotrt
bench` run) minus the sum of its kernel times.

ncu serializes kernels, so the sum is what the kernels take on an idle device, without the
gaps between them. Run on the GPU machine, after scripts/gpu_e2e.sh or bench_gpu.sh exported
the model into the export dir:

    python3 bench/kernel_times.py --model resnet50 --aotrt build-gpu/aotrt \\
        --export-dir build-gpu/zoo --out $OUT
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NCU_ARGS = ["--profile-from-start", "off", "--clock-control", "none", "--cache-control", "none",
            "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base"]


def ncu_binary() -> str:
    found = shutil.which("ncu")
    if found:
        return found
    for base in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"), reverse=True):
        return str(base)
    sys.exit("kernel_times: ncu (Nsight Compute) not found")


def parse_ncu_metrics(text: str) -> list[tuple[str, dict[str, float]]]:
    """(kernel name, {metric: value}) per launch in launch order, from ncu --csv output (one row
    per launch and metric; values in base units with --print-units base)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    launches: dict[str, tuple[str, dict[str, float]]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if "Metric Name" not in row or "Kernel Name" not in row:
            continue
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except ValueError:  # "n/a" where ncu could not collect the metric
            continue
        launch = launches.setdefault(row.get("ID", str(len(launches))), (row["Kernel Name"], {}))
        launch[1][row["Metric Name"]] = value
    return list(launches.values())


def parse_ncu(text: str) -> list[tuple[str, float]]:
    """(kernel name, duration ns) per launch, from ncu --csv output."""
    return [(name, m["gpu__time_duration.sum"]) for name, m in parse_ncu_metrics(text)
            if "gpu__time_duration.sum" in m]


def run_ncu_metrics(cmd: list[str], log: Path, metrics: list[str],
                    timeout: float = 900) -> list[tuple[str, dict[str, float]]]:
    """cmd under ncu (capture between cudaProfilerStart and Stop), collecting `metrics`."""
    args = list(NCU_ARGS)
    args[args.index("--metrics") + 1] = ",".join(metrics)
    res = subprocess.run([ncu_binary(), *args, *cmd], capture_output=True, text=True, timeout=timeout)
    log.write_text(res.stdout + "\n--- stderr ---\n" + res.stderr)
    if res.returncode != 0:
        raise RuntimeError(f"ncu failed ({res.returncode}); see {log}")
    return parse_ncu_metrics(res.stdout)


def run_ncu(cmd: list[str], log: Path) -> list[tuple[str, float]]:
    return [(name, m["gpu__time_duration.sum"])
            for name, m in run_ncu_metrics(cmd, log, ["gpu__time_duration.sum"])
            if "gpu__time_duration.sum" in m]


def child_compile(name: str, export_dir: Path, warmup: int) -> None:
    """One torch.compile call of the zoo model, between cudaProfilerStart and Stop."""
    import torch

    sys.path.insert(0, str(REPO / "bench"))
    sys.path.insert(0, str(REPO / "python"))
    from compare import load_inputs  # noqa: E402
    from aotrt_tools import zoo  # noqa: E402

    info = json.loads((export_dir / f"{name}.json").read_text())
    info["input_files"] = [str(export_dir / f"{name}.input_{k}.npy") for k in range(len(info["inputs"]))]
    module, _, _ = zoo.get(name)
    module = module.to("cuda")
    if zoo.entry(name).dtype != torch.float32:
        module = module.to(zoo.entry(name).dtype)
    inputs = load_inputs(info, "cuda")
    fn = torch.compile(module)
    with torch.no_grad():
        for _ in range(warmup + 1):
            fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def aotrt_command(aotrt: Path, info: dict, export_dir: Path, name: str, iters: int, extra: list[str]) -> list[str]:
    cmd = [str(aotrt), "bench", info["package"], "--warmup", "10", "--iters", str(iters), *extra]
    for k in range(len(info["inputs"])):
        cmd += ["--input", str(export_dir / f"{name}.input_{k}.npy")]
    return cmd


def grouped(kernels: list[tuple[str, float]]) -> list[tuple[str, int, float]]:
    acc: dict[str, list[float]] = defaultdict(list)
    for k, ns in kernels:
        acc[k[:90]].append(ns)
    return sorted(((k, len(v), sum(v)) for k, v in acc.items()), key=lambda r: -r[2])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--aotrt", default=str(REPO / "build-gpu" / "aotrt"))
    p.add_argument("--export-dir", default=str(REPO / "build-gpu" / "zoo"))
    p.add_argument("--out", default=".")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--aotrt-only", action="store_true", help="skip the torch.compile side")
    p.add_argument("--child-compile", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    export_dir = Path(args.export_dir)
    if args.child_compile:
        child_compile(args.model, export_dir, args.warmup)
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.model
    info = json.loads((export_dir / f"{name}.json").read_text())

    # aotrt's wall time, unprofiled.
    res = subprocess.run(aotrt_command(Path(args.aotrt), info, export_dir, name, 200, ["--json"]),
                         capture_output=True, text=True, timeout=600, check=True)
    bench = json.loads(res.stdout.strip().splitlines()[-1])
    wall_us = bench["latency_us"]["p50"]

    sides = {"aotrt": run_ncu(aotrt_command(Path(args.aotrt), info, export_dir, name, 1, ["--profiler-range"]),
                              out / f"ncu_aotrt_{name}.log")}
    if not args.aotrt_only:
        sides["torch.compile"] = run_ncu([sys.executable, str(Path(__file__).resolve()), "--model", name,
                                          "--export-dir", str(export_dir), "--warmup", str(args.warmup),
                                          "--child-compile"], out / f"ncu_compile_{name}.log")
    lines = [f"# Kernel times of one run: {name}", "",
             "Nsight Compute, gpu__time_duration of every kernel of one run (clocks and caches left alone; "
             "kernels serialized, so no overlap and no launch gaps). Command: "
             f"`python3 bench/kernel_times.py --model {name}`.", "",
             "| | kernels | kernel time sum µs |", "|---|---|---|"]
    sums = {}
    for side, ks in sides.items():
        sums[side] = sum(ns for _, ns in ks) / 1e3
        lines.append(f"| {side} | {len(ks)} | {sums[side]:.1f} |")
    overhead = wall_us - sums["aotrt"]
    lines += ["", f"aotrt p50 wall time (plain `aotrt bench`, 200 runs): {wall_us:.1f} µs; minus its kernel "
              f"time sum: host overhead {overhead:.1f} µs = {100 * overhead / wall_us:.1f}% of the run.", ""]
    for side, ks in sides.items():
        lines += [f"## {side}: kernels by name (top {args.top} by time)", "",
                  "| kernel | launches | µs |", "|---|---|---|"]
        for k, n, ns in grouped(ks)[: args.top]:
            lines.append(f"| `{k}` | {n} | {ns / 1e3:.1f} |")
        lines.append("")
    text = "\n".join(lines)
    (out / f"kernel_times_{name}.md").write_text(text)
    (out / f"kernel_times_{name}.json").write_text(json.dumps(
        {"model": name, "wall_p50_us": wall_us, "sums_us": sums,
         "kernels": {s: ks for s, ks in sides.items()}}, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
