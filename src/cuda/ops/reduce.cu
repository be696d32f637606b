// CUDA kernels of the reduce family (ops/reduce.h; Notes [Reduce semantics]
// and [Hash tensor semantics]): one thread per output element walking its
// line (amax) or its reduced elements in row-major order (xor_sum, whose
// result does not depend on the order), as the CPU kernels do.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/reduce.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::ReduceKernels;

// ix: the lines (in's sizes with size 1 at dim), offsets into in and out.
template <typename T>
__global__ void amax_kernel(const T* in, T* out, ShapeIndexer<2> ix, int64_t lines, int64_t n,
                            int64_t step) {
  AOTRT_GRID_STRIDE(l, lines) {
    int64_t off[2];
    ix.offsets(l, off);
    T best = in[off[0]];
    for (int64_t i = 1; i < n; ++i) {
      const T v = in[off[0] + i * step];
      if (is_nan(best)) break;  // NaN propagates
      if (is_nan(v) || to_acc(v) > to_acc(best)) best = v;
    }
    out[off[1]] = best;
  }
}

void amax(const StridedView& in, int64_t dim, const StridedView& out, const char* fn) {
  std::vector<int64_t> line_sizes(in.sizes.begin(), in.sizes.end());
  const int64_t n = in.sizes[dim];
  line_sizes[dim] = 1;
  int64_t lines = 1;
  for (int64_t s : line_sizes) lines *= s;
  if (lines == 0 || n == 0) return;
  const std::span<const int64_t> strides[2] = {in.strides, out.strides};
  const ShapeIndexer<2> ix = make_indexer<2>(line_sizes, strides, fn);
  const OnDevice on(in.device);
  visit_dtype(in.dtype, fn, "self", [&](auto tag) {
    using T = decltype(tag);
    amax_kernel<T><<<blocks_for(lines), kThreads, 0, on.stream>>>(
        reinterpret_cast<const T*>(in.data), reinterpret_cast<T*>(out.data), ix, lines, n,
        in.strides[dim]);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

template <typename T>
__device__ __forceinline__ uint64_t hash_bits(T x) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(x));
  } else {
    return static_cast<uint64_t>(__double_as_longlong(static_cast<double>(to_acc(x))));
  }
}

// outer: offsets of the kept elements; inner: of the reduced ones.
template <typename T>
__global__ void xor_sum_kernel(const T* self, uint64_t* out, ShapeIndexer<1> outer,
                               ShapeIndexer<1> inner, int64_t n_out, int64_t n_in) {
  AOTRT_GRID_STRIDE(k, n_out) {
    int64_t base[1];
    outer.offsets(k, base);
    uint64_t acc = 0;
    for (int64_t i = 0; i < n_in; ++i) {
      int64_t off[1];
      inner.offsets(i, off);
      acc ^= hash_bits(self[base[0] + off[0]]);
    }
    out[k] = acc;
  }
}

void xor_sum(const StridedView& self, int64_t kept, const StridedView& out, const char* fn) {
  const std::span<const int64_t> sizes = self.sizes, strides = self.strides;
  int64_t n_out = 1, n_in = 1;
  for (int64_t d = 0; d < self.dim(); ++d) (d < kept ? n_out : n_in) *= sizes[d];
  if (n_out == 0) return;
  const auto k = static_cast<size_t>(kept);
  const std::span<const int64_t> outer_strides[1] = {strides.first(k)};
  const std::span<const int64_t> inner_strides[1] = {strides.subspan(k)};
  const ShapeIndexer<1> outer = make_indexer<1>(sizes.first(k), outer_strides, fn);
  const ShapeIndexer<1> inner = make_indexer<1>(sizes.subspan(k), inner_strides, fn);
  const OnDevice on(self.device);
  visit_dtype(self.dtype, fn, "self", [&](auto tag) {
    using T = decltype(tag);
    xor_sum_kernel<T><<<blocks_for(n_out), kThreads, 0, on.stream>>>(
        reinterpret_cast<const T*>(self.data), reinterpret_cast<uint64_t*>(out.data), outer,
        inner, n_out, n_in);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

constexpr ReduceKernels kReduce{.amax = amax, .xor_sum = xor_sum};
AOTRT_REGISTER_KERNELS(ReduceKernels, cuda, kReduce);

}  // namespace
}  // namespace aotrt::cuda
