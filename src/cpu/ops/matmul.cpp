// The CPU's matmul kernels (cpu/matmul.cpp, on OpenBLAS) as the matmul family's
// table (Note [Op dispatch]). They name their own shim in messages.
#include "cpu/ops.h"
#include "ops/dispatch.h"
#include "ops/matmul.h"

namespace aotrt::cpu {
namespace {
using ops::MatmulKernels;

constexpr MatmulKernels kMatmul{
    .mm_out = [](const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                 const char*) { mm_out(out, self, mat2); },
    .addmm_out = [](const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
                    const TensorImpl& mat2, double beta, double alpha,
                    const char*) { addmm_out(out, self, mat1, mat2, beta, alpha); },
    .bmm_out = [](const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                  const char*) { bmm_out(out, self, mat2); },
    .baddbmm_out = [](const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                      const TensorImpl& batch2, double beta, double alpha,
                      const char*) { baddbmm_out(out, self, batch1, batch2, beta, alpha); },
};
AOTRT_REGISTER_KERNELS(MatmulKernels, cpu, kMatmul);

}  // namespace
}  // namespace aotrt::cpu
