"""Export the zoo for one device, run every model through `aotrt run`, compare with eager.

    PYTHONPATH=python python3 -m aotrt_tools.e2e export --device cuda --out DIR [--jobs 8] [--model NAME ...]
    PYTHONPATH=python python3 -m aotrt_tools.e2e run --device cuda --out DIR --aotrt build-gpu/aotrt [--md FILE]
    PYTHONPATH=python python3 -m aotrt_tools.e2e all ...   (export, then run)

`export` writes each package with its reference data into DIR (see aotrt_tools.export),
slowest models first, and DIR/exports.json: one record per model, the error text for those
that failed. `run` reads exports.json, runs each package with `aotrt run` (the CLI contract
is in tests/e2e/test_zoo_cpu.py), compares every output with eager using the entry's
tolerance (numpy allclose; the references are fp32 without TF32, and aotrt runs with
AOTRT_CUDNN_ALLOW_TF32=0 to match), and prints a markdown table (model, dtype, max abs diff,
tolerance, result, export s, run s), then the fallback ops and wrapper checks of each model
and the error text of each failure; --md writes the same to a file. One failing model does
not stop the others. Exit status: 0 if every model passed, 1 otherwise.

scripts/gpu_e2e.sh drives this on the CUDA machine; on the CPU it runs with build/aotrt, or
with `python -m aotrt_tools.reference` standing in for aotrt (libtorch as the runtime).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

RUN_TIMEOUT_S = 300


def _job(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Worker: one export, timed wall to wall (module build and eager reference included)."""
    from . import export

    t0 = time.perf_counter()
    info = export._export_model_job(kwargs)
    info["wall_s"] = round(time.perf_counter() - t0, 1)
    return info


def export_order(device: str, wanted: Sequence[str] | None = None) -> list[str]:
    """Zoo models for `device`, the big GPU-only ones first so that a pool of workers does
    not end on one long export."""
    from . import zoo

    models = list(wanted) if wanted else zoo.names(device)
    big = [n for n in reversed(models) if zoo.entry(n).devices == ("cuda",)]
    return big + [n for n in models if n not in big]


def export_all(out_dir: Path, device: str, models: Sequence[str], jobs: int) -> list[dict[str, Any]]:
    """Exports `models` with `jobs` spawned workers; writes out_dir/exports.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kwargs = [dict(out_dir=str(out_dir), name=n, device=device) for n in models]
    results: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")  # forking a torch with threads running is unsafe
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx) as pool:
        futures = {pool.submit(_job, k): k["name"] for k in kwargs}
        for fut in concurrent.futures.as_completed(futures):
            name = futures[fut]
            try:
                info = fut.result()
            except Exception as e:  # noqa: BLE001 - a dead worker is one failed export
                info = {"name": name, "error": f"{type(e).__name__}: {e}", "traceback": repr(e)}
            results.append(info)
            state = "ok" if "package" in info else "FAILED: " + info.get("error", "?").splitlines()[0][:200]
            print(f"[{len(results)}/{len(kwargs)} {time.perf_counter() - t0:6.1f} s] export {name}: "
                  f"{state} ({info.get('wall_s', '?')} s)", flush=True)
    order = {n: i for i, n in enumerate(models)}
    results.sort(key=lambda r: order.get(r.get("name"), len(order)))
    records = [dict(name=r["name"], ok=True, json=f"{r['name']}.json", wall_s=r.get("wall_s"))
               if "package" in r else
               dict(name=r["name"], ok=False, error=r.get("error"), traceback=r.get("traceback"),
                    wall_s=r.get("wall_s"))
               for r in results]
    (out_dir / "exports.json").write_text(json.dumps(dict(device=device, models=records), indent=1))
    return results


def _numbered(folder: Path, pattern: str) -> list[Path]:
    files = []
    while (p := folder / pattern.format(len(files))).exists():
        files.append(p)
    return files


def run_one(aotrt: str, out_dir: Path, info: dict[str, Any], timeout: int = RUN_TIMEOUT_S) -> dict[str, Any]:
    """Runs one exported model through `aotrt run`; compares with the eager outputs.

    Returns dict(ok, max_abs (per output), error, run_s)."""
    import numpy as np

    name = info["name"]
    inputs = _numbered(out_dir, name + ".input_{}.npy")
    expected = _numbered(out_dir, name + ".expected_{}.npy")
    got_dir = out_dir / "outputs" / name
    got_dir.mkdir(parents=True, exist_ok=True)
    for f in got_dir.glob("output_*.npy"):
        f.unlink()
    cmd = [aotrt, "run", info["package"]]
    for p in inputs:
        cmd += ["--input", str(p)]
    cmd += ["--output-dir", str(got_dir)]
    env = dict(os.environ)
    env.setdefault("AOTI_RUNTIME_CHECK_INPUTS", os.environ.get("AOTRT_E2E_CHECK_INPUTS", "1"))
    # The references are true fp32 (zoo.exact_fp32: TF32 off). aotrt follows PyTorch's
    # default and lets cuDNN use TF32 in fp32 convolutions unless told otherwise; with it,
    # yolov8n lands 10 pixels from the fp32 reference, hiding any real error.
    env.setdefault("AOTRT_CUDNN_ALLOW_TF32", "0")
    result: dict[str, Any] = dict(ok=False, max_abs=[], error=None, run_s=None, stage="run")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        result["error"] = f"timed out after {timeout} s: {' '.join(cmd)}\n{e.stderr or ''}"
        return result
    result["run_s"] = round(time.perf_counter() - t0, 2)
    if proc.returncode != 0:
        result["error"] = (f"aotrt run exited with {proc.returncode}\n$ {' '.join(cmd)}\n"
                           f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        return result
    outputs = _numbered(got_dir, "output_{}.npy")
    if len(outputs) != len(expected):
        result["error"] = (f"{len(outputs)} output file(s), eager has {len(expected)}\n"
                           f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        return result
    tol = info["tolerance"]
    problems = []
    for k, (gp, ep) in enumerate(zip(outputs, expected)):
        got, want = np.load(gp), np.load(ep)
        if got.shape != want.shape or got.dtype != want.dtype:
            problems.append(f"output_{k}: {got.dtype}{list(got.shape)}, eager {want.dtype}{list(want.shape)}")
            result["max_abs"].append(float("nan"))
            continue
        diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
        result["max_abs"].append(diff)
        if not np.allclose(got, want, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True):
            bad = int(np.sum(~np.isclose(got, want, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)))
            problems.append(f"output_{k}: max abs diff {diff:.3g}, {bad} of {want.size} elements "
                            f"outside atol {tol['atol']:g} + rtol {tol['rtol']:g}*|eager|")
    result["stage"] = "compare" if problems else "check"
    for c in info.get("checks", []):
        if not c["ok"]:
            problems.append(f"wrapper check failed: {c['description']}: {c['detail']}")
    result["ok"] = not problems
    result["error"] = "\n".join(problems) or None
    return result


def _fmt_diff(values: list[float]) -> str:
    return " ".join(f"{v:.3g}" for v in values) if values else "-"


def report(device: str, rows: list[dict[str, Any]]) -> str:
    """The markdown report: summary table, fallback ops and checks, failures."""
    passed = sum(r["ok"] for r in rows)
    lines = [f"# aotrt end-to-end on {device}: {passed}/{len(rows)} models passed", "",
             "| model | dtype | max abs diff | tolerance (atol / rtol) | result | export s | run s |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        tol = r.get("tolerance") or {}
        tol_s = f"{tol['atol']:g} / {tol['rtol']:g}" if tol else "-"
        lines.append(f"| {r['name']} | {r.get('dtype', '-')} | {_fmt_diff(r.get('max_abs', []))} | {tol_s} | "
                     f"{'pass' if r['ok'] else 'FAIL (' + r['stage'] + ')'} | {r.get('export_s', '-')} | "
                     f"{r.get('run_s') if r.get('run_s') is not None else '-'} |")
    lines += ["", "## Fallback ops and wrapper checks", ""]
    for r in rows:
        ops = " ".join(f"{op}×{n}" for op, n in (r.get("fallback_ops") or {}).items()) or "none"
        lines.append(f"- **{r['name']}**: {ops}")
        for c in r.get("checks", []):
            lines.append(f"  - check {'ok' if c['ok'] else 'FAILED'}: {c['description']} ({c['detail']})")
    failures = [r for r in rows if not r["ok"]]
    if failures:
        lines += ["", "## Failures", ""]
        for r in failures:
            lines += [f"### {r['name']} ({r['stage']})", "```", (r.get("error") or "").strip()[-4000:], "```", ""]
    return "\n".join(lines) + "\n"


def run_all(aotrt: str, out_dir: Path, models: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Runs every model exports.json lists (or `models`); returns one row per model."""
    from . import zoo

    exports = json.loads((out_dir / "exports.json").read_text())
    rows = []
    for rec in exports["models"]:
        if models and rec["name"] not in models:
            continue
        row: dict[str, Any] = dict(name=rec["name"], ok=False, stage="export", export_s=rec.get("wall_s"))
        try:
            e = zoo.entry(rec["name"])
            row["dtype"] = str(e.dtype).removeprefix("torch.")
            row["tolerance"] = dict(atol=e.atol, rtol=e.rtol)
        except KeyError:
            pass
        if not rec["ok"]:
            row["error"] = rec.get("traceback") or rec.get("error")
        else:
            info = json.loads((out_dir / rec["json"]).read_text())
            row.update(dtype=info.get("dtype"), tolerance=info["tolerance"], checks=info.get("checks", []),
                       fallback_ops=info.get("fallback_ops", {}))
            res = run_one(aotrt, out_dir, info)
            row.update(ok=res["ok"], max_abs=res["max_abs"], run_s=res["run_s"], error=res["error"],
                       stage=res["stage"])
        diffs = _fmt_diff(row.get("max_abs", []))
        print(f"run {row['name']}: {'pass' if row['ok'] else 'FAIL (' + row['stage'] + ')'} "
              f"max abs diff {diffs}", flush=True)
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aotrt_tools.e2e", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("export", "run", "all"))
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--out", required=True, help="folder for packages, reference data and outputs")
    parser.add_argument("--jobs", type=int, default=2, help="parallel export processes (default 2)")
    parser.add_argument("--model", action="append", help="only these zoo models (repeatable)")
    parser.add_argument("--aotrt", default=os.environ.get("AOTRT_BIN", "build/aotrt"), help="the aotrt CLI")
    parser.add_argument("--md", help="also write the markdown report here")
    args = parser.parse_args(argv)
    out_dir = Path(args.out)

    status = 0
    if args.command in ("export", "all"):
        models = export_order(args.device, args.model)
        t0 = time.perf_counter()
        results = export_all(out_dir, args.device, models, args.jobs)
        failed = [r["name"] for r in results if "package" not in r]
        print(f"exported {len(results) - len(failed)}/{len(results)} models in "
              f"{time.perf_counter() - t0:.0f} s with {args.jobs} processes"
              + (f"; FAILED: {' '.join(failed)}" if failed else ""), flush=True)
        status = 1 if failed else 0
    if args.command in ("run", "all"):
        if not (os.path.isfile(args.aotrt) and os.access(args.aotrt, os.X_OK)):
            print(f"aotrt not found or not executable at {args.aotrt}", file=sys.stderr)
            return 2
        rows = run_all(args.aotrt, out_dir, args.model)
        text = report(args.device, rows)
        print(text)
        if args.md:
            Path(args.md).write_text(text)
        status = 0 if rows and all(r["ok"] for r in rows) else 1
    return status


if __name__ == "__main__":
    sys.exit(main())
