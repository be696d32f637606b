"""Real architectures from Hugging Face transformers, exported by torch's own flow, run by aotrt.

For each entry of tests/hf/models.py: the module is built (seeded random weights), called in
eager PyTorch, exported as a new user would (torch.export.export, then
torch._inductor.aoti_compile_and_package with only aot_inductor.link_libtorch=False), and the
package run by `aotrt run` on the same inputs (.npy files). An entry exported with dynamic dims
is run again at other sizes with the same package. Each entry ends as one of

  ok               every run's output matches eager within the entry's tolerance (models.py)
  wrong            an output differs (the largest difference is given)
  refused          aotrt would not load or run the package (its message; MISSING shims)
  compile-error    AOTInductor failed on what torch.export made
  does-not-export  torch.export itself fails (the exception's first line)
  model-error      transformers could not build or call the model (the harness's fault)

and records the `aoti_torch_<device>_*` op shims its package imports (`aotrt info`).

Usage:
  python3 -m tests.hf.sweep [--models bert,t5_encoder | --slice ci] [--jobs 2]
      [--out build/hf] [--cache DIR] [--table docs/hf/cpu-torch2.13.md]

Packages are cached under --cache (default $AOTRT_HF_CACHE or build/hf-cache), keyed by the
torch and transformers versions, models.py, this file and the entry's name, so a re-run only
exports what changed; the aotrt runs and comparisons are always redone.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

# The CI slice (tests/hf/test_hf_ci.py): one entry per kind of thing the sweep exercises —
# dynamic batch and sequence, relative-position attention, RMS-norm encoders, 1-d convs on
# audio, a dynamic decoder, a bf16 decoder, a selective scan, shifted windows.
CI_SLICE = ["bert_dynamic", "deberta_v2", "t5_encoder", "whisper_encoder", "llama_dynamic", "llama_bf16",
            "mamba", "swin"]


def _key(name: str) -> str:
    import torch
    import transformers

    h = hashlib.sha256()
    for part in (torch.__version__, transformers.__version__, name):
        h.update(part.encode() + b"\0")
    for f in (HERE / "models.py", Path(__file__)):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0][:400] if text else type(e).__name__


def _export(module, inputs, entry, pkg: Path) -> None:
    import torch

    dynamic = None
    if entry.dynamic:
        dims: dict[str, object] = {}
        # forward(*args): one spec for `args`, a tuple with one entry per input.
        dynamic = (tuple({d: dims.setdefault(n, torch.export.Dim(n, min=2, max=64))
                          for d, n in entry.dynamic.get(k, {}).items()} or None for k in range(len(inputs))),)
    program = torch.export.export(module, inputs, dynamic_shapes=dynamic)
    try:
        torch._inductor.aoti_compile_and_package(program, package_path=str(pkg),
                                                 inductor_configs={"aot_inductor.link_libtorch": False})
    except Exception as e:  # noqa: BLE001  (any inductor failure is the case's outcome)
        raise CompileError(_first_line(e)) from e


class CompileError(Exception):
    pass


def _run_aotrt(aotrt: Path, pkg: Path, inputs, expected, work: Path, tol: dict) -> tuple[str, float, str]:
    """(outcome, max abs diff, message) of one `aotrt run` against eager's output."""
    import numpy as np

    work.mkdir(parents=True, exist_ok=True)
    args = []
    for k, x in enumerate(inputs):
        np.save(work / f"input_{k}.npy", x.numpy())
        args += ["--input", str(work / f"input_{k}.npy")]
    out = work / "out"
    r = subprocess.run([str(aotrt), "run", str(pkg), *args, "--output-dir", str(out)], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        return "refused", float("nan"), r.stderr.strip()[-600:]
    got = np.load(out / "output_0.npy").astype(np.float64)
    want = expected.float().numpy().astype(np.float64)
    if got.shape != want.shape:
        return "wrong", float("nan"), f"output shape {got.shape}, eager {want.shape}"
    diff = float(np.abs(got - want).max()) if got.size else 0.0
    ok = np.allclose(got, want, atol=tol["atol"], rtol=tol["rtol"], equal_nan=True)
    return ("ok" if ok else "wrong"), diff, "" if ok else f"max |aotrt - eager| = {diff:.3g}"


def run_one(name: str, cache: Path, out: Path, aotrt: Path) -> dict:
    """Builds, exports (or reuses the cached package) and runs one entry; never raises."""
    import torch

    sys.path.insert(0, str(REPO))
    from tests.hf import models

    rec: dict = {"name": name, "doc": models.ENTRIES[name].doc}
    t0 = time.perf_counter()
    try:
        module, inputs, entry = models.build(name)
        second = entry.second() if entry.second else None
        with torch.no_grad():
            expected = [module(*inputs)] + ([module(*second)] if second else [])
    except Exception as e:  # noqa: BLE001
        rec.update(outcome="model-error", message=_first_line(e), traceback=traceback.format_exc())
        return rec
    flat = [float(y.float().abs().max()) for y in expected]
    if min(flat) < 1e-6:  # a vanished output would match anything
        rec.update(outcome="model-error", message=f"eager's output is ~0 (max |y| {min(flat):.2g}): fix the entry")
        return rec
    rec.update(dtype=str(entry.dtype).replace("torch.", ""), tol=entry.tol,
               shapes=[[list(x.shape) for x in inputs]] + ([[list(x.shape) for x in second]] if second else []))
    pkg_dir = cache / f"{name}-{_key(name)}"
    pkg = pkg_dir / f"{name}.pt2"
    if not pkg.exists():
        pkg_dir.mkdir(parents=True, exist_ok=True)
        try:
            with torch.no_grad():
                _export(module, inputs, entry, pkg_dir / f"{name}.partial.pt2")
            (pkg_dir / f"{name}.partial.pt2").rename(pkg)
        except CompileError as e:
            rec.update(outcome="compile-error", message=str(e))
            return rec
        except Exception as e:  # noqa: BLE001
            rec.update(outcome="does-not-export", message=_first_line(e))
            return rec
        rec["export_s"] = round(time.perf_counter() - t0, 1)
    rec["package"] = str(pkg)

    info = subprocess.run([str(aotrt), "info", str(pkg)], capture_output=True, text=True, timeout=120)
    lines = [l.split() for l in info.stdout.splitlines() if l.strip().startswith("aoti_torch_")]
    rec["shims"] = sorted({l[0] for l in lines if l[0].startswith(("aoti_torch_cpu_", "aoti_torch_aten_"))})
    rec["missing"] = sorted({l[0] for l in lines if "MISSING" in l})

    rec["runs"] = []
    for k, (x, want) in enumerate(zip([inputs] + ([second] if second else []), expected)):
        outcome, diff, msg = _run_aotrt(aotrt, pkg, x, want, out / name / f"run{k}", entry.tol)
        rec["runs"].append(dict(shapes=[list(t.shape) for t in x], outcome=outcome, max_abs_diff=diff,
                                max_abs_eager=float(want.float().abs().max()), message=msg))
    bad = [r for r in rec["runs"] if r["outcome"] != "ok"]
    rec["outcome"] = bad[0]["outcome"] if bad else "ok"
    rec["message"] = bad[0]["message"] if bad else ""
    rec["max_abs_diff"] = max(r["max_abs_diff"] for r in rec["runs"])
    return rec


def sweep(names: list[str], cache: Path, out: Path, aotrt: Path, jobs: int) -> list[dict]:
    """Every entry in its own spawned process (transformers and inductor keep global state)."""
    cache.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache / "inductor_cache"))
    ctx = mp.get_context("spawn")
    results: dict[str, dict] = {}
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, max_tasks_per_child=1) as pool:
        futures = {pool.submit(run_one, n, cache, out, aotrt): n for n in names}
        for f in cf.as_completed(futures):
            n = futures[f]
            try:
                results[n] = f.result()
            except Exception as e:  # noqa: BLE001  (a worker that died)
                results[n] = {"name": n, "outcome": "crash", "message": _first_line(e)}
            r = results[n]
            print(f"{n:18s} {r['outcome']:16s} {r.get('max_abs_diff', float('nan')):.3g}  {r.get('message', '')[:160]}",
                  flush=True)
    return [results[n] for n in names]


def table(records: list[dict], command: str) -> str:
    import platform

    import torch
    import transformers

    counts: dict[str, int] = {}
    for r in records:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    lines = [
        f"# Hugging Face architectures through aotrt on the CPU (torch {torch.__version__}, "
        f"transformers {transformers.__version__})",
        "",
        f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} ({platform.machine()}, "
        f"{os.cpu_count()} cores). Each model is transformers' own modelling code in a small configuration "
        "(2 layers, hidden 64, random weights from seed 0; tests/hf/models.py), exported by torch's own flow "
        "(`torch.export.export`, then `aoti_compile_and_package` with only `aot_inductor.link_libtorch=False`), "
        "run by `aotrt run` and compared with eager on the same inputs. Tolerances: fp32 atol = rtol = 1e-4, "
        "bf16 atol 5e-2 / rtol 2e-2 (the reasons are in models.py). Dynamic entries run the same package at two "
        "shapes. The op shims are the `aoti_torch_cpu_*` functions the package imports (the fallbacks inductor "
        "kept out of generated code).",
        "",
        "Outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (of {len(records)}).",
        "",
        "| model | what | dtype | shapes run | outcome | max abs diff (max abs eager) | op shims |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        runs = r.get("runs", [])
        shapes = "; ".join(" ".join("x".join(map(str, s)) for s in run["shapes"]) for run in runs)
        diff = ", ".join(f"{run['max_abs_diff']:.2g} ({run['max_abs_eager']:.2g})" for run in runs)
        shims = " ".join(f"`{s.split('_', 3)[-1]}`" for s in r.get("shims", []))
        outcome = r["outcome"] + (f": {r['message']}" if r.get("message") else "")
        lines.append(f"| {r['name']} | {r.get('doc', '')} | {r.get('dtype', '')} | {shapes} | "
                     f"{outcome.replace('|', '/')} | {diff} | {shims} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(REPO))
    from tests.hf import models

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--models", help="comma-separated entry names (default: all)")
    g.add_argument("--slice", choices=["ci", "all"], default="all")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", type=Path, default=REPO / "build" / "hf")
    p.add_argument("--cache", type=Path, default=Path(os.environ.get("AOTRT_HF_CACHE", REPO / "build" / "hf-cache")))
    p.add_argument("--aotrt", type=Path, default=Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt")))
    p.add_argument("--table", type=Path, help="also write the markdown table here")
    args = p.parse_args(argv)
    names = args.models.split(",") if args.models else (CI_SLICE if args.slice == "ci" else list(models.ENTRIES))
    unknown = [n for n in names if n not in models.ENTRIES]
    if unknown:
        p.error(f"unknown entries {unknown}; known: {', '.join(models.ENTRIES)}")
    if not args.aotrt.is_file():
        p.error(f"no aotrt CLI at {args.aotrt}: build it first (scripts/build.sh) or pass --aotrt")
    records = sweep(names, args.cache, args.out, args.aotrt, args.jobs)
    (args.out / "results.json").write_text(json.dumps(records, indent=1))
    command = "python3 -m tests.hf.sweep" + (f" --models {args.models}" if args.models else
                                             (" --slice ci" if args.slice == "ci" else ""))
    text = table(records, command + (f" --table {args.table}" if args.table else ""))
    (args.out / "table.md").write_text(text)
    if args.table:
        args.table.parent.mkdir(parents=True, exist_ok=True)
        args.table.write_text(text)
    print(f"wrote {args.out / 'results.json'} and {args.out / 'table.md'}" + (f" and {args.table}" if args.table else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
