"""Hugging Face decoders exported by torch's own flow, run by aotrt, compared with eager.

The zoo's hf_* entries (transformers' GPT-2 and LLaMA modelling code, 2 layers, random
weights) run through aotrt_tools.export in test_zoo_cpu.py. Here the same modules are
exported as a new user would: torch.export.export, then aoti_compile_and_package with only
aot_inductor.link_libtorch=False. `aotrt info` must report no MISSING shim, and `aotrt run`
must match eager within the zoo entry's tolerance (fp32 default, atol = rtol = 1e-5).
transformers is installed by scripts/install_deps.sh: its absence is a failure, not a skip.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from aotrt_tools import zoo

NAMES = ["hf_gpt2", "hf_llama"]


@pytest.mark.parametrize("name", NAMES)
def test_torch_exported_decoder_runs_and_matches_eager(name, aotrt_bin, tmp_path):
    assert name in zoo.names("cpu"), f"{name} is not in the zoo: {zoo.UNAVAILABLE.get(name, 'unknown')}"
    module, inputs, tol = zoo.get(name)
    with torch.no_grad():
        expected = module(*inputs).numpy()
    program = torch.export.export(module, inputs)
    pkg = torch._inductor.aoti_compile_and_package(
        program, package_path=str(tmp_path / f"{name}.pt2"),
        inductor_configs={"aot_inductor.link_libtorch": False})

    info = subprocess.run([str(aotrt_bin), "info", pkg], capture_output=True, text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    shims = [l.split() for l in info.stdout.splitlines() if l.strip().startswith("aoti_")]
    assert shims, info.stdout
    missing = [s[0] for s in shims if "MISSING" in s]
    assert not missing, f"aotrt lacks {missing}:\n{info.stdout}"
    assert any(s[0] == "aoti_torch_cpu_cumsum" for s in shims), "the decoder no longer calls cumsum"

    np.save(tmp_path / "ids.npy", inputs[0].numpy())
    out = tmp_path / "out"
    run = subprocess.run([str(aotrt_bin), "run", pkg, "--input", str(tmp_path / "ids.npy"),
                          "--output-dir", str(out)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "AOTI_RUNTIME_CHECK_INPUTS": "1"})
    assert run.returncode == 0, run.stderr
    got = np.load(out / "output_0.npy")
    assert got.shape == expected.shape
    diff = float(np.abs(got - expected).max())
    print(f"{name}: max |aotrt - eager| = {diff:.3g} (max |eager| {np.abs(expected).max():.3g})")
    np.testing.assert_allclose(got, expected, atol=tol["atol"], rtol=tol["rtol"])
