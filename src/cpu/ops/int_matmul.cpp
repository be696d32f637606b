// The CPU's integer matmul kernels (Note [Integer matmul semantics]): rows
// in parallel, exact int32 accumulation for int8 x int8 (int32 and int64
// operands wrap in their own width), float32 for the int8-weight product
// and the int4-weight one (Note [Int4 packed weights]).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/error.h"

#include "ops/dispatch.h"
#include "ops/int_matmul.h"

namespace aotrt::cpu {
namespace {
using ops::IntMatmulKernels;

// Accumulated in Acc's unsigned type, so that a sum past Acc's range wraps
// (as ATen's integer matmul does) instead of overflowing.
template <class In, class Acc>
void int_mm_typed(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  using U = std::make_unsigned_t<Acc>;
  const int64_t m = a.sizes()[0], k = a.sizes()[1], n = b.sizes()[1];
  const auto* x = static_cast<const In*>(a.data_ptr());
  const auto* y = static_cast<const In*>(b.data_ptr());
  auto* o = static_cast<Acc*>(out.data_ptr());
#pragma omp parallel for if (m * n * k > 65536)
  for (int64_t i = 0; i < m; ++i) {
    std::vector<U> row(static_cast<size_t>(n), U{0});
    for (int64_t p = 0; p < k; ++p) {
      const auto v = static_cast<U>(static_cast<Acc>(x[i * k + p]));
      const In* yr = y + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += v * static_cast<U>(static_cast<Acc>(yr[j]));
    }
    for (int64_t j = 0; j < n; ++j) o[i * n + j] = static_cast<Acc>(row[j]);
  }
}

void int_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  switch (a.dtype()) {
    case ScalarType::Int8: return int_mm_typed<int8_t, int32_t>(out, a, b);
    case ScalarType::Int32: return int_mm_typed<int32_t, int32_t>(out, a, b);
    case ScalarType::Int64: return int_mm_typed<int64_t, int64_t>(out, a, b);
    default:
      AOTRT_FAIL(kInternal, "int_mm kernel: dtype ", dtype_name(a.dtype()));
  }
}

void int8_weight_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                    const TensorImpl& scales) {
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = w.sizes()[0];
  const auto* x = static_cast<const float*>(a.data_ptr());
  const auto* wt = static_cast<const int8_t*>(w.data_ptr());
  const auto* s = static_cast<const float*>(scales.data_ptr());
  auto* o = static_cast<float*>(out.data_ptr());
#pragma omp parallel for collapse(2) if (M * N * K > 65536)
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < K; ++p) acc += x[i * K + p] * static_cast<float>(wt[j * K + p]);
      o[i * N + j] = acc * s[j];
    }
  }
}

// The int4 weight's q[n, k] for column j of the block starting at column n0
// (nb columns, split as the layout says), from the block's bytes.
inline int int4_at(const uint8_t* block, int64_t k, int64_t j, int64_t nb, bool split) {
  const uint8_t* row = block + k * (nb / 2);
  if (split) return j < nb / 2 ? row[j] & 0xF : row[j - nb / 2] >> 4;
  return (j & 1) == 0 ? row[j / 2] & 0xF : row[j / 2] >> 4;
}

// Per block of the packed layout's columns: its [K, nb] weights dequantized
// once into float, then each row of A accumulated over k in order (as ATen).
void int4_weight_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                    int64_t group, const TensorImpl& scale_zeros, ops::Int4PackLayout layout) {
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = w.sizes()[0];
  const auto* x = static_cast<const float*>(a.data_ptr());
  const auto* packed = static_cast<const uint8_t*>(w.data_ptr());
  const auto* sz = static_cast<const float*>(scale_zeros.data_ptr());
  auto* o = static_cast<float*>(out.data_ptr());
  const int64_t blocks = (N + layout.block_n - 1) / layout.block_n;
#pragma omp parallel if (M * N * K > 65536)
  {
    std::vector<float> wt;
    std::vector<float> acc;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t n0 = b * layout.block_n, nb = std::min(layout.block_n, N - n0);
      const bool split = layout.split && nb == layout.block_n;
      const uint8_t* block = packed + n0 * (K / 2);
      wt.resize(static_cast<size_t>(K * nb));
      acc.resize(static_cast<size_t>(nb));
      for (int64_t k = 0; k < K; ++k) {
        const float* s = sz + (k / group) * N * 2;
        for (int64_t j = 0; j < nb; ++j) {
          const float q = static_cast<float>(int4_at(block, k, j, nb, split) - 8);
          wt[k * nb + j] = q * s[(n0 + j) * 2] + s[(n0 + j) * 2 + 1];
        }
      }
      for (int64_t i = 0; i < M; ++i) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        const float* xr = x + i * K;
        for (int64_t k = 0; k < K; ++k) {
          const float v = xr[k];
          const float* wr = wt.data() + k * nb;
          for (int64_t j = 0; j < nb; ++j) acc[j] += v * wr[j];
        }
        std::copy(acc.begin(), acc.end(), o + i * N + n0);
      }
    }
  }
}

// The inverse of int4_at: each output byte from its two columns.
void int4_pack(const TensorImpl& out, const TensorImpl& q, ops::Int4PackLayout layout) {
  const int64_t N = q.sizes()[0], K = q.sizes()[1];
  const auto* src = static_cast<const int32_t*>(q.data_ptr());
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  for (int64_t n0 = 0; n0 < N; n0 += layout.block_n) {
    const int64_t nb = std::min(layout.block_n, N - n0), half = nb / 2;
    const bool split = layout.split && nb == layout.block_n;
    uint8_t* block = dst + n0 * (K / 2);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t lo = n0 + (split ? i : 2 * i), hi = lo + (split ? half : 1);
        block[k * half + i] = static_cast<uint8_t>(static_cast<uint8_t>(src[hi * K + k]) << 4) |
                              static_cast<uint8_t>(src[lo * K + k]);
      }
    }
  }
}

constexpr IntMatmulKernels kIntMatmul{.int_mm = int_mm,
                                      .int8_weight_mm = int8_weight_mm,
                                      .int4_weight_mm = int4_weight_mm,
                                      .int4_pack = int4_pack};
AOTRT_REGISTER_KERNELS(IntMatmulKernels, cpu, kIntMatmul);

}  // namespace
}  // namespace aotrt::cpu
