"""The sweep's worker side: make each case (sample, eager reference, torch.export), then compile
cases into AOTInductor packages. Runs in spawned processes (see sweep.py); every entry point
returns a dict and never raises, and each has a time limit.

Note [Batched packages]
A one-op package costs ~35-60 s of g++ on the 2-core CI machine (the AOTI runtime headers
dominate), and twenty one-op modules compiled as one package cost about as much as two. So
cases are compiled in batches: one package whose model holds each case's one-op module as a
submodule `case_K`, taking every case's inputs and returning every case's outputs. Nothing
is shared between cases (each has its own inputs), so each op compiles as it would alone;
inductor may fuse independent pointwise loops, which changes no value. Which `aoti_torch_*`
functions each case needs is read from the package's wrapper: every fallback call sits under
a `// Topologically Sorted Source Nodes: [...]` comment naming FX nodes, and a post-grad
pass (it only reads the graph) maps each node to its `case_K` through nn_module_stack.
`--batch 1` gives plain one-op packages.

The package is built as a user would: torch.export, then aoti_compile_and_package with
`aot_inductor.link_libtorch=False` and nothing else but the input layouts in the package
metadata ("aotrt.inputs", as aotrt_tools.export records them).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.opinfo import cases, text

REPO = cases.HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))
from aotrt_tools import export as aotrt_export  # noqa: E402

warnings.filterwarnings("ignore")


# What decides a case's reference data and its package; cases.harness_hash hashes these
# (and cases.py), so the cache is keyed by them.
PACKAGE_CODE = ("_dense_copy", "_specs", "_same", "_eager", "_module_inputs", "_prepare_one",
                "_load_inputs", "Batch", "attribute_shims", "_compile")


class CaseTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raises CaseTimeout in this (worker's main) thread after `seconds`."""

    def fire(signum, frame):
        raise CaseTimeout(f"time limit of {seconds:.0f} s reached")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def first_line(e: BaseException) -> str:
    """The exception's first line; for a C++ compile error, the compiler's first error."""
    text = str(e)
    for line in text.splitlines():
        if " error: " in line:
            return f"{type(e).__name__}: {line.strip()[:300]}"
    head = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"{type(e).__name__}: {head[:300]}"


def case_dir(cache: Path, key: str) -> Path:
    return cache / "cases" / key


def _dense_copy(t: torch.Tensor) -> torch.Tensor:
    """A fresh tensor of t's values and strides, at offset 0; overlapping strides made dense."""
    import torch._prims_common as prims

    dense = getattr(prims, "is_non_overlapping_and_dense_or_false", None) or prims.is_non_overlapping_and_dense
    t = t.detach()
    if not dense(t):
        return t.contiguous().clone()
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out


def _specs(tensors) -> list[dict[str, Any]]:
    return [dict(dtype=str(t.dtype).removeprefix("torch."), sizes=list(t.shape),
                 strides=list(t.stride()), storage_offset=0) for t in tensors]


def _same(a: tuple, b: tuple) -> bool:
    """Bitwise equal outputs (NaN equal to NaN)."""
    try:
        for x, y in zip(a, b, strict=True):
            torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True)
    except (AssertionError, ValueError):
        return False
    return True


def _eager(module, inputs, seed: int) -> tuple:
    torch.manual_seed(seed)
    with torch.no_grad():
        return tuple(t.detach().clone() for t in module(*inputs))


def _module_inputs(module: cases.OneOp) -> tuple[torch.Tensor, ...]:
    return tuple(_dense_copy(t) for t in module.example_inputs())


def prepare(task: dict[str, Any]) -> list[dict[str, Any]]:
    """Makes every sample case of one (op, dtype, device): eager reference and export check.

    task: op, dtype, device, samples (how many), cache, harness, timeout. Writes
    cases/<key>/{case.json, input_K.npy, expected.pt}; a case already there is reused.
    Returns the case records (status: exported | does-not-export | no-tensor-output |
    sample-error).
    """
    cache = Path(task["cache"])
    op, dtype, device = task["op"], task["dtype"], task["device"]
    base = dict(op=op, dtype=dtype, device=device)
    keys = [cases.case_key(op, k, dtype, device, task["harness"]) for k in range(task["samples"])]
    done = [case_dir(cache, k) / "case.json" for k in keys]
    if all(p.exists() for p in done):
        records = [json.loads(p.read_text()) for p in done]
        return [r for r in records if r.get("status") != "absent"]
    records = []
    try:
        with time_limit(task["timeout"]):
            got = cases.samples(op, dtype, device, task["samples"])
    except BaseException as e:  # noqa: BLE001 - a sample generator that fails is a result
        return [dict(base, key=keys[0], sample=0, status="sample-error", message=first_line(e))]
    for k, key in enumerate(keys):
        d = case_dir(cache, key)
        d.mkdir(parents=True, exist_ok=True)
        rec: dict[str, Any] = dict(base, key=key, sample=k)
        if k >= len(got):
            rec["status"] = "absent"  # the op has fewer samples; cached so as not to ask again
            (d / "case.json").write_text(json.dumps(rec))
            continue
        t0 = time.perf_counter()
        try:
            rec["sample_text"] = text.describe(got[k])
            with time_limit(task["timeout"]):
                rec.update(_prepare_one(op, got[k], d))
        except BaseException as e:  # noqa: BLE001
            rec.update(status="sample-error", message=first_line(e))
        rec["prepare_s"] = round(time.perf_counter() - t0, 2)
        (d / "case.json").write_text(json.dumps(rec))
        records.append(rec)
    return records


def _prepare_one(op: str, sample, d: Path) -> dict[str, Any]:
    module = cases.one_op(op, sample)
    inputs = _module_inputs(module)
    try:
        expected = _eager(module, inputs, seed=0)
    except Exception as e:  # noqa: BLE001
        return dict(status="sample-error", message="eager: " + first_line(e))
    if not expected:
        return dict(status="no-tensor-output",
                    message=f"the op returns no tensor ({', '.join(module.dropped_outputs) or 'nothing'})")
    random_values = op.split(".")[0] in cases.UNINITIALIZED_OPS or not _same(expected, _eager(module, inputs, seed=1))
    rec: dict[str, Any] = dict(
        n_inputs=len(inputs), inputs=_specs(inputs), n_outputs=len(expected),
        outputs=[dict(dtype=str(t.dtype).removeprefix("torch."), sizes=list(t.shape)) for t in expected],
        random=random_values, dropped_outputs=module.dropped_outputs)
    for i, t in enumerate(inputs):
        np.save(d / f"input_{i}.npy", cases.npy_array(t))  # 0-d stays 0-d; bf16 as float32
    torch.save([t.cpu() for t in expected], d / "expected.pt")
    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            torch.export.export(module, inputs)
    except Exception as e:  # noqa: BLE001
        rec.update(status="does-not-export", message=first_line(e))
        return rec
    rec.update(status="exported", export_s=round(time.perf_counter() - t0, 2))
    return rec


# --------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _samples_cached(op: str, dtype: str, device: str, count: int):
    return cases.samples(op, dtype, device, count)


def _load_inputs(rec: dict[str, Any], cache: Path, device: str) -> list[torch.Tensor]:
    d = case_dir(cache, rec["key"])
    out = []
    for i, spec in enumerate(rec["inputs"]):
        a = torch.from_numpy(np.load(d / f"input_{i}.npy"))
        t = torch.empty_strided(spec["sizes"], spec["strides"], dtype=cases.DTYPES.get(spec["dtype"], a.dtype),
                                device=device)
        t.copy_(a)
        out.append(t)
    return out


class Batch(torch.nn.Module):
    """Cases side by side: case_K takes inputs [starts[K], starts[K+1]) and its outputs follow
    the previous case's."""

    def __init__(self, modules: list[cases.OneOp]) -> None:
        super().__init__()
        self.count = len(modules)
        self.arity = [len(m.tensor_slots) for m in modules]
        for k, m in enumerate(modules):
            setattr(self, f"case_{k}", m)

    def forward(self, *tensors):
        outs: list[torch.Tensor] = []
        at = 0
        for k in range(self.count):
            n = self.arity[k]
            outs += list(getattr(self, f"case_{k}")(*tensors[at:at + n]))
            at += n
        return tuple(outs)


_SOURCE_NODES = re.compile(r"//\s*Topologically Sorted Source Nodes: \[([^\]]*)\]")
_AOTI_NAME = re.compile(r"\baoti_torch_\w+")
_CASE_PATH = re.compile(r"^case_(\d+)")


def attribute_shims(wrapper_cpp: str, node_case: dict[str, int]) -> tuple[dict[int, list[str]], list[str]]:
    """aoti_torch_* names the wrapper uses, per case (see Note [Batched packages]), and those
    used outside any case's source-node block."""
    per: dict[int, set[str]] = {}
    outside: set[str] = set()
    current: set[int] = set()
    for line in wrapper_cpp.splitlines():
        m = _SOURCE_NODES.search(line)
        if m:
            names = [n.strip() for n in m[1].split(",") if n.strip()]
            current = {node_case[n] for n in names if n in node_case}
            continue
        for name in _AOTI_NAME.findall(line):
            if current:
                for k in current:
                    per.setdefault(k, set()).add(name)
            else:
                outside.add(name)
    return {k: sorted(v) for k, v in per.items()}, sorted(outside)


def compile_batch(task: dict[str, Any]) -> dict[str, Any]:
    """Exports and AOTI-compiles the cases of one batch into batches/<key>/model.pt2.

    task: key, cases (records from prepare), device, cache, timeout. Returns (and writes as
    batch.json) status compiled | export-error | compile-error | timeout, the package, each
    case's input/output ranges and the aoti_torch_* names each case's code uses.
    """
    cache = Path(task["cache"])
    out = cache / "batches" / task["key"]
    meta = out / "batch.json"
    if meta.exists():
        return json.loads(meta.read_text())
    shutil.rmtree(out, ignore_errors=True)  # a half-written one (a timeout, a killed run)
    out.mkdir(parents=True, exist_ok=True)
    device = task["device"]
    recs = task["cases"]
    info: dict[str, Any] = dict(key=task["key"], cases=[r["key"] for r in recs], device=device)
    t0 = time.perf_counter()
    try:
        with time_limit(task["timeout"]):
            info.update(_compile(recs, cache, device, out))
    except CaseTimeout as e:
        info.update(status="timeout", message=str(e))
    except Exception as e:  # noqa: BLE001
        info.update(status=info.get("status", "compile-error"), message=first_line(e),
                    traceback=traceback.format_exc()[-4000:])
    info["compile_s"] = round(time.perf_counter() - t0, 1)
    if info.get("status") != "timeout":  # a timeout may pass on a less loaded machine
        meta.write_text(json.dumps(info, indent=1))
    return info


def _compile(recs: list[dict[str, Any]], cache: Path, device: str, out: Path,
             cpp_only: bool = False) -> dict[str, Any]:
    modules, inputs = [], []
    for rec in recs:
        got = _samples_cached(rec["op"], rec["dtype"], device, rec["sample"] + 1)
        m = cases.one_op(rec["op"], got[rec["sample"]])
        ins = _load_inputs(rec, cache, device)
        want = _module_inputs(m)
        if [(t.shape, t.dtype) for t in want] != [(t.shape, t.dtype) for t in ins]:
            raise RuntimeError(f"{rec['op']} sample {rec['sample']}: regenerated sample differs from the cached one")
        modules.append(m)
        inputs += ins
    batch = Batch(modules).eval()
    try:
        with torch.no_grad():
            ep = torch.export.export(batch, tuple(inputs))
    except Exception as e:  # noqa: BLE001
        return dict(status="export-error", message=first_line(e))

    # Comments name a node by its own name or by the node it came from (from_node), in the
    # exported graph or in inductor's post-grad graph: map all of them.
    node_case: dict[str, int] = {}

    def ancestry(node) -> set[str]:
        names, pending = {node.name}, list(node.meta.get("from_node") or [])
        while pending:
            src = pending.pop()
            names.add(getattr(src, "name", ""))
            pending += list(getattr(src, "from_node", None) or [])
        return names

    def record(graph):
        for node in graph.nodes:
            for path, _ in (node.meta.get("nn_module_stack") or {}).values():
                m = _CASE_PATH.match(path)
                if m:
                    for name in ancestry(node):
                        node_case.setdefault(name, int(m[1]))

    record(ep.graph)
    options = {"aot_inductor.link_libtorch": False,
               "aot_inductor.metadata": {"aotrt.inputs": json.dumps(_specs(inputs))}}
    if cpp_only:  # a plan: the wrapper's code without g++ (see plan_batch)
        options["aot_inductor.package_cpp_only"] = True
    from torch._inductor import config

    with torch.no_grad(), config.patch(post_grad_custom_post_pass=record):
        pkg = torch._inductor.aoti_compile_and_package(
            ep, package_path=str(out / "model.pt2"), inductor_configs=options)
    wrapper = aotrt_export.read_member(pkg, ".wrapper.cpp") or ""
    per_case, outside = attribute_shims(wrapper, node_case)
    if cpp_only:
        return dict(status="planned", case_shims=[per_case.get(k, []) for k in range(len(recs))],
                    outside_shims=outside)
    imported = aotrt_export.inspect_package(pkg).get("undefined", {}).get("shim", [])
    ranges, i_at, o_at = [], 0, 0
    for rec in recs:
        ranges.append(dict(inputs=[i_at, i_at + rec["n_inputs"]], outputs=[o_at, o_at + rec["n_outputs"]]))
        i_at += rec["n_inputs"]
        o_at += rec["n_outputs"]
    return dict(status="compiled", package=str(pkg), ranges=ranges, imported=imported,
                case_shims=[per_case.get(k, []) for k in range(len(recs))], outside_shims=outside)


def plan_batch(task: dict[str, Any]) -> dict[str, Any]:
    """The aoti_torch_* names each case of a batch will use, from AOTInductor's code
    generation alone (package_cpp_only: no g++, a fraction of a compile). The sweep uses it to
    compile the cases aotrt serves apart from those it will refuse, so that one refused op
    does not stop a package of served ones. Cached as plans/<key>.json."""
    cache = Path(task["cache"])
    meta = cache / "plans" / f"{task['key']}.json"
    if meta.exists():
        return json.loads(meta.read_text())
    out = cache / "plans" / task["key"]
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = dict(key=task["key"], cases=[r["key"] for r in task["cases"]])
    try:
        with time_limit(task["timeout"]):
            info.update(_compile(task["cases"], cache, task["device"], out, cpp_only=True))
    except BaseException as e:  # noqa: BLE001 - the real compile will say what is wrong
        info.update(status="plan-error", message=first_line(e))
    shutil.rmtree(out, ignore_errors=True)
    if info.get("status") == "planned":
        meta.write_text(json.dumps(info))
    return info


def oracle(task: dict[str, Any]) -> dict[str, Any]:
    """Runs a compiled batch through libtorch's own AOTI loader (aotrt_tools.reference) and
    saves its outputs as batches/<key>/oracle.pt: tells "inductor's code differs from eager"
    from "aotrt differs from inductor's code"."""
    cache = Path(task["cache"])
    out = cache / "batches" / task["key"] / "oracle.pt"
    if out.exists():
        return dict(key=task["key"], status="ok")
    try:
        with time_limit(task["timeout"]):
            from aotrt_tools import reference

            if task["device"] != "cpu":
                import ctypes

                lib = Path(torch.__file__).parent / "lib" / "libtorch_cuda.so"
                ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
            inputs = []
            for rec in task["cases"]:
                inputs += _load_inputs(rec, cache, task["device"])
            got = reference.libtorch_run(task["package"], inputs)
            torch.save([t.cpu() for t in got], out)
        return dict(key=task["key"], status="ok")
    except BaseException as e:  # noqa: BLE001
        return dict(key=task["key"], status="error", message=first_line(e))


def init_worker(cache: str) -> None:
    """Pool initializer: one compile thread per worker, the sweep's own inductor cache (which
    keeps the precompiled AOTI header every package reuses)."""
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(cache) / "inductor"))
    torch.set_num_threads(1)
