// Sorting and selection along a dim: sort, sort_stable, topk, kthvalue,
// median, nanmedian, mode.
//
// Note [Sort semantics]
// Checked against torch 2.13 eager (tests/unit/ops/gen_ops_reference.py):
// - Order: NaN is larger than every number (last ascending, first
//   descending); -0.0 equals 0.0. aotrt always sorts stably: sort_stable's
//   order exactly, and one valid order of ATen's unstable sort (whose CPU
//   kernel is stable in practice for the sizes tested).
// - sort: values and int64 indices have the input's strides when it is
//   non-overlapping and dense, else dense strides in its dim order (ATen's
//   empty_like). topk: new contiguous outputs with dim of size k, the ties
//   broken as ATen's CPU kernel breaks them (the same std::partial_sort /
//   std::nth_element calls on (value, index) pairs); with sorted=false the
//   k results come in the order that selection leaves them, as in ATen.
// - kthvalue, median (per line), mode: contiguous outputs with dim kept as
//   size 1 or dropped (keepdim), as views of the same memory. Which index of
//   equal values they return ATen leaves unspecified; aotrt returns: for
//   kthvalue and median, the index the k-th element has in a stable sort;
//   for mode, the last occurrence of the smallest most frequent value.
// - median and nanmedian without dim: the lower median ((n - 1) / 2 in sorted
//   order) as a 0-d tensor; median is NaN when any element is NaN, nanmedian
//   ignores NaN (NaN only when every element is). median with NaN in a line
//   returns the NaN and its index.
#pragma once

#include <cstdint>
#include <memory>

#include "core/tensor.h"
#include "ops/scan.h"  // ValuesIndices

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. Lines are along `dim`; outputs
// are values (self's dtype) and int64 indices of one layout.
struct SortKernels {
  // values holds a copy of self: each line sorted in place, indices written.
  void (*sort)(const StridedView& values, const StridedView& indices, int64_t dim,
               bool descending, const char* fn);
  // values, indices: self's sizes with dim of size k.
  void (*topk)(const StridedView& self, const StridedView& values, const StridedView& indices,
               int64_t k, int64_t dim, bool largest, bool sorted, const char* fn);
  // values, indices: self's sizes with dim of size 1; `which` is the 0-based
  // rank in the line's stable ascending order (kthvalue: k - 1; median:
  // (n - 1) / 2 of the non-NaN elements when ignore_nan, else of all, a NaN
  // winning when there is one).
  void (*select)(const StridedView& self, const StridedView& values, const StridedView& indices,
                 int64_t dim, int64_t which, bool median, bool ignore_nan, const char* fn);
  // values, indices: self's sizes with dim of size 1.
  void (*mode)(const StridedView& self, const StridedView& values, const StridedView& indices,
               int64_t dim, const char* fn);
};

ValuesIndices sort(const TensorImpl& self, int64_t dim, bool descending, const char* fn);
ValuesIndices topk(const TensorImpl& self, int64_t k, int64_t dim, bool largest, bool sorted,
                   const char* fn);
ValuesIndices kthvalue(const TensorImpl& self, int64_t k, int64_t dim, bool keepdim,
                       const char* fn);
ValuesIndices mode(const TensorImpl& self, int64_t dim, bool keepdim, const char* fn);
// Over every element: a 0-d tensor.
std::unique_ptr<TensorImpl> median(const TensorImpl& self, bool ignore_nan, const char* fn);

}  // namespace aotrt::ops
