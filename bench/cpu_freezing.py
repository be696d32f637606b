#!/usr/bin/env python3
"""freezing=True on the CPU, side by side (issue 13, item 4): what folding buys aotrt.

Contenders, per model, timed in rounds that alternate them in one run (the machine is shared;
a round of each contender follows a round of every other, so a load change hits them all):
  aotrt              `aotrt bench` on torch's own export, freezing off
  aotrt-frozen       `aotrt bench`, freezing=True with cpp.weight_prepack=False (plain weights:
                     Note [Frozen CPU packages] in src/runtime/preflight.cpp)
  aotrt-prepacked    `aotrt bench`, freezing=True as torch exports it by default (cpp.weight_prepack on):
                     the oneDNN fused ops of shim_cpu.h on _mkldnn constants, which aotrt decodes
                     and copies to plain memory at load (Note [Opaque constants])
  torch-frozen       torch's own loader (aoti_load_package, libtorch linked) on freezing=True with
                     weight prepacking on: the same fused ops in libtorch, on the blocked weights
  eager              the module under torch.no_grad() in this process
  ort                ONNX Runtime (default session options but the thread count) on torch.onnx.export(dynamo=True),
                     when onnxruntime and onnxscript import (pip, no torch pulled); else left out
Every package is exported with cpp.vec_isa_ok=True: without it torch 2.13's flow here compiles
scalar kernels (issue 13). Threads: --threads N (default 1) for every contender: OMP_NUM_THREADS,
set before torch is imported and inherited by the aotrt subprocesses (inductor's kernels and
oneDNN read it), and ORT's intra_op_num_threads. On the shared 2-core development machine, two
OpenMP threads per contender while other jobs ran made the times swing 10x between rounds
(eager's 4-conv CNN from 16 to 440 ms), so one thread is the default there.

Usage: python3 bench/cpu_freezing.py [--threads 1] [--rounds 5] [--iters 20] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _threads_arg() -> int:
    """--threads, read before torch is imported (OpenMP reads OMP_NUM_THREADS once)."""
    if "--threads" in sys.argv:
        return int(sys.argv[sys.argv.index("--threads") + 1])
    return int(os.environ.get("OMP_NUM_THREADS", "1"))


os.environ["OMP_NUM_THREADS"] = str(_threads_arg())

import numpy as np  # noqa: E402  (after OMP_NUM_THREADS)
import torch  # noqa: E402
from torch import nn  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from aotrt_tools.cpu_models import SmallCNN  # noqa: E402  (needs the sys.path entry above)

AOTRT = Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt"))
BASE = {"aot_inductor.link_libtorch": False, "cpp.vec_isa_ok": True}


def models():
    g = torch.Generator().manual_seed(1)
    return {
        "cnn b1 224x224": (SmallCNN, torch.randn(1, 3, 224, 224, generator=g)),
        "encoder d512 b8 s128": (
            lambda: nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True),
            torch.randn(8, 128, 512, generator=g)),
    }


def build(make) -> nn.Module:
    torch.manual_seed(0)
    m = make().eval()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_var.uniform_(0.5, 1.5)
            mod.running_mean.normal_(0, 0.1)
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def export_worker(args: dict) -> None:
    """In a fresh process (see tests/e2e/test_cpu_freezing.py: one export config per process)."""
    make, x = models()[args["model"]]
    m = build(make)
    with torch.no_grad():
        if args["kind"] == "onnx":
            torch.onnx.export(m, (x,), args["path"], dynamo=True)
            return
        ep = torch.export.export(m, (x,))
        torch._inductor.aoti_compile_and_package(ep, package_path=args["path"],
                                                 inductor_configs=args["options"])


def export(model: str, kind: str, path: Path, options: dict | None = None) -> Path:
    spec = json.dumps({"model": model, "kind": kind, "path": str(path), "options": options or {}})
    r = subprocess.run([sys.executable, __file__, "--export-worker", spec], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"export of {model} ({kind}) failed: {r.stderr[-3000:]}")
    return path


def aotrt_round(pkg: Path, x_npy: Path, iters: int) -> list[float]:
    r = subprocess.run([str(AOTRT), "bench", str(pkg), "-i", str(x_npy), "--json", "--warmup", "3",
                        "--iters", str(iters)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"aotrt bench {pkg.name}: {r.stderr[-2000:]}")
    return [json.loads(r.stdout.strip().splitlines()[-1])["latency_us"]["p50"]]


def timed(call, iters: int) -> list[float]:
    call()
    call()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        call()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return [statistics.median(times)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", type=Path,
                    default=REPO / "bench" / "results" / f"cpu-freezing-{datetime.date.today()}.md")
    args = ap.parse_args()
    try:
        import onnxruntime as ort  # noqa: F401
        import onnxscript  # noqa: F401
        have_ort, ort_why = True, ""
    except Exception as e:  # ImportError, or onnx's protobuf VersionError of a mixed install
        have_ort, ort_why = False, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"

    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="cpu_freezing_"))
    rows = []
    for name, (make, x) in models().items():
        tag = name.split()[0]
        x_npy = work / f"{tag}_x.npy"
        np.save(x_npy, x.numpy())
        m = build(make)
        print(f"[{name}] exporting", file=sys.stderr, flush=True)
        plain = export(name, "aoti", work / f"{tag}.pt2", {**BASE, "freezing": False})
        frozen = export(name, "aoti", work / f"{tag}_frozen.pt2",
                        {**BASE, "freezing": True, "cpp.weight_prepack": False})
        prepacked = export(name, "aoti", work / f"{tag}_prepacked.pt2", {**BASE, "freezing": True})
        torch_frozen = export(name, "aoti", work / f"{tag}_torch_frozen.pt2",
                              {"cpp.vec_isa_ok": True, "freezing": True})
        loaded = torch._inductor.aoti_load_package(str(torch_frozen))
        contenders = {
            "aotrt": lambda it: aotrt_round(plain, x_npy, it),
            "aotrt-frozen": lambda it: aotrt_round(frozen, x_npy, it),
            "aotrt-prepacked": lambda it: aotrt_round(prepacked, x_npy, it),
            "torch-frozen": lambda it: timed(lambda: loaded(x), it),
            "eager": lambda it: timed(lambda: m(x), it),
        }
        if have_ort:
            import onnxruntime as ort
            onnx_path = export(name, "onnx", work / f"{tag}.onnx")
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
            feed = {sess.get_inputs()[0].name: x.numpy()}
            contenders["ort"] = lambda it: timed(lambda: sess.run(None, feed), it)
        # Agreement check, so the timed packages compute the model.
        with torch.no_grad():
            want = m(x).numpy()
        diff = {}
        for key, pkg in (("frozen", frozen), ("prepacked", prepacked)):
            out = work / f"{tag}_{key}_out"
            subprocess.run([str(AOTRT), "run", str(pkg), "-i", str(x_npy), "-o", str(out)], check=True,
                           capture_output=True)
            diff[key] = float(np.max(np.abs(np.load(out / "output_0.npy") - want)))
        samples = {k: [] for k in contenders}
        with torch.no_grad():
            for r in range(args.rounds):
                for k, run in contenders.items():
                    samples[k] += run(args.iters)
                print(f"[{name}] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
        med = {k: statistics.median(v) for k, v in samples.items()}
        rows.append((name, med, samples, diff))
        del loaded

    load_after = os.getloadavg()
    cols = list(rows[0][1].keys())
    lines = [f"# freezing=True on the CPU, side by side ({datetime.date.today()})", "",
             "Command: `python3 bench/cpu_freezing.py " + " ".join(sys.argv[1:]) + "`", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch "
             f"{torch.__version__}, {args.threads} thread(s) per contender (torch: {torch.get_num_threads()}); shared with other jobs: "
             f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after (`uptime`'s 1-minute figure).",
             "",
             f"Median over {args.rounds} alternated rounds of each round's median over {args.iters} runs "
             "(aotrt: `aotrt bench` p50, 3 warm-up runs), in ms. Contenders: see the script's docstring. "
             "`X vs Y`: the ratio of their times (below 1: X is faster).", "",
             "| model | " + " | ".join(cols) + " | aotrt-frozen vs aotrt | aotrt-prepacked vs aotrt-frozen | "
             "aotrt-prepacked vs torch-frozen | aotrt-prepacked vs eager | max abs diff vs eager (frozen, prepacked) |",
             "|---|" + "---|" * (len(cols) + 5)]
    for name, med, samples, diff in rows:
        cells = [f"{med[k] / 1e3:.2f}" for k in cols]
        lines.append(f"| {name} | " + " | ".join(cells) +
                     f" | {med['aotrt-frozen'] / med['aotrt']:.2f}"
                     f" | {med['aotrt-prepacked'] / med['aotrt-frozen']:.2f}"
                     f" | {med['aotrt-prepacked'] / med['torch-frozen']:.2f}"
                     f" | {med['aotrt-prepacked'] / med['eager']:.2f}"
                     f" | {diff['frozen']:.2g}, {diff['prepacked']:.2g} |")
    lines += ["", "Per-round medians (ms):", ""]
    for name, med, samples, diff in rows:
        for k, v in samples.items():
            lines.append(f"- {name}, {k}: " + ", ".join(f"{t / 1e3:.2f}" for t in v))
    if not have_ort:
        lines += ["", f"ONNX Runtime: not importable here ({ort_why}), left out."]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--export-worker":
        export_worker(json.loads(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
