"""Export a PyTorch module to an AOTInductor `.pt2` package that aotrt can load.

aotrt runs the compiled model `.so` with no libtorch in the process, so the package is built
with the options below (see `AOTRT_INDUCTOR_OPTIONS`): the `.so` links no libtorch and imports
`aoti_torch_*` C shims (which aotrt defines; CPU kernels also import OpenMP and, when
vectorized, Sleef: see Note [CPU vectorization and Sleef]), kernels are linked into the `.so`, and the
weights sit beside it as one raw `.wrapper_weights.blob` that aotrt hands to
`AOTInductorModelUpdateConstantsFromBlob`.

Python API:
    info = export_package(module, example_inputs, "out/model.pt2")

CLI (writes DIR/NAME.pt2, DIR/NAME.input_K.npy, DIR/NAME.expected_K.npy, DIR/NAME.json):
    PYTHONPATH=python python3 -m aotrt_tools.export --model linear_bias --device cpu --out DIR
    PYTHONPATH=python python3 -m aotrt_tools.export --model all --jobs 2 --out DIR
    PYTHONPATH=python python3 -m aotrt_tools.export --factory mypkg.models:build --out DIR
    PYTHONPATH=python python3 -m aotrt_tools.export --model resnet_basic_block --dynamic-batch 8 --out DIR

`.npy` files are dense C-order arrays of the logical shape, whatever the strides of the
example input (pointwise_c2f's input is channels-last). The strides the model was compiled
for are recorded in the package metadata under "aotrt.inputs" (see `_tensor_specs`): the
compiled code indexes inputs with those strides and does not check them unless
AOTI_RUNTIME_CHECK_INPUTS=1, so a runtime must lay each input out accordingly.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import importlib
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path
from typing import Any, Iterable, Sequence

import torch

# torch 2.13's own export/AOTI code trips its pytree deprecation warning; it is noise here.
warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\).*", category=FutureWarning)

# Note [aotrt inductor options]
# Each option is in torch 2.13's torch/_inductor/config.py (read, not assumed). torch 2.11
# built packages with the four aot_inductor ones for shared/reference/measured-on-h200.md;
# link_libtorch is the newest (PR #162655, Sep 2025, first named `use_libtorch`), so older
# wheels are where one goes missing. Options this torch lacks are dropped with a warning
# rather than failing inside config.patch; `missing_options` in the result names them, and
# such a package may not load without libtorch.
AOTRT_INDUCTOR_OPTIONS: dict[str, Any] = {
    # No -ltorch: the .so's aoti_torch_* imports stay undefined for aotrt to provide.
    "aot_inductor.link_libtorch": False,
    # Kernel binaries (cubins on CUDA) linked into the .so instead of separate files.
    "aot_inductor.embed_kernel_binary": True,
    # Weights out of the .so ...
    "aot_inductor.package_constants_in_so": False,
    # ... and into one raw blob beside it: <hash>.wrapper_weights.blob.
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
    # Vectorized CPU kernels whatever the inductor cache holds: Note [CPU vectorization and Sleef].
    "cpp.vec_isa_ok": True,
}

# Note [CPU inference default]
# On the CPU, packages are exported with freezing=True unless the caller (or a zoo entry)
# sets `freezing` itself: inductor's inference path folds batch norms into convolutions and,
# with cpp.weight_prepack (on by default), turns every convolution and linear into one of
# torch's fused oneDNN ops on prepacked constants (Note [Frozen CPU packages] in
# src/runtime/preflight.cpp), which aotrt runs as one oneDNN primitive with its post-ops on
# weights reordered once (Note [Fused convolutions] in src/cpu/conv.cpp). Measured with
# bench/compare.py on this project's 2-core machine (bench/results/cpu-ort-2026-12-03.md):
# resnet18 14.1 -> 8.6 ms, resnet50_b1 29.9 -> 21.6 ms, mobilenet_v3_small 2.0 -> 0.77 ms.
# What it costs: a frozen package's weights are folded constants, so it cannot take new
# weights by their original names (Model::swap_weights, `aotrt run --weights`,
# package_constants_in_so=False for external weights): export such a model with
# freezing=False. A module without parameters compiles the same either way. export_package
# records the choice (`cpu_inference`) and the CLI prints it.
CPU_INFERENCE_OPTIONS: dict[str, Any] = {"freezing": True}

# Note [CPU vectorization and Sleef]
# Vectorized CPU kernels (at::vec) call Sleef for exp/log/tanh/pow/sin/... (SiLU imports
# Sleef_expf16_u10 with AVX-512, Sleef_expf8_u10 with AVX2); in a torch process libtorch_cpu
# exports them. aotrt must therefore provide Sleef_* globally (by linking Debian's libsleef3,
# 3.5.1), because which kernels a package gets under inductor's default settings depends on
# state outside this code: cpp.vec_isa_ok=None makes inductor compile a probe .so that
# calls Sleef_expf*_u10 and dlopen it. With link_libtorch=False the probe links no libtorch,
# its Sleef import is unresolved, the dlopen fails and inductor silently emits scalar code;
# but the probe .so is cached in the inductor cache under a key that ignores link flags, so
# after any ordinary torch.compile on the machine the cached probe (linked with libtorch)
# loads and the package imports Sleef_*. Measured with torch 2.13: a fresh cache gives scalar
# kernels for the whole CPU zoo; cpp.vec_isa_ok=True gives pointwise_c2f Sleef_expf16_u10. All
# 176 x86 Sleef_* names in torch 2.13's ATen/cpu/vec headers are exported by libsleef.so.3.
# So aotrt's options set cpp.vec_isa_ok=True: inductor then skips the probe and vectorizes for
# the exporting machine's best ISA (its cpuinfo), as a libtorch-linked export would (the
# package runs only on CPUs with that ISA, as any inductor CPU package). The 4-conv CNN of
# issue 13 spent 1.1 ms of a 3.0 ms run in scalar generated code and 0.3 ms vectorized. A user
# of torch's own flow sets the same option (README). export_package says what the package
# got: `cpu_kernels` is "vectorized", "scalar" or "none" (every op a fallback).
# Inductor also remembers the probe's answer for the rest of the process, whatever
# cpp.vec_isa_ok says later; export_package forgets it first (forget_vec_isa_probes).
# The zoo's *_vec and sleef_pointwise entries, exported with these options alone, check that
# their kernels are vectorized (not every kernel can be: searchsorted's stays scalar, so
# `cpu_kernels` is a report, not a promise); extra_options (CLI --option
# cpp.vec_isa_ok=false) asks for scalar kernels.

# Note [Which CPU kernels a package has]
# What the export options decide is the vector ISA inductor generates the kernels for, and
# torch records it: AOTI_CPU_ISA in <h>.wrapper_metadata.json is str(pick_vec_isa()) at compile
# time, "AVX2", "AVX512", ... or "INVALID_VEC_ISA" when the probe failed (the scalar packages
# of Note [CPU vectorization and Sleef]). `cpu_kernels` reads that key: "scalar" means "no
# vector ISA" (cpp.vec_isa_ok=True fixes it), not "no at::vec in the source". The source is the
# wrong witness: a kernel too small for the ISA's vectors is scalar under any option. The demo's
# linear_chunk_cat_last_dim fills 5-element buffers; with AVX2 (8 floats) inductor vectorizes
# them with a masked store, with AVX-512 (16 floats) it emits the loop and only its scalar tail
# (`x0_tail`), so the old check (no "at::vec::Vectorized" in the source) warned on every AVX-512
# machine about a package exported with cpp.vec_isa_ok=True (tests/e2e/test_export_advice.py
# exports it for AVX-512 here). A package with no cpp_fused_ kernel is "none"; a torch
# that does not record the key falls back to the source. aotrt's own check (`aotrt info`, load)
# reads the same key: Note [CPU export advice] in src/runtime/preflight.cpp.
CPU_ISA_NONE = "INVALID_VEC_ISA"

# Symbols the dynamic loader resolves from the libraries the .so names in DT_NEEDED
# (libc, libstdc++, libgcc_s, ld.so): nm prints them with a version suffix.
_SYSTEM_VERSION_PREFIXES = ("GLIBC_", "GLIBCXX_", "CXXABI_", "GCC_")


def forget_vec_isa_probes() -> None:
    """Makes the next compile decide CPU vectorization from its own cpp.vec_isa_ok.

    Inductor probes which vector ISAs work once per process and caches the answer in
    functools caches that ignore cpp.vec_isa_ok (VecAVX512.__bool__, valid_vec_isa_list).
    In a process that exports several models, the first one's setting would decide for all:
    after a default export (probe fails without libtorch), a later cpp.vec_isa_ok=True export
    came out scalar. Clearing those caches costs one re-probe (a cached .so and a dlopen).
    The zoo's vectorized entries carry a wrapper check that catches it if this stops working.
    """
    try:
        from torch._inductor import cpu_vec_isa as isa
    except ImportError:
        return
    caches = [getattr(isa, "valid_vec_isa_list", None)]
    for cls in vars(isa).values():
        if isinstance(cls, type) and issubclass(cls, isa.VecISA):
            caches += [cls.__dict__.get("__bool__"), cls.__dict__.get("_VecISA__bool__impl")]
    for fn in caches:
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()


def _config_has(dotted: str) -> bool:
    """True if torch._inductor.config has the (possibly nested) option `dotted`."""
    from torch._inductor import config

    obj: Any = config
    parts = dotted.split(".")
    for part in parts[:-1]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return hasattr(obj, parts[-1])


def resolve_options(extra_options: dict[str, Any] | None = None,
                    device: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """aotrt's options merged with `extra_options` (which win), minus those this torch lacks.

    For a CPU export (`device` "cpu") the defaults include CPU_INFERENCE_OPTIONS (Note [CPU
    inference default]). Returns (options to pass to inductor, names of the options that were
    dropped).
    """
    wanted = dict(AOTRT_INDUCTOR_OPTIONS)
    if device is not None and torch.device(device).type == "cpu":
        wanted.update(CPU_INFERENCE_OPTIONS)
    wanted.update(extra_options or {})
    applied, missing = {}, []
    for key, value in wanted.items():
        if _config_has(key):
            applied[key] = value
        else:
            missing.append(key)
    return applied, missing


# --------------------------------------------------------------------------------------
# Package inspection
# --------------------------------------------------------------------------------------


def package_files(pt2_path: str | os.PathLike) -> list[tuple[str, int]]:
    """(member name, uncompressed size) for every entry of the .pt2 zip."""
    with zipfile.ZipFile(pt2_path) as zf:
        return [(i.filename, i.file_size) for i in zf.infolist()]


def _member(files: Iterable[str], suffix: str) -> str | None:
    hits = [f for f in files if f.endswith(suffix) and "data/aotinductor/" in f]
    return hits[0] if hits else None


def nm_symbols(so_path: str | os.PathLike, undefined: bool) -> list[tuple[str, str, str | None]]:
    """Dynamic symbols of `so_path` via `nm -D`: (name, nm type letter, version or None)."""
    flag = "--undefined-only" if undefined else "--defined-only"
    out = subprocess.run(
        ["nm", "-D", flag, str(so_path)], check=True, capture_output=True, text=True
    ).stdout
    symbols = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        kind, full = fields[-2], fields[-1]
        name, _, version = full.partition("@")
        symbols.append((name, kind, version.lstrip("@") or None))
    return symbols


def classify_undefined(symbols: Sequence[tuple[str, str, str | None]]) -> dict[str, list[str]]:
    """Splits undefined symbols by who must provide them.

    shim: aoti_torch_* (aotrt); openmp: GOMP_*/omp_* (libgomp); sleef: Sleef_* (vectorized
    math, normally from libtorch_cpu); system: versioned libc/libstdc++/libgcc symbols and
    weak references, resolved through DT_NEEDED; other: anything else (a surprise).
    """
    groups: dict[str, list[str]] = {"shim": [], "openmp": [], "sleef": [], "system": [], "other": []}
    for name, kind, version in symbols:
        if name.startswith("aoti_torch_") or name.startswith("aoti_"):
            groups["shim"].append(name)
        elif name.startswith(("GOMP_", "omp_")):
            groups["openmp"].append(name)
        elif name.startswith("Sleef_"):
            groups["sleef"].append(name)
        elif kind in ("w", "v") or (version and version.startswith(_SYSTEM_VERSION_PREFIXES)):
            groups["system"].append(name + (f"@{version}" if version else ""))
        else:
            groups["other"].append(name + (f"@{version}" if version else ""))
    return {k: sorted(set(v)) for k, v in groups.items()}


def needed_libraries(so_path: str | os.PathLike) -> list[str]:
    """DT_NEEDED entries of `so_path` (via readelf -d)."""
    out = subprocess.run(
        ["readelf", "-d", str(so_path)], check=True, capture_output=True, text=True
    ).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


@contextlib.contextmanager
def extracted(pt2_path: str | os.PathLike, member: str):
    """Extracts one zip member into a temporary directory; yields its path."""
    with tempfile.TemporaryDirectory(prefix="aotrt_pt2_") as tmp:
        with zipfile.ZipFile(pt2_path) as zf:
            yield Path(zf.extract(member, tmp))


def package_imports(pt2_path: str | os.PathLike) -> set[str]:
    """The aoti_* functions the package's model .so imports (nm -D --undefined-only)."""
    with zipfile.ZipFile(pt2_path) as zf:
        so = next(n for n in zf.namelist() if n.endswith(".so"))
    with extracted(pt2_path, so) as path:
        return {name for name, _, _ in nm_symbols(path, undefined=True) if name.startswith("aoti_")}


def read_member(pt2_path: str | os.PathLike, suffix: str) -> str | None:
    """Text of the first package member under data/aotinductor/ ending with `suffix`."""
    with zipfile.ZipFile(pt2_path) as zf:
        name = _member(zf.namelist(), suffix)
        return zf.read(name).decode() if name else None


def wrapper_lines(pt2_path: str | os.PathLike, pattern: str = r"aoti_torch_cpu_|aoti_torch_cuda_|_reinterpret_tensor|create_tensor_from_blob") -> list[str]:
    """Lines of the generated <hash>.wrapper.cpp matching `pattern`, for reading how fallback
    ops are called and how views are made. Declarations in the pasted runtime headers are
    kept too; callers filter further if they need to."""
    text = read_member(pt2_path, ".wrapper.cpp") or ""
    rx = re.compile(pattern)
    return [f"{i + 1}: {line.strip()}" for i, line in enumerate(text.splitlines()) if rx.search(line)]


def inspect_package(pt2_path: str | os.PathLike) -> dict[str, Any]:
    """What a runtime needs to know about a package: its files, the .so's imports/exports."""
    files = package_files(pt2_path)
    names = [f for f, _ in files]
    so = _member(names, ".wrapper.so") or _member(names, ".so")
    info: dict[str, Any] = {
        "files": files,
        "so": so,
        "weights_blob": _member(names, "_weights.blob"),
        "metadata": json.loads(read_member(pt2_path, ".wrapper_metadata.json") or "{}"),
    }
    if so is None:
        info["error"] = "no .so in the package (package_cpp_only?)"
        return info
    with extracted(pt2_path, so) as so_path:
        undefined = nm_symbols(so_path, undefined=True)
        defined = nm_symbols(so_path, undefined=False)
        info["needed"] = needed_libraries(so_path)
    info["undefined"] = classify_undefined(undefined)
    # The C API a runtime dlsym()s; the rest are C++ symbols and kernels.
    info["exported_api"] = sorted(n for n, _, _ in defined if n.startswith("AOTInductor"))
    return info


# --------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------


def _to_device_dtype(module: torch.nn.Module, inputs: Sequence[Any], device: str, dtype: torch.dtype | None):
    """Moves module and tensor inputs to `device`; casts floating point ones to `dtype`.

    Memory format is preserved (Tensor.to keeps strides of dense tensors), which matters for
    channels-last models.
    """
    module = module.to(device=device)
    if dtype is not None:
        module = module.to(dtype=dtype)

    def conv(t):
        if not isinstance(t, torch.Tensor):
            return t
        t = t.to(device=device)
        return t.to(dtype=dtype) if dtype is not None and t.is_floating_point() else t

    return module, tuple(conv(t) for t in inputs)


def _tensor_specs(tensors: Iterable[Any], dynamic_dims: Sequence[list] | None = None) -> list[dict[str, Any]]:
    """dtype, sizes, strides and offset of each tensor, and its entry of `dynamic_dims` (the
    dims that take other sizes, see `_dynamic_dims`) when it has one."""
    specs = []
    for k, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            specs.append(dict(python_type=type(t).__name__))
            continue
        spec = dict(dtype=str(t.dtype).removeprefix("torch."), sizes=list(t.shape),
                    strides=list(t.stride()), storage_offset=t.storage_offset())
        if dynamic_dims and dynamic_dims[k]:
            spec["dynamic_dims"] = dynamic_dims[k]
        specs.append(spec)
    return specs


# Note [Dynamic batch export]
# With dynamic_batch=N every tensor input is exported with dim 0 as one torch.export Dim
# "batch" in [2, N], so the compiled model takes any batch from 2 to N (what a serving engine
# that batches requests along dim 0 needs; it pads a single row to two). Not from 1: torch
# specialises a dim whose example size is 0 or 1, and inductor assumes a backed size is at
# least 2, which the compiled model's own input checks then enforce (`arg_size[0] < 2` is
# refused) whatever lower bound the Dim asks for (backed_size_oblivious keeps 1 for a Linear
# but not for the convolutions of resnet_basic_block, torch 2.13). So the range is declared
# as the compiled code will check it, and an example of batch 1 is repeated to batch 2
# (keeping its memory format). The package metadata lists each dynamic dim with the range
# the exported program records ("dynamic_dims" in "aotrt.inputs" and "aotrt.outputs"); aotrt
# takes other sizes there, laid out densely in the exported dim order (Model::prepare_input).
def _batch_of_two(t: Any) -> Any:
    if not isinstance(t, torch.Tensor) or t.dim() == 0 or t.shape[0] != 1:
        return t
    fmt = torch.channels_last if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last) \
        and not t.is_contiguous() else torch.contiguous_format
    return torch.cat([t, t], 0).contiguous(memory_format=fmt)


def _dynamic_dims(val: Any, ep: Any) -> list[dict[str, int]]:
    """The symbolic dims of a FakeTensor of `ep`, each with the range `ep` records for it
    (min/max only for a dim that is one symbol, e.g. the batch)."""
    dims = []
    for d, size in enumerate(getattr(val, "shape", ())):
        if isinstance(size, int):
            continue
        entry: dict[str, int] = dict(dim=d)
        r = ep.range_constraints.get(size.node.expr)
        if r is not None:
            entry["min"] = int(r.lower)
            if r.upper.is_finite:
                entry["max"] = int(r.upper)
        dims.append(entry)
    return dims


def _input_dynamic_dims(ep: Any) -> list[list[dict[str, int]]]:
    """Per user input of `ep`, in order, its dynamic dims."""
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    return [_dynamic_dims(nodes[name].meta.get("val"), ep) for name in ep.graph_signature.user_inputs]


def _output_specs(ep: Any) -> list[dict[str, Any]]:
    """dtype and sizes of each output of an exported program (FakeTensor metadata), with its
    dynamic dims (their size in "sizes" is the example's)."""
    def hint(size: Any) -> int:
        if isinstance(size, int):
            return size
        node = size.node
        if node.hint is not None:
            return int(node.hint)
        try:
            return int(node.shape_env.size_hint(node.expr))
        except Exception:  # a data-dependent size (nonzero, masked_select): no example
            return 0       # value; the dim is listed in dynamic_dims all the same

    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    specs = []
    for value in torch.utils._pytree.tree_leaves(out_node.args[0]):
        val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor):
            specs.append(dict(python_type=type(val).__name__))
            continue
        spec = dict(dtype=str(val.dtype).removeprefix("torch."), sizes=[hint(s) for s in val.shape])
        dynamic = _dynamic_dims(val, ep)
        if dynamic:
            spec["dynamic_dims"] = dynamic
        specs.append(spec)
    return specs


def export_package(
    module: torch.nn.Module,
    example_inputs: Sequence[Any],
    path: str | os.PathLike,
    device: str = "cpu",
    dtype: torch.dtype | None = None,
    extra_options: dict[str, Any] | None = None,
    dynamic_batch: int | None = None,
) -> dict[str, Any]:
    """torch.export + aoti_compile_and_package with aotrt's options; returns what it did.

    The module is put in eval mode and traced under no_grad. The returned dict holds the
    options used (and those this torch lacks), timings, the package file listing, and the
    .so's undefined symbols grouped by who must provide them (see `inspect_package`).
    With `dynamic_batch=N`, dim 0 of every tensor input accepts any size from 2 to N
    (Note [Dynamic batch export]).
    """
    module, inputs = _to_device_dtype(module, example_inputs, device, dtype)
    module.eval()
    if dynamic_batch:
        inputs = tuple(_batch_of_two(t) for t in inputs)
    options, missing = resolve_options(extra_options, device)
    if missing:
        print(f"warning: torch {torch.__version__} lacks inductor options {missing}; "
              "the package may not be loadable without libtorch", file=sys.stderr)

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    forget_vec_isa_probes()
    with torch.no_grad():
        t0 = time.perf_counter()
        dynamic_shapes = None
        if dynamic_batch:
            batch = torch.export.Dim("batch", min=2, max=dynamic_batch)
            dynamic_shapes = tuple({0: batch} if isinstance(t, torch.Tensor) else None for t in inputs)
        ep = torch.export.export(module, tuple(inputs), dynamic_shapes=dynamic_shapes)
        t1 = time.perf_counter()
        input_dynamic = _input_dynamic_dims(ep)
        if len(input_dynamic) != len(inputs):  # a non-tensor input the graph does not take
            input_dynamic = None
        # Input layouts and output dtypes go into <hash>.wrapper_metadata.json (string values
        # only): the compiled code assumes the layouts, and a runtime has no other place to
        # read either from.
        if _config_has("aot_inductor.metadata"):
            metadata = dict(options.get("aot_inductor.metadata", {}))
            metadata["aotrt.inputs"] = json.dumps(_tensor_specs(inputs, input_dynamic))
            metadata["aotrt.outputs"] = json.dumps(_output_specs(ep))
            options["aot_inductor.metadata"] = metadata
        pkg = torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path), inductor_configs=dict(options)  # it adds keys
        )
        t2 = time.perf_counter()

    result: dict[str, Any] = {
        "package": str(pkg),
        "torch_version": torch.__version__,
        "device": device,
        "dtype": str(dtype).removeprefix("torch.") if dtype is not None else None,
        "options": options,
        "missing_options": missing,
        "export_s": round(t1 - t0, 2),
        "compile_s": round(t2 - t1, 2),
        "inputs": _tensor_specs(inputs, input_dynamic),
        "dynamic_batch": dynamic_batch,
    }
    result.update(inspect_package(pkg))
    if torch.device(device).type == "cpu":
        result["cpu_inference"] = cpu_inference(options)
        result["cpu_kernels"] = cpu_kernels(pkg)
        if result["cpu_kernels"] == "scalar":
            print(f"warning: {pkg}: the CPU kernels are scalar (inductor found no vector ISA): "
                  f"cpp.vec_isa_ok={options.get('cpp.vec_isa_ok')!r}; Note [CPU vectorization and Sleef]",
                  file=sys.stderr)
    return result


def cpu_inference(options: dict[str, Any]) -> str:
    """What a CPU export chose (Note [CPU inference default]), in words."""
    if not options.get("freezing"):
        return "freezing=False: weights stay named parameters (swappable), batch norms unfolded"
    if options.get("cpp.weight_prepack", True):
        return "freezing=True, weight prepack: fused oneDNN convolutions/linears on folded weights"
    return "freezing=True, cpp.weight_prepack=False: folded weights, plain convolutions"


def cpu_kernels(pkg: str | os.PathLike) -> str:
    """'vectorized', 'scalar' or 'none': whether inductor generated a package's CPU kernels for
    a vector ISA (Note [Which CPU kernels a package has])."""
    text = read_member(pkg, ".kernel.cpp") or read_member(pkg, ".wrapper.cpp") or ""
    if "cpp_fused_" not in text:
        return "none"
    isa = json.loads(read_member(pkg, ".wrapper_metadata.json") or "{}").get("AOTI_CPU_ISA")
    if isa:
        return "scalar" if isa == CPU_ISA_NONE else "vectorized"
    return "vectorized" if "at::vec::Vectorized" in text else "scalar"  # a torch without the key


# --------------------------------------------------------------------------------------
# Zoo / factory export with reference data
# --------------------------------------------------------------------------------------


_NO_NUMPY_DTYPE = (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2)


def _save_npy(path: Path, t: torch.Tensor) -> None:
    """Writes `t` as a dense C-order .npy of its logical shape, whatever its strides.

    numpy has no bfloat16 or float8: such a tensor is written as float32, which holds each
    value exactly. `aotrt run` writes such outputs the same way, and converts such an input
    back to the dtype the model expects (Model::prepare_input: float32 into a narrower
    floating input), which the package records ("aotrt.inputs", and the generated code's
    input checks); STEM.json's "inputs" and "npy_dtypes" say it too.
    """
    import numpy as np

    t = t.detach().cpu()
    if t.dtype in _NO_NUMPY_DTYPE:
        t = t.float()
    np.save(path, np.ascontiguousarray(t.numpy()))


def load_factory(spec: str):
    """'pkg.module:function' -> the function."""
    mod_name, sep, fn_name = spec.partition(":")
    if not sep:
        raise ValueError(f"--factory wants module:function, got {spec!r}")
    return getattr(importlib.import_module(mod_name), fn_name)


def build(name: str | None = None, factory: str | None = None):
    """(module, inputs, tolerance dict) from the zoo or a user factory.

    A factory returns (module, inputs) or (module, inputs, tolerance dict)."""
    if factory is not None:
        torch.manual_seed(0)
        got = load_factory(factory)()
        module, inputs = got[0], tuple(got[1])
        tol = dict(got[2]) if len(got) > 2 else {}
        from . import zoo

        tol = {**dict(atol=zoo.DEFAULT_ATOL, rtol=zoo.DEFAULT_RTOL, reason=zoo.DEFAULT_REASON), **tol}
        return module.eval(), inputs, tol
    from . import zoo

    return zoo.get(name)


def source_fingerprint() -> str:
    """Hash of this package's model/export code and the torch version: a cached export made
    with another fingerprint is stale."""
    h = hashlib.sha256(torch.__version__.encode())
    here = Path(__file__).parent
    for f in ("export.py", "zoo.py", "gpu_models.py", "wrapper.py"):
        h.update((here / f).read_bytes())
    return h.hexdigest()[:16]


def cached_export(out_dir: str | os.PathLike, stem: str, fingerprint: str) -> dict[str, Any] | None:
    """STEM.json of a package in `out_dir` exported with `fingerprint` (STEM.pt2 beside it), or
    None: the test suites' package cache (tests/e2e/conftest.py, tests/generate/exports.py)."""
    out = Path(out_dir)
    meta = out / f"{stem}.json"
    if not (meta.exists() and (out / f"{stem}.pt2").exists()):
        return None
    info = json.loads(meta.read_text())
    return info if info.get("fingerprint") == fingerprint else None


def export_model(
    out_dir: str | os.PathLike,
    name: str | None = None,
    factory: str | None = None,
    stem: str | None = None,
    device: str = "cpu",
    dtype: torch.dtype | None = None,
    extra_options: dict[str, Any] | None = None,
    dynamic_batch: int | None = None,
) -> dict[str, Any]:
    """Exports a zoo model (or factory) into out_dir as STEM.pt2 plus reference data.

    With `dynamic_batch=N` the package takes any batch from 2 to N along dim 0 of every input
    (Note [Dynamic batch export]); the .npy files then hold the example it was exported with
    (a batch of one row repeated to two).

    A zoo entry brings its dtype (used unless `dtype` is given), its inductor options (under
    `extra_options`) and its wrapper checks; the device must be one the entry is meant for.
    Writes STEM.input_K.npy, STEM.expected_K.npy (eager outputs on `device` in the model's
    dtype, computed before export so export cannot disturb the module; fp32 with TF32 off,
    bf16 written as float32) and STEM.json (the export_package result plus tolerance, output
    specs, the fallback ops the wrapper calls and the checks' results). Returns that dict.
    """
    from . import wrapper, zoo

    stem = stem or name or factory.rpartition(":")[2]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    options = dict(extra_options or {})
    checks: tuple = ()
    if name is not None:
        e = zoo.entry(name)
        kind = torch.device(device).type
        if kind not in e.devices:
            raise ValueError(f"zoo model {name!r} is meant for {', '.join(e.devices)}, not {device}")
        options = {**e.options, **options}
        checks = e.checks
        if dtype is None and e.dtype != torch.float32:
            dtype = e.dtype
    torch.manual_seed(0)
    module, inputs, tol = build(name, factory)
    module, inputs = _to_device_dtype(module, inputs, device, dtype)
    if dynamic_batch:
        inputs = tuple(_batch_of_two(t) for t in inputs)
    with zoo.exact_fp32():
        expected = zoo.eager_outputs(module, inputs)

    for f in out.glob(f"{stem}.input_*.npy"):
        f.unlink()
    for f in out.glob(f"{stem}.expected_*.npy"):
        f.unlink()
    for k, t in enumerate(inputs):
        _save_npy(out / f"{stem}.input_{k}.npy", t)
    for k, t in enumerate(expected):
        _save_npy(out / f"{stem}.expected_{k}.npy", t)

    t0 = time.perf_counter()
    with zoo.exact_fp32():  # inductor reads the TF32 flags for any matmul it generates itself
        info = export_package(module, inputs, out / f"{stem}.pt2", device=device, dtype=None,
                              extra_options=options or None, dynamic_batch=dynamic_batch)
    info["name"] = stem
    info["dtype"] = str(dtype or torch.float32).removeprefix("torch.")
    info["total_s"] = round(time.perf_counter() - t0, 2)
    info["tolerance"] = tol
    info["outputs"] = _tensor_specs(expected)
    # The dtype each input_K.npy holds (float32 for a bfloat16/float8 input; aotrt converts).
    info["npy_dtypes"] = ["float32" if isinstance(t, torch.Tensor) and t.dtype in _NO_NUMPY_DTYPE
                          else str(t.dtype).removeprefix("torch.") if isinstance(t, torch.Tensor)
                          else None for t in inputs]
    # CPU kernels live in <hash>.kernel.cpp; CUDA ones are Triton cubins.
    text = (read_member(info["package"], ".wrapper.cpp") or "") + "\n" + (read_member(info["package"], ".kernel.cpp") or "")
    info["fallback_ops"] = wrapper.op_summary(text)
    info["checks"] = []
    for check in checks:
        ok, detail = check(text, device)
        info["checks"].append(dict(description=check.description, ok=ok, detail=detail))
    info["fingerprint"] = source_fingerprint()
    (out / f"{stem}.json").write_text(json.dumps(info, indent=1, default=str))
    return info


def _export_model_job(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Process-pool entry point: never raises, so one failing model doesn't stop the rest."""
    import traceback

    try:
        return export_model(**kwargs)
    except Exception as e:  # noqa: BLE001 - reported to the caller with the full traceback
        return {"name": kwargs.get("stem") or kwargs.get("name"), "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc()}


def export_many(jobs: list[dict[str, Any]], processes: int = 1) -> list[dict[str, Any]]:
    """Runs export_model over `jobs` (kwargs dicts), `processes` at a time.

    Exports are mostly single-threaded (tracing, then one g++ at a time), so two processes
    on two cores roughly halve the wall time. Workers are spawned, not forked: a forked
    torch with OpenMP threads running is not safe.
    """
    if processes <= 1 or len(jobs) <= 1:
        return [_export_model_job(j) for j in jobs]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=processes, mp_context=ctx) as pool:
        return list(pool.map(_export_model_job, jobs))


def summarize(info: dict[str, Any]) -> str:
    """Human-readable report of one export_model/export_package result."""
    if "error" in info and "package" not in info:
        return f"== {info.get('name')}: EXPORT FAILED\n{info.get('traceback', info['error'])}"
    und = info.get("undefined", {})
    lines = [
        f"== {info.get('name', info['package'])}: {info['package']}",
        f"   torch {info['torch_version']}, device {info['device']}, "
        f"export {info['export_s']}s + compile {info['compile_s']}s",
        f"   options: {json.dumps({k: v for k, v in info['options'].items() if k != 'aot_inductor.metadata'})}",
    ]
    if info.get("missing_options"):
        lines.append(f"   MISSING options in this torch: {info['missing_options']}")
    lines.append(f"   metadata: {json.dumps(info.get('metadata', {}))}")
    lines.append(f"   needed: {' '.join(info.get('needed', []))}")
    lines.append("   files:")
    lines += [f"     {size:>10}  {f}" for f, size in info["files"]]
    for group in ("shim", "openmp", "sleef", "other"):
        if und.get(group):
            lines.append(f"   undefined {group} ({len(und[group])}): {' '.join(und[group])}")
    lines.append(f"   undefined system: {len(und.get('system', []))} (libc/libstdc++/libgcc)")
    if info.get("cpu_inference"):
        lines.append(f"   CPU export: {info['cpu_inference']} (Note [CPU inference default])")
    if info.get("cpu_kernels"):
        lines.append(f"   CPU kernels: {info['cpu_kernels']} (Note [CPU vectorization and Sleef])")
    if info.get("fallback_ops"):
        lines.append("   fallback calls: " + " ".join(f"{op} x{n}" for op, n in info["fallback_ops"].items()))
    for c in info.get("checks", []):
        lines.append(f"   check {'OK  ' if c['ok'] else 'FAIL'} {c['description']}: {c['detail']}")
    return "\n".join(lines)


def _parse_option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--option wants key=value, got {text!r}")
    try:
        return key, json.loads(value)  # true/false/numbers/"strings"
    except json.JSONDecodeError:
        return key, value


_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m aotrt_tools.export",
        description="Export zoo models or a user factory to .pt2 packages for aotrt, with "
        "inputs and eager reference outputs as .npy files.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", action="append", help="zoo model name (repeatable), or 'all'")
    src.add_argument("--factory", help="module:function returning (module, example_inputs[, tolerance])")
    parser.add_argument("--name", help="file stem for --factory (default: the function name)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=sorted(_DTYPES), help="cast module and float inputs")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--jobs", type=int, default=1, help="export this many models in parallel")
    parser.add_argument("--option", action="append", type=_parse_option, default=[],
                        help="extra inductor option key=value (JSON value), e.g. cpp.vec_isa_ok=true")
    parser.add_argument("--dynamic-batch", type=int, metavar="N",
                        help="export dim 0 of every input as a batch of 2 to N")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    args = parser.parse_args(argv)

    common = dict(out_dir=args.out, device=args.device, dtype=_DTYPES.get(args.dtype),
                  extra_options=dict(args.option) or None, dynamic_batch=args.dynamic_batch)
    if args.factory:
        jobs = [dict(factory=args.factory, stem=args.name, **common)]
    else:
        from . import zoo

        wanted = zoo.names(args.device) if args.model == ["all"] else args.model
        for n in wanted:
            zoo.entry(n)  # fail fast on a typo, before spawning anything
        jobs = [dict(name=n, **common) for n in wanted]

    results = export_many(jobs, processes=args.jobs)
    for info in results:
        print(json.dumps(info, indent=1, default=str) if args.json else summarize(info))
    failed = [r.get("name") for r in results if "package" not in r]
    if failed:
        print(f"FAILED: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
