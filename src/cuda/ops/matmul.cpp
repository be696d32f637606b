// The CUDA matmul kernels (cuda/matmul.cpp, on cuBLAS) as the matmul family's
// table (Note [Op dispatch]).
#include "cuda/library_ops.h"
#include "ops/dispatch.h"
#include "ops/matmul.h"

namespace aotrt::cuda {
namespace {
using ops::MatmulKernels;

constexpr MatmulKernels kMatmul{
    .mm_out = mm_out, .addmm_out = addmm_out, .bmm_out = bmm_out, .baddbmm_out = baddbmm_out};
AOTRT_REGISTER_KERNELS(MatmulKernels, cuda, kMatmul);

}  // namespace
}  // namespace aotrt::cuda
