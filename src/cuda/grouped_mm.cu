// The grouped matmuls on CUDA, offs read on the device: _scaled_grouped_mm
// (Note [Scaled grouped matmul] in ops/matmul.h: float8_e4m3fn groups with
// rowwise scales, bfloat16 out) and _grouped_mm (Note [Grouped matmul]:
// bfloat16, float16 or float32 groups, out of the operands' dtype, no scales).
//
// Note [Grouped tiles on the device]
// A block computes a 16 x 16 tile of the output through 32-deep k-steps, the
// operands' tiles widened to float in shared memory, each thread a float32
// sum in k order (the CPU kernels' order). No group size is read on the
// host: each block finds its tile's groups from offs itself. For 2d x 2d
// and 3d x 3d the group is the grid's z index (the k range of 2d x 2d from
// offs); for 2d x 3d (3d x 2d) the block walks the groups and runs the
// k-loop once for each group whose row (column) range meets its tile, every
// thread accumulating only when its own row (column) is in the group. A
// tile inside one expert's rows, the common case, takes one pass; a tile on
// a boundary one per group it touches. The walk reads offs (the same address
// for the whole block) from global memory. Nothing is allocated and nothing
// waits: the call can be captured in a CUDA graph. One template serves both
// ops: the operand type is widened to float on the load, the sum is scaled
// (the scaled op's epilogue, (acc * scale_a) * scale_b) or not, and rounded
// once to the output type on the store. Correct first; a tensor-core kernel
// would be the faster one, checked against this.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "cuda/library_ops.h"
#include "cuda/runtime.h"
#include "ops/grouped_math.h"

namespace aotrt::cuda {
namespace {
using ops::grouped_math::GroupedGemm;
using ops::grouped_math::group_range;

constexpr int kTile = 16;
constexpr int kStep = 32;

// The operand types, widened to float on the load (uint8_t: float8_e4m3fn bits).
__device__ __forceinline__ float widen(uint8_t v) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(v, __NV_E4M3)));
}
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(float v) { return v; }

// The output types, one rounding of the float result.
template <typename Out>
__device__ __forceinline__ Out narrow(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ float narrow<float>(float v) {
  return v;
}

// sa and sb null: no scales (_grouped_mm).
template <typename In, typename Out>
struct Operands {
  const In* a;
  const In* b;
  const float* sa;
  const float* sb;
  const int32_t* offs;
  Out* out;
};

// The tile's sum over k in [k0, k1) for group g, into acc when `mine`. Every
// thread of the block calls it (it has barriers).
template <typename In, typename Out>
__device__ void tile_sum(const GroupedGemm& d, const Operands<In, Out>& p, int64_t g, int64_t m0,
                         int64_t n0, int64_t k0, int64_t k1, bool mine, float& acc,
                         float (&ta)[kTile][kStep + 1], float (&tb)[kStep][kTile + 1]) {
  const int tx = threadIdx.x, ty = threadIdx.y, flat = ty * kTile + tx;
  for (int64_t ks = k0; ks < k1; ks += kStep) {
    for (int e = flat; e < kTile * kStep; e += kTile * kTile) {
      const int r = e / kStep, c = e % kStep;
      const int64_t i = m0 + r, k = ks + c;
      ta[r][c] = i < d.M && k < k1 ? widen(p.a[g * d.a_g + i * d.a_m + k * d.a_k]) : 0.0f;
    }
    for (int e = flat; e < kStep * kTile; e += kTile * kTile) {
      const int r = e / kTile, c = e % kTile;
      const int64_t k = ks + r, j = n0 + c;
      tb[r][c] = j < d.N && k < k1 ? widen(p.b[g * d.b_g + k * d.b_k + j * d.b_n]) : 0.0f;
    }
    __syncthreads();
    if (mine) {
#pragma unroll
      for (int q = 0; q < kStep; ++q) acc = fmaf(ta[ty][q], tb[q][tx], acc);
    }
    __syncthreads();
  }
}

template <typename In, typename Out>
__device__ __forceinline__ void store(const GroupedGemm& d, const Operands<In, Out>& p, int64_t g,
                                      int64_t i, int64_t j, float acc) {
  const float v = p.sa == nullptr
                      ? acc
                      : (acc * p.sa[g * d.sa_g + i * d.sa_m]) * p.sb[g * d.sb_g + j * d.sb_n];
  p.out[g * d.o_g + i * d.o_m + j * d.o_n] = narrow<Out>(v);
}

template <typename In, typename Out>
__global__ void grouped_kernel(GroupedGemm d, Operands<In, Out> p) {
  __shared__ float ta[kTile][kStep + 1];
  __shared__ float tb[kStep][kTile + 1];
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTile, j = n0 + threadIdx.x;
  const int64_t tiles_m = (d.M + kTile - 1) / kTile;
  using namespace ops::grouped_math;
  // Every thread of a block runs the same tiles and groups: the barriers are uniform.
  for (int64_t t = blockIdx.y; t < tiles_m; t += gridDim.y) {
    const int64_t m0 = t * kTile, i = m0 + threadIdx.y;
    const bool inside = i < d.M && j < d.N;
    if (d.mode == kK || d.mode == kBatch) {
      for (int64_t g = blockIdx.z; g < d.groups; g += gridDim.z) {
        int64_t k0 = 0, k1 = d.K;
        if (d.mode == kK) group_range(p.offs, g, d.K, k0, k1);
        if (k1 <= k0) continue;  // an empty k range: out[g] stays 0
        float acc = 0.0f;
        tile_sum(d, p, g, m0, n0, k0, k1, true, acc, ta, tb);
        if (inside) store(d, p, g, i, j, acc);
      }
      continue;
    }
    const bool rows = d.mode == kRows;
    const int64_t lo = rows ? m0 : n0, extent = rows ? d.M : d.N;
    const int64_t hi = lo + kTile < extent ? lo + kTile : extent, own = rows ? i : j;
    for (int64_t g = 0; g < d.groups; ++g) {
      int64_t begin = 0, end = 0;
      group_range(p.offs, g, extent, begin, end);
      if (end <= lo || begin >= hi) continue;  // empty, or misses the tile
      const bool mine = inside && own >= begin && own < end;
      float acc = 0.0f;
      tile_sum(d, p, g, m0, n0, 0, d.K, mine, acc, ta, tb);
      if (mine) store(d, p, g, i, j, acc);
    }
  }
}

// Launches the kernel over out (zeroed by the caller); d describes the product.
template <typename In, typename Out>
void launch(const GroupedGemm& d, const TensorImpl& out, const TensorImpl& mat_a,
            const TensorImpl& mat_b, const TensorImpl* scale_a, const TensorImpl* scale_b,
            const TensorImpl* offs, const char* fn) {
  using namespace ops::grouped_math;
  if (d.M == 0 || d.N == 0 || d.groups == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const Operands<In, Out> p{
      static_cast<const In*>(mat_a.data_ptr()), static_cast<const In*>(mat_b.data_ptr()),
      scale_a != nullptr ? static_cast<const float*>(scale_a->data_ptr()) : nullptr,
      scale_b != nullptr ? static_cast<const float*>(scale_b->data_ptr()) : nullptr,
      offs != nullptr ? static_cast<const int32_t*>(offs->data_ptr()) : nullptr,  // dense
      static_cast<Out*>(out.data_ptr())};
  const int64_t tiles_n = (d.N + kTile - 1) / kTile, tiles_m = (d.M + kTile - 1) / kTile;
  AOTRT_CHECK(tiles_n <= int64_t{0x7fffffff}, kUnsupported, fn, ": ", d.N,
              " columns; the grouped matmul serves at most 2^35");
  const bool batched = d.mode == kK || d.mode == kBatch;
  const dim3 grid(static_cast<unsigned>(tiles_n),
                  static_cast<unsigned>(std::min<int64_t>(tiles_m, 65535)),
                  batched ? static_cast<unsigned>(std::min<int64_t>(d.groups, 65535)) : 1u);
  grouped_kernel<In, Out><<<grid, dim3(kTile, kTile), 0, stream>>>(d, p);
  AOTRT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void scaled_grouped_mm(const TensorImpl& out, const TensorImpl& mat_a, const TensorImpl& mat_b,
                       const TensorImpl& scale_a, const TensorImpl& scale_b,
                       const TensorImpl* offs, const char* fn) {
  const int64_t groups = out.dim() == 3 ? out.sizes()[0] : offs->sizes()[0];
  launch<uint8_t, __nv_bfloat16>(
      ops::grouped_math::describe(out, mat_a, mat_b, scale_a, scale_b, groups), out, mat_a, mat_b,
      &scale_a, &scale_b, offs, fn);
}

void grouped_mm(const TensorImpl& out, const TensorImpl& mat_a, const TensorImpl& mat_b,
                const TensorImpl* offs, const char* fn) {
  const int64_t groups = offs != nullptr ? offs->sizes()[0] : out.sizes()[0];
  const GroupedGemm d = ops::grouped_math::describe(out, mat_a, mat_b, groups);
  switch (out.dtype()) {
    case ScalarType::BFloat16:
      return launch<__nv_bfloat16, __nv_bfloat16>(d, out, mat_a, mat_b, nullptr, nullptr, offs, fn);
    case ScalarType::Float16:
      return launch<__half, __half>(d, out, mat_a, mat_b, nullptr, nullptr, offs, fn);
    case ScalarType::Float32:
      return launch<float, float>(d, out, mat_a, mat_b, nullptr, nullptr, offs, fn);
    default:
      AOTRT_FAIL(kInvalidArgument, fn,  // ops/matmul.cpp refused it before: not reached
                 ": Expected mat_a to be Float32, BFloat16 or Float16 matrix, got dtype code ",
                 static_cast<int>(out.dtype()));
  }
}

}  // namespace aotrt::cuda
