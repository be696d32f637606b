// The arithmetic of the distance family both backends compute the same way
// (Note [Distance semantics]): one pair of dense rows, accumulated in double.
// Host and device functions (nvcc compiles them for src/cuda/ops/distance.cu).
#pragma once

#include <math.h>

#include <cstdint>

#include "core/host_device.h"

namespace aotrt::ops::distance_math {

// The p-distance of rows a and b of m elements: p = 0 counts the coordinates
// that differ, p = inf takes the largest |difference| (NaN wins), other p
// give (sum |d|^p)^(1/p).
template <class T>
AOTRT_HOST_DEVICE inline double distance(const T* a, const T* b, int64_t m, double p) {
  double acc = 0;
  if (p == 0) {
    for (int64_t k = 0; k < m; ++k) acc += a[k] != b[k] ? 1 : 0;
    return acc;
  }
  if (p == INFINITY) {
    for (int64_t k = 0; k < m; ++k) {
      const double d = ::fabs(static_cast<double>(a[k]) - b[k]);
      acc = d != d ? d : (acc < d ? d : acc);
    }
    return acc;
  }
  for (int64_t k = 0; k < m; ++k) {
    const double d = ::fabs(static_cast<double>(a[k]) - b[k]);
    acc += p == 1 ? d : p == 2 ? d * d : ::pow(d, p);
  }
  return p == 1 ? acc : p == 2 ? ::sqrt(acc) : ::pow(acc, 1.0 / p);
}

// ATen's _euclidean_dist: sqrt(clamp_min(|a|^2 + |b|^2 - 2 a.b, 1e-30)).
template <class T>
AOTRT_HOST_DEVICE inline double euclid_mm(const T* a, const T* b, int64_t m) {
  double aa = 0, bb = 0, ab = 0;
  for (int64_t k = 0; k < m; ++k) {
    aa += static_cast<double>(a[k]) * a[k];
    bb += static_cast<double>(b[k]) * b[k];
    ab += static_cast<double>(a[k]) * b[k];
  }
  const double sq = aa + bb - 2 * ab;
  return ::sqrt(sq < 1e-30 ? 1e-30 : sq);  // std::max(sq, 1e-30): NaN stays NaN
}

// The first of pdist's pairs (i, j > i) of rows of an n-row input, in
// row-major order: row i's pairs start at i (2n - i - 1) / 2.
AOTRT_HOST_DEVICE inline int64_t pdist_base(int64_t i, int64_t n) {
  return i * (2 * n - i - 1) / 2;
}

}  // namespace aotrt::ops::distance_math

