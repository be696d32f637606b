// Dim arithmetic shared by the op families, with ATen's rules.
#pragma once

#include <cstdint>
#include <span>

#include "core/error.h"

namespace aotrt::ops {

// ATen's maybe_wrap_dim: dim in [-ndim, ndim) becomes [0, ndim); a 0-d
// tensor takes dim 0 or -1 (it is scanned, sorted, ... as one element).
inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* fn) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  AOTRT_CHECK(dim >= -n && dim < n, kInvalidArgument, fn,
              ": Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
              "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

// Product of sizes[begin, end).
inline int64_t size_product(std::span<const int64_t> sizes, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= sizes[i];
  return p;
}

}  // namespace aotrt::ops
