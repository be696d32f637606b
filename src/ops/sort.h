// Sorting and selection along a dim: sort, sort_stable, topk, kthvalue,
// median, nanmedian (also along a dim), mode; unique (_unique2, unique_dim,
// unique_consecutive).
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
//   for mode, the last occurrence of the smallest most frequent value (with
//   NaN: Note [Mode with NaN]).
//
// Note [Mode with NaN]
// ATen's CPU mode sorts (value, index) pairs with std::sort and a plain <, a
// comparison under which NaN is neither less nor greater than anything, so
// where NaN lands depends on the input's order and the sort's steps: eager
// gives mode([nan, -1.28]) = nan (index 0) but mode([-1.28, nan]) = -1.28,
// and mode([nan, 1, 2, nan]) = nan although no two NaN are equal. aotrt's CPU
// kernel makes the same libstdc++ call and the same scan (the first longest
// run of == neighbours, its last element), which gave eager's values and
// indices on 3000 random lines of up to 40 elements drawn from {nan, five
// values} (torch 2.13; test_diff_ops found the difference when aotrt sorted
// NaN last).
// - median and nanmedian without dim: the lower median ((n - 1) / 2 in sorted
//   order) as a 0-d tensor; median is NaN when any element is NaN, nanmedian
//   ignores NaN (NaN only when every element is). median with NaN in a line
//   returns the NaN and its index. nanmedian.dim: per line, the lower median of
//   the non-NaN elements and its index in a stable sort (ATen's nth_element
//   breaks ties by index), NaN when the whole line is NaN, with the index
//   ATen's nth_element leaves there (0 0 0 2 2 3 5 for lines of 1..7; the
//   CPU kernel makes the same libstdc++ call); outputs as kthvalue's.
//
// Note [Unique]
// _unique2, unique_dim and unique_consecutive, checked against torch 2.13
// eager: the elements (dim None) or the slices along dim are compared; equal
// means every element ==, so NaN never equals NaN and each NaN is its own
// value, and -0.0 equals 0.0 (the first of them in a stable sort is kept).
// _unique2 and unique_dim sort ascending whatever `sorted` says (ATen's CPU
// kernel always sorts; NaN last, slices in lexicographic order);
// unique_consecutive merges equal neighbours only. Outputs: values 1-d
// [count] (dim None) or self's sizes with dim of size count, contiguous: the
// layout of torch's fake kernel, which the package's code asserts and reads
// (eager's CPU kernel leaves dim outermost in memory instead, a copy here);
// inverse int64, contiguous of self's sizes (dim None) or [size(dim)];
// counts int64 [count]; inverse and counts are [0] when not asked for with
// dim None, and always made along a dim (as ATen's CPU kernel and the fake
// kernel do). A 0-d self is one element. With dim, a zero-size dim that is
// not `dim` is refused, as ATen refuses it.
// The count depends on the data: the kernel returns it to the host (on a
// GPU, one sync, as ATen's), and the outputs are views of buffers sized for
// every element being distinct.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

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
  // rows: dense [n, m]; out: dense [n, m], gets the unique rows, in order, in
  // its first rows; inverse (int64 [n], or null) the output row of each row;
  // counts (int64 [n], or null) each output row's number of rows. Returns
  // the number of output rows. Note [Unique].
  int64_t (*unique)(const StridedView& rows, const StridedView& out, const StridedView* inverse,
                    const StridedView* counts, bool consecutive, const char* fn);
};

ValuesIndices sort(const TensorImpl& self, int64_t dim, bool descending, const char* fn);
ValuesIndices topk(const TensorImpl& self, int64_t k, int64_t dim, bool largest, bool sorted,
                   const char* fn);
ValuesIndices kthvalue(const TensorImpl& self, int64_t k, int64_t dim, bool keepdim,
                       const char* fn);
ValuesIndices mode(const TensorImpl& self, int64_t dim, bool keepdim, const char* fn);
// Over every element: a 0-d tensor.
std::unique_ptr<TensorImpl> median(const TensorImpl& self, bool ignore_nan, const char* fn);
// Along dim (median.dim / nanmedian.dim): values and indices as kthvalue's.
ValuesIndices median_dim(const TensorImpl& self, int64_t dim, bool keepdim, bool ignore_nan,
                         const char* fn);

struct UniqueResult {
  std::unique_ptr<TensorImpl> values, inverse, counts;
};
// dim nullopt: over the elements; consecutive: unique_consecutive, else sorted.
UniqueResult unique(const TensorImpl& self, std::optional<int64_t> dim, bool consecutive,
                    bool return_inverse, bool return_counts, const char* fn);

}  // namespace aotrt::ops
