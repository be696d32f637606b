"""Peak host RSS and load time of a large package against its weight bytes (issue 28, item 1).

Exports a model of ~3 GB of float32 weights (a stack of square linears) on the CPU with
torch's defaults plus link_libtorch=False: above 2 GB of constants inductor appends the weights
to the model .so (Note [Weights appended to the .so] in src/runtime/model_mmap.h); with --blob,
also the same model with package_constants_on_disk_format="binary_blob". Then loads and runs each once with
`aotrt bench --json` (load_s, and the process's peak RSS from wait4), in these modes:

  appended, in place     this aotrt: the .so's ELF part extracted, the weights mapped from the .pt2
  appended, extracted    this aotrt with AOTRT_EXTRACT_APPENDED_WEIGHTS=1: the whole .so extracted
                         to TMPDIR first, as torch's loader does (what aotrt would have to do)
  appended, before       the `before` binary (main before this change): refuses the package
  blob, in place         this aotrt: the blob mapped from the .pt2
  blob, before           the `before` binary: the blob read from the archive into memory

Each mode runs --rounds times, alternated, with the page cache dropped first when
/proc/sys/vm/drop_caches is writable (--cold) or left warm. On the CPU the model's own copy of
its weights is host memory, so a peak of ~1x the weights is the floor; the page cache is not
part of RSS unless mapped.

    python3 bench/load_memory.py --gb 3 --before /work/main/build/aotrt --out bench/results/load-memory-DATE.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def export(path: Path, gb: float, blob: bool) -> float:
    import torch

    dim = 8192
    layers = max(1, round(gb * 2**30 / (dim * dim * 4)))

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(0)
            self.w = torch.nn.ParameterList(
                torch.nn.Parameter(torch.randn(dim, dim, generator=g) * dim**-0.5) for _ in range(layers))

        def forward(self, x):
            for w in self.w:
                x = torch.tanh(x @ w)
            return x

    options = {"aot_inductor.link_libtorch": False}
    if blob:
        options["aot_inductor.package_constants_on_disk_format"] = "binary_blob"
    t0 = time.perf_counter()
    with torch.no_grad():
        m = Stack().eval()
        ep = torch.export.export(m, (torch.randn(2, dim),))
        torch._inductor.aoti_compile_and_package(ep, package_path=str(path), inductor_configs=options)
    return time.perf_counter() - t0


def run(binary: str, pkg: Path, env: dict) -> dict:
    """One `bench --json` run: exit status, wall time, load time and peak RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        e = dict(os.environ, TMPDIR=tmp, **env)
        t0 = time.perf_counter()
        p = subprocess.Popen([binary, "bench", str(pkg), "--iters", "1", "--warmup", "0", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, text=True)
        out, err = p.communicate()
        wall = time.perf_counter() - t0
    # The peak is the report's VmHWM, read by the process itself at its end.
    report = json.loads(out.strip().splitlines()[-1]) if p.returncode == 0 else {}
    return dict(rc=p.returncode, wall_s=wall, load_s=report.get("load_s"),
                peak_rss=report.get("peak_host_bytes"), error=err.strip().splitlines()[-1] if p.returncode else "")


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=3.0, help="weights in GiB (default 3)")
    ap.add_argument("--aotrt", default=str(REPO / "build" / "aotrt"))
    ap.add_argument("--before", help="the aotrt binary to compare with (main before this change)")
    ap.add_argument("--work", default=None, help="where the packages go (default: a temp folder)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--blob", action="store_true", help="also the binary_blob export of the same model")
    ap.add_argument("--cold", action="store_true", help="drop the page cache before each load")
    ap.add_argument("--out", help="write the markdown table here")
    args = ap.parse_args()

    work = Path(args.work or tempfile.mkdtemp(prefix="load-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    pkgs = {"appended": work / "appended.pt2"}
    if args.blob:
        pkgs["blob"] = work / "blob.pt2"
    for kind, path in pkgs.items():
        if not path.exists():
            s = export(path, args.gb, blob=kind == "blob")
            print(f"exported {path} ({path.stat().st_size / 2**30:.2f} GiB) in {s:.0f} s", flush=True)

    modes = [("appended, in place", args.aotrt, pkgs["appended"], {}),
             ("appended, extracted", args.aotrt, pkgs["appended"], {"AOTRT_EXTRACT_APPENDED_WEIGHTS": "1"})]
    if args.before:
        modes.append(("appended, before", args.before, pkgs["appended"], {}))
    if args.blob:
        modes.append(("blob, in place", args.aotrt, pkgs["blob"], {}))
        if args.before:
            modes.append(("blob, before", args.before, pkgs["blob"], {}))
    results: dict[str, list[dict]] = {m[0]: [] for m in modes}
    cold = False
    for r in range(args.rounds):
        for name, binary, pkg, env in modes:
            cold = drop_caches() if args.cold else False
            res = run(binary, pkg, env)
            results[name].append(res)
            print(f"round {r} {name}: {res}", flush=True)

    weights = pkgs["appended"].stat().st_size
    lines = [f"# Loading a {weights / 2**30:.2f} GiB package on the CPU ({'cold' if cold else 'warm'} page cache)",
             "",
             f"Model: {round(args.gb * 2**30 / (8192 * 8192 * 4))} float32 linears of 8192x8192, exported by "
             "torch's defaults (+ link_libtorch=False)" + (", and again with binary_blob" if args.blob else "") + ". "
             f"`aotrt bench --iters 1 --warmup 0 --json`, median of {args.rounds} rounds (alternated). "
             "Peak RSS is the process's VmHWM; load is Model::load.", "",
             "| mode | load (s) | peak RSS (GiB) | peak RSS / package | note |", "| --- | --- | --- | --- | --- |"]
    for name, runs in results.items():
        ok = [x for x in runs if x["rc"] == 0]
        if not ok:
            lines.append(f"| {name} | - | - | - | refused: {runs[0]['error'][:160]} |")
            continue
        load = statistics.median(x["load_s"] for x in ok)
        peak = statistics.median(x["peak_rss"] for x in ok)
        loads = ", ".join("%.2f" % x["load_s"] for x in ok)
        lines.append(f"| {name} | {load:.2f} | {peak / 2**30:.2f} | {peak / weights:.2f} | "
                     f"{len(ok)}/{len(runs)} ran; loads {loads} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
