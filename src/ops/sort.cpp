#include "ops/sort.h"

#include <limits>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {
namespace {

void check_ordered(const TensorImpl& self, const char* fn) {
  AOTRT_CHECK(!is_complex(self.dtype()), kInvalidArgument, fn, ": ", dtype_name(self.dtype()),
              " has no order (ATen refuses complex inputs too)");
}

std::vector<int64_t> to_vector(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

// A 0-d input is a line of one element: a 1-d view of it.
std::unique_ptr<TensorImpl> as_line(const TensorImpl& self, const char* fn) {
  const int64_t one[] = {1};
  return make_tensor(self.storage(), one, one, self.storage_offset(), self.dtype(), fn);
}

// New contiguous outputs of `sizes`.
ValuesIndices outputs(const std::vector<int64_t>& sizes, ScalarType dtype, Device device,
                      const char* fn) {
  const std::vector<int64_t> strides = contiguous_strides(sizes);
  return {empty_strided(sizes, strides, dtype, device, fn),
          empty_strided(sizes, strides, ScalarType::Int64, device, fn)};
}

// The keepdim=false view of a contiguous keepdim result: dim dropped.
std::unique_ptr<TensorImpl> drop_dim(const TensorImpl& t, int64_t dim, const char* fn) {
  std::vector<int64_t> sizes = to_vector(t.sizes()), strides = to_vector(t.strides());
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return make_tensor(t.storage(), sizes, strides, t.storage_offset(), t.dtype(), fn);
}

// kthvalue / median / mode: results with dim kept (size 1) or dropped.
template <typename Run>
ValuesIndices reduce_line(const TensorImpl& self, int64_t dim, bool keepdim, const char* fn,
                          Run&& run) {
  check_ordered(self, fn);
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  std::unique_ptr<TensorImpl> line_view;
  const TensorImpl* in = &self;
  if (self.dim() == 0) {
    line_view = as_line(self, fn);
    in = line_view.get();
  }
  AOTRT_CHECK(in->sizes()[d] > 0, kInvalidArgument, fn, ": dim ", dim,
              " is empty: there is no element to select (as ATen refuses)");
  std::vector<int64_t> sizes = to_vector(in->sizes());
  sizes[d] = 1;
  ValuesIndices r = outputs(sizes, self.dtype(), self.device(), fn);
  if (in->numel() > 0) run(*in, r, d);
  if (self.dim() == 0 || !keepdim) {
    r.values = drop_dim(*r.values, d, fn);
    r.indices = drop_dim(*r.indices, d, fn);
  }
  return r;
}

}  // namespace

ValuesIndices sort(const TensorImpl& self, int64_t dim, bool descending, const char* fn) {
  check_ordered(self, fn);
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  const std::vector<int64_t> strides = preserve_format_strides(self.sizes(), self.strides());
  ValuesIndices r{empty_strided(self.sizes(), strides, self.dtype(), self.device(), fn),
                  empty_strided(self.sizes(), strides, ScalarType::Int64, self.device(), fn)};
  copy_tensor(*r.values, self, fn);
  if (self.dim() == 0) {
    zero_tensor(*r.indices, fn);
  } else if (self.numel() > 0) {
    kernel(&SortKernels::sort, self.device(), fn)(strided_view(*r.values),
                                                  strided_view(*r.indices), d, descending, fn);
  }
  return r;
}

ValuesIndices topk(const TensorImpl& self, int64_t k, int64_t dim, bool largest, bool sorted,
                   const char* fn) {
  check_ordered(self, fn);
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  const int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  AOTRT_CHECK(k >= 0 && k <= n, kInvalidArgument, fn, ": selected index k out of range (k = ",
              k, ", dim ", dim, " has ", n, " elements)");
  std::vector<int64_t> sizes = to_vector(self.sizes());
  if (self.dim() > 0) sizes[d] = k;
  ValuesIndices r = outputs(sizes, self.dtype(), self.device(), fn);
  if (self.dim() == 0) {  // a 0-d result, self and index 0, for k 0 as for k 1 (as ATen)
    copy_tensor(*r.values, self, fn);
    zero_tensor(*r.indices, fn);
    return r;
  }
  if (k == 0 || self.numel() == 0) return r;
  kernel(&SortKernels::topk, self.device(), fn)(strided_view(self), strided_view(*r.values),
                                                strided_view(*r.indices), k, d, largest, sorted, fn);
  return r;
}

ValuesIndices kthvalue(const TensorImpl& self, int64_t k, int64_t dim, bool keepdim,
                       const char* fn) {
  return reduce_line(self, dim, keepdim, fn, [&](const TensorImpl& in, ValuesIndices& r, int64_t d) {
    const int64_t n = in.sizes()[d];
    AOTRT_CHECK(k >= 1 && k <= n, kInvalidArgument, fn, ": selected number k out of range (k = ",
                k, ", dim ", dim, " has ", n, " elements)");
    kernel(&SortKernels::select, in.device(), fn)(strided_view(in), strided_view(*r.values),
                                                  strided_view(*r.indices), d, k - 1, false,
                                                  false, fn);
  });
}

ValuesIndices mode(const TensorImpl& self, int64_t dim, bool keepdim, const char* fn) {
  return reduce_line(self, dim, keepdim, fn, [&](const TensorImpl& in, ValuesIndices& r, int64_t d) {
    kernel(&SortKernels::mode, in.device(), fn)(strided_view(in), strided_view(*r.values),
                                                strided_view(*r.indices), d, fn);
  });
}

ValuesIndices median_dim(const TensorImpl& self, int64_t dim, bool keepdim, bool ignore_nan,
                         const char* fn) {
  return reduce_line(self, dim, keepdim, fn, [&](const TensorImpl& in, ValuesIndices& r, int64_t d) {
    kernel(&SortKernels::select, in.device(), fn)(strided_view(in), strided_view(*r.values),
                                                  strided_view(*r.indices), d, -1, true,
                                                  ignore_nan, fn);
  });
}

UniqueResult unique(const TensorImpl& self, std::optional<int64_t> dim, bool consecutive,
                    bool return_inverse, bool return_counts, const char* fn) {
  AOTRT_CHECK(!is_complex(self.dtype()), kInvalidArgument, fn, ": \"unique\" is not ",
              "implemented for ", dtype_name(self.dtype()), " (as in ATen)");
  // The rows compared: [n, m], dim outermost, the other dims in their order.
  std::vector<int64_t> order;  // self's dims in row order (dim first)
  int64_t d = 0;
  if (dim) {
    AOTRT_CHECK(self.dim() > 0, kInvalidArgument, fn, ": dim ", *dim,
                " was given but self has no dimensions (as ATen refuses)");
    d = wrap_dim(*dim, self.dim(), fn);
    order.push_back(d);
    for (int64_t k = 0; k < self.dim(); ++k) {
      if (k == d) continue;
      order.push_back(k);
      AOTRT_CHECK(self.numel() > 0 || self.sizes()[k] > 0, kInvalidArgument, fn, ": dim ", k,
                  " of self (sizes ", sizes_text(self.sizes()), ") has size 0 and is not dim ",
                  d, "; ATen refuses it too (\"There are 0 sized dimensions, and they aren't "
                  "selected, so unique cannot be applied\")");
    }
  } else {
    for (int64_t k = 0; k < self.dim(); ++k) order.push_back(k);
  }
  std::vector<int64_t> row_sizes, row_strides;
  for (int64_t k : order) {
    row_sizes.push_back(self.sizes()[k]);
    row_strides.push_back(self.strides()[k]);
  }
  const int64_t n = dim ? self.sizes()[d] : self.numel();
  const int64_t m = dim ? size_product(row_sizes, 1, row_sizes.size()) : 1;
  // A dense copy of self in row order, unless self already is one.
  std::unique_ptr<TensorImpl> packed;
  const TensorImpl* rows_of = &self;
  if (!is_contiguous(row_sizes, row_strides)) {
    packed = empty_strided(row_sizes, contiguous_strides(row_sizes), self.dtype(), self.device(),
                           fn);
    copy_tensor(*packed, *make_tensor(self.storage(), row_sizes, row_strides,
                                      self.storage_offset(), self.dtype(), fn),
                fn);
    rows_of = packed.get();
  }
  // Along a dim ATen's CPU kernel makes inverse and counts whatever was asked.
  if (dim) return_inverse = return_counts = true;
  const int64_t rows_sizes[] = {n, m}, rows_strides[] = {m, 1};
  auto rows = make_tensor(rows_of->storage(), rows_sizes, rows_strides,
                          rows_of->storage_offset(), self.dtype(), fn);
  auto out = empty_strided(rows_sizes, rows_strides, self.dtype(), self.device(), fn);
  const int64_t flat[] = {n}, one[] = {1}, none[] = {0};
  auto inverse = empty_strided(return_inverse ? flat : none, one, ScalarType::Int64,
                               self.device(), fn);
  auto counts = empty_strided(return_counts ? flat : none, one, ScalarType::Int64,
                              self.device(), fn);
  int64_t count = 0;
  if (n > 0) {
    const StridedView inv = strided_view(*inverse), cts = strided_view(*counts);
    count = kernel(&SortKernels::unique, self.device(), fn)(
        strided_view(*rows), strided_view(*out), return_inverse ? &inv : nullptr,
        return_counts ? &cts : nullptr, consecutive, fn);
  }
  UniqueResult r;
  // values: self's sizes with dim of size count (dim None: [count]), contiguous.
  std::vector<int64_t> value_sizes{count};
  if (dim) {
    value_sizes.assign(self.sizes().begin(), self.sizes().end());
    value_sizes[d] = count;
  }
  const std::vector<int64_t> value_strides = contiguous_strides(value_sizes);
  if (dim && d != 0 && count > 0) {
    // The kernel wrote the rows dim-first: lay them out as the result's.
    auto laid = empty_strided(value_sizes, value_strides, self.dtype(), self.device(), fn);
    std::vector<int64_t> kept_sizes{count};
    for (size_t i = 1; i < order.size(); ++i) kept_sizes.push_back(row_sizes[i]);
    const std::vector<int64_t> dense = contiguous_strides(kept_sizes);
    std::vector<int64_t> src_strides(self.dim());
    for (size_t i = 0; i < order.size(); ++i) src_strides[order[i]] = dense[i];
    copy_tensor(*laid, *make_tensor(out->storage(), value_sizes, src_strides, 0, self.dtype(), fn),
                fn);
    out = std::move(laid);
  }
  r.values = make_tensor(out->storage(), value_sizes, value_strides, 0, self.dtype(), fn);
  if (return_inverse && !dim) {  // self's sizes, contiguous
    r.inverse = make_tensor(inverse->storage(), self.sizes(), contiguous_strides(self.sizes()), 0,
                            ScalarType::Int64, fn);
  } else {
    r.inverse = std::move(inverse);
  }
  if (return_counts) {
    const int64_t c[] = {count};
    r.counts = make_tensor(counts->storage(), c, one, 0, ScalarType::Int64, fn);
  } else {
    r.counts = std::move(counts);
  }
  return r;
}

std::unique_ptr<TensorImpl> median(const TensorImpl& self, bool ignore_nan, const char* fn) {
  check_ordered(self, fn);
  const int64_t n = self.numel();
  const int64_t flat[] = {n}, one[] = {1};
  // Every element as one line: a contiguous copy seen as 1-d.
  auto packed = empty_strided(self.sizes(), contiguous_strides(self.sizes()), self.dtype(),
                              self.device(), fn);
  copy_tensor(*packed, self, fn);
  auto line = make_tensor(packed->storage(), flat, one, 0, self.dtype(), fn);
  auto value = empty_strided(one, one, self.dtype(), self.device(), fn);
  auto index = empty_strided(one, one, ScalarType::Int64, self.device(), fn);
  if (n == 0) {
    // ATen: NaN, converted to the dtype (int64: INT64_MIN, Note [Float to
    // integer conversion] in cpu/elements.h).
    auto nan = empty_strided({}, {}, ScalarType::Float64, cpu_device(), fn);
    *static_cast<double*>(nan->data_ptr()) = std::numeric_limits<double>::quiet_NaN();
    copy_tensor(*value, *nan, fn);
  } else {
    kernel(&SortKernels::select, self.device(), fn)(strided_view(*line), strided_view(*value),
                                                    strided_view(*index), 0, -1, true,
                                                    ignore_nan, fn);
  }
  return make_tensor(value->storage(), {}, {}, 0, self.dtype(), fn);
}

}  // namespace aotrt::ops
