"""One-op packages for the op-family tests: export a small module with torch, run it
through `build/aotrt run`, hand back eager's and aotrt's outputs.

Packages are exported in parallel (AOTRT_E2E_JOBS processes, default 2) and kept under
AOTRT_E2E_CACHE when it is set (keyed by the case's name, a hash of its function's source,
its inputs' layouts and options, and the export code's fingerprint), else in a fresh temp
dir.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from aotrt_tools import export  # noqa: E402


class Fn(torch.nn.Module):
    """forward(*xs) = fn(*xs), results flattened to a tuple of tensors."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        out = self.fn(*xs)
        if isinstance(out, torch.Tensor):
            return (out,)
        return tuple(out)


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]          # module-level function (picklable for the export pool)
    inputs: Sequence[torch.Tensor]
    options: dict[str, Any] | None = None  # inductor options beyond aotrt's


def _key(case: Case) -> str:
    """The case's name and a hash of what its package depends on."""
    import hashlib
    import inspect
    h = hashlib.sha256(inspect.getsource(case.fn).encode())
    h.update(repr([(tuple(x.shape), tuple(x.stride()), str(x.dtype)) for x in case.inputs]).encode())
    h.update(repr(sorted((case.options or {}).items())).encode())
    return f"{case.name}-{h.hexdigest()[:10]}"


def _export(case: Case, out_dir: str) -> str:
    pkg = Path(out_dir) / f"{_key(case)}.pt2"
    if not pkg.exists():
        tmp = pkg.with_suffix(".tmp.pt2")
        export.export_package(Fn(case.fn), tuple(case.inputs), tmp, extra_options=case.options)
        tmp.rename(pkg)
    return str(pkg)


def export_all(cases: Sequence[Case], out_dir: Path) -> dict[str, Path]:
    out_dir = out_dir / export.source_fingerprint()[:12]
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = int(os.environ.get("AOTRT_E2E_JOBS", "2"))
    # Spawned, never forked: a fork of this process, where torch's OpenMP threads have run
    # eager ops already, deadlocked in the child (futex waits, seen with test_ops_linear.py
    # after other files); aotrt_tools.export spawns its workers for the same reason.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        paths = list(pool.map(_export, cases, [str(out_dir)] * len(cases)))
    return {c.name: Path(p) for c, p in zip(cases, paths)}


def cache_dir(tmp_path_factory, name: str) -> Path:
    root = os.environ.get("AOTRT_E2E_CACHE")
    if root:
        d = Path(root) / name
        d.mkdir(parents=True, exist_ok=True)
        return d
    return tmp_path_factory.mktemp(name)


def run_aotrt(aotrt_bin: Path, pkg: Path, inputs: Sequence[torch.Tensor], work: Path,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    work.mkdir(parents=True, exist_ok=True)
    cmd = [str(aotrt_bin), "run", str(pkg), "--output-dir", str(work / "out")]
    for i, x in enumerate(inputs):
        path = work / f"input_{i}.npy"
        np.save(path, x.numpy())
        cmd += ["--input", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def outputs(work: Path) -> list[np.ndarray]:
    files = sorted((work / "out").glob("output_*.npy"), key=lambda p: int(p.stem.split("_")[1]))
    return [np.load(f) for f in files]


def extern_targets(pkg: Path) -> list[str]:
    """The ops the package calls through the proxy executor."""
    import json
    with zipfile.ZipFile(pkg) as z:
        names = [n for n in z.namelist() if n.endswith(".wrapper.json")]
        if not names:
            return []
        return [n["node"]["target"] for n in json.loads(z.read(names[0]))["nodes"]]


def shims(pkg: Path) -> list[str]:
    """The aoti_torch_cpu_* functions the package's .so imports."""
    import tempfile
    with zipfile.ZipFile(pkg) as z, tempfile.TemporaryDirectory() as d:
        so = [n for n in z.namelist() if n.endswith(".so")][0]
        path = z.extract(so, d)
        out = subprocess.run(["nm", "-D", "--undefined-only", path], capture_output=True,
                             text=True).stdout
    return sorted({l.split()[-1] for l in out.splitlines() if "aoti_torch_cpu_" in l})


def eager_outputs(case: Case) -> list[torch.Tensor]:
    out = case.fn(*case.inputs)
    return [out] if isinstance(out, torch.Tensor) else list(out)


def assert_matches(name: str, got: Sequence[np.ndarray], want: Sequence[torch.Tensor],
                   tolerance: Callable[[torch.dtype], float]) -> None:
    """Same count, shapes and dtypes; integer outputs equal; floating and complex ones within
    tolerance(dtype) of eager relative to the largest finite magnitude of eager's output (1
    when that is smaller); NaN exactly where eager has NaN, infinities equal."""
    assert len(got) == len(want), f"{name}: {len(got)} outputs, eager has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == tuple(w.shape), f"{name} output {i}: shape {g.shape} vs {tuple(w.shape)}"
        assert g.dtype == w.numpy().dtype, f"{name} output {i}: dtype {g.dtype} vs {w.dtype}"
        if not (w.dtype.is_floating_point or w.dtype.is_complex):
            np.testing.assert_array_equal(g, w.numpy())
            continue
        wn = w.numpy()
        nan = np.isnan(wn)
        assert np.array_equal(np.isnan(g), nan), f"{name} output {i}: NaN at other places than eager's"
        finite = np.isfinite(wn)
        assert np.array_equal(g[~finite & ~nan], wn[~finite & ~nan]), f"{name} output {i}: infinities differ"
        if not finite.any():
            continue
        scale = max(float(np.abs(wn[finite]).max()), 1.0)
        err = float(np.abs(g[finite] - wn[finite]).max()) / scale
        assert err <= tolerance(w.dtype), f"{name} output {i}: relative error {err:.3g}"


# --- Module cases exported by their own test file (test_cpu_int4, test_cpu_quant_matmul) ------

def export_in_worker(test_file: str | Path, name: str, path: Path, kind: str,
                     key_extra: bytes = b"") -> Path:
    """Exports case `name` by running `python test_file NAME TARGET` in a fresh process (the
    test file's own export worker); with AOTRT_E2E_CACHE set, keeps the package there under
    `kind`, keyed by the test file's source, torch's version, `key_extra` and the case."""
    test_file = Path(test_file)

    def run(target: Path) -> None:
        r = subprocess.run([sys.executable, str(test_file), name, str(target)],
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-4000:]

    cache = os.environ.get("AOTRT_E2E_CACHE")
    if not cache:
        run(path)
        return path
    import hashlib
    import shutil
    key = hashlib.sha256(test_file.read_bytes() + torch.__version__.encode() + key_extra +
                         name.encode())
    kept = Path(cache) / kind / key.hexdigest()[:16] / path.name
    if not kept.exists():
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_name(kept.stem + ".partial.pt2")
        run(tmp)
        tmp.replace(kept)
    shutil.copyfile(kept, path)
    return path


def run_against_eager(aotrt_bin: Path, pkg: Path, x: torch.Tensor, want: np.ndarray,
                      rel_tol: float, work: Path, name: str) -> None:
    """`aotrt run` of a one-input package on `x` (saved as float32: aotrt converts it to the
    input's dtype), its first output within rel_tol of `want`, relative to want's largest
    magnitude (1 when that is smaller)."""
    np.save(work / "x.npy", x.float().numpy())
    r = subprocess.run([str(aotrt_bin), "run", str(pkg), "--input", str(work / "x.npy"),
                        "--output-dir", str(work / "out")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    got = np.load(work / "out" / "output_0.npy").astype(np.float32)
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    diff = float(np.abs(got - want).max())
    print(f"{name}: max abs diff {diff:.3g}, largest |eager| {float(np.abs(want).max()):.3g}")
    assert diff <= rel_tol * scale, f"{name}: max abs diff {diff} (scale {scale})"
