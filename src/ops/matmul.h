// Matrix products (aten mm/addmm/bmm/baddbmm .out), for every device.
// They write into `out` as it is: aotrt does not resize it (it may be a view
// into a larger buffer). The shape, dtype and device checks with ATen's rules
// live in the backends (cpu/matmul.cpp on OpenBLAS, cuda/matmul.cpp on
// cuBLAS), which were written before this layer; `fn` names the shim.
#pragma once

#include <memory>
#include <optional>

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

// Note [Grouped matmul]
// torch._grouped_mm(mat_a, mat_b, offs, bias, out_dtype), the grouped GEMM of
// mixture-of-experts layers, as ATen's CPU kernel (its fallback, a loop of
// mm over slices; facts from ATen's GroupedMMUtils.h, checked against torch
// 2.13 eager):
// - 2-d x 3-d, offs [G] (G = mat_b.size(0)): rows offs[g-1]..offs[g] of mat_a
//   times mat_b[g], into out [M, N];
// - 3-d x 2-d, offs [G] (G = mat_a.size(0)): columns offs[g-1]..offs[g] of
//   mat_b, out [M, N_total];
// - 2-d x 2-d, offs [G]: the contraction split, out[g] = mat_a[:, k range] @
//   mat_b[k range, :], out [G, M, N];
// - 3-d x 3-d, no offs: bmm.
// offs are int32 ends read on the host (ATen's fallback reads them so too);
// a range is sliced as aten.slice does (clamped, negative values wrapped),
// and the next range starts at the previous end as given. Rows or columns no
// range covers are left zero (ATen leaves them uninitialized). The output
// has ATen's strides: its last dim padded to a multiple of 16 bytes, as TMA
// wants. mat_a and mat_b are float32, bfloat16 or float16 of one dtype, each
// with one of its last two dims of unit stride and the other a multiple of
// 16 bytes (ATen's check); bias is refused and out_dtype must be mat_a's, as
// in ATen. Half-precision products accumulate in float32 (the CPU mm).
std::unique_ptr<TensorImpl> grouped_mm(const TensorImpl& mat_a, const TensorImpl& mat_b,
                                       const TensorImpl* offs, const TensorImpl* bias,
                                       std::optional<ScalarType> out_dtype, const char* fn);

}  // namespace aotrt::ops
