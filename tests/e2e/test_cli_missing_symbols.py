"""`aotrt info` and `aotrt run` on a real package that needs a shim aotrt lacks.

The package is the first of CANDIDATES whose generated code calls a fallback
`aoti_torch_cpu_*` that libaotrt.so does not export (as ops get served, the
next candidate takes over). `info` must name it as MISSING, or as NOT SERVED with
the reason when aotrt declines it on purpose (src/shim/ops/not_served.def: the
observer below is training-only), and still describe the package; `run` must
refuse before loading the .so, naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from aotrt_tools import export  # noqa: E402


class Op(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x) * 2


def _fp8_mm(x):
    # An fp8 matmul on the CPU (torch 2.13 emits aoti_torch_cpu__scaled_mm_out). Served since
    # 2026-12-03, as histogram and embedding_bag, the earlier candidates, are.
    f8 = x.to(torch.float8_e4m3fn)
    one = torch.ones((), dtype=torch.float32)
    return torch._scaled_mm(f8, f8.t(), scale_a=one, scale_b=one, out_dtype=torch.float32)


class FakeQuantObserver(torch.nn.Module):
    """Quantization-aware training's observer and fake quantization in one op: torch 2.13 emits
    aoti_torch_cpu__fused_moving_avg_obs_fq_helper_functional, which aotrt does not serve."""

    def __init__(self):
        super().__init__()
        self.register_buffer("observer_on", torch.tensor([1], dtype=torch.long))
        self.register_buffer("fake_quant_on", torch.tensor([1], dtype=torch.long))
        self.register_buffer("running_min", torch.tensor([float("inf")]))
        self.register_buffer("running_max", torch.tensor([float("-inf")]))
        self.register_buffer("scale", torch.tensor([1.0]))
        self.register_buffer("zero_point", torch.tensor([0], dtype=torch.int))

    def forward(self, x):
        return torch.fused_moving_avg_obs_fake_quant(
            x, self.observer_on, self.fake_quant_on, self.running_min, self.running_max,
            self.scale, self.zero_point, 0.01, 0, 255, -1) * 2


# name -> the module to export; the first whose package needs an unserved shim is used.
CANDIDATES = {
    "scaled_mm_fp8": lambda: Op(_fp8_mm),
    "fake_quant_observer": FakeQuantObserver,
}


def _imported_ops(pkg: Path) -> set[str]:
    # What the .so really imports (nm -D), not what aotrt says of it.
    return {n for n in export.package_imports(pkg) if n.startswith("aoti_torch_cpu_")}


def _served(aotrt_bin: Path) -> set[str]:
    lib = aotrt_bin.parent / "libaotrt.so"
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    return {l.split()[-1] for l in out.splitlines() if l.strip()}


@pytest.fixture(scope="module")
def missing_package(tmp_path_factory, aotrt_bin) -> tuple[Path, Path, list[str]]:
    out = tmp_path_factory.mktemp("missing")
    x = torch.randn(16, 16)
    np.save(out / "x.npy", x.numpy())
    served = _served(aotrt_bin)
    for name, f in CANDIDATES.items():
        pkg = out / f"{name}.pt2"
        export.export_package(f(), (x,), pkg)
        missing = sorted(_imported_ops(pkg) - served)
        if missing:
            return pkg, out / "x.npy", missing
    pytest.skip(f"every candidate's shims are served now ({', '.join(CANDIDATES)}): nothing left to "
                "refuse; add a candidate that needs a shim aotrt lacks")


def test_info_names_missing_symbol(aotrt_bin, missing_package):
    pkg, _, wanted = missing_package
    proc = subprocess.run([str(aotrt_bin), "info", str(pkg)], capture_output=True, text=True, timeout=120)
    text = proc.stdout + proc.stderr
    for name in wanted:
        line = next((l for l in text.splitlines() if l.strip().startswith(name + " ")), "")
        declined = line.split("NOT SERVED:", 1)[1].strip() if "NOT SERVED:" in line else ""
        assert line.split()[-1:] == ["MISSING"] or declined, (
            f"{name} not reported MISSING or NOT SERVED with a reason:\n{text}")
    assert any(l.strip().startswith("aoti_torch_") and "provided" in l for l in text.splitlines())


def test_run_refuses_naming_missing_symbol(aotrt_bin, missing_package, tmp_path):
    pkg, x, wanted = missing_package
    proc = subprocess.run(
        [str(aotrt_bin), "run", str(pkg), "--input", str(x), "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    assert "aotrt: error:" in proc.stderr
    for name in wanted:
        assert name in proc.stderr, proc.stderr
    assert not list(tmp_path.glob("output_*.npy"))
