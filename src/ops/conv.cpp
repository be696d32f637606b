#include "ops/conv.h"

#include <algorithm>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dispatch.h"

namespace aotrt::ops {

std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params,
                                        const char* fn) {
  return kernel(&ConvKernels::convolution, input.device(), fn)(input, weight, bias, params, fn);
}

std::unique_ptr<TensorImpl> convolution_pointwise(const TensorImpl& input,
                                                  const TensorImpl& weight,
                                                  const TensorImpl* bias,
                                                  const ConvParams& params,
                                                  const TensorImpl* other, BinaryPost binary,
                                                  const std::optional<PostOp>& unary,
                                                  const char* fn) {
  AOTRT_CHECK(input.dim() >= 3 && input.dim() <= 5, kInvalidArgument, fn, ": X is ", input.dim(),
              "-d; a fused convolution takes 3-, 4- or 5-d input");
  auto out = convolution(input, weight, bias, params, fn);
  const std::vector<int64_t> want = channels_last_strides(out->sizes());
  if (out->numel() > 0 && !std::equal(want.begin(), want.end(), out->strides().begin(),
                                      out->strides().end())) {
    auto laid = empty_strided(out->sizes(), want, out->dtype(), out->device(), fn);
    copy_tensor(*laid, *out, fn);
    out = std::move(laid);
  }
  apply_post_ops(*out, other, binary, unary, fn);
  return out;
}

}  // namespace aotrt::ops
