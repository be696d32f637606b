// The CPU's integer matmul kernels (Note [Integer matmul semantics]): rows
// in parallel, exact int32 accumulation for int8 x int8, float32 for the
// int8-weight product.
#include <cstdint>

#include "ops/dispatch.h"
#include "ops/int_matmul.h"

namespace aotrt::cpu {
namespace {
using ops::IntMatmulKernels;

void int_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  const int64_t m = a.sizes()[0], k = a.sizes()[1], n = b.sizes()[1];
  const auto* x = static_cast<const int8_t*>(a.data_ptr());
  const auto* y = static_cast<const int8_t*>(b.data_ptr());
  auto* o = static_cast<int32_t*>(out.data_ptr());
#pragma omp parallel for if (m * n * k > 65536)
  for (int64_t i = 0; i < m; ++i) {
    int32_t* row = o + i * n;
    for (int64_t j = 0; j < n; ++j) row[j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      const int32_t v = x[i * k + p];
      const int8_t* yr = y + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += v * yr[j];
    }
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
