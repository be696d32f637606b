"""aotrt_tools.llm's GQA attention (Note [GQA attention in exports]): a grouped-query decoder
exported through it attends on the unrepeated K/V cache, computes what transformers' SDPA
computes, and leaves the model's attention implementation as it found it.

This checks the exported programs (run as torch modules); the packages aotrt runs with it are
every generation package (GQA is on by default on both devices), whose tokens
test_generate_models.py compares with transformers' generate.
"""

from __future__ import annotations

import pytest
import torch

from tests.generate import models
from aotrt_tools import llm  # noqa: E402

GQA_DECODERS = [n for n in ("llama-tiny", "qwen3-tiny") if n in models.CASES]


def _cache_expands(program) -> int:
    """expand nodes of the graph: repeat_kv is an expand (then a reshape) of each cache."""
    return sum(1 for n in program.graph.nodes if n.op == "call_function" and "expand" in str(n.target))


def _run(graphs, prompt: list[int], step: int) -> tuple[torch.Tensor, torch.Tensor]:
    prefill, decode = (g.program.module() for g in graphs)
    with torch.no_grad():
        first = prefill(input_ids=torch.tensor([prompt]), cache_position=torch.arange(len(prompt)))
        second = decode(input_ids=torch.tensor([[step]]), cache_position=torch.tensor([len(prompt)]))
    return first, second


@pytest.mark.parametrize("name", GQA_DECODERS)
def test_gqa_export_matches_repeat_kv_and_drops_the_copies(name):
    model = llm.load_source(name, max_cache_len=models.MAX_CACHE_LEN).model.eval()
    config = model.config
    assert config.num_key_value_heads < config.num_attention_heads, f"{name} is not grouped-query"
    layers = config.num_hidden_layers

    plain = llm.hf_decoder_graphs(model, models.MAX_CACHE_LEN, 8, gqa=False)
    assert config._attn_implementation == "sdpa"
    gqa = llm.hf_decoder_graphs(model, models.MAX_CACHE_LEN, 8, gqa=True)
    assert config._attn_implementation == "sdpa", "the export must restore the model's attention"

    for p, g in zip(plain, gqa):
        # two expands a layer (key and value) go; what else expands stays
        assert _cache_expands(p.program) - _cache_expands(g.program) == 2 * layers, p.name
    prompt, step = [3, 1, 4, 1, 5], 9
    want, got = _run(plain, prompt, step), _run(gqa, prompt, step)
    for w, o in zip(want, got):
        # one SDPA on the same values in float32; the math kernel's order may differ with the heads'
        # grouping, so fp32 noise is allowed
        torch.testing.assert_close(o, w, rtol=1e-5, atol=1e-5)
