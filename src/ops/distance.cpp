// The distance family's semantics: see Note [Distance semantics].
#include "ops/distance.h"

#include <algorithm>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {
namespace {

using Sizes = std::vector<int64_t>;

void check_operand(const TensorImpl& t, const char* name, const char* fn) {
  AOTRT_CHECK(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, kUnsupported,
              fn, ": argument '", name, "' is ", dtype_name(t.dtype()),
              "; aotrt serves distances of float32 and float64 tensors");
}

// A dense copy of t broadcast to sizes.
std::unique_ptr<TensorImpl> dense(const TensorImpl& t, const Sizes& sizes, const char* fn) {
  auto out = empty_strided(sizes, contiguous_strides(sizes), t.dtype(), t.device(), fn);
  copy_tensor(*out, t, fn);
  return out;
}

}  // namespace

std::unique_ptr<TensorImpl> cdist(const TensorImpl& x1, const TensorImpl& x2, double p,
                                  std::optional<int64_t> compute_mode, const char* fn) {
  check_operand(x1, "x1", fn);
  check_operand(x2, "x2", fn);
  AOTRT_CHECK(x1.device() == x2.device(), kInvalidArgument, fn, ": argument 'x2' is on ",
              x2.device().str(), ", 'x1' on ", x1.device().str());
  AOTRT_CHECK(x1.dtype() == x2.dtype(), kInvalidArgument, fn, ": X1 and X2 must have the same ",
              "dtype, got ", dtype_name(x1.dtype()), " and ", dtype_name(x2.dtype()));
  AOTRT_CHECK(x1.dim() >= 2 && x2.dim() >= 2, kInvalidArgument, fn,
              ": cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  AOTRT_CHECK(x1.sizes().back() == x2.sizes().back(), kInvalidArgument, fn,
              ": X1 and X2 must have the same number of columns. X1: ", x1.sizes().back(),
              " X2: ", x2.sizes().back());
  AOTRT_CHECK(p >= 0, kInvalidArgument, fn, ": cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  AOTRT_CHECK(mode >= 0 && mode <= 2, kInvalidArgument, fn, ": possible modes: 0, 1, 2, but was: ",
              mode);
  const int64_t P = x1.sizes()[x1.dim() - 2], R = x2.sizes()[x2.dim() - 2];
  const int64_t M = x1.sizes().back();
  const Sizes b1(x1.sizes().begin(), x1.sizes().end() - 2);
  const Sizes b2(x2.sizes().begin(), x2.sizes().end() - 2);
  const Sizes batch = broadcast_shapes(b1, b2, fn);
  Sizes out_sizes = batch;
  out_sizes.push_back(P);
  out_sizes.push_back(R);
  auto out = empty_strided(out_sizes, contiguous_strides(out_sizes), x1.dtype(), x1.device(), fn);
  if (out->numel() == 0) return out;
  if (M == 0) {
    zero_tensor(*out, fn);
    return out;
  }
  Sizes s1 = batch, s2 = batch;
  s1.insert(s1.end(), {P, M});
  s2.insert(s2.end(), {R, M});
  auto d1 = dense(x1, s1, fn), d2 = dense(x2, s2, fn);
  const bool use_mm = p == 2 && (mode == 1 || (mode == 0 && (P > 25 || R > 25)));
  kernel(&DistanceKernels::cdist, x1.device(), fn)(*out, *d1, *d2, p, use_mm);
  return out;
}

std::unique_ptr<TensorImpl> pdist(const TensorImpl& self, double p, const char* fn) {
  check_operand(self, "self", fn);
  AOTRT_CHECK(self.dim() == 2, kInvalidArgument, fn,
              ": pdist only supports 2D tensors, got: ", self.dim(), "D");
  AOTRT_CHECK(p >= 0, kInvalidArgument, fn, ": pdist only supports non-negative p values");
  const int64_t n = self.sizes()[0];
  // n (n - 1) / 2 pairs, halving the even factor first; checked, as n may be any size.
  const int64_t pairs =
      n <= 1 ? 0
             : (n % 2 == 0 ? checked_mul(n / 2, n - 1, "pdist's output size")
                           : checked_mul(n, (n - 1) / 2, "pdist's output size"));
  const int64_t size[] = {pairs}, stride[] = {1};
  auto out = empty_strided(size, stride, self.dtype(), self.device(), fn);
  if (out->numel() == 0) return out;
  if (self.sizes()[1] == 0) {
    zero_tensor(*out, fn);
    return out;
  }
  auto d = dense(self, Sizes(self.sizes().begin(), self.sizes().end()), fn);
  kernel(&DistanceKernels::pdist, self.device(), fn)(*out, *d, p);
  return out;
}

}  // namespace aotrt::ops
