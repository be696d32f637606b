"""aotrt in a process that also runs torch (Note [The ABI face], src/runtime/self_library.h).

Loading a model puts only aotrt's model-facing names (and Sleef and OpenMP, which a model's
kernels import) into the process's global scope: not OpenBLAS, oneDNN or libzip, which
libtorch, imported after, would otherwise bind its own calls to. Each case runs in a fresh
interpreter, so what this process has loaded does not matter.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# Reports where the global scope resolves a few names, before and after a model is loaded,
# then imports torch and checks a conv and a matmul against float64 references.
SCRIPT = textwrap.dedent("""
    import ctypes, json, os, sys
    import numpy as np
    import aotrt

    libdl = ctypes.CDLL("libdl.so.2")
    libdl.dlopen.restype = ctypes.c_void_p
    libdl.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libdl.dlsym.restype = ctypes.c_void_p
    libdl.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

    class DlInfo(ctypes.Structure):
        _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                    ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]

    GLOBAL = libdl.dlopen(None, 2)  # RTLD_NOW: the main program's handle searches the global scope

    def owner(name):
        address = libdl.dlsym(GLOBAL, name.encode())
        if not address:
            return None
        info = DlInfo()
        libdl.dladdr(ctypes.c_void_p(address), ctypes.byref(info))
        return os.path.basename(info.fname.decode())

    NAMES = ["aoti_torch_empty_strided", "cblas_sgemm", "dnnl_memory_create", "zip_open", "Sleef_expf8_u10"]
    before = {n: owner(n) for n in NAMES}
    pkg = sys.argv[1]
    (y,) = aotrt.load(pkg + ".pt2")(np.load(pkg + ".input_0.npy"))
    np.testing.assert_allclose(y.numpy(), np.load(pkg + ".expected_0.npy"), rtol=1e-5, atol=1e-5)
    after = {n: owner(n) for n in NAMES}

    import torch
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(2, 3, 16, 16, generator=g), torch.randn(8, 3, 3, 3, generator=g)
    conv = torch.nn.functional.conv2d(x, w)
    ref = torch.nn.functional.conv2d(x.double(), w.double())
    a, b = torch.randn(96, 80, generator=g), torch.randn(80, 64, generator=g)
    print(json.dumps(dict(before=before, after=after,
                          conv=float((conv.double() - ref).abs().max()),
                          mm=float(((a @ b).double() - a.double() @ b.double()).abs().max()))))
""")


@pytest.mark.parametrize("name", ["linear_bias"])  # the zoo fixture exports what tests name
def test_loading_a_model_puts_only_aotrts_abi_in_the_global_scope(exported, name):
    info = exported(name)
    pkg = str(info["package"])[: -len(".pt2")]
    r = subprocess.run([sys.executable, "-c", SCRIPT, pkg], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert all(v is None for v in got["before"].values()), got["before"]
    after = got["after"]
    assert after["aoti_torch_empty_strided"] == "libaotrt_abi.so", after
    assert after["Sleef_expf8_u10"] == "libsleef.so.3", after  # what a model's vector kernels import
    for name in ("cblas_sgemm", "dnnl_memory_create", "zip_open"):
        assert after[name] is None, f"{name} is global after loading a model: {after[name]}"
    # torch imported after aotrt still computes with its own libraries (fp32 noise over
    # 27-term and 80-term sums).
    assert got["conv"] < 1e-4 and got["mm"] < 1e-4, got
