// Dim arithmetic shared by the op families, with ATen's rules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

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

// ATen's infer_size: two shapes broadcast against each other (right-aligned,
// a 1 stretches), or a refusal naming the sizes that clash.
inline std::vector<int64_t> broadcast_shapes(std::span<const int64_t> a,
                                             std::span<const int64_t> b, const char* fn) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    AOTRT_CHECK(x == y || x == 1 || y == 1, kInvalidArgument, fn, ": the size ", x,
                " must match the size ", y, " at non-singleton dimension ", i);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

}  // namespace aotrt::ops
