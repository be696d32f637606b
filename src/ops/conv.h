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

// What a fused convolution applies to its result (Note [Fused oneDNN ops] in
// ops/linear.h): unary(binary(conv + bias, other)).
struct ConvFusion {
  const TensorImpl* other = nullptr;  // the binary's operand, the result's sizes; or null
  BinaryPost binary = BinaryPost::kAdd;
  std::optional<PostOp> unary;
  // Write the result into `other` (the in-place _binary_ op's add).
  bool into_other = false;
};

// See Note [Op dispatch] in ops/dispatch.h.
struct ConvKernels {
  std::unique_ptr<TensorImpl> (*convolution)(const TensorImpl& input, const TensorImpl& weight,
                                             const TensorImpl* bias, const ConvParams& params,
                                             const char* fn);
  // Optional (null: none): the convolution and its fusion in one library
  // call, the result channels-last (or written into `other`, and a view of
  // it returned); null where the backend cannot fuse this one, and the
  // family then runs the convolution and the post-ops apart.
  std::unique_ptr<TensorImpl> (*convolution_fused)(const TensorImpl& input,
                                                   const TensorImpl& weight,
                                                   const TensorImpl* bias,
                                                   const ConvParams& params,
                                                   const ConvFusion& fusion) = nullptr;
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

// mkldnn._convolution_pointwise_.binary, the in-place form: other =
// unary(binary(conv, other)); returns a new handle's view of other.
std::unique_ptr<TensorImpl> convolution_pointwise_(const TensorImpl& other,
                                                   const TensorImpl& input,
                                                   const TensorImpl& weight,
                                                   const TensorImpl* bias,
                                                   const ConvParams& params, BinaryPost binary,
                                                   const std::optional<PostOp>& unary,
                                                   const char* fn);

}  // namespace aotrt::ops
