// The CPU's integer matmul kernels (Note [Integer matmul semantics]): rows
// in parallel, exact int32 accumulation for int8 x int8 (int32 and int64
// operands wrap in their own width), float32 for the int8-weight product.
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

constexpr IntMatmulKernels kIntMatmul{.int_mm = int_mm, .int8_weight_mm = int8_weight_mm};
AOTRT_REGISTER_KERNELS(IntMatmulKernels, cpu, kIntMatmul);

}  // namespace
}  // namespace aotrt::cpu
