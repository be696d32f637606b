// Integer matrix products: _int_mm_out (int8 x int8 -> int32),
// _weight_int8pack_mm (float activations x int8 weights, per-channel scale)
// and _weight_int4pack_mm_for_cpu (x int4 weights, groupwise scale and zero).
//
// Note [Integer matmul semantics]
// As ATen's CPU kernels: _int_mm_out(out, self [m, k] int8, mat2 [k, n]
// int8) accumulates exactly in int32 and writes out [m, n] int32 (aotrt does
// not resize out). _weight_int8pack_mm(self [M, K], mat2 [N, K] int8,
// scales [N]) = (self @ mat2^T) * scales, self and scales of one floating
// dtype (float32, bfloat16, float16), accumulated in float32 and rounded
// once to self's dtype, into a new contiguous [M, N].
//
// Note [Int4 packed weights]
// _weight_int4pack_mm_for_cpu(A [M, K], B [N, K/2] uint8, qGroupSize g,
// qScaleAndZeros [K/g, N, 2]) = A @ W^T with W[n, k] = (q[n, k] - 8) *
// scale[k/g, n] + zero[k/g, n] (q in 0..15; verified against eager), A and
// qScaleAndZeros of one floating dtype, accumulated over k in float32 and
// rounded once to A's dtype; g in {32, 64, 128, 256}, K % g == 0, N % 16 == 0.
// (Through AOTInductor the entry point is aoti_torch_cpu__weight_int4pack_mm_
// cpu_tensor of c/shim_cpu.h, g a 0-d int64 constant tensor.) B is q as
// ATen's _convert_weight_to_int4pack_for_cpu packed it, and that packing
// depends on the ATen CPU capability of the process that packed it: columns
// in blocks of 4 x Vectorized<float>::size(), each block's K rows of bytes
// after the last, and inside a row either adjacent columns share a byte
// (low nibble even) or, for a full block under AVX2/AVX512, column j and
// j + block/2. The package does not say which; aotrt reads B as ATen on this
// host would (ATEN_CPU_CAPABILITY as torch reads it, else the CPU's
// features), so a package runs as eager torch runs it on the same machine.
#pragma once

#include <memory>

#include "core/tensor.h"

namespace aotrt::ops {

// How a packed int4 weight's columns lie (Note [Int4 packed weights]): in
// blocks of block_n columns; split: a full block's byte j holds columns j
// (low nibble) and j + block_n/2, else columns 2i and 2i + 1 share byte i.
struct Int4PackLayout {
  int64_t block_n = 32;
  bool split = false;
  bool operator==(const Int4PackLayout&) const = default;
};
inline constexpr Int4PackLayout kInt4PackDefault{32, false};  // ATen's DEFAULT on x86
inline constexpr Int4PackLayout kInt4PackAvx2{32, true};
inline constexpr Int4PackLayout kInt4PackAvx512{64, true};
inline constexpr Int4PackLayout kInt4PackNeon{16, false};  // aarch64: 4-lane vectors

// The layout ATen on this host packs and reads: ATEN_CPU_CAPABILITY
// (default, avx2, avx512) when set, else the CPU's features, as ATen picks
// its capability; a thread's Int4PackLayoutOverride wins over both.
Int4PackLayout host_int4_pack_layout();
// Makes the calling thread read packed int4 weights in `layout` while it
// lives (tests of every layout on one machine).
class Int4PackLayoutOverride {
 public:
  explicit Int4PackLayoutOverride(Int4PackLayout layout);
  ~Int4PackLayoutOverride();
  Int4PackLayoutOverride(const Int4PackLayoutOverride&) = delete;
  Int4PackLayoutOverride& operator=(const Int4PackLayoutOverride&) = delete;

 private:
  const Int4PackLayout* previous_;
  Int4PackLayout layout_;
};

// See Note [Op dispatch] in ops/dispatch.h. Operands dense (contiguous).
struct IntMatmulKernels {
  // out [m, n] <- a [m, k] @ b [k, n]: int8 operands into int32, int32 into
  // int32 and int64 into int64, wrapping modulo 2^bits.
  void (*int_mm)(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b);
  // out [M, N] float32 dense; a [M, K] float32; w [N, K] int8; scales [N] float32.
  void (*int8_weight_mm)(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                         const TensorImpl& scales);
  // out [M, N] float32 dense; a [M, K] float32; w [N, K/2] uint8 packed in
  // `layout`; scale_zeros [K/group, N, 2] float32; all dense. fn names a failure.
  void (*int4_weight_mm)(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                         int64_t group, const TensorImpl& scale_zeros, Int4PackLayout layout,
                         const char* fn);
  // out [N, K/2] uint8 <- q [N, K] int32 packed in `layout`, as ATen packs
  // (byte = uint8(hi << 4) | uint8(lo), values outside 0..15 included).
  void (*int4_pack)(const TensorImpl& out, const TensorImpl& q, Int4PackLayout layout);
};

void int_mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                const char* fn);
// a [m, k] @ b [k, n] for int32 or int64 operands of one dtype, into a new
// contiguous [m, n] of that dtype, wrapping as ATen's integer matmul does
// (addbmm's integer path).
std::unique_ptr<TensorImpl> int_gemm(const TensorImpl& a, const TensorImpl& b, const char* fn);
std::unique_ptr<TensorImpl> weight_int8pack_mm(const TensorImpl& self, const TensorImpl& mat2,
                                               const TensorImpl& scales, const char* fn);
// _convert_weight_to_int4pack_for_cpu(self [N, K] int32, innerKTiles): a new
// [N, K/2] uint8 packed in this host's layout (innerKTiles unused, as ATen).
std::unique_ptr<TensorImpl> convert_weight_to_int4pack(const TensorImpl& self, const char* fn);
// group_size: a one-element integer tensor on the CPU (the ABI's form).
std::unique_ptr<TensorImpl> weight_int4pack_mm(const TensorImpl& self, const TensorImpl& mat2,
                                               const TensorImpl& group_size,
                                               const TensorImpl& scale_zeros, const char* fn);

}  // namespace aotrt::ops
