"""Real architectures from Hugging Face transformers, torchvision and timm, exported by torch's
own flow, run by aotrt.

For each entry of tests/hf/models.py (transformers) and tests/hf/vision.py (torchvision, timm):
the module is built (seeded random weights), called in eager PyTorch on --device, exported as
a new user would (torch.export.export, then torch._inductor.aoti_compile_and_package with only
aot_inductor.link_libtorch=False), and the package run by `aotrt run` on the same inputs (.npy
files). An entry exported with dynamic dims is run again at other sizes with the same package.
On CUDA, eager's fp32 is exact fp32 (TF32 off, as the zoo's references: aotrt_tools.zoo
exact_fp32) and so is aotrt's (AOTRT_CUDNN_ALLOW_TF32=0). Each entry ends as one of

  ok               every run's output matches eager within the entry's tolerance (models.py,
                   vision.py)
  wrong            an output differs (the largest difference is given)
  refused          aotrt would not load or run the package (its message; MISSING shims)
  compile-error    AOTInductor failed on what torch.export made
  does-not-export  torch.export itself fails (the exception's first line)
  model-error      the library could not build or call the model (the harness's fault)
  not-installed    the entry's library (torchvision, timm) is not installed here
  not-run          --time-limit passed before the entry started
  timed-out        --time-limit passed while the entry ran (its process was stopped)
  crash            the entry's process died

and records the `aoti_torch_<device>_*` op shims its package imports (`aotrt info`).

Usage:
  python3 -m tests.hf.sweep [--models bert,t5_encoder | --slice ci|transformers|vision|all]
      [--device cpu|cuda] [--jobs 2] [--time-limit SECONDS]
      [--out build/hf] [--cache DIR] [--table docs/hf/cpu-torch2.13.md]

The default slice is `transformers` on the CPU (the table docs/hf/cpu-torch2.13.md) and `all`
(transformers, torchvision and timm) on CUDA. --time-limit: no entry starts after SECONDS, and
the entries still running then are stopped; the table of what finished is written either way.

Packages are cached under --cache (default $AOTRT_HF_CACHE or build/hf-cache), keyed by the
device, the torch and transformers versions, models.py, vision.py, the export function and the
entry's name, so a re-run only exports what changed; the aotrt runs and comparisons are always
redone.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import inspect
import json
import multiprocessing as mp
import os
import signal
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


def _registry():
    """tests/hf/models.py with tests/hf/vision.py's entries registered in its ENTRIES."""
    sys.path.insert(0, str(REPO))
    from tests.hf import models, vision  # noqa: F401  (vision registers its entries)

    return models


def slice_names(which: str) -> list[str]:
    models = _registry()
    if which == "ci":
        return list(CI_SLICE)
    return [n for n, e in models.ENTRIES.items()
            if which == "all" or (e.source == "transformers") == (which == "transformers")]


def _key(name: str, device: str) -> str:
    import torch
    import transformers

    h = hashlib.sha256()
    # What makes the package: the device, the versions, the entries and the export code (not
    # the runs, comparisons or table, which are redone every time).
    for part in (device, torch.__version__, transformers.__version__, name, inspect.getsource(_export)):
        h.update(part.encode() + b"\0")
    h.update((HERE / "models.py").read_bytes())
    h.update((HERE / "vision.py").read_bytes())
    return h.hexdigest()[:16]


def _exact_fp32(device: str):
    """TF32 off on CUDA (aotrt_tools.zoo.exact_fp32): an fp32 reference computed in fp32, and
    inductor reads the flags for any matmul it generates itself."""
    if device != "cuda":
        return contextlib.nullcontext()
    if str(REPO / "python") not in sys.path:
        sys.path.insert(0, str(REPO / "python"))
    from aotrt_tools.zoo import exact_fp32

    return exact_fp32()


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
        raise CompileError(_first_line(e), str(e)[-3000:]) from e


class CompileError(Exception):
    """Inductor's failure: its first line, and the tail of its text (a C++ compile error's
    compiler output is at the end) for results.json and the log."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


def _run_aotrt(aotrt: Path, pkg: Path, inputs, expected, work: Path, tol: dict) -> tuple[str, float, str]:
    """(outcome, max abs diff, message) of one `aotrt run` against eager's output."""
    import numpy as np

    work.mkdir(parents=True, exist_ok=True)
    args = []
    for k, x in enumerate(inputs):
        np.save(work / f"input_{k}.npy", x.cpu().numpy())
        args += ["--input", str(work / f"input_{k}.npy")]
    out = work / "out"
    # aotrt lets cuDNN use TF32 in fp32 convolutions unless told not to (as PyTorch does by
    # default); the references are exact fp32 (aotrt_tools/e2e.py does the same).
    env = dict(os.environ)
    env.setdefault("AOTRT_CUDNN_ALLOW_TF32", "0")
    r = subprocess.run([str(aotrt), "run", str(pkg), *args, "--output-dir", str(out)], capture_output=True,
                       text=True, timeout=300, env=env)
    if r.returncode != 0:
        return "refused", float("nan"), r.stderr.strip()[-600:]
    got = np.load(out / "output_0.npy").astype(np.float64)
    want = expected.float().cpu().numpy().astype(np.float64)
    if got.shape != want.shape:
        return "wrong", float("nan"), f"output shape {got.shape}, eager {want.shape}"
    diff = float(np.abs(got - want).max()) if got.size else 0.0
    ok = np.allclose(got, want, atol=tol["atol"], rtol=tol["rtol"], equal_nan=True)
    return ("ok" if ok else "wrong"), diff, "" if ok else f"max |aotrt - eager| = {diff:.3g}"


def run_one(name: str, cache: Path, out: Path, aotrt: Path, device: str = "cpu") -> dict:
    """Builds, exports (or reuses the cached package) and runs one entry; never raises."""
    import importlib.util

    import torch

    models = _registry()
    entry = models.ENTRIES[name]
    rec: dict = {"name": name, "doc": entry.doc, "source": entry.source}
    if importlib.util.find_spec(entry.source) is None:
        rec.update(outcome="not-installed", message=f"{entry.source} is not installed here")
        return rec
    t0 = time.perf_counter()
    try:
        module, inputs, entry = models.build(name)
        second = entry.second() if entry.second else None
        module = module.to(device)
        inputs = tuple(x.to(device) for x in inputs)
        second = tuple(x.to(device) for x in second) if second else None
        runs = [inputs] + ([second] if second else [])
        with torch.no_grad(), _exact_fp32(device):
            expected = [module(*x) for x in runs]
        tols = [entry.tol] * len(runs)
        if entry.source != "transformers" and entry.dtype == torch.float32:
            # vision.py's tolerance: from eager fp32's own distance from fp64.
            from tests.hf import vision

            module64 = copy.deepcopy(module).double()
            with torch.no_grad():
                noise = [float((y.double() - module64(*(t.double() for t in x))).abs().max())
                         for x, y in zip(runs, expected)]
            del module64
            rec["eager_vs_fp64"] = noise
            tols = [vision.tolerance(n) for n in noise]
    except Exception as e:  # noqa: BLE001
        rec.update(outcome="model-error", message=_first_line(e), traceback=traceback.format_exc())
        return rec
    flat = [float(y.float().abs().max()) for y in expected]
    if min(flat) < 1e-6:  # a vanished output would match anything
        rec.update(outcome="model-error", message=f"eager's output is ~0 (max |y| {min(flat):.2g}): fix the entry")
        return rec
    rec.update(dtype=str(entry.dtype).replace("torch.", ""), tol=tols[0],
               shapes=[[list(x.shape) for x in inputs]] + ([[list(x.shape) for x in second]] if second else []))
    pkg_dir = cache / f"{name}-{_key(name, device)}"
    pkg = pkg_dir / f"{name}.pt2"
    if not pkg.exists():
        pkg_dir.mkdir(parents=True, exist_ok=True)
        try:
            with torch.no_grad(), _exact_fp32(device):
                _export(module, inputs, entry, pkg_dir / f"{name}.partial.pt2")
            (pkg_dir / f"{name}.partial.pt2").rename(pkg)
        except CompileError as e:
            rec.update(outcome="compile-error", message=str(e), detail=e.detail)
            print(f"{name}: compile-error; inductor's output ends:\n{e.detail}", flush=True)
            return rec
        except Exception as e:  # noqa: BLE001
            rec.update(outcome="does-not-export", message=_first_line(e))
            return rec
        rec["export_s"] = round(time.perf_counter() - t0, 1)
    rec["package"] = str(pkg)

    info = subprocess.run([str(aotrt), "info", str(pkg)], capture_output=True, text=True, timeout=120)
    lines = [l.split() for l in info.stdout.splitlines() if l.strip().startswith("aoti_torch_")]
    rec["shims"] = sorted({l[0] for l in lines if l[0].startswith((f"aoti_torch_{device}_", "aoti_torch_aten_"))})
    rec["missing"] = sorted({l[0] for l in lines if "MISSING" in l})

    rec["runs"] = []
    for k, (x, want, tol) in enumerate(zip(runs, expected, tols)):
        outcome, diff, msg = _run_aotrt(aotrt, pkg, x, want, out / name / f"run{k}", tol)
        rec["runs"].append(dict(shapes=[list(t.shape) for t in x], outcome=outcome, max_abs_diff=diff,
                                max_abs_eager=float(want.float().abs().max()), message=msg, tol=tol))
    bad = [r for r in rec["runs"] if r["outcome"] != "ok"]
    rec["outcome"] = bad[0]["outcome"] if bad else "ok"
    rec["message"] = bad[0]["message"] if bad else ""
    rec["max_abs_diff"] = max(r["max_abs_diff"] for r in rec["runs"])
    return rec


def _worker(name: str, cache: Path, out: Path, aotrt: Path, device: str, result: Path) -> None:
    """One entry in its own process (and process group, so that a time limit stops its
    compilers and aotrt runs too); its record lands in `result` when it finishes."""
    os.setpgrp()
    rec = run_one(name, cache, out, aotrt, device)
    partial = result.with_suffix(".partial")
    partial.write_text(json.dumps(rec))
    partial.rename(result)


def _stop(proc) -> None:
    """Ends an entry's process group: SIGTERM, then SIGKILL after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        proc.join(wait)
        if proc.exitcode is not None:
            return


def _report(r: dict) -> None:
    print(f"{r['name']:18s} {r['outcome']:16s} {r.get('max_abs_diff', float('nan')):.3g}  {r.get('message', '')[:160]}",
          flush=True)


def sweep(names: list[str], cache: Path, out: Path, aotrt: Path, jobs: int, device: str = "cpu",
          time_limit: float | None = None) -> list[dict]:
    """Every entry in its own spawned process (transformers and inductor keep global state), at
    most `jobs` at a time; after `time_limit` seconds none starts and the running ones stop."""
    cache.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    # Absolute: inductor runs its compiler from another directory.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache.resolve() / "inductor_cache"))
    ctx = mp.get_context("spawn")
    deadline = time.monotonic() + time_limit if time_limit else None
    pending, running, results = list(names), {}, {}

    entries = _registry().ENTRIES

    def finish(n: str, rec: dict) -> None:
        rec.setdefault("doc", entries[n].doc)
        results[n] = rec
        _report(rec)

    try:
        while pending or running:
            expired = deadline is not None and time.monotonic() >= deadline
            while pending and len(running) < jobs and not expired:
                n = pending.pop(0)
                result = out / n / "result.json"
                result.parent.mkdir(parents=True, exist_ok=True)
                result.unlink(missing_ok=True)
                proc = ctx.Process(target=_worker, args=(n, cache, out, aotrt, device, result))
                proc.start()
                running[n] = (proc, result)
            if expired:
                for n, (proc, result) in running.items():
                    _stop(proc)
                    finish(n, json.loads(result.read_text()) if result.exists() else
                           {"name": n, "outcome": "timed-out", "message": f"stopped at the time limit ({time_limit:g} s)"})
                for n in pending:
                    finish(n, {"name": n, "outcome": "not-run", "message": f"the time limit ({time_limit:g} s) passed first"})
                break
            time.sleep(0.2)
            for n, (proc, result) in list(running.items()):
                if proc.exitcode is None:
                    continue
                proc.join()
                del running[n]
                finish(n, json.loads(result.read_text()) if result.exists() else
                       {"name": n, "outcome": "crash", "message": f"its process exited with {proc.exitcode}"})
    finally:  # an exception or a signal (main turns SIGTERM into SystemExit) leaves no entry behind
        for proc, _ in running.values():
            if proc.exitcode is None:
                _stop(proc)
    return [results[n] for n in names]


def _commit() -> str:
    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown commit"


def _gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU visible"


def table(records: list[dict], command: str, device: str = "cpu", note: str = "") -> str:
    import platform

    import torch
    import transformers

    counts: dict[str, int] = {}
    for r in records:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    where = "the CPU" if device == "cpu" else f"CUDA ({_gpu_name()})"
    intro = (
        f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} (aotrt {_commit()}, {platform.machine()}, "
        f"{os.cpu_count()} cores). Each model is transformers' own modelling code in a small configuration "
        "(2 layers, hidden 64, random weights from seed 0; tests/hf/models.py), exported by torch's own flow "
        "(`torch.export.export`, then `aoti_compile_and_package` with only `aot_inductor.link_libtorch=False`), "
        "run by `aotrt run` and compared with eager on the same inputs. Tolerances: fp32 atol = rtol = 1e-4, "
        "bf16 atol 5e-2 / rtol 2e-2 (the reasons are in models.py). Dynamic entries run the same package at two "
        "shapes. The op shims are the `aoti_torch_cpu_*` functions the package imports (the fallbacks inductor "
        "kept out of generated code).")
    if device != "cpu":
        intro = intro.replace("`aoti_torch_cpu_*`", f"`aoti_torch_{device}_*`") + (
            " Eager runs on the GPU with TF32 off, and aotrt with AOTRT_CUDNN_ALLOW_TF32=0: both exact fp32. "
            "The torchvision and timm entries (tests/hf/vision.py) are those libraries' full-size classifiers, "
            "random weights (batch norm calibrated), batch 2 at 224x224; their fp32 atol is the larger of 1e-4 "
            "and 4x eager fp32's own distance from eager fp64 on the same inputs (rtol 1e-4), shown as `atol` "
            "beside their differences.")
    lines = [
        f"# Hugging Face architectures through aotrt on {where} (torch {torch.__version__}, "
        f"transformers {transformers.__version__})",
        "",
        intro,
        "",
        "Outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (of {len(records)})."
        + (f" {note}" if note else ""),
        "",
        "| model | what | dtype | shapes run | outcome | max abs diff (max abs eager) | op shims |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        runs = r.get("runs", [])
        shapes = "; ".join(" ".join("x".join(map(str, s)) for s in run["shapes"]) for run in runs)
        diff = ", ".join(f"{run['max_abs_diff']:.2g} ({run['max_abs_eager']:.2g})"
                         + (f" atol {run['tol']['atol']:.2g}" if "eager_vs_fp64" in r else "") for run in runs)
        shims = " ".join(f"`{s.split('_', 3)[-1]}`" for s in r.get("shims", []))
        outcome = r["outcome"] + (f": {r['message']}" if r.get("message") else "")
        lines.append(f"| {r['name']} | {r.get('doc', '')} | {r.get('dtype', '')} | {shapes} | "
                     f"{outcome.replace('|', '/')} | {diff} | {shims} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    models = _registry()
    # A TERM (an outer time limit) unwinds like an exception: sweep() stops its entries.
    signal.signal(signal.SIGTERM, lambda sig, _frame: sys.exit(128 + sig))

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--models", help="comma-separated entry names (default: the slice)")
    g.add_argument("--slice", choices=["ci", "transformers", "vision", "all"],
                   help="entries to sweep (default: transformers on the CPU, all on CUDA)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=0,
                   help="seconds after which no entry starts and running ones stop (0: none)")
    p.add_argument("--out", type=Path, default=REPO / "build" / "hf")
    p.add_argument("--cache", type=Path, default=Path(os.environ.get("AOTRT_HF_CACHE", REPO / "build" / "hf-cache")))
    p.add_argument("--aotrt", type=Path, default=Path(os.environ.get("AOTRT_BIN", REPO / "build" / "aotrt")))
    p.add_argument("--table", type=Path, help="also write the markdown table here")
    args = p.parse_args(argv)
    default_slice = "transformers" if args.device == "cpu" else "all"
    names = args.models.split(",") if args.models else slice_names(args.slice or default_slice)
    unknown = [n for n in names if n not in models.ENTRIES]
    if unknown:
        p.error(f"unknown entries {unknown}; known: {', '.join(models.ENTRIES)}")
    if not args.aotrt.is_file():
        p.error(f"no aotrt CLI at {args.aotrt}: build it first (scripts/build.sh) or pass --aotrt")
    t0 = time.monotonic()
    records = sweep(names, args.cache, args.out, args.aotrt, args.jobs, args.device, args.time_limit or None)
    wall = time.monotonic() - t0
    (args.out / "results.json").write_text(json.dumps(records, indent=1))
    command = "python3 -m tests.hf.sweep" + (f" --models {args.models}" if args.models else
                                             (f" --slice {args.slice}" if args.slice and args.slice != default_slice
                                              else ""))
    if args.device != "cpu":
        command += f" --device {args.device} --jobs {args.jobs}"
    if args.time_limit:
        command += f" --time-limit {args.time_limit:g}"
    stopped = sum(r["outcome"] in ("not-run", "timed-out") for r in records)
    note = (f"Stopped by the time limit ({args.time_limit:g} s): {stopped} entries did not finish."
            if stopped else "")
    if args.device != "cpu":
        note = (note + " " if note else "") + f"Wall time {wall:.0f} s with {args.jobs} export job(s)."
    text = table(records, command + (f" --table {args.table}" if args.table else ""), args.device, note)
    (args.out / "table.md").write_text(text)
    if args.table:
        args.table.parent.mkdir(parents=True, exist_ok=True)
        args.table.write_text(text)
    counts: dict[str, int] = {}
    for r in records:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" of {len(records)} "
          f"({args.device}, {wall:.0f} s)")
    print(f"wrote {args.out / 'results.json'} and {args.out / 'table.md'}" + (f" and {args.table}" if args.table else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
