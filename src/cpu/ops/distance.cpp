// The CPU's distance kernels (Note [Distance semantics]): one pair of rows
// per output element, accumulated in double, pairs in parallel.
#include "ops/dispatch.h"
#include "ops/distance.h"
#include "ops/distance_math.h"

namespace aotrt::cpu {
namespace {
using ops::DistanceKernels;

using ops::distance_math::distance;
using ops::distance_math::euclid_mm;

template <class T>
void cdist_typed(const TensorImpl& out, const TensorImpl& x1, const TensorImpl& x2, double p,
                 bool use_mm) {
  const int64_t P = x1.sizes()[x1.dim() - 2], R = x2.sizes()[x2.dim() - 2];
  const int64_t M = x1.sizes().back();
  const int64_t batches = out.numel() / (P * R);
  const T* a = static_cast<const T*>(x1.data_ptr());
  const T* b = static_cast<const T*>(x2.data_ptr());
  T* o = static_cast<T*>(out.data_ptr());
#pragma omp parallel for collapse(2) if (batches * P * R * M > 65536)
  for (int64_t bt = 0; bt < batches; ++bt) {
    for (int64_t i = 0; i < P; ++i) {
      const T* ai = a + (bt * P + i) * M;
      for (int64_t j = 0; j < R; ++j) {
        const T* bj = b + (bt * R + j) * M;
        o[(bt * P + i) * R + j] =
            static_cast<T>(use_mm ? euclid_mm(ai, bj, M) : distance(ai, bj, M, p));
      }
    }
  }
}

void cdist(const TensorImpl& out, const TensorImpl& x1, const TensorImpl& x2, double p,
           bool use_mm) {
  if (out.dtype() == ScalarType::Float32) {
    cdist_typed<float>(out, x1, x2, p, use_mm);
  } else {
    cdist_typed<double>(out, x1, x2, p, use_mm);
  }
}

template <class T>
void pdist_typed(const TensorImpl& out, const TensorImpl& self, double p) {
  const int64_t n = self.sizes()[0], m = self.sizes()[1];
  const T* x = static_cast<const T*>(self.data_ptr());
  T* o = static_cast<T*>(out.data_ptr());
#pragma omp parallel for schedule(dynamic, 8) if (n * n * m > 65536)
  for (int64_t i = 0; i < n; ++i) {
    // Row i's pairs start after those of rows 0..i-1: sum_{r<i} (n-1-r).
    const int64_t base = ops::distance_math::pdist_base(i, n);
    for (int64_t j = i + 1; j < n; ++j) {
      o[base + (j - i - 1)] = static_cast<T>(distance(x + i * m, x + j * m, m, p));
    }
  }
}

void pdist(const TensorImpl& out, const TensorImpl& self, double p) {
  if (out.dtype() == ScalarType::Float32) {
    pdist_typed<float>(out, self, p);
  } else {
    pdist_typed<double>(out, self, p);
  }
}

constexpr DistanceKernels kDistance{.cdist = cdist, .pdist = pdist};
AOTRT_REGISTER_KERNELS(DistanceKernels, cpu, kDistance);

}  // namespace
}  // namespace aotrt::cpu
