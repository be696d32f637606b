#include "ops/indexing.h"

#include <algorithm>
#include <limits>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/pointwise.h"  // mul
#include "ops/promote.h"
#include "ops/shape.h"  // full

namespace aotrt::ops {
namespace {

using Dims = std::vector<int64_t>;
Dims to_vector(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

bool is_index_dtype(ScalarType t) { return t == ScalarType::Int64 || t == ScalarType::Int32; }
bool is_mask_dtype(ScalarType t) { return t == ScalarType::Bool || t == ScalarType::UInt8; }

// t's memory seen with a's shape, these strides (kept by a) and offset.
StridedView view_as(IndexedArgs& a, const TensorImpl& t, Dims strides, int64_t offset) {
  StridedView v = strided_view(t);
  v.data = static_cast<char*>(t.storage()->data()) + offset * static_cast<int64_t>(t.itemsize());
  v.sizes = a.shape;
  v.strides = a.keep(std::move(strides));
  return v;
}

// Index tensors with masks replaced by the columns of their nonzero(), one per
// dim they cover; None kept as null. `keep` owns the nonzero results.
std::vector<const TensorImpl*> expand_masks(const TensorImpl& self,
                                            const std::vector<const TensorImpl*>& indices,
                                            std::vector<std::unique_ptr<TensorImpl>>& keep,
                                            const char* fn) {
  std::vector<const TensorImpl*> out;
  for (const TensorImpl* ix : indices) {
    if (ix == nullptr) {
      out.push_back(nullptr);
      continue;
    }
    if (is_index_dtype(ix->dtype())) {
      out.push_back(ix);
      continue;
    }
    AOTRT_CHECK(is_mask_dtype(ix->dtype()), kInvalidArgument, fn,
                ": tensors used as indices must be long, int, byte or bool tensors, not ",
                dtype_name(ix->dtype()));
    const size_t first = out.size();
    for (int64_t j = 0; j < ix->dim(); ++j) {
      const size_t d = first + static_cast<size_t>(j);
      AOTRT_CHECK(d < static_cast<size_t>(self.dim()) && ix->sizes()[j] == self.sizes()[d],
                  kInvalidArgument, fn, ": The shape of the mask ", ix->sizes()[j],
                  " at index ", j, " does not match the shape of the indexed tensor at index ", d);
    }
    keep.push_back(nonzero(*ix, fn));  // [n, k], strides (1, n)
    const TensorImpl& nz = *keep.back();
    const int64_t n = nz.sizes()[0];
    for (int64_t j = 0; j < ix->dim(); ++j) {
      const int64_t sizes[] = {n}, strides[] = {nz.strides()[0]};
      keep.push_back(make_tensor(nz.storage(), sizes, strides,
                                 nz.storage_offset() + j * nz.strides()[1], ScalarType::Int64, fn));
      out.push_back(keep.back().get());
    }
  }
  AOTRT_CHECK(out.size() <= static_cast<size_t>(self.dim()), kInvalidArgument, fn,
              ": too many indices for tensor of dimension ", self.dim(), " (got ", out.size(), ")");
  out.resize(static_cast<size_t>(self.dim()), nullptr);
  return out;
}

// The geometry shared by index and index_put (ATen's make_info + restride).
struct IndexPlan {
  Dims shape;                          // the result's sizes
  Dims self_strides;                   // self restrided to `shape` (0 on index dims)
  std::vector<const TensorImpl*> ix;   // the defined index tensors
  std::vector<Dims> ix_strides;        // each expanded to `shape`
  Dims index_sizes, index_strides, index_dims;
};

IndexPlan plan(const TensorImpl& self, const std::vector<const TensorImpl*>& indices,
               const char* fn) {
  IndexPlan p;
  Dims bshape;
  std::vector<int64_t> pos;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (indices[d] == nullptr) continue;
    pos.push_back(static_cast<int64_t>(d));
    bshape = pos.size() == 1 ? to_vector(indices[d]->sizes())
                             : broadcast_shapes(bshape, indices[d]->sizes(), fn);
  }
  AOTRT_CHECK(!pos.empty(), kInvalidArgument, fn, ": no index tensor given (every index is None)");
  const bool adjacent = pos.back() - pos.front() + 1 == static_cast<int64_t>(pos.size());
  // The result's dims: (source dim or -1 for a broadcast dim j).
  std::vector<std::pair<int64_t, int64_t>> dims;
  auto add_broadcast = [&] {
    for (size_t j = 0; j < bshape.size(); ++j) dims.push_back({-1, static_cast<int64_t>(j)});
  };
  if (!adjacent) add_broadcast();
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (adjacent && d == pos.front()) add_broadcast();
    if (indices[d] == nullptr) dims.push_back({d, -1});
  }
  const size_t lead = std::find_if(dims.begin(), dims.end(), [](auto& e) { return e.first < 0; }) - dims.begin();
  for (auto [d, j] : dims) {
    p.shape.push_back(d >= 0 ? self.sizes()[d] : bshape[j]);
    p.self_strides.push_back(d >= 0 ? self.strides()[d] : 0);
  }
  for (int64_t d : pos) {
    const TensorImpl& t = *indices[d];
    const Dims bstr = expand_strides(t.sizes(), t.strides(), bshape, fn);
    Dims st(p.shape.size(), 0);
    for (size_t j = 0; j < bshape.size(); ++j) st[lead + j] = bstr[j];
    p.ix.push_back(&t);
    p.ix_strides.push_back(st);
    p.index_sizes.push_back(self.sizes()[d]);
    p.index_strides.push_back(self.strides()[d]);
    p.index_dims.push_back(d);
  }
  return p;
}

void add_indices(IndexedArgs& a, const IndexPlan& p) {
  for (size_t k = 0; k < p.ix.size(); ++k) {
    a.indices.push_back(view_as(a, *p.ix[k], p.ix_strides[k], p.ix[k]->storage_offset()));
  }
  a.index_sizes = p.index_sizes;
  a.index_strides = p.index_strides;
  a.index_dims = p.index_dims;
}

void check_same_device(const TensorImpl& a, const TensorImpl& b, const char* what, const char* fn) {
  AOTRT_CHECK(a.device() == b.device(), kInvalidArgument, fn, ": ", what, " is on ",
              b.device().str(), ", self on ", a.device().str());
}

}  // namespace

std::unique_ptr<TensorImpl> index(const TensorImpl& self,
                                  const std::vector<const TensorImpl*>& indices, const char* fn) {
  std::vector<std::unique_ptr<TensorImpl>> keep;
  const auto ix = expand_masks(self, indices, keep, fn);
  for (const TensorImpl* t : ix) {
    if (t) check_same_device(self, *t, "an index", fn);
  }
  const IndexPlan p = plan(self, ix, fn);
  std::vector<Dims> inputs{p.self_strides};
  inputs.insert(inputs.end(), p.ix_strides.begin(), p.ix_strides.end());
  auto out = empty_strided(p.shape, iterator_output_strides(p.shape, inputs), self.dtype(),
                           self.device(), fn);
  if (out->numel() == 0) return out;
  IndexedArgs a;
  a.shape = p.shape;
  a.dst = strided_view(*out);
  a.src = view_as(a, self, p.self_strides, self.storage_offset());
  add_indices(a, p);
  kernel(&IndexingKernels::indexed, self.device(), fn)(IndexMode::kGather, a, fn);
  return out;
}

std::unique_ptr<TensorImpl> index_put(const TensorImpl& self,
                                      const std::vector<const TensorImpl*>& indices,
                                      const TensorImpl& values, bool accumulate, const char* fn) {
  AOTRT_CHECK(values.dtype() == self.dtype(), kInvalidArgument, fn,
              ": Index put requires the source and destination dtypes match, got ",
              dtype_name(self.dtype()), " for the destination and ", dtype_name(values.dtype()),
              " for the source.");
  check_same_device(self, values, "values", fn);
  auto out = clone_tensor(self, fn);
  std::vector<std::unique_ptr<TensorImpl>> keep;
  const auto ix = expand_masks(self, indices, keep, fn);
  const IndexPlan p = plan(*out, ix, fn);
  if (numel_of_shape(p.shape) == 0) return out;
  IndexedArgs a;
  a.shape = p.shape;
  a.dst = view_as(a, *out, p.self_strides, out->storage_offset());
  a.src = view_as(a, values, expand_strides(values.sizes(), values.strides(), a.shape, fn),
                  values.storage_offset());
  add_indices(a, p);
  kernel(&IndexingKernels::indexed, self.device(), fn)(
      accumulate ? IndexMode::kSum : IndexMode::kAssign, a, fn);
  return out;
}

std::unique_ptr<TensorImpl> nonzero(const TensorImpl& self, const char* fn) {
  const int64_t ndim = self.dim();
  const int64_t n = self.numel() == 0 ? 0
                                      : kernel(&IndexingKernels::count_nonzero, self.device(), fn)(
                                            strided_view(self), fn);
  const int64_t sizes[] = {n, ndim}, strides[] = {1, n};
  auto out = empty_strided(sizes, strides, ScalarType::Int64, self.device(), fn);
  if (n > 0 && ndim > 0) {
    kernel(&IndexingKernels::nonzero, self.device(), fn)(strided_view(self), strided_view(*out), fn);
  }
  return out;
}

std::unique_ptr<TensorImpl> nonzero_static(const TensorImpl& self, int64_t size,
                                           int64_t fill_value, const char* fn) {
  AOTRT_CHECK(size >= 0, kInvalidArgument, fn, ": nonzero_static: 'size' must be an non-negative integer, got ", size);
  const int64_t ndim = self.dim();
  const int64_t sizes[] = {size, ndim}, strides[] = {ndim, 1};
  auto out = empty_strided(sizes, strides, ScalarType::Int64, self.device(), fn);
  if (size == 0 || ndim == 0) return out;
  auto fill = scalar_tensor(static_cast<double>(fill_value), ScalarType::Int64, cpu_device(), fn);
  copy_tensor(*out, *fill, fn);
  const int64_t n = self.numel() == 0 ? 0
                                      : kernel(&IndexingKernels::count_nonzero, self.device(), fn)(
                                            strided_view(self), fn);
  const int64_t rows = std::min(n, size);
  if (rows == 0) return out;
  const int64_t head[] = {rows, ndim};
  auto top = make_tensor(out->storage(), head, strides, 0, ScalarType::Int64, fn);
  kernel(&IndexingKernels::nonzero, self.device(), fn)(strided_view(self), strided_view(*top), fn);
  return out;
}

std::unique_ptr<TensorImpl> masked_select(const TensorImpl& self, const TensorImpl& mask,
                                          const char* fn) {
  AOTRT_CHECK(is_mask_dtype(mask.dtype()), kInvalidArgument, fn,
              ": masked_select: expected BoolTensor for mask, got ", dtype_name(mask.dtype()));
  check_same_device(self, mask, "mask", fn);
  const Dims shape = broadcast_shapes(self.sizes(), mask.sizes(), fn);
  auto s = make_tensor(self.storage(), shape, expand_strides(self.sizes(), self.strides(), shape, fn),
                       self.storage_offset(), self.dtype(), fn);
  auto m = make_tensor(mask.storage(), shape, expand_strides(mask.sizes(), mask.strides(), shape, fn),
                       mask.storage_offset(), mask.dtype(), fn);
  if (shape.empty()) {  // 0-d: index with the mask as a 1-element line
    const int64_t one[] = {1};
    s = make_tensor(self.storage(), one, one, self.storage_offset(), self.dtype(), fn);
    m = make_tensor(mask.storage(), one, one, mask.storage_offset(), mask.dtype(), fn);
  }
  // self[mask] over every dim, flattened: index with the mask, then a 1-d view.
  std::vector<const TensorImpl*> ix{m.get()};
  auto r = index(*s, ix, fn);
  const int64_t n[] = {r->numel()}, one[] = {1};
  AOTRT_CHECK(r->dim() == 1, kInternal, fn, ": masked_select of a full mask gives a 1-d result");
  return make_tensor(r->storage(), n, one, r->storage_offset(), r->dtype(), fn);
}

std::unique_ptr<TensorImpl> scatter(const TensorImpl& self, int64_t dim, const TensorImpl& index,
                                    const TensorImpl* src, double value,
                                    std::string_view reduce, bool include_self, const char* fn) {
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  AOTRT_CHECK(index.dtype() == ScalarType::Int64, kInvalidArgument, fn,
              ": scatter(): Expected dtype int64 for index, got ", dtype_name(index.dtype()));
  check_same_device(self, index, "index", fn);
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  AOTRT_CHECK(std::max<int64_t>(index.dim(), 1) == nd, kInvalidArgument, fn,
              ": Index tensor must have the same number of dimensions as self tensor");
  std::unique_ptr<TensorImpl> value_t;
  if (src == nullptr) {
    value_t = scalar_tensor(value, self.dtype(), self.device(), fn);
    src = value_t.get();
  } else {
    AOTRT_CHECK(src->dtype() == self.dtype(), kInvalidArgument, fn,
                ": scatter(): Expected self.dtype to be equal to src.dtype");
    check_same_device(self, *src, "src", fn);
    AOTRT_CHECK(std::max<int64_t>(src->dim(), 1) == nd, kInvalidArgument, fn,
                ": Index tensor must have the same number of dimensions as src tensor");
  }
  const Dims ishape = index.dim() == 0 ? Dims{1} : to_vector(index.sizes());
  const Dims self_sizes = self.dim() == 0 ? Dims{1} : to_vector(self.sizes());
  for (int64_t k = 0; k < nd; ++k) {
    AOTRT_CHECK(k == d || ishape[k] <= self_sizes[k], kInvalidArgument, fn,
                ": Expected index ", sizes_text(ishape), " to be no larger than self ",
                sizes_text(self_sizes), " apart from dimension ", d);
    if (value_t == nullptr) {
      const int64_t ss = src->dim() == 0 ? 1 : src->sizes()[k];
      AOTRT_CHECK(ishape[k] <= ss, kInvalidArgument, fn, ": Expected index ", sizes_text(ishape),
                  " to be no larger than src in dimension ", k);
    }
  }
  IndexMode mode = IndexMode::kAssign;
  if (reduce == "sum" || reduce == "add") mode = IndexMode::kSum;
  else if (reduce == "prod" || reduce == "multiply") mode = IndexMode::kProd;
  else if (reduce == "mean") mode = IndexMode::kMean;
  else if (reduce == "amax") mode = IndexMode::kMax;
  else if (reduce == "amin") mode = IndexMode::kMin;
  else AOTRT_CHECK(reduce.empty(), kInvalidArgument, fn, ": reduce argument must be one of sum, prod, mean, amax, amin, got ", reduce);

  // Plain scatter keeps self's strides; the reduce overloads too (ATen's meta
  // for scatter_reduce is contiguous, but inductor calls the _out form).
  auto out = clone_tensor(self, fn);
  if (numel_of_shape(ishape) == 0) return out;
  Dims out_strides = out->dim() == 0 ? Dims{1} : to_vector(out->strides());
  std::unique_ptr<TensorImpl> counts;
  IndexedArgs a;
  a.shape = ishape;
  Dims dst_strides = out_strides;
  dst_strides[d] = 0;
  a.dst = view_as(a, *out, dst_strides, out->storage_offset());
  if (value_t) {
    a.src = view_as(a, *src, Dims(ishape.size(), 0), src->storage_offset());
  } else {
    a.src = view_as(a, *src, src->dim() == 0 ? Dims{1} : to_vector(src->strides()),
                    src->storage_offset());
  }
  a.indices.push_back(view_as(a, index, index.dim() == 0 ? Dims{1} : to_vector(index.strides()),
                              index.storage_offset()));
  a.index_sizes = {self_sizes[d]};
  a.index_strides = {out_strides[d]};
  a.index_dims = {d};
  // counts: how many values a place holds (self counted when included); a
  // place at 0 takes its first scattered value as it is (include_self=false).
  if (mode == IndexMode::kMean || (!reduce.empty() && !include_self)) {
    counts = empty_strided(out->sizes(), out->strides(), ScalarType::Int64, self.device(), fn);
    auto init = scalar_tensor(include_self ? 1.0 : 0.0, ScalarType::Int64, cpu_device(), fn);
    copy_tensor(*counts, *init, fn);
    a.counts = view_as(a, *counts, dst_strides, counts->storage_offset());
  }
  kernel(&IndexingKernels::indexed, self.device(), fn)(mode, a, fn);
  return out;
}

std::unique_ptr<TensorImpl> searchsorted(const TensorImpl& sorted, const TensorImpl& values,
                                         bool out_int32, bool right,
                                         std::optional<std::string_view> side,
                                         const TensorImpl* sorter, const char* fn) {
  if (side) {
    AOTRT_CHECK(*side == "left" || *side == "right", kInvalidArgument, fn,
                ": side can only be 'left' or 'right' but got ", *side);
    AOTRT_CHECK(!(right && *side == "left"), kInvalidArgument, fn,
                ": side and right can't be set to opposites, got side of left while right was True");
    right = *side == "right";
  }
  check_same_device(sorted, values, "values", fn);
  AOTRT_CHECK(sorted.dim() >= 1, kInvalidArgument, fn,
              ": boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
              "tensor and input value tensor must match");
  if (sorted.dim() > 1) {
    bool match = values.dim() == sorted.dim();
    for (int64_t k = 0; match && k + 1 < sorted.dim(); ++k) match = sorted.sizes()[k] == values.sizes()[k];
    AOTRT_CHECK(match, kInvalidArgument, fn,
                ": boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                "boundaries tensor and input value tensor must match");
  }
  if (sorter) {
    AOTRT_CHECK(sorter->dtype() == ScalarType::Int64, kInvalidArgument, fn,
                ": sorter must be a tensor of long dtype but got ", dtype_name(sorter->dtype()));
    AOTRT_CHECK(std::equal(sorter->sizes().begin(), sorter->sizes().end(), sorted.sizes().begin(),
                           sorted.sizes().end()),
                kInvalidArgument, fn, ": boundary and sorter must have the same size");
  }
  auto out = empty_strided(values.sizes(), contiguous_strides(values.sizes()),
                           out_int32 ? ScalarType::Int32 : ScalarType::Int64, values.device(), fn);
  if (out->numel() == 0) return out;
  // Mixed dtypes compare in their promoted dtype (ATen converts both).
  const ScalarType common = promote_types(sorted.dtype(), values.dtype(), fn);
  if (sorted.dtype() != common || values.dtype() != common) {
    auto s = empty_strided(sorted.sizes(), contiguous_strides(sorted.sizes()), common, sorted.device(), fn);
    copy_tensor(*s, sorted, fn);
    auto v = empty_strided(values.sizes(), contiguous_strides(values.sizes()), common, values.device(), fn);
    copy_tensor(*v, values, fn);
    return searchsorted(*s, *v, out_int32, right, std::nullopt, sorter, fn);
  }
  StridedView sv;
  const StridedView* sp = nullptr;
  if (sorter) {
    sv = strided_view(*sorter);
    sp = &sv;
  }
  kernel(&IndexingKernels::search, values.device(), fn)(strided_view(sorted), strided_view(values),
                                                        strided_view(*out), sp, right, fn);
  return out;
}

std::unique_ptr<TensorImpl> masked_scatter(const TensorImpl& self, const TensorImpl& mask,
                                           const TensorImpl& source, const char* fn) {
  AOTRT_CHECK(mask.dtype() == ScalarType::Bool, kInvalidArgument, fn,
              ": masked_scatter_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  AOTRT_CHECK(source.dtype() == self.dtype(), kInvalidArgument, fn,
              ": masked_scatter: expected self and source to have same dtypes but got ",
              dtype_name(self.dtype()), " and ", dtype_name(source.dtype()));
  check_same_device(self, mask, "mask", fn);
  check_same_device(self, source, "source", fn);
  auto out = empty_strided(self.sizes(), contiguous_strides(self.sizes()), self.dtype(),
                           self.device(), fn);
  copy_tensor(*out, self, fn);
  if (self.dim() == 0 || self.numel() == 0) {
    AOTRT_CHECK(self.dim() > 0, kUnsupported, fn, ": a 0-d self is not served");
    return out;
  }
  auto m = make_tensor(mask.storage(), self.sizes(),
                       expand_strides(mask.sizes(), mask.strides(), self.sizes(), fn),
                       mask.storage_offset(), mask.dtype(), fn);
  auto nz = nonzero(*m, fn);  // [n, ndim]
  const int64_t n = nz->sizes()[0];
  if (n == 0) return out;
  AOTRT_CHECK(n <= source.numel(), kInvalidArgument, fn, ": Number of elements of source < ",
              "number of ones in mask (", source.numel(), " < ", n, ")");
  // source's first n elements in row-major order, as a dense 1-d tensor.
  auto flat = empty_strided(source.sizes(), contiguous_strides(source.sizes()), source.dtype(),
                            source.device(), fn);
  copy_tensor(*flat, source, fn);
  const int64_t nn[] = {n}, one[] = {1};
  auto values = make_tensor(flat->storage(), nn, one, 0, source.dtype(), fn);
  std::vector<std::unique_ptr<TensorImpl>> cols;
  std::vector<const TensorImpl*> ix;
  for (int64_t j = 0; j < self.dim(); ++j) {
    const int64_t st[] = {nz->strides()[0]};
    cols.push_back(make_tensor(nz->storage(), nn, st, nz->storage_offset() + j * nz->strides()[1],
                               ScalarType::Int64, fn));
    ix.push_back(cols.back().get());
  }
  const IndexPlan p = plan(*out, ix, fn);
  IndexedArgs a;
  a.shape = p.shape;
  a.dst = view_as(a, *out, p.self_strides, 0);
  a.src = view_as(a, *values, {1}, 0);
  add_indices(a, p);
  kernel(&IndexingKernels::indexed, self.device(), fn)(IndexMode::kAssign, a, fn);
  return out;
}

namespace {

// index_reduce and index_add: a contiguous copy of self, then source's slices
// reduced into it at index along dim (`name` is ATen's, for its messages).
std::unique_ptr<TensorImpl> index_into(const TensorImpl& self, int64_t dim,
                                       const TensorImpl& index, const TensorImpl& source,
                                       IndexMode mode, bool include_self, const char* name,
                                       const char* fn) {
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  AOTRT_CHECK(index.dim() <= 1 && is_index_dtype(index.dtype()), kInvalidArgument, fn, ": ",
              name, ": Index is supposed to be a vector of int64 or int32");
  AOTRT_CHECK(source.dtype() == self.dtype(), kInvalidArgument, fn, ": ", name, ": self (",
              dtype_name(self.dtype()), ") and source (", dtype_name(source.dtype()),
              ") must have the same scalar type");
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  const Dims sshape = source.dim() == 0 ? Dims{1} : to_vector(source.sizes());
  AOTRT_CHECK(static_cast<int64_t>(sshape.size()) == nd, kInvalidArgument, fn, ": ", name,
              ": Source and self must have the same number of dimensions");
  const int64_t n = index.numel();
  AOTRT_CHECK(sshape[d] == n, kInvalidArgument, fn, ": ", name, ": Number of indices (", n,
              ") should be equal to source.size(dim) (", sshape[d], ")");
  const Dims self_sizes = self.dim() == 0 ? Dims{1} : to_vector(self.sizes());
  for (int64_t k = 0; k < nd; ++k) {
    AOTRT_CHECK(k == d || sshape[k] == self_sizes[k], kInvalidArgument, fn, ": ", name,
                ": source and self must match in every dim but ", d);
  }
  check_same_device(self, index, "index", fn);
  check_same_device(self, source, "source", fn);
  auto out = empty_strided(self.sizes(), contiguous_strides(self.sizes()), self.dtype(),
                           self.device(), fn);
  copy_tensor(*out, self, fn);
  if (numel_of_shape(sshape) == 0) return out;
  const Dims out_strides = self.dim() == 0 ? Dims{1} : to_vector(out->strides());
  IndexedArgs a;
  a.shape = sshape;
  Dims dst_strides = out_strides;
  dst_strides[d] = 0;
  a.dst = view_as(a, *out, dst_strides, 0);
  a.src = view_as(a, source, source.dim() == 0 ? Dims{1} : to_vector(source.strides()),
                  source.storage_offset());
  Dims istr(sshape.size(), 0);
  istr[d] = index.dim() == 0 ? 1 : index.strides()[0];
  a.indices.push_back(view_as(a, index, istr, index.storage_offset()));
  a.index_sizes = {self_sizes[d]};
  a.index_strides = {out_strides[d]};
  a.index_dims = {d};
  a.negative_indices = false;  // "index out of range in self", as ATen
  // How many values each place holds so far (self's counts when included):
  // the kernel starts an excluded place with its first source value.
  auto counts = empty_strided(out->sizes(), out->strides(), ScalarType::Int64, self.device(), fn);
  auto init = scalar_tensor(include_self ? 1.0 : 0.0, ScalarType::Int64, cpu_device(), fn);
  copy_tensor(*counts, *init, fn);
  a.counts = view_as(a, *counts, dst_strides, 0);
  kernel(&IndexingKernels::indexed, self.device(), fn)(mode, a, fn);
  return out;
}

}  // namespace

std::unique_ptr<TensorImpl> index_reduce(const TensorImpl& self, int64_t dim,
                                         const TensorImpl& index, const TensorImpl& source,
                                         std::string_view reduce, bool include_self,
                                         const char* fn) {
  AOTRT_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              kInvalidArgument, fn, ": index_reduce(): Expected reduce to be one of prod, mean, ",
              "amax or amin but got ", reduce, ".");
  const IndexMode mode = reduce == "prod"   ? IndexMode::kProd
                         : reduce == "mean" ? IndexMode::kMean
                         : reduce == "amax" ? IndexMode::kMax
                                            : IndexMode::kMin;
  return index_into(self, dim, index, source, mode, include_self, "index_reduce_()", fn);
}

std::unique_ptr<TensorImpl> index_add(const TensorImpl& self, int64_t dim,
                                      const TensorImpl& index, const TensorImpl& source,
                                      double alpha, const char* fn) {
  if (alpha == 1.0) {
    // ATen's scatter_add path (dim first or last of a >1-d self, int64
    // index, source matching self but at dim) sums float16/bfloat16 in float
    // and rounds once; its slice-by-slice path rounds after every add.
    const int64_t d = wrap_dim(dim, self.dim(), fn);
    const bool low = self.dtype() == ScalarType::BFloat16 || self.dtype() == ScalarType::Float16;
    bool scatter_path = low && source.dtype() == self.dtype() && self.dim() > 1 &&
                        (d == 0 || d == self.dim() - 1) && index.dtype() == ScalarType::Int64 &&
                        source.dim() == self.dim();
    for (int64_t k = 0; scatter_path && k < self.dim(); ++k) {
      scatter_path = k == d || source.sizes()[k] == self.sizes()[k];
    }
    if (!scatter_path) {
      return index_into(self, dim, index, source, IndexMode::kSum, true, "index_add_()", fn);
    }
    auto wide = [&](const TensorImpl& t) {
      auto w = empty_strided(t.sizes(), contiguous_strides(t.sizes()), ScalarType::Float32,
                             t.device(), fn);
      copy_tensor(*w, t, fn);
      return w;
    };
    auto sum = index_into(*wide(self), dim, index, *wide(source), IndexMode::kSum, true,
                          "index_add_()", fn);
    auto out = empty_strided(self.sizes(), contiguous_strides(self.sizes()), self.dtype(),
                             self.device(), fn);
    copy_tensor(*out, *sum, fn);
    return out;
  }
  AOTRT_CHECK(source.dtype() == self.dtype(), kInvalidArgument, fn, ": index_add_(): self (",
              dtype_name(self.dtype()), ") and source (", dtype_name(source.dtype()),
              ") must have the same scalar type");
  auto scaled = mul(source, alpha, fn);
  AOTRT_CHECK(scaled->dtype() == self.dtype(), kInvalidArgument, fn, ": index_add_(): alpha ",
              alpha, " does not fit self's dtype ", dtype_name(self.dtype()));
  return index_into(self, dim, index, *scaled, IndexMode::kSum, true, "index_add_()", fn);
}

std::unique_ptr<TensorImpl> repeat_interleave(const TensorImpl& repeats,
                                              std::optional<int64_t> output_size, const char* fn) {
  AOTRT_CHECK(repeats.dim() == 1, kInvalidArgument, fn, ": repeat_interleave only accept 1D vector as repeat");
  AOTRT_CHECK(is_index_dtype(repeats.dtype()), kInvalidArgument, fn,
              ": repeats has to be Long or Int tensor, not ", dtype_name(repeats.dtype()));
  const int64_t n = repeats.numel();
  const int64_t sizes[] = {n}, one[] = {1};
  auto host = empty_strided(sizes, one, ScalarType::Int64, cpu_device(), fn);
  copy_tensor(*host, repeats, fn);
  const auto* r = static_cast<const int64_t*>(host->data_ptr());
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    AOTRT_CHECK(r[i] >= 0, kInvalidArgument, fn, ": repeats can not be negative");
    total = checked_add(total, r[i], fn);  // the sum of repeats must fit in int64
  }
  if (output_size) {
    AOTRT_CHECK(*output_size == total, kInvalidArgument, fn, ": output_size ", *output_size,
                " does not match the sum of repeats (", total, ")");
  }
  const int64_t tsz[] = {total};
  auto result = empty_strided(tsz, one, ScalarType::Int64, cpu_device(), fn);
  auto* o = static_cast<int64_t*>(result->data_ptr());
  for (int64_t i = 0, k = 0; i < n; ++i) {
    for (int64_t j = 0; j < r[i]; ++j) o[k++] = i;
  }
  auto out = empty_strided(tsz, one, repeats.dtype(), repeats.device(), fn);
  if (total > 0) copy_tensor(*out, *result, fn);
  return out;
}

std::unique_ptr<TensorImpl> histc(const TensorImpl& self, int64_t bins, double min, double max,
                                  const char* fn) {
  AOTRT_CHECK(bins > 0, kInvalidArgument, fn, ": bins must be > 0, but got ", bins);
  // ATen's CPU histc takes floating point only; its CUDA one every real dtype
  // but bool and float16, integers binned in int64 arithmetic (the CUDA kernel).
  if (self.device().type == DeviceType::CPU) {
    AOTRT_CHECK(is_floating(self.dtype()), kInvalidArgument, fn,
                ": torch.histc: input tensor and hist tensor should have the same dtype, and be "
                "floating point; got ", dtype_name(self.dtype()));
  } else {
    AOTRT_CHECK(self.dtype() != ScalarType::Bool && !is_complex(self.dtype()), kInvalidArgument,
                fn, ": \"histc\" not implemented for '", dtype_name(self.dtype()), "'");
  }
  AOTRT_CHECK(min <= max, kInvalidArgument, fn, ": max must be larger than min");
  const int64_t sizes[] = {bins};
  auto out = full(sizes, 0.0, self.dtype(), self.device(), fn);
  kernel(&IndexingKernels::histc, self.device(), fn)(strided_view(self), strided_view(*out), min,
                                                     max, fn);
  return out;
}

std::unique_ptr<TensorImpl> scalar_tensor(double value, ScalarType dtype, Device device,
                                          const char* fn) {
  auto host = empty_strided({}, {}, ScalarType::Float64, cpu_device(), fn);
  *static_cast<double*>(host->data_ptr()) = value;
  if (dtype == ScalarType::Float64 && device.is_cpu()) return host;
  auto t = empty_strided({}, {}, dtype, device, fn);
  copy_tensor(*t, *host, fn);
  return t;
}

}  // namespace aotrt::ops
