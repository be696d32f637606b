"""The wheels of scripts/build_wheel.sh, installed as a user installs them (issue 31).

Per wheel: auditwheel accepts its manylinux tag, it holds what Note [The wheel's layout]
(CMakeLists.txt) says and nothing of CUDA, its metadata is a release's (version from
CMakeLists.txt, Apache-2.0, the console script), and its size is printed. Per CPython that
build_wheel.sh finds (3.10 and up), in a fresh venv holding only numpy and the wheel that
serves it: `import aotrt` (no torch), zoo packages run against their stored eager
references (tests/wheel/user_checks.py, which also checks that every library the run loaded
came from the wheel), `aotrt info` from the venv's bin/, and ldd of the extension,
libaotrt, the ABI face, the CLI and the Triton backend: oneDNN, OpenBLAS and libzip resolve
to the wheel's own copies in aotrt.libs/, and nothing outside the venv but the C and C++
runtimes that the manylinux policy lets a wheel take from the system.
"""

from __future__ import annotations

import email.parser
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
USER_CHECKS = Path(__file__).resolve().parent / "user_checks.py"

# What a manylinux wheel may take from the system (auditwheel's policy, the part this build
# uses); everything else must come from the venv.
SYSTEM_LIBRARIES = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1",
                    "ld-linux-x86-64.so.2", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libz.so.1"}
BUNDLED = ["libdnnl", "libopenblas", "libzip"]


def _project_version() -> str:
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"project\(aotrt VERSION ([0-9.]+)", text).group(1)


def _run(*cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def _ldd(path: Path) -> dict[str, str]:
    """soname -> resolved path ('not found' when it is not) for path's whole dependency tree."""
    out = _run("ldd", path, check=True).stdout
    resolved = {}
    for line in out.splitlines():
        line = line.strip()
        if "=>" in line:
            name, _, rest = line.partition("=>")
            resolved[name.strip()] = rest.strip().split(" (")[0].strip()
        elif line:
            path_part = line.split(" (")[0].strip()
            resolved[Path(path_part).name] = path_part
    return resolved


def test_wheel_tag_contents_and_metadata(wheel):
    if wheel is None:
        pytest.fail("no aotrt-*.whl: run scripts/build_wheel.sh first", pytrace=False)
    platform = re.search(r"-(manylinux_\d+_\d+_x86_64)\.whl$", wheel.name)
    assert platform, f"{wheel.name} has no manylinux tag"
    show = _run(sys.executable, "-m", "auditwheel", "show", wheel, check=True).stdout
    assert f'"{platform.group(1)}"' in " ".join(show.split()), show

    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(info).decode())
        entry_points = z.read(info.replace("METADATA", "entry_points.txt")).decode()

    for required in ["aotrt/__init__.py", "aotrt/_cli.py", "aotrt/_aotrt.pyi", "aotrt/py.typed",
                     "aotrt/libaotrt.so.0", "aotrt/libaotrt_abi.so", "aotrt/libgomp.so.1",
                     "aotrt/bin/aotrt", "aotrt/triton/aotrt/libtriton_aotrt.so"]:
        assert required in names, f"{required} missing from {wheel.name}"
    assert modes["aotrt/bin/aotrt"] & 0o111, "aotrt/bin/aotrt is not executable"
    assert [n for n in names if re.match(r"aotrt/_aotrt\..*so$", n)], "no extension module"
    grafted = [n for n in names if n.startswith("aotrt.libs/") and not n.endswith("/")]
    for lib in BUNDLED:
        assert any(Path(n).name.startswith(lib) for n in grafted), f"{lib} not bundled: {grafted}"
    # libgomp ships under its own soname only (Note [OpenMP in the wheel]); no CUDA library.
    assert not [n for n in grafted if "libgomp" in n], grafted
    assert not [n for n in names if re.search(r"lib(cuda|cudart|cublas|cudnn|nvrtc)", n)]

    assert meta["Name"] == "aotrt"
    assert meta["Version"] == _project_version()
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["License-File"] == "LICENSE" and any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert meta["Requires-Python"] == ">=3.10"
    assert meta.get_all("Requires-Dist") == ["numpy"]
    assert "aotrt = aotrt._cli:main" in entry_points
    print(f"{wheel.name}: {wheel.stat().st_size} bytes ({wheel.stat().st_size / 2**20:.1f} MiB), "
          f"{len(grafted)} libraries grafted")


def test_import_without_torch(user_env):
    out = _run(user_env.python, "-c",
               "import sys, aotrt; assert 'torch' not in sys.modules; print(aotrt.__file__)",
               cwd=user_env.root, check=True).stdout.strip()
    assert Path(out).resolve().parent == user_env.site / "aotrt", out


@pytest.mark.parametrize("name", ["linear_bias", "pointwise_c2f"])
def test_zoo_package_against_eager(user_env, name, exported):
    from aotrt_tools import zoo  # on sys.path through tests/e2e's conftest

    info = exported(name)
    tol = zoo.entry(name)
    r = _run(user_env.python, USER_CHECKS, "--site", user_env.site, "--package", info["package"],
             "--rtol", tol.rtol, "--atol", tol.atol, cwd=user_env.root)
    print(r.stdout)
    assert r.returncode == 0, f"{name} in the CPython {user_env.version} venv:\n{r.stdout}{r.stderr}"


# `name`: the zoo export fixtures export the models the collected tests name.
@pytest.mark.parametrize("name", ["linear_bias"])
def test_cli_from_venv_bin(user_env, name, exported):
    package = exported(name)["package"]
    r = _run(user_env.bin / "aotrt", "info", package, cwd=user_env.root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "device: cpu" in r.stdout and "inputs (1):" in r.stdout and "MISSING" not in r.stdout, r.stdout
    print(r.stdout[:400])


def test_libraries_resolve_to_the_wheel(user_env):
    package = user_env.site / "aotrt"
    files = {
        "extension": next(package.glob("_aotrt*.so")),
        "libaotrt": package / "libaotrt.so.0",
        "abi face": package / "libaotrt_abi.so",
        "cli": package / "bin" / "aotrt",
        "triton backend": package / "triton" / "aotrt" / "libtriton_aotrt.so",
    }
    bundled = user_env.site / "aotrt.libs"
    for what, path in files.items():
        resolved = _ldd(path)
        missing = [n for n, p in resolved.items() if p == "not found"]
        assert not missing, f"{what}: {missing} not found"
        outside = {n: p for n, p in resolved.items()
                   if user_env.site not in Path(p).resolve().parents and n not in SYSTEM_LIBRARIES}
        assert not outside, f"{what} resolves these outside the venv: {outside}"
        if what in ("extension", "libaotrt", "cli", "triton backend"):
            if what != "libaotrt":
                assert Path(resolved["libaotrt.so.0"]).resolve() == package / "libaotrt.so.0", resolved
            assert Path(resolved["libgomp.so.1"]).resolve() == package / "libgomp.so.1", resolved
            for lib in BUNDLED:
                paths = [p for n, p in resolved.items() if n.startswith(lib)]
                assert paths and all(Path(p).resolve().parent == bundled for p in paths), (what, lib, paths)


# --- The CUDA wheel (aotrt-cu13): built and laid out here, run by scripts/wheel_gpu.sh ------

CUDA_WHEELS = Path(os.environ.get("AOTRT_CUDA_WHEELS", "/opt/aotrt-cuda-wheels"))


def _cuda_table() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["aotrt"]["cuda-wheel"]


def _dynamic(path: Path) -> tuple[list[str], list[str]]:
    """(NEEDED, RPATH/RUNPATH entries) of an ELF file."""
    out = _run("readelf", "-d", path, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
    paths = [e for m in re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[(.*?)\]", out)
             for e in m.split(":")]
    return needed, paths


def _require(cuda_wheel):
    if cuda_wheel is None:
        pytest.fail("no aotrt_cu13-*.whl: run scripts/build_wheel.sh --cuda first", pytrace=False)


def test_cuda_wheel_tag_contents_and_metadata(cuda_wheel, tmp_path):
    _require(cuda_wheel)
    platform = re.search(r"-(manylinux_\d+_\d+_x86_64)\.whl$", cuda_wheel.name)
    assert platform, f"{cuda_wheel.name} has no manylinux tag"
    # `auditwheel show` knows nothing of repair's --exclude: the nvidia-* libraries make it say
    # linux_x86_64; the symbol versions of everything else must allow the wheel's tag.
    show = " ".join(_run(sys.executable, "-m", "auditwheel", "show", cuda_wheel, check=True).stdout.split())
    assert f'This constrains the platform tag to "{platform.group(1)}"' in show, show
    table = _cuda_table()
    with zipfile.ZipFile(cuda_wheel) as z:
        names = z.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(info).decode())
        z.extract("aotrt/libaotrt.so.0", tmp_path)
        z.extract("aotrt/triton/aotrt/libtriton_aotrt.so", tmp_path)
    assert meta["Name"] == table["name"] and meta["Version"] == _project_version()
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("Requires-Dist") == ["numpy", *table["dependencies"]]
    assert all(c in meta.get_all("Classifier") for c in table["classifiers"])
    # The nvidia-* libraries are dependencies, never bundled.
    assert not [n for n in names if re.search(r"lib(cuda|cudart|cublas|cudnn|cufft|curand|cusolver|"
                                              r"cusparse|nvJitLink|nvrtc)", n)], names
    assert "aotrt/bin/aotrt" in names

    needed, rpath = _dynamic(tmp_path / "aotrt" / "libaotrt.so.0")
    for soname in ["libcudart.so.13", "libcublas.so.13", "libcudnn.so.9", "libcufft.so.12"]:
        assert soname in needed, needed
    dirs = sorted(d.name for d in (CUDA_WHEELS / "nvidia").iterdir() if (d / "lib").is_dir())
    assert dirs, f"no nvidia-* wheels in {CUDA_WHEELS}"
    for d in dirs:
        assert f"$ORIGIN/../nvidia/{d}/lib" in rpath, rpath
        assert f"$ORIGIN/../../../nvidia/{d}/lib" in _dynamic(
            tmp_path / "aotrt" / "triton" / "aotrt" / "libtriton_aotrt.so")[1]
    assert not [e for e in rpath if not e.startswith("$ORIGIN")], f"absolute RPATH entries: {rpath}"


@pytest.mark.parametrize("name", ["linear_bias"])
def test_cuda_wheel_loads_nvidia_libraries_from_site_packages(cuda_wheel, name, tmp_path, exported, cuda_python):
    """A venv holding numpy and the CUDA wheel, with stand-ins for its nvidia-* dependencies in
    site-packages/nvidia/<name>/lib, where pip installs them (links to AOTRT_CUDA_WHEELS's
    libraries and the toolkit's cudart, as nvidia-cuda-runtime has none here): libaotrt resolves
    them there (ldd), and the wheel imports and runs a CPU package (the GPU run is
    scripts/wheel_gpu.sh's)."""
    _require(cuda_wheel)
    from aotrt_tools import zoo

    venv = tmp_path / "venv"
    _run(cuda_python, "-m", "venv", venv, check=True)
    py = venv / "bin" / "python"
    _run(py, "-m", "pip", "install", "-q", "numpy", check=True)
    # --no-deps: the nvidia-* wheels are the stand-ins below (no network use for them here).
    _run(py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", cuda_wheel, check=True)
    site = Path(_run(py, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))",
                     check=True).stdout.strip())
    for lib in (CUDA_WHEELS / "nvidia").glob("*/lib/*.so*"):
        dest = site / "nvidia" / lib.parent.parent.name / "lib" / lib.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.symlink_to(lib)
    cudart = sorted(Path("/usr/local/cuda/lib64").glob("libcudart.so.13*"))
    assert cudart, "no CUDA toolkit cudart in /usr/local/cuda/lib64"
    (site / "nvidia" / "cu13" / "lib" / "libcudart.so.13").symlink_to(cudart[-1].resolve())

    # ldd names the path the loader found (the stand-ins are links, which /proc/self/maps
    # would show resolved).
    resolved = _ldd(site / "aotrt" / "libaotrt.so.0")
    needed, _ = _dynamic(site / "aotrt" / "libaotrt.so.0")
    stand_ins = {lib.name for lib in (site / "nvidia").glob("*/lib/*")}
    cuda = {n: resolved.get(n, "not found") for n in needed if n in stand_ins}
    assert {"libcudart.so.13", "libcublas.so.13", "libcudnn.so.9"} <= set(cuda), needed
    for soname, path in cuda.items():
        assert Path(os.path.normpath(path)).parent.parent.parent == site / "nvidia", (soname, path)

    info = exported(name)
    tol = zoo.entry(name)
    r = _run(py, USER_CHECKS, "--site", site, "--package", info["package"],
             "--rtol", tol.rtol, "--atol", tol.atol, cwd=venv)
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", ["linear_bias"])
def test_triton_backend_from_the_wheel(newest_user_env, name, exported, tmp_path):
    """tritonserver with --backend-directory=<site-packages>/aotrt/triton serves a package
    through the wheel's libtriton_aotrt.so (README's Quick start), matching eager."""
    import numpy as np

    from aotrt_tools import triton, zoo

    backends = newest_user_env.site / "aotrt" / "triton"
    info = exported(name)
    stem = Path(info["package"]).with_suffix("")
    x = np.load(f"{stem}.input_0.npy")
    want = np.load(f"{stem}.expected_0.npy")
    repo = tmp_path / "models"
    triton.add_model(repo, "linear_bias", Path(info["package"]),
                     {"max_batch_size": 0, "instance_group": {"kind": "KIND_CPU", "count": 1}})
    (in_name,), _ = triton.package_tensor_names(Path(info["package"]))
    try:
        binary = triton.tritonserver()
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)
    with triton.Server(binary, repo, backends, tmp_path / "tritonserver.log") as server:
        server.wait_ready(["linear_bias"], timeout_s=120)
        status, body = server.post("/v2/models/linear_bias/infer", {"inputs": [{
            "name": in_name, "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]})
        log = server.log_text()
    assert status == 200, (status, body, log[-2000:])
    got = np.asarray(body["outputs"][0]["data"], np.float32).reshape(body["outputs"][0]["shape"])
    tol = zoo.entry("linear_bias")
    np.testing.assert_allclose(got, want, rtol=tol.rtol, atol=tol.atol)
