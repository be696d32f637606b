"""Hugging Face architectures for the transformers sweep: transformers' own modelling code.

Each entry builds a small configuration of one architecture (2 layers, hidden 64, random
weights, seeded) and the inputs it is called with, the way a user exports it: a module whose
forward takes tensors positionally and returns the model's first output (last hidden state
or logits). Nobody on the project wrote these models; the sweep (tests/hf/sweep.py) exports
them with torch's own flow and runs them through aotrt.

`dynamic` names, per input, the dims exported as dynamic (torch.export.Dim): such an entry is
run at its export shape and again at `second`, another size of those dims, with the same
package. `dtype` other than float32 casts the model's weights (inputs stay integer ids).
`source` is the library whose models an entry builds: "transformers" here; torchvision's and
timm's entries (full-size image classifiers) are in tests/hf/vision.py, which registers them
in ENTRIES too when it is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

# fp32, atol = rtol = 1e-4: the sweep's small models give outputs of magnitude ~1-4, where
# fp32 reassociation in other kernels (oneDNN, generated code) stays under 2e-6 (measured:
# the largest difference of the 2026-12-02 run is in the table); 1e-4 leaves room for
# reductions ordered differently without hiding a wrong element.
FP32_TOL = dict(atol=1e-4, rtol=1e-4)
# bf16: one bf16 ulp at magnitude 1-2 is 0.0078-0.0156, and a 2-layer decoder's logits move by
# a few ulps when products round in another order; eager bf16 vs eager fp32 of the same
# weights differs by ~0.03 on these logits.
BF16_TOL = dict(atol=5e-2, rtol=2e-2)


@dataclass
class Entry:
    name: str
    doc: str
    build: Callable[[], tuple[nn.Module, list[str], tuple]]
    dtype: torch.dtype = torch.float32
    dynamic: dict[int, dict[int, str]] = field(default_factory=dict)  # input -> dim -> Dim name
    second: Callable[[], tuple] | None = None  # inputs at other dynamic sizes
    source: str = "transformers"  # the library the module comes from (and must be installed)

    @property
    def tol(self) -> dict:
        return BF16_TOL if self.dtype == torch.bfloat16 else FP32_TOL


class FirstOutput(nn.Module):
    """Calls a transformers model with keyword tensors; returns its first output."""

    def __init__(self, model: nn.Module, keys: list[str], extra: dict | None = None):
        super().__init__()
        self.model, self.keys, self.extra = model, keys, extra or {}

    def forward(self, *args):
        return self.model(**dict(zip(self.keys, args)), **self.extra, return_dict=False)[0]


SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
VOCAB = 256


def ids(batch: int = 2, seq: int = 16) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, seq))


def images(batch: int = 2, size: int = 32) -> torch.Tensor:
    return torch.randn(batch, 3, size, size)


ENTRIES: dict[str, Entry] = {}


def entry(name: str, doc: str, **kw):
    def deco(build):
        ENTRIES[name] = Entry(name, doc, build, **kw)
        return build
    return deco


def _t():
    import transformers
    return transformers


# ---- encoders -------------------------------------------------------------------------


@entry("bert", "BertModel with an attention mask (ids, mask) -> last hidden state")
def _bert():
    T = _t()
    m = T.BertModel(T.BertConfig(vocab_size=VOCAB, max_position_embeddings=64, **SMALL))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 11:] = 0
    return m, ["input_ids", "attention_mask"], (ids(), mask)


@entry("bert_dynamic", "BertModel, batch and sequence exported dynamic; run at (2,16) and (3,24)",
       dynamic={0: {0: "batch", 1: "seq"}}, second=lambda: (ids(3, 24),))
def _bert_dynamic():
    T = _t()
    return T.BertModel(T.BertConfig(vocab_size=VOCAB, max_position_embeddings=64, **SMALL)), ["input_ids"], (ids(),)


@entry("roberta", "RobertaModel (position ids from a cumsum over the padding mask)")
def _roberta():
    T = _t()
    m = T.RobertaModel(T.RobertaConfig(vocab_size=VOCAB, max_position_embeddings=64, pad_token_id=1, **SMALL))
    return m, ["input_ids"], (ids(),)


@entry("distilbert", "DistilBertModel")
def _distilbert():
    T = _t()
    c = T.DistilBertConfig(vocab_size=VOCAB, dim=64, hidden_dim=128, n_layers=2, n_heads=4, max_position_embeddings=64)
    return T.DistilBertModel(c), ["input_ids"], (ids(),)


@entry("albert", "AlbertModel (factorised embeddings, shared layers)")
def _albert():
    T = _t()
    c = T.AlbertConfig(vocab_size=VOCAB, embedding_size=32, max_position_embeddings=64, **SMALL)
    return T.AlbertModel(c), ["input_ids"], (ids(),)


@entry("electra", "ElectraModel")
def _electra():
    T = _t()
    c = T.ElectraConfig(vocab_size=VOCAB, embedding_size=32, max_position_embeddings=64, **SMALL)
    return T.ElectraModel(c), ["input_ids"], (ids(),)


@entry("deberta_v2", "DebertaV2Model (disentangled relative-position attention)")
def _deberta_v2():
    T = _t()
    c = T.DebertaV2Config(vocab_size=VOCAB, max_position_embeddings=64, relative_attention=True,
                          position_buckets=16, pos_att_type=["p2c", "c2p"], **SMALL)
    return T.DebertaV2Model(c), ["input_ids"], (ids(),)


@entry("t5_encoder", "T5EncoderModel (relative position buckets, RMS norm)")
def _t5_encoder():
    T = _t()
    c = T.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
    return T.T5EncoderModel(c), ["input_ids"], (ids(),)


@entry("clip_text", "CLIPTextModel (causal mask, argmax pooling)")
def _clip_text():
    T = _t()
    return T.CLIPTextModel(T.CLIPTextConfig(vocab_size=VOCAB, max_position_embeddings=64, **SMALL)), ["input_ids"], (ids(),)


# ---- encoder-decoders -----------------------------------------------------------------


@entry("bart", "BartModel, encoder and decoder (decoder ids shifted from the inputs)")
def _bart():
    T = _t()
    c = T.BartConfig(vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64)
    return T.BartModel(c), ["input_ids"], (ids(),)


@entry("whisper_encoder", "Whisper's audio encoder (two 1-d convs, GELU) on log-mel features (2,16,64)")
def _whisper_encoder():
    T = _t()
    c = T.WhisperConfig(vocab_size=VOCAB, d_model=64, encoder_layers=2, encoder_attention_heads=4, decoder_layers=2,
                        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16,
                        max_source_positions=32, max_target_positions=32, pad_token_id=0, bos_token_id=1,
                        eos_token_id=2, decoder_start_token_id=1)
    return T.WhisperModel(c).encoder, ["input_features"], (torch.randn(2, 16, 64),)


# ---- decoders -------------------------------------------------------------------------


def _causal(config_cls: str, model_cls: str, **kw):
    T = _t()
    return getattr(T, model_cls)(getattr(T, config_cls)(vocab_size=VOCAB, max_position_embeddings=64, **kw))


@entry("qwen2", "Qwen2ForCausalLM (GQA 4/2, RoPE, SwiGLU) -> logits")
def _qwen2():
    return _causal("Qwen2Config", "Qwen2ForCausalLM", num_key_value_heads=2, **SMALL), ["input_ids"], (ids(),)


@entry("mistral", "MistralForCausalLM (GQA, sliding window config) -> logits")
def _mistral():
    return _causal("MistralConfig", "MistralForCausalLM", num_key_value_heads=2, **SMALL), ["input_ids"], (ids(),)


@entry("phi3", "Phi3ForCausalLM (fused qkv and gate-up projections) -> logits")
def _phi3():
    return _causal("Phi3Config", "Phi3ForCausalLM", num_key_value_heads=2, pad_token_id=0, **SMALL), ["input_ids"], (ids(),)


@entry("gemma", "GemmaForCausalLM (GeGLU, scaled embeddings, head_dim 16) -> logits")
def _gemma():
    return (_causal("GemmaConfig", "GemmaForCausalLM", num_key_value_heads=2, head_dim=16, **SMALL),
            ["input_ids"], (ids(),))


@entry("gpt_neox", "GPTNeoXForCausalLM (partial rotary, parallel residual) -> logits")
def _gpt_neox():
    return _causal("GPTNeoXConfig", "GPTNeoXForCausalLM", rotary_pct=0.25, **SMALL), ["input_ids"], (ids(),)


@entry("opt", "OPTForCausalLM (learned positions from a cumsum over the mask) -> logits")
def _opt():
    T = _t()
    c = T.OPTConfig(vocab_size=VOCAB, hidden_size=64, ffn_dim=128, num_hidden_layers=2, num_attention_heads=4,
                    max_position_embeddings=64, word_embed_proj_dim=64)
    return T.OPTForCausalLM(c), ["input_ids"], (ids(),)


@entry("bloom", "BloomForCausalLM (ALiBi position biases) -> logits")
def _bloom():
    T = _t()
    c = T.BloomConfig(vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4)
    return T.BloomForCausalLM(c), ["input_ids"], (ids(),)


@entry("llama_dynamic", "LlamaForCausalLM, sequence exported dynamic; run at (2,16) and (2,40)",
       dynamic={0: {1: "seq"}}, second=lambda: (ids(2, 40),))
def _llama_dynamic():
    return _causal("LlamaConfig", "LlamaForCausalLM", num_key_value_heads=2, **SMALL), ["input_ids"], (ids(),)


@entry("llama_bf16", "LlamaForCausalLM with bf16 weights -> bf16 logits", dtype=torch.bfloat16)
def _llama_bf16():
    return _causal("LlamaConfig", "LlamaForCausalLM", num_key_value_heads=2, **SMALL), ["input_ids"], (ids(),)


@entry("mamba", "MambaModel (selective scan in the slow path, depthwise causal conv1d)")
def _mamba():
    T = _t()
    return T.MambaModel(T.MambaConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, state_size=8)), \
        ["input_ids"], (ids(),)


# ---- vision and audio -----------------------------------------------------------------


@entry("vit", "ViTModel on 32x32 images, patches of 8")
def _vit():
    T = _t()
    return T.ViTModel(T.ViTConfig(image_size=32, patch_size=8, **SMALL)), ["pixel_values"], (images(),)


@entry("dinov2", "Dinov2Model (layer scale, interpolated position embeddings)")
def _dinov2():
    T = _t()
    return T.Dinov2Model(T.Dinov2Config(image_size=32, patch_size=8, **SMALL)), ["pixel_values"], (images(),)


@entry("swin", "SwinModel (shifted windows, relative position bias)")
def _swin():
    T = _t()
    c = T.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4)
    return T.SwinModel(c), ["pixel_values"], (images(),)


@entry("convnext", "ConvNextModel (7x7 depthwise convs, layer norm on channels-last)")
def _convnext():
    T = _t()
    c = T.ConvNextConfig(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], image_size=64)
    return T.ConvNextModel(c), ["pixel_values"], (images(size=64),)


@entry("resnet", "transformers' ResNetModel (conv, batch norm, max pool)")
def _resnet():
    T = _t()
    c = T.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="bottleneck")
    return T.ResNetModel(c), ["pixel_values"], (images(size=64),)


@entry("segformer", "SegformerModel (overlapping patch merging, efficient attention)")
def _segformer():
    T = _t()
    c = T.SegformerConfig(hidden_sizes=[16, 32], depths=[1, 1], num_encoder_blocks=2, sr_ratios=[2, 1],
                          num_attention_heads=[1, 2], decoder_hidden_size=32, patch_sizes=[7, 3], strides=[4, 2],
                          mlp_ratios=[2, 2])
    return T.SegformerModel(c), ["pixel_values"], (images(size=64),)


@entry("wav2vec2", "Wav2Vec2Model (conv feature extractor, grouped positional conv) on raw audio (2,800)")
def _wav2vec2():
    T = _t()
    c = T.Wav2Vec2Config(vocab_size=32, conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, **SMALL)
    return T.Wav2Vec2Model(c), ["input_values"], (torch.randn(2, 800),)


def build(name: str) -> tuple[nn.Module, tuple, Entry]:
    """The entry's module (eval, its dtype) and inputs, from a fixed seed. Builders return
    (model, keys, inputs); keys None: the model takes the inputs positionally and returns one
    tensor (torchvision's and timm's classifiers)."""
    e = ENTRIES[name]
    torch.manual_seed(0)
    model, keys, inputs = e.build()
    module = (FirstOutput(model.eval(), keys) if keys is not None else model).eval()
    if e.dtype != torch.float32:
        module = module.to(e.dtype)
    return module, inputs, e
