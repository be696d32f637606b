// Entry points of the conv family (ops/conv.h), both devices. Handles are
// borrowed; ret0 gets a new owning handle. See Note [Op rows].
#include "ops/conv.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP(convolution,
         (AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
          const int64_t* stride, int64_t stride_len_, const int64_t* padding,
          int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
          int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_,
          int64_t groups, AtenTensorHandle* ret0),
         AOTRT_CHECK_OUT(ret0, fn);
         const ConvParams params = conv_params(stride, stride_len_, padding, padding_len_,
                                               dilation, dilation_len_, transposed,
                                               output_padding, output_padding_len_, groups, fn);
         give(ret0, ops::convolution(args.tensor(input, "input"), args.tensor(weight, "weight"),
                                     args.optional_tensor(bias, "bias"), params, fn)))

// The fused oneDNN convolutions of torch's aoti_torch/c/shim_cpu.h (Note
// [Fused oneDNN ops] in ops/linear.h).
AOTRT_OP_CPU(mkldnn__convolution_pointwise,
             (AtenTensorHandle X, AtenTensorHandle W, AtenTensorHandle* B,
              const int64_t* padding, int64_t padding_len_, const int64_t* stride,
              int64_t stride_len_, const int64_t* dilation, int64_t dilation_len_,
              int64_t groups, const char* attr, const double** scalars, int64_t scalars_len_,
              const char** algorithm, AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             AOTRT_CHECK(attr != nullptr, kInvalidArgument, fn, ": attr is null");
             const ConvParams params = conv_params(stride, stride_len_, padding, padding_len_,
                                                   dilation, dilation_len_, 0, nullptr, 0,
                                                   groups, fn);
             const auto unary = ops::parse_post_op(attr, args.optional_scalar_list(scalars, scalars_len_, "scalars"),
                                                   args.optional_string(algorithm, "algorithm"), fn);
             give(ret0, ops::convolution_pointwise(args.tensor(X, "X"), args.tensor(W, "W"),
                                                   args.optional_tensor(B, "B"), params, nullptr,
                                                   ops::BinaryPost::kAdd, unary, fn)))

AOTRT_OP_CPU(mkldnn__convolution_transpose_pointwise,
             (AtenTensorHandle X, AtenTensorHandle W, AtenTensorHandle* B,
              const int64_t* padding, int64_t padding_len_, const int64_t* output_padding,
              int64_t output_padding_len_, const int64_t* stride, int64_t stride_len_,
              const int64_t* dilation, int64_t dilation_len_, int64_t groups, const char* attr,
              const double** scalars, int64_t scalars_len_, const char** algorithm,
              AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             AOTRT_CHECK(attr != nullptr, kInvalidArgument, fn, ": attr is null");
             const ConvParams params = conv_params(stride, stride_len_, padding, padding_len_,
                                                   dilation, dilation_len_, 1, output_padding,
                                                   output_padding_len_, groups, fn);
             const auto unary = ops::parse_post_op(attr, args.optional_scalar_list(scalars, scalars_len_, "scalars"),
                                                   args.optional_string(algorithm, "algorithm"), fn);
             give(ret0, ops::convolution_pointwise(args.tensor(X, "X"), args.tensor(W, "W"),
                                                   args.optional_tensor(B, "B"), params, nullptr,
                                                   ops::BinaryPost::kAdd, unary, fn)))

namespace {

// The two binary rows' decoding and op: unary(binary(conv(X), other)).
std::unique_ptr<TensorImpl> binary_conv(const OpArgs& args, AtenTensorHandle X,
                                        const TensorImpl& other, AtenTensorHandle W,
                                        AtenTensorHandle* B, const int64_t* padding,
                                        int64_t padding_len, const int64_t* stride,
                                        int64_t stride_len, const int64_t* dilation,
                                        int64_t dilation_len, int64_t groups,
                                        const char* binary_attr, const double* alpha,
                                        const char** unary_attr, const double** unary_scalars,
                                        int64_t unary_scalars_len, const char** unary_algorithm) {
  const char* fn = args.fn;
  AOTRT_CHECK(binary_attr != nullptr, kInvalidArgument, fn, ": binary_attr is null");
  const ConvParams params = conv_params(stride, stride_len, padding, padding_len, dilation,
                                        dilation_len, 0, nullptr, 0, groups, fn);
  const ops::BinaryPost binary = ops::parse_binary_post(binary_attr, OpArgs::optional(alpha), fn);
  const auto unary = ops::parse_post_op(
      args.optional_string(unary_attr, "unary_attr").value_or("none"),
      args.optional_scalar_list(unary_scalars, unary_scalars_len, "unary_scalars"),
      args.optional_string(unary_algorithm, "unary_algorithm"), fn);
  return ops::convolution_pointwise(args.tensor(X, "X"), args.tensor(W, "W"),
                                    args.optional_tensor(B, "B"), params, &other, binary, unary,
                                    fn);
}

}  // namespace

// out = unary(binary(conv(X), other)); alpha None or 1.
AOTRT_OP_CPU(mkldnn__convolution_pointwise_binary,
             (AtenTensorHandle X, AtenTensorHandle other, AtenTensorHandle W,
              AtenTensorHandle* B, const int64_t* padding, int64_t padding_len_,
              const int64_t* stride, int64_t stride_len_, const int64_t* dilation,
              int64_t dilation_len_, int64_t groups, const char* binary_attr, double* alpha,
              const char** unary_attr, const double** unary_scalars,
              int64_t unary_scalars_len_, const char** unary_algorithm, AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             give(ret0, binary_conv(args, X, args.tensor(other, "other"), W, B, padding,
                                    padding_len_, stride, stride_len_, dilation, dilation_len_,
                                    groups, binary_attr, alpha, unary_attr, unary_scalars,
                                    unary_scalars_len_, unary_algorithm)))

// The in-place form: other = unary(binary(conv(X), other)), returned (an add
// is computed into other itself where the backend can: ops/conv.h).
AOTRT_OP_CPU(mkldnn__convolution_pointwise_binary_,
             (AtenTensorHandle other, AtenTensorHandle X, AtenTensorHandle W,
              AtenTensorHandle* B, const int64_t* padding, int64_t padding_len_,
              const int64_t* stride, int64_t stride_len_, const int64_t* dilation,
              int64_t dilation_len_, int64_t groups, const char* binary_attr, double* alpha,
              const char** unary_attr, const double** unary_scalars,
              int64_t unary_scalars_len_, const char** unary_algorithm, AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             AOTRT_CHECK(binary_attr != nullptr, kInvalidArgument, fn, ": binary_attr is null");
             const ConvParams params = conv_params(stride, stride_len_, padding, padding_len_,
                                                   dilation, dilation_len_, 0, nullptr, 0,
                                                   groups, fn);
             const ops::BinaryPost binary =
                 ops::parse_binary_post(binary_attr, OpArgs::optional(alpha), fn);
             const auto unary = ops::parse_post_op(
                 args.optional_string(unary_attr, "unary_attr").value_or("none"),
                 args.optional_scalar_list(unary_scalars, unary_scalars_len_, "unary_scalars"),
                 args.optional_string(unary_algorithm, "unary_algorithm"), fn);
             give(ret0, ops::convolution_pointwise_(args.tensor(other, "other"),
                                                    args.tensor(X, "X"), args.tensor(W, "W"),
                                                    args.optional_tensor(B, "B"), params, binary,
                                                    unary, fn)))
