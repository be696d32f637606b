// segment_reduce: reductions over consecutive segments of one dim.
//
// Note [Segment reduce semantics]
// ATen's CPU rules, checked against torch 2.13 eager (gen_ops_reference.py's
// segment cases):
// - data float16/bfloat16/float32/float64; segments given by lengths
//   ([leading..., S], int32/int64) or offsets ([leading..., S + 1]; when both
//   are given offsets win, as in ATen), where leading are data's dims before
//   axis; indices is refused (ATen: "not supported yet").
// - reduce: sum, prod, mean, max (amax), min (amin). A segment folds
//   `initial` in when given (mean: (initial + sum) / count); an empty one is
//   initial, else 0 (sum), 1 (prod), NaN (mean), -inf (max), +inf (min). NaN
//   propagates through max and min.
// - Unless unsafe, every row of lengths must sum to data.size(axis); lengths
//   must not be negative and offsets must not decrease. aotrt refuses a
//   segment past data's end even when unsafe (ATen would read past it).
// - The result has data's dtype and sizes with axis replaced by S,
//   contiguous. Accumulation: float for float16/bfloat16, double otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "core/tensor.h"

namespace aotrt::ops {

enum class SegmentReduce { kSum, kProd, kMean, kMax, kMin };

// See Note [Op dispatch] in ops/dispatch.h. data [outer, n, inner] and out
// [outer, segments, inner] contiguous; bounds int64 [outer, k], contiguous:
// lengths (k = segments) or offsets (k = segments + 1).
struct SegmentKernels {
  void (*segment_reduce)(SegmentReduce op, const StridedView& data, const StridedView& bounds,
                         bool bounds_are_offsets, const StridedView& out,
                         std::optional<double> initial, bool unsafe, const char* fn);
};

std::unique_ptr<TensorImpl> segment_reduce(const TensorImpl& data, std::string_view reduce,
                                           const TensorImpl* lengths, const TensorImpl* indices,
                                           const TensorImpl* offsets, int64_t axis, bool unsafe,
                                           std::optional<double> initial, const char* fn);

}  // namespace aotrt::ops
