"""What the generation tests check, for any device (test_generate_models.py, test_generate_api.py).

Greedy tokens: aotrt's reference loop over a package's decode graph (tests/generate/models.py)
must give exactly the reference's NEW_TOKENS tokens (fp32). On a difference the message says
where, the reference's top-1/top-2 margin there and the largest logit difference before it,
which tell a flip on a thin margin from a bug.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.generate import models
from aotrt_tools import llm  # noqa: E402  (models puts python/ on sys.path)

# fp32 logits of aotrt against eager: different kernels (inductor's fusions, oneDNN/cuBLAS
# GEMMs, SDPA) sum in other orders; the tiny models' logits are of magnitude ~10, so a few
# ulps of float32 there are ~1e-5, and 64 steps of a cache compound them a little.
LOGIT_ATOL = 2e-3


def devices(*names: str) -> list:
    """The `device` parameters of a test: cuda cases are skipped, and say so, where this torch
    sees no CUDA device (CI's machine); their exports then never run."""
    return [n if n != "cuda" else pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                         reason="CUDA-only: this torch sees no CUDA device"))
            for n in names]


KV_BUFFERS = ("key_cache_", "value_cache_", "k_cache", "v_cache")  # transformers', gpt-fast's
CACHE_BUFFERS = KV_BUFFERS + ("cumulative_length_",)


def _load(aotrt: Any, pkg: str, graph: str, device: str) -> Any:
    return aotrt.load(pkg, device=device, model_name=graph)


def _reference(name: str) -> models.Greedy:
    model = models.build(name)
    with torch.no_grad():
        return models.reference_greedy(name, model)


def greedy_tokens_match(aotrt: Any, name: str, pkg: str, device: str, report: dict[str, str], test_id: str,
                        graph: str = "decode", encoder_pkg: str | None = None, encoder_graph: str = "encoder",
                        prefix: list[int] | None = None) -> None:
    """The decode graph (and Whisper's encoder) of `pkg` through the reference loop against
    the reference generation: every token equal, NEW_TOKENS of them."""
    case = models.CASES[name]
    ref = _reference(name)
    decode = _load(aotrt, pkg, graph, device)
    if case.kind == "encoder_decoder":
        encoder = _load(aotrt, encoder_pkg or pkg, encoder_graph, device)
        features = models.whisper_features(models.build(name)).numpy()
        got = models.aotrt_whisper_greedy(encoder, decode, features, prefix, models.NEW_TOKENS)
    else:
        got = models.aotrt_decoder_greedy(decode, models.PROMPT, models.NEW_TOKENS)
    result = models.compare(ref, got)
    line = models.describe(name, result)
    report[test_id] = line
    assert len(ref.tokens) == models.NEW_TOKENS, f"the reference made {len(ref.tokens)} tokens"
    assert got.tokens == ref.tokens, f"{line}\n reference {ref.tokens}\n aotrt     {got.tokens}"
    assert result["max_logit_diff"] < LOGIT_ATOL, line


def generation_records_are_complete(pkg: str, name: str, info: dict[str, Any]) -> dict[str, dict]:
    """Every graph carries the "aotrt.generation" record the contract lists, with values that
    agree with the model and each other; the sidecar .generation.json says the same."""
    case = models.CASES[name]
    records = llm.read_generation_records(pkg)
    graphs = ["encoder", "decode"] if case.kind == "encoder_decoder" else ["prefill", "decode"]
    assert sorted(records) == sorted(graphs), f"graphs with records: {sorted(records)}"
    model = models.build(name)
    if case.family == "gptfast":
        vocab, eos = model.config.vocab_size, [model.config.eos_token_id]
    else:
        vocab, eos = model.get_output_embeddings().out_features, [model.config.eos_token_id]
    for graph, r in records.items():
        assert r["version"] == 1 and r["kind"] == case.kind and r["graph"] == graph, r
        assert r["max_cache_len"] == models.MAX_CACHE_LEN and r["batch_size"] == 1, r
        assert r["vocab_size"] == vocab and r["eos_token_ids"] == eos and r["dtype"] == "float32", r
        assert r["source"] == name and "bos_token_id" in r and "pad_token_id" in r, r
        if graph == "prefill":
            assert r["min_prefill_len"] == 2 and r["max_prefill_len"] == models.MAX_PREFILL_LEN, r
        else:
            assert "max_prefill_len" not in r and "min_prefill_len" not in r, r
    expected_inputs = {"prefill": ["input_ids", "cache_position"], "decode": ["input_ids", "cache_position"],
                       "encoder": ["input_features"]}
    if case.kind == "encoder_decoder":
        expected_inputs["decode"] = ["input_ids", "encoder_hidden_states", "cache_position"]
        assert records["decode"]["decoder_start_token_ids"] == [model.config.decoder_start_token_id], records
    for graph, r in records.items():
        assert r["inputs"] == expected_inputs[graph], (graph, r["inputs"])
    sidecar = json.loads(Path(info["generation_json"]).read_text())
    assert {g: v["inputs"] for g, v in sidecar["graphs"].items()} == {g: r["inputs"] for g, r in records.items()}
    # Fused linears (Note [Sibling linears fused]): every tiny decoder has gate/up siblings at least, and
    # prefill and decode, traced apart, fuse the same groups under the same names.
    assert {g: v["fused_linears"] for g, v in sidecar["graphs"].items()} == \
        {g: r["fused_linears"] for g, r in records.items()}
    if case.kind == "decoder":
        assert records["decode"]["fused_linears"] and records["prefill"]["fused_linears"] == \
            records["decode"]["fused_linears"], records["decode"]["fused_linears"]
    assert sidecar["eos_token_ids"] == eos and sidecar["max_cache_len"] == models.MAX_CACHE_LEN
    return records


def caches_are_shared(aotrt: Any, pkg: str, device: str) -> list[str]:
    """prefill and decode hold the same mutable buffers: same FQNs, dtypes and sizes."""
    def buffers(graph: str) -> dict[str, tuple]:
        info = _load(aotrt, pkg, graph, device).info
        return {c.original_fqn: (c.dtype, tuple(c.sizes or ())) for c in info.constants
                if any(b in c.original_fqn for b in CACHE_BUFFERS)}

    prefill, decode = buffers("prefill"), buffers("decode")
    assert decode, "the decode graph has no cache buffer"
    assert prefill == decode, f"prefill {prefill}\n decode {decode}"
    return sorted(decode)


def prefill_gives_first_token(aotrt: Any, name: str, pkg: str, device: str, report: dict[str, str],
                              test_id: str) -> None:
    """prefill over the whole prompt returns the last position's logits only ([1, 1, V]),
    equal to the reference's first step; over min_prefill_len (2) and max_prefill_len tokens,
    equal to eager's last row; one token fewer or one more is refused (Note [Prefill lengths]
    in aotrt_tools/llm.py: a one-token prompt goes through decode)."""
    ref = _reference(name)
    prompt = np.array([models.PROMPT], np.int64)
    prefill = _load(aotrt, pkg, "prefill", device)
    (y,) = prefill(prompt, np.arange(prompt.shape[1], dtype=np.int64))
    got = models.host_array(y).astype(np.float32)
    assert got.shape == (1, 1, ref.logits[0].shape[0]), got.shape
    diff = float(np.abs(got[0, 0] - ref.logits[0]).max())
    report[test_id] = f"{name}: prefill of {prompt.shape[1]} tokens, max |logit diff| {diff:.3g}, " \
                      f"argmax {int(got.argmax())} (reference {ref.tokens[0]})"
    assert int(got.argmax()) == ref.tokens[0] and diff < LOGIT_ATOL, report[test_id]

    for length in (2, models.MAX_PREFILL_LEN):
        ids = (np.arange(length, dtype=np.int64) * 37 + 5) % 256
        ids[0] = models.PROMPT[0]
        expected = eager_last_logits(name, ids)
        fresh = _load(aotrt, pkg, "prefill", device)  # its own zeroed caches
        (y,) = fresh(ids[None, :], np.arange(length, dtype=np.int64))
        row = models.host_array(y).astype(np.float32)[0, 0]
        d = float(np.abs(row - expected).max())
        assert d < LOGIT_ATOL, f"{name}: prefill of {length} tokens: max |logit diff| {d:.3g}"

    for length in (1, models.MAX_PREFILL_LEN + 1):
        fresh = _load(aotrt, pkg, "prefill", device)
        with pytest.raises(aotrt.Error):  # refused by the graph's own input checks
            fresh(np.zeros((1, length), np.int64), np.arange(length, dtype=np.int64))


@torch.no_grad()
def eager_last_logits(name: str, ids: np.ndarray) -> np.ndarray:
    """The last position's logits of one eager forward over `ids` from an empty cache."""
    model = models.build(name)
    t = torch.from_numpy(ids)[None, :]
    if models.CASES[name].family == "gptfast":
        model.reset_caches()
        return model(t, torch.arange(t.shape[1]))[0, -1].float().numpy()
    return model(input_ids=t).logits[0, -1].float().numpy()


@torch.no_grad()
def bfloat16_first_step_close(aotrt: Any, name: str, pkg: str, device: str, report: dict[str, str],
                              test_id: str) -> None:
    """A bfloat16 package's first greedy step against eager bfloat16 on the same device: the
    logits within 2% of their largest magnitude (bf16 rounds inductor's fusions otherwise than
    eager: shared/reference/generation.md), and the decode graph's caches in bfloat16."""
    case = models.CASES[name]
    model = models.build(name).to(device=device, dtype=torch.bfloat16)
    decode = _load(aotrt, pkg, "decode", device)
    caches = [c for c in decode.info.constants if any(b in c.original_fqn for b in KV_BUFFERS)]
    assert caches and all(c.dtype == "bfloat16" for c in caches), [(c.original_fqn, c.dtype) for c in caches]
    if case.kind == "encoder_decoder":
        features = models.whisper_features(model).to(device=device, dtype=torch.bfloat16)
        prefix = llm.read_generation_records(pkg)["decode"]["decoder_start_token_ids"]
        expected = model(input_features=features, decoder_input_ids=torch.tensor([prefix], device=device)).logits[0, -1]
        encoder = _load(aotrt, pkg, "encoder", device)
        got = models.aotrt_whisper_greedy(encoder, decode, features.float().cpu().numpy(), prefix, 1).logits[0]
    else:
        expected = model(input_ids=models.prompt_ids().to(device)).logits[0, -1]
        got = models.aotrt_decoder_greedy(decode, models.PROMPT, 1).logits[0]
    expected = expected.float().cpu().numpy()
    diff = float(np.abs(got - expected).max())
    scale = float(np.abs(expected).max())
    report[test_id] = f"{name} bfloat16: first step max |logit diff| {diff:.3g} (largest |logit| {scale:.3g}), " \
                      f"argmax {int(got.argmax())} (eager {int(expected.argmax())})"
    assert diff <= 0.02 * scale, report[test_id]


# --------------------------------------------------------------------------------------
# The generate API (aotrt.load_generator): prefill and decode over one session's caches
# --------------------------------------------------------------------------------------


def long_prompt(length: int) -> list[int]:
    """A prompt of `length` tokens (bos first) for the prefill chunking cases."""
    return [models.PROMPT[0]] + [(7 * i + 3) % 256 for i in range(1, length)]


def _api_tokens(aotrt: Any, name: str, pkg: str, device: str, max_new_tokens: int, prompt: list[int],
                **kw: Any) -> tuple[Any, Any]:
    """(the generator, its GenerateResult) for `prompt` (Whisper: from the test features)."""
    case = models.CASES[name]
    load_kw = {"max_cache_len": models.MAX_CACHE_LEN} if kw.pop("torch_flow", False) else {}
    lm = aotrt.load_generator(pkg, device=device, **load_kw)
    if case.kind == "encoder_decoder":
        features = models.whisper_features(models.build(name)).numpy()
        r = lm.generate_from(features, max_new_tokens=max_new_tokens, return_result=True, **kw)
    else:
        r = lm.generate(prompt, max_new_tokens=max_new_tokens, return_result=True, **kw)
    return lm, r


def generate_api_matches_reference(aotrt: Any, name: str, pkg: str, device: str, report: dict[str, str],
                                   test_id: str, prompt: list[int] | None = None, torch_flow: bool = False) -> None:
    """aotrt's generate (greedy, eos off) gives the reference's NEW_TOKENS tokens: for a
    generation package, the prompt through prefill (in chunks of at most max_prefill_len, a
    lone last token through decode) and decode after it, over one session's caches."""
    prompt = prompt or models.PROMPT
    model = models.build(name)
    with torch.no_grad():
        if models.CASES[name].family == "gptfast":
            logits: list[torch.Tensor] = []
            tokens, _ = models.gptfast_greedy(model, torch.tensor([prompt]), models.NEW_TOKENS, record=logits)
            ref = models._greedy_from_logits(logits, tokens)
        elif models.CASES[name].kind == "encoder_decoder":
            ref = models.reference_greedy(name, model)
        else:
            ref = models.hf_greedy(model, torch.tensor([prompt]), models.NEW_TOKENS)
    lm, r = _api_tokens(aotrt, name, pkg, device, models.NEW_TOKENS, prompt, eos_token_ids=[],
                        torch_flow=torch_flow)
    got = list(r.tokens)
    first = next((i for i, (a, b) in enumerate(zip(ref.tokens, got)) if a != b), None)
    where = "all equal" if first is None and len(got) == len(ref.tokens) else f"first difference at step {first}"
    given = "the package's forced prefix" if models.CASES[name].kind == "encoder_decoder" else \
        f"prompt {len(prompt)} tokens"
    report[test_id] = (f"{name}: generate API, {given}, {len(got)} tokens, {where}; "
                       f"smallest reference margin {ref.min_margin:.3g}; graphs {lm.config.get('decode_graph')}"
                       f"/{lm.config.get('prefill_graph') or '-'}; stop {r.stop_reason}")
    assert got == ref.tokens, f"{report[test_id]}\n reference {ref.tokens}\n aotrt     {got}"


def generate_api_stops_at_eos(aotrt: Any, name: str, pkg: str, device: str, report: dict[str, str],
                              test_id: str) -> None:
    """With the package's eos ids, aotrt's generate stops where transformers' does (the eos
    token included), or runs to max_new_tokens when transformers' does."""
    model = models.build(name)
    with torch.no_grad():
        if models.CASES[name].kind == "encoder_decoder":
            ref = models.hf_greedy(model, max_new_tokens=models.NEW_TOKENS,
                                   input_features=models.whisper_features(model), stop_at_eos=True)
        else:
            ref = models.hf_greedy(model, models.prompt_ids(), models.NEW_TOKENS, stop_at_eos=True)
    _, r = _api_tokens(aotrt, name, pkg, device, models.NEW_TOKENS, models.PROMPT)
    eos = models.build(name).config.eos_token_id
    expected_stop = "eos" if ref.tokens and ref.tokens[-1] == eos else "max_new_tokens"
    report[test_id] = f"{name}: eos {eos}: {len(r.tokens)} tokens, stop {r.stop_reason} " \
                      f"(transformers: {len(ref.tokens)} tokens, {expected_stop})"
    assert list(r.tokens) == ref.tokens and r.stop_reason == expected_stop, report[test_id]


def seeded_sampling_is_reproducible(aotrt: Any, name: str, pkg: str, device: str, report: dict[str, str],
                                    test_id: str) -> None:
    """Sampling (temperature 2, top-k 50, top-p 0.95) with one seed gives the same tokens in
    new sequences and in a reloaded generator; another seed gives other tokens."""
    kw = dict(temperature=2.0, top_k=50, top_p=0.95, eos_token_ids=[])
    _, a = _api_tokens(aotrt, name, pkg, device, models.NEW_TOKENS, models.PROMPT, seed=1234, **kw)
    _, b = _api_tokens(aotrt, name, pkg, device, models.NEW_TOKENS, models.PROMPT, seed=1234, **kw)
    _, c = _api_tokens(aotrt, name, pkg, device, models.NEW_TOKENS, models.PROMPT, seed=4321, **kw)
    greedy = models.reference_greedy(name, models.build(name)).tokens
    report[test_id] = (f"{name}: seed 1234 twice: {'same' if a.tokens == b.tokens else 'DIFFERENT'}; seed 4321: "
                       f"{sum(x != y for x, y in zip(a.tokens, c.tokens))}/{len(a.tokens)} tokens differ; "
                       f"{sum(x != y for x, y in zip(a.tokens, greedy))} differ from greedy")
    assert len(a.tokens) == models.NEW_TOKENS and list(a.tokens) == list(b.tokens), report[test_id]
    assert list(a.tokens) != list(c.tokens) and list(a.tokens) != greedy, report[test_id]


def generate_api_repeats_on_one_generator(aotrt: Any, name: str, pkg: str, device: str, report: dict[str, str],
                                          test_id: str) -> None:
    """One loaded generator, three prompts in a row, each through the prefill graph (a second
    run of a graph that shares the decode graph's weights: Note [Shared constants end in the
    first buffer]): the first and the third, the same prompt, give the reference's tokens."""
    n = 16
    model = models.build(name)
    with torch.no_grad():
        if models.CASES[name].family == "gptfast":
            ref, _ = models.gptfast_greedy(model, torch.tensor([models.PROMPT]), n)
        else:
            ref = models.hf_greedy(model, torch.tensor([models.PROMPT]), n).tokens
    lm = aotrt.load_generator(pkg, device=device)
    first = list(lm.generate(models.PROMPT, max_new_tokens=n, eos_token_ids=[]))
    other = list(lm.generate(long_prompt(models.MAX_PREFILL_LEN), max_new_tokens=n, eos_token_ids=[]))
    again = list(lm.generate(models.PROMPT, max_new_tokens=n, eos_token_ids=[]))
    report[test_id] = f"{name}: three prompts on one generator: {n} tokens each, first == third: {first == again}"
    assert first == list(ref)[:n], f"\n reference {list(ref)[:n]}\n aotrt     {first}"
    assert again == first, f"\n first {first}\n third {again} (the second prompt gave {other})"
