// Dim arithmetic shared by the op families, with ATen's rules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/view.h"

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

inline int64_t numel_of_shape(std::span<const int64_t> shape) {
  return size_product(shape, 0, shape.size());
}

// "[2, 3]" for messages.
inline std::string sizes_text(std::span<const int64_t> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// ATen's infer_size: the broadcast of two shapes (aligned at the last dim).
inline std::vector<int64_t> broadcast_shapes(std::span<const int64_t> a,
                                             std::span<const int64_t> b, const char* fn) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    AOTRT_CHECK(x == y || x == 1 || y == 1, kInvalidArgument, fn, ": The size of tensor a (", x,
                ") must match the size of tensor b (", y, ") at non-singleton dimension ", i);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Strides that view (sizes, strides) expanded to `shape`: 0 on broadcast dims.
inline std::vector<int64_t> expand_strides(std::span<const int64_t> sizes,
                                           std::span<const int64_t> strides,
                                           std::span<const int64_t> shape, const char* fn) {
  AOTRT_CHECK(sizes.size() <= shape.size(), kInvalidArgument, fn, ": cannot expand ",
              sizes.size(), " dims to ", shape.size());
  std::vector<int64_t> out(shape.size(), 0);
  const size_t lead = shape.size() - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    AOTRT_CHECK(sizes[i] == shape[lead + i] || sizes[i] == 1, kInvalidArgument, fn,
                ": the expanded size of the tensor (", shape[lead + i],
                ") must match the existing size (", sizes[i], ") at non-singleton dimension ",
                lead + i);
    out[lead + i] = sizes[i] == shape[lead + i] ? strides[i] : 0;
  }
  return out;
}

// Note [Iterator output layout]
// The strides ATen's TensorIterator gives a new output of `shape` from its
// inputs' strides (each already expanded to `shape`, size-1 dims of a
// broadcast input at stride 0): dims are ordered innermost-first by the
// first input whose strides for a pair of dims are both non-zero and
// differ (equal strides: the larger dim goes outer), by an insertion sort
// from the natural order; the output is dense in that order. Ops whose
// outputs inductor's meta kernels lay out this way (index, pointwise ops)
// must match it, or the generated code indexes the output wrongly.
inline std::vector<int64_t> iterator_output_strides(
    std::span<const int64_t> shape, const std::vector<std::vector<int64_t>>& inputs) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  std::vector<int64_t> perm(ndim);  // perm[0] is the innermost dim
  for (int64_t i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const auto& st : inputs) {
      const int64_t s0 = st[d0], s1 = st[d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < ndim; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> strides(ndim);
  int64_t step = 1;
  for (int64_t i = 0; i < ndim; ++i) {
    strides[perm[i]] = step;
    step = checked_mul(step, std::max<int64_t>(shape[perm[i]], 1), "iterator_output_strides");
  }
  return strides;
}

}  // namespace aotrt::ops
