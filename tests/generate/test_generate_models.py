"""Generation packages on each device: tiny random LLaMA, Qwen2, Qwen3, Gemma 3, a Whisper-tiny
shape and a gpt-fast-style model, each exported twice (tests/generate/exports.py: aotrt's
generation package, and torch's own flow), run greedily by aotrt's reference loop and compared
token for token with the eager reference (transformers' generate, fp32, on the CPU: the same
weights; aotrt's fp32 matmuls on CUDA run without TF32, as PyTorch's by default) for
NEW_TOKENS tokens.

    python3 -m pip install .      # the aotrt Python package (scripts/test.sh's Python step)
    AOTRT_E2E_CACHE=~/.cache/aotrt/test-cache/e2e python3 -m pytest tests/generate -v -rA

The cuda cases (`-k cuda`) need a CUDA torch and the Python package built with -DAOTRT_CUDA=ON
(scripts/python_gpu.sh); elsewhere they are reported as skipped. The package records, the
caches prefill and decode share, and the prefill graph (last-position logits, T from 1 to
max_prefill_len, longer refused) are checked on the generation packages.
"""

from __future__ import annotations

import pytest

from tests.generate import checks, models

NAMES = list(models.CASES)
DECODERS = [n for n in NAMES if models.CASES[n].kind == "decoder"]


@pytest.mark.parametrize("package", ["generation", "torch"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("device", checks.devices("cpu", "cuda"))
def test_greedy_tokens_equal_reference(device, name, package, packages, aotrt_module, generate_report, request):
    info = packages(name, package)
    whisper = models.CASES[name].kind == "encoder_decoder"
    if package == "generation":
        prefix = checks.llm.read_generation_records(info["package"])["decode"].get("decoder_start_token_ids")
        checks.greedy_tokens_match(aotrt_module, name, info["package"], device, generate_report, request.node.name,
                                   prefix=prefix)
    else:  # torch's flow: one graph named "model" per package, no aotrt records
        prefix = [models.build(name).config.decoder_start_token_id] if whisper else None
        checks.greedy_tokens_match(aotrt_module, name, info["package"], device, generate_report, request.node.name,
                                   graph="model", encoder_pkg=info.get("encoder_package"), encoder_graph="model",
                                   prefix=prefix)


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", NAMES)
def test_generation_records(name, package, cpu_packages):
    info = cpu_packages(name, package)
    checks.generation_records_are_complete(info["package"], name, info)


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("device", checks.devices("cpu", "cuda"))
def test_prefill_and_decode_share_caches(device, name, package, packages, aotrt_module):
    info = packages(name, package)
    checks.caches_are_shared(aotrt_module, info["package"], device)


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("device", checks.devices("cpu", "cuda"))
def test_prefill_returns_last_position(device, name, package, packages, aotrt_module, generate_report, request):
    info = packages(name, package)
    checks.prefill_gives_first_token(aotrt_module, name, info["package"], device, generate_report,
                                     request.node.name)


# bf16 on CUDA only: the CPU suite keeps to fp32, whose tokens can be compared exactly.
@pytest.mark.parametrize("package", ["generation_bf16"])
@pytest.mark.parametrize("name", ["llama-tiny", "whisper-tiny"])
@pytest.mark.parametrize("device", checks.devices("cuda"))
def test_bfloat16_first_step(device, name, package, packages, aotrt_module, generate_report, request):
    info = packages(name, package)
    checks.bfloat16_first_step_close(aotrt_module, name, info["package"], device, generate_report,
                                     request.node.name)


@pytest.mark.parametrize("package", ["command"])
@pytest.mark.parametrize("name", ["llama-tiny"])
def test_export_command_on_hf_folder(name, package, cpu_packages, aotrt_module, generate_report, request):
    """The CLI on a Hugging Face folder: the weights it loads (greedy tokens equal the
    reference of the same seeded model), the tokenizer copied byte for byte, the sidecar,
    and the inductor options it printed."""
    info = cpu_packages(name, package)
    stdout = info["stdout"]
    assert "inductor options: " in stdout and '"aot_inductor.link_libtorch": false' in stdout, stdout
    tokenizer = checks.Path(info["tokenizer_json"])
    assert tokenizer.read_bytes() == (checks.Path(info["hf_folder"]) / "tokenizer.json").read_bytes()
    records = checks.llm.read_generation_records(info["package"])
    assert records["decode"]["source"] == str(checks.Path(info["hf_folder"]).resolve()), records["decode"]
    assert sorted(records) == ["decode", "prefill"]
    checks.greedy_tokens_match(aotrt_module, name, info["package"], "cpu", generate_report, request.node.name)
