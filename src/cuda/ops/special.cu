// CUDA kernels of the special family (ops/special.h): one thread per output
// element (grid-stride), each operand read through its own strides (a host
// 0-d operand passed by value), the value computed in double by
// ops/special_math.h (the functions the CPU kernels run) and rounded to the
// output's dtype, on the current stream.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <span>

#include "cuda/ops/common.cuh"
// cuda/int_divider.h (through common.cuh) defines it with __forceinline__ for
// its own functions; ops/special_math.h takes core/host_device.h's.
#undef AOTRT_HOST_DEVICE
#include "ops/dispatch.h"
#include "ops/special.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::SpecialKernels;
using ops::SpecialOp;

template <typename T>
__global__ void unary_kernel(SpecialOp op, int64_t order, ShapeIndexer<2> ix, const T* x, T* out,
                             int64_t n) {
  AOTRT_GRID_STRIDE(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    const double v = static_cast<double>(to_acc(x[off[0]]));
    out[off[1]] = from_acc<T>(ops::special_math::unary(op, order, v));
  }
}

// An operand on the device, or a host 0-d tensor's value (data null).
template <typename T>
struct Operand {
  const T* data;
  double value;
  __device__ __forceinline__ double at(int64_t off) const {
    return data != nullptr ? static_cast<double>(to_acc(data[off])) : value;
  }
};

template <typename T>
Operand<T> operand(const StridedView& v) {
  if (v.device.is_cuda()) return {reinterpret_cast<const T*>(v.data), 0};
  T host;  // a 0-d tensor in host memory (Note [Special semantics])
  std::memcpy(&host, v.data, sizeof(T));
  return {nullptr, static_cast<double>(to_acc(host))};
}

template <typename T>
__global__ void binary_kernel(SpecialOp op, ShapeIndexer<3> ix, Operand<T> a, Operand<T> b,
                              T* out, int64_t n) {
  AOTRT_GRID_STRIDE(i, n) {
    int64_t off[3];
    ix.offsets(i, off);
    out[off[2]] = from_acc<T>(ops::special_math::binary(op, a.at(off[0]), b.at(off[1])));
  }
}

// f(T{}) for the floating dtypes the family computes in.
template <typename F>
void visit_floating(ScalarType t, const char* fn, F&& f) {
  switch (t) {
    case ScalarType::Float16: return f(__half{});
    case ScalarType::BFloat16: return f(__nv_bfloat16{});
    case ScalarType::Float32: return f(float{});
    case ScalarType::Float64: return f(double{});
    default:
      AOTRT_FAIL(kInternal, fn, ": dtype ", dtype_name(t), " reached the special kernels");
  }
}

// launch(T{}, indexer, n, stream) for out's elements on out's device and its
// current stream; N views of out's shape (out last).
template <int N, typename Launch>
void over_elements(const StridedView& out, const std::span<const int64_t> (&strides)[N],
                   const char* fn, Launch&& launch) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int device = device_of(out);
  DeviceGuard guard(device);
  const cudaStream_t stream = current_cuda_stream(device);
  const ShapeIndexer<N> ix = make_indexer<N>(out.sizes, strides, fn);
  visit_floating(out.dtype, fn, [&](auto tag) {
    launch(tag, ix, n, stream);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

void unary(SpecialOp op, int64_t order, const StridedView& x, const StridedView& out,
           const char* fn) {
  const std::span<const int64_t> strides[2] = {x.strides, out.strides};
  over_elements(out, strides, fn, [&](auto tag, const ShapeIndexer<2>& ix, int64_t n,
                                      cudaStream_t stream) {
    using T = decltype(tag);
    unary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        op, order, ix, reinterpret_cast<const T*>(x.data), reinterpret_cast<T*>(out.data), n);
  });
}

void binary(SpecialOp op, const StridedView& a, const StridedView& b, const StridedView& out,
            const char* fn) {
  const std::span<const int64_t> strides[3] = {a.strides, b.strides, out.strides};
  over_elements(out, strides, fn, [&](auto tag, const ShapeIndexer<3>& ix, int64_t n,
                                      cudaStream_t stream) {
    using T = decltype(tag);
    binary_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        op, ix, operand<T>(a), operand<T>(b), reinterpret_cast<T*>(out.data), n);
  });
}

constexpr SpecialKernels kSpecial{.unary = unary, .binary = binary};
AOTRT_REGISTER_KERNELS(SpecialKernels, cuda, kSpecial);

}  // namespace
}  // namespace aotrt::cuda
