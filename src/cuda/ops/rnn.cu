// CUDA kernels of the rnn family (ops/rnn.h): the fused LSTM and GRU cells
// (Note [Fused RNN cells]), one thread per (batch row, hidden unit) reading
// the gates, biases and previous state through their strides and writing the
// dense outputs, in ATen's accumulation type through rnn_math.h (the CPU
// kernel's arithmetic). The LSTM layer's cell (mkldnn_rnn_layer, a CPU op)
// has no CUDA kernel.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/rnn.h"
#include "ops/rnn_math.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::RnnKernels;

// A 2-d view's base and strides in elements; a 1-d view's stride in s1.
struct Mat {
  const char* data = nullptr;
  int64_t s0 = 0, s1 = 0;
};

Mat mat(const StridedView& v) {
  if (v.data == nullptr) return {};
  if (v.dim() == 1) return {v.data, 0, v.strides[0]};
  return {v.data, v.strides[0], v.strides[1]};
}

struct CellParams {
  Mat input_gates, hidden_gates, input_bias, hidden_bias, prev;
  char* hy;
  char* cy;  // the LSTM's only
  char* workspace;
  int64_t batch, hidden;
};

template <typename T>
__device__ __forceinline__ acc_t<T> at(const Mat& m, int64_t r, int64_t c) {
  return to_acc(reinterpret_cast<const T*>(m.data)[r * m.s0 + c * m.s1]);
}

template <typename T, int kChunks>
__global__ void fused_cell_kernel(CellParams p) {
  using A = acc_t<T>;
  const int64_t H = p.hidden;
  const bool bias = p.input_bias.data != nullptr;
  T* hy = reinterpret_cast<T*>(p.hy);
  T* ws = reinterpret_cast<T*>(p.workspace);
  AOTRT_GRID_STRIDE(e, p.batch * H) {
    const int64_t b = e / H, j = e % H;
    A x[kChunks], h[kChunks], b1[kChunks], b2[kChunks];
#pragma unroll
    for (int q = 0; q < kChunks; ++q) {
      const int64_t c = q * H + j;
      x[q] = at<T>(p.input_gates, b, c);
      h[q] = at<T>(p.hidden_gates, b, c);
      b1[q] = bias ? at<T>(p.input_bias, 0, c) : A(0);
      b2[q] = bias ? at<T>(p.hidden_bias, 0, c) : A(0);
    }
    const A prev = at<T>(p.prev, b, j);
    if constexpr (kChunks == 4) {
      const auto r = ops::rnn_math::lstm_cell(x, h, b1, b2, prev);
      T* w = ws + b * 4 * H + j;  // the workspace row: i, f, g, o
      hy[e] = from_acc<T>(r.hy);
      reinterpret_cast<T*>(p.cy)[e] = from_acc<T>(r.cy);
      w[0] = from_acc<T>(r.i);
      w[H] = from_acc<T>(r.f);
      w[2 * H] = from_acc<T>(r.g);
      w[3 * H] = from_acc<T>(r.o);
    } else {
      const auto r = ops::rnn_math::gru_cell(x, h, b1, b2, prev);
      hy[e] = from_acc<T>(r.hy);
      // The GRU's workspace row is 5H: r, z, n, hx, hidden n + its bias.
      T* g = ws + b * 5 * H + j;
      g[0] = from_acc<T>(r.r);
      g[H] = from_acc<T>(r.z);
      g[2 * H] = from_acc<T>(r.n);
      g[3 * H] = from_acc<T>(prev);  // exact: prev widened
      g[4 * H] = from_acc<T>(r.hn);
    }
  }
}

template <int kChunks>
void launch_cell(const ops::RnnCellViews& v, const char* fn) {
  const OnDevice on(v.prev.device);
  CellParams p{mat(v.input_gates), mat(v.hidden_gates), mat(v.input_bias), mat(v.hidden_bias),
               mat(v.prev),        v.hy.data,           v.cy.data,         v.workspace.data,
               v.prev.sizes[0],    v.prev.sizes[1]};
  const int64_t n = p.batch * p.hidden;
  if (n == 0) return;
  visit_dtype(v.input_gates.dtype, fn, "input_gates", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
      fused_cell_kernel<T, kChunks><<<blocks_for(n), kThreads, 0, on.stream>>>(p);
      AOTRT_CUDA_CHECK_LAUNCH();
    } else {
      AOTRT_FAIL(kInternal, fn, ": the fused cell kernel has no ",
                 dtype_name(v.input_gates.dtype));
    }
  });
}

void fused_lstm_cell(const ops::RnnCellViews& v, const char* fn) { launch_cell<4>(v, fn); }
void fused_gru_cell(const ops::RnnCellViews& v, const char* fn) { launch_cell<3>(v, fn); }

constexpr RnnKernels kRnn{.lstm_cell = nullptr,
                          .fused_lstm_cell = fused_lstm_cell,
                          .fused_gru_cell = fused_gru_cell};
AOTRT_REGISTER_KERNELS(RnnKernels, cuda, kRnn);

}  // namespace
}  // namespace aotrt::cuda
