// CUDA kernels of the linear family (ops/linear.h; Note [Linear semantics]):
// sum_of_products (_trilinear, F.bilinear), one thread per output element
// summing its products in row-major order of the summed dims, in the CPU
// kernel's accumulation type (int64 wrapping for integers, float for
// float16/bfloat16, double otherwise). The table's other entries (the fused
// activations, rms_norm, cross_entropy) have no CUDA kernel yet: their rows
// report SKIPPED on CUDA.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/linear.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::LinearKernels;

template <typename T>
using sum_t = std::conditional_t<
    std::is_integral_v<T>, int64_t,
    std::conditional_t<std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, float,
                       double>>;

// kept: offsets of a, b, c, out over the kept dims; summed: of a, b, c over the summed ones.
template <typename T>
__global__ void sum_of_products_kernel(const T* a, const T* b, const T* c, T* out,
                                       ShapeIndexer<4> kept, ShapeIndexer<3> summed,
                                       int64_t n_out, int64_t n_sum) {
  using A = sum_t<T>;
  AOTRT_GRID_STRIDE(e, n_out) {
    int64_t k[4];
    kept.offsets(e, k);
    A acc = 0;
    for (int64_t s = 0; s < n_sum; ++s) {
      int64_t o[3];
      summed.offsets(s, o);
      const A x = static_cast<A>(to_acc(a[k[0] + o[0]]));
      const A y = static_cast<A>(to_acc(b[k[1] + o[1]]));
      const A z = static_cast<A>(to_acc(c[k[2] + o[2]]));
      if constexpr (std::is_integral_v<A>) {  // two's complement wrap
        const uint64_t u = static_cast<uint64_t>(x) * static_cast<uint64_t>(y) *
                           static_cast<uint64_t>(z);
        acc = static_cast<A>(static_cast<uint64_t>(acc) + u);
      } else {
        acc += x * y * z;
      }
    }
    out[k[3]] = from_acc<T>(acc);
  }
}

void sum_of_products(const StridedView& a, const StridedView& b, const StridedView& c,
                     const StridedView& out, std::span<const bool> summed, const char* fn) {
  std::vector<int64_t> kept_sizes, sum_sizes, ks[4], ss[3];
  const StridedView* views[4] = {&a, &b, &c, &out};
  int64_t n_out = 1, n_sum = 1;
  for (size_t d = 0; d < summed.size(); ++d) {
    if (summed[d]) {
      sum_sizes.push_back(a.sizes[d]);
      n_sum *= a.sizes[d];
      for (int v = 0; v < 3; ++v) ss[v].push_back(views[v]->strides[d]);
    } else {
      kept_sizes.push_back(a.sizes[d]);
      n_out *= a.sizes[d];
      for (int v = 0; v < 4; ++v) ks[v].push_back(views[v]->strides[d]);
    }
  }
  if (n_out == 0) return;
  const std::span<const int64_t> kspans[4] = {ks[0], ks[1], ks[2], ks[3]};
  const std::span<const int64_t> sspans[3] = {ss[0], ss[1], ss[2]};
  const ShapeIndexer<4> kept = make_indexer<4>(kept_sizes, kspans, fn);
  const ShapeIndexer<3> sum = make_indexer<3>(sum_sizes, sspans, fn);
  const OnDevice on(out.device);
  visit_dtype(a.dtype, fn, "i1", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      AOTRT_FAIL(kUnsupported, fn, ": dtype bool is not served");
    } else {
      sum_of_products_kernel<T><<<blocks_for(n_out), kThreads, 0, on.stream>>>(
          reinterpret_cast<const T*>(a.data), reinterpret_cast<const T*>(b.data),
          reinterpret_cast<const T*>(c.data), reinterpret_cast<T*>(out.data), kept, sum, n_out,
          n_sum);
      AOTRT_CUDA_CHECK_LAUNCH();
    }
  });
}

constexpr LinearKernels kLinear{.activation = nullptr,
                                .binary = nullptr,
                                .rms_norm = nullptr,
                                .sum_of_products = sum_of_products,
                                .cross_entropy = nullptr};
AOTRT_REGISTER_KERNELS(LinearKernels, cuda, kLinear);

}  // namespace
}  // namespace aotrt::cuda
