"""Robustness with packages torch 2.13 exported: bad packages made from real ones, bad inputs,
1,000 loads, two models, 8 threads, allocation failure (see docs/robustness.md).

The C++ cases on a real package live in tests/unit/test_robust_real.cpp (RobustReal.*): this
file exports the package and runs that binary on it, with the environment it reads.
Package-level cases go through the CLI (`aotrt run`), each in a fresh TMPDIR that must be
empty afterwards.

Environment:
  AOTRT_BIN               the aotrt CLI (conftest.py); the unit test binary is looked up
                          beside it unless AOTRT_UNIT_TESTS names it.
  AOTRT_ROBUST_DEVICES    devices to run the real-package cases on: "cpu" (default),
                          "cpu,cuda" on a CUDA build with a CUDA torch (exports there).
  AOTRT_ROBUST_LOADS      load/unload cycles of the lifecycle case (default 1000).
  AOTRT_ROBUSTNESS_LOG    JSON lines of (area, case, outcome, message) for
                          scripts/robustness_table.py.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from aotrt_tools import export
from aotrt_tools.robust_log import record

RUN_TIMEOUT_S = 600
DEVICES = [d for d in os.environ.get("AOTRT_ROBUST_DEVICES", "cpu").split(",") if d]
REAL_MODEL = "pointwise_c2f"  # channels-last [1, 64, 40, 40] input: strides matter




@pytest.fixture
def fresh_tmpdir(tmp_path) -> Path:
    d = tmp_path / "tmpdir"
    d.mkdir()
    return d


def _env(tmpdir: Path | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    # Not set: the model's own input checks must come from aotrt (Note [Model input checks]),
    # which never sets it in the environment (RobustReal.EnvironmentIsLeftAlone).
    env.pop("AOTI_RUNTIME_CHECK_INPUTS", None)
    # The references are computed in exact fp32 (TF32 off, as the e2e runner's),
    # and CUDA convolutions allow TF32 by default (Note [TF32] in src/cuda/handles.h).
    env.setdefault("AOTRT_CUDNN_ALLOW_TF32", "0")
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    env.update(extra)
    return env


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env)


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _rewrite(src: str | Path, dst: Path, change) -> Path:
    """Copies a .pt2 zip, passing each member's (name, bytes) through change(), which returns
    a list of (name, bytes) to write in its place (empty to drop it)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            for name, data in change(info.filename, zin.read(info.filename)):
                zout.writestr(zipfile.ZipInfo(name), data)
    return dst


def _member_suffix(name: str, suffix: str) -> bool:
    return "/data/aotinductor/" in name and name.endswith(suffix)


def _expect_refused(aotrt_bin, pkg: Path, tmpdir: Path, case: str, needles: list[str], inputs=(), extra=(),
                    area: str = "bad packages") -> str:
    """`aotrt run pkg` must fail with every needle in its output and leave TMPDIR empty."""
    cmd = [aotrt_bin, "run", pkg, *sum((["--input", str(p)] for p in inputs), []), "--output-dir", tmpdir.parent / "out", *extra]
    proc = _run(cmd, _env(tmpdir))
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"{case}: aotrt run succeeded\n{text}"
    assert proc.returncode not in (-11, -6, 134, 139), f"{case}: aotrt crashed ({proc.returncode})\n{text}"
    for needle in needles:
        assert needle in text, f"{case}: output lacks {needle!r}:\n{text}"
    assert _listing(tmpdir) == [], f"{case}: left in TMPDIR: {_listing(tmpdir)}"
    message = text.strip().splitlines()[-1] if text.strip() else ""
    record(area, case, "refused (exit %d)" % proc.returncode, message)
    return text


# ------------------------------------------------------------------------------------------
# The C++ cases (RobustReal.*) on real packages
# ------------------------------------------------------------------------------------------


def _gtest(unit_tests: Path, env: dict[str, str], tmp_path: Path, filter_: str) -> dict[str, str]:
    """Runs the unit test binary; returns test name -> status ('OK', 'FAILED', 'SKIPPED')."""
    report = tmp_path / "gtest.json"
    proc = _run([unit_tests, f"--gtest_filter={filter_}", f"--gtest_output=json:{report}"], env)
    statuses = {}
    if report.exists():
        for suite in json.loads(report.read_text()).get("testsuites", []):
            for t in suite.get("testsuite", []):
                failed = bool(t.get("failures"))
                skipped = t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN"
                statuses[f"{suite['name']}.{t['name']}"] = "FAILED" if failed else ("SKIPPED" if skipped else "OK")
    assert proc.returncode == 0 and statuses, (
        f"aotrt_unit_tests --gtest_filter={filter_} failed (exit {proc.returncode}):\n"
        f"{proc.stdout[-12000:]}\n{proc.stderr[-4000:]}")
    return statuses


def _cuda_export(tmp_path_factory, name: str) -> dict:
    out = tmp_path_factory.mktemp(f"{name}_cuda")
    return export.export_model(out, name=name, device="cuda")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", [REAL_MODEL])
def test_real_package_cases(name, device, exported, unit_tests, tmp_path, tmp_path_factory):
    info = exported(name) if device == "cpu" else _cuda_export(tmp_path_factory, name)
    src = Path(info["out_dir"]) if device == "cpu" else Path(info["package"]).parent
    pkg = Path(info["package"])
    # The same package without its aotrt.inputs record and without the generated source (from
    # whose input checks aotrt also reads the layout): only the model's own checks apply.
    def strip_spec(member: str, data: bytes):
        if member.endswith(".wrapper.cpp"):
            return []
        if member.endswith("_metadata.json") and "/data/aotinductor/" in member:
            md = json.loads(data)
            md.pop("aotrt.inputs", None)
            data = json.dumps(md).encode()
        return [(member, data)]

    nospec = _rewrite(pkg, tmp_path / f"{name}_nospec.pt2", strip_spec)
    inputs = sorted(src.glob(f"{name}.input_*.npy"))
    expected = sorted(src.glob(f"{name}.expected_*.npy"))
    tol = info["tolerance"]
    env = _env(
        AOTRT_ROBUST_PACKAGE=str(pkg), AOTRT_ROBUST_NOSPEC_PACKAGE=str(nospec),
        AOTRT_ROBUST_INPUTS=",".join(map(str, inputs)), AOTRT_ROBUST_EXPECTED=",".join(map(str, expected)),
        AOTRT_ROBUST_ATOL=str(tol["atol"]), AOTRT_ROBUST_RTOL=str(tol["rtol"]),
        AOTRT_ROBUST_LABEL=f"{name} (torch {torch.__version__.split('+')[0]})",
    )
    statuses = _gtest(unit_tests, env, tmp_path, "RobustReal.*")
    want = {"MatchesEager", "LoadUnloadLeavesNothing", "TwoModelsAndOutputsOutliveTheirModel",
            "EightThreadsMatchSerialRuns", "BadInputsAreRefusedBeforeTheModelRuns",
            "AcceptedLayoutsGiveTheSameResult", "ModelOwnChecksNameTheInput",
            "AllocationFailureNamesTheSizeAndRecovers", "AllocationFailsInTheMiddleOfARun",
            "EnvironmentIsLeftAlone"}
    ran = {k.split(".", 1)[1] for k, v in statuses.items() if v == "OK"}
    assert want <= ran, f"not run or not passed: {sorted(want - ran)}; statuses: {statuses}"

    # The same 8 threads under ThreadSanitizer, when scripts/tsan.sh built it (CPU only).
    tsan = os.environ.get("AOTRT_TSAN_UNIT_TESTS")
    if tsan and device == "cpu":
        supp = Path(__file__).resolve().parents[2] / "scripts" / "tsan.supp"
        tsan_env = dict(env, AOTRT_ROBUST_RUNS="3", AOTRT_ROBUSTNESS_LOG="",  # recorded below
                        TSAN_OPTIONS=f"halt_on_error=1:second_deadlock_stack=1:suppressions={supp}")
        statuses = _gtest(Path(tsan), tsan_env, tmp_path, "RobustReal.EightThreadsMatchSerialRuns")
        assert set(statuses.values()) == {"OK"}, statuses
        record("concurrency", f"ThreadSanitizer: {name} (torch {torch.__version__.split('+')[0]}) on 8 threads",
               "no data race reported", f"suppressed, as uninstrumented libraries: see scripts/tsan.supp")


class _EmptyAndFull(torch.nn.Module):
    """An empty input (0 rows) beside a full one: inductor compiles for the empty shape."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 5))

    def forward(self, empty, full):
        return empty @ self.w, empty.sum(0) + full, (full * 2).sum()


@pytest.mark.parametrize("device", DEVICES)
def test_empty_input(device, unit_tests, tmp_path):
    torch.manual_seed(0)
    module = _EmptyAndFull().eval()
    inputs = (torch.randn(0, 8), torch.randn(8))
    with torch.no_grad():
        want = module(*inputs)
    out = tmp_path / "exp"
    out.mkdir()
    info = export.export_package(module, inputs, out / "empty.pt2", device=device)
    for k, t in enumerate(inputs):
        np.save(out / f"empty.input_{k}.npy", t.numpy())
    for k, t in enumerate(want):
        np.save(out / f"empty.expected_{k}.npy", t.numpy())
    env = _env(
        AOTRT_ROBUST_PACKAGE=info["package"],
        AOTRT_ROBUST_INPUTS=",".join(str(out / f"empty.input_{k}.npy") for k in range(2)),
        AOTRT_ROBUST_EXPECTED=",".join(str(out / f"empty.expected_{k}.npy") for k in range(3)),
        AOTRT_ROBUST_LABEL="empty-input model",
    )
    statuses = _gtest(unit_tests, env, tmp_path, "RobustReal.MatchesEager:RobustReal.EmptyInputWithNullData")
    assert set(statuses.values()) == {"OK"}, statuses


# ------------------------------------------------------------------------------------------
# Bad packages made from a real one, through the CLI
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [REAL_MODEL])
def test_real_bad_packages(name, exported, aotrt_bin, tmp_path, fresh_tmpdir):
    info = exported(name)
    pkg = Path(info["package"])
    inputs = sorted(Path(info["out_dir"]).glob(f"{name}.input_*.npy"))
    blob_size = next(s for f, s in info["files"] if f.endswith(".wrapper_weights.blob"))

    # The unchanged package runs (control), and leaves nothing behind.
    proc = _run([aotrt_bin, "run", pkg, *sum((["--input", str(p)] for p in inputs), []),
                 "--output-dir", tmp_path / "ok"], _env(fresh_tmpdir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _listing(fresh_tmpdir) == []

    def blob(change):
        return lambda m, d: [(m, change(d) if m.endswith(".wrapper_weights.blob") else d)]

    _expect_refused(aotrt_bin, _rewrite(pkg, tmp_path / "short.pt2", blob(lambda d: d[:-64])), fresh_tmpdir,
                    f"{name}: weights blob truncated by 64 bytes",
                    [f"has {blob_size - 64} bytes but the model's constants take {blob_size}"], inputs)
    _expect_refused(aotrt_bin, _rewrite(pkg, tmp_path / "padded.pt2", blob(lambda d: d + bytes(64))), fresh_tmpdir,
                    f"{name}: weights blob padded by 64 bytes",
                    [f"has {blob_size + 64} bytes but the model .so was exported with a {blob_size}-byte blob"], inputs)
    # One byte of the stored blob flipped, the archive's CRC left as it was: refused as corrupt
    # (the blob is read from the archive with its CRC checked), never loaded as weights.
    with zipfile.ZipFile(pkg) as z:
        entry = next(i for i in z.infolist() if i.filename.endswith(".wrapper_weights.blob"))
    flipped = bytearray(pkg.read_bytes())
    name_len, extra_len = struct.unpack_from("<HH", flipped, entry.header_offset + 26)
    flipped[entry.header_offset + 30 + name_len + extra_len + entry.file_size // 2] ^= 0xFF
    (tmp_path / "flipped.pt2").write_bytes(bytes(flipped))
    _expect_refused(aotrt_bin, tmp_path / "flipped.pt2", fresh_tmpdir, f"{name}: a weights blob byte flipped",
                    ["wrapper_weights.blob' is corrupt"], inputs)
    _expect_refused(aotrt_bin, _rewrite(pkg, tmp_path / "noblob.pt2",
                                        lambda m, d: [] if m.endswith(".blob") else [(m, d)]), fresh_tmpdir,
                    f"{name}: weights blob missing", ["needs a weights blob"], inputs)

    raw = pkg.read_bytes()
    cut = tmp_path / "cut.pt2"
    cut.write_bytes(raw[: len(raw) // 2])
    _expect_refused(aotrt_bin, cut, fresh_tmpdir, f"{name}: package truncated to half", ["is a truncated zip archive"], inputs)

    # Entry names that would escape the extraction folder, added to the real package.
    escape = tmp_path / "escape_marker.so"
    for label, entry in [("..", "../../escape_marker.so"), ("absolute path", str(escape))]:
        bad = _rewrite(pkg, tmp_path / "unsafe.pt2", lambda m, d: [(m, d)])
        with zipfile.ZipFile(bad, "a") as z:
            z.writestr(zipfile.ZipInfo(entry), b"#!/bin/sh\necho pwned\n")
        _expect_refused(aotrt_bin, bad, fresh_tmpdir, f"{name}: extra entry named with {label}",
                        [f"entry name '{entry}'", "refusing the archive"], inputs)
        for where in (fresh_tmpdir.parent / "escape_marker.so", fresh_tmpdir.parent.parent / "escape_marker.so", escape):
            assert not where.exists(), f"{label}: {where} was created"

    # The real .so, changed: another architecture, and an import aotrt does not define.
    def so_patch(fn):
        return lambda m, d: [(m, fn(bytearray(d)) if _member_suffix(m, ".wrapper.so") else d)]

    def arm(b: bytearray) -> bytes:
        b[18:20] = struct.pack("<H", 183)  # EM_AARCH64
        return bytes(b)

    _expect_refused(aotrt_bin, _rewrite(pkg, tmp_path / "arm.pt2", so_patch(arm)), fresh_tmpdir,
                    f"{name}: .so marked aarch64", ["the model .so is built for aarch64"], inputs)

    def rename_import(b: bytearray) -> bytes:
        old = b"aoti_torch_cpu_convolution\0"
        at = b.find(old)
        assert at > 0, "the .so does not import aoti_torch_cpu_convolution"
        b[at : at + len(old)] = b"aoti_torch_cpu_convolutioz\0"
        return bytes(b)

    _expect_refused(aotrt_bin, _rewrite(pkg, tmp_path / "shim.pt2", so_patch(rename_import)), fresh_tmpdir,
                    f"{name}: .so importing a shim aotrt lacks",
                    ["aoti_* symbol(s) this aotrt does not provide: aoti_torch_cpu_convolutioz"], inputs)

    # A C-order input for a channels-last model, passed as it is.
    _expect_refused(aotrt_bin, pkg, fresh_tmpdir, f"{name}: C-order input for a channels-last model",
                    ["input 0 ('", "expected float32 [1, 64, 40, 40] with strides [102400, 1, 2560, 64], "
                     "got float32 [1, 64, 40, 40] with strides [102400, 1600, 40, 1]"],
                    inputs, extra=["--keep-input-layout"], area="bad inputs")
    wrong = tmp_path / "wrong_dtype.npy"
    np.save(wrong, np.load(inputs[0]).astype(np.float64))
    _expect_refused(aotrt_bin, pkg, fresh_tmpdir, f"{name}: float64 input for a float32 model",
                    ["input 0 ('", "is float64 but the model expects float32", "--input FILE:float32"],
                    [wrong], area="bad inputs")
    small = tmp_path / "wrong_shape.npy"
    np.save(small, np.load(inputs[0])[:, :32])
    _expect_refused(aotrt_bin, pkg, fresh_tmpdir, f"{name}: input of the wrong shape",
                    ["got float32 [1, 32, 40, 40]"], [small], area="bad inputs")


def test_libtorch_linked_package_is_refused(aotrt_bin, tmp_path, fresh_tmpdir):
    """A package exported with torch's default link_libtorch=True needs libtorch: refused
    before dlopen, saying how to re-export."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
    x = torch.randn(2, 8)
    info = export.export_package(module, (x,), tmp_path / "linked.pt2",
                                 extra_options={"aot_inductor.link_libtorch": True})
    assert any(lib.startswith(("libtorch", "libc10")) for lib in info["needed"]), info["needed"]
    np.save(tmp_path / "x.npy", x.numpy())
    text = _expect_refused(aotrt_bin, Path(info["package"]), fresh_tmpdir,
                           "package exported with link_libtorch=True (torch's default)",
                           ["(DT_NEEDED): it was exported with libtorch linked in",
                            'inductor_configs={"aot_inductor.link_libtorch": False}'], [tmp_path / "x.npy"])
    assert "libtorch" in text
    # `aotrt info` reports the same without loading.
    proc = _run([aotrt_bin, "info", info["package"]], _env(fresh_tmpdir))
    assert "link_libtorch" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert _listing(fresh_tmpdir) == []


def test_appended_weights_bad_packages(aotrt_bin, tmp_path, fresh_tmpdir):
    """Weights torch appended to the .so (aot_inductor.force_mmap_weights=True here; torch's
    default above 2 GB; Note [Weights appended to the .so]), damaged: refused before the model
    reads them, naming what is wrong, TMPDIR left empty."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).eval()
    x = torch.randn(3, 64)
    with torch.no_grad():
        ep = torch.export.export(module, (x,))
        pkg = Path(torch._inductor.aoti_compile_and_package(
            ep, package_path=str(tmp_path / "appended.pt2"),
            inductor_configs={"aot_inductor.link_libtorch": False, "aot_inductor.force_mmap_weights": True}))
    np.save(tmp_path / "x.npy", x.numpy())
    inputs = [tmp_path / "x.npy"]
    proc = _run([aotrt_bin, "run", pkg, "--input", inputs[0], "--output-dir", tmp_path / "ok"], _env(fresh_tmpdir))
    assert proc.returncode == 0, proc.stdout + proc.stderr  # control
    with torch.no_grad():
        np.testing.assert_allclose(np.load(tmp_path / "ok" / "output_0.npy"), module(x).numpy(), atol=1e-5, rtol=1e-5)

    def so(change):
        return lambda m, d: [(m, change(d) if _member_suffix(m, ".wrapper.so") else d)]

    _expect_refused(aotrt_bin, _rewrite(pkg, tmp_path / "so_cut.pt2", so(lambda d: d[:-64])), fresh_tmpdir,
                    "appended weights: .so entry truncated by 64 bytes",
                    ["does not hold the weights torch appended to it", "truncated or padded"], inputs)
    _expect_refused(aotrt_bin, _rewrite(pkg, tmp_path / "so_magic.pt2", so(lambda d: d[:-1] + bytes([d[-1] ^ 0xFF]))),
                    fresh_tmpdir, "appended weights: wrong magic number",
                    ["the magic number at the end of its appended weights is not the one its constants record"],
                    inputs)
    # One weight byte flipped in place, the archive's CRC left as it was: refused as corrupt (the
    # weights are mapped from the .pt2, so aotrt checks the entry's CRC itself).
    with zipfile.ZipFile(pkg) as z:
        entry = next(i for i in z.infolist() if _member_suffix(i.filename, ".wrapper.so"))
    flipped = bytearray(pkg.read_bytes())
    name_len, extra_len = struct.unpack_from("<HH", flipped, entry.header_offset + 26)
    flipped[entry.header_offset + 30 + name_len + extra_len + entry.file_size - 4096] ^= 0xFF
    (tmp_path / "so_flipped.pt2").write_bytes(bytes(flipped))
    _expect_refused(aotrt_bin, tmp_path / "so_flipped.pt2", fresh_tmpdir, "appended weights: a weight byte flipped",
                    ["wrapper.so' is corrupt"], inputs)
