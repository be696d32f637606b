// CUDA kernels of the pointwise family (ops/pointwise.h; Note [Pointwise
// semantics]): one thread per output element, each operand read through
// its own (broadcast) strides, each value computed as the CPU kernel does:
// float16/bfloat16 in float, integers wrapping as two's complement, complex
// in cuda::std::complex (pow as exp(y log x), ATen's special Tensor_Scalar
// exponents as products, square roots and reciprocals).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cuda/std/complex>
#include <type_traits>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/pointwise.h"
#include "ops/pointwise_math.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::BinaryOp;
using ops::PointwiseKernels;
using ops::UnaryOp;

template <typename T>
struct is_complex : std::false_type {};
template <typename R>
struct is_complex<::cuda::std::complex<R>> : std::true_type {
  using real = R;
};
template <typename T>
inline constexpr bool is_complex_v = is_complex<T>::value;

// Calls f(T{}) with the device type of t: op_common's, and complex64/128.
template <typename F>
void visit_all(ScalarType t, const char* fn, F&& f) {
  if (t == ScalarType::Complex64) return f(::cuda::std::complex<float>{});
  if (t == ScalarType::Complex128) return f(::cuda::std::complex<double>{});
  visit_dtype(t, fn, "self", std::forward<F>(f));
}

// The type an element is computed in: float for the 16-bit floats, else itself.
template <typename T>
using val_t = std::conditional_t<std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                                 float, T>;
template <typename T>
__device__ __forceinline__ val_t<T> ld(T x) {
  if constexpr (std::is_same_v<val_t<T>, T>) {
    return x;
  } else {
    return to_acc(x);
  }
}
template <typename T>
__device__ __forceinline__ T st(val_t<T> v) {
  if constexpr (std::is_same_v<val_t<T>, T>) {
    return v;
  } else {
    return from_acc<T>(v);
  }
}

using ops::pointwise_math::int_pow;
using ops::pointwise_math::magnitude;
using ops::pointwise_math::WrapOf;

template <typename V>
__device__ V real_pow(V x, V y) {
  if constexpr (is_complex_v<V>) {
    return ::cuda::std::exp(y * ::cuda::std::log(x));
  } else {
    return pow(x, y);
  }
}
template <typename V>
__device__ V pow_scalar_exponent(V x, V e) {
  using ::cuda::std::sqrt;
  if (e == V(2)) return x * x;
  if (e == V(3)) return x * x * x;
  if (e == V(0.5)) return sqrt(x);
  if (e == V(-0.5)) return V(1) / sqrt(x);
  if (e == V(-1)) return V(1) / x;
  if (e == V(-2)) return V(1) / (x * x);
  return real_pow(x, e);
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* in, char* out, ShapeIndexer<2> ix, int64_t n) {
  AOTRT_GRID_STRIDE(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    const auto x = ld(in[off[0]]);
    if constexpr (is_complex_v<T>) {
      using R = typename is_complex<T>::real;
      if (op == UnaryOp::kConj) {
        reinterpret_cast<T*>(out)[off[1]] = ::cuda::std::conj(x);
      } else {
        reinterpret_cast<R*>(out)[off[1]] =
            op == UnaryOp::kAbs ? ::cuda::std::abs(x) : ::cuda::std::arg(x);
      }
    } else if constexpr (std::is_unsigned_v<T>) {
      reinterpret_cast<T*>(out)[off[1]] = x;  // abs
    } else if constexpr (std::is_integral_v<T>) {
      // abs of the most negative value is itself, as in ATen (two's complement).
      reinterpret_cast<T*>(out)[off[1]] = static_cast<T>(magnitude(x));
    } else {
      using A = decltype(x);
      const A r = op == UnaryOp::kAbs ? A(fabs(x)) : (x != x ? x : (x < 0 ? A(M_PI) : A(0)));
      reinterpret_cast<T*>(out)[off[1]] = st<T>(r);
    }
  }
}

void unary(UnaryOp op, const StridedView& in, const StridedView& out, const char* fn) {
  const int64_t n = in.numel();
  if (n == 0) return;
  const std::span<const int64_t> strides[2] = {in.strides, out.strides};
  const ShapeIndexer<2> ix = make_indexer<2>(in.sizes, strides, fn);
  const OnDevice on(out.device);
  visit_all(in.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      AOTRT_FAIL(kInvalidArgument, fn, ": bool input");
    } else {
      AOTRT_CHECK(op != UnaryOp::kConj || is_complex_v<T>, kInternal, fn,
                  ": conj of a real dtype reached the kernel");
      AOTRT_CHECK(op != UnaryOp::kAngle || !std::is_integral_v<T>, kInternal, fn,
                  ": integer angle reached the kernel");
      unary_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(
          op, reinterpret_cast<const T*>(in.data), out.data, ix, n);
      AOTRT_CUDA_CHECK_LAUNCH();
    }
  });
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, char* out,
                              ShapeIndexer<3> ix, int64_t n, double alpha) {
  using V = val_t<T>;
  AOTRT_GRID_STRIDE(i, n) {
    int64_t off[3];
    ix.offsets(i, off);
    const V x = ld(a[off[0]]), y = ld(b[off[1]]);
    if constexpr (std::is_floating_point_v<V>) {
      if (op == BinaryOp::kPolar || op == BinaryOp::kComplex) {
        reinterpret_cast<::cuda::std::complex<V>*>(out)[off[2]] =
            op == BinaryOp::kComplex ? ::cuda::std::complex<V>(x, y)
                                     : ::cuda::std::complex<V>(x * cos(y), x * sin(y));
        continue;
      }
    }
    V r{};
    if constexpr (std::is_same_v<T, bool>) {
      r = op == BinaryOp::kAdd ? (x || (y && alpha != 0)) : (x && y);
    } else if constexpr (std::is_integral_v<V>) {
      if (op == BinaryOp::kAdd) {
        // alpha through int64: a negative double converts to an unsigned type as 0 on the
        // device (subtract's alpha is -alpha), where ATen's integer alpha wraps.
        r = wrapping_add(x, wrapping_mul(static_cast<V>(static_cast<int64_t>(alpha)), y));
      } else if (op == BinaryOp::kMul) {
        r = wrapping_mul(x, y);
      } else if (op == BinaryOp::kGcd) {
        // Euclid on the magnitudes, unsigned.
        using W = WrapOf<V>;
        W p = magnitude(x), q = magnitude(y);
        while (q != 0) {
          const W t = p % q;
          p = q;
          q = t;
        }
        r = static_cast<V>(p);
      } else {
        r = int_pow(x, y);
      }
    } else {
      if (op == BinaryOp::kAdd) {
        r = x + V(alpha) * y;
      } else if (op == BinaryOp::kMul) {
        r = x * y;
      } else if (op == BinaryOp::kPowScalarExponent) {
        r = pow_scalar_exponent(x, y);
      } else {
        r = real_pow(x, y);
      }
    }
    reinterpret_cast<T*>(out)[off[2]] = st<T>(r);
  }
}

void binary(BinaryOp op, const StridedView& a, const StridedView& b, const StridedView& out,
            double alpha, const char* fn) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const std::span<const int64_t> strides[3] = {a.strides, b.strides, out.strides};
  const ShapeIndexer<3> ix = make_indexer<3>(out.sizes, strides, fn);
  const OnDevice on(out.device);
  visit_all(a.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    using V = val_t<T>;
    const bool pow = op == BinaryOp::kPow || op == BinaryOp::kPowScalarExponent;
    AOTRT_CHECK(!(std::is_same_v<T, bool> && pow), kInvalidArgument, fn, ": bool pow");
    AOTRT_CHECK(op != BinaryOp::kGcd || (std::is_integral_v<V> && !std::is_same_v<T, bool>),
                kInternal, fn, ": gcd of a non-integer dtype");
    AOTRT_CHECK((op != BinaryOp::kPolar && op != BinaryOp::kComplex) ||
                    std::is_floating_point_v<V>,
                kInternal, fn, ": polar or complex of a non-floating dtype");
    binary_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(
        op, reinterpret_cast<const T*>(a.data), reinterpret_cast<const T*>(b.data), out.data, ix,
        n, alpha);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

constexpr PointwiseKernels kPointwise{.unary = unary, .binary = binary};
AOTRT_REGISTER_KERNELS(PointwiseKernels, cuda, kPointwise);

}  // namespace
}  // namespace aotrt::cuda
