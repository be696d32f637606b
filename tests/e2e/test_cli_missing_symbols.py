"""`aotrt info` and `aotrt run` on a real package that needs a shim aotrt lacks.

torch.sort has no inductor lowering on the CPU: the generated code calls the
fallback `aoti_torch_cpu_sort_stable`, which aotrt does not provide. `info`
must name it as MISSING (and still describe the package); `run` must refuse
before loading the .so, naming it.
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


class SortModel(torch.nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=-1, stable=True).values * 2


@pytest.fixture(scope="module")
def sort_package(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("missing")
    x = torch.randn(4, 16)
    pkg = out / "sort.pt2"
    export.export_package(SortModel(), (x,), pkg)
    np.save(out / "x.npy", x.numpy())
    return pkg, out / "x.npy"


def _missing_in_package(pkg: Path) -> list[str]:
    # What the .so really imports, read by our own ELF check's twin: nm.
    import zipfile, tempfile
    with zipfile.ZipFile(pkg) as z, tempfile.TemporaryDirectory() as d:
        so = [n for n in z.namelist() if n.endswith(".so")][0]
        path = z.extract(so, d)
        out = subprocess.run(["nm", "-D", "--undefined-only", path], capture_output=True, text=True).stdout
    return sorted({l.split()[-1] for l in out.splitlines() if "aoti_torch_cpu_sort" in l})


def test_info_names_missing_symbol(aotrt_bin, sort_package):
    pkg, _ = sort_package
    wanted = _missing_in_package(pkg)
    assert wanted, "the export no longer calls a sort fallback; pick another op aotrt lacks"
    proc = subprocess.run([str(aotrt_bin), "info", str(pkg)], capture_output=True, text=True, timeout=120)
    text = proc.stdout + proc.stderr
    for name in wanted:
        assert any(name in l and "MISSING" in l for l in text.splitlines()), (
            f"{name} not reported MISSING:\n{text}")
    assert any(l.strip().startswith("aoti_torch_") and "provided" in l for l in text.splitlines())


def test_run_refuses_naming_missing_symbol(aotrt_bin, sort_package, tmp_path):
    pkg, x = sort_package
    wanted = _missing_in_package(pkg)
    proc = subprocess.run(
        [str(aotrt_bin), "run", str(pkg), "--input", str(x), "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    assert "aotrt: error:" in proc.stderr
    for name in wanted:
        assert name in proc.stderr, proc.stderr
    assert not list(tmp_path.glob("output_*.npy"))
