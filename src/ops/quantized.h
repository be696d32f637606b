// The int8 oneDNN ops of quantized freezing=True packages: torch's
// aoti_torch/c/shim_cpu.h _qconv_pointwise_tensor,
// _qconv2d_pointwise_binary_tensor, _qlinear_pointwise_tensor and
// _qlinear_pointwise_binary_tensor, which inductor emits for models quantized
// with PT2E's X86InductorQuantizer (torchao.quantization.pt2e).
//
// Note [Quantized oneDNN ops]
// ATen's onednn qconv/qlinear (checked against torch 2.13 eager by
// tests/e2e/test_cpu_int8.py): x is uint8 (or int8) with a per-tensor
// scale and zero point (0-d tensors); the weight is int8, prepacked by
// oneDNN (the package's _mkldnn constant, read as a plain tensor: Note
// [Opaque constants]) as [O, I/g, k...] for a convolution and [K, N] for a
// linear, with per-output-channel scales and zero points;
//   y = sum (x - x_zp) x_scale * (w - w_zp[c]) w_scale[c] + bias[c]
// then the binary with `other` ("sum" or "add": y + alpha * other, other
// dequantized with its scale and zero point when it is an integer tensor),
// then the activation (Note [Fused oneDNN ops] in ops/linear.h); the result
// is output_dtype: float32 or bfloat16 (output scale 1, zero point 0), or
// uint8/int8 (None: x's dtype) quantized as clamp(nearbyint(y / out_scale) +
// out_zp). With "sum" the result is written into `other` (ATen's in-place
// accumulation; inductor reads that buffer afterwards) and the op returns a
// view of it. Output layout: a convolution's is channels-last, a linear's
// row-major, as ATen's.
// aotrt serves a call in one of two ways, chosen per call:
// - int8: the backend's int8 kernels (QuantizedKernels::qconv_int8 and
//   qlinear_int8; on the CPU oneDNN's int8 convolution and matmul
//   primitives, Note [Int8 primitives] in cpu/quantized.cpp), which
//   accumulate exactly in int32 and scale once;
// - float32, wherever the backend declines the call (it says why: the list
//   is in Note [Int8 primitives]; under AOTRT_VERBOSE the reason is printed
//   once per shim): y computed in float32 from dequantized operands with the
//   fused float32 convolution and linear paths (the dequantized weight of a
//   constant is made once and kept with it: Note [Constant storages]).
// The two differ by float32 rounding of y (a few 1e-7 relative), so a
// quantized output can land one step away where y / out_scale falls within
// that of a rounding boundary (none did in the unit tests' 240 problems).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/conv_params.h"
#include "core/tensor.h"
#include "ops/linear.h"

namespace aotrt::ops {

struct QuantArgs;

// The per-tensor and per-channel scalars of one call, read on the host once
// (x_scale and x_zero_point hold one value each; w_* one per output channel).
struct QuantScalars {
  float x_scale = 1;
  int64_t x_zero_point = 0;
  std::vector<float> w_scales;
  std::vector<int64_t> w_zero_points;
};

// See Note [Op dispatch] in ops/dispatch.h. Host-side scales and zero points:
// per channel along `channel_dim` (one entry per channel) or one for all
// (channel_dim -1).
struct QuantizedKernels {
  // out (float32, in's sizes, any strides) = (in - zp) * scale.
  void (*dequantize)(const StridedView& in, std::span<const float> scales,
                     std::span<const int64_t> zero_points, int64_t channel_dim,
                     const StridedView& out, const char* fn);
  // out (uint8 or int8) = clamp(nearbyint(in / scale) + zp, out's range); in float32.
  void (*quantize)(const StridedView& in, float scale, int64_t zero_point,
                   const StridedView& out, const char* fn);
  // Optional (null: none): the whole op in the backend's int8 kernels, the
  // arguments checked by the family and the result laid out as the family's
  // (Note [Quantized oneDNN ops]); null, with *why_not saying why, where the
  // backend cannot serve this call, and the family then runs the float32 path.
  std::unique_ptr<TensorImpl> (*qconv_int8)(const TensorImpl& qx, const TensorImpl& qw,
                                            const TensorImpl* bias, const ConvParams& params,
                                            const QuantArgs& q, const QuantScalars& s,
                                            ScalarType out_dtype, const char** why_not,
                                            const char* fn) = nullptr;
  // qw [K, N]; x [..., K]; the result [..., N] row-major (or `other`'s view).
  std::unique_ptr<TensorImpl> (*qlinear_int8)(const TensorImpl& qx, const TensorImpl& qw,
                                              const TensorImpl* bias, const QuantArgs& q,
                                              const QuantScalars& s, ScalarType out_dtype,
                                              const char** why_not, const char* fn) = nullptr;
};

// The binary of the _binary ops: "sum" (into other) or "add".
enum class QuantBinary { kNone, kSum, kAdd };

struct QuantArgs {
  const TensorImpl* x_scale;  // 0-d
  const TensorImpl* x_zero_point;
  const TensorImpl* w_scales;  // [C]
  const TensorImpl* w_zero_points;
  double output_scale = 1;
  int64_t output_zero_point = 0;
  std::optional<ScalarType> output_dtype;
  // The binary (kNone: no other).
  QuantBinary binary = QuantBinary::kNone;
  const TensorImpl* other = nullptr;
  double other_scale = 1;
  int64_t other_zero_point = 0;
  double alpha = 1;
  std::optional<PostOp> unary;
};

QuantBinary parse_quant_binary(std::string_view attr, const char* fn);

std::unique_ptr<TensorImpl> qconv_pointwise(const TensorImpl& qx, const TensorImpl& qw,
                                            const TensorImpl* bias, const ConvParams& params,
                                            const QuantArgs& q, const char* fn);
std::unique_ptr<TensorImpl> qlinear_pointwise(const TensorImpl& qx, const TensorImpl& qw,
                                              const TensorImpl* bias, const QuantArgs& q,
                                              const char* fn);

}  // namespace aotrt::ops
