"""aotrt's generate API (aotrt.load_generator: Program, sessions, sampling on the device) on the
packages of tests/generate/exports.py, against transformers' generate (fp32, greedy):

- every model, its generation package (prompt through prefill, then decode, over one session's
  caches) and, for the decoders, torch's own flow (one decode graph, the cache length read
  from its state): NEW_TOKENS tokens equal, eos off;
- prompts longer than max_prefill_len (prefill in chunks; 33 tokens leaves one for decode);
- eos: stops where transformers' generate stops, the eos token included;
- seeded sampling: one seed, the same tokens every time; another seed, other tokens.

On the CPU and on CUDA (sampling on the device, CUDA graphs by default; `-k cuda`, skipped
where torch sees no CUDA device), but eos, which is the same host logic on both: CPU only.
"""

from __future__ import annotations

import pytest

from tests.generate import checks, models

NAMES = list(models.CASES)
DECODERS = [n for n in NAMES if models.CASES[n].kind == "decoder"]
HF = [n for n in NAMES if models.CASES[n].family == "hf"]


# torch's flow gives Whisper two packages (encoder, decoder step); the generate API takes one.
@pytest.mark.parametrize("name,package", [(n, "generation") for n in NAMES] + [(n, "torch") for n in DECODERS])
@pytest.mark.parametrize("device", checks.devices("cpu", "cuda"))
def test_generate_api_greedy(device, name, package, packages, aotrt_module, generate_report, request):
    info = packages(name, package)
    checks.generate_api_matches_reference(aotrt_module, name, info["package"], device, generate_report,
                                          request.node.name, torch_flow=package == "torch")


@pytest.mark.parametrize("length", [models.MAX_PREFILL_LEN + 1, models.MAX_PREFILL_LEN + 8])
@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", ["llama-tiny", "gptfast-tiny"])
@pytest.mark.parametrize("device", checks.devices("cpu", "cuda"))
def test_generate_api_prefill_chunks(device, name, package, length, packages, aotrt_module, generate_report,
                                     request):
    info = packages(name, package)
    checks.generate_api_matches_reference(aotrt_module, name, info["package"], device, generate_report,
                                          request.node.name, prompt=checks.long_prompt(length))


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", HF)
def test_generate_api_stops_at_eos(name, package, cpu_packages, aotrt_module, generate_report, request):
    info = cpu_packages(name, package)
    checks.generate_api_stops_at_eos(aotrt_module, name, info["package"], "cpu", generate_report,
                                     request.node.name)


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", ["llama-tiny", "whisper-tiny"])
@pytest.mark.parametrize("device", checks.devices("cpu", "cuda"))
def test_seeded_sampling_reproducible(device, name, package, packages, aotrt_module, generate_report, request):
    info = packages(name, package)
    checks.seeded_sampling_is_reproducible(aotrt_module, name, info["package"], device, generate_report,
                                           request.node.name)


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", ["llama-tiny", "gptfast-tiny"])
@pytest.mark.parametrize("device", checks.devices("cpu", "cuda"))
def test_generate_api_prompts_in_a_row(device, name, package, packages, aotrt_module, generate_report, request):
    info = packages(name, package)
    checks.generate_api_repeats_on_one_generator(aotrt_module, name, info["package"], device, generate_report,
                                                 request.node.name)


def _with_vocab(pkg: str, out: str, vocab: int) -> None:
    """A copy of `pkg` whose graphs' generation records say `vocab`."""
    import json
    import zipfile
    with zipfile.ZipFile(pkg) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith(".wrapper_metadata.json"):
                meta = json.loads(data)
                if checks.llm.GENERATION_KEY in meta:
                    record = json.loads(meta[checks.llm.GENERATION_KEY])
                    record["vocab_size"] = vocab
                    meta[checks.llm.GENERATION_KEY] = json.dumps(record)
                    data = json.dumps(meta).encode()
            dst.writestr(item, data)


@pytest.mark.parametrize("package", ["generation"])
@pytest.mark.parametrize("name", ["llama-tiny"])
def test_a_record_that_misstates_the_vocabulary_is_refused(name, package, cpu_packages, aotrt_module, tmp_path):
    """The generator checks the record's vocab_size against the decode graph's logits width
    (src/generate/config.cpp): a record that said less refused valid prompt tokens (a packed
    int4 output projection once recorded N / 8), one that said more would let tokens past the
    embedding's table through."""
    info = cpu_packages(name, package)
    vocab = checks.llm.read_generation_records(info["package"])["decode"]["vocab_size"]
    for wrong in (vocab // 8, vocab + 1):
        bad = tmp_path / f"vocab{wrong}.pt2"
        _with_vocab(info["package"], str(bad), wrong)
        with pytest.raises(aotrt_module.PackageError, match=f"records a vocabulary of {wrong} tokens but its "
                                                            f"logits are {vocab} wide"):
            aotrt_module.load_generator(bad, device="cpu", tokenizer=None)
