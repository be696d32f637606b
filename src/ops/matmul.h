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

// Note [Scaled matmul]
// torch._scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result,
// out_dtype, use_fast_accum) and its .out form: the fp8 GEMM of torchao's
// float8 flows, out [M, N] = (self [M, K] * scale_a) @ (mat2 [K, N] *
// scale_b) (+ bias), with ATen's checks (facts from ATen's Blas.cpp and
// ScaledBlas.cpp, the CPU's checked against torch 2.13 eager):
// - self and mat2 2-d, any float8 dtype (mixed allowed); the scales float32,
//   either both one element ("tensorwise") or scale_a [M, 1] and scale_b
//   [1, N], both contiguous ("rowwise"); anything else is ATen's "Invalid
//   scaling configuration" (blockwise and MX scales are CUDA-only there and
//   refused here); scale_result a one-element float32; bias N elements;
//   out_dtype, when given, the dtype of out (default: self's).
// - CPU (ATen's emulated path, taken on hosts without AMX): each operand
//   widened to float32 and multiplied by its scale in float32, the float32
//   gemm, the bias added in float32 (float64 for a float64 bias), then, only
//   when out_dtype is given as float8_e4m3fn or float8_e5m2 and scale_result
//   is given, times float32(1 / scale_result); converted to out's dtype as
//   copy_ converts (Note [Float8 conversions] in core/float8.h).
//   use_fast_accum is ignored; any layouts.
// - CUDA (cuBLASLt, sm89 and later): self row-major and mat2 column-major,
//   K and N multiples of 16, e4m3fn/e5m2 only and not both e5m2; rowwise
//   scales through cuBLASLt's outer-vector scale mode; scale_result is
//   cuBLASLt's D scale, which MULTIPLIES the result, and is used only for a
//   float8 out; a bias is bfloat16 or float16 (bfloat16 for a bfloat16 out,
//   float16 for a float16 out) and refused with a float32 out; K == 0 gives
//   zeros without the bias (ATen returns early).
// Hosts with AMX (where ATen takes oneDNN's f8 matmul instead of the
// emulation) round differently from aotrt's CPU path.
struct ScaledMmArgs {
  const TensorImpl& self;
  const TensorImpl& mat2;
  const TensorImpl& scale_a;
  const TensorImpl& scale_b;
  const TensorImpl* bias;
  const TensorImpl* scale_result;
  std::optional<ScalarType> out_dtype;
  bool use_fast_accum;
  bool rowwise;  // decided by scaled_mm_out's checks
};

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
  // Note [Scaled matmul] past the device-independent checks; out [M, N] of
  // any strides, not overlapping the inputs.
  void (*scaled_mm_out)(const TensorImpl& out, const ScaledMmArgs& args, const char* fn);
  // Note [Matmul with an output dtype]: out [M, N] float32 (any strides) =
  // self [M, K] @ mat2 [K, N], both float16 or both bfloat16, in float32.
  void (*mm_widening_out)(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                          const char* fn);
  // Note [Scaled grouped matmul]: out (bfloat16, zeroed, ATen's strides) <- every
  // group's product; the operands any strides; offs (int32, 1-d) null for 3d x 3d,
  // read where the kernel runs (on the device for CUDA: no host wait).
  void (*scaled_grouped_mm)(const TensorImpl& out, const TensorImpl& mat_a,
                            const TensorImpl& mat_b, const TensorImpl& scale_a,
                            const TensorImpl& scale_b, const TensorImpl* offs, const char* fn);
  // Note [Grouped matmul] on a device: out (the operands' dtype, zeroed, ATen's strides)
  // <- every group's product; offs (int32, 1-d, dense) null for 3d x 3d, read on the
  // device (no host wait). Null on the CPU, whose loop of mm reads offs on the host.
  void (*grouped_mm)(const TensorImpl& out, const TensorImpl& mat_a, const TensorImpl& mat_b,
                     const TensorImpl* offs, const char* fn);
};

// out = self @ mat2 (2-D).
void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
            const char* fn);
// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to out's sizes and
// is not read when beta == 0 (so NaN in it does not reach out).
void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha, const char* fn);
// Note [Matmul with an output dtype]
// torch.mm(self, mat2, out_dtype=...) is aten::mm.dtype(_out) (CUDA only in
// ATen, whose CPU has no kernel for it; torch 2.13 generates the one C shim
// aoti_torch_cuda_mm_dtype_out, and no bmm/addmm/baddbmm siblings; torch
// 2.11 has the same entry). ATen's rules (native/cuda/Blas.cpp,
// _mm_dtype_out_cuda), checked in this order with its messages: self and
// mat2 2-d, their shapes multiply, out_dtype is out's dtype, self and mat2 of
// one dtype, and out_dtype either that dtype (then it is mm.out) or float32
// for float16 or bfloat16 operands: the product of the 16-bit operands
// accumulated and written in float32 (cuBLAS with A and B in the 16-bit type,
// C in float32, CUBLAS_COMPUTE_32F: never rounded to the 16-bit type, never
// TF32). aotrt writes into out as it is (any strides, not resized, [M, N]).
// The CPU kernel (widened copies, the float32 gemm) serves the tests.
void mm_dtype_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                  ScalarType out_dtype, const char* fn);
// out[b] = self[b] @ mat2[b] (3-D).
void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
             const char* fn);
// out[b] = beta * self[b] + alpha * (batch1[b] @ batch2[b]).
void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn);

// Note [Scaled matmul]: _scaled_mm.out writes into out (not resized);
// _scaled_mm returns a new row-major [M, N] of out_dtype (default self's).
void scaled_mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                   const TensorImpl& scale_a, const TensorImpl& scale_b, const TensorImpl* bias,
                   const TensorImpl* scale_result, std::optional<ScalarType> out_dtype,
                   bool use_fast_accum, const char* fn);
std::unique_ptr<TensorImpl> scaled_mm(const TensorImpl& self, const TensorImpl& mat2,
                                      const TensorImpl& scale_a, const TensorImpl& scale_b,
                                      const TensorImpl* bias, const TensorImpl* scale_result,
                                      std::optional<ScalarType> out_dtype, bool use_fast_accum,
                                      const char* fn);

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
// CUDA (torch 2.13 generates aoti_torch_cuda__grouped_mm; 2.11 does not):
// the kernel of Note [Grouped tiles on the device] without scales, offs read
// on the device (no host wait, graph-capturable), every mode including 3d x 3d,
// each element a float32 sum in k order rounded once to the operands' dtype
// (float32 operands are never rounded to TF32). offs must be on the operands'
// device (refused otherwise) and a strided one is copied dense on the stream.
// Beyond ATen's defined cases the device reads a range as the scaled op does:
// clamped to [0, extent], an empty or reversed one computes nothing; a
// negative end is clamped to 0 there where the CPU's aten.slice wraps it.
std::unique_ptr<TensorImpl> grouped_mm(const TensorImpl& mat_a, const TensorImpl& mat_b,
                                       const TensorImpl* offs, const TensorImpl* bias,
                                       std::optional<ScalarType> out_dtype, const char* fn);

// Note [Scaled grouped matmul]
// torch._scaled_grouped_mm(mat_a, mat_b, scale_a, scale_b, offs, bias,
// scale_result, out_dtype, use_fast_accum): the float8 grouped GEMM of
// mixture-of-experts layers with rowwise scales (ATen's CUDA kernel, CUTLASS
// on sm90; facts from native/cuda/GroupedBlas.cpp, ScaledGroupMM.cu and
// GroupMMCommon.cuh; torch generates only the CUDA C shim). Group g's range
// along the grouped dim is [offs[g-1], offs[g]) (from 0 for g = 0):
// - 2d x 3d (G = mat_b.size(0)): rows of mat_a [M, K] times mat_b[g] [K, N];
//   scale_a [M] (by global row), scale_b [G, N]; out [M, N];
// - 3d x 2d (G = mat_a.size(0)): mat_a[g] [M, K] times columns of mat_b
//   [K, N]; scale_a [G, M], scale_b [N] (by global column); out [M, N];
// - 2d x 2d (G = offs.size(0)): the k ranges, out[g] = mat_a[:, ks] @
//   mat_b[ks, :]; scale_a [G * M] and scale_b [G * N] contiguous, group g's
//   at g * M and g * N; out [G, M, N];
// - 3d x 3d (no offs): out[g] = mat_a[g] @ mat_b[g]; scales [G, M], [G, N].
// out[.., i, j] = bfloat16((acc * scale_a[i]) * scale_b[j]), acc the float32
// sum of the products of the float8_e4m3fn values (CUTLASS's epilogue:
// scale_a times the accumulator, then times scale_b, then one rounding).
// ATen's checks, in its order and with its messages: mat_a row-major and
// mat_b column-major (their other stride a multiple of 16 bytes), 2-d or
// 3-d, the contraction dims equal when one is 3-d, mat_a.size(-1) and
// mat_b's last two sizes multiples of 16, no bias, no scale_result, offs
// given exactly when a matrix is 2-d (1-d int32), float32 scales of the
// shapes above (a 1-d one contiguous, a 2-d one with unit last stride),
// out_dtype bfloat16 (the default), float8_e4m3fn operands, fewer than 1024
// groups. MXFP8's float8_e8m0fnu scales (ATen's MSLK kernel) are a dtype
// aotrt has no tensors of. Refused beyond ATen: offs on another device than
// the operands, a group count other than offs.size(0). The output has ATen's padded strides (last dim a
// multiple of 16 bytes). Where ATen's kernel is undefined aotrt defines it:
// a range is clamped to the grouped dim, an empty or reversed one computes
// nothing (out[g] = 0 in 2d x 2d, where ATen asserts), and what no range
// covers is zero (ATen leaves it uninitialized). use_fast_accum is ignored
// (float32 sums always); ATen's device check (compute capability 9.0 or
// 10.0) is not made: aotrt's kernel runs on any GPU. CUDA: a tiled kernel
// that finds each tile's groups from offs on the device (no host wait, so
// it can be captured in a CUDA graph); the CPU kernel (the same arithmetic)
// serves the tests.
std::unique_ptr<TensorImpl> scaled_grouped_mm(const TensorImpl& mat_a, const TensorImpl& mat_b,
                                              const TensorImpl& scale_a,
                                              const TensorImpl& scale_b, const TensorImpl* offs,
                                              const TensorImpl* bias,
                                              const TensorImpl* scale_result,
                                              std::optional<ScalarType> out_dtype,
                                              bool use_fast_accum, const char* fn);

}  // namespace aotrt::ops
