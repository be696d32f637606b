// The CPU's integer matmul kernels (Note [Integer matmul semantics]): rows
// in parallel, exact int32 accumulation for int8 x int8 (int32 and int64
// operands wrap in their own width), float32 for the int8-weight product
// and the int4-weight one (Note [Int4 packed weights]; its product through
// the float32 gemm of cpu/cpu.h).
#include <algorithm>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "cpu/cpu.h"

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

// Rows [k0, k1) of one packed block (nb <= 64 columns starting at n0)
// dequantized into rows of `out` (leading dimension ld): byte i of a row holds
// columns i and i + nb/2 when split, else 2i and 2i + 1 (low nibble first).
// Nibbles are spread first and scaled in a second, contiguous pass (which
// vectorizes), with each group's scales and zeros gathered once.
void dequantize_block(const uint8_t* block, int64_t k0, int64_t k1, int64_t nb, bool split,
                      int64_t group, const float* sz, int64_t N, int64_t n0, float* out,
                      int64_t ld) {
  const int64_t half = nb / 2;
  float scale[64], zero[64];
  for (int64_t k = k0; k < k1; ++k) {
    if (k % group == 0 || k == k0) {
      const float* g = sz + ((k / group) * N + n0) * 2;
      for (int64_t j = 0; j < nb; ++j) {
        scale[j] = g[j * 2];
        zero[j] = g[j * 2 + 1];
      }
    }
    const uint8_t* bytes = block + k * half;
    float* row = out + (k - k0) * ld;
    // omp simd: GCC's -O2 cost model leaves these scalar (3.5x slower, measured).
    if (split) {
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        row[i] = static_cast<float>((bytes[i] & 0xF) - 8);
        row[i + half] = static_cast<float>((bytes[i] >> 4) - 8);
      }
    } else {
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        row[2 * i] = static_cast<float>((bytes[i] & 0xF) - 8);
        row[2 * i + 1] = static_cast<float>((bytes[i] >> 4) - 8);
      }
    }
#pragma omp simd
    for (int64_t j = 0; j < nb; ++j) row[j] = row[j] * scale[j] + zero[j];
  }
}

// Few rows of A (decoding): per packed block, tiles of kTileK dequantized rows
// (L1-sized) accumulated into each row's [nb] sums in k order, as ATen does.
constexpr int64_t kFewRows = 4;
constexpr int64_t kTileK = 64;

void int4_weight_mm_few_rows(const float* x, const uint8_t* packed, const float* sz, float* o,
                             int64_t M, int64_t K, int64_t N, int64_t group,
                             ops::Int4PackLayout layout) {
  const int64_t blocks = (N + layout.block_n - 1) / layout.block_n;
#pragma omp parallel for schedule(static) if (blocks > 1 && M * N * K > 65536)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t n0 = b * layout.block_n, nb = std::min(layout.block_n, N - n0);
    const bool split = layout.split && nb == layout.block_n;
    float tile[kTileK * 64];
    float acc[kFewRows * 64] = {};
    for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
      const int64_t k1 = std::min(K, k0 + kTileK);
      dequantize_block(packed + n0 * (K / 2), k0, k1, nb, split, group, sz, N, n0, tile, nb);
      for (int64_t i = 0; i < M; ++i) {
        float* ai = acc + i * nb;
        for (int64_t k = k0; k < k1; ++k) {
          const float v = x[i * K + k];
          const float* row = tile + (k - k0) * nb;
#pragma omp simd
          for (int64_t j = 0; j < nb; ++j) ai[j] += v * row[j];
        }
      }
    }
    for (int64_t i = 0; i < M; ++i) std::copy(acc + i * nb, acc + (i + 1) * nb, o + i * N + n0);
  }
}

// Columns in chunks of whole layout blocks (about 128): each chunk's [K, cn]
// weights dequantized once into float, then A [M, K] times them by the float32
// gemm (float32 accumulation, as ATen's; in the gemm's order over k). At most
// kFewRows rows of A take int4_weight_mm_few_rows instead.
void int4_weight_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                    int64_t group, const TensorImpl& scale_zeros, ops::Int4PackLayout layout,
                    const char* fn) {
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = w.sizes()[0];
  const auto* x = static_cast<const float*>(a.data_ptr());
  const auto* packed = static_cast<const uint8_t*>(w.data_ptr());
  const auto* sz = static_cast<const float*>(scale_zeros.data_ptr());
  auto* o = static_cast<float*>(out.data_ptr());
  if (M <= kFewRows) return int4_weight_mm_few_rows(x, packed, sz, o, M, K, N, group, layout);
  const int64_t chunk = std::max<int64_t>(1, 128 / layout.block_n) * layout.block_n;
  const int64_t chunks = (N + chunk - 1) / chunk;
  std::exception_ptr failure;
#pragma omp parallel if (chunks > 1 && M * N * K > 65536)
  {
    std::vector<float> wt;
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t c0 = c * chunk, cn = std::min(chunk, N - c0);
      wt.resize(static_cast<size_t>(K * cn));
      for (int64_t n0 = c0; n0 < c0 + cn; n0 += layout.block_n) {
        const int64_t nb = std::min(layout.block_n, N - n0);
        const bool split = layout.split && nb == layout.block_n;
        dequantize_block(packed + n0 * (K / 2), 0, K, nb, split, group, sz, N, n0,
                         wt.data() + (n0 - c0), cn);
      }
      try {
        sgemm_row_major(false, false, M, cn, K, 1.0f, x, K, wt.data(), cn, 0.0f, o + c0, N, fn);
      } catch (...) {
#pragma omp critical(aotrt_int4_weight_mm)
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// The inverse of dequantize_block's reading: each output byte from its two columns.
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
