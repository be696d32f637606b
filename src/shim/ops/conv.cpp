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
