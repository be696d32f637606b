#include "ops/conv.h"

#include "ops/dispatch.h"

namespace aotrt::ops {

std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params,
                                        const char* fn) {
  return kernel(&ConvKernels::convolution, input.device(), fn)(input, weight, bias, params, fn);
}

}  // namespace aotrt::ops
