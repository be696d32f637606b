// The CUDA matmul kernels (cuda/matmul.cpp, on cuBLAS and cuBLASLt) as the matmul
// family's table (Note [Op dispatch]).
#include "cuda/library_ops.h"
#include "ops/dispatch.h"
#include "ops/matmul.h"

namespace aotrt::cuda {
namespace {
using ops::MatmulKernels;

constexpr MatmulKernels kMatmul{
    .mm_out = mm_out,
    .addmm_out = addmm_out,
    .bmm_out = bmm_out,
    .baddbmm_out = baddbmm_out,
    .scaled_mm_out = [](const TensorImpl& out, const ops::ScaledMmArgs& a, const char* fn) {
      scaled_mm_out(out, a.self, a.mat2, a.scale_a, a.scale_b, a.bias, a.scale_result, a.rowwise,
                    a.use_fast_accum, fn);
    },
    .mm_widening_out = mm_widening_out,
    .scaled_grouped_mm = scaled_grouped_mm,
    .grouped_mm = grouped_mm};
AOTRT_REGISTER_KERNELS(MatmulKernels, cuda, kMatmul);

}  // namespace
}  // namespace aotrt::cuda
