// CUDA's _weight_int4pack_mm (Note [Int4 tinygemm layout] in ops/int_matmul.h):
// the exact kernel and the tensor-core kernels that read tinygemm's layout as
// it lies in memory.
//
// Note [Int4 matmul kernels]
// int4_tinygemm_mm picks, by M, one of four kernels: gemv to kInt4GemvAutoRows rows, decode
// to 64, gemm past (auto); exact serves what they refuse. tinygemm's layout is the B fragment
// of mma.m16n8k16 (Note [mma fragments]): lane (n % 8) * 4 + (k % 8) / 2 of an 8-column
// tile holds, in each int32, the fragments of two 16-deep k tiles, so a lane loads its
// own int32s (16 bytes at once for innerKTiles 8, the layout torchao packs) and
// dequantizes them in registers straight into fragments: the nibble pairs (i, i + 4) at
// bits 4i and 16 + 4i become two bfloat16 128 + q by an OR with 0x4300 (exact), then
// w = fma(q - 8, scale, zero) in bfloat16x2 (one rounding, ATen's dequantization bit for
// bit).
// - gemv (M <= 32): out^T = W A^T, the weight as mma's A operand. The fragments (b0, b1)
//   of two n tiles T0, T1 are, as they come, the A fragment {T0 b0, T1 b0, T0 b1, T1 b1}
//   (rows g: T0's column g, rows g + 8: T1's), and each 8 of A's rows (a row group r) are
//   the B operand's 8 columns: lane (g, c) reads A[8r + g][k + 2c] and A[8r + g][k + 2c + 8]
//   (4 bytes each, zero past M) straight from global memory, where L1 and L2 hold it. One
//   dequantized fragment a 16-deep k tile serves both n tiles and every row group (an mma
//   each), and C's element e of lane (g, c) in group r is out[8r + 2c + e % 2][8 T + g].
//   A block is 8 warps on a pair of n tiles; each warp takes a contiguous run of the
//   block's outer k tiles and loads their weights and (scale, zero) pairs 8 k pairs a
//   batch (2 KiB a warp), two batches before it reads A and each next one as it finishes
//   one, so that the weights, not A, are what a warp waits for: no shared memory and no
//   barrier until the warps' sums add, in warp order, at the end. A split over K as a
//   cluster (sm_90, summed in rank order) is there on request only: measured, it was
//   slower at every shape. 9 to 32 rows are two to four row groups: twice to four times
//   the accumulators and A's loads, one block an SM past 8 rows for the registers (165 to
//   254 of them). Auto gives it M <= 24 (kInt4GemvAutoRows, three row groups), where it
//   was measured against decode on an H100 (bench/results/int4-gemv-h100-2026-12-07.md):
//   faster at every shape to 8 rows, and at 4096 x 4096 18.7 against 23.6 us at 16 rows,
//   21.3 against 29.0 at 17 (three groups, as 24); at 32 rows (four groups) 36.2 against
//   decode's 30.2, so 25 to 32 stay with decode. Only 4096 x 4096 was timed past 8 rows.
//   With AOTRT_EARLY_START=1 it starts while the kernel before it finishes (Note [Early start]).
// - decode (M <= 64; auto: 25 to 64): a GEMV on tensor cores, the weight as the B
//   operand. Each warp of a block owns 1, 2 or 4 n tiles and walks the block's K range;
//   A's rows (8, 16, 32 or 64 of them, rows past M read a zero row) stage through shared
//   memory in chunks (cp.async, two buffers) that all 4 warps share, and reach the
//   fragments by ldmatrix. A warp loads the weights and (scale, zero) pairs of its next
//   batch of outer k tiles (about 2 KiB) while it multiplies the current one, so two
//   batches are in flight and no load waits inside the multiply (the first version
//   loaded the pairs there and ran at a quarter of the bandwidth). The grid is about
//   one wave of the device: blocks split K as a cluster (sm_90) and sum through
//   distributed shared memory, in rank order.
// - gemm (M > 64): 64 or 128 rows x 128 columns a block, 8 warps of 32 x 32
//   (or 64 x 32); A's tile through shared memory (cp.async, two stages,
//   ldmatrix), the weights loaded by each warp into registers one 128-deep
//   k step ahead and dequantized once for all its m tiles; split over K
//   in a cluster as above when the tiles are too few.
// - exact: the reference. A 16 x 16 output tile a block through 32-deep k
//   steps, the dequantized weights in shared memory, each output a float32
//   sum in k order: the CPU kernel's order, bit for bit. It serves what the
//   others refuse (a device before sm_80, A or the packed weight not aligned
//   for the vector loads).
// The fast kernels sum the same exact products (a bfloat16 times a
// bfloat16 is exact in float32) in another order, as tinygemm's own
// tensor-core kernel does, each float32 sum once rounded to bfloat16. Any
// order of K additions whose each rounding is within 2^-23 relative (float32's
// ulp; the tensor cores' truncating adds are within that) differs from
// another by at most 2 * K * 2^-23 * sum_k |a_k w_k| before the two
// roundings to bfloat16, which add at most 2^-8 relative each: the bound the
// tests check against the exact kernel and torch. Each kernel's order (gemv: the
// mma chains, their accumulator sets, the warps, the cluster's blocks) is fixed by
// the shape and the choice, with no atomics: a call gives the same bits every time.
// Grid sizes: the splits are chosen on the host from the shape and the
// device's SM count only; no host sync, no allocation.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/kernel_switch.h"
#include "cuda/library_ops.h"
#include "cuda/ops/common.cuh"
#include "cuda/ops/launch.cuh"
#include "cuda/ops/mma.cuh"
#include "ops/int4_tinygemm.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using bf16 = __nv_bfloat16;

// --- The exact kernel ----------------------------------------------------------------------

constexpr int kTile = 16;
constexpr int kExactTk = 32;  // a k-step: within one quantization group (groups are >= 32)

__global__ void int4_exact_kernel(const bf16* a, const uint32_t* b, const bf16* sz, bf16* out,
                                  int64_t M, int64_t N, int64_t K, int64_t outer, int inner,
                                  int64_t group) {
  __shared__ float ta[kTile][kExactTk + 1];  // [m][k]
  __shared__ float tw[kExactTk][kTile + 1];  // [k][n]
  const int tx = threadIdx.x, ty = threadIdx.y, flat = ty * kTile + tx;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTile, j = n0 + tx;
  const int64_t tiles_m = (M + kTile - 1) / kTile;
  // Every thread of a block runs the same tiles and steps, so the barriers are uniform.
  for (int64_t t = blockIdx.y; t < tiles_m; t += gridDim.y) {
    const int64_t m0 = t * kTile, i = m0 + ty;
    float acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += kExactTk) {  // K is a multiple of 32
      for (int e = flat; e < kTile * kExactTk; e += kTile * kTile) {
        const int r = e / kExactTk, c = e % kExactTk;
        ta[r][c] = m0 + r < M ? __bfloat162float(a[(m0 + r) * K + k0 + c]) : 0.0f;
      }
      for (int e = flat; e < kExactTk * kTile; e += kTile * kTile) {
        const int r = e / kTile, c = e % kTile;
        const int64_t n = n0 + c, k = k0 + r;
        float w = 0.0f;
        if (n < N) {
          const auto at = ops::int4_tinygemm::nibble_of(n, k, outer, inner);
          const int q = static_cast<int>((b[at.word] >> at.shift) & 0xFu);
          const bf16* g = sz + ((k / group) * N + n) * 2;
          const float v = ops::int4_tinygemm::dequantize_round_odd(q, __bfloat162float(g[0]),
                                                                   __bfloat162float(g[1]));
          w = __bfloat162float(__float2bfloat16_rn(v));
        }
        tw[r][c] = w;
      }
      __syncthreads();
#pragma unroll
      for (int q = 0; q < kExactTk; ++q) acc = fmaf(ta[ty][q], tw[q][tx], acc);
      __syncthreads();
    }
    if (i < M && j < N) out[i * N + j] = __float2bfloat16_rn(acc);
  }
}

void launch_exact(const bf16* a, const uint32_t* b, const bf16* sz, bf16* out, int64_t M,
                  int64_t N, int64_t K, int64_t outer, int inner, int64_t group,
                  cudaStream_t stream, const char* fn) {
  const int64_t tiles_n = (N + kTile - 1) / kTile, tiles_m = (M + kTile - 1) / kTile;
  AOTRT_CHECK(tiles_n <= int64_t{0x7fffffff}, kUnsupported, fn, ": ", N,
              " columns; the CUDA int4 matmul serves at most 2^35");
  const dim3 grid(static_cast<unsigned>(tiles_n),
                  static_cast<unsigned>(std::min<int64_t>(tiles_m, 65535)));
  int4_exact_kernel<<<grid, dim3(kTile, kTile), 0, stream>>>(a, b, sz, out, M, N, K, outer,
                                                             inner, group);
  AOTRT_CUDA_CHECK_LAUNCH();
}

// --- Pieces of the tensor-core kernels ---------------------------------------------------

// Two bfloat16 weights of one lane's fragment: the nibbles at bits `shift` and
// shift + 16 of w, dequantized as ATen does (Note [Int4 matmul kernels]).
// scale2 and zero2 hold the column's scale and zero twice.
template <int kShift>
__device__ __forceinline__ uint32_t dequant_pair(uint32_t w, uint32_t scale2, uint32_t zero2) {
  const uint32_t biased = ((w >> kShift) & 0x000F000Fu) | 0x43004300u;  // 128 + q, exact
  const __nv_bfloat162 q = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&biased),
                                   __floats2bfloat162_rn(136.0f, 136.0f));  // q - 8, exact
  const __nv_bfloat162 r = __hfma2(q, *reinterpret_cast<const __nv_bfloat162*>(&scale2),
                                   *reinterpret_cast<const __nv_bfloat162*>(&zero2));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// The B fragments of both k tiles of one int32 (tile `kOdd` of the pair),
// for a column whose (scale, zero) pair is `sz` (scale in the low half).
template <int kOdd>
__device__ __forceinline__ void dequant_tile(uint32_t w, uint32_t sz, uint32_t& b0,
                                             uint32_t& b1) {
  const uint32_t scale2 = __byte_perm(sz, 0, 0x1010), zero2 = __byte_perm(sz, 0, 0x3232);
  b0 = dequant_pair<kOdd ? 8 : 0>(w, scale2, zero2);
  b1 = dequant_pair<kOdd ? 12 : 4>(w, scale2, zero2);
}

// A lane's kInner / 2 int32s of one outer k tile: one vector load.
template <int kWords>
__device__ __forceinline__ void load_words(uint32_t (&w)[kWords], const uint32_t* p) {
  if constexpr (kWords == 4) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else if constexpr (kWords == 2) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    w[0] = v.x, w[1] = v.y;
  } else {
    w[0] = __ldg(p);
  }
}

// The int32 of n tile `tile` holding k tiles 2p and 2p + 1 (p: the 32-deep
// k pair) for this lane, in the packed [N/8, k_outer, 32, kInner/2].
template <int kInner>
__device__ __forceinline__ const uint32_t* word_at(const uint32_t* b, int64_t tile,
                                                   int64_t k_outer, int64_t pair, int lane) {
  constexpr int kWords = kInner / 2;
  return b + ((tile * k_outer + pair / kWords) * 32 + lane) * kWords + pair % kWords;
}

// Sums each block's `count` floats at `local` (shared memory) over the blocks
// of its cluster in rank order; each rank emits a slice: emit(i, sum).
template <typename Emit>
__device__ __forceinline__ void cluster_sum(float* local, int count, Emit&& emit) {
#if defined(_CG_HAS_CLUSTER_GROUP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int ranks = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  cluster.sync();  // every block's partial is in its shared memory
  const int begin = count * rank / ranks, end = count * (rank + 1) / ranks;
  for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += blockDim.x) {
    float s = 0.0f;
    for (int r = 0; r < ranks; ++r) s += *cluster.map_shared_rank(local + i, r);
    emit(i, s);
  }
  cluster.sync();  // no block leaves while another reads its shared memory
#else
  __trap();  // clusters are launched on sm_90 and later only
#endif
}

// --- gemv: M <= 32 ------------------------------------------------------------------------

constexpr int kGemvWarps = 8;
constexpr int kGemvMaxRows8 = kInt4GemvMaxRows / 8;  // row groups the gemv kernel serves
constexpr int kGemvPairs = 8;    // 32-deep k pairs of a batch: 16 int32s a lane (2 KiB a warp)
constexpr int kGemvSets = 4;     // accumulators a warp and row group: mma chains a quarter as long

// A hint that the line holding p is about to be read (into L1; a no-op if not kept).
__device__ __forceinline__ void prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];\n" ::"l"(p));
}

// out^T = W A^T (Note [Int4 matmul kernels]). Block (x, y): n tiles T0 = 2x and T1 = 2x + 1
// (rows g and g + 8 of mma's A operand), outer k tiles [y * per_split, ...) in contiguous
// runs, one a warp; its cluster (splits > 1) is its column of blocks along y. A warp loads
// the weights and (scale, zero) pairs of its first two batches before it reads A, and the
// batch after next as it finishes each; A's rows come straight from global memory.
// kScales: the groups in an outer k tile (its kInner / 2 k pairs; 1 where a group covers
// it). A lane loads each one's (scale, zero) pair once a column: none twice, none copied
// from another register (the copy would wait for that register's load).
// kRows8: A's row groups of 8 (M <= 8 kRows8); each dequantized fragment feeds one mma a group.
// Every index fits 32 bits: M K, N K / 8 and M N are below 2^31 (the host checks).
template <int kInner, int kScales, int kRows8>
__global__ void __launch_bounds__(kGemvWarps * 32, kRows8 == 1 ? 2 : 1)
    int4_gemv_kernel(const bf16* __restrict__ a, const uint32_t* __restrict__ b,
                     const uint32_t* __restrict__ sz, bf16* __restrict__ out, int M, int N,
                     int K, int group_shift, int per_split, int splits) {
  constexpr int kWords = kInner / 2;  // int32s a lane holds of one outer k tile and n tile
  constexpr int kOuterK = 16 * kInner;
  constexpr int kB = kGemvPairs / kWords;  // outer k tiles a batch
  static_assert(kScales >= 1 && kWords % kScales == 0);
  __shared__ __align__(16) float part[kGemvWarps][kRows8][32 * 4];  // each warp's C fragments
  __shared__ float block_sum[kRows8 * 8 * 16];
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4;
  const int n_tiles = N / 8, k_outer = K / kOuterK;
  const int tile0 = 2 * static_cast<int>(blockIdx.x);
  const bool has1 = tile0 + 1 < n_tiles;  // an odd count: the last block's T1 is zero
  const int split0 = static_cast<int>(blockIdx.y) * per_split;
  const int span = max(0, min(k_outer, split0 + per_split) - split0);
  const int o_begin = split0 + span * warp / kGemvWarps;
  const int o_end = split0 + span * (warp + 1) / kGemvWarps;
  const int batches = (o_end - o_begin + kB - 1) / kB;
  // This lane's int32s of T0 at o_begin (T1's a packed n tile on), its (scale, zero)
  // column of T0 (T1's 8 on), its row of A in each row group (row 8r + g; none past M).
  const uint32_t* const w0 = b + ((tile0 * k_outer + o_begin) * 32 + lane) * kWords;
  const int t1_words = k_outer * 32 * kWords;
  const uint32_t* const s0 = sz + tile0 * 8 + g;
  bool row_in[kRows8];
  const bf16* a_row[kRows8];
#pragma unroll
  for (int r = 0; r < kRows8; ++r) {
    row_in[r] = 8 * r + g < M;
    a_row[r] = a + (row_in[r] ? 8 * r + g : 0) * K;
  }

  // A batch: kB outer tiles of both n tiles' int32s and (scale, zero) pairs; k pair j of
  // an outer tile is in its group j * kScales / kWords.
  struct Batch {
    uint32_t w[kB][2][kWords];
    uint32_t s[kB][2][kScales];
  };
  auto load = [&](int bi, Batch& d) {
    const int ob = o_begin + bi * kB;            // the batch's first outer tile
    const int left = min(kB, o_end - ob);        // its outer tiles in the run
    const uint32_t* const wb = w0 + bi * (kB * 32 * kWords);
#pragma unroll
    for (int u = 0; u < kB; ++u) {
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        const bool ok = u < left && (t == 0 || has1);
        if (ok) {
          load_words<kWords>(d.w[u][t], wb + t * t1_words + u * 32 * kWords);
        } else {
#pragma unroll
          for (int j = 0; j < kWords; ++j) d.w[u][t][j] = 0;
        }
#pragma unroll
        for (int i = 0; i < kScales; ++i) {
          const int k = ((ob + u) * kWords + i * (kWords / kScales)) * 32;  // the group's first
          d.s[u][t][i] = ok ? __ldg(s0 + t * 8 + (k >> group_shift) * N) : 0u;
        }
      }
    }
  };
  // Batch bi's A into L1 while its weights come: lane (g, c) the quarters c of its rows.
  auto prefetch_a = [&](int bi) {
    const int ob = o_begin + bi * kB;
    const int left = min(kB, o_end - ob);
#pragma unroll
    for (int r = 0; r < kRows8; ++r) {
      if (row_in[r]) {
        const char* const p = reinterpret_cast<const char*>(a_row[r] + ob * kOuterK);
        const int last = left * kOuterK * 2 - 1;  // bytes, from p
        prefetch_l1(p + min(kGemvPairs * 16 * c, last));
        prefetch_l1(p + min(kGemvPairs * 16 * c + kGemvPairs * 16 - 1, last));
      }
    }
  };

  float acc[kRows8][kGemvSets][4] = {};
  auto compute = [&](const Batch& d, int bi) {
#pragma unroll
    for (int u = 0; u < kB; ++u) {
      const int o = o_begin + bi * kB + u;
      if (o >= o_end) break;  // uniform over the warp
      // The B fragments of the outer tile's k pairs: A[8r + g][k0 + 2c + 8h .. + 1] for
      // h = 0, 1 (k tile 2p's b0, b1) and 2, 3 (k tile 2p + 1's).
      uint32_t x[kRows8][kWords][4];
#pragma unroll
      for (int r = 0; r < kRows8; ++r) {
        const bf16* const ap = a_row[r] + o * kOuterK + 2 * c;
#pragma unroll
        for (int j = 0; j < kWords; ++j) {
#pragma unroll
          for (int h = 0; h < 4; ++h) {
            x[r][j][h] =
                row_in[r] ? __ldg(reinterpret_cast<const uint32_t*>(ap + 32 * j + 8 * h)) : 0u;
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        const int q = u * kWords + j, i = j * kScales / kWords;
        // The A fragment {T0 b0, T1 b0, T0 b1, T1 b1}: rows g and g + 8, k 2c.. and 2c + 8..
        uint32_t f[4];
        dequant_tile<0>(d.w[u][0][j], d.s[u][0][i], f[0], f[2]);
        dequant_tile<0>(d.w[u][1][j], d.s[u][1][i], f[1], f[3]);
#pragma unroll
        for (int r = 0; r < kRows8; ++r) {
          mma::m16n8k16<bf16>(acc[r][(2 * q) % kGemvSets], f, x[r][j][0], x[r][j][1]);
        }
        dequant_tile<1>(d.w[u][0][j], d.s[u][0][i], f[0], f[2]);
        dequant_tile<1>(d.w[u][1][j], d.s[u][1][i], f[1], f[3]);
#pragma unroll
        for (int r = 0; r < kRows8; ++r) {
          mma::m16n8k16<bf16>(acc[r][(2 * q + 1) % kGemvSets], f, x[r][j][2], x[r][j][3]);
        }
      }
    }
  };

  // Two batches in flight: while one is multiplied the other loads, and each is
  // reloaded (two batches on) as soon as it is multiplied. The first two batches' weights
  // load before A may be read (Note [Early start]: A is the previous kernel's output).
  Batch p{}, r{};
  if (batches > 0) load(0, p);
  if (batches > 1) load(1, r);
  launch::grid_dependency_wait();
  if (batches > 0) prefetch_a(0);
  if (batches > 1) prefetch_a(1);
  for (int bi = 0; bi < batches; bi += 2) {
    compute(p, bi);
    if (bi + 2 < batches) {
      load(bi + 2, p);
      prefetch_a(bi + 2);
    }
    if (bi + 1 < batches) {
      compute(r, bi + 1);
      if (bi + 3 < batches) {
        load(bi + 3, r);
        prefetch_a(bi + 3);
      }
    }
  }
  launch::allow_early_start();  // every weight of this block is read

  // C: element e of lane (g, c) in group r is out[8r + 2c + e % 2][8 (T0 + e / 2) + g]. The
  // sets' sums, in set order, then the warps' in warp order (each warp's k run follows the
  // previous one's).
#pragma unroll
  for (int r = 0; r < kRows8; ++r) {
    float res[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      res[e] = ((acc[r][0][e] + acc[r][1][e]) + acc[r][2][e]) + acc[r][3][e];
    }
    *reinterpret_cast<float4*>(&part[warp][r][lane * 4]) = make_float4(res[0], res[1], res[2], res[3]);
  }
  __syncthreads();
  // Output i < 16 M: row m = i / 16 (group m / 8), column 16 x + i % 16.
  const int count = M * 16;
  auto sum_of = [&](int i) {
    const int m = i / 16, col = i % 16, r = m / 8, mr = m % 8;
    const int at = ((col % 8) * 4 + mr / 2) * 4 + mr % 2 + 2 * (col / 8);
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < kGemvWarps; ++w) s += part[w][r][at];
    return s;
  };
  auto emit = [&](int i, float s) {
    if (i % 16 < 8 || has1) out[(i / 16) * N + tile0 * 8 + i % 16] = __float2bfloat16_rn(s);
  };
  if (splits == 1) {
    for (int i = tid; i < count; i += kGemvWarps * 32) emit(i, sum_of(i));
    return;
  }
  for (int i = tid; i < count; i += kGemvWarps * 32) block_sum[i] = sum_of(i);
  cluster_sum(block_sum, count, emit);  // its first cluster barrier orders block_sum
}

// --- decode: M <= 64 ---------------------------------------------------------------------

constexpr int kDecodeWarps = 4;
constexpr int kDecodeMaxRows = 64;  // M the decode kernel serves (auto: up to here)

// The decode kernel's compile-time shape: kRows8 eighths of 8 rows (1: M <= 8;
// 2, 4, 8: M <= 16, 32, 64), kNT n tiles a warp.
template <int kInner, int kRows8, int kNT>
struct DecodeShape {
  static constexpr int kWords = kInner / 2;      // int32s a lane holds of one outer k tile
  static constexpr int kOuterK = 16 * kInner;    // k of an outer tile
  static constexpr int kRows = 8 * kRows8;       // rows of A the fragments cover
  static constexpr int kMT = (kRows + 15) / 16;  // 16-row m tiles
  static constexpr int kChunk = 1024 / kRows8;   // k of A one stage holds (about 17 KiB)
  static constexpr int kPitch = kChunk + 8;      // a staged row in bfloat16: ldmatrix without conflicts
  static constexpr int kStageRows = kRows + 1;   // row kRows stays zero: rows >= M read it
  // Outer k tiles a warp loads at once: about 16 int32s a lane to 16 rows (two
  // batches in flight: 4 KiB a warp), 8 past.
  static constexpr int kWant = (kRows8 <= 2 ? 16 : 8) / (kNT * kWords);
  static constexpr int kB = std::clamp(kWant, 1, kChunk / kOuterK);
  static constexpr int kBatchesPerChunk = kChunk / (kB * kOuterK);
  static constexpr int kSets = kMT * kNT >= 4 ? 1 : 2;  // accumulators a tile (short mma chains)
  static constexpr size_t kStageBytes = size_t{kStageRows} * kPitch * sizeof(bf16);
  static constexpr size_t kPartialBytes = size_t{kDecodeWarps} * kNT * kRows * 8 * sizeof(float);
  static constexpr size_t kSmem = std::max(2 * kStageBytes, kPartialBytes);
  static_assert(kChunk % (kB * kOuterK) == 0 && kSmem <= 48 * 1024);
};

// Block (x, y): n tiles from x * kDecodeWarps * kNT, kNT a warp; outer k tiles
// [y * per_split, ...), which every warp walks in order; its cluster (when
// splits > 1) is its column of blocks along y. A's rows stage through shared
// memory in chunks of kChunk k (two buffers, cp.async); each warp loads the
// weights and (scale, zero) pairs of its next batch of outer tiles while it
// multiplies the current one.
template <int kInner, int kRows8, int kNT>
__global__ void __launch_bounds__(kDecodeWarps * 32, kRows8 <= 2 ? 3 : 2)
    int4_decode_kernel(const bf16* __restrict__ a, const uint32_t* __restrict__ b,
                       const uint32_t* __restrict__ sz, bf16* __restrict__ out, int M, int N,
                       int K, int group_shift, int per_split, int splits) {
  using S = DecodeShape<kInner, kRows8, kNT>;
  constexpr int kWords = S::kWords, kB = S::kB, kMT = S::kMT, kSets = S::kSets;
  constexpr int kRows = S::kRows, kChunk = S::kChunk, kPitch = S::kPitch;
  __shared__ __align__(16) unsigned char smem[S::kSmem];
  bf16* const stage = reinterpret_cast<bf16*>(smem);  // [2][kStageRows][kPitch]
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4;
  const int64_t n_tiles = N / 8, k_outer = K / S::kOuterK;
  const int64_t tile_w = (static_cast<int64_t>(blockIdx.x) * kDecodeWarps + warp) * kNT;
  const int64_t o_begin = static_cast<int64_t>(blockIdx.y) * per_split;
  const int64_t o_end = min(k_outer, o_begin + per_split);
  const int64_t batches = o_end > o_begin ? (o_end - o_begin + kB - 1) / kB : 0;
  const int64_t chunks = (batches + S::kBatchesPerChunk - 1) / S::kBatchesPerChunk;
  const int64_t k_begin = o_begin * S::kOuterK, k_end = o_end * S::kOuterK;
  const int64_t group_pairs_mask = (int64_t{1} << (group_shift - 5)) - 1;  // groups >= 32

  for (int i = tid; i < 2 * (kChunk / 8); i += kDecodeWarps * 32) {  // the zero rows
    const int buf = i / (kChunk / 8), ch = i % (kChunk / 8);
    *reinterpret_cast<uint4*>(stage + (buf * S::kStageRows + kRows) * kPitch + ch * 8) =
        make_uint4(0, 0, 0, 0);
  }
  auto stage_a = [&](int64_t chunk, int buf) {
    const int64_t k0 = k_begin + chunk * kChunk;
    for (int i = tid; i < M * (kChunk / 8); i += kDecodeWarps * 32) {
      const int r = i / (kChunk / 8), ch = i % (kChunk / 8);
      const int64_t k = k0 + ch * 8;
      const bool in = k < k_end;  // 8 bfloat16 are in or out whole
      mma::cp_async16(stage + (buf * S::kStageRows + r) * kPitch + ch * 8,
                      in ? a + static_cast<int64_t>(r) * K + k : a, in ? 16 : 0);
    }
    mma::cp_async_commit();
  };

  // A batch: kB outer tiles x kNT n tiles of this lane's int32s and their
  // (scale, zero) pairs, one a 32-deep k pair (loaded once a group).
  struct Batch {
    uint32_t w[kB][kNT][kWords];
    uint32_t s[kB][kNT][kWords];
  };
  auto load = [&](int64_t bi, Batch& d) {
#pragma unroll
    for (int u = 0; u < kB; ++u) {
      const int64_t o = o_begin + bi * kB + u;
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
        const int64_t tile = tile_w + t;
        const bool ok = o < o_end && tile < n_tiles;
        if (ok) {
          load_words<kWords>(d.w[u][t], word_at<kInner>(b, tile, k_outer, o * kWords, lane));
        } else {
#pragma unroll
          for (int j = 0; j < kWords; ++j) d.w[u][t][j] = 0;
        }
#pragma unroll
        for (int j = 0; j < kWords; ++j) {
          const int64_t pair = o * kWords + j;
          if (j == 0 || (pair & group_pairs_mask) == 0) {
            d.s[u][t][j] = ok ? __ldg(sz + ((pair * 32) >> group_shift) * N + tile * 8 + g) : 0u;
          } else {
            d.s[u][t][j] = d.s[u][t][j - 1];
          }
        }
      }
    }
  };

  float acc[kMT][kNT][kSets][4];
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int v = 0; v < kSets; ++v) acc[i][t][v][0] = acc[i][t][v][1] = acc[i][t][v][2] = acc[i][t][v][3] = 0.0f;

  // ldmatrix rows of this lane (rows >= M read the zero row).
  int a_row[kMT];
#pragma unroll
  for (int i = 0; i < kMT; ++i) {
    const int r = kRows8 == 1 ? lane % 8 : 16 * i + lane % 16;
    a_row[i] = (r < M ? r : kRows) * kPitch + (kRows8 == 1 ? (lane / 8) * 8 : (lane / 16) * 8);
  }
  auto compute = [&](const Batch& d, int64_t bi, const bf16* sb) {
#pragma unroll
    for (int u = 0; u < kB; ++u) {
      if (o_begin + bi * kB + u >= o_end) break;  // uniform over the block
      const int col0 = static_cast<int>((bi % S::kBatchesPerChunk) * kB + u) * S::kOuterK;
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        uint32_t af[kMT][2][4];  // the k tiles 2 pair and 2 pair + 1
        if constexpr (kRows8 == 1) {  // rows 0-7 of both k tiles in one ldmatrix; rows 8-15 zero
          uint32_t r[4];
          mma::ldmatrix_x4(r, sb + a_row[0] + col0 + 32 * j);
          af[0][0][0] = r[0], af[0][0][2] = r[1], af[0][1][0] = r[2], af[0][1][2] = r[3];
          af[0][0][1] = af[0][0][3] = af[0][1][1] = af[0][1][3] = 0u;
        } else {
#pragma unroll
          for (int i = 0; i < kMT; ++i) {
            mma::ldmatrix_x4(af[i][0], sb + a_row[i] + col0 + 32 * j);
            mma::ldmatrix_x4(af[i][1], sb + a_row[i] + col0 + 32 * j + 16);
          }
        }
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
          uint32_t b0, b1;
          dequant_tile<0>(d.w[u][t][j], d.s[u][t][j], b0, b1);
#pragma unroll
          for (int i = 0; i < kMT; ++i) mma::m16n8k16<bf16>(acc[i][t][j % kSets], af[i][0], b0, b1);
          dequant_tile<1>(d.w[u][t][j], d.s[u][t][j], b0, b1);
#pragma unroll
          for (int i = 0; i < kMT; ++i) mma::m16n8k16<bf16>(acc[i][t][j % kSets], af[i][1], b0, b1);
        }
      }
    }
  };

  Batch cur{}, nxt{};
  if (batches > 0) {
    load(0, cur);
    stage_a(0, 0);
  }
  for (int64_t ch = 0; ch < chunks; ++ch) {
    if (ch + 1 < chunks) {
      stage_a(ch + 1, static_cast<int>((ch + 1) & 1));
    } else {
      mma::cp_async_commit();  // an empty group: the wait below is for chunk ch alone
    }
    mma::cp_async_wait<1>();
    __syncthreads();  // chunk ch (and the zero rows) in place for every warp
    const bf16* sb = stage + (ch & 1) * S::kStageRows * kPitch;
    for (int bb = 0; bb < S::kBatchesPerChunk; ++bb) {
      const int64_t bi = ch * S::kBatchesPerChunk + bb;
      if (bi >= batches) break;  // uniform over the block
      if (bi + 1 < batches) load(bi + 1, nxt);
      compute(cur, bi, sb);
      cur = nxt;
    }
    __syncthreads();  // buffer ch & 1 is restaged for chunk ch + 2
  }

  // The sets' sums (in set order); rows 16 i + g (+ 8), columns 8 tile + 2c (+ 1).
  float res[kMT][kNT][4];
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float s = acc[i][t][0][e];
#pragma unroll
        for (int v = 1; v < kSets; ++v) s += acc[i][t][v][e];
        res[i][t][e] = s;
      }
  if (splits == 1) {
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
        const int64_t tile = tile_w + t;
        if (tile >= n_tiles) continue;
        const int64_t row = 16 * i + g, col = tile * 8 + 2 * c;
        if (row < M) {
          *reinterpret_cast<__nv_bfloat162*>(out + row * N + col) =
              __floats2bfloat162_rn(res[i][t][0], res[i][t][1]);
        }
        if (kRows8 > 1 && row + 8 < M) {
          *reinterpret_cast<__nv_bfloat162*>(out + (row + 8) * N + col) =
              __floats2bfloat162_rn(res[i][t][2], res[i][t][3]);
        }
      }
    }
    return;
  }
  // Split over K: the block's [warp * kNT + t][row][8] sums, added over the cluster.
  __syncthreads();  // the stages (and zero rows) are no longer read
  float* part = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < kMT; ++i) {
#pragma unroll
    for (int t = 0; t < kNT; ++t) {
      const int r = 16 * i + g;
      float* p = part + ((warp * kNT + t) * kRows + r) * 8 + 2 * c;
      if (r < kRows) p[0] = res[i][t][0], p[1] = res[i][t][1];
      if (r + 8 < kRows) p[64] = res[i][t][2], p[65] = res[i][t][3];
    }
  }
  const int64_t tile_b = static_cast<int64_t>(blockIdx.x) * kDecodeWarps * kNT;
  cluster_sum(part, kDecodeWarps * kNT * kRows * 8, [&](int i, float s) {
    const int tl = i / (kRows * 8), r = (i / 8) % kRows, col = i % 8;
    if (r < M && tile_b + tl < n_tiles) {
      out[static_cast<int64_t>(r) * N + (tile_b + tl) * 8 + col] = __float2bfloat16_rn(s);
    }
  });
}

// --- gemm: M > 64 --------------------------------------------------------------------------

constexpr int kGemmWarps = 8;  // 2 along M x 4 along N
constexpr int kGemmBN = 128;   // 16 n tiles; a warp 4 of them
constexpr int kGemmBK = 128;   // a k step: 4 pairs of k tiles
constexpr int kGemmPitch = kGemmBK + 8;  // A's smem row in bfloat16: ldmatrix without conflicts

template <int kBM>
constexpr size_t gemm_smem_bytes() {
  return std::max<size_t>(size_t{2} * kBM * kGemmPitch * sizeof(bf16),
                          size_t{kBM} * kGemmBN * sizeof(float));
}

template <int kInner, int kBM>
__global__ void __launch_bounds__(kGemmWarps * 32)
    int4_gemm_kernel(const bf16* __restrict__ a, const uint32_t* __restrict__ b,
                     const uint32_t* __restrict__ sz, bf16* __restrict__ out, int M, int N, int K,
                     int group_shift, int steps_per_split, int splits) {
  constexpr int kMT = kBM / 32;  // m tiles a warp
  extern __shared__ float4 smem4[];
  bf16* as = reinterpret_cast<bf16*>(smem4);  // [2][kBM][kGemmPitch]
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, c = lane % 4;
  const int wm = warp / 4, wn = warp % 4;
  const int64_t n_tiles = N / 8, k_outer = K / (16 * kInner), pairs = K / 32;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  // The warp's first n tile.
  const int64_t tile_w = static_cast<int64_t>(blockIdx.x) * (kGemmBN / 8) + wn * 4;
  const int64_t steps = (K + kGemmBK - 1) / kGemmBK;
  const int64_t s_begin = static_cast<int64_t>(blockIdx.z) * steps_per_split;
  const int64_t s_end = min(steps, s_begin + steps_per_split);

  auto load_a = [&](int64_t step, int buf) {
    for (int i = tid; i < kBM * (kGemmBK / 8); i += kGemmWarps * 32) {
      const int r = i / (kGemmBK / 8), ch = i % (kGemmBK / 8);
      const int64_t row = m0 + r, k = step * kGemmBK + ch * 8;
      const bool in = row < M && k < K;  // K % 32 == 0: a chunk is in or out whole
      mma::cp_async16(as + (static_cast<int64_t>(buf) * kBM + r) * kGemmPitch + ch * 8,
                      in ? a + row * K + k : a, in ? 16 : 0);
    }
    mma::cp_async_commit();
  };
  // A warp's weights and (scale, zero) pairs of one k step: [n tile][pair of the step].
  struct Step {
    uint32_t words[4][4], scales[4][4];
  };
  auto load_b = [&](int64_t step, Step& s) {
    constexpr int kWords = kInner / 2;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int64_t tile = tile_w + t;
#pragma unroll
      for (int q = 0; q < 4 / kWords; ++q) {  // one vector load per outer k tile
        const int64_t pair0 = step * 4 + q * kWords;
        uint32_t w[kWords];
        // pairs is a multiple of kWords: an outer tile is in or out whole.
        if (tile < n_tiles && pair0 < pairs) {
          load_words<kWords>(w, word_at<kInner>(b, tile, k_outer, pair0, lane));
        } else {
#pragma unroll
          for (int j = 0; j < kWords; ++j) w[j] = 0;
        }
#pragma unroll
        for (int j = 0; j < kWords; ++j) s.words[t][q * kWords + j] = w[j];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t pair = step * 4 + j;
        s.scales[t][j] = tile < n_tiles && pair < pairs
                             ? __ldg(sz + ((pair * 32) >> group_shift) * N + tile * 8 + g)
                             : 0u;
      }
    }
  };

  float acc[kMT][4][4];
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int t = 0; t < 4; ++t) acc[i][t][0] = acc[i][t][1] = acc[i][t][2] = acc[i][t][3] = 0.0f;

  Step cur, next;
  if (s_begin < s_end) {
    load_a(s_begin, 0);
    load_b(s_begin, cur);
  }
  for (int64_t step = s_begin; step < s_end; ++step) {
    const int buf = static_cast<int>((step - s_begin) & 1);
    const bool more = step + 1 < s_end;
    if (more) {
      load_a(step + 1, buf ^ 1);
      load_b(step + 1, next);
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    const bf16* at = as + (static_cast<int64_t>(buf) * kBM + wm * (kBM / 2)) * kGemmPitch;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (step * 4 + j >= pairs) break;  // uniform
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        uint32_t af[kMT][4];
#pragma unroll
        for (int i = 0; i < kMT; ++i) {
          mma::ldmatrix_x4(af[i], at + (i * 16 + lane % 16) * kGemmPitch + j * 32 + half * 16 +
                                      (lane / 16) * 8);
        }
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          uint32_t b0, b1;
          if (half == 0) {
            dequant_tile<0>(cur.words[t][j], cur.scales[t][j], b0, b1);
          } else {
            dequant_tile<1>(cur.words[t][j], cur.scales[t][j], b0, b1);
          }
#pragma unroll
          for (int i = 0; i < kMT; ++i) mma::m16n8k16<bf16>(acc[i][t], af[i], b0, b1);
        }
      }
    }
    __syncthreads();  // the buffer is refilled two steps on
    if (more) cur = next;
  }

  // Output: rows m0 + wm * kBM/2 + 16 i + g (+ 8), columns 8 (tile_w + t) + 2c (+ 1).
  if (splits == 1) {
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int64_t tile = tile_w + t;
        if (tile >= n_tiles) continue;
        const int64_t row = m0 + wm * (kBM / 2) + i * 16 + g, col = tile * 8 + 2 * c;
        if (row < M) {
          *reinterpret_cast<__nv_bfloat162*>(out + row * N + col) =
              __floats2bfloat162_rn(acc[i][t][0], acc[i][t][1]);
        }
        if (row + 8 < M) {
          *reinterpret_cast<__nv_bfloat162*>(out + (row + 8) * N + col) =
              __floats2bfloat162_rn(acc[i][t][2], acc[i][t][3]);
        }
      }
    }
    return;
  }
  // Split over K: this block's tile [kBM][kGemmBN] in shared memory, summed over the cluster.
  float* tile_sum = reinterpret_cast<float*>(smem4);
#pragma unroll
  for (int i = 0; i < kMT; ++i) {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int r = wm * (kBM / 2) + i * 16 + g, col = (wn * 4 + t) * 8 + 2 * c;
      tile_sum[r * kGemmBN + col] = acc[i][t][0];
      tile_sum[r * kGemmBN + col + 1] = acc[i][t][1];
      tile_sum[(r + 8) * kGemmBN + col] = acc[i][t][2];
      tile_sum[(r + 8) * kGemmBN + col + 1] = acc[i][t][3];
    }
  }
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kGemmBN;
  cluster_sum(tile_sum, kBM * kGemmBN, [&](int i, float s) {
    const int64_t row = m0 + i / kGemmBN, col = n0 + i % kGemmBN;
    if (row < M && col < N) out[row * N + col] = __float2bfloat16_rn(s);
  });
}

// --- Host side -----------------------------------------------------------------------------

using launch::DeviceFacts;
using launch::device_facts;
using launch::launch_with_clusters;

bool aligned(const void* p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

int log2_of(int64_t group) {
  int s = 0;
  while ((int64_t{1} << s) < group) ++s;
  return s;
}

struct Operands {
  int device;
  const bf16* a;
  const uint32_t* b;
  const uint32_t* sz;  // (scale, zero) bfloat16 pairs
  bf16* out;
  int64_t M, N, K;
  int inner;
  int group_shift;
};

constexpr int kMaxClusterBlocks = 8;  // the portable cluster size

// Splits of `units` (>= 1 each) that bring `blocks` up to at most `wave`
// blocks (what the device holds at once); 1 without clusters.
int choose_splits(int64_t blocks, int64_t units, int64_t wave, const DeviceFacts& d) {
  if (d.capability < 90) return 1;
  const int64_t want = wave / std::max<int64_t>(blocks, 1);
  return static_cast<int>(std::clamp<int64_t>(std::min(want, units), 1, kMaxClusterBlocks));
}

template <int kInner, int kScales, int kRows8>
void launch_gemv_rows(const Operands& o, const Int4KernelChoice& choice, const DeviceFacts& d,
                      cudaStream_t stream) {
  const int64_t n_tiles = o.N / 8, k_outer = o.K / (16 * kInner);
  const int64_t blocks = (n_tiles + 1) / 2;  // M N < 2^31: within a grid's x
  // One split unless asked (tests, the bench's --sweep): a K split over a cluster was slower
  // at every shape measured, even 16 blocks of a 256 x 2048 weight (H100: 2.49 us whole,
  // 3.38 in two, 3.78 in eight; bench/results/int4-gemv-h100-2026-12-07.md).
  int splits = choice.splits > 0 ? std::min(choice.splits, kMaxClusterBlocks) : 1;
  if (d.capability < 90) splits = 1;
  const int per_split = static_cast<int>((k_outer + splits - 1) / splits);
  launch_with_clusters(int4_gemv_kernel<kInner, kScales, kRows8>,
                       dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(splits)),
                       kGemvWarps * 32, 0, dim3(1, static_cast<unsigned>(splits), 1),
                       early_start_enabled(), d.capability, stream,
                       o.a, o.b, o.sz, o.out, static_cast<int>(o.M), static_cast<int>(o.N),
                       static_cast<int>(o.K), o.group_shift, per_split, splits);
}

template <int kInner, int kScales>
void launch_gemv_groups(const Operands& o, const Int4KernelChoice& choice, const DeviceFacts& d,
                        cudaStream_t stream) {
  static_assert(kGemvMaxRows8 == 4);
  switch ((o.M + 7) / 8) {
    case 1: return launch_gemv_rows<kInner, kScales, 1>(o, choice, d, stream);
    case 2: return launch_gemv_rows<kInner, kScales, 2>(o, choice, d, stream);
    case 3: return launch_gemv_rows<kInner, kScales, 3>(o, choice, d, stream);
    default: return launch_gemv_rows<kInner, kScales, 4>(o, choice, d, stream);
  }
}

// By the groups an outer k tile (kInner / 2 pairs of 16-deep k tiles) spans: one a
// pair for groups of 32, one every two pairs for 64, else one.
template <int kInner>
void launch_gemv(const Operands& o, const Int4KernelChoice& choice, const DeviceFacts& d,
                 cudaStream_t stream) {
  if (o.group_shift == 5) {
    launch_gemv_groups<kInner, kInner / 2>(o, choice, d, stream);
  } else if (o.group_shift == 6) {
    launch_gemv_groups<kInner, std::max(1, kInner / 4)>(o, choice, d, stream);
  } else {
    launch_gemv_groups<kInner, 1>(o, choice, d, stream);
  }
}

template <int kInner, int kRows8>
void launch_decode_rows(const Operands& o, const Int4KernelChoice& choice, const DeviceFacts& d,
                        cudaStream_t stream) {
  const int64_t n_tiles = o.N / 8, k_outer = o.K / (16 * kInner);
  // A wave: the blocks the device holds at once (registers: 4 an SM to 16 rows, 2 or 3 past).
  const int64_t wave =
      int64_t{d.sms} * launch::resident_blocks<int4_decode_kernel<kInner, kRows8, 1>>(
                           kDecodeWarps * 32, 0, o.device);
  auto blocks_for = [&](int64_t nt) {
    return (n_tiles + kDecodeWarps * nt - 1) / (kDecodeWarps * nt);
  };
  int nt = choice.tiles;
  if (nt <= 0) {
    // To 16 rows, the fewest columns a warp that fill no more than a wave; past
    // 16 rows, 4 n tiles a warp (each A fragment from shared memory serves 4 tiles).
    nt = kRows8 >= 4 ? 4 : blocks_for(1) <= wave ? 1 : blocks_for(2) <= wave ? 2 : 4;
  }
  nt = nt >= 4 ? 4 : nt >= 2 ? 2 : 1;
  const int64_t blocks = blocks_for(nt);
  // The chosen kernel's own wave (more n tiles a warp hold more registers).
  const int64_t nt_wave =
      nt == 1 ? wave
              : int64_t{d.sms} *
                    (nt == 2 ? launch::resident_blocks<int4_decode_kernel<kInner, kRows8, 2>>(
                                   kDecodeWarps * 32, 0, o.device)
                             : launch::resident_blocks<int4_decode_kernel<kInner, kRows8, 4>>(
                                   kDecodeWarps * 32, 0, o.device));
  // Each split at least 4 outer k tiles.
  const int64_t units = std::max<int64_t>(1, k_outer / 4);
  int splits = choice.splits > 0 ? std::min(choice.splits, kMaxClusterBlocks)
                                 : choose_splits(blocks, units, nt_wave, d);
  if (d.capability < 90) splits = 1;
  const int per_split = static_cast<int>((k_outer + splits - 1) / splits);
  AOTRT_CHECK(blocks <= 0x7fffffff, kUnsupported, "int4 decode kernel: ", o.N, " columns");
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(splits));
  const dim3 cluster(1, static_cast<unsigned>(splits), 1);
  const int M = static_cast<int>(o.M), N = static_cast<int>(o.N), K = static_cast<int>(o.K);
  auto go = [&](auto kernel) {
    launch_with_clusters(kernel, grid, kDecodeWarps * 32, 0, cluster, false, 0, stream, o.a, o.b,
                         o.sz, o.out, M, N, K, o.group_shift, per_split, splits);
  };
  if (nt == 4) {
    go(int4_decode_kernel<kInner, kRows8, 4>);
  } else if (nt == 2) {
    go(int4_decode_kernel<kInner, kRows8, 2>);
  } else {
    go(int4_decode_kernel<kInner, kRows8, 1>);
  }
}

template <int kInner>
void launch_decode(const Operands& o, const Int4KernelChoice& choice, const DeviceFacts& d,
                   cudaStream_t stream) {
  if (o.M <= 8) {
    launch_decode_rows<kInner, 1>(o, choice, d, stream);
  } else if (o.M <= 16) {
    launch_decode_rows<kInner, 2>(o, choice, d, stream);
  } else if (o.M <= 32) {
    launch_decode_rows<kInner, 4>(o, choice, d, stream);
  } else {
    launch_decode_rows<kInner, 8>(o, choice, d, stream);
  }
}

template <int kInner, int kBM>
void launch_gemm_bm(const Operands& o, const Int4KernelChoice& choice, const DeviceFacts& d,
                    cudaStream_t stream) {
  const int64_t steps = (o.K + kGemmBK - 1) / kGemmBK;
  const int64_t bx = (o.N + kGemmBN - 1) / kGemmBN, by = (o.M + kBM - 1) / kBM;
  AOTRT_CHECK(bx <= 0x7fffffff && by <= 65535, kUnsupported, "int4 gemm kernel: ", o.M, " x ",
              o.N);
  constexpr size_t smem = gemm_smem_bytes<kBM>();
  auto kernel = int4_gemm_kernel<kInner, kBM>;
  if (smem > 48 * 1024) {  // per device: set on every launch, as attention.cu does
    AOTRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
  }
  // A wave: the blocks the device holds at once (~200 registers a thread: one an SM).
  const int64_t wave =
      int64_t{d.sms} *
      launch::resident_blocks<int4_gemm_kernel<kInner, kBM>>(kGemmWarps * 32, smem, o.device);
  int splits = choice.splits > 0 ? std::min(choice.splits, kMaxClusterBlocks)
                                 : choose_splits(bx * by, std::max<int64_t>(1, steps / 4), wave, d);
  if (d.capability < 90) splits = 1;
  const int per_split = static_cast<int>((steps + splits - 1) / splits);
  const dim3 grid(static_cast<unsigned>(bx), static_cast<unsigned>(by),
                  static_cast<unsigned>(splits));
  launch_with_clusters(kernel, grid, kGemmWarps * 32, smem,
                       dim3(1, 1, static_cast<unsigned>(splits)), false, 0, stream, o.a, o.b,
                       o.sz, o.out, static_cast<int>(o.M), static_cast<int>(o.N),
                       static_cast<int>(o.K), o.group_shift, per_split, splits);
}

template <int kInner>
void launch_gemm(const Operands& o, const Int4KernelChoice& choice, const DeviceFacts& d,
                 cudaStream_t stream) {
  const int bm = choice.tiles > 0 ? choice.tiles : (o.M > 128 ? 128 : 64);
  bm == 128 ? launch_gemm_bm<kInner, 128>(o, choice, d, stream)
            : launch_gemm_bm<kInner, 64>(o, choice, d, stream);
}

KernelSwitch g_early_start{"AOTRT_EARLY_START", SwitchMode::kOff};  // Note [Early start]

}  // namespace

bool early_start_enabled() { return g_early_start.enabled(); }
void set_early_start_enabled(bool enabled) {
  g_early_start.set(enabled ? SwitchMode::kOn : SwitchMode::kOff);
}

bool int4_tinygemm_mm_with(const Int4KernelChoice& choice, const TensorImpl& out,
                           const TensorImpl& a, const TensorImpl& b, int64_t group,
                           const TensorImpl& scale_zeros, const char* fn) {
  const OnDevice on(out.device());
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = out.sizes()[1];
  if (M == 0 || N == 0) return true;
  const int inner = static_cast<int>(b.sizes()[3] * 2);
  const auto* a_data = static_cast<const bf16*>(a.data_ptr());
  const auto* b_data = static_cast<const uint32_t*>(b.data_ptr());
  const auto* sz_data = static_cast<const bf16*>(scale_zeros.data_ptr());
  auto* out_data = static_cast<bf16*>(out.data_ptr());
  Int4Kernel which = choice.kernel;
  if (which == Int4Kernel::kAuto) {
    which = M <= kInt4GemvAutoRows ? Int4Kernel::kGemv
            : M <= kDecodeMaxRows ? Int4Kernel::kDecode
                                  : Int4Kernel::kGemm;
  }
  if (which == Int4Kernel::kExact) {
    launch_exact(a_data, b_data, sz_data, out_data, M, N, K, b.sizes()[1], inner, group,
                 on.stream, fn);
    return true;
  }
  // What the tensor-core kernels need: sm_80, 32-bit indices, aligned vector loads.
  const DeviceFacts d = device_facts(on.device);
  const bool fits = d.capability >= 80 && M * K < (int64_t{1} << 31) &&
                    N * K / 8 < (int64_t{1} << 31) && M * N < (int64_t{1} << 31) &&
                    aligned(b_data, 2 * inner) && aligned(sz_data, 4) && aligned(out_data, 4);
  // gemv reads A by 4 bytes (K is even); decode and gemm stage it through cp.async (16 bytes;
  // K is a multiple of 32).
  const bool gemv = which == Int4Kernel::kGemv;
  if (!fits || !aligned(a_data, gemv ? 4 : 16) || (gemv && M > kInt4GemvMaxRows) ||
      (which == Int4Kernel::kDecode && M > kDecodeMaxRows)) {
    return false;
  }
  const Operands o{on.device, a_data, b_data, reinterpret_cast<const uint32_t*>(sz_data), out_data,
                   M, N, K, inner, log2_of(group)};
  auto by_inner = [&](auto run2, auto run4, auto run8) {
    inner == 2 ? run2() : inner == 4 ? run4() : run8();
  };
  if (gemv) {
    by_inner([&] { launch_gemv<2>(o, choice, d, on.stream); },
             [&] { launch_gemv<4>(o, choice, d, on.stream); },
             [&] { launch_gemv<8>(o, choice, d, on.stream); });
  } else if (which == Int4Kernel::kDecode) {
    by_inner([&] { launch_decode<2>(o, choice, d, on.stream); },
             [&] { launch_decode<4>(o, choice, d, on.stream); },
             [&] { launch_decode<8>(o, choice, d, on.stream); });
  } else {
    by_inner([&] { launch_gemm<2>(o, choice, d, on.stream); },
             [&] { launch_gemm<4>(o, choice, d, on.stream); },
             [&] { launch_gemm<8>(o, choice, d, on.stream); });
  }
  return true;
}

void int4_tinygemm_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b,
                      int64_t group, const TensorImpl& scale_zeros, const char* fn) {
  if (!int4_tinygemm_mm_with({}, out, a, b, group, scale_zeros, fn)) {
    int4_tinygemm_mm_with({Int4Kernel::kExact}, out, a, b, group, scale_zeros, fn);
  }
}

}  // namespace aotrt::cuda
