// CUDA kernels of the distance family (ops/distance.h; Note [Distance
// semantics]): one thread per output element, each the CPU kernel's
// distance of one pair of dense rows, accumulated in double
// (ops/distance_math.h), so both devices give the same values.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/distance.h"
#include "ops/distance_math.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::DistanceKernels;
namespace distance_math = ops::distance_math;

// out [B, P, R] of x1 [B, P, M] and x2 [B, R, M].
template <typename T>
__global__ void cdist_kernel(const T* a, const T* b, T* out, int64_t P, int64_t R, int64_t M,
                             int64_t total, double p, bool use_mm) {
  AOTRT_GRID_STRIDE(e, total) {  // e = (bt * P + i) * R + j
    const int64_t j = e % R, bi = e / R, i = bi % P, bt = bi / P;
    const T* ai = a + (bt * P + i) * M;
    const T* bj = b + (bt * R + j) * M;
    out[e] = static_cast<T>(use_mm ? distance_math::euclid_mm(ai, bj, M)
                                   : distance_math::distance(ai, bj, M, p));
  }
}

// out [n (n - 1) / 2] of the rows i < j of x [n, m], row-major in (i, j).
template <typename T>
__global__ void pdist_kernel(const T* x, T* out, int64_t n, int64_t m, int64_t total, double p) {
  AOTRT_GRID_STRIDE(e, total) {
    int64_t lo = 0, hi = n - 1;  // the last row i whose pairs start at or before e
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (distance_math::pdist_base(mid, n) <= e) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const int64_t i = lo, j = e - distance_math::pdist_base(i, n) + i + 1;
    out[e] = static_cast<T>(distance_math::distance(x + i * m, x + j * m, m, p));
  }
}

template <typename F>
void visit_distance_dtype(ScalarType t, F&& f) {
  if (t == ScalarType::Float32) return f(float{});
  AOTRT_CHECK(t == ScalarType::Float64, kInternal, "distance kernel: dtype ", dtype_name(t));
  f(double{});
}

void cdist(const TensorImpl& out, const TensorImpl& x1, const TensorImpl& x2, double p,
           bool use_mm) {
  const int64_t P = x1.sizes()[x1.dim() - 2], R = x2.sizes()[x2.dim() - 2];
  const int64_t M = x1.sizes().back(), total = out.numel();
  if (total == 0) return;
  const OnDevice on(out.device());
  visit_distance_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cdist_kernel<T><<<blocks_for(total), kThreads, 0, on.stream>>>(
        static_cast<const T*>(x1.data_ptr()), static_cast<const T*>(x2.data_ptr()),
        static_cast<T*>(out.data_ptr()), P, R, M, total, p, use_mm);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

void pdist(const TensorImpl& out, const TensorImpl& self, double p) {
  const int64_t n = self.sizes()[0], m = self.sizes()[1], total = out.numel();
  if (total == 0) return;
  const OnDevice on(out.device());
  visit_distance_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    pdist_kernel<T><<<blocks_for(total), kThreads, 0, on.stream>>>(
        static_cast<const T*>(self.data_ptr()), static_cast<T*>(out.data_ptr()), n, m, total, p);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

constexpr DistanceKernels kDistance{.cdist = cdist, .pdist = pdist};
AOTRT_REGISTER_KERNELS(DistanceKernels, cuda, kDistance);

}  // namespace
}  // namespace aotrt::cuda
