// CUDA kernels of the scan family (ops/scan.h): CUB's by-key inclusive scan
// over dense rows (Note [Rows along a dim]), one key per row, so one launch
// scans every row of any shape. Combining follows ATen's CUDA kernels (Note
// [Scan semantics]): the running value is held in the result dtype and each
// step is computed in its opmath type (float for float16/bfloat16), so
// float32 accumulates in float32 and float16 rounds at every step, as ATen's
// scan_dim does; integers wrap. cummax/cummin scan (value, index) pairs with
// an associative "later wins ties, NaN wins" maximum.
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/scan.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using aotrt::ops::ScanKernels;
using aotrt::ops::ScanOp;

template <typename T>
struct Sum {
  __device__ __forceinline__ T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T>) {  // two's complement wrap, no signed overflow
      return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    } else {
      return from_acc<T>(to_acc(a) + to_acc(b));
    }
  }
};
template <typename T>
struct Prod {
  __device__ __forceinline__ T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    } else {
      return from_acc<T>(to_acc(a) * to_acc(b));
    }
  }
};
// ATen's _log_add_exp_helper in opmath: NaN propagates, two infinities of
// one sign stay that infinity.
template <typename T>
struct LogAddExp {
  __device__ __forceinline__ T operator()(const T& a, const T& b) const {
    const auto x = to_acc(a), y = to_acc(b);
    if (x != x || y != y) return from_acc<T>(x != x ? x : y);
    const auto lo = x < y ? x : y, hi = x < y ? y : x;
    if (lo != hi || isfinite(lo)) return from_acc<T>(hi + log1p(exp(lo - hi)));
    return a;
  }
};

template <typename T>
struct ValueIndex {
  T value;
  int64_t index;
};
// The running extreme of (earlier a, later b): b when it is NaN, or when a is
// not NaN and b >= a (max) / b <= a (min). A maximum in the order "NaN above
// everything, then later index", hence associative.
template <typename T, bool kMax>
struct Extreme {
  __device__ __forceinline__ ValueIndex<T> operator()(const ValueIndex<T>& a,
                                                      const ValueIndex<T>& b) const {
    const auto av = to_acc(a.value), bv = to_acc(b.value);
    const bool take = is_nan(b.value) || (!is_nan(a.value) && (kMax ? bv >= av : bv <= av));
    return take ? b : a;
  }
};
template <typename T>
struct PairAt {
  const T* values;
  IntDivider<uint64_t> length;
  __device__ __forceinline__ ValueIndex<T> operator()(int64_t i) const {
    return {values[i], static_cast<int64_t>(length.divmod(static_cast<uint64_t>(i)).mod)};
  }
};

template <typename T>
__global__ void split_pairs(const ValueIndex<T>* pairs, T* values, int64_t* indices, int64_t n) {
  AOTRT_GRID_STRIDE(i, n) {
    values[i] = pairs[i].value;
    indices[i] = pairs[i].index;
  }
}

template <typename T, typename Op>
void scan_rows(T* data, int64_t n, int64_t length, Op op, int device, cudaStream_t stream) {
  auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                              RowOf{IntDivider<uint64_t>(length)});
  cub_call(device, [&](void* temp, size_t& bytes) {
    return cub::DeviceScan::InclusiveScanByKey(temp, bytes, keys, data, data, op, n,
                                               ::cuda::std::equal_to<>(), stream);
  });
}

void scan(ScanOp op, const StridedView& v, int64_t dim, const char* fn) {
  const int device = device_of(v);
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  visit_dtype(v.dtype, fn, "self", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      AOTRT_FAIL(kUnsupported, fn, ": a bool result is not served");
    } else {
      Rows rows(v, dim, v.dtype, stream, /*read=*/true);
      T* data = rows.data<T>();
      const int64_t n = rows.numel(), length = rows.length();
      if (op == ScanOp::kSum) {
        scan_rows(data, n, length, Sum<T>{}, device, stream);
      } else if (op == ScanOp::kProd) {
        scan_rows(data, n, length, Prod<T>{}, device, stream);
      } else if (op == ScanOp::kLogSumExp) {
        if constexpr (is_float_v<T>) {
          scan_rows(data, n, length, LogAddExp<T>{}, device, stream);
        } else {
          AOTRT_FAIL(kInternal, fn, ": integer logcumsumexp");
        }
      } else {
        AOTRT_FAIL(kInternal, fn, ": scan op ", static_cast<int>(op), " needs indices");
      }
      rows.write_back(stream);
    }
  });
}

void scan_with_indices(ScanOp op, const StridedView& v, const StridedView& idx, int64_t dim,
                       const char* fn) {
  AOTRT_CHECK(op == ScanOp::kMax || op == ScanOp::kMin, kInternal, fn, ": scan op ",
              static_cast<int>(op), " has no indices");
  const int device = device_of(v);
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  visit_dtype(v.dtype, fn, "self", [&](auto tag) {
    using T = decltype(tag);
    Rows rows(v, dim, v.dtype, stream, /*read=*/true);
    Rows indices(idx, dim, ScalarType::Int64, stream, /*read=*/false);
    const int64_t n = rows.numel();
    Temp<ValueIndex<T>> pairs(device, n);
    auto in = thrust::make_transform_iterator(
        thrust::counting_iterator<int64_t>(0),
        PairAt<T>{rows.data<T>(), IntDivider<uint64_t>(rows.length())});
    auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                                RowOf{IntDivider<uint64_t>(rows.length())});
    auto run = [&](auto extreme) {
      cub_call(device, [&](void* temp, size_t& bytes) {
        return cub::DeviceScan::InclusiveScanByKey(temp, bytes, keys, in, pairs.get(), extreme,
                                                   n, ::cuda::std::equal_to<>(), stream);
      });
    };
    if (op == ScanOp::kMax) {
      run(Extreme<T, true>{});
    } else {
      run(Extreme<T, false>{});
    }
    split_pairs<T><<<blocks_for(n), kThreads, 0, stream>>>(pairs.get(), rows.data<T>(),
                                                            indices.data<int64_t>(), n);
    AOTRT_CUDA_CHECK_LAUNCH();
    rows.write_back(stream);
    indices.write_back(stream);
  });
}

constexpr ScanKernels kScan{.scan = scan, .scan_with_indices = scan_with_indices};
AOTRT_REGISTER_KERNELS(ScanKernels, cuda, kScan);

}  // namespace
}  // namespace aotrt::cuda
