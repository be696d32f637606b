"""Weights outside the package, and inputs given as a user would (issue 11, items 3 and 4).

Packages come from torch 2.13's own flow (torch.export + aoti_compile_and_package, no
aotrt_tools metadata), exported with aot_inductor.package_constants_in_so=False so that they
hold no weights (and, once, package_constants_on_disk_format="pickle_weights", whose pickled
weights aotrt reads in place). The weights go to aotrt as safetensors files written by the
`safetensors` package. Outputs are compared with eager PyTorch on the same weights.

The C++ cases (swap while serving, threads across swaps, borrowed arrays used in place, handle
accounting) live in tests/unit/test_weights_real.cpp (WeightsReal.*), run here on the package
this file exports. CUDA: AOTRT_WEIGHTS_DEVICES=cpu,cuda on a CUDA build with a CUDA torch
(scripts/gpu_weights.sh).
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

safetensors_torch = pytest.importorskip("safetensors.torch")

DEVICES = [d for d in os.environ.get("AOTRT_WEIGHTS_DEVICES", "cpu").split(",") if d]
ATOL, RTOL = 1e-5, 1e-5  # fp32 on the CPU: the same math up to reassociation in inductor's code
CUDA_TOL = 1e-4  # fp32 on CUDA, TF32 off on both sides: cuDNN/cuBLAS may pick other algorithms
BF16_ATOL, BF16_RTOL = 2e-2, 2e-2  # bf16 rounding of the intermediate products

OPTIONS = {
    "aot_inductor.link_libtorch": False,
    "aot_inductor.embed_kernel_binary": True,
    "aot_inductor.package_constants_in_so": False,
    # Inductor compiles 0-d and small 1-d constants into the code; a swappable model keeps them.
    "always_keep_tensor_constants": True,
}


class Net(torch.nn.Module):
    """Linear + a buffer + a conv on a channels-last input: weights of 2 and 4 dims."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 32)
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.register_buffer("scale", torch.rand(32) + 0.5)

    def forward(self, x, y):
        return torch.relu(self.lin(x)) * self.scale, self.conv(y)


def _inputs(device: str):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 16, generator=g)
    y = torch.randn(2, 3, 10, 10, generator=g).to(memory_format=torch.channels_last)
    return x.to(device), y.to(device)


def _weights(seed: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(seed)
    return {k: v.detach().clone().contiguous() for k, v in Net().state_dict().items()}


def _eager(weights: dict[str, torch.Tensor], device: str) -> list[np.ndarray]:
    net = Net().to(device).eval()
    net.load_state_dict(weights)
    torch.backends.cudnn.allow_tf32 = False  # exact fp32, as aotrt runs with AOTRT_CUDNN_ALLOW_TF32=0
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.no_grad():
        return [t.cpu().numpy() for t in net(*_inputs(device))]


def _tol(device: str) -> tuple[float, float]:
    return (ATOL, RTOL) if device == "cpu" else (CUDA_TOL, CUDA_TOL)


def _export(module, inputs, path: Path, options: dict) -> Path:
    with torch.no_grad():
        ep = torch.export.export(module, tuple(inputs))
        return Path(torch._inductor.aoti_compile_and_package(ep, package_path=str(path),
                                                             inductor_configs=dict(options)))


def _run(cmd, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.setdefault("AOTRT_CUDNN_ALLOW_TF32", "0")  # the references are exact fp32
    e.update({k: str(v) for k, v in env.items()})
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, env=e)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("weights")


@pytest.fixture(scope="module", params=DEVICES)
def net_package(request, work):
    """(device, package, folder with A/B safetensors, the inputs as .npy, eager outputs)."""
    device = request.param
    d = work / device
    d.mkdir()
    torch.manual_seed(0)  # export-time weights: neither set A nor set B
    pkg = _export(Net().to(device).eval(), _inputs(device), d / "net.pt2", OPTIONS)
    for name, seed in (("a", 10), ("b", 20)):
        w = _weights(seed)
        safetensors_torch.save_file(w, str(d / f"{name}.safetensors"))
        for k, out in enumerate(_eager(w, device)):
            np.save(d / f"expected_{name}_{k}.npy", out)
    for k, t in enumerate(_inputs("cpu")):
        np.save(d / f"input_{k}.npy", t.contiguous().numpy())  # dense: aotrt relays y
    return device, pkg, d


def _outputs(out_dir: Path, n: int) -> list[np.ndarray]:
    return [np.load(out_dir / f"output_{k}.npy") for k in range(n)]


def _close(got, want, atol=ATOL, rtol=RTOL) -> float:
    assert got.shape == want.shape
    diff = float(np.max(np.abs(got - want))) if got.size else 0.0
    assert np.allclose(got, want, atol=atol, rtol=rtol), f"max abs diff {diff}"
    return diff


def test_run_with_safetensors_matches_eager(aotrt_bin, net_package):
    device, pkg, d = net_package
    for name in ("a", "b"):
        out = d / f"out_{name}"
        r = _run([aotrt_bin, "run", pkg, "--weights", d / f"{name}.safetensors",
                  "-i", d / "input_0.npy", "-i", d / "input_1.npy", "-o", out])
        assert r.returncode == 0, r.stderr
        for k, got in enumerate(_outputs(out, 2)):
            print(f"weights {device} set {name} output {k}", "max abs diff",
                  _close(got, np.load(d / f"expected_{name}_{k}.npy"), *_tol(device)))


def test_bench_with_weights(aotrt_bin, net_package):
    _, pkg, d = net_package
    r = _run([aotrt_bin, "bench", pkg, "--weights", d / "a.safetensors", "--iters", "5",
              "--warmup", "1", "--json"])
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    # Random inputs of the layout the generated source's input checks give.
    assert [i["strides"] for i in report["inputs"]] == [[16, 1], [300, 1, 30, 3]], report["inputs"]


def test_info_lists_constants_of_a_package_without_weights(aotrt_bin, net_package):
    _, pkg, _ = net_package
    r = _run([aotrt_bin, "info", pkg])
    assert r.returncode == 0, r.stderr
    assert "weights: none" in r.stdout
    for line in ("float32 [32, 16] strides [16, 1]", "(lin.weight)", "(conv.weight)", "scale  float32 [32]"):
        assert line in r.stdout, r.stdout


def test_no_weights_is_refused_with_the_way_to_give_them(aotrt_bin, net_package):
    _, pkg, d = net_package
    r = _run([aotrt_bin, "run", pkg, "-i", d / "input_0.npy", "-i", d / "input_1.npy", "-o", d / "x"])
    assert r.returncode == 1
    assert "needs a weights blob" in r.stderr and "--weights FILE" in r.stderr, r.stderr


def test_mismatches_are_listed_and_nothing_loads(aotrt_bin, net_package):
    _, pkg, d = net_package
    w = _weights(10)
    w["lin.weight"] = w["lin.weight"].double()  # dtype
    w["conv.weight"] = w["conv.weight"][:, :, :2, :].contiguous()  # sizes
    del w["scale"]  # missing
    w["extra"] = torch.zeros(3)  # not a constant
    bad = d / "bad.safetensors"
    safetensors_torch.save_file(w, str(bad))
    r = _run([aotrt_bin, "run", pkg, "--weights", bad, "-i", d / "input_0.npy", "-i", d / "input_1.npy",
              "-o", d / "bad_out"])
    assert r.returncode == 1
    for needle in ("4 problems; nothing was loaded",
                   "'lin.weight' is float64, the model expects float32",
                   "'conv.weight' has sizes [8, 3, 2, 3], the model expects [8, 3, 3, 3]",
                   "'scale' (float32 [32]) is missing",
                   "'extra' is not a constant of this model"):
        assert needle in r.stderr, r.stderr
    assert not (d / "bad_out").exists()
    # --weights-allow-unused skips the extra name only.
    r = _run([aotrt_bin, "run", pkg, "--weights", bad, "--weights-allow-unused", "-i", d / "input_0.npy",
              "-i", d / "input_1.npy", "-o", d / "bad_out"])
    assert r.returncode == 1 and "3 problems" in r.stderr and "'extra'" not in r.stderr, r.stderr


def test_truncated_safetensors_is_refused(aotrt_bin, net_package):
    _, pkg, d = net_package
    data = (d / "a.safetensors").read_bytes()
    cut = d / "cut.safetensors"
    cut.write_bytes(data[: len(data) - 100])
    r = _run([aotrt_bin, "run", pkg, "--weights", cut, "-i", d / "input_0.npy", "-i", d / "input_1.npy",
              "-o", d / "cut_out"])
    assert r.returncode == 1 and "fall outside the" in r.stderr, r.stderr


def test_swap_and_threads_cpp(unit_tests, net_package):
    """WeightsReal.* on this package: swap while serving, threads across swaps, in place."""
    device, pkg, d = net_package
    atol, rtol = _tol(device)
    env = dict(AOTRT_WEIGHTS_PACKAGE=pkg, AOTRT_WEIGHTS_DIR=d, AOTRT_WEIGHTS_ATOL=atol,
               AOTRT_WEIGHTS_RTOL=rtol)
    r = _run([unit_tests, "--gtest_filter=WeightsReal.*"], **env)
    assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-3000:]
    assert "[  PASSED  ]" in r.stdout and "SKIPPED" not in r.stdout, r.stdout[-4000:]


def test_pickle_weights_package_runs_with_its_own_or_safetensors(aotrt_bin, work):
    """package_constants_on_disk_format="pickle_weights" with no weights in the .so: the package's
    pickled weights are read in place (Note [Pickled weights]), or a safetensors file replaces them."""
    d = work / "pickle"
    d.mkdir()
    torch.manual_seed(0)
    net = Net().eval()
    own = {k: v.detach().clone() for k, v in net.state_dict().items()}
    pkg = _export(net, _inputs("cpu"), d / "net.pt2",
                  {**OPTIONS, "aot_inductor.package_constants_on_disk_format": "pickle_weights"})
    w = _weights(30)
    safetensors_torch.save_file(w, str(d / "w.safetensors"))
    for k, t in enumerate(_inputs("cpu")):
        np.save(d / f"input_{k}.npy", t.contiguous().numpy())
    r = _run([aotrt_bin, "run", pkg, "-i", d / "input_0.npy", "-i", d / "input_1.npy", "-o", d / "own"])
    assert r.returncode == 0, r.stderr
    for got, want in zip(_outputs(d / "own", 2), _eager(own, "cpu")):
        _close(got, want)
    r = _run([aotrt_bin, "run", pkg, "--weights", d / "w.safetensors", "-i", d / "input_0.npy",
              "-i", d / "input_1.npy", "-o", d / "o"])
    assert r.returncode == 0, r.stderr
    for got, want in zip(_outputs(d / "o", 2), _eager(w, "cpu")):
        _close(got, want)


# ---------------------------------------------------------------------------------------------
# Inputs: dtype and layout learnt from torch's own package.
# ---------------------------------------------------------------------------------------------


class Bf16Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(32, 16)

    def forward(self, x):
        return torch.nn.functional.gelu(self.lin(x))


class ChannelsLastConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 6, 3, padding=1)

    def forward(self, x):
        return self.conv(x).sigmoid()


def _torch_package(work: Path, name: str, net: torch.nn.Module, x: torch.Tensor) -> tuple[Path, Path]:
    """A package from torch's own flow (no aotrt metadata), the input as a dense float32
    .npy (numpy has no bfloat16) and eager's output, in work/name."""
    d = work / name
    d.mkdir()
    opts = {"aot_inductor.link_libtorch": False, "aot_inductor.embed_kernel_binary": True}
    pkg = _export(net, (x,), d / f"{name}.pt2", opts)
    np.save(d / "x.npy", x.float().contiguous().numpy())
    with torch.no_grad():
        np.save(d / "expected.npy", net(x).float().contiguous().numpy())
    return pkg, d


@pytest.fixture(scope="module")
def bf16_package(work):
    torch.manual_seed(0)
    pkg, d = _torch_package(work, "bf16", Bf16Net().eval().to(torch.bfloat16),
                            torch.randn(8, 32).to(torch.bfloat16))
    np.save(d / "x_int.npy", np.arange(8 * 32, dtype=np.int64).reshape(8, 32))
    return pkg, d


def test_bf16_model_runs_from_float32_npy(aotrt_bin, bf16_package):
    pkg, d = bf16_package
    r = _run([aotrt_bin, "run", pkg, "-i", d / "x.npy", "-o", d / "out"])
    assert r.returncode == 0, r.stderr
    print("bf16 input from float32 .npy", "max abs diff",
          _close(np.load(d / "out" / "output_0.npy"), np.load(d / "expected.npy"), BF16_ATOL, BF16_RTOL))


def test_bf16_model_benches(aotrt_bin, bf16_package):
    pkg, d = bf16_package
    for extra in ([], ["-i", d / "x.npy"]):
        r = _run([aotrt_bin, "bench", pkg, "--iters", "5", "--warmup", "1", "--json", *extra])
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["inputs"][0]["dtype"] == "bfloat16"


def test_wrong_dtype_names_input_and_expected(aotrt_bin, bf16_package):
    pkg, d = bf16_package
    r = _run([aotrt_bin, "run", pkg, "-i", d / "x_int.npy", "-o", d / "bad"])
    assert r.returncode == 1
    assert "input 0 ('" in r.stderr and "is int64 but the model expects bfloat16" in r.stderr, r.stderr
    assert "--input FILE:bfloat16" in r.stderr, r.stderr
    r = _run([aotrt_bin, "run", pkg, "-i", f"{d / 'x.npy'}:float16", "-o", d / "bad"])
    assert r.returncode == 1 and "given as float16 but the model expects bfloat16" in r.stderr, r.stderr
    # Asked for explicitly, an int64 array is converted.
    r = _run([aotrt_bin, "run", pkg, "-i", f"{d / 'x_int.npy'}:bfloat16", "-o", d / "int_out"])
    assert r.returncode == 0, r.stderr


def _strip_source(pkg: Path, dst: Path) -> Path:
    with zipfile.ZipFile(pkg) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            if not info.filename.endswith(".wrapper.cpp"):
                zout.writestr(info, zin.read(info.filename))
    return dst


def test_unknown_dtype_needs_the_option(aotrt_bin, bf16_package):
    """Without the generated source nothing says the input is bf16: --input FILE:bfloat16 does."""
    pkg, d = bf16_package
    bare = _strip_source(pkg, d / "bare.pt2")
    r = _run([aotrt_bin, "run", bare, "-i", d / "x.npy", "-o", d / "bare_out"], AOTI_RUNTIME_CHECK_INPUTS="1")
    assert r.returncode == 1 and "unmatched dtype" in r.stderr, r.stderr
    r = _run([aotrt_bin, "run", bare, "-i", f"{d / 'x.npy'}:bfloat16", "-o", d / "bare_out"])
    assert r.returncode == 0, r.stderr
    _close(np.load(d / "bare_out" / "output_0.npy"), np.load(d / "expected.npy"), BF16_ATOL, BF16_RTOL)


@pytest.fixture(scope="module")
def channels_last_package(work):
    torch.manual_seed(0)
    return _torch_package(work, "cl", ChannelsLastConv().eval().to(memory_format=torch.channels_last),
                          torch.randn(2, 4, 9, 7).to(memory_format=torch.channels_last))


def test_dense_input_is_relaid_to_channels_last(aotrt_bin, channels_last_package):
    pkg, d = channels_last_package
    r = _run([aotrt_bin, "run", pkg, "-i", d / "x.npy", "-o", d / "out"])
    assert r.returncode == 0, r.stderr
    print("channels-last input relaid", "max abs diff",
          _close(np.load(d / "out" / "output_0.npy"), np.load(d / "expected.npy")))
    # Without the generated source the layout is unknown: the option gives it.
    bare = _strip_source(pkg, d / "bare.pt2")
    r = _run([aotrt_bin, "run", bare, "-i", f"{d / 'x.npy'}:channels_last", "-o", d / "bare_out"])
    assert r.returncode == 0, r.stderr
    _close(np.load(d / "bare_out" / "output_0.npy"), np.load(d / "expected.npy"))
    # A layout that contradicts the package is refused, naming what it expects.
    r = _run([aotrt_bin, "run", pkg, "-i", f"{d / 'x.npy'}:contiguous", "-o", d / "bad"])
    assert r.returncode == 1 and "not the one the model was exported with" in r.stderr, r.stderr


def test_aotrt_tools_export_writes_bf16_inputs(aotrt_bin, work):
    """aotrt_tools.export of a bf16 model: float32 .npy inputs, converted back by aotrt."""
    from aotrt_tools import export

    d = work / "tools_bf16"
    info = export.export_model(d, factory="test_weights:bf16_factory", stem="tools_bf16", dtype=torch.bfloat16)
    assert info["npy_dtypes"] == ["float32"] and info["inputs"][0]["dtype"] == "bfloat16"
    r = _run([aotrt_bin, "run", info["package"], "-i", d / "tools_bf16.input_0.npy", "-o", d / "out"])
    assert r.returncode == 0, r.stderr
    _close(np.load(d / "out" / "output_0.npy"), np.load(d / "tools_bf16.expected_0.npy"), BF16_ATOL, BF16_RTOL)


def bf16_factory():
    return Bf16Net(), (torch.randn(8, 32),)
