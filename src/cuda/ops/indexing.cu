// CUDA kernels of the indexing family (ops/indexing.h; Note [Indexing
// semantics]): gathers and scatters as one element-wise kernel over the
// broadcast index shape, reductions with atomics; nonzero as CUB stream
// compaction; searchsorted as one bisection per value; histc with atomic
// counts.
//
// Note [Indexing on CUDA]
// - Scatters run in parallel: where several elements go to one place, a plain
//   assignment keeps one of them (which one is unspecified, as in ATen's CUDA
//   kernels); sums, products, amax/amin and means combine every element
//   atomically (a compare-and-swap on the aligned word for the types the
//   hardware has no atomic of), in no fixed order, so float sums may differ
//   from a serial sum by rounding. include_self=false starts the places it
//   names from the reduction's identity (0, 1, -inf, +inf; false/true for
//   bool) instead of the first element, which gives the same result.
// - An index out of range cannot be refused without the host waiting for the
//   kernel (ATen's CUDA kernels stop the process with a device-side assert):
//   the element is skipped instead (a gather writes zero), so no memory
//   outside the tensor is touched.
//
// Note [Data-dependent sizes on CUDA]
// nonzero and masked_select (through count_nonzero), and histc with
// min == max (its range comes from the data), need a number from the device
// before the host can size the output: the kernel writes it to device memory,
// one cudaMemcpyAsync brings it to the host and the host waits on the stream
// (cudaStreamSynchronize). That is ATen's behaviour too; it costs the wait
// for everything queued on the stream before it (the pipeline drains; ~10 us
// on an idle stream), and such an op cannot be captured into a CUDA graph:
// it is refused while the stream captures.
#include "cuda/ops/common.cuh"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cuda/std/limits>

#include <cmath>

#include "ops/dispatch.h"
#include "ops/indexing.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::IndexedArgs;
using ops::IndexingKernels;
using ops::IndexMode;

// --- Atomics --------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ T combine(IndexMode mode, T x, T y) {
  if constexpr (std::is_same_v<T, bool>) {
    return (mode == IndexMode::kProd || mode == IndexMode::kMin) ? (x && y) : (x || y);
  } else {
    const auto a = to_acc(x), b = to_acc(y);
    using A = decltype(a);
    switch (mode) {
      case IndexMode::kSum:
      case IndexMode::kMean:
        return from_acc<T>(wrapping_add(a, b));
      case IndexMode::kProd:
        return from_acc<T>(wrapping_mul(a, b));
      case IndexMode::kMax:
        if (a != a) return x;
        if (b != b) return y;
        return a < b ? y : x;
      case IndexMode::kMin:
        if (a != a) return x;
        if (b != b) return y;
        return b < a ? y : x;
      default:
        return y;
    }
  }
}

// *addr = f(*addr), atomically: a compare-and-swap loop on the aligned 4- or
// 8-byte word that holds *addr.
template <typename T, typename F>
__device__ void atomic_update(T* addr, F f) {
  if constexpr (sizeof(T) == 8) {
    auto* word = reinterpret_cast<unsigned long long*>(addr);
    unsigned long long old = *word, assumed;
    do {
      assumed = old;
      T cur;
      memcpy(&cur, &assumed, 8);
      const T next = f(cur);
      unsigned long long bits;
      memcpy(&bits, &next, 8);
      old = atomicCAS(word, assumed, bits);
    } while (assumed != old);
  } else {
    const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
    auto* word = reinterpret_cast<unsigned int*>(p & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(p & 3) * 8;
    const unsigned mask =
        sizeof(T) == 4 ? 0xffffffffu : ((1u << (8 * sizeof(T))) - 1u) << shift;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      const unsigned field = (assumed & mask) >> shift;
      T cur;
      memcpy(&cur, &field, sizeof(T));
      const T next = f(cur);
      unsigned bits = 0;
      memcpy(&bits, &next, sizeof(T));
      old = atomicCAS(word, assumed, (assumed & ~mask) | ((bits << shift) & mask));
    } while (assumed != old);
  }
}

template <typename T>
__device__ __forceinline__ void atomic_combine(IndexMode mode, T* addr, T value) {
  if (mode == IndexMode::kSum || mode == IndexMode::kMean) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> ||
                  std::is_same_v<T, int32_t>) {
      atomicAdd(addr, value);
      return;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(value));
      return;
    }
  }
  atomic_update(addr, [&](T cur) { return combine(mode, cur, value); });
}

// The reduction's identity (Note [Indexing on CUDA]: include_self=false).
template <typename T>
__device__ __forceinline__ T identity(IndexMode mode) {
  if constexpr (std::is_same_v<T, bool>) {
    return mode == IndexMode::kProd || mode == IndexMode::kMin;
  } else {
    using A = acc_t<T>;
    if (mode == IndexMode::kProd) return from_acc<T>(A(1));
    if (mode == IndexMode::kMax || mode == IndexMode::kMin) {
      const bool max = mode == IndexMode::kMax;
      if constexpr (std::is_floating_point_v<A>) {
        return from_acc<T>(max ? -INFINITY : INFINITY);
      } else {
        return max ? ::cuda::std::numeric_limits<T>::lowest() : ::cuda::std::numeric_limits<T>::max();
      }
    }
    return from_acc<T>(A(0));
  }
}

// --- Gathers and scatters ----------------------------------------------------------------

constexpr int kMaxIndexTensors = 8;
constexpr int kViews = 3 + kMaxIndexTensors;  // dst, src, counts, indices

struct IndexList {
  int count = 0;
  const char* data[kMaxIndexTensors] = {};
  bool is_int32[kMaxIndexTensors] = {};
  int64_t size[kMaxIndexTensors] = {};    // of the indexed dim
  int64_t stride[kMaxIndexTensors] = {};  // of the indexed dim in dst (src for a gather)
  bool negative = true;                   // IndexedArgs::negative_indices
};

enum class Phase { kIdentity, kApply, kDivide };

// The offset all index tensors add at element `off`, or -1 when one is out
// of range.
__device__ __forceinline__ int64_t index_offset(const IndexList& il, const int64_t (&off)[kViews]) {
  int64_t extra = 0;
  for (int k = 0; k < il.count; ++k) {
    const int64_t at = off[3 + k];
    int64_t i = il.is_int32[k] ? reinterpret_cast<const int32_t*>(il.data[k])[at]
                               : reinterpret_cast<const int64_t*>(il.data[k])[at];
    const int64_t n = il.size[k];
    if (i < (il.negative ? -n : 0) || i >= n) return -1;
    if (i < 0) i += n;
    extra += i * il.stride[k];
  }
  return extra;
}

template <typename T>
__global__ void indexed_kernel(IndexMode mode, Phase phase, ShapeIndexer<kViews> ix, IndexList il,
                               T* dst, const T* src, int64_t* counts, int64_t n) {
  AOTRT_GRID_STRIDE(e, n) {
    int64_t off[kViews];
    ix.offsets(e, off);
    const int64_t extra = index_offset(il, off);
    if (mode == IndexMode::kGather) {
      dst[off[0]] = extra < 0 ? from_acc<T>(acc_t<T>(0)) : src[off[1] + extra];
      continue;
    }
    if (extra < 0) continue;
    T* at = dst + off[0] + extra;
    int64_t* count = counts == nullptr ? nullptr : counts + off[2] + extra;
    if (phase == Phase::kIdentity) {
      if (*count == 0) *at = identity<T>(mode);
    } else if (phase == Phase::kApply) {
      if (mode == IndexMode::kAssign) {
        *at = src[off[1]];
      } else {
        atomic_combine(mode, at, src[off[1]]);
        if (count != nullptr) atomicAdd(reinterpret_cast<unsigned long long*>(count), 1ull);
      }
    } else {  // kDivide: each place once, by the thread that negates its count
      if constexpr (!std::is_same_v<T, bool>) {
        const long long c = *count;
        if (c <= 0) continue;
        if (atomicCAS(reinterpret_cast<unsigned long long*>(count), static_cast<unsigned long long>(c),
                      static_cast<unsigned long long>(-c)) != static_cast<unsigned long long>(c)) {
          continue;
        }
        const auto x = to_acc(*at);
        using A = decltype(x);
        if constexpr (std::is_integral_v<A>) {
          const int64_t q = x / c, r = x % c;  // floor division, as ATen's integer mean
          *at = static_cast<T>((r != 0 && x < 0) ? q - 1 : q);
        } else {
          *at = from_acc<T>(x / static_cast<A>(c));
        }
      }
    }
  }
}

void indexed(IndexMode mode, const IndexedArgs& a, const char* fn) {
  AOTRT_CHECK(a.indices.size() <= static_cast<size_t>(kMaxIndexTensors), kUnsupported, fn, ": ",
              a.indices.size(), " index tensors; the CUDA kernel serves at most ",
              kMaxIndexTensors);
  int64_t n = 1;
  for (int64_t s : a.shape) n *= s;
  if (n == 0) return;
  const int device = device_of(a.dst);
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const std::vector<int64_t> zeros(a.shape.size(), 0);
  std::span<const int64_t> strides[kViews];
  strides[0] = a.dst.strides;
  strides[1] = a.src.strides;
  strides[2] = a.counts ? a.counts->strides : std::span<const int64_t>(zeros);
  IndexList il;
  il.count = static_cast<int>(a.indices.size());
  il.negative = a.negative_indices;
  for (int k = 0; k < kMaxIndexTensors; ++k) {
    if (k < il.count) {
      const StridedView& v = a.indices[static_cast<size_t>(k)];
      AOTRT_CHECK(v.dtype == ScalarType::Int64 || v.dtype == ScalarType::Int32, kInvalidArgument, fn,
                  ": index tensors must be int64 or int32, not ", dtype_name(v.dtype));
      strides[3 + k] = v.strides;
      il.data[k] = v.data;
      il.is_int32[k] = v.dtype == ScalarType::Int32;
      il.size[k] = a.index_sizes[static_cast<size_t>(k)];
      il.stride[k] = a.index_strides[static_cast<size_t>(k)];
    } else {
      strides[3 + k] = zeros;
    }
  }
  const ShapeIndexer<kViews> ix = make_indexer<kViews>(a.shape, strides, fn);
  int64_t* counts = a.counts ? reinterpret_cast<int64_t*>(a.counts->data) : nullptr;
  visit_dtype(a.dst.dtype, fn, "self", [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](Phase phase) {
      indexed_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
          mode, phase, ix, il, reinterpret_cast<T*>(a.dst.data),
          reinterpret_cast<const T*>(a.src.data), counts, n);
      AOTRT_CUDA_CHECK_LAUNCH();
    };
    const bool reduces = mode != IndexMode::kGather && mode != IndexMode::kAssign;
    if (reduces && counts != nullptr) run(Phase::kIdentity);
    run(Phase::kApply);
    if (mode == IndexMode::kMean) {
      AOTRT_CHECK(counts != nullptr, kInternal, fn, ": a scatter mean without counts");
      constexpr bool is_bool = std::is_same_v<T, bool>;
      AOTRT_CHECK(!is_bool, kUnsupported, fn, ": mean of bool values is not served");
      run(Phase::kDivide);
    }
  });
}

// --- nonzero -------------------------------------------------------------------------------
// One small kernel per dtype writes a byte flag per element (row-major
// order of any view); CUB then reduces or compacts the flags, instantiated
// once for every dtype.

template <typename T>
__global__ void nonzero_flags(ShapeIndexer<1> ix, const T* data, uint8_t* flags, int64_t n) {
  AOTRT_GRID_STRIDE(i, n) {
    int64_t off[1];
    ix.offsets(i, off);
    if constexpr (std::is_same_v<T, bool>) {
      flags[i] = data[off[0]] ? 1 : 0;
    } else {
      const auto x = to_acc(data[off[0]]);
      flags[i] = x != decltype(x)(0) ? 1 : 0;  // NaN is not zero; -0.0 is
    }
  }
}

struct FlagToCount {
  __device__ __forceinline__ int64_t operator()(uint8_t f) const { return f; }
};


struct Flags {
  Temp<uint8_t> flags;
  ShapeIndexer<1> ix;
  Flags(const StridedView& v, int device, cudaStream_t stream, const char* fn)
      : flags(device, v.numel()) {
    const std::span<const int64_t> strides[1] = {v.strides};
    ix = make_indexer<1>(v.sizes, strides, fn);
    const int64_t n = v.numel();
    visit_dtype(v.dtype, fn, "self", [&](auto tag) {
      using T = decltype(tag);
      nonzero_flags<T><<<blocks_for(n), kThreads, 0, stream>>>(
          ix, reinterpret_cast<const T*>(v.data), flags.get(), n);
      AOTRT_CUDA_CHECK_LAUNCH();
    });
  }
};

int64_t count_nonzero(const StridedView& v, const char* fn) {
  const int64_t n = v.numel();
  if (n == 0) return 0;
  const int device = device_of(v);
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const Flags f(v, device, stream, fn);
  Temp<int64_t> total(device, 1);
  auto counts = thrust::make_transform_iterator(f.flags.get(), FlagToCount{});
  cub_call(device, [&](void* temp, size_t& bytes) {
    return cub::DeviceReduce::Sum(temp, bytes, counts, total.get(), n, stream);
  });
  int64_t host = 0;
  read_back(total.get(), &host, 1, stream, fn);
  return host;
}

// out[r, d] = coordinate d of the r-th selected linear index.
__global__ void write_coordinates(const int64_t* selected, int64_t rows, ShapeIndexer<1> ix,
                                  int64_t* out, int64_t row_stride, int64_t col_stride) {
  const int nd = ix.ndim;
  AOTRT_GRID_STRIDE(i, rows * nd) {
    const int64_t r = i / nd;
    const int d = static_cast<int>(i - r * nd);
    out[r * row_stride + d * col_stride] = ix.coordinate(selected[r], d);
  }
}

void nonzero(const StridedView& v, const StridedView& out, const char* fn) {
  const int64_t n = v.numel(), rows = out.sizes[0];
  if (n == 0 || rows == 0 || v.dim() == 0) return;
  const int device = device_of(v);
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const Flags f(v, device, stream, fn);
  Temp<int64_t> selected(device, n), count(device, 1);
  cub_call(device, [&](void* temp, size_t& bytes) {
    return cub::DeviceSelect::Flagged(temp, bytes, thrust::counting_iterator<int64_t>(0),
                                      f.flags.get(), selected.get(), count.get(), n, stream);
  });
  write_coordinates<<<blocks_for(rows * v.dim()), kThreads, 0, stream>>>(
      selected.get(), rows, f.ix, reinterpret_cast<int64_t*>(out.data), out.strides[0],
      out.strides[1]);
  AOTRT_CUDA_CHECK_LAUNCH();
}

// --- searchsorted ------------------------------------------------------------------------

template <typename A>
__device__ __forceinline__ bool less_nan_last(A a, A b) {
  return (a == a && b != b) || a < b;
}

template <typename T>
__global__ void search_kernel(const T* sorted, int64_t line_length, int64_t sorted_step,
                              ShapeIndexer<2> lines, const int64_t* sorter, int64_t sorter_step,
                              bool one_line, IntDivider<uint64_t> values_per_line,
                              ShapeIndexer<2> values_ix, const T* values, void* out, bool out_int32,
                              bool right, int64_t n) {
  AOTRT_GRID_STRIDE(e, n) {
    int64_t voff[2];
    values_ix.offsets(e, voff);
    int64_t base[2] = {0, 0};
    if (!one_line) lines.offsets(static_cast<int64_t>(values_per_line.div(static_cast<uint64_t>(e))), base);
    const auto x = to_acc(values[voff[0]]);
    int64_t lo = 0, hi = line_length;
    while (lo < hi) {  // the first j with sorted[j] > x (right) or >= x (left)
      const int64_t mid = lo + (hi - lo) / 2;
      const int64_t p = sorter == nullptr ? mid : sorter[base[1] + mid * sorter_step];
      const auto y = to_acc(sorted[base[0] + p * sorted_step]);
      const bool go_right = right ? !less_nan_last(x, y) : less_nan_last(y, x);
      if (go_right) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (out_int32) {
      static_cast<int32_t*>(out)[voff[1]] = static_cast<int32_t>(lo);
    } else {
      static_cast<int64_t*>(out)[voff[1]] = lo;
    }
  }
}

void search(const StridedView& sorted, const StridedView& values, const StridedView& out,
            const StridedView* sorter, bool right, const char* fn) {
  const int64_t n = values.numel();
  if (n == 0) return;
  AOTRT_CHECK(sorted.dtype == values.dtype, kInternal, fn, ": sorted is ",
              dtype_name(sorted.dtype), ", values ", dtype_name(values.dtype));
  AOTRT_CHECK(sorter == nullptr || sorter->dtype == ScalarType::Int64, kInvalidArgument, fn,
              ": sorter must be int64");
  const int device = device_of(values);
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const bool one_line = sorted.dim() == 1;
  const int64_t vd = values.dim();
  const int64_t per_line = vd == 0 ? 1 : values.sizes[vd - 1];
  // The leading dims of sorted (and sorter) name a line.
  const std::span<const int64_t> lead_sizes = sorted.sizes.first(sorted.sizes.size() - 1);
  const std::vector<int64_t> zeros(lead_sizes.size(), 0);
  const std::span<const int64_t> lead_strides[2] = {
      sorted.strides.first(lead_sizes.size()),
      sorter ? sorter->strides.first(lead_sizes.size()) : std::span<const int64_t>(zeros)};
  const std::span<const int64_t> value_strides[2] = {values.strides, out.strides};
  const ShapeIndexer<2> lines = make_indexer<2>(lead_sizes, lead_strides, fn);
  const ShapeIndexer<2> values_ix = make_indexer<2>(values.sizes, value_strides, fn);
  visit_dtype(values.dtype, fn, "values", [&](auto tag) {
    using T = decltype(tag);
    search_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        reinterpret_cast<const T*>(sorted.data), sorted.sizes.back(), sorted.strides.back(), lines,
        sorter ? reinterpret_cast<const int64_t*>(sorter->data) : nullptr,
        sorter ? sorter->strides.back() : 0, one_line,
        IntDivider<uint64_t>(static_cast<uint64_t>(per_line)), values_ix,
        reinterpret_cast<const T*>(values.data), out.data, out.dtype == ScalarType::Int32, right,
        n);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

// --- histc -----------------------------------------------------------------------------------

// Bins as ATen's CUDA kernel computes them, in acc_t arithmetic: float for
// float16/bfloat16, the type itself for float and double, int64 for integers
// ((x - lo) * bins / (hi - lo) with integer division); the max edge goes in
// the last bin. A bin outside [0, bins) (only an int64 product that
// overflowed can make one) is dropped rather than written out of bounds.
// A histc bound as ATen holds it: the Scalar as acc_t, then as the input's
// type (an integer bound truncates toward zero and wraps into T).
template <typename T, typename A>
A bound(double v) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<T>(static_cast<int64_t>(v)));
  } else {
    return static_cast<A>(v);
  }
}

template <typename T>
__global__ void histc_kernel(ShapeIndexer<1> ix, const T* data, int64_t n, acc_t<T> lo, acc_t<T> hi,
                             int64_t bins, unsigned long long* counts) {
  AOTRT_GRID_STRIDE(e, n) {
    int64_t off[1];
    ix.offsets(e, off);
    const auto x = to_acc(data[off[0]]);
    if (!(x >= lo && x <= hi)) continue;
    int64_t pos = static_cast<int64_t>((x - lo) * static_cast<acc_t<T>>(bins) / (hi - lo));
    if (pos == bins) pos -= 1;
    if (pos < 0 || pos >= bins) continue;
    atomicAdd(counts + pos, 1ull);
  }
}

void histc(const StridedView& self, const StridedView& out, double min, double max,
           const char* fn) {
  const int device = device_of(self);
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const int64_t n = self.numel(), bins = out.sizes[0];
  visit_dtype(self.dtype, fn, "self", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      AOTRT_FAIL(kInvalidArgument, fn, ": \"histc\" not implemented for 'Bool'");
    } else {
      const std::span<const int64_t> strides[1] = {self.strides};
      const ShapeIndexer<1> ix = make_indexer<1>(self.sizes, strides, fn);
      const T* data = reinterpret_cast<const T*>(self.data);
      if constexpr (std::is_integral_v<A>) {
        // ATen converts the Scalar bounds to int64 (refusing what does not
        // fit), then to the input's type.
        constexpr double kTwo63 = 9223372036854775808.0;
        AOTRT_CHECK(min >= -kTwo63 && min < kTwo63 && max >= -kTwo63 && max < kTwo63,
                    kInvalidArgument, fn, ": histc's range [", min, ", ", max,
                    "] cannot be converted to int64 without overflow");
      }
      A lo = bound<T, A>(min), hi = bound<T, A>(max);
      if (lo == hi && n > 0) {
        // Note [Data-dependent sizes on CUDA]: the range comes from the data.
        // One float64 copy (copy_device converts), so CUB's min and max are
        // instantiated once for every dtype.
        Temp<double> values(device, n), extremes(device, 2);
        const std::vector<int64_t> dense = dense_strides({self.sizes.begin(), self.sizes.end()});
        copy_device(StridedView{reinterpret_cast<char*>(values.get()), self.sizes, dense,
                                ScalarType::Float64, self.device},
                    self, stream);
        cub_call(device, [&](void* temp, size_t& bytes) {
          return cub::DeviceReduce::Min(temp, bytes, values.get(), extremes.get(), n, stream);
        });
        cub_call(device, [&](void* temp, size_t& bytes) {
          return cub::DeviceReduce::Max(temp, bytes, values.get(), extremes.get() + 1, n, stream);
        });
        double range[2];
        read_back(extremes.get(), range, 2, stream, fn);
        lo = static_cast<A>(range[0]);
        hi = static_cast<A>(range[1]);
      }
      if (lo == hi) {
        lo -= 1;
        hi += 1;
      }
      AOTRT_CHECK(std::isfinite(static_cast<double>(lo)) && std::isfinite(static_cast<double>(hi)),
                  kInvalidArgument, fn, ": range of [", lo, ", ", hi, "] is not finite");
      Temp<unsigned long long> counts(device, bins);
      AOTRT_CUDA_CHECK(cudaMemsetAsync(counts.get(), 0, sizeof(unsigned long long) * bins, stream));
      if (n > 0) {
        histc_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(ix, data, n, lo, hi, bins,
                                                                counts.get());
        AOTRT_CUDA_CHECK_LAUNCH();
      }
      // The exact counts, converted to out's dtype by the copy.
      const int64_t one[] = {1};
      copy_device(out,
                  StridedView{reinterpret_cast<char*>(counts.get()), out.sizes, one,
                              ScalarType::Int64, out.device},
                  stream);
    }
  });
}

constexpr IndexingKernels kIndexing{.indexed = indexed,
                                    .count_nonzero = count_nonzero,
                                    .nonzero = nonzero,
                                    .search = search,
                                    .histc = histc};
AOTRT_REGISTER_KERNELS(IndexingKernels, cuda, kIndexing);

}  // namespace
}  // namespace aotrt::cuda
