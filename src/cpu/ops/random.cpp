// The CPU's random kernels: each element from its own Philox block (Note
// [Random streams]), so the loop runs in parallel and gives the same values
// as the CUDA kernel.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/philox.h"
#include "ops/dispatch.h"
#include "ops/random.h"

namespace aotrt::cpu {
namespace {
using ops::RandomDraw;
using ops::RandomKernels;
using ops::RandomKind;

template <class T>
T value(const RandomDraw& d, const double* p, int64_t i, uint64_t seed, uint64_t base) {
  const PhiloxBlock r = philox4x32_10(seed, base + static_cast<uint64_t>(i));
  switch (d.kind) {
    case RandomKind::kUniform:
      if constexpr (sizeof(T) == 4) {
        return static_cast<T>(d.a + (d.b - d.a) * philox_unit_float(r.w[0]));
      } else {
        return static_cast<T>(d.a + (d.b - d.a) * philox_unit(r.w[0], r.w[1]));
      }
    case RandomKind::kNormal: {
      const double u1 = 1.0 - philox_unit(r.w[0], r.w[1]);
      const double u2 = philox_unit(r.w[2], r.w[3]);
      return static_cast<T>(d.a + d.b * std::sqrt(-2.0 * std::log(u1)) *
                                      std::cos(2.0 * std::numbers::pi * u2));
    }
    case RandomKind::kRandint: {
      const uint64_t bits = (static_cast<uint64_t>(r.w[1]) << 32) | r.w[0];
      // low + offset in uint64, two's complement: for a range of more than 2^63
      // values the signed sum overflowed (found by the op_shims fuzzer).
      return static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(d.low) + bits % d.range));
    }
    case RandomKind::kBernoulli:
      return static_cast<T>(philox_unit(r.w[0], r.w[1]) < (p != nullptr ? p[i] : d.a) ? 1 : 0);
    case RandomKind::kExponential:
      return static_cast<T>(-std::log1p(-philox_unit(r.w[0], r.w[1])) / d.a);
  }
  return T{};
}

template <class T>
void fill(T* out, int64_t n, const RandomDraw& d, uint64_t seed, uint64_t base) {
  const double* p = d.p != nullptr ? static_cast<const double*>(d.p->data_ptr()) : nullptr;
#pragma omp parallel for if (n > 16384)
  for (int64_t i = 0; i < n; ++i) out[i] = value<T>(d, p, i, seed, base);
}

void generate(const TensorImpl& out, const RandomDraw& d, uint64_t seed, uint64_t base) {
  const int64_t n = out.numel();
  switch (out.dtype()) {
    case ScalarType::Float32: fill(static_cast<float*>(out.data_ptr()), n, d, seed, base); break;
    case ScalarType::Float64: fill(static_cast<double*>(out.data_ptr()), n, d, seed, base); break;
    case ScalarType::Int64: fill(static_cast<int64_t*>(out.data_ptr()), n, d, seed, base); break;
    default:
      AOTRT_FAIL(kInternal, "random kernel: dtype ", dtype_name(out.dtype()));
  }
}

void randperm(const TensorImpl& out, uint64_t seed, uint64_t base) {
  auto* v = static_cast<int64_t*>(out.data_ptr());
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const PhiloxBlock r = philox4x32_10(seed, base + static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(r.w[1]) << 32) | r.w[0];
    const int64_t j = i + static_cast<int64_t>(bits % static_cast<uint64_t>(n - i));
    std::swap(v[i], v[j]);
  }
}

template <class T>
void dropout_typed(T* out, T* mask, const T* x, int64_t n, double keep, double scale,
                   uint64_t seed, uint64_t base) {
#pragma omp parallel for if (n > 16384)
  for (int64_t i = 0; i < n; ++i) {
    const PhiloxBlock r = philox4x32_10(seed, base + static_cast<uint64_t>(i));
    const bool kept = philox_unit(r.w[0], r.w[1]) < keep;
    mask[i] = kept ? T(1) : T(0);
    out[i] = kept ? static_cast<T>(x[i] * scale) : T(0);
  }
}

void dropout(const TensorImpl& out, const TensorImpl& mask, const TensorImpl& x, double keep,
             double scale, uint64_t seed, uint64_t base) {
  if (x.dtype() == ScalarType::Float32) {
    dropout_typed(static_cast<float*>(out.data_ptr()), static_cast<float*>(mask.data_ptr()),
                  static_cast<const float*>(x.data_ptr()), x.numel(), keep, scale, seed, base);
  } else {
    dropout_typed(static_cast<double*>(out.data_ptr()), static_cast<double*>(mask.data_ptr()),
                  static_cast<const double*>(x.data_ptr()), x.numel(), keep, scale, seed, base);
  }
}

// Note [Random streams], multinomial. Rows run in parallel, each from its own
// counters.
void multinomial(const TensorImpl& probs, const TensorImpl& out, bool replacement, uint64_t seed,
                 uint64_t base, const char* fn) {
  const int64_t rows = probs.sizes()[0], n = probs.sizes()[1], k = out.sizes().back();
  const auto* p = static_cast<const double*>(probs.data_ptr());
  auto* o = static_cast<int64_t*>(out.data_ptr());
  for (int64_t i = 0; i < rows * n; ++i) {
    AOTRT_CHECK(std::isfinite(p[i]) && p[i] >= 0, kInvalidArgument, fn,
                ": probability tensor contains either `inf`, `nan` or element < 0 (element ",
                i % n, " of row ", i / n, " is ", p[i], ")");
  }
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t c = 0; c < n; ++c) total += p[r * n + c];
    AOTRT_CHECK(total > 0, kInvalidArgument, fn,
                ": invalid multinomial distribution (sum of probabilities <= 0) in row ", r);
  }
#pragma omp parallel for if (rows * n > 16384)
  for (int64_t r = 0; r < rows; ++r) {
    const double* w = p + r * n;
    int64_t* row_out = o + r * k;
    if (replacement) {
      std::vector<double> cdf(static_cast<size_t>(n));
      double acc = 0;
      for (int64_t c = 0; c < n; ++c) cdf[c] = acc += w[c];
      for (int64_t j = 0; j < k; ++j) {
        const PhiloxBlock b = philox4x32_10(seed, base + static_cast<uint64_t>(r * k + j));
        const double x = philox_unit(b.w[0], b.w[1]) * acc;
        const auto it = std::upper_bound(cdf.begin(), cdf.end(), x);
        // x < acc, so some cumulative weight exceeds it; min() only guards rounding.
        row_out[j] = std::min<int64_t>(it - cdf.begin(), n - 1);
      }
    } else {
      std::vector<std::pair<double, int64_t>> keys(static_cast<size_t>(n));
      for (int64_t c = 0; c < n; ++c) {
        const PhiloxBlock b = philox4x32_10(seed, base + static_cast<uint64_t>(r * n + c));
        const double e = -std::log1p(-philox_unit(b.w[0], b.w[1]));
        // A zero weight sorts after every positive one (p / e is inf for e = 0).
        keys[c] = {w[c] > 0 ? w[c] / e : -1.0, c};
      }
      std::partial_sort(keys.begin(), keys.begin() + k, keys.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
      });
      for (int64_t j = 0; j < k; ++j) row_out[j] = keys[j].second;
    }
  }
}

constexpr RandomKernels kRandom{.generate = generate,
                                .randperm = randperm,
                                .dropout = dropout,
                                .multinomial = multinomial};
AOTRT_REGISTER_KERNELS(RandomKernels, cpu, kRandom);

}  // namespace
}  // namespace aotrt::cpu
