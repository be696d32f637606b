// The CPU's convolution (cpu/conv.cpp, on oneDNN) as the conv family's table
// (Note [Op dispatch]).
#include "cpu/ops.h"
#include "ops/conv.h"
#include "ops/dispatch.h"

namespace aotrt::cpu {
namespace {
using ops::ConvKernels;

constexpr ConvKernels kConv{
    .convolution = [](const TensorImpl& input, const TensorImpl& weight, const TensorImpl* bias,
                      const ConvParams& params, const char*) {
      return convolution(input, weight, bias, params);
    },
    .convolution_fused = convolution_fused,
};
AOTRT_REGISTER_KERNELS(ConvKernels, cpu, kConv);

}  // namespace
}  // namespace aotrt::cpu
