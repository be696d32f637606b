"""Large packages as torch writes them (issue 28, item 1), on small models.

Above 2 GB of constants inductor appends the weights to the model .so and the generated code
maps them from its own file (Note [Weights appended to the .so] in src/runtime/model_mmap.h);
aot_inductor.force_mmap_weights=True does the same for a small model, which is how these tests
reach that layout. Each of torch's layouts, exported by torch 2.13's own flow
(torch.export + aoti_compile_and_package, no aotrt_tools metadata), runs with `aotrt run` and
matches eager: the default (weights linked into the .so), force_mmap_weights (appended),
package_constants_on_disk_format="binary_blob", "pickle_weights" with and without
package_constants_in_so; and a model that mutates a buffer (a KV cache written with
index_copy_) with force_mmap_weights. `aotrt info` names each layout.

Corrupt appended weights (a truncated .so entry, a wrong magic number, a flipped byte) are
refused in tests/e2e/test_robust_real.py (test_appended_weights_bad_packages).

CUDA: AOTRT_LARGE_DEVICES=cpu,cuda on a CUDA build with a CUDA torch (the layouts and the KV
cache exported for cuda too; the model copies its weights to the device with cudaMemcpy).
"""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

ATOL, RTOL = 1e-5, 1e-5
CUDA_TOL = 1e-4  # fp32 on CUDA, TF32 off on both sides
DEVICES = [d for d in os.environ.get("AOTRT_LARGE_DEVICES", "cpu").split(",") if d]

BASE = {"aot_inductor.link_libtorch": False}
LAYOUTS = {
    # name: (inductor options, the layout `aotrt info` names)
    "default": ({}, "embedded"),
    "force_mmap_weights": ({"aot_inductor.force_mmap_weights": True}, "appended"),
    "binary_blob": ({"aot_inductor.package_constants_on_disk_format": "binary_blob"}, "binary_blob"),
    "pickle_weights": ({"aot_inductor.package_constants_on_disk_format": "pickle_weights",
                        "aot_inductor.package_constants_in_so": False}, "pickle_weights"),
    # torch's default keeps a copy in the .so as well, which aotrt uses.
    "pickle_weights_in_so": ({"aot_inductor.package_constants_on_disk_format": "pickle_weights"},
                             "embedded"),
}


class Net(torch.nn.Module):
    """Two linears, a buffer and a conv: weights of 1, 2 and 4 dims, not all 64-byte multiples."""

    def __init__(self):
        super().__init__()
        self.lin1 = torch.nn.Linear(24, 40)
        self.lin2 = torch.nn.Linear(40, 7)
        self.conv = torch.nn.Conv2d(3, 5, 3)
        self.register_buffer("scale", torch.rand(40) + 0.5)

    def forward(self, x, y):
        return self.lin2(torch.relu(self.lin1(x)) * self.scale), self.conv(y).sigmoid()


class KvCache(torch.nn.Module):
    """One decode step's cache update: the new row written in place with index_copy_ into a
    buffer, then attention-like reads of the whole cache (the graph mutates a constant)."""

    def __init__(self, length=16, dim=32):
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)
        self.register_buffer("cache", torch.randn(length, dim))

    def forward(self, x, pos):
        self.cache.index_copy_(0, pos, self.proj(x))
        scores = torch.softmax(self.cache @ x[0], dim=0)
        return scores @ self.cache, self.cache.sum(0)


def _export(module, inputs, path: Path, options: dict) -> Path:
    with torch.no_grad():
        ep = torch.export.export(module, tuple(inputs))
        return Path(torch._inductor.aoti_compile_and_package(
            ep, package_path=str(path), inductor_configs={**BASE, **options}))


def _run(cmd, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("AOTRT_CUDNN_ALLOW_TF32", "0")  # the references are exact fp32
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, env=env)


def _inputs():
    g = torch.Generator().manual_seed(1)
    return torch.randn(4, 24, generator=g), torch.randn(2, 3, 9, 9, generator=g)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("large")


def _eager(module, inputs):
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.no_grad():
        return [t.cpu().numpy() for t in module(*inputs)]


@pytest.fixture(scope="module", params=DEVICES)
def net(request, work):
    """(device, module, inputs on the device, eager outputs); the inputs as .npy in work/."""
    device = request.param
    torch.manual_seed(0)
    module = Net().eval().to(device)
    inputs = tuple(t.to(device) for t in _inputs())
    for k, t in enumerate(_inputs()):
        np.save(work / f"input_{k}.npy", t.numpy())
    return device, module, inputs, _eager(module, inputs)


def _check_outputs(out: Path, expected, device: str = "cpu") -> None:
    tol = (ATOL, RTOL) if device == "cpu" else (CUDA_TOL, CUDA_TOL)
    for k, want in enumerate(expected):
        got = np.load(out / f"output_{k}.npy")
        assert got.shape == want.shape
        diff = float(np.max(np.abs(got - want)))
        assert np.allclose(got, want, atol=tol[0], rtol=tol[1]), f"output {k}: max abs diff {diff}"
        print(f"{device} output {k}: max abs diff {diff:.3g}")


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layout_runs_and_matches_eager(layout, net, work, aotrt_bin, tmp_path):
    device, module, inputs, expected = net
    options, named = LAYOUTS[layout]
    pkg = _export(module, inputs, work / f"{layout}_{device}.pt2", options)
    with zipfile.ZipFile(pkg) as z:  # torch stores every entry: aotrt maps them in place
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}

    info = _run([aotrt_bin, "info", pkg])
    assert info.returncode == 0, info.stderr
    layout_line = next(line for line in info.stdout.splitlines() if line.startswith("weights layout:"))
    assert layout_line.startswith(f"weights layout: {named}, "), layout_line
    if named in ("appended", "binary_blob", "pickle_weights"):
        assert "read in place from the package" in layout_line, layout_line

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "out"
    r = _run([aotrt_bin, "run", pkg, "-i", work / "input_0.npy", "-i", work / "input_1.npy", "-o", out],
             tmpdir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "extracting the whole" not in r.stderr, r.stderr  # no fallback to a full extraction
    assert list(tmpdir.iterdir()) == [], "the private folder was left behind"
    _check_outputs(out, expected, device)


def test_appended_weights_are_mapped_not_extracted(work, unit_tests, tmp_path):
    """AppendedWeightsReal.* (tests/unit/test_appended_weights_real.cpp) on the force_mmap_weights
    package: the .so written to TMPDIR is sparse past its ELF part, the model's weights are a
    mapping of the .pt2 whose pages are dropped once loaded, and unloading unmaps it."""
    torch.manual_seed(0)
    big = torch.nn.Sequential(torch.nn.Linear(512, 600), torch.nn.ReLU()).eval()  # 1.2 MB of weights
    pkg = _export(big, (torch.randn(2, 512),), work / "appended_1mb.pt2", LAYOUTS["force_mmap_weights"][0])
    env = dict(os.environ, AOTRT_APPENDED_PACKAGE=str(pkg))
    report = tmp_path / "gtest.json"
    r = subprocess.run([str(unit_tests), "--gtest_filter=AppendedWeightsReal.*", f"--gtest_output=json:{report}"],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert "[  SKIPPED ]" not in r.stdout and "[  PASSED  ]" in r.stdout, r.stdout[-3000:]


@pytest.mark.parametrize("device", DEVICES)
def test_kv_cache_mutation_with_force_mmap_weights(device, work, aotrt_bin, tmp_path):
    torch.manual_seed(0)
    module = KvCache().eval()
    x = torch.randn(1, 32)
    pos = torch.tensor([5])
    ref = KvCache().eval()
    ref.load_state_dict(module.state_dict())
    pkg = _export(module.to(device), (x.to(device), pos.to(device)), work / f"kv_{device}.pt2",
                  LAYOUTS["force_mmap_weights"][0])
    expected = _eager(ref.to(device), (x.to(device), pos.to(device)))  # a fresh cache, as the package's
    np.save(work / "kv_x.npy", x.numpy())
    np.save(work / "kv_pos.npy", pos.numpy())
    info = _run([aotrt_bin, "info", pkg])
    assert "weights layout: appended" in info.stdout, info.stdout + info.stderr
    out = tmp_path / "kv_out"
    r = _run([aotrt_bin, "run", pkg, "-i", work / "kv_x.npy", "-i", work / "kv_pos.npy", "-o", out])
    assert r.returncode == 0, r.stdout + r.stderr
    _check_outputs(out, expected, device)


def test_whole_extraction_path_matches_eager(net, work, aotrt_bin, tmp_path):
    """AOTRT_EXTRACT_APPENDED_WEIGHTS=1: the path taken when the model's mmap cannot be renamed
    (the whole .so extracted, torch's own code reading it) gives the same result."""
    device, module, inputs, expected = net
    pkg = work / f"force_mmap_weights_{device}.pt2"
    if not pkg.exists():
        pkg = _export(module, inputs, pkg, LAYOUTS["force_mmap_weights"][0])
    out = tmp_path / "out"
    env = dict(os.environ, AOTRT_EXTRACT_APPENDED_WEIGHTS="1")
    r = subprocess.run([str(aotrt_bin), "run", str(pkg), "-i", str(work / "input_0.npy"),
                        "-i", str(work / "input_1.npy"), "-o", str(out)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    _check_outputs(out, expected, device)
