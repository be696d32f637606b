"""What torch's default CPU export options leave slow, as aotrt reports it (issue 32).

Note [CPU export advice] (src/runtime/preflight.cpp) on real packages of torch 2.13's own flow
(torch.export + aoti_compile_and_package), of two kinds:
- "defaults": {"aot_inductor.link_libtorch": False} alone, exported in a fresh process with an
  empty inductor cache, as on a new user's machine: inductor's vector-ISA probe cannot load
  without libtorch, so the kernels come out scalar (Note [CPU vectorization and Sleef]);
- "readme": the README's options, cpp.vec_isa_ok=True and freezing=True.
Two models: ConvBN (conv-bn-relu twice: scalar kernels and unfolded batch norms by the defaults,
neither by the README's options) and LinearBN (a BatchNorm1d after a Linear: freezing has no
convolution to fold it into and keeps its kernel, so only the scalar kernels are reported, and
nothing once the kernels are vectorized). Each case first checks that torch made the package it
is about (else it proves nothing). `aotrt info` lists the advice, a load prints it once on
stderr, `aotrt bench` beside its figures; outputs still match eager.

Item 3 of the issue: the demo's model (linear_chunk_cat_last_dim, exported with aotrt's options)
warned "the CPU kernels are scalar" on AVX-512 machines. Exported here for AVX-512 (inductor's
ISA forced; the package is only read, never run), its 5-element kernels are the scalar tail of
a vectorized loop: Note [Which CPU kernels a package has] (python/aotrt_tools/export.py) reads
the ISA instead of the source, and the demo's whole output holds no warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))  # also as an export worker
from aotrt_tools import export  # noqa: E402

OPTIONS = {
    "defaults": {"aot_inductor.link_libtorch": False},
    "readme": {"aot_inductor.link_libtorch": False, "cpp.vec_isa_ok": True, "freezing": True},
}
ATOL, RTOL = 1e-4, 1e-4  # folding a batch norm changes the arithmetic (test_cpu_freezing.py)
SCALAR, FOLD = "cpp.vec_isa_ok=True", "freezing=True"


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c2, self.b2 = nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16)

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))


class LinearBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l, self.bn = nn.Linear(32, 64), nn.BatchNorm1d(64)

    def forward(self, x):
        return torch.relu(self.bn(self.l(x)))


MODELS = {"convbn": (ConvBN, (2, 3, 24, 24)), "linbn": (LinearBN, (8, 32))}


def _build(name: str) -> tuple[nn.Module, torch.Tensor]:
    make, shape = MODELS[name]
    torch.manual_seed(0)
    m = make().eval()
    for bn in (x for x in m.modules() if isinstance(x, nn.modules.batchnorm._BatchNorm)):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    return m, torch.randn(*shape)


def _export_kind(kind: str, out: Path) -> None:
    """In this process (a fresh one): every model of MODELS with OPTIONS[kind], or the demo's
    model for AVX-512 (kind "avx512")."""
    out.mkdir(parents=True, exist_ok=True)
    if kind == "avx512":
        from torch._inductor import cpu_vec_isa

        cpu_vec_isa.pick_vec_isa = lambda: cpu_vec_isa.VecAVX512()  # what an AVX-512 machine picks
        export.export_model(out, name="linear_chunk_cat_last_dim")
        return
    for name in MODELS:
        module, x = _build(name)
        with torch.no_grad():
            ep = torch.export.export(module, (x,))
            torch._inductor.aoti_compile_and_package(ep, package_path=str(out / f"{name}.pt2"),
                                                     inductor_configs=dict(OPTIONS[kind]))


def _packages(kind: str, scratch: Path) -> Path:
    """The folder of kind's packages (and export.log, the export's output), exported in a
    fresh process; with AOTRT_E2E_CACHE set, kept there, keyed by this file's and export.py's
    source, torch's version and the kind."""
    cache = os.environ.get("AOTRT_E2E_CACHE")
    sources = Path(__file__).read_bytes() + Path(export.__file__).read_bytes()
    key = hashlib.sha256(sources + torch.__version__.encode() + kind.encode()).hexdigest()[:16]
    folder = (Path(cache) / "export_advice" / key if cache else scratch) / kind
    if (folder / "export.log").exists():
        return folder
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    env = dict(os.environ)
    if kind == "defaults":  # a new user's empty inductor cache: no probe left by torch.compile
        env["TORCHINDUCTOR_CACHE_DIR"] = str(partial / "inductor_cache")
    r = subprocess.run([sys.executable, __file__, kind, str(partial)], capture_output=True,
                       text=True, timeout=1800, env=env)
    assert r.returncode == 0, r.stderr[-4000:]
    (partial / "export.log").write_text(r.stdout + r.stderr)
    shutil.rmtree(partial / "inductor_cache", ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("export_advice")
    made: dict[str, Path] = {}

    def get(kind: str, name: str | None = None) -> Path:
        if kind not in made:
            made[kind] = _packages(kind, scratch)
        return made[kind] / f"{name}.pt2" if name else made[kind]

    return get


def _member(pkg: Path, suffix: str) -> str:
    with zipfile.ZipFile(pkg) as z:
        return z.read(next(n for n in z.namelist() if n.endswith(suffix))).decode()


def _isa(pkg: Path) -> str:
    return json.loads(_member(pkg, ".wrapper_metadata.json")).get("AOTI_CPU_ISA", "")


def _kernels(pkg: Path) -> list[str]:
    return sorted(set(re.findall(r"void\s+(cpp_fused_\w+)\(", _member(pkg, ".wrapper.cpp"))))


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kw)


def _advice(aotrt_bin, pkg: Path) -> list[str]:
    """The `export advice` lines of `aotrt info`."""
    r = _run([aotrt_bin, "info", pkg])
    assert r.returncode == 0, r.stderr
    m = re.search(r"^export advice \((\d+)\):\n((?:  .*\n)*)", r.stdout, re.M)
    assert m, r.stdout
    lines = [line.strip() for line in m.group(2).splitlines()]
    assert len(lines) == int(m.group(1)), r.stdout
    assert "aotrt: note" not in r.stderr, "info lists the advice; its load does not print it too"
    return lines


def test_defaults_are_reported_with_the_options_that_fix_them(aotrt_bin, packages):
    pkg = packages("defaults", "convbn")
    # What torch made: no vector ISA, a batch-norm kernel, plain convolutions.
    assert _isa(pkg) == "INVALID_VEC_ISA", "torch's defaults on an empty inductor cache vectorized"
    assert any("batch_norm" in k for k in _kernels(pkg)), _kernels(pkg)
    assert "aoti_torch_cpu_convolution" in export.package_imports(pkg)
    advice = _advice(aotrt_bin, pkg)
    assert len(advice) == 2, advice
    assert "scalar" in advice[0] and SCALAR in advice[0], advice
    assert "batch norms" in advice[1] and FOLD in advice[1], advice
    assert export.cpu_kernels(pkg) == "scalar"  # the Python rule agrees


def test_readme_options_leave_nothing_to_report(aotrt_bin, packages):
    pkg = packages("readme", "convbn")
    assert _isa(pkg) not in ("", "INVALID_VEC_ISA"), _isa(pkg)
    imports = export.package_imports(pkg)
    assert "aoti_torch_cpu_convolution" not in imports, "freezing left plain convolutions"
    assert not any("batch_norm" in k for k in _kernels(pkg)), _kernels(pkg)
    assert _advice(aotrt_bin, pkg) == []
    assert export.cpu_kernels(pkg) == "vectorized"


def test_a_batch_norm_freezing_cannot_fold_is_not_reported(aotrt_bin, packages):
    """LinearBN: by the defaults only the scalar kernels; frozen, its batch norm still has a
    kernel (nothing to fold it into) and nothing is reported."""
    defaults, readme = packages("defaults", "linbn"), packages("readme", "linbn")
    advice = _advice(aotrt_bin, defaults)
    assert len(advice) == 1 and SCALAR in advice[0], advice
    assert any("batch_norm" in k for k in _kernels(readme)), _kernels(readme)
    assert _advice(aotrt_bin, readme) == []


@pytest.mark.parametrize("kind", ["defaults", "readme"])
def test_load_says_it_once_on_stderr_and_runs_as_eager(aotrt_bin, packages, tmp_path, kind):
    module, x = _build("convbn")
    with torch.no_grad():
        want = module(x).numpy()
    np.save(tmp_path / "x.npy", x.numpy())
    pkg = packages(kind, "convbn")
    r = _run([aotrt_bin, "run", pkg, "-i", tmp_path / "x.npy", "-o", tmp_path / "out"])
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith(f"aotrt: note: {pkg}: ")]
    assert len(notes) == (2 if kind == "defaults" else 0), r.stderr
    got = np.load(tmp_path / "out" / "output_0.npy")
    diff = float(np.max(np.abs(got - want)))
    assert np.allclose(got, want, atol=ATOL, rtol=RTOL), f"{kind}: max abs diff {diff}"


def test_load_says_it_once_per_process(unit_tests, packages):
    """ExportAdviceReal.*: loads of one package in one process print it once."""
    env = dict(os.environ, AOTRT_EXPORT_ADVICE_PT2=str(packages("defaults", "convbn")))
    r = _run([unit_tests, "--gtest_filter=ExportAdviceReal.*"], env=env)
    assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-3000:]
    assert "[  PASSED  ] 1 test" in r.stdout and "SKIPPED" not in r.stdout, r.stdout[-4000:]


def test_bench_prints_it_beside_its_figures(aotrt_bin, packages):
    pkg = packages("defaults", "convbn")
    r = _run([aotrt_bin, "bench", pkg, "--warmup", "1", "--iters", "3"])
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.strip().startswith("export advice: ")]
    assert len(lines) == 2 and SCALAR in lines[0] and FOLD in lines[1], r.stdout
    assert "latency" in r.stdout and "aotrt: note" not in r.stderr, r.stderr
    r = _run([aotrt_bin, "bench", pkg, "--warmup", "1", "--iters", "3", "--json"])
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["export_advice"]) == 2
    r = _run([aotrt_bin, "bench", packages("readme", "convbn"), "--warmup", "1", "--iters", "3"])
    assert r.returncode == 0 and "export advice" not in r.stdout, r.stdout


def test_the_demo_model_for_avx512_is_not_called_scalar(packages):
    folder = packages("avx512")
    pkg = folder / "linear_chunk_cat_last_dim.pt2"
    kernels = _member(pkg, ".kernel.cpp")
    # What the old check saw: no at::vec anywhere, as each 5-element loop is only the scalar
    # tail of a 16-lane loop; but inductor generated the kernels for AVX-512.
    assert _isa(pkg) == "AVX512", _isa(pkg)
    assert "at::vec::Vectorized" not in kernels and "x0_tail" in kernels
    assert export.cpu_kernels(pkg) == "vectorized"
    assert "warning" not in (folder / "export.log").read_text().lower()


def test_demo_output_holds_no_warning(aotrt_bin):
    """What `bash scripts/bootstrap.sh` ends with: export, run, compare; nothing to warn about."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    r = subprocess.run([sys.executable, "-m", "aotrt_tools.demo", "--aotrt", str(aotrt_bin)],
                       capture_output=True, text=True, timeout=1200, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "OK" in r.stdout, out
    for word in ("warning", "aotrt: note", "error"):
        assert word not in out.lower(), out


if __name__ == "__main__":  # an export worker: KIND OUT_DIR
    _export_kind(sys.argv[1], Path(sys.argv[2]))
