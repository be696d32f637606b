// Scans along a dim: cumsum, cumprod, logcumsumexp, cummax, cummin.
//
// Note [Scan semantics]
// Checked against torch 2.13 eager (tests/unit/ops/gen_scan_reference.py):
// - cumsum/cumprod: the result dtype is `dtype` when given, else int64 for
//   integral and bool inputs, else the input's. The input is converted to it
//   first (ATen's self.to(result dtype)), then scanned. ATen's CPU kernels
//   accumulate in acc_type: double for float32 (so [1e8, 1, 1, -1e8] sums
//   to 2, not 0), float for float16/bfloat16, int64 for integers (wrapping
//   on overflow, as int64 addition does), complex<double> for complex64.
//   CUDA's acc_type of float32 is float32.
// - logcumsumexp: floating types only (ATen refuses integers); the running
//   value is log(exp(a) + exp(b)) computed as max + log1p(exp(min - max)),
//   NaN propagates, and two infinities of one sign stay that infinity.
// - cummax/cummin: values keep the input's dtype, indices are int64. On
//   ties the later index wins (x >= running max); a NaN becomes the running
//   value and each later NaN moves the index to itself.
// - Every result is a new contiguous tensor of the input's sizes, whatever
//   the input's strides; a 0-d input takes dim 0 or -1.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "core/tensor.h"

namespace aotrt::ops {

enum class ScanOp { kSum, kProd, kLogSumExp, kMax, kMin };

// See Note [Op dispatch] in ops/dispatch.h. `values` holds the input already
// converted to the result dtype; kernels scan it in place along `dim` (any
// strides; the family passes new contiguous tensors). scan_with_indices
// (kMax, kMin) also writes the int64 index of each running extreme.
struct ScanKernels {
  void (*scan)(ScanOp op, const StridedView& values, int64_t dim, const char* fn);
  void (*scan_with_indices)(ScanOp op, const StridedView& values, const StridedView& indices,
                            int64_t dim, const char* fn);
};

std::unique_ptr<TensorImpl> cumsum(const TensorImpl& self, int64_t dim,
                                   std::optional<ScalarType> dtype, const char* fn);
std::unique_ptr<TensorImpl> cumprod(const TensorImpl& self, int64_t dim,
                                    std::optional<ScalarType> dtype, const char* fn);
std::unique_ptr<TensorImpl> logcumsumexp(const TensorImpl& self, int64_t dim, const char* fn);

struct ValuesIndices {
  std::unique_ptr<TensorImpl> values;
  std::unique_ptr<TensorImpl> indices;  // int64
};
ValuesIndices cummax(const TensorImpl& self, int64_t dim, const char* fn);
ValuesIndices cummin(const TensorImpl& self, int64_t dim, const char* fn);

}  // namespace aotrt::ops
