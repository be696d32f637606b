// Random ops: rand, randn, randint (and their _like and _out forms),
// randperm, bernoulli_, uniform, normal_functional, exponential,
// native_dropout, multinomial, prims::normal.
//
// Note [Random streams]
// Every device has one generator: a 64-bit seed and a 64-bit offset. The
// seed starts as 67280421310721 (torch's default_rng_seed_val, so a fresh
// aotrt and a fresh torch process start from the same documented seed,
// though not the same numbers) and is set with aotrt::manual_seed(), which
// also sets the offset back to 0. A call that makes n values reserves n
// counters with one atomic add (concurrent runs draw disjoint counters),
// and element i, in row-major order of the output's sizes, is a function of
// the block philox4x32_10(seed, base + i) alone (core/philox.h), computed
// the same way by the CPU and CUDA kernels:
// - uniform [from, to): float32/16/bf16 from (w0 >> 8) * 2^-24 (24 bits, as
//   ATen's float draw), float64 from 53 bits of (w0, w1);
// - normal: Box-Muller on u1 = 1 - unit(w0, w1) (in (0, 1]) and
//   u2 = unit(w2, w3): mean + std * sqrt(-2 ln u1) cos(2 pi u2);
// - randint [low, high): low + ((w1 << 32 | w0) mod (high - low));
// - bernoulli(p): unit(w0, w1) < p;  exponential(l): -log1p(-unit) / l;
// - randperm(n): Fisher-Yates, swapping i with i + (r_i mod (n - i)) for
//   i = 0..n-2, r_i the randint word of counter base + i (sequential, as
//   ATen's CPU randperm).
// - multinomial(p, k) with replacement: sample j of row r from counter
//   base + r * k + j, u = unit(w0, w1): the first category whose cumulative
//   weight exceeds u * (the row's total), so a zero weight is never drawn;
//   without replacement: category c of row r from counter base + r * n + c,
//   e = -log1p(-unit(w0, w1)) (exponential), key p_c / e; the k largest keys
//   in descending order (ATen's algorithm: p / exponential, then top-k), zero
//   weights after every positive one, in index order, when k exceeds the
//   positive ones (ATen allows that too).
// Values of other dtypes are made in float32/float64/int64 and converted
// with copy_ (so float16 rounding is copy_'s). A generator argument must be
// None: torch's generated code has no way to pass another, and aotrt makes
// no generator objects.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "core/tensor.h"
#include "core/view.h"

namespace aotrt::ops {

enum class RandomKind { kUniform, kNormal, kRandint, kBernoulli, kExponential };

struct RandomDraw {
  RandomKind kind = RandomKind::kUniform;
  double a = 0, b = 1;           // uniform [a, b); normal mean a, std b; exponential lambda a
  int64_t low = 0;               // randint
  uint64_t range = 1;            // randint: high - low
  // bernoulli: dense float64 probabilities of out's sizes, or null for `a`.
  const TensorImpl* p = nullptr;
};

// See Note [Op dispatch] in ops/dispatch.h. `out` is dense (contiguous) of
// float32, float64 or int64 (randint), made by the family.
struct RandomKernels {
  void (*generate)(const TensorImpl& out, const RandomDraw& draw, uint64_t seed, uint64_t base);
  // out: dense int64 [n].
  void (*randperm)(const TensorImpl& out, uint64_t seed, uint64_t base);
  // Dropout: mask[i] <- bernoulli(keep) as kBernoulli draws it, out[i] <-
  // x[i] * mask[i] * scale; out, mask and x dense of one dtype (float32 or
  // float64).
  void (*dropout)(const TensorImpl& out, const TensorImpl& mask, const TensorImpl& x,
                  double keep, double scale, uint64_t seed, uint64_t base);
  // probs: dense float64 [rows, n], checked here (ATen's messages: no inf,
  // NaN or negative weight, a positive sum per row); out: dense int64
  // [rows, k]. Counters: rows * k with replacement, rows * n without.
  void (*multinomial)(const TensorImpl& probs, const TensorImpl& out, bool replacement,
                      uint64_t seed, uint64_t base, const char* fn);
};

// Reserves n counters of device's generator; returns (seed, base).
std::pair<uint64_t, uint64_t> reserve_counters(Device device, uint64_t n);
void set_seed(uint64_t seed);

using TensorPtr = std::unique_ptr<TensorImpl>;

// Fills t (any view, any dtype the draw allows) in place.
void fill_random(const TensorImpl& t, const RandomDraw& draw, const char* fn);

// Factories: contiguous outputs; dtype None means float32 (int64 for
// randint and randperm), as ATen's defaults.
TensorPtr random_tensor(std::span<const int64_t> size, std::optional<ScalarType> dtype,
                        Device device, const RandomDraw& draw, const char* fn);
// *_like: self's sizes; strides as empty_like makes them in `format` (None:
// preserve_format).
TensorPtr random_like(const TensorImpl& self, std::optional<ScalarType> dtype,
                      std::optional<MemoryFormatArg> format, const RandomDraw& draw,
                      const char* fn);
TensorPtr randperm(int64_t n, std::optional<ScalarType> dtype, Device device, const char* fn);
// bernoulli_(self, p) with p a tensor broadcast to self's sizes.
void bernoulli_tensor_(const TensorImpl& self, const TensorImpl& p, const char* fn);
// bernoulli(self, p): a new tensor like self (empty_like) of draws with
// self's dtype, probabilities p broadcast to self's sizes.
TensorPtr bernoulli_tensor(const TensorImpl& self, const TensorImpl& p, const char* fn);
// A new tensor like self (functional forms: uniform, normal_functional,
// exponential): same sizes and strides rule as clone.
TensorPtr random_functional(const TensorImpl& self, const RandomDraw& draw, const char* fn);

// native_dropout(input, p, train) -> (output, mask): train None or true
// keeps each element with probability 1 - p, scaled by 1 / (1 - p) (0 when
// p = 1); train false gives (a copy of input, all true). Both outputs laid
// out as empty_like(input); mask is bool.
std::pair<TensorPtr, TensorPtr> native_dropout(const TensorImpl& input, double p,
                                               std::optional<bool> train, const char* fn);

// multinomial(self, num_samples, replacement): int64 [num_samples] for a
// 1-d self, [rows, num_samples] for a 2-d one, contiguous; self of a
// floating dtype, any strides.
TensorPtr multinomial(const TensorImpl& self, int64_t num_samples, bool replacement,
                      const char* fn);

// Refuses a generator argument that is not None.
void check_default_generator(const void* const* generator, const char* fn);

}  // namespace aotrt::ops
