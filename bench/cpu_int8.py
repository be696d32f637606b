#!/usr/bin/env python3
"""Int8 (PT2E X86InductorQuantizer) models on the CPU, side by side: what running the quantized
oneDNN ops in int8 (Note [Int8 primitives] in src/cpu/quantized.cpp) buys aotrt.

Models: the int8 e2e cases (tests/e2e/test_cpu_int8.py: residual_cnn, residual_mlp, gelu_mlp,
chain_cnn), an MLP of 1024-wide linears at batch 32, and a ResNet-18 (torchvision's layout,
written out below: torchvision is not installed here; random weights, batch 1, 224x224). Each is
quantized as the e2e test does (torch.export, prepare_pt2e with X86InductorQuantizer's default
static config, one calibration batch, convert_pt2e) and exported with freezing=True
(aoti_compile_and_package, link_libtorch=False, cpp.vec_isa_ok=True).

Contenders, timed in rounds that alternate them in one run (a load change on the shared machine
hits them all):
  aotrt-before   `aotrt bench` with the binary given by --before (a build of main before the
                 int8 primitives: the dequantized float32 path for every quantized op)
  aotrt-after    `aotrt bench` with --after (default build/aotrt)
  torch-compiled the converted model under torch.compile (inductor, freezing on), in this process:
                 the same qconv/qlinear ops in libtorch's oneDNN
Threads: --threads N (default 1) for every contender (OMP_NUM_THREADS, set before torch is
imported, inherited by the aotrt subprocesses; torch.set_num_threads).

Usage: python3 bench/cpu_int8.py --before DIR/aotrt [--threads 1] [--rounds 7] [--iters 20]
       [--out FILE.md]  (a --before binary from another build dir finds its libaotrt.so through
       LD_LIBRARY_PATH=its dir, which this script sets)
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
    if "--threads" in sys.argv:
        return int(sys.argv[sys.argv.index("--threads") + 1])
    return int(os.environ.get("OMP_NUM_THREADS", "1"))


os.environ["OMP_NUM_THREADS"] = str(_threads_arg())

import numpy as np  # noqa: E402  (after OMP_NUM_THREADS)
import torch  # noqa: E402
from torch import nn  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.pool = nn.MaxPool2d(3, 2, 1)
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        return self.fc(self.layers(x).mean((2, 3)))


class WideMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(1024, 1024)
        self.l2 = nn.Linear(1024, 1024)
        self.l3 = nn.Linear(1024, 1024)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        h = torch.relu(self.l2(h) + h)
        return self.l3(h)


def models() -> dict:
    import test_cpu_int8 as e2e
    out = {f"{n} {'x'.join(map(str, e2e.CASES[n][1]))}": (e2e.CASES[n][0], e2e.CASES[n][1])
           for n in ("residual_cnn", "residual_mlp", "gelu_mlp", "chain_cnn")}
    out["wide_mlp 32x1024"] = (WideMlp, (32, 1024))
    out["resnet18 1x3x224x224"] = (ResNet18, (1, 3, 224, 224))
    return out


def quantized(name: str):
    import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    make, shape = models()[name]
    torch.manual_seed(0)
    m = make().eval()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_var.uniform_(0.5, 1.5)
            mod.running_mean.normal_(0, 0.1)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        g = torch.export.export(m, (x,)).module()
        q = xiq.X86InductorQuantizer()
        q.set_global(xiq.get_default_x86_inductor_quantization_config())
        p = prepare_pt2e(g, q)
        p(x)
        return convert_pt2e(p), x


def export_worker(name: str, path: str) -> None:
    converted, x = quantized(name)
    with torch.no_grad():
        ep = torch.export.export(converted, (x,))
        torch._inductor.aoti_compile_and_package(
            ep, package_path=path,
            inductor_configs={"aot_inductor.link_libtorch": False, "cpp.vec_isa_ok": True,
                              "freezing": True})


def aotrt_round(binary: Path, pkg: Path, x_npy: Path, iters: int) -> float:
    env = dict(os.environ, LD_LIBRARY_PATH=str(binary.parent))
    r = subprocess.run([str(binary), "bench", str(pkg), "-i", str(x_npy), "--json", "--warmup", "3",
                        "--iters", str(iters)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{binary} bench {pkg.name}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["latency_us"]["p50"] / 1e3


def aotrt_output(binary: Path, pkg: Path, x_npy: Path, out: Path) -> np.ndarray:
    env = dict(os.environ, LD_LIBRARY_PATH=str(binary.parent))
    subprocess.run([str(binary), "run", str(pkg), "-i", str(x_npy), "-o", str(out)], check=True,
                   capture_output=True, env=env)
    return np.load(out / "output_0.npy").astype(np.float32)


def timed(call, iters: int) -> float:
    call()
    call()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        call()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(times)


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--export-worker":
        export_worker(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=REPO / "build" / "aotrt")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--work", type=Path, help="keeps the exported packages between runs")
    ap.add_argument("--only", help="a substring of the model names to run")
    ap.add_argument("--out", type=Path,
                    default=REPO / "bench" / "results" / f"cpu-int8-{datetime.date.today()}" / "results.md")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import torch._inductor.config as inductor_config
    inductor_config.freezing = True
    work = args.work or Path(tempfile.mkdtemp(prefix="cpu_int8_"))
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    rows = []
    for name in models():
        if args.only and args.only not in name:
            continue
        tag = name.split()[0]
        pkg = work / f"{tag}.pt2"
        if not pkg.exists():
            print(f"[{name}] exporting", file=sys.stderr, flush=True)
            t0 = time.time()
            r = subprocess.run([sys.executable, __file__, "--export-worker", name, str(pkg)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"export of {name} failed: {r.stderr[-3000:]}")
            print(f"[{name}] exported in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        converted, x = quantized(name)
        x_npy = work / f"{tag}_x.npy"
        np.save(x_npy, x.numpy())
        print(f"[{name}] compiling for torch", file=sys.stderr, flush=True)
        with torch.no_grad():
            compiled = torch.compile(converted)
            want = compiled(x).float().numpy()
            eager = converted(x).float().numpy()
        diff = {k: float(np.max(np.abs(aotrt_output(b, pkg, x_npy, work / f"{tag}_{k}") - eager)))
                for k, b in (("before", args.before), ("after", args.after))}
        diff["torch-compiled"] = float(np.max(np.abs(want - eager)))
        contenders = {
            "aotrt-before": lambda it: aotrt_round(args.before, pkg, x_npy, it),
            "aotrt-after": lambda it: aotrt_round(args.after, pkg, x_npy, it),
            "torch-compiled": lambda it: timed(lambda: compiled(x), it),
        }
        samples = {k: [] for k in contenders}
        with torch.no_grad():
            for r in range(args.rounds):
                for k, run in contenders.items():
                    samples[k].append(run(args.iters))
                print(f"[{name}] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
        rows.append((name, samples, diff, float(np.abs(eager).max())))

    load_after = os.getloadavg()
    cols = ["aotrt-before", "aotrt-after", "torch-compiled"]
    lines = [f"# Int8 (X86InductorQuantizer) models on the CPU, side by side ({datetime.date.today()})", "",
             "Command: `python3 bench/cpu_int8.py " + " ".join(sys.argv[1:]) + "`", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch "
             f"{torch.__version__}, oneDNN int8 on {torch.backends.cpu.get_cpu_capability()}; "
             f"{args.threads} thread(s) per contender; shared with other jobs: load average "
             f"{load_before[0]:.2f} before, {load_after[0]:.2f} after (`uptime`'s 1-minute figure).", "",
             f"Median over {args.rounds} alternated rounds of each round's median over {args.iters} "
             "runs (aotrt: `aotrt bench` p50 after 3 warm-up runs), in ms; `spread` is the slowest "
             "round's median over the fastest's, per contender (before / after / torch): the "
             "noise. `after vs X`: the ratio of the medians (below 1: aotrt-after is faster).", "",
             "| model | aotrt-before | aotrt-after | torch-compiled | after vs before | "
             "after vs torch | spread | max abs diff vs eager (before, after, torch) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, samples, diff, largest in rows:
        med = {k: statistics.median(samples[k]) for k in cols}
        spread = " / ".join(f"{max(samples[k]) / min(samples[k]):.2f}" for k in cols)
        lines.append(
            f"| {name} | {med['aotrt-before']:.3f} | {med['aotrt-after']:.3f} | "
            f"{med['torch-compiled']:.3f} | {med['aotrt-after'] / med['aotrt-before']:.2f} | "
            f"{med['aotrt-after'] / med['torch-compiled']:.2f} | {spread} | "
            f"{diff['before']:.2g}, {diff['after']:.2g}, {diff['torch-compiled']:.2g} "
            f"(largest |y| {largest:.2g}) |")
    lines += ["", "Per-round medians (ms):", ""]
    for name, samples, _, _ in rows:
        for k in cols:
            lines.append(f"- {name}, {k}: " + ", ".join(f"{v:.3f}" for v in samples[k]))
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
