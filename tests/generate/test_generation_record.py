"""The generation record's vocabulary (Note [Generation package] in aotrt_tools/llm.py) is the
logits' width, whatever the output projection stores: a weight-only quantized projection keeps
a packed weight whose rows are not the vocabulary (tinygemm's int4 packs N / 8 rows), and the
generator refuses prompt tokens at or past the recorded figure. A CUDA bench run recorded 4000
for a 32000-token model so, and refused every prompt.
"""

from __future__ import annotations

import torch
from torch import nn

from tests.generate import models
from aotrt_tools import llm  # noqa: E402


class PackedProjection(nn.Module):
    """An output projection as weight-only quantizers leave it: out_features kept, the weight
    packed into fewer rows than the vocabulary."""

    def __init__(self, lin: nn.Linear):
        super().__init__()
        self.out_features = lin.out_features
        self.register_buffer("weight", torch.zeros(lin.out_features // 8, lin.in_features // 2,
                                                   dtype=torch.uint8))

    def forward(self, x):  # logits of the right width (the values do not matter here)
        return x.new_zeros(*x.shape[:-1], self.out_features)


def test_vocab_size_is_the_logits_width_under_a_packed_projection():
    src = llm.load_source("llama-tiny", max_cache_len=models.MAX_CACHE_LEN)
    vocab = src.model.get_output_embeddings().out_features
    assert llm._vocab_size(src) == vocab
    src.model.set_output_embeddings(PackedProjection(src.model.get_output_embeddings()))
    assert src.model.get_output_embeddings().weight.shape[0] == vocab // 8
    assert llm._vocab_size(src) == vocab


def test_vocab_size_falls_back_to_the_config():
    src = llm.load_source("llama-tiny", max_cache_len=models.MAX_CACHE_LEN)
    proj = PackedProjection(src.model.get_output_embeddings())
    del proj.out_features
    src.model.set_output_embeddings(proj)
    assert llm._vocab_size(src) == src.model.config.vocab_size
