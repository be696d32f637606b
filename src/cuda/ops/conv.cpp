// The CUDA convolution (cuda/conv.cpp, on cuDNN) as the conv family's table
// (Note [Op dispatch]).
#include "cuda/library_ops.h"
#include "ops/conv.h"
#include "ops/dispatch.h"

namespace aotrt::cuda {
namespace {
using ops::ConvKernels;

constexpr ConvKernels kConv{.convolution = convolution};
AOTRT_REGISTER_KERNELS(ConvKernels, cuda, kConv);

}  // namespace
}  // namespace aotrt::cuda
