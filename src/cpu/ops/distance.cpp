// The CPU's distance kernels (Note [Distance semantics]): one pair of rows
// per output element, accumulated in double, pairs in parallel.
#include <cmath>
#include <limits>

#include "ops/dispatch.h"
#include "ops/distance.h"

namespace aotrt::cpu {
namespace {
using ops::DistanceKernels;

template <class T>
double distance(const T* a, const T* b, int64_t m, double p) {
  double acc = 0;
  if (p == 0) {
    for (int64_t k = 0; k < m; ++k) acc += a[k] != b[k] ? 1 : 0;
    return acc;
  }
  if (std::isinf(p)) {
    for (int64_t k = 0; k < m; ++k) {
      const double d = std::abs(static_cast<double>(a[k]) - b[k]);
      acc = std::isnan(d) ? d : std::max(acc, d);
    }
    return acc;
  }
  for (int64_t k = 0; k < m; ++k) {
    const double d = std::abs(static_cast<double>(a[k]) - b[k]);
    acc += p == 1 ? d : p == 2 ? d * d : std::pow(d, p);
  }
  return p == 1 ? acc : p == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / p);
}

// ATen's _euclidean_dist: sqrt(clamp_min(|a|^2 + |b|^2 - 2 a.b, 1e-30)).
template <class T>
double euclid_mm(const T* a, const T* b, int64_t m) {
  double aa = 0, bb = 0, ab = 0;
  for (int64_t k = 0; k < m; ++k) {
    aa += static_cast<double>(a[k]) * a[k];
    bb += static_cast<double>(b[k]) * b[k];
    ab += static_cast<double>(a[k]) * b[k];
  }
  return std::sqrt(std::max(aa + bb - 2 * ab, 1e-30));
}

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
    const int64_t base = i * (2 * n - i - 1) / 2;
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
