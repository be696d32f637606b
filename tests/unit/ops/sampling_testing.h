// What the sampling tests share (test_ops_sampling.cpp on every backend,
// cuda/test_cuda_sampling.cpp): tensors of sample_tokens' arguments on a
// device, read back, and references written from Hugging Face's rules and
// Note [Token sampling], independent of the kernels.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "conformance_backends.h"
#include "core/copy.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ops/sampling.h"
#include "ops/sampling_math.h"

namespace aotrt::test::sampling {

using ops::SamplingParams;
using TensorPtr = std::unique_ptr<TensorImpl>;

// --- Tensors ---------------------------------------------------------------------

inline TensorPtr host_tensor(const Dims& sizes, ScalarType dtype, const void* bytes) {
  TensorPtr t = empty_strided(sizes, row_major(sizes), dtype, cpu_device(), "test");
  if (t->numel() > 0) std::memcpy(t->data_ptr(), bytes, t->numel() * t->itemsize());
  return t;
}

// values (row-major over sizes) in a new view of `strides` on `device`, converted to dtype by
// aotrt's copy.
inline TensorPtr device_tensor(Device device, const Dims& sizes, const Dims& strides,
                               ScalarType dtype, const std::vector<float>& values) {
  TensorPtr host = host_tensor(sizes, ScalarType::Float32, values.data());
  TensorPtr t = empty_strided(sizes, strides, dtype, device, "test");
  if (t->numel() > 0) copy_tensor(*t, *host, "test");
  return t;
}

// Logits [rows, vocab]; transposed: column-major memory (strides {1, rows}).
inline TensorPtr make_logits(Device device, int64_t rows, int64_t vocab, ScalarType dtype,
                             const std::vector<float>& values, bool transposed = false) {
  const Dims strides = transposed ? Dims{1, rows} : Dims{vocab, 1};
  return device_tensor(device, {rows, vocab}, strides, dtype, values);
}

template <typename T>
TensorPtr raw_tensor(Device device, const Dims& sizes, ScalarType dtype, const T* data) {
  TensorPtr host = host_tensor(sizes, dtype, data);
  TensorPtr t = empty_strided(sizes, row_major(sizes), dtype, device, "test");
  if (t->numel() > 0) copy_tensor(*t, *host, "test");
  return t;
}

inline TensorPtr make_params(Device device, const std::vector<SamplingParams>& p) {
  const Dims sizes{static_cast<int64_t>(p.size() * sizeof(SamplingParams))};
  return raw_tensor(device, sizes, ScalarType::UInt8, reinterpret_cast<const uint8_t*>(p.data()));
}
inline TensorPtr make_steps(Device device, const std::vector<uint64_t>& steps) {
  return raw_tensor(device, {static_cast<int64_t>(steps.size())}, ScalarType::UInt64,
                    steps.data());
}
inline TensorPtr make_tokens(Device device, int64_t rows) {
  const std::vector<int64_t> fill(static_cast<size_t>(rows), -1);
  return raw_tensor(device, {rows}, ScalarType::Int64, fill.data());
}

// Any view's elements, row-major, in its own dtype.
template <typename T>
std::vector<T> read_back(const TensorImpl& t) {
  const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  TensorPtr host = empty_strided(sizes, row_major(sizes), t.dtype(), cpu_device(), "test");
  std::vector<T> out(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return out;
  copy_tensor(*host, t, "test");
  std::memcpy(out.data(), host->data_ptr(), out.size() * sizeof(T));
  return out;
}
// The logits as float32, as the kernel sees them (after rounding to their dtype).
inline std::vector<float> logits_as_float(const TensorImpl& logits) {
  const std::vector<int64_t> sizes(logits.sizes().begin(), logits.sizes().end());
  TensorPtr f = empty_strided(sizes, row_major(sizes), ScalarType::Float32, logits.device(),
                              "test");
  copy_tensor(*f, logits, "test");
  return read_back<float>(*f);
}

// One call's arguments on a device; sample() calls sample_tokens and reads the tokens.
struct Call {
  TensorPtr logits, params, step, tokens;
  std::vector<float> host;  // logits as float32, row-major
  int64_t rows = 0, vocab = 0;

  Call(Device device, int64_t rows_, int64_t vocab_, ScalarType dtype,
       const std::vector<float>& values, const std::vector<SamplingParams>& p,
       uint64_t first_step = 0, bool transposed = false)
      : rows(rows_), vocab(vocab_) {
    logits = make_logits(device, rows, vocab, dtype, values, transposed);
    params = make_params(device, p);
    step = make_steps(device, std::vector<uint64_t>(static_cast<size_t>(rows), first_step));
    tokens = make_tokens(device, rows);
    host = logits_as_float(*logits);
  }
  std::vector<int64_t> sample() {
    TensorImpl* outs[] = {tokens.get()};
    ops::sample_tokens(*logits, *params, *step, outs);
    return read_back<int64_t>(*tokens);
  }
  void set_params(const std::vector<SamplingParams>& p) {
    params = make_params(logits->device(), p);
  }
  const float* row(int64_t r) const { return host.data() + r * vocab; }
};

inline std::vector<float> normal_logits(int64_t n, float scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

inline SamplingParams params(float temperature, int64_t top_k, float top_p, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.seed = seed;
  return p;
}

// --- References --------------------------------------------------------------------

// torch.argmax: NaN is the largest (the first NaN wins), then the lowest index of the max.
inline int64_t ref_argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return i;
    if (x[i] > x[best]) best = i;
  }
  return best;
}

// The tokens HF keeps of tempered scores s (top-k then top-p with probabilities in double),
// sorted by index; ties in the top-p order by index (Note [Token sampling]). `near` is set when
// some cumulative probability lies within 1e-6 of top_p (a knife edge between rules of
// different precision).
struct Kept {
  std::vector<int64_t> tokens;
  std::vector<double> probs;  // of each kept token, after the filters
  bool near = false;
};
inline Kept hf_kept(const std::vector<float>& s, int64_t top_k, float top_p) {
  const int64_t n = static_cast<int64_t>(s.size());
  std::vector<char> keep(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) keep[i] = !std::isnan(s[i]);
  if (top_k > 0 && top_k < n) {
    std::vector<float> sorted;
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isnan(s[i])) sorted.push_back(s[i]);
    }
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const float kth = top_k <= static_cast<int64_t>(sorted.size())
                          ? sorted[static_cast<size_t>(top_k - 1)]
                          : -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) keep[i] = keep[i] && s[i] >= kth;
  }
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (keep[i]) m = std::max(m, s[i]);
  }
  auto weight = [&](int64_t i) {
    if (!(s[i] > -std::numeric_limits<float>::infinity())) return 0.0;
    return s[i] == m ? 1.0 : std::exp(static_cast<double>(s[i]) - m);
  };
  Kept k;
  if (top_p < 1.f) {
    std::vector<int64_t> order;
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (keep[i]) {
        order.push_back(i);
        total += weight(i);
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s[a] > s[b]; });
    double before = 0;
    for (const int64_t i : order) {
      if (std::abs(before - top_p) < 1e-6) k.near = true;
      if (!(before < top_p)) keep[i] = 0;
      before += weight(i) / total;
    }
  }
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (keep[i]) total += weight(i);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (keep[i] && weight(i) > 0) {
      k.tokens.push_back(i);
      k.probs.push_back(weight(i) / total);
    }
  }
  return k;
}

inline std::vector<float> tempered(const float* x, int64_t n, float temperature) {
  std::vector<float> s(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s[i] = x[i] / temperature;
  return s;
}

// The token Note [Token sampling] draws for one row: the kept set of hf_kept, weights W in
// index order, the Philox target. `near`: a knife edge (hf_kept's, or a target within 1e-6 of
// the total from the chosen token's bounds), where a device whose expf differs in the last
// bit may rightly draw a neighbour.
struct Expected {
  int64_t token = -1;
  bool near = false;
};
inline Expected expected_token(const float* x, int64_t n, const SamplingParams& p, uint64_t step,
                               int64_t row) {
  using namespace ops::sampling_math;
  if (!(p.temperature > 0.f)) return {ref_argmax(x, n), false};
  const std::vector<float> s = tempered(x, n, p.temperature);
  const int64_t k_rule = p.top_k > 0 && p.top_k < n ? p.top_k : 0;
  const float p_rule = p.top_p < 1.f ? (p.top_p > 0.f ? p.top_p : 1e-30f) : 1.f;
  const Kept kept = hf_kept(s, k_rule, p_rule);
  if (kept.tokens.empty()) return {ref_argmax(x, n), false};
  float m = -std::numeric_limits<float>::infinity();
  for (const float v : s) {
    if (!std::isnan(v)) m = std::max(m, v);
  }
  const int bits = fixed_bits(n);
  uint64_t total = 0;
  std::vector<uint64_t> w;
  for (const int64_t i : kept.tokens) {
    w.push_back(fixed_weight(s[i], m, bits));
    total += w.back();
  }
  const uint64_t target = draw_target(draw_word(p.seed, step, row), total);
  uint64_t before = 0;
  Expected e;
  e.near = kept.near;
  for (size_t j = 0; j < w.size(); ++j) {
    if (before + w[j] > target) {
      e.token = kept.tokens[j];
      const double slack = 1e-6 * static_cast<double>(total);
      e.near = e.near || static_cast<double>(target - before) < slack ||
               static_cast<double>(before + w[j] - 1 - target) < slack;
      return e;
    }
    before += w[j];
  }
  return e;
}

// Pearson's chi-square of counts against probabilities (both over the same tokens), and the
// value it exceeds with probability 1e-6 under the null hypothesis (Wilson-Hilferty's
// approximation of the quantile, z = 4.753).
inline double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& probs) {
  const double n = static_cast<double>(std::accumulate(counts.begin(), counts.end(), int64_t{0}));
  double x2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = n * probs[i];
    x2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return x2;
}
inline double chi_square_limit(int64_t df) {
  const double d = static_cast<double>(df), z = 4.753;
  const double a = 2.0 / (9.0 * d);
  return d * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

}  // namespace aotrt::test::sampling
