#!/usr/bin/env python3
"""aotrt against PyTorch on the same models, measured side by side in one process run.

    python3 bench/compare.py --device cuda|cpu [--models a,b] [--rounds R] [--iters N]
                             [--aotrt build/aotrt] [--export-dir DIR] [--out bench/results]

For each model (default: the issue's set on cuda, a CPU zoo subset on cpu) it times, with the
same inputs (the export's NAME.input_K.npy files, laid out with the strides the model was
compiled for):
  eager             the nn.Module, under no_grad
  compile           torch.compile(module)
  reduce-overhead   torch.compile(module, mode="reduce-overhead") (CUDA graphs; cuda only)
  aotrt             `aotrt bench PKG --json --no-cuda-graph` in a fresh subprocess, on the package
                    aotrt_tools exports (aot_inductor.link_libtorch=False): every run plain
  aotrt-graph       the same with --cuda-graph (cuda only); aotrt's default, automatic graphs,
                    replays these fixed-shape models the same way from their second run
  libtorch-aoti     torch._inductor.aoti_load_package in a fresh Python subprocess, on the same
                    model exported with libtorch linked in (cpu only: on the H200 libtorch's
                    loader segfaults, see shared/reference/measured-on-h200.md)
  ort               ONNX Runtime's CPU execution provider on the same model exported to ONNX by
                    torch.onnx.export(dynamo=True), SessionOptions() as they come (cpu only)
  aotrt-baseline    another aotrt CLI (--baseline, e.g. a copy of main's) on its own exports of the same
                    models (--baseline-export-option, e.g. freezing=false for the export before
                    the CPU inference default): a before/after in one run, alternated round by round
  ort-tuned         the same with the session tuned after ORT's performance guide: every graph
                    optimization, intra-op threads = the cores (or --threads), one inter-op thread,
                    sequential execution, spinning workers, inputs and outputs bound once
                    (IOBinding); see child_ort. Both in a fresh Python process that imports
                    onnxruntime and numpy, not torch; onnx's protobuf lives in build-bench/onnx-site
                    (Note [Bench site folders])
Outputs of aotrt and ORT are compared with eager on the same inputs (max abs diff in the table);
where aotrt's per-run time is above ORT's, `aotrt bench --profile` of that model goes in the table.
Contenders alternate over R rounds (the order rotates each round); each round runs N timed
iterations after a warm-up; a round's number is its p50 and the table shows the median of the
rounds. Per-run latency is wall time around one call plus, on cuda, a stream synchronisation
(torch.cuda.synchronize() / the sync `aotrt bench` makes per timed run), so the device work is
in it. Startup is process start to first output (aotrt bench reads AOTRT_BENCH_T0_NS, set here
just before the subprocess starts; the libtorch child reads the same). Peak device memory: torch's
max_memory_allocated() (weights, inputs, activations; CUDA graph pools included) against aotrt's
allocator peak plus the model's constants; peak host memory: VmHWM of the subprocess.

Writes bench/results/<device>-<date>.md (tables, machine, versions), .json (every number) and
.png (bar chart). On cpu the table also checks the issue's targets against libtorch's loader:
per-run <= 1.0x, time to first output <= 0.2x, peak RSS <= 0.25x.

Exports are cached in --export-dir (default build-bench/<device>) and redone when the export code,
torch or the options change. A package directory written by `python -m aotrt_tools.e2e export`
(scripts/gpu_e2e.sh's build-gpu/zoo) can be passed as --export-dir: its NAME.json and input files
are what this reads.
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
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

DEFAULT_MODELS = {
    "cuda": ["c2f_block_80", "resnet18", "mobilenet_v3_small", "resnet50", "transformer_encoder_d512"],
    # The CPU zoo's real work (convolutions, matmuls, attention, vectorized pointwise) at the
    # sizes the zoo has; each is exported twice (aotrt and libtorch-linked).
    "cpu": ["pointwise_c2f_vec", "resnet_basic_block", "transformer_encoder_layer", "linear_bias",
            "bmm_permuted", "conv_grouped_dilated", "sleef_pointwise"],
}
CONTENDERS = {
    "cuda": ["eager", "compile", "reduce-overhead", "aotrt", "aotrt-graph"],
    "cpu": ["eager", "compile", "aotrt", "libtorch-aoti", "ort", "ort-tuned"],
}
ORT_CONTENDERS = ("ort", "ort-tuned")
BASELINE = "aotrt-baseline"  # --baseline: another aotrt CLI on its own exports
# The CPU targets, aotrt / libtorch's loader.
CPU_TARGETS = {"per_run": 1.0, "startup": 0.2, "peak_rss": 0.25}
# Same kernels on both sides: aotrt's export options set it already (a link_libtorch=False
# export would otherwise probe the vector ISA through a .so that cannot load and fall back to
# scalar code: Note [CPU vectorization and Sleef] in python/aotrt_tools/export.py); named here
# so that the libtorch-linked export gets the same.
CPU_EXPORT_OPTIONS = {"cpp.vec_isa_ok": True}
CHILD_TIMEOUT_S = 600
# ONNX Runtime's side: `import onnx` (torch.onnx's dynamo exporter needs it) wants protobuf >=
# 6.31.1, while the Triton tests' tritonclient[grpc] keeps the environment's protobuf below 6.
# The ONNX export and ORT run in child processes with this folder first on their PYTHONPATH,
# made here when missing (Note [Bench site folders]). It holds the whole ONNX stack, so a
# fresh machine (scripts/install_deps.sh installs none of it: the bench is not part of CI)
# gets the versions measured here; numpy, packaging, sympy and typing_extensions come with torch.
ONNX_SITE = REPO / "build-bench" / "onnx-site"
ONNX_SITE_PACKAGES = ["protobuf==6.33.6", "onnx==1.23.2", "onnx-ir==1.1.0", "onnxscript==0.7.2",
                      "ml_dtypes==0.7.0", "onnxruntime==1.32.0", "flatbuffers==25.12.19"]
# torchvision for the CPU zoo's torchvision entries, beside the environment's torch, never
# installed into it: transformers imports torchvision wherever it finds it, and the CUDA build
# PyPI serves cannot load its ops beside a CPU torch (zoo._make_torchvision_importable).
TORCHVISION_SITE = REPO / "build-bench" / "torchvision-site"
TORCHVISION_FOR_TORCH = {"2.13": ["torchvision==0.28.0", "pillow==13.0.0"]}
TORCHVISION_MODELS = {"resnet18", "resnet50", "resnet50_b1", "mobilenet_v3_small"}

# Note [Bench site folders]
# Packages the bench needs and the environment must not get go into folders of their own,
# installed with `pip install --no-deps --target` at pinned versions (so pip never resolves,
# let alone replaces, torch), and are put on the path of the processes that need them only.
# A folder is complete when its marker names the same packages.


def ensure_site(folder: Path, packages: list[str], why: str) -> Path:
    marker = folder / ".aotrt-bench-packages"
    if marker.exists() and marker.read_text().split() == packages:
        return folder
    log(f"installing {' '.join(packages)} into {folder} ({why}; pip install --no-deps --target)")
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--upgrade", "--target",
                          str(folder), *packages], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(packages)} failed: {res.stderr.strip()[-1500:]}")
    marker.write_text(" ".join(packages) + "\n")
    return folder


def ensure_torchvision(models: list[str]) -> None:
    """Puts torchvision on this process's path when a model needs it and it is not importable."""
    import importlib.util

    if not TORCHVISION_MODELS.intersection(models) or importlib.util.find_spec("torchvision"):
        return
    from importlib.metadata import version

    torch_minor = ".".join(version("torch").split(".")[:2])
    if torch_minor not in TORCHVISION_FOR_TORCH:
        log(f"no torchvision pinned for torch {torch_minor}: the torchvision models will be unknown")
        return
    ensure_site(TORCHVISION_SITE, TORCHVISION_FOR_TORCH[torch_minor], "torchvision models")
    sys.path.insert(0, str(TORCHVISION_SITE))


def child_pythonpath(onnx: bool) -> str:
    """PYTHONPATH for a child: the ONNX folder first where it is ONNX's, then torchvision's, the repo's."""
    parts = [str(ONNX_SITE)] if onnx else []
    if str(TORCHVISION_SITE) in sys.path:
        parts.append(str(TORCHVISION_SITE))
    parts.append(str(REPO / "python"))
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(parts)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Exports
# --------------------------------------------------------------------------------------


def _fresh(meta_path: Path, want: dict[str, Any]) -> bool:
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return False
    return all(meta.get(k) == v for k, v in want.items()) and Path(meta["package"]).exists()


def export_models(names: list[str], device: str, export_dir: Path,
                  contenders: list[str] | None = None,
                  extra_options: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Exports what is missing or stale; returns per model its export json (package, inputs).

    The libtorch-linked package and the ONNX file are made only for the contenders that run them."""
    contenders = CONTENDERS[device] if contenders is None else contenders
    from aotrt_tools import export, zoo

    export_dir.mkdir(parents=True, exist_ok=True)
    fingerprint = export.source_fingerprint()
    options = {**(CPU_EXPORT_OPTIONS if device == "cpu" else {}), **(extra_options or {})}
    infos: dict[str, dict[str, Any]] = {}
    for name in names:
        meta = export_dir / f"{name}.json"
        want = {"fingerprint": fingerprint}
        bench_meta = export_dir / f"{name}.bench.json"
        if not (_fresh(meta, want) and _bench_options_match(bench_meta, options)):
            log(f"export {name} for {device} (aotrt: link_libtorch=False) ...")
            t0 = time.perf_counter()
            export.export_model(export_dir, name=name, device=device, extra_options=dict(options) or None)
            bench_meta.write_text(json.dumps({"options": options}))
            log(f"  done in {time.perf_counter() - t0:.0f} s")
        info = json.loads(meta.read_text())
        if device == "cpu" and "libtorch-aoti" in contenders:
            lt = export_dir / f"{name}.libtorch.pt2"
            lt_meta = export_dir / f"{name}.libtorch.json"
            if not _fresh(lt_meta, want):
                log(f"export {name} for cpu with libtorch linked ...")
                t0 = time.perf_counter()
                module, inputs, _ = zoo.get(name)
                lt_options = {**options, "aot_inductor.link_libtorch": True}
                if _blob_bytes(info["package"]) == 0:
                    # No weights: libtorch's loader fails to mmap an empty blob ("mmap()
                    # failed"), so its package keeps its (no) constants in the .so.
                    lt_options.update({"aot_inductor.package_constants_in_so": True,
                                       "aot_inductor.package_constants_on_disk_format": None})
                res = export.export_package(module, inputs, lt, device="cpu", extra_options=lt_options)
                lt_meta.write_text(json.dumps({"fingerprint": fingerprint, "package": res["package"],
                                               "needed": res.get("needed")}, default=str))
                log(f"  done in {time.perf_counter() - t0:.0f} s")
            info["libtorch_package"] = json.loads(lt_meta.read_text())["package"]
        info["input_files"] = [str(export_dir / f"{name}.input_{k}.npy") for k in range(len(info["inputs"]))]
        if device == "cpu" and any(c in contenders for c in ORT_CONTENDERS):
            info.update(export_onnx(name, info, export_dir, fingerprint))
        infos[name] = info
    return infos


def export_onnx(name: str, info: dict[str, Any], export_dir: Path, fingerprint: str) -> dict[str, Any]:
    """NAME.onnx by torch.onnx.export (dynamo) in a child process: {"onnx": path} or {"onnx_error": why}."""
    import torch

    onnx_path = export_dir / f"{name}.onnx"
    onnx_meta = export_dir / f"{name}.onnx.json"
    want = {"fingerprint": fingerprint, "torch": torch.__version__, "site": ONNX_SITE_PACKAGES}
    try:
        meta = json.loads(onnx_meta.read_text())
    except (OSError, ValueError):
        meta = {}
    if not all(meta.get(k) == v for k, v in want.items()) or not (onnx_path.exists() or meta.get("error")):
        ensure_site(ONNX_SITE, ONNX_SITE_PACKAGES, "onnx needs protobuf >= 6.31.1")
        log(f"export {name} to ONNX (torch.onnx.export, dynamo) ...")
        t0 = time.perf_counter()
        onnx_path.unlink(missing_ok=True)
        args = {"name": name, "files": info["input_files"], "out": str(onnx_path)}
        meta = dict(want)
        try:
            meta.update(_run_child("--child-onnx-export", args, {"PYTHONPATH": child_pythonpath(onnx=True)}))
            log(f"  done in {time.perf_counter() - t0:.0f} s")
        except (RuntimeError, ValueError, IndexError) as err:
            meta["error"] = str(err)
            log(f"  FAILED: {meta['error']}")
        onnx_meta.write_text(json.dumps(meta, default=str))
    if meta.get("error"):
        return {"onnx_error": meta["error"]}
    return {"onnx": str(onnx_path), "onnx_versions": meta.get("versions")}


def _last_error(stderr: str) -> str:
    """The exception line of a child's traceback (the last line that names an error), else its tail."""
    lines = [l.strip() for l in stderr.strip().splitlines() if l.strip()]
    for line in reversed(lines):
        if "Error" in line.split(":", 1)[0] or "Exception" in line.split(":", 1)[0]:
            return line[:600]
    return " / ".join(lines[-3:])[:600]


def child_onnx_export(arg: str) -> None:
    """In a fresh process with the ONNX folder on the path: the zoo model to ONNX."""
    a = json.loads(arg)
    import numpy as np
    import onnx
    import onnxruntime
    import onnxscript
    import torch
    from aotrt_tools import zoo

    module, _, _ = zoo.get(a["name"])
    inputs = tuple(torch.from_numpy(np.load(f)) for f in a["files"])
    with torch.no_grad():
        program = torch.onnx.export(module, inputs, dynamo=True, external_data=False)
    program.save(a["out"])
    model = onnx.load(a["out"])
    print(json.dumps({"versions": {"onnx": onnx.__version__, "onnxscript": onnxscript.__version__,
                                   "onnxruntime": onnxruntime.__version__},
                      "opset": [(o.domain or "ai.onnx", o.version) for o in model.opset_import],
                      "nodes": len(model.graph.node), "bytes": os.path.getsize(a["out"])}))


def _blob_bytes(package: str) -> int:
    """Bytes of the package's weights blob (-1: it has none)."""
    import zipfile

    with zipfile.ZipFile(package) as zf:
        sizes = [i.file_size for i in zf.infolist() if i.filename.endswith("_weights.blob")]
    return sizes[0] if sizes else -1


def _bench_options_match(path: Path, options: dict[str, Any]) -> bool:
    if not path.exists():
        # A directory exported by aotrt_tools.e2e carries no record: its packages have the
        # zoo's options, which is what an empty option set means.
        return not options
    try:
        return json.loads(path.read_text()).get("options") == options
    except ValueError:
        return False


def load_inputs(info: dict[str, Any], device: str):
    """The export's inputs as torch tensors on `device`, with the strides the model expects."""
    import numpy as np
    import torch

    tensors = []
    for spec, f in zip(info["inputs"], info["input_files"]):
        src = torch.from_numpy(np.load(f))
        t = torch.empty_strided(spec["sizes"], spec["strides"], dtype=src.dtype, device=device)
        t.copy_(src)
        tensors.append(t)
    return tensors


# --------------------------------------------------------------------------------------
# Contenders
# --------------------------------------------------------------------------------------


def _p(values: list[float], q: float) -> float:
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


class TorchContender:
    """eager / compile / reduce-overhead in this process."""

    def __init__(self, kind: str, module, inputs, device: str):
        import torch

        self.kind, self.inputs, self.device = kind, inputs, device
        self.cuda = device == "cuda"
        if kind == "eager":
            self.fn = module
        elif kind == "compile":
            self.fn = torch.compile(module)
        else:
            self.fn = torch.compile(module, mode="reduce-overhead")
        self.compile_s = None

    def _call(self):
        import torch

        if self.kind == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        return self.fn(*self.inputs)

    def prepare(self, warmup: int) -> None:
        import torch

        with torch.no_grad():
            t0 = time.perf_counter()
            self._call()
            if self.cuda:
                torch.cuda.synchronize()
            self.compile_s = time.perf_counter() - t0
            for _ in range(warmup):
                self._call()
            if self.cuda:
                torch.cuda.synchronize()

    def measure(self, warmup: int, iters: int) -> dict[str, Any]:
        import torch

        samples = []
        with torch.no_grad():
            if self.cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            for _ in range(warmup):
                self._call()
            sync = torch.cuda.synchronize if self.cuda else (lambda: None)
            sync()
            for _ in range(iters):
                t0 = time.perf_counter_ns()
                out = self._call()
                sync()
                samples.append((time.perf_counter_ns() - t0) / 1e3)
                del out
        row = {"p50_us": _p(samples, 0.5), "p90_us": _p(samples, 0.9), "p99_us": _p(samples, 0.99)}
        if self.cuda:
            row["peak_device_bytes"] = torch.cuda.max_memory_allocated()
        return row


def run_aotrt(aotrt: Path, info: dict[str, Any], warmup: int, iters: int, graph: bool) -> dict[str, Any]:
    cmd = [str(aotrt), "bench", info["package"], "--json", "--warmup", str(warmup), "--iters", str(iters)]
    for f in info["input_files"]:
        cmd += ["--input", f]
    # Plain (every launch from the host) or one graph; aotrt's default, automatic graphs,
    # replays these fixed-shape models as "aotrt-graph" does from their second run.
    cmd.append("--cuda-graph" if graph else "--no-cuda-graph")
    env = dict(os.environ, AOTRT_BENCH_T0_NS=str(time.monotonic_ns()))
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"aotrt bench failed ({res.returncode}): {res.stderr.strip()[-2000:]}")
    j = json.loads(res.stdout.strip().splitlines()[-1])
    lat = j["latency_us"]
    row = {"p50_us": lat["p50"], "p90_us": lat["p90"], "p99_us": lat["p99"],
           "startup_s": j["time_to_first_output_s"], "peak_host_bytes": j["peak_host_bytes"],
           "load_s": j["load_s"], "first_run_s": j["first_run_s"], "raw": j}
    if info.get("device", "cpu") != "cpu" and "enqueue_us" in j:
        row["peak_device_bytes"] = j["peak_allocator_bytes"] + j["constants_bytes"]
        row["enqueue_p50_us"] = j["enqueue_us"]["p50"]
        row["pipelined_runs_per_s"] = j["pipelined_runs_per_s"]
        row["steady_state_cuda_mallocs"] = j["steady_state_cuda_mallocs"]
    return row


def run_libtorch(info: dict[str, Any], warmup: int, iters: int) -> dict[str, Any]:
    args = {"package": info["libtorch_package"], "inputs": info["inputs"], "files": info["input_files"],
            "warmup": warmup, "iters": iters}
    # The model's own input checks, which aotrt turns on by default (LoadOptions::check_inputs):
    # the same generated code path on both sides.
    return _run_child("--child-libtorch", args, {"AOTI_RUNTIME_CHECK_INPUTS": "1"})


def _run_child(flag: str, args: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """This script in a fresh process (`flag` picks the child), timed from just before it starts
    (AOTRT_BENCH_T0_NS); returns the JSON object its last stdout line holds."""
    env = dict(os.environ, **env, AOTRT_BENCH_T0_NS=str(time.monotonic_ns()))
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), flag, json.dumps(args)],
                         capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"{flag[2:]} failed ({res.returncode}): {_last_error(res.stderr)}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def child_libtorch(arg: str) -> None:
    """In a fresh process: libtorch's loader, timed as `aotrt bench` times aotrt."""
    t_start = int(os.environ.get("AOTRT_BENCH_T0_NS", time.monotonic_ns()))
    a = json.loads(arg)
    import numpy as np
    import torch

    t_import = time.monotonic_ns()
    compiled = torch._inductor.aoti_load_package(a["package"])
    t_loaded = time.monotonic_ns()
    inputs = []
    for spec, f in zip(a["inputs"], a["files"]):
        src = torch.from_numpy(np.load(f))
        inputs.append(torch.empty_strided(spec["sizes"], spec["strides"], dtype=src.dtype).copy_(src))
    # loader.run is the C++ runner without AOTICompiledModel's pytree handling: the least
    # Python between the timer and libtorch.
    run = compiled.loader.run
    with torch.no_grad():
        run(inputs)
        t_first = time.monotonic_ns()
        timed = _timed_runs(lambda: run(inputs), a["warmup"], a["iters"])
    print(json.dumps({**timed, "startup_s": (t_first - t_start) / 1e9, "import_s": (t_import - t_start) / 1e9,
                      "load_s": (t_loaded - t_import) / 1e9, "peak_host_bytes": _vm_hwm()}))


def _timed_runs(run, warmup: int, iters: int) -> dict[str, float]:
    """`warmup` untimed calls of run(), then p50/p90/p99 (us) of `iters` timed ones."""
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        run()
        samples.append((time.perf_counter_ns() - t0) / 1e3)
    return {"p50_us": _p(samples, 0.5), "p90_us": _p(samples, 0.9), "p99_us": _p(samples, 0.99)}


def _vm_hwm() -> int:
    """This process's peak resident memory (VmHWM), bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return -1


def _ort_threads(requested: int | None) -> int:
    return requested or os.cpu_count() or 1


def run_ort(info: dict[str, Any], warmup: int, iters: int, tuned: bool, threads: int | None,
            check_dir: Path | None) -> dict[str, Any]:
    if "onnx_error" in info:
        raise RuntimeError(f"ONNX export failed: {info['onnx_error']}")
    args = {"model": info["onnx"], "files": info["input_files"], "warmup": warmup, "iters": iters,
            "tuned": tuned, "threads": _ort_threads(threads), "check_dir": str(check_dir) if check_dir else None}
    return _run_child("--child-ort", args, {"PYTHONPATH": child_pythonpath(onnx=True)})


def child_ort(arg: str) -> None:
    """In a fresh process: ONNX Runtime's CPU execution provider, timed as `aotrt bench` times aotrt.

    Default: `SessionOptions()` as it comes and `session.run`. Tuned, after ORT's performance
    guide (docs/performance/tune-performance): every graph optimization, intra-op threads = the
    cores, one inter-op thread, sequential execution, spinning workers, the memory arena and
    memory patterns, and the inputs bound once through an IOBinding (outputs bound to the CPU),
    so a timed run is `run_with_iobinding` with no numpy conversion around it.
    """
    t_start = int(os.environ.get("AOTRT_BENCH_T0_NS", time.monotonic_ns()))
    a = json.loads(arg)
    import numpy as np
    import onnxruntime as ort

    t_import = time.monotonic_ns()
    so = ort.SessionOptions()
    if a["tuned"]:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = a["threads"]
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.enable_cpu_mem_arena = True
        so.enable_mem_pattern = True
        so.add_session_config_entry("session.intra_op.allow_spinning", "1")
    options = {"graph_optimization_level": str(so.graph_optimization_level), "intra_op_num_threads":
               so.intra_op_num_threads, "inter_op_num_threads": so.inter_op_num_threads,
               "execution_mode": str(so.execution_mode), "enable_cpu_mem_arena": so.enable_cpu_mem_arena,
               "enable_mem_pattern": so.enable_mem_pattern, "iobinding": a["tuned"]}
    sess = ort.InferenceSession(a["model"], so, providers=["CPUExecutionProvider"])
    t_loaded = time.monotonic_ns()
    graph_inputs = sess.get_inputs()
    if len(graph_inputs) != len(a["files"]):
        raise RuntimeError(f"the ONNX graph takes {len(graph_inputs)} inputs, the export has {len(a['files'])}")
    feeds = {i.name: np.ascontiguousarray(np.load(f)) for i, f in zip(graph_inputs, a["files"])}
    if a["tuned"]:
        binding = sess.io_binding()
        for name, x in feeds.items():
            binding.bind_cpu_input(name, x)
        for o in sess.get_outputs():
            binding.bind_output(o.name, "cpu")

        def run():
            sess.run_with_iobinding(binding)

        def outputs():
            return binding.copy_outputs_to_cpu()
    else:
        last: list[Any] = []

        def run():
            last[:] = sess.run(None, feeds)

        def outputs():
            return last
    run()
    t_first = time.monotonic_ns()
    if a["check_dir"]:
        for k, y in enumerate(outputs()):
            np.save(Path(a["check_dir"]) / f"output_{k}.npy", y)
    timed = _timed_runs(run, a["warmup"], a["iters"])
    print(json.dumps({**timed, "startup_s": (t_first - t_start) / 1e9, "import_s": (t_import - t_start) / 1e9,
                      "load_s": (t_loaded - t_import) / 1e9, "first_run_s": (t_first - t_loaded) / 1e9,
                      "peak_host_bytes": _vm_hwm(), "ort_options": options}))


def aotrt_outputs(aotrt: Path, info: dict[str, Any], out_dir: Path) -> None:
    """`aotrt run` once on the export's inputs, its outputs as out_dir/output_K.npy."""
    cmd = [str(aotrt), "run", info["package"], "--output-dir", str(out_dir)]
    for f in info["input_files"]:
        cmd += ["--input", f]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    if res.returncode != 0:
        raise RuntimeError(f"aotrt run failed ({res.returncode}): {res.stderr.strip()[-600:]}")


def max_abs_diff(reference: list[Any], out_dir: Path) -> float:
    """Largest |output - eager| over the outputs written to out_dir (output_K.npy)."""
    import numpy as np

    worst = 0.0
    for k, ref in enumerate(reference):
        path = out_dir / f"output_{k}.npy"
        if not path.exists():
            raise RuntimeError(f"output {k} missing (eager has {len(reference)})")
        got = np.load(path)
        if got.shape != ref.shape:
            raise RuntimeError(f"output {k} has shape {got.shape}, eager {ref.shape}")
        if got.size:
            worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))))
    return worst


def _eager_outputs(module, inputs) -> list[Any]:
    import torch

    with torch.no_grad():
        out = module(*inputs)
    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    return [t.detach().float().cpu().numpy() if t.is_floating_point() else t.cpu().numpy() for t in flat]


# --------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------


def compare_model(name: str, info: dict[str, Any], device: str, contenders: list[str], aotrt: Path,
                  rounds: int, warmup: int, iters: int, threads: int | None = None,
                  baseline: tuple[Path, dict[str, Any]] | None = None) -> dict[str, Any]:
    import torch
    from aotrt_tools import zoo

    module, _, _ = zoo.get(name)  # channels-last where the zoo builds it so
    module = module.to(device)
    if zoo.entry(name).dtype != torch.float32:
        module = module.to(zoo.entry(name).dtype)
    inputs = load_inputs(info, device)
    result: dict[str, Any] = {"contenders": {}, "errors": {}, "loadavg_before": os.getloadavg()[0]}
    torch_objs: dict[str, TorchContender] = {}
    for c in contenders:
        if c in ("eager", "compile", "reduce-overhead"):
            try:
                log(f"{name}: {c}: compile and warm up")
                tc = TorchContender(c, module, inputs, device)
                tc.prepare(warmup)
                torch_objs[c] = tc
                result.setdefault("compile_s", {})[c] = round(tc.compile_s, 2)
            except Exception as err:  # noqa: BLE001 - one contender failing is a table cell
                result["errors"][c] = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
                log(f"{name}: {c} FAILED: {result['errors'][c]}")
    # Outputs against eager, on the same inputs: aotrt's from one `aotrt run`, ORT's from the
    # first output of its first round.
    import tempfile

    check_root = Path(tempfile.mkdtemp(prefix=f"compare-{name}-"))
    reference = (_eager_outputs(module, inputs)
                 if any(c in ("aotrt", BASELINE) or c in ORT_CONTENDERS for c in contenders) else [])
    result["max_abs_diff"] = {}
    for c, pair in (("aotrt", (aotrt, info)), (BASELINE, baseline)):
        if c not in contenders or device != "cpu" or pair is None:
            continue
        cli, c_info = pair
        try:
            (check_root / c).mkdir()
            aotrt_outputs(cli, c_info, check_root / c)
            result["max_abs_diff"][c] = max_abs_diff(reference, check_root / c)
        except Exception as err:  # noqa: BLE001
            result["max_abs_diff"][c] = f"{type(err).__name__}: {str(err)[:300]}"
    rows: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    for r in range(rounds):
        order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
        for c in order:
            if c in result["errors"]:
                continue
            try:
                if c in torch_objs:
                    row = torch_objs[c].measure(warmup, iters)
                elif c in ("aotrt", "aotrt-graph"):
                    row = run_aotrt(aotrt, {**info, "device": device}, warmup, iters, graph=c == "aotrt-graph")
                elif c == BASELINE:
                    row = run_aotrt(baseline[0], {**baseline[1], "device": device}, warmup, iters, graph=False)
                elif c in ORT_CONTENDERS:
                    check_dir = check_root / c if r == 0 else None
                    if check_dir:
                        check_dir.mkdir()
                    row = run_ort(info, warmup, iters, tuned=c == "ort-tuned", threads=threads, check_dir=check_dir)
                    if check_dir:
                        try:
                            result["max_abs_diff"][c] = max_abs_diff(reference, check_dir)
                        except Exception as err:  # noqa: BLE001
                            result["max_abs_diff"][c] = f"{type(err).__name__}: {str(err)[:300]}"
                        result.setdefault("ort_options", {})[c] = row.pop("ort_options", None)
                    row.pop("ort_options", None)
                else:
                    row = run_libtorch(info, warmup, iters)
                rows[c].append(row)
            except Exception as err:  # noqa: BLE001
                result["errors"][c] = f"{type(err).__name__}: {str(err)[:600]}"
                log(f"{name}: {c} FAILED: {result['errors'][c]}")
        log(f"{name}: round {r + 1}/{rounds}: " + ", ".join(
            f"{c} {rows[c][-1]['p50_us']:.0f} us" for c in contenders if rows[c] and len(rows[c]) == r + 1))
    for c, rs in rows.items():
        if not rs:
            continue
        summary: dict[str, Any] = {"rounds": len(rs)}
        for key in ("p50_us", "p90_us", "p99_us", "startup_s", "peak_host_bytes", "peak_device_bytes",
                    "enqueue_p50_us", "pipelined_runs_per_s", "load_s", "import_s", "first_run_s"):
            vals = [x[key] for x in rs if x.get(key) is not None]
            if vals:
                summary[key] = statistics.median(vals)
        if c.startswith("aotrt"):
            summary["steady_state_cuda_mallocs"] = max((x.get("steady_state_cuda_mallocs", 0) for x in rs), default=0)
        summary["p50_us_per_round"] = [x["p50_us"] for x in rs]
        result["contenders"][c] = summary
    del torch_objs
    import shutil

    shutil.rmtree(check_root, ignore_errors=True)
    result["loadavg_after"] = os.getloadavg()[0]
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


def warm_caches(name: str, device: str) -> None:
    """Compiles `name` the way compare_model will (default and reduce-overhead, under no_grad,
    inputs of the exported sizes and strides), so that a later run finds inductor's on-disk
    caches warm: scripts/bench_gpu.sh runs this beside the exports and the build."""
    import torch
    from aotrt_tools import zoo

    module, inputs, _ = zoo.get(name)
    module = module.to(device)
    if zoo.entry(name).dtype != torch.float32:
        module = module.to(zoo.entry(name).dtype)
    inputs = [t.to(device) for t in inputs]  # Tensor.to keeps the strides of dense tensors
    modes = ["default", "reduce-overhead"] if device == "cuda" else ["default"]
    for mode in modes:
        t0 = time.perf_counter()
        fn = torch.compile(module, mode=None if mode == "default" else mode)
        with torch.no_grad():
            for _ in range(3):
                if mode == "reduce-overhead":
                    torch.compiler.cudagraph_mark_step_begin()
                fn(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        log(f"warm {name} {mode}: {time.perf_counter() - t0:.1f} s")


def machine_info(device: str, aotrt: Path) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"host": platform.node(), "python": platform.python_version(),
                            "torch": torch.__version__, "cpu_count": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
        info["cuda"] = torch.version.cuda
        try:
            info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            info["driver"] = "unknown (no nvidia-smi)"
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
        info["aotrt_commit"] = commit + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        info["aotrt_commit"] = "unknown"
    info["aotrt_binary"] = str(aotrt)
    return info


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def _us(c: dict[str, Any] | None) -> str:
    return f"{c['p50_us']:.1f}" if c and "p50_us" in c else "-"


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None, key: str = "p50_us") -> float | None:
    if not a or not b or key not in a or key not in b or not b[key]:
        return None
    return a[key] / b[key]


def _fmt_ratio(x: float | None) -> str:
    return f"{x:.2f}x" if x is not None else "-"


def _mib(x: float | None) -> str:
    return f"{x / 2**20:.1f}" if x is not None else "-"


def render_markdown(data: dict[str, Any]) -> str:
    device, m = data["device"], data["machine"]
    contenders = data["contenders"]
    lines = [f"# aotrt vs PyTorch on {device} ({data['date']})", ""]
    lines.append(f"Command: `{data['command']}`  ")
    lines.append(f"Rounds {data['rounds']}, {data['iters']} timed iterations per round after "
                 f"{data['warmup']} warm-up; per-run latency is the p50 of a round (wall time of one "
                 f"call{' plus a stream sync' if device == 'cuda' else ''}), the median over rounds. "
                 f"CPU threads: {data.get('threads')}. Load average (1 min) around each model: " + ", ".join(
                     f"{n} {r.get('loadavg_before', 0):.1f}-{r.get('loadavg_after', 0):.1f}"
                     for n, r in data["models"].items()) + ". On a shared machine a round in which "
                 "another process held a core shows as a p50 of milliseconds, mostly for contenders "
                 "that spread small work over threads; every round's p50 is in the .json.")
    lines.append("")
    lines.append("| machine | |")
    lines.append("|---|---|")
    for k in ("host", "cpu", "cpu_count", "gpu", "driver", "cuda", "torch", "onnx", "python", "aotrt_commit"):
        if k in m:
            lines.append(f"| {k} | {m[k]} |")
    lines.append("")
    lines.append("## Per-run latency (µs, p50; ratio = aotrt time / torch time, below 1.00x is faster)")
    lines.append("")
    head = ["model"] + contenders
    ratios = [("aotrt", "compile")]
    if device == "cuda":
        ratios = [("aotrt", "compile"), ("aotrt", "reduce-overhead"),
                  ("aotrt-graph", "compile"), ("aotrt-graph", "reduce-overhead")]
    else:
        ratios += [("aotrt", BASELINE), ("aotrt", "libtorch-aoti"), ("aotrt", "ort"), ("aotrt", "ort-tuned"),
                   (BASELINE, "ort")]
    ratios = [(a, b) for a, b in ratios if a in contenders and b in contenders]
    head += [f"{a} / {b}" for a, b in ratios]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for name, res in data["models"].items():
        cs = res["contenders"]
        cells = [name] + [_us(cs.get(c)) if c not in res["errors"] else "failed" for c in contenders]
        cells += [_fmt_ratio(_ratio(cs.get(a), cs.get(b))) for a, b in ratios]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")

    if device == "cuda":
        lines.append("## Peak device memory (MiB)")
        lines.append("")
        lines.append("torch: max_memory_allocated() over warm-up and timed runs (weights, inputs, activations, "
                     "CUDA graph pools); aotrt: its allocator's peak plus the model's constants.")
        lines.append("")
        lines.append("| model | " + " | ".join(contenders) + " |")
        lines.append("|---|" + "---|" * len(contenders))
        for name, res in data["models"].items():
            cs = res["contenders"]
            lines.append("| " + " | ".join([name] + [_mib(cs.get(c, {}).get("peak_device_bytes")) for c in contenders]) + " |")
        lines.append("")
        lines.append("## aotrt details")
        lines.append("")
        lines.append("| model | contender | enqueue p50 µs (run() returning) | pipelined runs/s | cudaMalloc in timed loop | startup s |")
        lines.append("|---|---|---|---|---|---|")
        for name, res in data["models"].items():
            for c in ("aotrt", "aotrt-graph"):
                x = res["contenders"].get(c)
                if x:
                    lines.append(f"| {name} | {c} | {x.get('enqueue_p50_us', 0):.1f} | "
                                 f"{x.get('pipelined_runs_per_s', 0):.0f} | {x.get('steady_state_cuda_mallocs', '-')} | "
                                 f"{x.get('startup_s', 0):.3f} |")
        lines.append("")
    if device == "cpu" and any(c in contenders for c in ORT_CONTENDERS):
        lines += render_ort(data)
    if device == "cpu" and "libtorch-aoti" in contenders:
        lines.append("## aotrt against libtorch's own loader (torch._inductor.aoti_load_package)")
        lines.append("")
        lines.append("The same model exported twice with the same options (`cpp.vec_isa_ok=True`: the same "
                     "kernels), once with `aot_inductor.link_libtorch=False` for aotrt and once with libtorch "
                     "linked for libtorch's loader. Each measured in a fresh process: aotrt as `aotrt bench`, "
                     "libtorch as a Python process that imports torch and calls the loader's C++ runner "
                     "(`loader.run`, no pytree wrapper). Both run the model's own input checks "
                     "(AOTI_RUNTIME_CHECK_INPUTS=1, aotrt's default). Startup = process start to first output; peak RSS = "
                     f"VmHWM. Targets (aotrt / libtorch): per-run <= {CPU_TARGETS['per_run']}x, startup <= "
                     f"{CPU_TARGETS['startup']}x, peak RSS <= {CPU_TARGETS['peak_rss']}x.")
        lines.append("")
        lines.append("| model | per-run µs aotrt / libtorch | ratio | startup s aotrt / libtorch | ratio | "
                     "peak RSS MiB aotrt / libtorch | ratio | targets |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for name, res in data["models"].items():
            a, t = res["contenders"].get("aotrt"), res["contenders"].get("libtorch-aoti")
            rr = _ratio(a, t)
            rs = _ratio(a, t, "startup_s")
            rm = _ratio(a, t, "peak_host_bytes")
            ok = [x is not None and x <= lim for x, lim in
                  ((rr, CPU_TARGETS["per_run"]), (rs, CPU_TARGETS["startup"]), (rm, CPU_TARGETS["peak_rss"]))]
            verdict = "all met" if all(ok) else "MISSED: " + ", ".join(
                k for k, good in zip(("per-run", "startup", "RSS"), ok) if not good)
            lines.append(
                f"| {name} | {_us(a)} / {_us(t)} | {_fmt_ratio(rr)} | "
                f"{a['startup_s']:.3f} / {t['startup_s']:.3f} | {_fmt_ratio(rs)} | "
                f"{_mib(a['peak_host_bytes'])} / {_mib(t['peak_host_bytes'])} | {_fmt_ratio(rm)} | {verdict} |"
                if a and t else f"| {name} | - | - | - | - | - | - | not measured |")
        lines.append("")
        lines.append("libtorch startup splits into `import torch` and the loader: " + "; ".join(
            f"{n} {r['contenders']['libtorch-aoti'].get('import_s', 0):.2f} s + "
            f"{r['contenders']['libtorch-aoti'].get('load_s', 0):.3f} s"
            for n, r in data["models"].items() if "libtorch-aoti" in r["contenders"]) + ".")
        lines.append("")
    errors = [(n, c, e) for n, r in data["models"].items() for c, e in r["errors"].items()]
    if errors:
        lines.append("## Failures")
        lines.append("")
        for n, c, e in errors:
            lines.append(f"- **{n}** / {c}: {e}")
        lines.append("")
    compile_rows = [(n, r.get("compile_s", {})) for n, r in data["models"].items()]
    lines.append("First call (compile) seconds: " + "; ".join(
        f"{n}: " + ", ".join(f"{c} {s}" for c, s in cs.items()) for n, cs in compile_rows) + ".")
    lines.append("")
    lines.append("Per-round p50s and everything else: the .json beside this file.")
    return "\n".join(lines) + "\n"


def _diff(x: Any) -> str:
    if x is None:
        return "-"
    return f"{x:.1e}" if isinstance(x, float) else f"error: {x}"


def render_ort(data: dict[str, Any]) -> list[str]:
    """The ONNX Runtime section: aotrt against ORT's default and tuned sessions."""
    ort_cs = [c for c in ORT_CONTENDERS if c in data["contenders"]]
    side = ["aotrt"] + ([BASELINE] if BASELINE in data["contenders"] else []) + ort_cs
    names = " / ".join(side)
    opts = next((r.get("ort_options") for r in data["models"].values() if r.get("ort_options")), {}) or {}
    lines = ["## aotrt against ONNX Runtime (CPU execution provider)", ""]
    exported = {json.dumps(e.get("options"), sort_keys=True) for e in (data.get("aotrt_export") or {}).values()}
    how = ("`link_libtorch=False`, " + ", ".join(f"`{k}={v}`" for k, v in json.loads(next(iter(exported))).items())
           if len(exported) == 1 else "`link_libtorch=False`, `cpp.vec_isa_ok=True`; per model in the .json")
    lines.append(
        "The same zoo model exported twice by torch from the same weights: to a `.pt2` by AOTInductor "
        f"through aotrt_tools.export ({how}) for aotrt, and to ONNX by `torch.onnx.export(..., "
        "dynamo=True)` for ONNX Runtime"
        + (f" (onnx {data['machine']['onnx']['onnx']}, onnxscript {data['machine']['onnx']['onnxscript']}, "
           f"onnxruntime {data['machine']['onnx']['onnxruntime']})" if data["machine"].get("onnx") else "")
        + ". Same input files. Each measured in a fresh process: aotrt as `aotrt bench`, ORT as a Python "
        "process that imports numpy and onnxruntime (not torch), makes an InferenceSession and runs it. "
        "Startup = process start to first output (ORT's: interpreter, `import onnxruntime`, session, first run); "
        "peak RSS = VmHWM. Max abs diff: the first output of each against eager PyTorch on the same inputs.")
    lines.append("")
    for c in ort_cs:
        o = opts.get(c) if isinstance(opts, dict) else None
        if o:
            lines.append(f"- `{c}`: " + ", ".join(f"{k}={v}" for k, v in o.items()))
    if data.get("baseline"):
        b = data["baseline"]
        lines.append(f"- `{BASELINE}`: `{b['aotrt']}` ({b.get('commit', 'commit unknown')}) on packages exported "
                     "with " + (", ".join(f"`{k}={v}`" for k, v in b["export_options"].items()) or "the same options")
                     + ", measured in the same rounds (the aotrt / best ORT ratio and the target are aotrt's)")
    lines.append("")
    lines.append("Per-run is the median over rounds of each round's p50; on a loaded machine a round "
                 "that shared its cores is slower for everyone, so the fastest round's p50 (the least "
                 "disturbed one) is shown too, with its own ratio. The target is judged on the medians.")
    lines.append("")
    lines.append(f"| model | per-run µs {names} | aotrt / best ORT | fastest round µs {names} | ratio | "
                 f"startup s {names} | peak RSS MiB {names} | max abs diff vs eager {names} | target aotrt <= ORT |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for name, res in data["models"].items():
        cs = res["contenders"]
        best = min((cs[c] for c in ort_cs if c in cs), key=lambda x: x["p50_us"], default=None)
        r = _ratio(cs.get("aotrt"), best)
        def cell(c: str, key: str, fmt) -> str:
            if c in res["errors"]:
                return "failed"
            x = cs.get(c, {}).get(key)
            return fmt(x) if x is not None else "-"
        per_run = " / ".join(cell(c, "p50_us", lambda x: f"{x:.1f}") for c in side)
        fastest = {c: min(cs[c]["p50_us_per_round"]) for c in side if c in cs and cs[c].get("p50_us_per_round")}
        fast = " / ".join(f"{fastest[c]:.1f}" if c in fastest else "-" for c in side)
        best_fast = min((fastest[c] for c in ort_cs if c in fastest), default=None)
        fast_ratio = _fmt_ratio(fastest["aotrt"] / best_fast if "aotrt" in fastest and best_fast else None)
        startup = " / ".join(cell(c, "startup_s", lambda x: f"{x:.3f}") for c in side)
        rss = " / ".join(cell(c, "peak_host_bytes", _mib) for c in side)
        diffs = " / ".join(_diff(res.get("max_abs_diff", {}).get(c)) for c in side)
        if r is None:
            verdict = "not measured"
        else:
            rs = _ratio(cs.get("aotrt"), best, "startup_s")
            rm = _ratio(cs.get("aotrt"), best, "peak_host_bytes")
            missed = [k for k, x in (("per-run", r), ("startup", rs), ("RSS", rm)) if x is not None and x > 1.0]
            verdict = "met" if not missed else "MISSED: " + ", ".join(missed)
        lines.append(f"| {name} | {per_run} | {_fmt_ratio(r)} | {fast} | {fast_ratio} | {startup} | {rss} | "
                     f"{diffs} | {verdict} |")
    lines.append("")
    lines.append("ORT startup splits into the interpreter with `import onnxruntime`, the session and the first run: " + "; ".join(
        f"{n} {c} {x.get('import_s', 0):.2f} + {x.get('load_s', 0):.3f} + {x.get('first_run_s', 0):.3f} s"
        for n, r in data["models"].items() for c, x in r["contenders"].items() if c in ORT_CONTENDERS) + ".")
    lines.append("")
    profiles = data.get("profiles", {})
    if profiles:
        lines.append("### Where aotrt is slower than ORT: `aotrt bench PKG --profile`")
        lines.append("")
        for name, text in profiles.items():
            lines.append(f"**{name}**" + (f": {data.get('profile_notes', {}).get(name)}"
                                          if data.get("profile_notes", {}).get(name) else ""))
            lines.append("")
            lines.append("```")
            lines += text.rstrip().splitlines()
            lines.append("```")
            lines.append("")
    return lines


def profile_slower(aotrt: Path, data: dict[str, Any], infos: dict[str, dict[str, Any]], iters: int) -> None:
    """`aotrt bench --profile` on every model where aotrt's per-run time is above ORT's best."""
    for name, res in data["models"].items():
        cs = res["contenders"]
        best = min((cs[c]["p50_us"] for c in ORT_CONTENDERS if c in cs), default=None)
        if best is None or "aotrt" not in cs or cs["aotrt"]["p50_us"] <= best:
            continue
        info = infos[name]
        cmd = [str(aotrt), "bench", info["package"], "--profile", "--iters", str(iters)]
        for f in info["input_files"]:
            cmd += ["--input", f]
        log(f"{name}: aotrt is slower than ORT: profiling")
        res_p = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        text = res_p.stdout if res_p.returncode == 0 else f"aotrt bench --profile failed: {res_p.stderr[-600:]}"
        data.setdefault("profiles", {})[name] = text.replace(str(REPO) + "/", "")


def render_chart(data: dict[str, Any], path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no chart"
    contenders = data["contenders"]
    models = list(data["models"])
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(models) + 2), 4.5))
    width = 0.8 / len(contenders)
    for i, c in enumerate(contenders):
        ys = []
        for n in models:
            cs = data["models"][n]["contenders"]
            r = _ratio(cs.get(c), cs.get("compile"))
            ys.append(r if r is not None else float("nan"))
        ax.bar([k + i * width for k in range(len(models))], ys, width, label=c)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")  # a stalled round (a loaded machine) would flatten every other bar
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(models))])
    ax.set_xticklabels(models, rotation=20, ha="right")
    ax.set_ylabel("per-run latency / torch.compile (lower is faster)")
    ax.set_title(f"aotrt vs PyTorch, {data['device']}, {data['machine'].get('gpu') or data['machine'].get('cpu', '')}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


# --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child-libtorch"]:
        child_libtorch(argv[1])
        return 0
    if argv[:1] == ["--child-ort"]:
        child_ort(argv[1])
        return 0
    if argv[:1] == ["--child-onnx-export"]:
        child_onnx_export(argv[1])
        return 0
    if argv[:1] == ["--render"]:  # re-draw the .md and .png of a results .json
        path = Path(argv[1])
        data = json.loads(path.read_text())
        md = render_markdown(data)
        note = render_chart(data, path.with_suffix(".png"))
        md += f"\n({note})\n" if note else f"\n![per-run latency relative to torch.compile]({path.stem}.png)\n"
        path.with_suffix(".md").write_text(md)
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cuda", "cpu"), required=True)
    p.add_argument("--models", help="comma-separated zoo names (default: the device's set)")
    p.add_argument("--contenders", help="comma-separated subset of " + ", ".join(sorted({*CONTENDERS['cuda'], *CONTENDERS['cpu'], BASELINE})))
    p.add_argument("--rounds", type=int, help="rounds (default: cpu 5, cuda 3)")
    p.add_argument("--iters", type=int, help="timed iterations per round (default: cpu 200, cuda 100)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--aotrt", default=str(REPO / "build" / "aotrt"), help="the aotrt CLI (default build/aotrt)")
    p.add_argument("--export-dir", help="package cache (default build-bench/<device>)")
    p.add_argument("--out", default=str(REPO / "bench" / "results"), help="where the .md/.json/.png go")
    p.add_argument("--tag", help="file stem (default <device>-<date>)")
    p.add_argument("--warm-only", action="store_true",
                   help="only compile the models with torch.compile (filling inductor's caches) and stop")
    p.add_argument("--export-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an inductor option added to aotrt's package exports (repeatable; true/false "
                        "and integers are parsed), e.g. layout_optimization=false; use its own "
                        "--export-dir, since the cached packages are redone when options change")
    p.add_argument("--baseline", metavar="AOTRT",
                   help=f"another aotrt CLI, measured as the '{BASELINE}' contender on its own exports")
    p.add_argument("--baseline-export-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an inductor option for the baseline's exports (repeatable), e.g. freezing=false")
    p.add_argument("--baseline-export-dir", help="the baseline's package cache (default <export dir>-baseline)")
    p.add_argument("--baseline-label", help="what the baseline CLI is (e.g. a commit), for the table")
    p.add_argument("--threads", type=int,
                   help="CPU threads for every contender (torch.set_num_threads here, OMP_NUM_THREADS "
                        "for the subprocesses); default: each library's own default")
    args = p.parse_args(argv)

    device = args.device
    models = args.models.split(",") if args.models else DEFAULT_MODELS[device]
    contenders = args.contenders.split(",") if args.contenders else CONTENDERS[device]
    rounds = args.rounds or (5 if device == "cpu" else 3)
    iters = args.iters or (200 if device == "cpu" else 100)
    aotrt = Path(args.aotrt)
    ensure_torchvision(models)
    if args.warm_only:
        for name in models:
            warm_caches(name, device)
        return 0
    if BASELINE in contenders and not (args.baseline and os.access(args.baseline, os.X_OK)):
        print(f"compare: the {BASELINE} contender needs --baseline pointing at an aotrt CLI", file=sys.stderr)
        return 2
    if any(c.startswith("aotrt") for c in contenders) and not os.access(aotrt, os.X_OK):
        print(f"compare: no aotrt CLI at {aotrt}: build it (scripts/build.sh, or scripts/gpu_e2e.sh on the "
              "GPU machine) or pass --aotrt", file=sys.stderr)
        return 2
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if device == "cuda" and not torch.cuda.is_available():
        print("compare: torch sees no CUDA device", file=sys.stderr)
        return 2
    export_dir = Path(args.export_dir) if args.export_dir else REPO / "build-bench" / device
    t0 = time.perf_counter()
    def parse_options(items: list[str], flag: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for item in items:
            key, sep, value = item.partition("=")
            if not sep:
                p.error(f"{flag} wants KEY=VALUE, got {item!r}")
            low = value.lower()
            out[key] = True if low == "true" else False if low == "false" else (
                int(value) if value.lstrip("-").isdigit() else value)
        return out

    extra = parse_options(args.export_option, "--export-option")
    infos = export_models(models, device, export_dir, contenders, extra)
    base_infos: dict[str, dict[str, Any]] = {}
    base_extra = parse_options(args.baseline_export_option, "--baseline-export-option")
    if BASELINE in contenders:
        base_dir = Path(args.baseline_export_dir) if args.baseline_export_dir else export_dir.with_name(
            export_dir.name + "-baseline")
        base_infos = export_models(models, device, base_dir, ["aotrt"], base_extra)
    data: dict[str, Any] = {
        "device": device, "date": datetime.date.today().isoformat(), "rounds": rounds, "iters": iters,
        "warmup": args.warmup, "contenders": contenders, "machine": machine_info(device, aotrt),
        "command": "python3 bench/compare.py " + " ".join(argv), "export_s": round(time.perf_counter() - t0, 1),
        "threads": args.threads or f"default (torch {torch.get_num_threads()})",
        "models": {},
    }
    # The inductor options aotrt's packages were exported with (Note [CPU inference default]
    # in aotrt_tools/export.py: freezing=True on the CPU unless an --export-option says otherwise).
    shown = ("freezing", "cpp.weight_prepack", "layout_optimization", "cpp.vec_isa_ok")
    data["aotrt_export"] = {name: {"options": {k: v for k, v in (info.get("options") or {}).items() if k in shown},
                                   "cpu_inference": info.get("cpu_inference")}
                            for name, info in infos.items()}
    if BASELINE in contenders:
        data["baseline"] = {"aotrt": args.baseline, "commit": args.baseline_label or "unlabelled",
                            "export_options": base_extra}
    for name in models:
        baseline = (Path(args.baseline), base_infos[name]) if BASELINE in contenders else None
        data["models"][name] = compare_model(name, infos[name], device, contenders, aotrt, rounds,
                                             args.warmup, iters, args.threads, baseline)
        if "onnx_versions" in infos[name]:
            data["machine"]["onnx"] = infos[name]["onnx_versions"]
    if device == "cpu" and "aotrt" in contenders and any(c in contenders for c in ORT_CONTENDERS):
        profile_slower(aotrt, data, infos, iters)
    data["total_s"] = round(time.perf_counter() - t0, 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = args.tag or f"{device}-{data['date']}"
    (out / f"{stem}.json").write_text(json.dumps(data, indent=1, default=str))
    md = render_markdown(data)
    chart_note = render_chart(data, out / f"{stem}.png")
    if chart_note:
        md += f"\n({chart_note})\n"
    else:
        md += f"\n![per-run latency relative to torch.compile]({stem}.png)\n"
    (out / f"{stem}.md").write_text(md)
    print(md)
    log(f"wrote {out / stem}.md/.json/.png in {data['total_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
