// The matmuls of a decode step: a few activation rows against a weight read once
// (matmul.cpp offers it every float16/bfloat16 mm and bias addmm of at most 8 rows first).
//
// Note [Decode GEMV]
// At M = 1 ... 8 rows a linear layer is a matrix-vector product: its time is the weight's
// bytes over the memory bandwidth, and the kernel's only job is to keep enough loads in
// flight. cuBLASLt's heuristic picks tensor-core GEMM tiles for these shapes (M padded to
// the tile, few blocks in flight per SM at small N); on the H200 a 1B-shape decode step
// ran at 24% of the bandwidth through them. Here:
// - The weight is [N, K] with K contiguous (the nn.Linear layout, which the mm sees as
//   the [K, N] transposed view); each lane reads 16 bytes of a weight row at a time,
//   four such loads in flight before their FMAs, and multiplies them with the M rows of
//   x (16-byte loads of x, which every warp of the block shares through L1).
// - A column of the output is one warp's, or 2, 4 or 8 warps' of one block when N alone
//   does not give the device three blocks an SM (small N, long K: the warps split K and
//   add their sums through shared memory). No second kernel and no atomics: the result
//   does not depend on timing.
// - Products accumulate in float32 and the output is rounded once, after alpha and the
//   bias (a [N] vector, added in float32 as cuBLASLt's bias epilogue does). The order of
//   the sum differs from cuBLAS's, within the float32-accumulation tolerance of any GEMM.
// - Served: float16 and bfloat16, M <= 8, K a multiple of 8, x's rows and the weight's
//   columns of unit stride with 16-byte aligned starts and leading dimensions, any
//   output strides. Anything else goes to cuBLASLt as before.
// On by default; AOTRT_DECODE_GEMV=0 (read once) sends these matmuls to cuBLASLt again.
// With AOTRT_EARLY_START=1 it starts while the kernel before it finishes (Note [Early start]).
// Measured on an H200 (bench/results/decode-h200-2026-12-07.md): the 1B-shape bf16 decode
// step, cache 1024, went from 1.982 ms through cuBLASLt's tiles to 1.722 ms (torch.compile:
// 1.708), with the same greedy tokens.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "cuda/kernel_switch.h"
#include "cuda/library_ops.h"
#include "cuda/ops/launch.cuh"
#include "cuda/runtime.h"

namespace aotrt::cuda {
namespace {

constexpr int kWarps = 8;     // a block's warps
constexpr int kInFlight = 4;  // 16-byte weight loads a lane issues before using them

struct GemvParams {
  const void* x;
  const void* w;
  const void* bias;
  void* out;
  int64_t ldx, ldw, out_row_stride, out_col_stride;
  int64_t N, K;
  float alpha;
};

template <typename T>
__device__ __forceinline__ float2 to_float2(uint32_t bits) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v;
    std::memcpy(&v, &bits, 4);
    return __bfloat1622float2(v);
  } else {
    __half2 v;
    std::memcpy(&v, &bits, 4);
    return __half22float2(v);
  }
}

// acc += dot(8 elements of w, 8 elements of x).
template <typename T>
__device__ __forceinline__ void dot8(float& acc, const uint4& w, const uint4& x) {
  const uint32_t wv[4] = {w.x, w.y, w.z, w.w}, xv[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = to_float2<T>(wv[i]), b = to_float2<T>(xv[i]);
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
}

// Block: kWarps warps, kWarps / split columns; the `split` warps of a column deal out its
// K / 8 vectors round robin.
template <typename T, int kRows>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(GemvParams p, int split) {
  __shared__ float partial[kWarps][kRows];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int cols_per_block = kWarps / split;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * cols_per_block + warp / split;
  const int part = warp % split;
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
  const uint4* w =
      reinterpret_cast<const uint4*>(static_cast<const T*>(p.w) + (n < p.N ? n : 0) * p.ldw);
  const int64_t vectors = p.K / 8, step = static_cast<int64_t>(split) * 32;
  int64_t v = static_cast<int64_t>(part) * 32 + lane;
  // A round: kInFlight weight vectors a lane, loaded before they are used (read once). The
  // first round loads before x may be read (Note [Early start]: x is the previous kernel's
  // output); each next one as the current one is used.
  uint4 wv[kInFlight];
  bool round = n < p.N && v + (kInFlight - 1) * step < vectors;
  auto load_round = [&] {
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) wv[j] = __ldcs(w + v + j * step);
  };
  if (round) load_round();
  launch::grid_dependency_wait();
  if (n < p.N) {
    while (round) {
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const uint4* x = reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + r * p.ldx);
          dot8<T>(acc[r], wv[j], __ldg(x + v + j * step));
        }
      }
      v += kInFlight * step;
      round = v + (kInFlight - 1) * step < vectors;
      if (round) load_round();
    }
    for (; v < vectors; v += step) {
      const uint4 wt = __ldcs(w + v);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const uint4* x = reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + r * p.ldx);
        dot8<T>(acc[r], wt, __ldg(x + v));
      }
    }
  }
  launch::allow_early_start();  // every weight of this block is read
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
  }
  if (split > 1) {
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) partial[warp][r] = acc[r];
    }
    __syncthreads();
    if (part != 0) return;
    for (int s = 1; s < split; ++s) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) acc[r] += partial[warp + s][r];
    }
  }
  if (n >= p.N || lane >= kRows) return;
  // Lane r writes row r (registers indexed by a constant: no local-memory array).
  float value = acc[0];
#pragma unroll
  for (int r = 1; r < kRows; ++r) value = lane == r ? acc[r] : value;
  value *= p.alpha;
  if (p.bias != nullptr) value += static_cast<float>(static_cast<const T*>(p.bias)[n]);
  static_cast<T*>(p.out)[lane * p.out_row_stride + n * p.out_col_stride] = static_cast<T>(value);
}

KernelSwitch g_gemv{"AOTRT_DECODE_GEMV", SwitchMode::kOn};

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

template <typename T, int kRows>
void launch(const GemvParams& p, int device, cudaStream_t stream) {
  // Warps per column: enough blocks for three an SM, as long as each warp keeps a full
  // round of loads (kInFlight vectors a lane).
  const launch::DeviceFacts facts = launch::device_facts(device);
  const int64_t want_blocks = 3 * int64_t{facts.sms};
  int split = 1;
  while (split < kWarps && (p.N * split + kWarps - 1) / kWarps < want_blocks &&
         p.K / 8 >= int64_t{2 * split} * 32 * kInFlight) {
    split *= 2;
  }
  const int64_t cols_per_block = kWarps / split;
  const int64_t blocks = (p.N + cols_per_block - 1) / cols_per_block;
  launch::launch_with_clusters(gemv_kernel<T, kRows>, dim3(static_cast<unsigned>(blocks)),
                               kWarps * 32, 0, dim3(1, 1, 1), early_start_enabled(),
                               facts.capability, stream, p, split);
}

template <typename T>
void launch_rows(const GemvParams& p, int64_t rows, int device, cudaStream_t stream) {
  switch (rows) {
    case 1: launch<T, 1>(p, device, stream); break;
    case 2: launch<T, 2>(p, device, stream); break;
    case 3: launch<T, 3>(p, device, stream); break;
    case 4: launch<T, 4>(p, device, stream); break;
    case 5: launch<T, 5>(p, device, stream); break;
    case 6: launch<T, 6>(p, device, stream); break;
    case 7: launch<T, 7>(p, device, stream); break;
    default: launch<T, 8>(p, device, stream); break;
  }
}

}  // namespace

bool decode_gemv(const DecodeGemvCall& c, int device, cudaStream_t stream) {
  if (!g_gemv.enabled()) return false;
  if (c.dtype != ScalarType::BFloat16 && c.dtype != ScalarType::Float16) return false;
  if (c.M < 1 || c.M > kMaxDecodeGemvRows || c.N < 1 || c.K < 8 || c.K % 8 != 0) return false;
  if (c.N > INT32_MAX) return false;  // the grid's x dimension
  if (!aligned16(c.x) || !aligned16(c.w) || (c.M > 1 && c.ldx % 8 != 0) ||
      (c.N > 1 && c.ldw % 8 != 0) || (c.M > 1 && c.ldx < c.K) || (c.N > 1 && c.ldw < c.K)) {
    return false;
  }
  GemvParams p{c.x, c.w, c.bias, c.out, c.ldx, c.ldw, c.out_row_stride, c.out_col_stride,
               c.N, c.K, c.alpha};
  if (c.dtype == ScalarType::BFloat16) {
    launch_rows<__nv_bfloat16>(p, c.M, device, stream);
  } else {
    launch_rows<__half>(p, c.M, device, stream);
  }
  g_gemv.served();
  return true;
}

void set_decode_gemv_enabled(bool enabled) {
  g_gemv.set(enabled ? SwitchMode::kOn : SwitchMode::kOff);
}
int64_t decode_gemv_calls() { return g_gemv.calls(); }

}  // namespace aotrt::cuda
