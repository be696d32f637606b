// Matrix products (aten mm/addmm/bmm/baddbmm .out), for every device.
// They write into `out` as it is: aotrt does not resize it (it may be a view
// into a larger buffer). The shape, dtype and device checks with ATen's rules
// live in the backends (cpu/matmul.cpp on OpenBLAS, cuda/matmul.cpp on
// cuBLAS), which were written before this layer; `fn` names the shim.
#pragma once

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h.
struct MatmulKernels {
  void (*mm_out)(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                 const char* fn);
  void (*addmm_out)(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
                    const TensorImpl& mat2, double beta, double alpha, const char* fn);
  void (*bmm_out)(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                  const char* fn);
  void (*baddbmm_out)(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                      const TensorImpl& batch2, double beta, double alpha, const char* fn);
};

// out = self @ mat2 (2-D).
void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
            const char* fn);
// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to out's sizes and
// is not read when beta == 0 (so NaN in it does not reach out).
void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha, const char* fn);
// out[b] = self[b] @ mat2[b] (3-D).
void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
             const char* fn);
// out[b] = beta * self[b] + alpha * (batch1[b] @ batch2[b]).
void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn);

}  // namespace aotrt::ops
