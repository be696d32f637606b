// aten.convolution (1-, 2- and 3-d, plain or transposed), for every device.
// Returns new memory laid out as ATen's kernels of that device lay it out
// (Note [Convolution output layout] in each backend). The argument checks
// with ATen's rules live in the backends (cpu/conv.cpp on oneDNN,
// cuda/conv.cpp on cuDNN), which were written before this layer.
#pragma once

#include <memory>
#include <optional>

#include "core/conv_params.h"
#include "core/tensor.h"
#include "ops/linear.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h.
struct ConvKernels {
  std::unique_ptr<TensorImpl> (*convolution)(const TensorImpl& input, const TensorImpl& weight,
                                             const TensorImpl* bias, const ConvParams& params,
                                             const char* fn);
};

// bias may be null. The device of `input` picks the kernel.
std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params,
                                        const char* fn);

// mkldnn._convolution_pointwise and its _binary and transposed siblings
// (Note [Fused oneDNN ops] in ops/linear.h): the convolution, then the
// binary with `other` (when given) and the activation, on a result laid out
// channels-last as inductor's mkldnn_ir expects.
std::unique_ptr<TensorImpl> convolution_pointwise(const TensorImpl& input,
                                                  const TensorImpl& weight,
                                                  const TensorImpl* bias,
                                                  const ConvParams& params,
                                                  const TensorImpl* other, BinaryPost binary,
                                                  const std::optional<PostOp>& unary,
                                                  const char* fn);

}  // namespace aotrt::ops
