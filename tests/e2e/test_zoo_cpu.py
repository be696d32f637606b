"""End-to-end: every zoo model, exported for CPU, run by `aotrt run`, compared with eager.

The CLI contract these tests hold aotrt to:
  aotrt run MODEL.pt2 --input in0.npy [--input in1.npy ...] --output-dir DIR
      exits 0 and writes DIR/output_0.npy, output_1.npy, ... : one per model output, dense
      C-order, with the output's dtype and shape.
  aotrt info MODEL.pt2
      prints inputs, outputs, device and constants, and one line per shim symbol the
      model's .so imports, marked `provided` or `MISSING`.

The CPU zoo includes vectorized exports (pointwise_c2f_vec, sleef_pointwise) whose .so
imports Sleef_* math functions: aotrt must make them resolvable (see Note [CPU vectorization
and Sleef] in python/aotrt_tools/export.py). GPU-only entries are traced, not run, by
test_zoo_trace.py.

Input .npy files are dense C-order arrays. The strides the model was compiled for are in
the package metadata ("aotrt.inputs" in <hash>.wrapper_metadata.json); pointwise_c2f's input
is channels-last, so aotrt has to re-lay it out before the call.

Note [AOTI_RUNTIME_CHECK_INPUTS]
The generated code only checks sizes and strides when this variable is set: of the inputs,
and of what every fallback op returns (e.g. that aoti_torch_cpu_convolution gave back the
channels-last layout the following kernels index with, or that SDPA's output follows the
query's strides). Without it a layout mismatch shows up as wrong numbers; with it, as an
error that names the op. Every zoo package passes these checks under libtorch.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from aotrt_tools import zoo

RUN_TIMEOUT_S = 120


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("AOTI_RUNTIME_CHECK_INPUTS", os.environ.get("AOTRT_E2E_CHECK_INPUTS", "1"))
    return env


def _numbered(out_dir: Path, pattern: str) -> list[Path]:
    """out_dir/pattern.format(k) for k = 0, 1, ... while the file exists."""
    files = []
    while (p := out_dir / pattern.format(len(files))).exists():
        files.append(p)
    return files


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=_env())
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"timed out after {RUN_TIMEOUT_S}s: {' '.join(cmd)}\n{e.stdout or ''}{e.stderr or ''}", pytrace=False)


def _describe(proc: subprocess.CompletedProcess, cmd: list[str]) -> str:
    return (f"command: {' '.join(cmd)}\nexit code: {proc.returncode}\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")


@pytest.mark.parametrize("name", zoo.names("cpu"))
def test_run_matches_eager(name, aotrt_bin, exported, tmp_path, record_property, diff_report):
    info = exported(name)
    src = Path(info["out_dir"])
    inputs = _numbered(src, name + ".input_{}.npy")
    expected = [np.load(p) for p in _numbered(src, name + ".expected_{}.npy")]
    out_dir = tmp_path / "out"
    out_dir.mkdir()

    cmd = [str(aotrt_bin), "run", info["package"]]
    for p in inputs:
        cmd += ["--input", str(p)]
    cmd += ["--output-dir", str(out_dir)]
    proc = _run(cmd)
    assert proc.returncode == 0, f"aotrt run failed\n{_describe(proc, cmd)}"

    outputs = _numbered(out_dir, "output_{}.npy")
    assert len(outputs) == len(expected), (
        f"{name}: expected {len(expected)} output file(s), found {[p.name for p in sorted(out_dir.iterdir())]}"
        f"\n{_describe(proc, cmd)}")

    tol = zoo.entry(name)
    diffs = []
    for k, (path, want) in enumerate(zip(outputs, expected)):
        got = np.load(path)
        assert got.dtype == want.dtype, f"output_{k}: dtype {got.dtype}, eager gives {want.dtype}"
        assert got.shape == want.shape, f"output_{k}: shape {got.shape}, eager gives {want.shape}"
        diff = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
        diffs.append(diff)
        record_property(f"max_abs_diff_output_{k}", diff)
        print(f"{name} output_{k}: max abs diff {diff:.3g} (atol {tol.atol:g}, rtol {tol.rtol:g})")
    diff_report[name] = diffs
    for k, (path, want) in enumerate(zip(outputs, expected)):
        # Same criterion as np.allclose: |got - want| <= atol + rtol * |want|.
        np.testing.assert_allclose(np.load(path), want, rtol=tol.rtol, atol=tol.atol,
                                   err_msg=f"{name} output_{k} vs eager ({tol.reason})")


@pytest.mark.parametrize("name", [n for n in zoo.names("cpu") if zoo.entry(n).checks])
def test_wrapper_checks(name, exported):
    """What the model is in the zoo for shows in the generated code (e.g. bmm_permuted hands
    aoti_torch_cpu_bmm_out the permuted input itself). A failure here is the export's, not aotrt's."""
    info = exported(name)
    failed = [f"{c['description']}: {c['detail']}" for c in info["checks"] if not c["ok"]]
    assert len(info["checks"]) == len(zoo.entry(name).checks), "the export recorded no check results"
    assert not failed, f"{name}: wrapper checks failed:\n" + "\n".join(failed)


@pytest.mark.parametrize("name", ["pointwise_c2f"])
def test_info_lists_symbols(name, aotrt_bin, exported):
    info = exported(name)
    cmd = [str(aotrt_bin), "info", info["package"]]
    proc = _run(cmd)
    assert proc.returncode == 0, f"aotrt info failed\n{_describe(proc, cmd)}"

    lines = proc.stdout.splitlines()
    needed = info["undefined"]["shim"]
    assert needed, "the package imports no shims? the export inspection is broken"
    unlisted, missing = [], []
    for sym in needed:
        hits = [l for l in lines if sym in l.split()]
        if not hits or not any(("provided" in l) or ("MISSING" in l) for l in hits):
            unlisted.append(sym)
        elif any("MISSING" in l for l in hits):
            missing.append(sym)
    assert not unlisted, f"aotrt info does not list these imports with provided/MISSING: {unlisted}\n{_describe(proc, cmd)}"
    assert not missing, f"aotrt does not provide: {missing}"
    # Loose checks on the rest of the contract: the device and the input shape appear.
    assert "cpu" in proc.stdout.lower(), f"no device in aotrt info output\n{proc.stdout}"


@pytest.mark.parametrize("name", ["resnet_basic_block"])
def test_bench_profile_counts_shims(name, aotrt_bin, exported):
    """`aotrt bench --profile --json`: the host time of each aoti_* shim in the timed runs.
    The block has three convolutions (conv1, conv2, the downsample), each one convolution
    call per run: with the CPU export's default freezing=True (Note [CPU inference default] in
    aotrt_tools/export.py) the fused oneDNN ones (aoti_torch_cpu_mkldnn__convolution_pointwise
    and its binary forms), else aoti_torch_cpu_convolution."""
    info = exported(name)
    iters = 4
    cmd = [str(aotrt_bin), "bench", info["package"], "--iters", str(iters), "--warmup", "1",
           "--profile", "--json"]
    proc = _run(cmd)
    assert proc.returncode == 0, f"aotrt bench failed\n{_describe(proc, cmd)}"
    report = json.loads(proc.stdout)
    prof = report["shim_profile"]
    assert prof["runs"] == iters
    rows = {r["function"]: r for r in prof["functions"]}
    assert prof["calls_per_run"] > 0 and rows, prof
    assert all(f.startswith("aoti_torch_") for f in rows), sorted(rows)
    conv_calls = {f: r["calls"] for f, r in rows.items() if "convolution" in f}
    assert sum(conv_calls.values()) == 3 * iters, conv_calls
    if info["options"].get("freezing"):
        assert all("mkldnn__convolution_pointwise" in f for f in conv_calls), conv_calls
    for r in rows.values():
        assert r["calls"] % iters == 0, f"{r['function']}: {r['calls']} calls in {iters} identical runs"
        assert r["total_ns"] >= r["max_ns"] > 0, r
    assert sum(r["calls"] for r in rows.values()) == pytest.approx(prof["calls_per_run"] * iters)
    assert 0 < prof["shim_us_per_run"] < prof["run_mean_us"], prof
