#include "ops/attention.h"

#include "core/copy.h"
#include "core/error.h"
#include "ops/dispatch.h"

namespace aotrt::ops {

AttentionOutputs attention(const AttentionArgs& a, double dropout_p, const char* fn) {
  AOTRT_CHECK(dropout_p == 0.0, kUnsupported, fn, ": dropout_p ", dropout_p,
              " is not served; aotrt runs inference, where attention dropout is 0");
  return kernel(&AttentionKernels::attention, a.query.device(), fn)(a, fn);
}

std::unique_ptr<TensorImpl> zero_philox_scalar(Device device, const char* fn) {
  auto t = empty_strided({}, {}, ScalarType::Int64, device, fn);
  zero_tensor(*t, fn);
  return t;
}

}  // namespace aotrt::ops
