#include "ops/matmul.h"

#include "ops/dispatch.h"

namespace aotrt::ops {

// The device of `out` picks the kernels; the backends refuse operands on
// another device, naming them.
void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
            const char* fn) {
  kernel(&MatmulKernels::mm_out, out.device(), fn)(out, self, mat2, fn);
}

void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha, const char* fn) {
  kernel(&MatmulKernels::addmm_out, out.device(), fn)(out, self, mat1, mat2, beta, alpha, fn);
}

void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
             const char* fn) {
  kernel(&MatmulKernels::bmm_out, out.device(), fn)(out, self, mat2, fn);
}

void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn) {
  kernel(&MatmulKernels::baddbmm_out, out.device(), fn)(out, self, batch1, batch2, beta, alpha,
                                                         fn);
}

}  // namespace aotrt::ops
