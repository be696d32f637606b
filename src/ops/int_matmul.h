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
//
// Note [Int4 tinygemm layout]
// CUDA's _weight_int4pack_mm(A [M, K], B, qGroupSize, qScaleAndZeros) (the
// C shim aoti_torch_cuda__weight_int4pack_mm; facts from ATen's
// native/cuda/int4mm.cu, the tinygemm kernels) reads B as CUDA's
// _convert_weight_to_int4pack(w [N, K/2] uint8, innerKTiles) packs it: w's
// byte j of row n holds q[n, 2j] in its HIGH nibble and q[n, 2j+1] in its
// low one (q in 0..15); B is int32 [N/8, K/(innerKTiles*16), 32,
// innerKTiles/2], innerKTiles in {2, 4, 8}: n-tiles of 8 columns, outer
// k-tiles of innerKTiles*16 values, 32 lanes (the m16n8k16 B fragment's),
// and per lane one int32 for each pair of 16-value k-tiles. For q[n, k], with
// t the k-tile inside its outer tile and kk = k % 16: lane (n % 8) * 4 +
// (kk % 8) / 2, int32 t / 2, and inside it nibble (bits 4i..4i+3)
//   i = (kk odd ? 4 : 0) + (t odd ? 2 : 0) + (kk >= 8 ? 1 : 0)
// (int4_tinygemm.h). qScaleAndZeros [K/qGroupSize, N, 2] bfloat16 holds
// (scale, zero) per group of k and column; the weight is the bfloat16
// w = fma(bf16(q - 8), scale, zero), one rounding (tinygemm's zero point: the
// int4 value centred at 8, the zero added, not subtracted). out [M, N] =
// A @ w^T, bfloat16, accumulated in float32 (tensor-core mma in ATen and in
// aotrt's fast kernels, in k order in its exact one: Note [Int4 matmul
// kernels] in cuda/ops/int4_tinygemm.cu, which bounds the difference), one
// rounding to bfloat16. ATen's checks: A
// bfloat16 2-d, B int32 4-d with size(2) 32 and size(3) * 2 in {2, 4, 8},
// B.size(1) == K / (innerKTiles * 16), qGroupSize in {32, 64, 128, 256},
// K a multiple of qGroupSize, qScaleAndZeros 3-d [., N, 2], one device.
// aotrt checks more where ATen would read out of bounds or garbage: K a
// multiple of innerKTiles * 16, qScaleAndZeros bfloat16 with K / qGroupSize
// groups; and reads A, B and qScaleAndZeros through any strides (ATen
// requires A and B contiguous). N = B.size(0) * 8. The CPU kernel (the same
// layout and dequantization, int4_tinygemm.h) serves the tests: torch has
// no CPU entry for this layout.
//
// Note [Dynamic int4 matmul]
// _dyn_quant_pack_4bit_weight(weights, scales_zeros, bias, block_size,
// in_features K, out_features N) and _dyn_quant_matmul_4bit(inp,
// packed_weights, block_size, K, N): int4 weights with a float scale per
// block of block_size along K (block_size == K: one per output channel), the
// activations quantized to int8 per row at run time. ATen packs with KleidiAI
// only on Arm hosts with dot-product instructions; on x86 (and other hosts)
// the "packed" weight is ATen's fallback layout, a float32 vector that aotrt
// reads and writes as ATen does (checked against torch 2.13 eager):
//   [weights' bytes as floats (row-major, N*K/2 of them), scales_zeros as
//    float32 (N*(K/block_size), [N, K/block_size] row-major), bias as float32
//    (N) when given].
// weights are uint8 [N, K/2], byte j of row n holding k = 2j (low nibble) and
// 2j+1, value nibble - 8. block_size must be K, or a multiple of 32 dividing
// K. The matmul (inp [M, K] float32, or bfloat16 when block_size == K) splits
// the packed vector by N and K (a remainder past weights and scales is the
// bias and must be N long) and computes, per row of inp, ATen's reference
// kernel bit for bit: rmin = min(0, min x), rmax = max(0, max x); s = 255 /
// (rmax - rmin) (1 when they are equal); zero point zp = lrint(clamp(-128 -
// rmin s if (-128 + rmin s) + (127 + rmax s) > 0 else 127 - rmax s)); q =
// clamp(round(x s) + zp, -128, 127) (round half away from zero); then per
// output n, for each block an exact int32 sum of (q + -zp) * (nibble - 8),
// acc += float(sum) * scale (float32, from 0; channelwise: acc = float(sum) *
// scale), acc *= 1/s, + bias, clamped to +-FLT_MAX (+-3.38953139e38 for
// bfloat16, whose result is truncated to bfloat16, not rounded). Results
// [M, N] of inp's dtype. aotrt checks more than ATen: inp 2-d with K
// columns (ATen reads M*K values whatever inp holds), K even, the packed
// vector 1-d. On an Arm host the packed layout would be KleidiAI's, which
// only torch's kernels read: aotrt refuses both ops there.
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
  // Optional (null where a backend has none): the same in a's own dtype - out
  // [M, N] and scales [N] of a's dtype (float32, bfloat16, float16), a [M, K],
  // w [N, K] int8, all dense - summed in float32, times the scale, rounded once.
  void (*int8_weight_mm_native)(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                                const TensorImpl& scales);
  // Optional: _int_mm on the operands as given (any strides, out [m, n] int32,
  // self [m, k] and mat2 [k, n] int8); false, having done nothing, for a call
  // it does not serve (int_mm above then runs on dense copies).
  bool (*int_mm_views)(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2);
  // out [M, N] float32 dense; a [M, K] float32; w [N, K/2] uint8 packed in
  // `layout`; scale_zeros [K/group, N, 2] float32 or bfloat16, read in place (a
  // bf16 model's scales are not widened every call; weight_int4pack_mm widens
  // float16 ones); all dense. fn names a failure.
  void (*int4_weight_mm)(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                         int64_t group, const TensorImpl& scale_zeros, Int4PackLayout layout,
                         const char* fn);
  // out [N, K/2] uint8 <- q [N, K] int32 packed in `layout`, as ATen packs
  // (byte = uint8(hi << 4) | uint8(lo), values outside 0..15 included).
  void (*int4_pack)(const TensorImpl& out, const TensorImpl& q, Int4PackLayout layout);
  // out [M, N] dense of inp's dtype (float32, or bfloat16 when channelwise);
  // inp [M, K] dense; weights [N * K/2] uint8, scales [N * K/block_size]
  // float32, bias [N] float32 or null, all dense (Note [Dynamic int4 matmul]).
  void (*dyn_quant_mm)(const TensorImpl& out, const TensorImpl& inp, const TensorImpl& weights,
                       const TensorImpl& scales, const TensorImpl* bias, int64_t block_size,
                       const char* fn);
  // Note [Int4 tinygemm layout]: out [M, N] bfloat16 <- a [M, K] bfloat16 @ the
  // weight packed in b (int32 [N/8, K/(inner*16), 32, inner/2]) with
  // scale_zeros [K/group, N, 2] bfloat16; all dense.
  void (*int4_tinygemm_mm)(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b,
                           int64_t group, const TensorImpl& scale_zeros, const char* fn);
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

// Note [Int4 tinygemm layout]: CUDA's _weight_int4pack_mm.
std::unique_ptr<TensorImpl> weight_int4pack_mm_tinygemm(const TensorImpl& self,
                                                        const TensorImpl& mat2, int64_t group_size,
                                                        const TensorImpl& scale_zeros,
                                                        const char* fn);

// Note [Dynamic int4 matmul].
std::unique_ptr<TensorImpl> dyn_quant_pack_4bit_weight(const TensorImpl& weights,
                                                       const TensorImpl& scales_zeros,
                                                       const TensorImpl* bias, int64_t block_size,
                                                       int64_t in_features, int64_t out_features,
                                                       const char* fn);
std::unique_ptr<TensorImpl> dyn_quant_matmul_4bit(const TensorImpl& inp,
                                                  const TensorImpl& packed_weights,
                                                  int64_t block_size, int64_t in_features,
                                                  int64_t out_features, const char* fn);

}  // namespace aotrt::ops
