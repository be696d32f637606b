// The arithmetic of Note [Token sampling] (ops/sampling.h) that both backends
// compute the same way: keys, weights, the draw and the top-p run. Host and
// device functions (nvcc compiles them for src/cuda/ops/sampling.cu).
#pragma once

#include <float.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "core/host_device.h"
#include "core/philox.h"
#include "ops/sampling.h"

namespace aotrt::ops::sampling_math {

// An order-preserving key of a float: a larger float has a larger key; -0.0
// gets 0.0's key, so equal floats have equal keys.
AOTRT_HOST_DEVICE inline uint32_t float_key(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}
AOTRT_HOST_DEVICE inline float key_float(uint32_t k) {
  const uint32_t u = (k & 0x80000000u) != 0 ? (k & 0x7FFFFFFFu) : ~k;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
inline constexpr uint32_t kNegInfKey = 0x007FFFFFu;  // float_key(-inf)

// Keys for sampling: NaN below everything (0, under -inf's key).
AOTRT_HOST_DEVICE inline uint32_t sample_key(float s) { return s != s ? 0u : float_key(s); }
// A row whose largest sampling key is this has a finite or +inf s to draw.
AOTRT_HOST_DEVICE inline bool drawable(uint32_t max_key) { return max_key > kNegInfKey; }

// Greedy: (key, index) packed so that the largest value wins, then the lowest
// index; NaN above +inf (torch.argmax).
AOTRT_HOST_DEVICE inline uint64_t argmax_pack(float x, int64_t i) {
  const uint32_t key = x != x ? 0xFFFFFFFFu : float_key(x);
  return static_cast<uint64_t>(key) << 32 | (0xFFFFFFFFu - static_cast<uint32_t>(i));
}
AOTRT_HOST_DEVICE inline int64_t argmax_index(uint64_t packed) {
  return static_cast<int64_t>(0xFFFFFFFFu - static_cast<uint32_t>(packed));
}

// F of Note [Token sampling]: V weights of at most 2^F sum below 2^62.
AOTRT_HOST_DEVICE inline int fixed_bits(int64_t vocab) {
  int width = 0;
  for (uint64_t v = static_cast<uint64_t>(vocab); v != 0; v >>= 1) ++width;
  return 62 - width;
}
// W = trunc(exp(s - max) * 2^bits); 0 for NaN and -inf; 2^bits for s == max.
AOTRT_HOST_DEVICE inline uint64_t fixed_weight(float s, float max, int bits) {
  if (!(s > -INFINITY)) return 0;
  const float w = s == max ? 1.0f : expf(s - max);
  return static_cast<uint64_t>(w * static_cast<float>(uint64_t{1} << bits));
}

// What a row asks for, with Note [Token sampling]'s rules for values out of
// range (check_sampling_params refuses those on the host).
struct RowRule {
  bool greedy = true;
  float temperature = 0.f;
  bool top_k = false;
  int64_t k = 0;
  bool top_p = false;
  float p = 1.f;
};
AOTRT_HOST_DEVICE inline RowRule row_rule(const SamplingParams& params, int64_t vocab) {
  RowRule r;
  r.greedy = !(params.temperature > 0.f);
  r.temperature = params.temperature;
  r.top_k = params.top_k > 0 && params.top_k < vocab;
  r.k = params.top_k;
  r.top_p = params.top_p < 1.f;
  r.p = params.top_p > 0.f ? params.top_p : FLT_MIN;  // <= 0: only the top token
  return r;
}

// The weight a token of the top-p order may have before it and stay kept.
AOTRT_HOST_DEVICE inline double top_p_limit(float p, uint64_t total) {
  return static_cast<double>(p) * static_cast<double>(total);
}
// How many members of a run of equal weight w (at most `run`), the first of
// which has `before` ahead of it, are kept: the j in [0, run) with
// double(before + j w) < limit (monotone in j, so a bisection).
AOTRT_HOST_DEVICE inline uint64_t kept_in_run(uint64_t before, uint64_t w, double limit,
                                              uint64_t run) {
  uint64_t lo = 0, hi = run;  // the count is in [lo, hi]
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (static_cast<double>(before + (mid - 1) * w) < limit) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// The draw's 64-bit word for (seed, step, row), and the target it picks in
// [0, total): floor(word * total / 2^64).
inline constexpr uint32_t kSampleTag = 0x53414D50u;  // "SAMP"
AOTRT_HOST_DEVICE inline uint64_t draw_word(uint64_t seed, uint64_t step, int64_t row) {
  const PhiloxBlock counter{{static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32),
                             static_cast<uint32_t>(row), kSampleTag}};
  const PhiloxBlock r =
      philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return static_cast<uint64_t>(r.w[1]) << 32 | r.w[0];
}
AOTRT_HOST_DEVICE inline uint64_t draw_target(uint64_t word, uint64_t total) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(word, total);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(word) * total) >> 64);
#endif
}

}  // namespace aotrt::ops::sampling_math
