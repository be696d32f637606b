// CUDA kernels of the integer matmul family (ops/int_matmul.h; Note [Integer
// matmul semantics]) and the integer products of the CUDA matmul ops (mm,
// addmm, bmm, baddbmm of integer dtypes, which cuBLAS has no GEMM for).
//
// Note [Integer matmul on CUDA]
// One tiled kernel computes every integer product exactly, as Note [Integer
// matmul on the CPU] does: operands widened to the accumulation type (int32
// for int8 and int32, int64 for int64 and for the matmul ops' packed int64
// operands), products and sums in its unsigned type, so they wrap modulo
// 2^bits (Note [Integer wraparound]) and the result does not depend on the
// order of the sums. A block computes a 16 x 16 tile of C through 16 x 16
// tiles of A and B in shared memory. _int_mm reaches it for what cuBLASLt
// and the GEMV of Note [Int8 matmul on CUDA] do not serve (and the tests
// compare those with it).
// _weight_int8pack_mm's exact kernel: one thread per output, a float32 sum
// over k in the CPU's order, times the channel's scale; the op itself runs
// Note [Int8 weight matmul on CUDA]'s kernels.
// _weight_int4pack_mm: int4_tinygemm.cu (Note [Int4 matmul kernels]).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "cuda/library_ops.h"
#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/int_matmul.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::IntMatmulKernels;

constexpr int kTile = 16;

// c[b] = beta * self[b] + alpha * (a[b] @ b[b]) for dense row-major a [m, k],
// b [k, n], c and self [m, n] (self null: beta * self is 0); a_step and
// b_step: the elements between batches (0: one matrix for every batch).
template <typename In, typename Acc>
__global__ void int_gemm_kernel(const In* a, int64_t a_step, const In* b, int64_t b_step, Acc* c,
                                const Acc* self, int64_t batch, int64_t m, int64_t n, int64_t k,
                                std::make_unsigned_t<Acc> alpha, std::make_unsigned_t<Acc> beta) {
  using U = std::make_unsigned_t<Acc>;
  __shared__ U ta[kTile][kTile + 1], tb[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t tiles_m = (m + kTile - 1) / kTile;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  // Every thread of a block runs the same tiles, so the barriers are uniform.
  for (int64_t t = blockIdx.y; t < batch * tiles_m; t += gridDim.y) {
    const int64_t bi = t / tiles_m, i0 = (t % tiles_m) * kTile, i = i0 + ty;
    const In* ab = a + bi * a_step;
    const In* bb = b + bi * b_step;
    U acc = 0;
    for (int64_t p0 = 0; p0 < k; p0 += kTile) {
      const int64_t pa = p0 + tx, pb = p0 + ty;
      ta[ty][tx] = i < m && pa < k ? static_cast<U>(static_cast<Acc>(ab[i * k + pa])) : U{0};
      tb[ty][tx] = pb < k && j < n ? static_cast<U>(static_cast<Acc>(bb[pb * n + j])) : U{0};
      __syncthreads();
#pragma unroll
      for (int q = 0; q < kTile; ++q) acc += ta[ty][q] * tb[q][tx];
      __syncthreads();
    }
    if (i < m && j < n) {
      const int64_t at = (bi * m + i) * n + j;
      const U base = self != nullptr ? beta * static_cast<U>(self[at]) : U{0};
      c[at] = static_cast<Acc>(base + alpha * acc);
    }
  }
}

template <typename In, typename Acc>
void launch_int_gemm(const In* a, int64_t a_step, const In* b, int64_t b_step, Acc* c,
                     const Acc* self, int64_t batch, int64_t m, int64_t n, int64_t k, Acc alpha,
                     Acc beta, cudaStream_t stream, const char* fn) {
  if (batch == 0 || m == 0 || n == 0) return;
  const int64_t tiles_n = (n + kTile - 1) / kTile;
  AOTRT_CHECK(tiles_n <= int64_t{0x7fffffff}, kUnsupported, fn, ": ", n,
              " columns; the CUDA integer matmul serves at most 2^35");
  const int64_t tiles = batch * ((m + kTile - 1) / kTile);
  const dim3 grid(static_cast<unsigned>(tiles_n),
                  static_cast<unsigned>(std::min<int64_t>(tiles, 65535)));
  using U = std::make_unsigned_t<Acc>;
  int_gemm_kernel<In, Acc><<<grid, dim3(kTile, kTile), 0, stream>>>(
      a, a_step, b, b_step, c, self, batch, m, n, k, static_cast<U>(alpha), static_cast<U>(beta));
  AOTRT_CUDA_CHECK_LAUNCH();
}

// Note [Integer matmul on CUDA]; out [m, n] <- a [m, k] @ b [k, n], all dense.
void int_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  const OnDevice on(out.device());
  const int64_t m = a.sizes()[0], k = a.sizes()[1], n = b.sizes()[1];
  const char* fn = "int_mm kernel";
  auto run = [&](auto in_tag, auto acc_tag) {
    using In = decltype(in_tag);
    using Acc = decltype(acc_tag);
    launch_int_gemm<In, Acc>(static_cast<const In*>(a.data_ptr()), 0,
                             static_cast<const In*>(b.data_ptr()), 0,
                             static_cast<Acc*>(out.data_ptr()), nullptr, 1, m, n, k, Acc{1},
                             Acc{0}, on.stream, fn);
  };
  switch (a.dtype()) {
    case ScalarType::Int8: return run(int8_t{}, int32_t{});
    case ScalarType::Int32: return run(int32_t{}, int32_t{});
    case ScalarType::Int64: return run(int64_t{}, int64_t{});
    default: AOTRT_FAIL(kInternal, "int_mm kernel: dtype ", dtype_name(a.dtype()));
  }
}

// out [M, N] = (a [M, K] @ w [N, K]^T) * scales [N], float32, all dense.
__global__ void int8_weight_mm_kernel(const float* a, const int8_t* w, const float* scales,
                                      float* out, int64_t M, int64_t N, int64_t K) {
  AOTRT_GRID_STRIDE(e, M * N) {
    const int64_t i = e / N, j = e % N;
    const float* x = a + i * K;
    const int8_t* wr = w + j * K;
    float acc = 0;
    for (int64_t p = 0; p < K; ++p) {
      acc = __fadd_rn(acc, __fmul_rn(x[p], static_cast<float>(wr[p])));  // no FMA: the CPU's rounding
    }
    out[e] = __fmul_rn(acc, scales[j]);
  }
}

void int8_weight_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                    const TensorImpl& scales) {
  const OnDevice on(out.device());
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = w.sizes()[0];
  if (M * N == 0) return;
  int8_weight_mm_kernel<<<blocks_for(M * N), kThreads, 0, on.stream>>>(
      static_cast<const float*>(a.data_ptr()), static_cast<const int8_t*>(w.data_ptr()),
      static_cast<const float*>(scales.data_ptr()), static_cast<float*>(out.data_ptr()), M, N, K);
  AOTRT_CUDA_CHECK_LAUNCH();
}

// --- _weight_int8pack_mm in A's own dtype -------------------------------------------------

// 16 int8 weights (16-byte aligned) as floats: the byte, offset by 128, in
// the low mantissa bits of 2^23, minus 2^23 + 128 (exact).
__device__ __forceinline__ void int8x16(const int8_t* p, float (&w)[16]) {
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  const uint32_t words[4] = {v.x ^ 0x80808080u, v.y ^ 0x80808080u, v.z ^ 0x80808080u,
                             v.w ^ 0x80808080u};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      w[4 * i + j] =
          __uint_as_float(__byte_perm(words[i], 0x4B000000u, 0x7650u | static_cast<uint32_t>(j))) -
          8388736.0f;
    }
  }
}

// 16 consecutive values of A (16-byte aligned) as floats.
template <typename T>
__device__ __forceinline__ void load16(const T* p, float (&x)[16]) {
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(p) + i);
      x[4 * i] = v.x, x[4 * i + 1] = v.y, x[4 * i + 2] = v.z, x[4 * i + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(p) + i);
      const T* h = reinterpret_cast<const T*>(&v);
#pragma unroll
      for (int j = 0; j < 8; ++j) x[8 * i + j] = to_acc(h[j]);
    }
  }
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Note [Int8 weight matmul on CUDA]
// _weight_int8pack_mm reads A and the scales in their own dtype and writes
// the output in it (no float32 copies around the product): float32 sums of
// float(a) * float(w) (FMAs), times float(scale), one rounding. For M <= 16
// a GEMV: a warp takes two output columns and up to four rows, its lanes
// 16 k at a time (16-byte loads of the int8 rows and of A, several in
// flight), then a shuffle sum; the 4-row groups of larger M re-read the
// weights (mostly from L2). Past 16 rows a 64 x 64 tiled CUDA-core GEMM. The
// order of the float32 sums differs from ATen's (lanes over k, then a
// shuffle tree) and from the exact kernel above (k order, no FMA): the
// tests bound the difference by 2 K 2^-24 sum |a w| |scale| and the final
// rounding.
constexpr int kGemvWarps = 4, kGemvCols = 2, kGemvRows = 4;

template <typename T, bool kVec>
__global__ void __launch_bounds__(kGemvWarps * 32)
    int8_weight_gemv_kernel(const T* __restrict__ a, const int8_t* __restrict__ w,
                            const T* __restrict__ scales, T* __restrict__ out, int64_t M,
                            int64_t N, int64_t K) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp) * kGemvCols;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kGemvRows;
  const int rows = static_cast<int>(min(static_cast<int64_t>(kGemvRows), M - m0));
  if (n0 >= N) return;  // a whole warp: no barrier follows
  float acc[kGemvCols][kGemvRows] = {};
  if constexpr (kVec) {
#pragma unroll 2
    for (int64_t k = 16 * lane; k < K; k += 16 * 32) {
      float wv[kGemvCols][16];
#pragma unroll
      for (int c = 0; c < kGemvCols; ++c) {
        if (n0 + c < N) {
          int8x16(w + (n0 + c) * K + k, wv[c]);
        } else {
#pragma unroll
          for (int x = 0; x < 16; ++x) wv[c][x] = 0.0f;
        }
      }
#pragma unroll
      for (int r = 0; r < kGemvRows; ++r) {
        if (r >= rows) break;
        float av[16];
        load16(a + (m0 + r) * K + k, av);
#pragma unroll
        for (int c = 0; c < kGemvCols; ++c) {
#pragma unroll
          for (int x = 0; x < 16; ++x) acc[c][r] = fmaf(av[x], wv[c][x], acc[c][r]);
        }
      }
    }
  } else {
    for (int64_t k = lane; k < K; k += 32) {
#pragma unroll
      for (int r = 0; r < kGemvRows; ++r) {
        if (r >= rows) break;
        const float av = to_acc(a[(m0 + r) * K + k]);
#pragma unroll
        for (int c = 0; c < kGemvCols; ++c) {
          if (n0 + c < N) acc[c][r] = fmaf(av, static_cast<float>(w[(n0 + c) * K + k]), acc[c][r]);
        }
      }
    }
  }
#pragma unroll
  for (int c = 0; c < kGemvCols; ++c) {
#pragma unroll
    for (int r = 0; r < kGemvRows; ++r) {
      const float s = warp_sum(acc[c][r]);
      if (lane == 0 && r < rows && n0 + c < N) {
        out[(m0 + r) * N + n0 + c] = from_acc<T>(s * to_acc(scales[n0 + c]));
      }
    }
  }
}

constexpr int kTiled = 64, kTiledK = 16;

// out [M, N] = (a @ w^T) * scales: a 64 x 64 tile a block of 16 x 16 threads, 4 x 4 each.
template <typename T>
__global__ void __launch_bounds__(256)
    int8_weight_tiled_kernel(const T* __restrict__ a, const int8_t* __restrict__ w,
                             const T* __restrict__ scales, T* __restrict__ out, int64_t M,
                             int64_t N, int64_t K) {
  __shared__ __align__(16) float as[kTiledK][kTiled + 4];
  __shared__ __align__(16) float ws[kTiledK][kTiled + 4];
  const int tx = static_cast<int>(threadIdx.x) % 16, ty = static_cast<int>(threadIdx.x) / 16;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTiled;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTiled;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < K; k0 += kTiledK) {
    // 64 rows x 16 k of each: thread t loads row t / 4, k (t % 4) * 4 .. + 3.
    const int r = tid / 4, kq = (tid % 4) * 4;
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int64_t k = k0 + kq + x;
      as[kq + x][r] = m0 + r < M && k < K ? to_acc(a[(m0 + r) * K + k]) : 0.0f;
      ws[kq + x][r] = n0 + r < N && k < K ? static_cast<float>(w[(n0 + r) * K + k]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTiledK; ++kk) {
      const float4 av = *reinterpret_cast<const float4*>(&as[kk][ty * 4]);
      const float4 wv = *reinterpret_cast<const float4*>(&ws[kk][tx * 4]);
      const float ar[4] = {av.x, av.y, av.z, av.w}, wr[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(ar[i], wr[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t row = m0 + ty * 4 + i;
    if (row >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t col = n0 + tx * 4 + j;
      if (col < N) out[row * N + col] = from_acc<T>(acc[i][j] * to_acc(scales[col]));
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

void int8_weight_mm_native(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                           const TensorImpl& scales) {
  const OnDevice on(out.device());
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = w.sizes()[0];
  if (M * N == 0) return;
  const char* fn = "int8 weight matmul kernel";
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const auto* ap = static_cast<const T*>(a.data_ptr());
    const auto* wp = static_cast<const int8_t*>(w.data_ptr());
    const auto* sp = static_cast<const T*>(scales.data_ptr());
    auto* op = static_cast<T*>(out.data_ptr());
    if (M <= 16) {
      const int64_t bx = (N + kGemvWarps * kGemvCols - 1) / (kGemvWarps * kGemvCols);
      const dim3 grid(static_cast<unsigned>(bx),
                      static_cast<unsigned>((M + kGemvRows - 1) / kGemvRows));
      AOTRT_CHECK(bx <= 0x7fffffff, kUnsupported, fn, ": ", N, " columns");
      const bool vec = K % 16 == 0 && aligned16(ap) && aligned16(wp);
      auto kernel = vec ? int8_weight_gemv_kernel<T, true> : int8_weight_gemv_kernel<T, false>;
      kernel<<<grid, kGemvWarps * 32, 0, on.stream>>>(ap, wp, sp, op, M, N, K);
    } else {
      const int64_t bx = (N + kTiled - 1) / kTiled, by = (M + kTiled - 1) / kTiled;
      AOTRT_CHECK(bx <= 0x7fffffff && by <= 65535, kUnsupported, fn, ": ", M, " x ", N);
      const dim3 grid(static_cast<unsigned>(bx), static_cast<unsigned>(by));
      int8_weight_tiled_kernel<T><<<grid, 256, 0, on.stream>>>(ap, wp, sp, op, M, N, K);
    }
    AOTRT_CUDA_CHECK_LAUNCH();
  };
  switch (a.dtype()) {
    case ScalarType::Float32: return run(float{});
    case ScalarType::BFloat16: return run(__nv_bfloat16{});
    case ScalarType::Float16: return run(__half{});
    default: AOTRT_FAIL(kInternal, fn, ": dtype ", dtype_name(a.dtype()));
  }
}

// --- _int_mm on the operands as given ------------------------------------------------------

// Note [Int8 matmul on CUDA]
// _int_mm_out (int8 x int8 -> int32) reads its operands in place: rows past
// 16 go to cuBLASLt's integer GEMM (int8_mm_lt in matmul.cpp, planned as its
// other GEMMs are), a few rows (decode; ATen refuses m <= 16) to a DP4A
// GEMV when mat2 is a column-major view (a [n, k] weight transposed, as
// linears pass it): a warp takes two columns and up to four rows, its
// lanes 16 k at a time (16-byte loads, four dp4a each), then a shuffle sum.
// Integer sums wrap modulo 2^32 in any order, so both give the exact
// kernel's result bit for bit. What neither serves runs on the exact kernel.
template <bool kVec>
__global__ void __launch_bounds__(kGemvWarps * 32)
    int8_gemv_kernel(const int8_t* __restrict__ a, int64_t lda, const int8_t* __restrict__ w,
                     int64_t ldw, int32_t* __restrict__ out, int64_t out_row, int64_t out_col,
                     int64_t M, int64_t N, int64_t K) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp) * kGemvCols;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kGemvRows;
  const int rows = static_cast<int>(min(static_cast<int64_t>(kGemvRows), M - m0));
  if (n0 >= N) return;
  uint32_t acc[kGemvCols][kGemvRows] = {};
  if constexpr (kVec) {
#pragma unroll 2
    for (int64_t k = 16 * lane; k < K; k += 16 * 32) {
      uint4 wv[kGemvCols];
#pragma unroll
      for (int c = 0; c < kGemvCols; ++c) {
        wv[c] = n0 + c < N ? __ldg(reinterpret_cast<const uint4*>(w + (n0 + c) * ldw + k))
                           : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int r = 0; r < kGemvRows; ++r) {
        if (r >= rows) break;
        const uint4 av = __ldg(reinterpret_cast<const uint4*>(a + (m0 + r) * lda + k));
#pragma unroll
        for (int c = 0; c < kGemvCols; ++c) {
          int s = static_cast<int>(acc[c][r]);
          s = __dp4a(static_cast<int>(av.x), static_cast<int>(wv[c].x), s);
          s = __dp4a(static_cast<int>(av.y), static_cast<int>(wv[c].y), s);
          s = __dp4a(static_cast<int>(av.z), static_cast<int>(wv[c].z), s);
          s = __dp4a(static_cast<int>(av.w), static_cast<int>(wv[c].w), s);
          acc[c][r] = static_cast<uint32_t>(s);
        }
      }
    }
  } else {
    for (int64_t k = lane; k < K; k += 32) {
#pragma unroll
      for (int r = 0; r < kGemvRows; ++r) {
        if (r >= rows) break;
        const auto av = static_cast<uint32_t>(static_cast<int32_t>(a[(m0 + r) * lda + k]));
#pragma unroll
        for (int c = 0; c < kGemvCols; ++c) {
          if (n0 + c < N) {
            acc[c][r] += av * static_cast<uint32_t>(static_cast<int32_t>(w[(n0 + c) * ldw + k]));
          }
        }
      }
    }
  }
#pragma unroll
  for (int c = 0; c < kGemvCols; ++c) {
#pragma unroll
    for (int r = 0; r < kGemvRows; ++r) {
      uint32_t s = acc[c][r];
#pragma unroll
      for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0 && r < rows && n0 + c < N) {
        out[(m0 + r) * out_row + (n0 + c) * out_col] = static_cast<int32_t>(s);
      }
    }
  }
}

bool int_mm_views(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2) {
  const int64_t m = self.sizes()[0], k = self.sizes()[1], n = mat2.sizes()[1];
  if (m == 0 || n == 0 || k == 0) return false;
  const char* fn = "_int_mm";
  if (m > 16) return int8_mm_lt(out, self, mat2, fn);
  // self: rows of unit stride; mat2: a column-major view (mat2[:, j] contiguous).
  const auto ss = self.strides(), ws = mat2.strides();
  if ((k > 1 && (ss[1] != 1 || ws[0] != 1)) || m * k >= (int64_t{1} << 40)) return false;
  const OnDevice on(out.device());
  const auto* ap = static_cast<const int8_t*>(self.data_ptr());
  const auto* wp = static_cast<const int8_t*>(mat2.data_ptr());
  auto* op = static_cast<int32_t*>(out.data_ptr());
  const int64_t lda = m > 1 ? ss[0] : k, ldw = n > 1 ? ws[1] : k;
  const int64_t bx = (n + kGemvWarps * kGemvCols - 1) / (kGemvWarps * kGemvCols);
  if (bx > 0x7fffffff) return false;
  const dim3 grid(static_cast<unsigned>(bx),
                  static_cast<unsigned>((m + kGemvRows - 1) / kGemvRows));
  const bool vec = k % 16 == 0 && lda % 16 == 0 && ldw % 16 == 0 && aligned16(ap) && aligned16(wp);
  const int64_t out_row = out.strides()[0], out_col = out.strides()[1];
  if (vec) {
    int8_gemv_kernel<true><<<grid, kGemvWarps * 32, 0, on.stream>>>(ap, lda, wp, ldw, op, out_row,
                                                                   out_col, m, n, k);
  } else {
    int8_gemv_kernel<false><<<grid, kGemvWarps * 32, 0, on.stream>>>(ap, lda, wp, ldw, op, out_row,
                                                                    out_col, m, n, k);
  }
  AOTRT_CUDA_CHECK_LAUNCH();
  return true;
}

// The CPU's int4 layouts and the dynamic-quant weights: left null (ATen reads
// those on the CPU only, and the _dyn_quant ops have no CUDA entry in torch).
constexpr IntMatmulKernels kIntMatmul{.int_mm = int_mm,
                                      .int8_weight_mm = int8_weight_mm,
                                      .int8_weight_mm_native = int8_weight_mm_native,
                                      .int_mm_views = int_mm_views,
                                      .int4_weight_mm = nullptr,
                                      .int4_pack = nullptr,
                                      .dyn_quant_mm = nullptr,
                                      .int4_tinygemm_mm = int4_tinygemm_mm};
AOTRT_REGISTER_KERNELS(IntMatmulKernels, cuda, kIntMatmul);

// A dense row-major int64 copy of v.
struct Packed64 {
  DeviceBuffer buffer;
  std::vector<int64_t> strides;
  Packed64(const StridedView& v, bool read, cudaStream_t stream)
      : buffer(v.device.index, static_cast<size_t>(std::max<int64_t>(v.numel(), 1)) * 8) {
    std::vector<int64_t> sizes(v.sizes.begin(), v.sizes.end());
    strides = dense_strides(sizes);
    if (read && v.numel() > 0) copy_device(view(v), v, stream);
  }
  StridedView view(const StridedView& like) const {
    return StridedView{static_cast<char*>(buffer.data()), like.sizes, strides, ScalarType::Int64,
                       like.device};
  }
  const int64_t* data() const { return static_cast<const int64_t*>(buffer.data()); }
  int64_t* data() { return static_cast<int64_t*>(buffer.data()); }
};

// beta and alpha as ATen's Scalar casts them (Note [Integer matmul on the CPU]).
int64_t as_integer(double v, const char* name, const char* fn) {
  AOTRT_CHECK(v >= -0x1p63 && v < 0x1p63, kInvalidArgument, fn, ": ", name, " ", v,
              " cannot be converted to an integer without overflow");
  return static_cast<int64_t>(v);
}

}  // namespace

// Note [Integer matmul on CUDA]: as the CPU's, the operands packed into
// row-major int64, the product in uint64, the copy into out truncating to
// its dtype.
void integer_matmul(const StridedView& out, const StridedView* self, const StridedView& x,
                    const StridedView& y, double beta, double alpha, const char* fn) {
  const int nd = static_cast<int>(out.dim());
  const int64_t batch = nd == 3 ? out.sizes[0] : 1;
  const int64_t m = out.sizes[nd - 2], n = out.sizes[nd - 1], k = x.sizes[nd - 1];
  if (batch == 0 || m == 0 || n == 0) return;
  const int64_t beta_int = self != nullptr ? as_integer(beta, "beta", fn) : 0;
  const int64_t alpha_int = as_integer(alpha, "alpha", fn);
  const OnDevice on(out.device);
  const Packed64 a(x, true, on.stream), b(y, true, on.stream);
  Packed64 c(out, false, on.stream);
  std::optional<Packed64> s;
  if (self != nullptr) s.emplace(*self, true, on.stream);
  launch_int_gemm<int64_t, int64_t>(a.data(), m * k, b.data(), k * n, c.data(),
                                    s ? s->data() : nullptr, batch, m, n, k, alpha_int, beta_int,
                                    on.stream, fn);
  copy_device(out, c.view(out), on.stream);
}

}  // namespace aotrt::cuda
