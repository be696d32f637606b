// CUDA kernel of the embedding family (ops/embedding.h; Note [Embedding bag
// semantics]): one thread per (bag, column) of the output, walking its bag's
// indices in order as the CPU kernel does (so sums round as the CPU's, up to
// the device's fused multiply-adds with per_sample_weights), one thread per
// bag for bag_size, and one per index for offset2bag (a bisection of the
// offsets).
//
// Note [Embedding bags on CUDA]
// The CPU refuses an index outside [0, num_weights), offsets[0] != 0 and
// offsets[-1] > indices.numel(). Here those values are on the device and
// refusing them would make the host wait for the kernel (ATen's CUDA kernel
// stops the process with a device-side assert instead): as Note [Indexing on
// CUDA], such an index is skipped (it adds nothing, counts for nothing) and
// offsets are clamped to [0, indices.numel()], so no memory outside the
// tensors is read.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/embedding.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::EmbeddingBagArgs;
using ops::EmbeddingBagMode;
using ops::EmbeddingKernels;

// A 1-d int32/int64 view by value.
struct Ints {
  const char* data;
  int64_t stride;
  bool is64;
  __device__ __forceinline__ int64_t operator[](int64_t i) const {
    return is64 ? reinterpret_cast<const int64_t*>(data)[i * stride]
                : reinterpret_cast<const int32_t*>(data)[i * stride];
  }
};
Ints ints_of(const StridedView& v) {
  return Ints{v.data, v.strides.empty() ? 1 : v.strides[0], v.dtype == ScalarType::Int64};
}
// A 1-d or 2-d int32/int64 output view by value.
struct IntOut {
  char* data;
  int64_t s0, s1;
  bool is64;
  __device__ __forceinline__ void set(int64_t i, int64_t j, int64_t v) const {
    if (is64) {
      reinterpret_cast<int64_t*>(data)[i * s0 + j * s1] = v;
    } else {
      reinterpret_cast<int32_t*>(data)[i * s0 + j * s1] = static_cast<int32_t>(v);
    }
  }
};
IntOut int_out(const StridedView& v) {
  return IntOut{v.data, v.strides.empty() ? 0 : v.strides[0],
                v.strides.size() > 1 ? v.strides[1] : 0, v.dtype == ScalarType::Int64};
}

struct Bags {
  Ints idx, off;
  int64_t n, n_off, bags, rows, padding_idx;
  bool last_bag_to_end;
  EmbeddingBagMode mode;

  __device__ __forceinline__ int64_t offset(int64_t b) const {
    const int64_t o = off[b];
    return o < 0 ? 0 : (o > n ? n : o);
  }
  __device__ __forceinline__ bool counts(int64_t row) const {
    return row != padding_idx && row >= 0 && row < rows;
  }
  // Bag b's indices that are not padding, the last bag counted up to n.
  __device__ int64_t size(int64_t b) const {
    const int64_t start = offset(b), end = b + 1 < bags ? offset(b + 1) : n;
    int64_t count = 0;
    for (int64_t i = start; i < end; ++i) count += counts(idx[i]);
    return count;
  }
};

// bag_size[b] (0 in sum mode and past the bags), and max_indices[b] too when
// the mode is not max.
__global__ void bag_size_kernel(Bags g, IntOut bag_size, IntOut max_indices, int64_t count) {
  AOTRT_GRID_STRIDE(b, count) {
    const int64_t s = b < g.bags && g.mode != EmbeddingBagMode::kSum ? g.size(b) : 0;
    bag_size.set(b, 0, s);
    if (g.mode != EmbeddingBagMode::kMax) max_indices.set(b, 0, s);
  }
}

// offset2bag[i]: the number of bag starts at or before i, less one (at least 0).
__global__ void offset2bag_kernel(Bags g, IntOut offset2bag) {
  AOTRT_GRID_STRIDE(i, g.n) {
    int64_t lo = 0, hi = g.bags;  // the first bag whose start is past i
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (g.off[mid] <= i) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    offset2bag.set(i, 0, lo > 0 ? lo - 1 : 0);
  }
}

template <typename T>
__global__ void bag_kernel(Bags g, const T* weight, int64_t ws0, int64_t ws1, const T* psw,
                           int64_t ps0, T* out, int64_t os0, int64_t os1, IntOut max_indices,
                           int64_t dim) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  AOTRT_GRID_STRIDE(e, g.bags * dim) {
    const int64_t b = e / dim, d = e % dim;
    const int64_t start = g.offset(b);
    const int64_t next = b + 1 < g.n_off ? g.offset(b + 1) : g.n;
    const int64_t last = b + 1 == g.bags && g.last_bag_to_end ? g.n : next;
    const int64_t end = last > start ? last : start;
    A acc = 0;
    int64_t arg = 0;
    bool started = false;
    for (int64_t i = start; i < end; ++i) {
      const int64_t row = g.idx[i];
      if (!g.counts(row)) continue;
      const A x = static_cast<A>(to_acc(weight[row * ws0 + d * ws1]));
      if (g.mode == EmbeddingBagMode::kMax) {
        if (!started || x > acc) {
          acc = x;
          arg = row;
        }
        started = true;
      } else if (psw != nullptr) {
        acc += x * static_cast<A>(to_acc(psw[i * ps0]));
      } else {
        acc += x;
      }
    }
    if (g.mode == EmbeddingBagMode::kMean) {
      const int64_t count = g.size(b);
      acc = count > 0 ? acc / static_cast<A>(count) : A(0);
    }
    out[b * os0 + d * os1] = from_acc<T>(acc);
    if (g.mode == EmbeddingBagMode::kMax) max_indices.set(b, d, arg);
  }
}

void embedding_bag(const EmbeddingBagArgs& a, const char* fn) {
  const OnDevice on(a.output.device);
  const Bags g{ints_of(a.indices), ints_of(a.offsets), a.indices.sizes[0], a.offsets.sizes[0],
               a.output.sizes[0],  a.weight.sizes[0],  a.padding_idx,      a.last_bag_to_end,
               a.mode};
  const int64_t dim = a.output.sizes[1];
  if (a.bag_size.sizes[0] > 0) {
    bag_size_kernel<<<blocks_for(a.bag_size.sizes[0]), kThreads, 0, on.stream>>>(
        g, int_out(a.bag_size), int_out(a.max_indices), a.bag_size.sizes[0]);
    AOTRT_CUDA_CHECK_LAUNCH();
  }
  if (a.offset2bag.sizes[0] > 0) {
    offset2bag_kernel<<<blocks_for(g.n), kThreads, 0, on.stream>>>(g, int_out(a.offset2bag));
    AOTRT_CUDA_CHECK_LAUNCH();
  }
  if (g.bags * dim == 0) return;
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    const T* psw = a.per_sample_weights
                       ? reinterpret_cast<const T*>(a.per_sample_weights->data)
                       : nullptr;
    const int64_t ps0 = a.per_sample_weights ? a.per_sample_weights->strides[0] : 0;
    bag_kernel<T><<<blocks_for(g.bags * dim), kThreads, 0, on.stream>>>(
        g, reinterpret_cast<const T*>(a.weight.data), a.weight.strides[0], a.weight.strides[1],
        psw, ps0, reinterpret_cast<T*>(a.output.data), a.output.strides[0], a.output.strides[1],
        int_out(a.max_indices), dim);
    AOTRT_CUDA_CHECK_LAUNCH();
  };
  switch (a.weight.dtype) {
    case ScalarType::Float32: return launch(float{});
    case ScalarType::Float64: return launch(double{});
    case ScalarType::Float16: return launch(__half{});
    case ScalarType::BFloat16: return launch(__nv_bfloat16{});
    default:
      AOTRT_FAIL(kUnsupported, fn, ": dtype ", dtype_name(a.weight.dtype), " is not served");
  }
}

constexpr EmbeddingKernels kEmbedding{.embedding_bag = embedding_bag};
AOTRT_REGISTER_KERNELS(EmbeddingKernels, cuda, kEmbedding);

}  // namespace
}  // namespace aotrt::cuda
