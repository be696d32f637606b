// Entry points of the int8 oneDNN ops (ops/quantized.h; Note [Quantized oneDNN
// ops]) from torch's hand-written aoti_torch/c/shim_cpu.h. See Note [Op rows].
#include <string_view>

#include "ops/quantized.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

namespace {

// A post-op algorithm given as a plain string: "" means none given.
std::optional<std::string_view> algorithm_of(const char* s) {
  if (s == nullptr || *s == '\0') return std::nullopt;
  return std::string_view(s);
}
std::optional<std::string_view> algorithm_of(std::optional<std::string_view> s) {
  return s && s->empty() ? std::nullopt : s;
}

// The arguments every variant has.
ops::QuantArgs quant_args(const OpArgs& args, AtenTensorHandle act_scale,
                          AtenTensorHandle act_zero_point, AtenTensorHandle weight_scales,
                          AtenTensorHandle weight_zero_points, double output_scale,
                          int64_t output_zero_point, const int32_t* output_dtype) {
  ops::QuantArgs q;
  q.x_scale = &args.tensor(act_scale, "act_scale");
  q.x_zero_point = &args.tensor(act_zero_point, "act_zero_point");
  q.w_scales = &args.tensor(weight_scales, "weight_scales");
  q.w_zero_points = &args.tensor(weight_zero_points, "weight_zero_points");
  q.output_scale = output_scale;
  q.output_zero_point = output_zero_point;
  q.output_dtype = args.optional_dtype(output_dtype, "output_dtype");
  return q;
}

const char* required(const char* s, const char* name, const char* fn) {
  AOTRT_CHECK(s != nullptr, kInvalidArgument, fn, ": ", name, " is null");
  return s;
}

}  // namespace

AOTRT_OP_CPU(_qconv_pointwise_tensor,
             (AtenTensorHandle X, AtenTensorHandle act_scale, AtenTensorHandle act_zero_point,
              AtenTensorHandle onednn_weight, AtenTensorHandle weight_scales,
              AtenTensorHandle weight_zero_points, AtenTensorHandle* B, const int64_t* stride,
              int64_t stride_len_, const int64_t* padding, int64_t padding_len_,
              const int64_t* dilation, int64_t dilation_len_, int64_t groups, double output_scale,
              int64_t output_zero_point, const int32_t* output_dtype, const char* attr,
              const double** post_op_args, int64_t post_op_args_len_, const char** algorithm,
              AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             ops::QuantArgs q = quant_args(args, act_scale, act_zero_point, weight_scales,
                                           weight_zero_points, output_scale, output_zero_point,
                                           output_dtype);
             q.unary = ops::parse_post_op(
                 required(attr, "attr", fn),
                 args.optional_scalar_list(post_op_args, post_op_args_len_, "post_op_args"),
                 algorithm_of(args.optional_string(algorithm, "algorithm")), fn);
             const ConvParams params = conv_params(stride, stride_len_, padding, padding_len_,
                                                   dilation, dilation_len_, 0, nullptr, 0,
                                                   groups, fn);
             give(ret0, ops::qconv_pointwise(args.tensor(X, "X"),
                                             args.tensor(onednn_weight, "onednn_weight"),
                                             args.optional_tensor(B, "B"), params, q, fn)))

AOTRT_OP_CPU(_qconv2d_pointwise_binary_tensor,
             (AtenTensorHandle X, AtenTensorHandle act_scale, AtenTensorHandle act_zero_point,
              AtenTensorHandle onednn_weight, AtenTensorHandle weight_scales,
              AtenTensorHandle weight_zero_points, AtenTensorHandle accum, AtenTensorHandle* B,
              const int64_t* stride_args, int64_t stride_len_, const int64_t* padding_args,
              int64_t padding_len_, const int64_t* dilation_args, int64_t dilation_len_,
              int64_t groups, double output_scale, int64_t output_zero_point,
              const int32_t* output_dtype, double accum_scale, int64_t accum_zero_point,
              const char* binary_attr, double* alpha, const char** unary_attr,
              const double** unary_scalars, int64_t unary_scalars_len_,
              const char** unary_algorithm, AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             ops::QuantArgs q = quant_args(args, act_scale, act_zero_point, weight_scales,
                                           weight_zero_points, output_scale, output_zero_point,
                                           output_dtype);
             q.binary = ops::parse_quant_binary(required(binary_attr, "binary_attr", fn), fn);
             q.other = &args.tensor(accum, "accum");
             q.other_scale = accum_scale;
             q.other_zero_point = accum_zero_point;
             q.alpha = OpArgs::optional(alpha).value_or(1.0);
             q.unary = ops::parse_post_op(
                 args.optional_string(unary_attr, "unary_attr").value_or("none"),
                 args.optional_scalar_list(unary_scalars, unary_scalars_len_, "unary_scalars"),
                 algorithm_of(args.optional_string(unary_algorithm, "unary_algorithm")), fn);
             const ConvParams params = conv_params(stride_args, stride_len_, padding_args,
                                                   padding_len_, dilation_args, dilation_len_, 0,
                                                   nullptr, 0, groups, fn);
             give(ret0, ops::qconv_pointwise(args.tensor(X, "X"),
                                             args.tensor(onednn_weight, "onednn_weight"),
                                             args.optional_tensor(B, "B"), params, q, fn)))

AOTRT_OP_CPU(_qlinear_pointwise_tensor,
             (AtenTensorHandle X, AtenTensorHandle act_scale, AtenTensorHandle act_zero_point,
              AtenTensorHandle onednn_weight, AtenTensorHandle weight_scales,
              AtenTensorHandle weight_zero_points, AtenTensorHandle* B, double output_scale,
              int64_t output_zero_point, const int32_t* output_dtype, const char* post_op_name,
              const double** post_op_args, int64_t post_op_args_len_,
              const char* post_op_algorithm, AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             ops::QuantArgs q = quant_args(args, act_scale, act_zero_point, weight_scales,
                                           weight_zero_points, output_scale, output_zero_point,
                                           output_dtype);
             q.unary = ops::parse_post_op(
                 required(post_op_name, "post_op_name", fn),
                 args.optional_scalar_list(post_op_args, post_op_args_len_, "post_op_args"),
                 algorithm_of(post_op_algorithm), fn);
             give(ret0, ops::qlinear_pointwise(args.tensor(X, "X"),
                                               args.tensor(onednn_weight, "onednn_weight"),
                                               args.optional_tensor(B, "B"), q, fn)))

AOTRT_OP_CPU(_qlinear_pointwise_binary_tensor,
             (AtenTensorHandle X, AtenTensorHandle act_scale, AtenTensorHandle act_zero_point,
              AtenTensorHandle onednn_weight, AtenTensorHandle weight_scales,
              AtenTensorHandle weight_zero_points, AtenTensorHandle* other, AtenTensorHandle* B,
              double output_scale, int64_t output_zero_point, const int32_t* output_dtype,
              double other_scale, int64_t other_zero_point, const char* binary_post_op,
              double binary_alpha, const char* unary_post_op, const double** unary_post_op_args,
              int64_t unary_post_op_args_len_, const char* unary_post_op_algorithm,
              AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             ops::QuantArgs q = quant_args(args, act_scale, act_zero_point, weight_scales,
                                           weight_zero_points, output_scale, output_zero_point,
                                           output_dtype);
             q.other = args.optional_tensor(other, "other");
             q.binary = q.other == nullptr ? ops::QuantBinary::kNone
                                           : ops::parse_quant_binary(
                                                 required(binary_post_op, "binary_post_op", fn), fn);
             q.other_scale = other_scale;
             q.other_zero_point = other_zero_point;
             q.alpha = binary_alpha;
             q.unary = ops::parse_post_op(
                 required(unary_post_op, "unary_post_op", fn),
                 args.optional_scalar_list(unary_post_op_args, unary_post_op_args_len_,
                                           "unary_post_op_args"),
                 algorithm_of(unary_post_op_algorithm), fn);
             give(ret0, ops::qlinear_pointwise(args.tensor(X, "X"),
                                               args.tensor(onednn_weight, "onednn_weight"),
                                               args.optional_tensor(B, "B"), q, fn)))
