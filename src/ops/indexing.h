// Indexing: index.Tensor, index_put (and aoti_torch_index_put_out), nonzero,
// nonzero_static, masked_select, scatter (src, value, reduce; and
// aoti_torch_scatter_out / _reduce_out), searchsorted, bucketize.
//
// Note [Indexing semantics]
// ATen's rules, checked against torch 2.13 eager:
// - index.Tensor: None entries keep a dim; bool/uint8 masks stand for the
//   indices of their true elements (nonzero) over as many dims; index tensors
//   (int64/int32) broadcast together; negative indices wrap, others out of
//   range are refused naming the dim. The indexed dims are replaced by the
//   broadcast shape in place when they are adjacent, else it goes in front.
//   The result is laid out as ATen's TensorIterator lays it out (Note
//   [Iterator output layout] in ops/dims.h), so it follows self's dim order.
// - index_put: self.clone() (same strides), then the indexed elements get
//   values (broadcast), added when accumulate; without accumulate a
//   repeated index keeps the last value written, as ATen's CPU kernel does.
// - nonzero: int64 [n, ndim] with strides (1, n) (column-major), in row-major
//   order of the elements; nonzero_static pads with fill_value or truncates.
//   The size depends on the data: on CUDA the count is read back to the host
//   (one sync), which is what ATen does too.
// - masked_select: self and mask broadcast; the selected elements in
//   row-major order, 1-d. scatter: self.clone() (same strides), then for each
//   element of index, out[... index ...] = src (value), or reduced: sum,
//   prod, mean (integer mean rounds down), amax, amin (NaN propagates);
//   include_self=false leaves self out of the reduction at scattered places.
// - masked_scatter, index_reduce and index_add: new contiguous results (not
//   self's strides); index_reduce's reductions are scatter_reduce's; their
//   indices must lie in [0, size) ("index out of range in self"). repeat_interleave:
//   repeats' dtype; its values decide the size, so they are read back to the
//   host (a sync on CUDA, as in ATen). histc: self's dtype, NaN and elements
//   outside [min, max] not counted, max falling in the last bin.
// - searchsorted / bucketize: int64 (int32 with out_int32) positions, left or
//   right side (side overrides right), an optional sorter; boundaries 1-d or
//   matching the leading dims of the values.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace aotrt::ops {

enum class IndexMode { kGather, kAssign, kSum, kProd, kMean, kMax, kMin };

// One element-wise pass over `shape` (shared by every view below): with
//   off(e) = sum_k wrap(indices[k][e], index_sizes[k]) * index_strides[k]
// kGather: dst[e] = src[e + off(e)]; the other modes write or reduce
// src[e] into dst[e + off(e)]. dst and src have one dtype. For kMean,
// `counts` (int64, dst's layout) starts at 1 where self is included, else 0,
// and the kernel divides at the end. Scattering modes visit elements in
// row-major order (the last write wins).
struct IndexedArgs {
  // Holds strides the views below point at (a deque: its elements never move).
  std::span<const int64_t> keep(std::vector<int64_t> strides) {
    return kept_.emplace_back(std::move(strides));
  }
  std::vector<int64_t> shape;
  StridedView dst, src;
  std::vector<StridedView> indices;  // int64 or int32, of `shape`
  std::vector<int64_t> index_sizes, index_strides, index_dims;
  std::optional<StridedView> counts;  // kMean
  bool negative_indices = true;        // false: an index below 0 is out of range
 private:
  std::deque<std::vector<int64_t>> kept_;
};

// See Note [Op dispatch] in ops/dispatch.h.
struct IndexingKernels {
  void (*indexed)(IndexMode mode, const IndexedArgs& a, const char* fn);
  // Elements of self that are not zero (a host value: on CUDA, a sync).
  int64_t (*count_nonzero)(const StridedView& self, const char* fn);
  // out: int64 [rows, ndim] (rows <= count); the first `rows` nonzero
  // elements' indices, row-major order.
  void (*nonzero)(const StridedView& self, const StridedView& out, const char* fn);
  // out[e] = the position of values[e] in its sorted line of `sorted` (the
  // line of e's leading dims, or the only one when sorted is 1-d), through
  // `sorter` when given; out int64 or int32.
  void (*search)(const StridedView& sorted, const StridedView& values, const StridedView& out,
                 const StridedView* sorter, bool right, const char* fn);
  // out [bins] (self's dtype, zeroed): counts of self's elements in equal bins
  // over [min, max] (min == max: self's own min and max, widened by 1 each
  // way when those are equal too).
  void (*histc)(const StridedView& self, const StridedView& out, double min, double max,
                const char* fn);
};

std::unique_ptr<TensorImpl> index(const TensorImpl& self,
                                  const std::vector<const TensorImpl*>& indices, const char* fn);
std::unique_ptr<TensorImpl> index_put(const TensorImpl& self,
                                      const std::vector<const TensorImpl*>& indices,
                                      const TensorImpl& values, bool accumulate, const char* fn);
std::unique_ptr<TensorImpl> nonzero(const TensorImpl& self, const char* fn);
std::unique_ptr<TensorImpl> nonzero_static(const TensorImpl& self, int64_t size,
                                           int64_t fill_value, const char* fn);
std::unique_ptr<TensorImpl> masked_select(const TensorImpl& self, const TensorImpl& mask,
                                          const char* fn);
// src or value (exactly one); reduce empty for plain scatter.
std::unique_ptr<TensorImpl> scatter(const TensorImpl& self, int64_t dim, const TensorImpl& index,
                                    const TensorImpl* src, double value,
                                    std::string_view reduce, bool include_self, const char* fn);
std::unique_ptr<TensorImpl> searchsorted(const TensorImpl& sorted, const TensorImpl& values,
                                         bool out_int32, bool right,
                                         std::optional<std::string_view> side,
                                         const TensorImpl* sorter, const char* fn);
// self.clone() with the elements where mask (broadcast to self) is true
// replaced, in row-major order, by source's first elements.
std::unique_ptr<TensorImpl> masked_scatter(const TensorImpl& self, const TensorImpl& mask,
                                           const TensorImpl& source, const char* fn);
// out[..., index[i], ...] (reduce)= source[..., i, ...] along dim.
std::unique_ptr<TensorImpl> index_reduce(const TensorImpl& self, int64_t dim,
                                         const TensorImpl& index, const TensorImpl& source,
                                         std::string_view reduce, bool include_self,
                                         const char* fn);
// self.index_add(dim, index, source, alpha): out[..., index[i], ...] +=
// alpha * source[..., i, ...], one index after another. As ATen's CPU
// kernel: alpha other than 1 scales source in self's dtype first; float16
// and bfloat16 sums taking ATen's scatter_add path (alpha 1, int64 index,
// dim first or last of a >1-d self, source of self's sizes but at dim) are
// summed in float32 and rounded once, the others rounded after every add.
std::unique_ptr<TensorImpl> index_add(const TensorImpl& self, int64_t dim,
                                      const TensorImpl& index, const TensorImpl& source,
                                      double alpha, const char* fn);
// [0] * repeats[0] + [1] * repeats[1] + ...; the repeats are read on the host.
std::unique_ptr<TensorImpl> repeat_interleave(const TensorImpl& repeats,
                                              std::optional<int64_t> output_size, const char* fn);
std::unique_ptr<TensorImpl> histc(const TensorImpl& self, int64_t bins, double min, double max,
                                  const char* fn);
// A 0-d tensor of `value` in sorted's device and a dtype ATen gives a Python scalar.
std::unique_ptr<TensorImpl> scalar_tensor(double value, ScalarType dtype, Device device,
                                          const char* fn);

}  // namespace aotrt::ops
