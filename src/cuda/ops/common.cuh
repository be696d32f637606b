// What the CUDA op kernels (src/cuda/ops/*.cu) share: the device element type
// of a dtype, launch geometry for grid-stride loops, CUB's temporary storage
// from the caching allocator, and a view's rows along one dim gathered into a
// dense temporary (and written back). Everything runs on the current stream
// of the tensors' device.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "core/wraparound.h"
#include "cuda/int_divider.h"
#include "cuda/runtime.h"

namespace aotrt::cuda::op_common {

// Calls f(T{}) with the device type of dtype `t`: bool, uint8_t, int8_t ..
// int64_t, __half, __nv_bfloat16, float, double. Other dtypes are refused,
// naming `fn` and the argument `what`.
template <typename F>
void visit_dtype(ScalarType t, const char* fn, const char* what, F&& f) {
  switch (t) {
    case ScalarType::Bool: return f(bool{});
    case ScalarType::UInt8: return f(uint8_t{});
    case ScalarType::Int8: return f(int8_t{});
    case ScalarType::Int16: return f(int16_t{});
    case ScalarType::Int32: return f(int32_t{});
    case ScalarType::Int64: return f(int64_t{});
    case ScalarType::Float16: return f(__half{});
    case ScalarType::BFloat16: return f(__nv_bfloat16{});
    case ScalarType::Float32: return f(float{});
    case ScalarType::Float64: return f(double{});
    default:
      AOTRT_FAIL(kUnsupported, fn, ": argument '", what, "' has dtype ", dtype_name(t),
                 ", which the CUDA kernel does not serve");
  }
}

template <typename T>
inline constexpr bool is_float_v =
    std::is_floating_point_v<T> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// The type ATen's CUDA kernels compute in (acc_type): float for the 16-bit
// floats, int64 for integers and bool, the type itself for float and double.
template <typename T>
using acc_t = std::conditional_t<
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, float,
    std::conditional_t<std::is_floating_point_v<T>, T, int64_t>>;

template <typename T>
__host__ __device__ __forceinline__ acc_t<T> to_acc(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return static_cast<acc_t<T>>(v);
  }
}
template <typename T, typename A>
__host__ __device__ __forceinline__ T from_acc(A v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}
template <typename T>
__device__ __forceinline__ bool is_nan(T v) {
  if constexpr (is_float_v<T>) {
    const auto a = to_acc(v);
    return a != a;
  } else {
    return false;
  }
}

// Grid-stride loops: 256 threads a block, at most 8 blocks per SM's worth
// of work queued at once (a grid of at most 65535 * 16 blocks).
constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(b, 1, int64_t{65535} * 16));
}
#define AOTRT_GRID_STRIDE(i, n)                                                              \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// A kernel's device made current for its scope, with that device's current
// stream (where every launch and temporary of the kernel goes).
struct OnDevice {
  int device;
  DeviceGuard guard;
  cudaStream_t stream;
  explicit OnDevice(Device d)
      : device(d.index), guard(device), stream(current_cuda_stream(device)) {}
};

// Note [Data-dependent sizes on CUDA] (indexing.cu): copies n values to the
// host and waits for them; refused while the stream captures a graph.
template <typename V>
inline void read_back(const V* device_values, V* host, size_t n, cudaStream_t stream,
                      const char* fn) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  AOTRT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  AOTRT_CHECK(capturing == cudaStreamCaptureStatusNone, kUnsupported, fn,
              ": the size of its result depends on the data, which the host must read (a wait "
              "on the stream): it cannot run inside a CUDA graph capture");
  AOTRT_CUDA_CHECK(
      cudaMemcpyAsync(host, device_values, n * sizeof(V), cudaMemcpyDeviceToHost, stream));
  AOTRT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// Checks the launch that was just queued.
#define AOTRT_CUDA_CHECK_LAUNCH() AOTRT_CUDA_CHECK(cudaGetLastError())

// Runs a CUB device algorithm in its two phases: `call(temp, bytes)` first
// with a null `temp` (CUB then only sizes its temporary storage), then with
// storage from the caching allocator (never a cudaMalloc of its own).
template <typename Call>
void cub_call(int device, Call&& call) {
  size_t bytes = 0;
  AOTRT_CUDA_CHECK(call(static_cast<void*>(nullptr), bytes));
  // A null pointer would mean "size only" again: at least one byte.
  DeviceBuffer temp(device, std::max<size_t>(bytes, 1));
  AOTRT_CUDA_CHECK(call(temp.data(), bytes));
}

// A dense device temporary of `count` elements of T from the caching
// allocator, on the current stream of `device`.
template <typename T>
class Temp {
 public:
  Temp(int device, int64_t count)
      : buffer_(device, static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T)) {}
  T* get() const { return static_cast<T*>(buffer_.data()); }

 private:
  DeviceBuffer buffer_;
};

// Element offsets of N views of one shape for a row-major linear index:
// sizes decomposed innermost first with IntDivider, each view with its own
// strides (elements). Travels by value in kernel parameters.
constexpr int kMaxIndexDims = 16;
template <int N>
struct ShapeIndexer {
  int ndim = 0;
  IntDivider<uint64_t> sizes[kMaxIndexDims];
  int64_t strides[N][kMaxIndexDims];

  __device__ __forceinline__ void offsets(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int v = 0; v < N; ++v) off[v] = 0;
    uint64_t rest = static_cast<uint64_t>(linear);
    for (int d = 0; d < ndim; ++d) {
      const DivMod<uint64_t> qr = sizes[d].divmod(rest);
      rest = qr.div;
#pragma unroll
      for (int v = 0; v < N; ++v) off[v] += static_cast<int64_t>(qr.mod) * strides[v][d];
    }
  }
  // The coordinate along dim d (outermost-first numbering) of a linear index.
  __device__ __forceinline__ int64_t coordinate(int64_t linear, int d_outer) const {
    uint64_t rest = static_cast<uint64_t>(linear);
    const int d_inner = ndim - 1 - d_outer;
    for (int d = 0; d < d_inner; ++d) rest = sizes[d].div(rest);
    return static_cast<int64_t>(sizes[d_inner].divmod(rest).mod);
  }
};

// An indexer over `sizes` for the given views' strides (each of sizes' rank).
template <int N>
ShapeIndexer<N> make_indexer(std::span<const int64_t> sizes,
                             const std::span<const int64_t> (&strides)[N], const char* fn) {
  AOTRT_CHECK(sizes.size() <= static_cast<size_t>(kMaxIndexDims), kUnsupported, fn, ": ",
              sizes.size(), " dims; the CUDA kernel serves at most ", kMaxIndexDims);
  ShapeIndexer<N> ix;
  ix.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < ix.ndim; ++d) {
    const size_t src = sizes.size() - 1 - static_cast<size_t>(d);  // innermost first
    ix.sizes[d] = IntDivider<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(sizes[src], 1)));
    for (int v = 0; v < N; ++v) ix.strides[v][d] = strides[v][src];
  }
  return ix;
}

// Note [Rows along a dim]
// Kernels that work along one dim (scans, sorts, selections) see their input
// as `count` dense rows of `length` elements: the view with that dim moved
// innermost, gathered into a temporary by copy_device (which takes any
// strides and converts dtypes), or read in place when the view already has
// that layout. Results are written back the same way, through the inverse
// permutation, into whatever strides the output has.
struct RowsLayout {
  std::vector<int64_t> sizes;    // the view's sizes, `dim` moved innermost
  std::vector<int64_t> strides;  // the view's strides in that order
  int64_t count = 1;             // rows: product of the other sizes
  int64_t length = 1;            // the size along dim (1 for a 0-d view)
};

inline RowsLayout rows_layout(const StridedView& v, int64_t dim) {
  RowsLayout r;
  const int64_t nd = v.dim();
  for (int64_t d = 0; d < nd; ++d) {
    if (d == dim) continue;
    r.sizes.push_back(v.sizes[d]);
    r.strides.push_back(v.strides[d]);
    r.count *= v.sizes[d];
  }
  if (nd > 0) {
    r.sizes.push_back(v.sizes[dim]);
    r.strides.push_back(v.strides[dim]);
    r.length = v.sizes[dim];
  }
  return r;
}

inline std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t step = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    s[i] = step;
    step *= std::max<int64_t>(sizes[i], 1);
  }
  return s;
}

// Whether the permuted view is already dense rows (size-1 dims may have any stride).
inline bool is_dense(const RowsLayout& r) {
  int64_t step = 1;
  for (size_t i = r.sizes.size(); i-- > 0;) {
    if (r.sizes[i] != 1 && r.strides[i] != step) return false;
    step *= r.sizes[i];
  }
  return true;
}

// `v` as dense rows of dtype `dtype` along `dim` (Note [Rows along a dim]):
// the view's own memory when it already is that (and `own` is false), else a
// temporary, which holds a converted copy of the view when `read` is true.
// write_back() copies a temporary into the view (converting back): for an
// output, or for a scan done in place.
class Rows {
 public:
  Rows(const StridedView& v, int64_t dim, ScalarType dtype, cudaStream_t stream, bool read,
       bool own = false)
      : view_(v), dtype_(dtype), layout_(rows_layout(v, dim)) {
    if (!own && v.dtype == dtype && is_dense(layout_)) {
      data_ = v.data;
      return;
    }
    const int64_t n = numel();
    buffer_ = DeviceBuffer(v.device.index,
                           static_cast<size_t>(std::max<int64_t>(n, 1)) * element_size(dtype));
    data_ = static_cast<char*>(buffer_.data());
    if (read && n > 0) copy_device(dense(), permuted(), stream);
  }
  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(data_);
  }
  int64_t count() const { return layout_.count; }
  int64_t length() const { return layout_.length; }
  int64_t numel() const { return layout_.count * layout_.length; }
  void write_back(cudaStream_t stream) {
    if (buffer_.data() != nullptr && numel() > 0) copy_device(permuted(), dense(), stream);
  }

 private:
  StridedView permuted() const {
    return StridedView{view_.data, layout_.sizes, layout_.strides, view_.dtype, view_.device};
  }
  StridedView dense() {
    if (dense_strides_.empty()) dense_strides_ = dense_strides(layout_.sizes);
    return StridedView{data_, layout_.sizes, dense_strides_, dtype_, view_.device};
  }

  StridedView view_;
  ScalarType dtype_;
  RowsLayout layout_;
  std::vector<int64_t> dense_strides_;
  DeviceBuffer buffer_;
  char* data_ = nullptr;
};

// The row of a linear index into dense rows (the segment key of CUB's
// by-key scans), with IntDivider (Note [Fast integer division]).
struct RowOf {
  IntDivider<uint64_t> length;
  __device__ __forceinline__ int64_t operator()(int64_t i) const {
    return static_cast<int64_t>(length.div(static_cast<uint64_t>(i)));
  }
};
// The position of a linear index in its row.
struct PosInRow {
  IntDivider<uint64_t> length;
  __device__ __forceinline__ int64_t operator()(int64_t i) const {
    return static_cast<int64_t>(length.divmod(static_cast<uint64_t>(i)).mod);
  }
};
// Offset of row r (segment offsets for CUB's segmented algorithms).
struct RowStart {
  int64_t length;
  __host__ __device__ __forceinline__ int64_t operator()(int64_t r) const { return r * length; }
};

// positions[r, j]: the position in dense row r (of `length` doubles) of its
// j-th element in stable sorted order, ties in index order (sort.cu's
// Note [Segmented sort without a host wait]; no NaN among the keys).
void sorted_row_positions(const double* rows, int64_t count, int64_t length, bool descending,
                          int64_t* positions, int device, cudaStream_t stream);

}  // namespace aotrt::cuda::op_common
