"""Export the whole zoo and report what the compiled models need from a runtime.

    PYTHONPATH=python python3 -m aotrt_tools.discover --out /tmp/zoo_out --jobs 2

Writes into --out: every zoo package with its .npy reference data (see aotrt_tools.export),
and `discovery.md`, a report with, per model, the export time, the package listing, the
.so's undefined symbols, and selected lines of the generated wrapper .cpp. Also (re)writes,
beside this file:
- zoo_symbols_cpu.txt: the union of the zoo's undefined non-system symbols (the aoti_torch_*
  shims aotrt must define, plus OpenMP/Sleef imports if any), one per line;
- zoo_signatures.txt: the C declaration of every aoti_torch_* symbol in that union, taken
  from the torch wheel's headers, and for each aoti_torch_cpu_* op its aoti_torch_cuda_*
  twin from c_shim_cuda.h.
With --oracle each package is also run through libtorch's loader (aotrt_tools.reference)
and compared with the eager outputs.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import torch

from . import export, zoo

HERE = Path(__file__).parent
TORCH_INCLUDE = Path(torch.__file__).parent / "include"
SHIM_HEADERS = [
    "torch/csrc/inductor/aoti_torch/c/shim.h",
    "torch/csrc/inductor/aoti_torch/c/shim_cpu.h",
    "torch/csrc/inductor/aoti_torch/c/shim_deprecated.h",
    "torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h",
    "torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.h",
    "torch/csrc/inductor/aoti_torch/generated/c_shim_aten.h",
]

# Imported by CUDA models of the same kinds (measured on an H200 with torch 2.11, see
# shared/reference/measured-on-h200.md) but not by any CPU model: their declarations are
# appended to zoo_signatures.txt so the CUDA shims can be written from the same file.
CUDA_ONLY_SYMBOLS = [
    "aoti_torch_clone_preserve_strides",
    "aoti_torch_create_cuda_stream_guard",
    "aoti_torch_delete_cuda_stream_guard",
    "aoti_torch_warn",
    "aoti_torch_dtype_int64",
    "aoti_torch_dtype_bfloat16",
    "aoti_torch_cuda__scaled_dot_product_efficient_attention",
    "aoti_torch_cuda__scaled_dot_product_flash_attention",
    "aoti_torch_cuda__scaled_dot_product_cudnn_attention",
]

# Lines of the wrapper .cpp worth reading: fallback-op calls, view creation, constants.
WRAPPER_PATTERN = r"aoti_torch_cpu_\w+\(|_reinterpret_tensor|reinterpret_tensor_wrapper|create_tensor_from_blob|output_handles\[\d+\] ="


def header_declarations() -> dict[str, tuple[str, str]]:
    """name -> (header path, one-line C declaration) for every AOTI_TORCH_EXPORT function."""
    decl_rx = re.compile(
        r"AOTI_TORCH_EXPORT\s+(?P<ret>[\w\s\*]+?)\s*\b(?P<name>aoti_\w+)\s*\((?P<args>[^;{}]*?)\)\s*;",
        re.S,
    )
    found: dict[str, tuple[str, str]] = {}
    for rel in SHIM_HEADERS:
        path = TORCH_INCLUDE / rel
        if not path.exists():
            continue
        text = path.read_text()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)  # block comments
        text = re.sub(r"//[^\n]*", " ", text)  # line comments
        for m in decl_rx.finditer(text):
            args = " ".join(m["args"].split())
            sig = f"{' '.join(m['ret'].split())} {m['name']}({args});"
            found.setdefault(m["name"], (rel, sig))
    return found


def write_signatures(symbols: list[str], path: Path) -> list[str]:
    """Writes zoo_signatures.txt; returns the symbols no header declares."""
    decls = header_declarations()
    lines = [
        f"# C declarations of the aoti_torch_* symbols the CPU zoo imports (torch {torch.__version__}).",
        "# Source: torch wheel headers under torch/include/ (file named above each group).",
        "# For every aoti_torch_cpu_<op> the CUDA twin aoti_torch_cuda_<op> follows, when declared.",
        "",
    ]
    missing = []
    by_header: dict[str, list[str]] = {}
    for sym in symbols:
        if not sym.startswith("aoti_"):
            continue
        if sym not in decls:
            missing.append(sym)
            continue
        rel, sig = decls[sym]
        by_header.setdefault(rel, []).append(sig)
        if sym.startswith("aoti_torch_cpu_"):
            twin = "aoti_torch_cuda_" + sym.removeprefix("aoti_torch_cpu_")
            if twin in decls:
                by_header.setdefault(decls[twin][0], []).append(decls[twin][1])
    for rel, sigs in by_header.items():
        lines.append(f"## {rel}")
        lines += sigs
        lines.append("")
    lines.append("## CUDA-only imports seen on the H200 (not in the CPU zoo)")
    for sym in CUDA_ONLY_SYMBOLS:
        if sym in decls:
            lines.append(f"{decls[sym][1]}  // {decls[sym][0]}")
        else:
            missing.append(sym)
    lines.append("")
    if missing:
        lines.append("## not declared in any shim header (check by hand)")
        lines += missing
    path.write_text("\n".join(lines).rstrip() + "\n")
    return missing


def _oracle_check(out_dir: Path, info: dict) -> str:
    """Runs the package through libtorch; returns 'max abs diff' per output vs eager."""
    import numpy as np

    from .reference import libtorch_run, with_strides

    name = info["name"]
    inputs = []
    for k, spec in enumerate(info["inputs"]):
        t = torch.from_numpy(np.load(out_dir / f"{name}.input_{k}.npy"))
        inputs.append(with_strides(t, spec["strides"]))
    outs = libtorch_run(out_dir / f"{name}.pt2", inputs)
    diffs = []
    for k, o in enumerate(outs):
        e = np.load(out_dir / f"{name}.expected_{k}.npy")
        diffs.append(float(np.abs(o.numpy() - e).max()) if e.size else 0.0)
    return " ".join(f"{d:.3g}" for d in diffs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="/tmp/zoo_out")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--model", action="append", help="subset of the zoo (default: all)")
    p.add_argument("--oracle", action="store_true", help="also run each package through libtorch")
    p.add_argument("--no-write", action="store_true", help="don't rewrite the .txt files beside this script")
    args = p.parse_args(argv)

    out_dir = Path(args.out)
    models = args.model or zoo.names("cpu")
    t0 = time.perf_counter()
    results = export.export_many([dict(out_dir=out_dir, name=n) for n in models], processes=args.jobs)
    wall = time.perf_counter() - t0

    report = [f"# CPU zoo discovery (torch {torch.__version__}, {len(models)} models, "
              f"{args.jobs} processes, {wall:.0f} s wall)", ""]
    report.append("| model | export+compile s | fallback ops | other undefined | oracle max abs diff |")
    report.append("|---|---|---|---|---|")
    union: set[str] = set()
    for info in results:
        if "package" not in info:
            report.append(f"| {info['name']} | FAILED | | | |")
            continue
        und = info["undefined"]
        union.update(und["shim"], und["openmp"], und["sleef"], und["other"])
        fallbacks = [s.removeprefix("aoti_torch_cpu_") for s in und["shim"] if s.startswith("aoti_torch_cpu_")]
        others = und["openmp"] + und["sleef"] + und["other"]
        oracle = ""
        if args.oracle:
            try:
                oracle = _oracle_check(out_dir, info)
            except Exception as e:  # noqa: BLE001 - the oracle is advisory; report and go on
                oracle = f"oracle error: {type(e).__name__}: {e}"
        report.append(f"| {info['name']} | {info['export_s']}+{info['compile_s']} | {' '.join(fallbacks)} "
                      f"| {' '.join(others)} | {oracle} |")

    common = set.intersection(*(set(r["undefined"]["shim"]) for r in results if "package" in r)) if results else set()
    report += ["", f"Shims every model imports ({len(common)}): {' '.join(sorted(common))}", ""]
    report += ["", "## Per model", ""]
    for info in results:
        report.append(export.summarize(info))
        if "package" in info:
            report.append("   wrapper.cpp:")
            # The pasted runtime headers declare these too; keep only run_impl's lines.
            lines = [l for l in export.wrapper_lines(info["package"], WRAPPER_PATTERN)
                     if "AOTI_TORCH_ERROR_CODE_CHECK" in l or "output_handles[" in l or "reinterpret_tensor_wrapper(" in l]
            report += [f"     {l}" for l in lines[:40]]
        report.append("")

    symbols = sorted(union)
    if results and results[0].get("exported_api"):
        report += ["## C API the .so exports (nm -D --defined-only, AOTInductor*)", " ".join(results[0]["exported_api"]), ""]
    if not args.no_write:
        (HERE / "zoo_symbols_cpu.txt").write_text("\n".join(symbols) + "\n")
        missing = write_signatures(symbols, HERE / "zoo_signatures.txt")
        if missing:
            report.append(f"No header declaration found for: {' '.join(missing)}")
    (out_dir / "discovery.md").write_text("\n".join(report) + "\n")
    print("\n".join(report))
    return 0 if all("package" in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
