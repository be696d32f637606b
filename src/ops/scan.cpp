#include "ops/scan.h"

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {
namespace {

bool is_integral(ScalarType t) { return !is_floating(t) && !is_complex(t); }

// A new contiguous tensor of self's sizes holding self converted to `dtype`.
std::unique_ptr<TensorImpl> converted_copy(const TensorImpl& self, ScalarType dtype,
                                           const char* fn) {
  auto out =
      empty_strided(self.sizes(), contiguous_strides(self.sizes()), dtype, self.device(), fn);
  copy_tensor(*out, self, fn);
  return out;
}

std::unique_ptr<TensorImpl> sum_or_prod(ScanOp op, const TensorImpl& self, int64_t dim,
                                        std::optional<ScalarType> dtype, const char* fn) {
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  const ScalarType out_dtype =
      dtype.value_or(is_integral(self.dtype()) ? ScalarType::Int64 : self.dtype());
  auto out = converted_copy(self, out_dtype, fn);
  if (self.dim() > 0 && out->numel() > 0) {
    kernel(&ScanKernels::scan, self.device(), fn)(op, strided_view(*out), d, fn);
  }
  return out;
}

ValuesIndices max_or_min(ScanOp op, const TensorImpl& self, int64_t dim, const char* fn) {
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  AOTRT_CHECK(!is_complex(self.dtype()), kInvalidArgument, fn, ": ", dtype_name(self.dtype()),
              " has no order (ATen refuses complex inputs too)");
  ValuesIndices r;
  r.values = converted_copy(self, self.dtype(), fn);
  r.indices = empty_strided(self.sizes(), contiguous_strides(self.sizes()), ScalarType::Int64,
                            self.device(), fn);
  if (self.dim() == 0 || self.numel() == 0) {
    zero_tensor(*r.indices, fn);  // a 0-d input's one element is its own extreme
    return r;
  }
  kernel(&ScanKernels::scan_with_indices, self.device(), fn)(op, strided_view(*r.values),
                                                             strided_view(*r.indices), d, fn);
  return r;
}

}  // namespace

std::unique_ptr<TensorImpl> cumsum(const TensorImpl& self, int64_t dim,
                                   std::optional<ScalarType> dtype, const char* fn) {
  return sum_or_prod(ScanOp::kSum, self, dim, dtype, fn);
}

std::unique_ptr<TensorImpl> cumprod(const TensorImpl& self, int64_t dim,
                                    std::optional<ScalarType> dtype, const char* fn) {
  return sum_or_prod(ScanOp::kProd, self, dim, dtype, fn);
}

std::unique_ptr<TensorImpl> logcumsumexp(const TensorImpl& self, int64_t dim, const char* fn) {
  AOTRT_CHECK(is_floating(self.dtype()), kInvalidArgument, fn, ": ",
              dtype_name(self.dtype()),
              " input is not served: logcumsumexp takes floating-point tensors (as ATen)");
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  auto out = converted_copy(self, self.dtype(), fn);
  if (self.dim() > 0 && out->numel() > 0) {
    kernel(&ScanKernels::scan, self.device(), fn)(ScanOp::kLogSumExp, strided_view(*out), d,
                                                  fn);
  }
  return out;
}

ValuesIndices cummax(const TensorImpl& self, int64_t dim, const char* fn) {
  return max_or_min(ScanOp::kMax, self, dim, fn);
}

ValuesIndices cummin(const TensorImpl& self, int64_t dim, const char* fn) {
  return max_or_min(ScanOp::kMin, self, dim, fn);
}

}  // namespace aotrt::ops
