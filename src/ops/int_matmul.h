// Integer matrix products: _int_mm_out (int8 x int8 -> int32) and
// _weight_int8pack_mm (float activations x int8 weights, per-channel scale).
//
// Note [Integer matmul semantics]
// As ATen's CPU kernels: _int_mm_out(out, self [m, k] int8, mat2 [k, n]
// int8) accumulates exactly in int32 and writes out [m, n] int32 (aotrt does
// not resize out). _weight_int8pack_mm(self [M, K], mat2 [N, K] int8,
// scales [N]) = (self @ mat2^T) * scales, self and scales of one floating
// dtype (float32, bfloat16, float16), accumulated in float32 and rounded
// once to self's dtype, into a new contiguous [M, N].
#pragma once

#include <memory>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. Operands dense (contiguous).
struct IntMatmulKernels {
  // out [m, n] <- a [m, k] @ b [k, n]: int8 operands into int32, int32 into
  // int32 and int64 into int64, wrapping modulo 2^bits.
  void (*int_mm)(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b);
  // out [M, N] float32 dense; a [M, K] float32; w [N, K] int8; scales [N] float32.
  void (*int8_weight_mm)(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                         const TensorImpl& scales);
};

void int_mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                const char* fn);
// a [m, k] @ b [k, n] for int32 or int64 operands of one dtype, into a new
// contiguous [m, n] of that dtype, wrapping as ATen's integer matmul does
// (addbmm's integer path).
std::unique_ptr<TensorImpl> int_gemm(const TensorImpl& a, const TensorImpl& b, const char* fn);
std::unique_ptr<TensorImpl> weight_int8pack_mm(const TensorImpl& self, const TensorImpl& mat2,
                                               const TensorImpl& scales, const char* fn);

}  // namespace aotrt::ops
