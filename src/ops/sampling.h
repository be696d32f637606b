// Token sampling for generation: greedy, temperature, top-k and top-p, drawn
// on the logits' device from a Philox counter per (seed, step, row). Not a
// shim (no model calls it): the generation layer calls sample_tokens once per
// decode step, inside the step's CUDA graph.
//
// Note [Token sampling]
// Per row b of logits [B, V], with p = params[b] (Hugging Face's generate
// with do_sample: temperature, then top-k, then top-p, then softmax and one
// multinomial draw; transformers 5.24 generation/logits_process.py):
// - x: the logits converted to float32 (HF casts them too). temperature <= 0
//   or NaN: greedy, the index of the largest x, the lowest index among equal
//   ones, NaN larger than every number (torch.argmax: the first NaN wins);
//   -0.0 equals 0.0.
// - Otherwise s = x / temperature in float32 (a division, as HF's warper on
//   the CPU). A NaN s is never drawn (HF would fail in multinomial), and
//   ranks below -inf in what follows.
// - top-k (0 < k < V): keep every s >= the k-th largest s (HF's rule: ties
//   with the k-th value are all kept, so more than k may stay).
// - Weights: w = exp(s - max s) in float32 (1 for s == max, so a row whose
//   max is +inf shares its draws among its +inf entries), held as the
//   integer W = trunc(w * 2^F) with F = 62 - bit_width(V): every sum below is
//   an exact integer, the same in any order and on every run.
// - top-p (p < 1): order the top-k kept tokens by s descending, equal s by
//   index ascending (a stable descending sort); keep a token while the
//   weight before it is below p * Z, Z the kept weight (double(before) <
//   double(p) * double(Z)): HF's rule (cumsum of the ascending softmax <=
//   1 - p is removed), so the top token is always kept. Where the boundary
//   cuts a run of equal s, HF keeps as many tokens as this rule does, but
//   which ones depends on torch.sort's unspecified order of ties (4 equal
//   logits, p 0.5: the two highest indices; 100 equal: the 50 lowest).
// - Draw: R = the 64-bit word (w1 << 32 | w0) of philox4x32_10 at counter
//   (step lo, step hi, b, 0x53414D50 "SAMP") under key seed (core/philox.h;
//   the tag keeps it apart from the counters of Note [Random streams]);
//   target = floor(R * Zk / 2^64), Zk the weight left after top-p; the token
//   is the first index, in index order, whose running kept weight exceeds
//   target (inverse CDF, as torch.multinomial and Note [Random streams]'s
//   multinomial draw: one Philox block per row rather than one per token as
//   Gumbel-max would take, and exact integer sums). A row with nothing to
//   draw (every s NaN or -inf) takes the greedy token. b is the row in this
//   call: a session that moves to another row draws other numbers (its seed
//   is its own either way).
// - step[b] (uint64) is read, then incremented by one, greedy rows too: it
//   counts the row's tokens, so a CUDA graph replaying the call draws fresh
//   numbers at every replay.
// Out-of-range parameters: sample_tokens refuses them on the CPU (which reads
// them from host memory) as check_sampling_params does. On CUDA they live in
// device memory and reading them back would wait for the device, so the
// kernel serves them as: top_k < 0 as no top-k, top_p <= 0 as the top token
// only, top_p NaN as no top-p, temperature NaN as greedy (sampling_math.h;
// check_sampling_params on the host copy before uploading refuses them).
// top_k >= V and top_p >= 1 are valid and filter nothing.
// HF's warpers compute the top-p sums in float32 softmax; these exact sums
// keep the same set except where a cumulative probability lies within float
// rounding (~1e-7) of p. The CUDA kernel: Note [Sampling on CUDA] in
// cuda/ops/sampling.cu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "core/tensor.h"

namespace aotrt::ops {

// One row's parameters, also the bytes the kernel reads from the logits'
// device: params is B of these, back to back (B * 32 bytes, 8-aligned).
struct SamplingParams {
  float temperature = 0.f;  // <= 0: greedy
  int64_t top_k = 0;        // 0: no top-k
  float top_p = 1.f;        // >= 1: no top-p
  uint64_t seed = 0;
};
static_assert(std::is_standard_layout_v<SamplingParams> && sizeof(SamplingParams) == 32 &&
              offsetof(SamplingParams, top_k) == 8 && offsetof(SamplingParams, top_p) == 16 &&
              offsetof(SamplingParams, seed) == 24);

// tokens plus the extra outputs (the next input_ids, a ring buffer's slot, ...).
inline constexpr int kMaxSampleOutputs = 8;

// A call decoded and checked by sample_tokens: element strides, B >= 1, V >= 1.
struct SampleArgs {
  const void* logits = nullptr;
  ScalarType dtype = ScalarType::Float32;  // float32, bfloat16 or float16
  int64_t rows = 0, vocab = 0;
  int64_t row_stride = 0, col_stride = 0;
  const SamplingParams* params = nullptr;
  uint64_t* step = nullptr;
  int64_t step_stride = 0;
  int outputs = 0;
  int64_t* out[kMaxSampleOutputs] = {};
  int64_t out_stride[kMaxSampleOutputs] = {};
  Device device;
};

// See Note [Op dispatch] in ops/dispatch.h.
struct SamplingKernels {
  void (*sample)(const SampleArgs& args, const char* fn);
};

// Refuses what Note [Token sampling] calls out of range: a NaN temperature,
// top_k < 0, top_p NaN or <= 0.
void check_sampling_params(std::span<const SamplingParams> params, const char* fn);

// For each row b of logits ([B, V], any strides, float32 / bfloat16 /
// float16), writes one token id (Note [Token sampling]) to element b of every
// view in outs (int64, B elements along at most one dim of size > 1: [B],
// [B, 1], a column of a ring buffer; outs[0] is the tokens), reads
// params (B SamplingParams: a dense tensor of B * 32 bytes) and step (uint64
// or int64, B elements as outs), and adds one to each step. Everything on
// logits' device; on CUDA, queued on the calling thread's current stream with
// no host wait and no allocation but from the caching allocator, so a graph
// may capture it. Throws aotrt::Error naming `fn` on a bad argument.
void sample_tokens(const TensorImpl& logits, const TensorImpl& params, const TensorImpl& step,
                   std::span<TensorImpl* const> outs, const char* fn = "sample_tokens");

}  // namespace aotrt::ops
