"""Generation on CUDA: the CPU tests' models and checks (test_generate_cpu.py), exported for
cuda (aotrt's generation package with CUDA_GENERATION_OPTIONS, and torch's own flow), run by
aotrt on the GPU, compared token for token with the eager fp32 reference (computed on the
CPU: the same weights; aotrt's fp32 matmuls run without TF32, as PyTorch's by default).

CUDA only: skipped without a CUDA torch (the whole module). Needs the aotrt Python package
built with -DAOTRT_CUDA=ON (scripts/python_gpu.sh's build, or its --from-build staging).
"""

from __future__ import annotations

import pytest
import torch

from tests.generate import checks, models

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="CUDA-only: this torch sees no CUDA device")

DEVICE = "cuda"
NAMES = list(models.CASES)


@pytest.mark.parametrize("package", ["generation", "torch"])
@pytest.mark.parametrize("name", NAMES)
def test_cuda_greedy_tokens_equal_reference(name, package, cuda_packages, aotrt_module, generate_report, request):
    info = cuda_packages(name, package)
    whisper = models.CASES[name].kind == "encoder_decoder"
    if package == "generation":
        prefix = checks.llm.read_generation_records(info["package"])["decode"].get("decoder_start_token_ids")
        checks.greedy_tokens_match(aotrt_module, name, info["package"], DEVICE, generate_report, request.node.name,
                                   prefix=prefix)
    else:
        prefix = [models.build(name).config.decoder_start_token_id] if whisper else None
        checks.greedy_tokens_match(aotrt_module, name, info["package"], DEVICE, generate_report, request.node.name,
                                   graph="model", encoder_pkg=info.get("encoder_package"), encoder_graph="model",
                                   prefix=prefix)


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", [n for n in NAMES if models.CASES[n].kind == "decoder"])
def test_cuda_prefill_returns_last_position(name, package, cuda_packages, aotrt_module, generate_report, request):
    info = cuda_packages(name, package)
    checks.caches_are_shared(aotrt_module, info["package"], DEVICE)
    checks.prefill_gives_first_token(aotrt_module, name, info["package"], DEVICE, generate_report,
                                     request.node.name)


@pytest.mark.parametrize("package", ["generation_bf16"])
@pytest.mark.parametrize("name", ["llama-tiny", "whisper-tiny"])
def test_cuda_bfloat16_first_step(name, package, cuda_packages, aotrt_module, generate_report, request):
    info = cuda_packages(name, package)
    checks.bfloat16_first_step_close(aotrt_module, name, info["package"], DEVICE, generate_report,
                                     request.node.name)


# The generate API on CUDA (aotrt.load_generator: sessions, sampling on the device, CUDA graphs
# by default): test_generate_api.py's cases.
DECODERS = [n for n in NAMES if models.CASES[n].kind == "decoder"]


@pytest.mark.parametrize("name,package", [(n, "generation") for n in NAMES] + [(n, "torch") for n in DECODERS])
def test_cuda_generate_api_greedy(name, package, cuda_packages, aotrt_module, generate_report, request):
    info = cuda_packages(name, package)
    checks.generate_api_matches_reference(aotrt_module, name, info["package"], DEVICE, generate_report,
                                          request.node.name, torch_flow=package == "torch")


@pytest.mark.parametrize("length", [models.MAX_PREFILL_LEN + 1, models.MAX_PREFILL_LEN + 8])
@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", ["llama-tiny", "gptfast-tiny"])
def test_cuda_generate_api_prefill_chunks(name, package, length, cuda_packages, aotrt_module, generate_report,
                                          request):
    info = cuda_packages(name, package)
    checks.generate_api_matches_reference(aotrt_module, name, info["package"], DEVICE, generate_report,
                                          request.node.name, prompt=checks.long_prompt(length))


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", ["llama-tiny", "whisper-tiny"])
def test_cuda_seeded_sampling_reproducible(name, package, cuda_packages, aotrt_module, generate_report, request):
    info = cuda_packages(name, package)
    checks.seeded_sampling_is_reproducible(aotrt_module, name, info["package"], DEVICE, generate_report,
                                           request.node.name)
