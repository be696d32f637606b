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
// tiles of A and B in shared memory. _int_mm does not go through cuBLASLt's
// int8 GEMM yet: its layouts and alignment (ATen refuses m <= 16 and k or n
// not a multiple of 8) need this kernel as the fallback anyway; a cuBLASLt
// path for the shapes it serves is the faster one to add, checked against
// this kernel.
// _weight_int8pack_mm: one thread per output, a float32 sum over k in the
// CPU's order, times the channel's scale.
// _weight_int4pack_mm (Note [Int4 tinygemm layout]): a block computes a
// 16 x 16 tile of the output through 32-deep k-steps, A's rows and the
// dequantized bfloat16 weights of the step in shared memory (each weight
// dequantized once per block), each thread a float32 sum in k order (the CPU
// kernel's order: the two agree bit for bit). Not tinygemm's tensor-core
// kernel: correct first, a faster one checked against this.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "cuda/library_ops.h"
#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/int4_tinygemm.h"
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

constexpr int kInt4Tk = 32;  // a k-step: within one quantization group (groups are >= 32)

__global__ void int4_tinygemm_kernel(const __nv_bfloat16* a, const uint32_t* b,
                                     const __nv_bfloat16* sz, __nv_bfloat16* out, int64_t M,
                                     int64_t N, int64_t K, int64_t outer, int inner,
                                     int64_t group) {
  __shared__ float ta[kTile][kInt4Tk + 1];  // [m][k]
  __shared__ float tw[kInt4Tk][kTile + 1];  // [k][n]
  const int tx = threadIdx.x, ty = threadIdx.y, flat = ty * kTile + tx;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTile, j = n0 + tx;
  const int64_t tiles_m = (M + kTile - 1) / kTile;
  // Every thread of a block runs the same tiles and steps, so the barriers are uniform.
  for (int64_t t = blockIdx.y; t < tiles_m; t += gridDim.y) {
    const int64_t m0 = t * kTile, i = m0 + ty;
    float acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += kInt4Tk) {  // K is a multiple of 32
      for (int e = flat; e < kTile * kInt4Tk; e += kTile * kTile) {
        const int r = e / kInt4Tk, c = e % kInt4Tk;
        ta[r][c] = m0 + r < M ? __bfloat162float(a[(m0 + r) * K + k0 + c]) : 0.0f;
      }
      for (int e = flat; e < kInt4Tk * kTile; e += kTile * kTile) {
        const int r = e / kTile, c = e % kTile;
        const int64_t n = n0 + c, k = k0 + r;
        float w = 0.0f;
        if (n < N) {
          const auto at = ops::int4_tinygemm::nibble_of(n, k, outer, inner);
          const int q = static_cast<int>((b[at.word] >> at.shift) & 0xFu);
          const __nv_bfloat16* g = sz + ((k / group) * N + n) * 2;
          const float v = ops::int4_tinygemm::dequantize_round_odd(q, __bfloat162float(g[0]),
                                                                   __bfloat162float(g[1]));
          w = __bfloat162float(__float2bfloat16_rn(v));
        }
        tw[r][c] = w;
      }
      __syncthreads();
#pragma unroll
      for (int q = 0; q < kInt4Tk; ++q) acc = fmaf(ta[ty][q], tw[q][tx], acc);
      __syncthreads();
    }
    if (i < M && j < N) out[i * N + j] = __float2bfloat16_rn(acc);
  }
}

// Note [Int4 tinygemm layout]; out [M, N], a [M, K], b and scale_zeros dense.
void int4_tinygemm_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b,
                      int64_t group, const TensorImpl& scale_zeros, const char* fn) {
  const OnDevice on(out.device());
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = out.sizes()[1];
  if (M == 0 || N == 0) return;
  const int64_t tiles_n = (N + kTile - 1) / kTile, tiles_m = (M + kTile - 1) / kTile;
  AOTRT_CHECK(tiles_n <= int64_t{0x7fffffff}, kUnsupported, fn, ": ", N,
              " columns; the CUDA int4 matmul serves at most 2^35");
  const dim3 grid(static_cast<unsigned>(tiles_n),
                  static_cast<unsigned>(std::min<int64_t>(tiles_m, 65535)));
  int4_tinygemm_kernel<<<grid, dim3(kTile, kTile), 0, on.stream>>>(
      static_cast<const __nv_bfloat16*>(a.data_ptr()), static_cast<const uint32_t*>(b.data_ptr()),
      static_cast<const __nv_bfloat16*>(scale_zeros.data_ptr()),
      static_cast<__nv_bfloat16*>(out.data_ptr()), M, N, K, b.sizes()[1],
      static_cast<int>(b.sizes()[3] * 2), group);
  AOTRT_CUDA_CHECK_LAUNCH();
}

// The CPU's int4 layouts and the dynamic-quant weights: left null (ATen reads
// those on the CPU only, and the _dyn_quant ops have no CUDA entry in torch).
constexpr IntMatmulKernels kIntMatmul{.int_mm = int_mm,
                                      .int8_weight_mm = int8_weight_mm,
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
