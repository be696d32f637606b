// CPU kernels of the pointwise family (ops/pointwise.h; Note [Pointwise
// semantics]): one pass over the output's elements in row-major order of
// its shape, each operand read through its own (broadcast) strides.
#include <cmath>
#include <complex>
#include <type_traits>
#include <array>
#include <numeric>
#include <span>
#include <vector>

#include "core/error.h"
#include "cpu/elements.h"
#include "ops/dispatch.h"
#include "ops/pointwise.h"
#include "ops/pointwise_math.h"

namespace aotrt::cpu {
namespace {
using ops::BinaryOp;
using ops::PointwiseKernels;
using ops::UnaryOp;

template <typename T>
struct real_of {
  using type = T;
};
template <typename R>
struct real_of<std::complex<R>> {
  using type = R;
};
template <typename T>
using real_t = typename real_of<T>::type;

using ops::pointwise_math::int_pow;
using ops::pointwise_math::magnitude;

template <typename V>
V complex_pow(V x, V y) {
  return std::exp(y * std::log(x));
}

// Tensor_Scalar pow with ATen's special exponents for floating and complex.
template <typename V>
V pow_scalar_exponent(V x, V e) {
  if (e == V(2)) return x * x;
  if (e == V(3)) return x * x * x;
  if (e == V(0.5)) return std::sqrt(x);
  if (e == V(-0.5)) return V(1) / std::sqrt(x);
  if (e == V(-1)) return V(1) / x;
  if (e == V(-2)) return V(1) / (x * x);
  if constexpr (is_complex_v<V>) {
    return complex_pow(x, e);
  } else {
    return std::pow(x, e);
  }
}

void unary(UnaryOp op, const StridedView& in, const StridedView& out, const char* fn) {
  const bool served = visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    using R = real_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      AOTRT_FAIL(kInvalidArgument, fn, ": bool input");
    } else {
      const std::array<std::span<const int64_t>, 2> st{in.strides, out.strides};
      for_each_element<2>(in.sizes, st, [&](const std::array<int64_t, 2>& off) {
        const auto x = load(read_elem<T>(in.data, off[0]));
        if (op == UnaryOp::kConj) {
          if constexpr (is_complex_v<T>) {
            write_elem<T>(out.data, off[1], std::conj(x));
          } else {
            AOTRT_FAIL(kInternal, fn, ": conj of a real dtype reached the kernel");
          }
        } else if (op == UnaryOp::kAbs) {
          if constexpr (is_complex_v<T>) {
            write_elem<R>(out.data, off[1], std::abs(x));
          } else if constexpr (std::is_unsigned_v<T>) {
            write_elem<T>(out.data, off[1], read_elem<T>(in.data, off[0]));
          } else if constexpr (std::is_integral_v<T>) {
            // abs of the most negative value is itself, as in ATen (two's complement).
            write_elem<T>(out.data, off[1], static_cast<T>(magnitude(x)));
          } else {
            write_elem<T>(out.data, off[1], convert_value<T>(std::abs(x)));
          }
        } else if constexpr (is_complex_v<T>) {
          write_elem<R>(out.data, off[1], std::arg(x));
        } else if constexpr (!std::is_integral_v<T>) {
          using A = decltype(x);
          const A a = std::isnan(x) ? x : (x < 0 ? A(M_PI) : A(0));
          write_elem<T>(out.data, off[1], convert_value<T>(a));
        } else {
          AOTRT_FAIL(kInternal, fn, ": integer angle reached the kernel");
        }
      });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

void binary(BinaryOp op, const StridedView& a, const StridedView& b, const StridedView& out,
            double alpha, const char* fn) {
  const bool served = visit_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    using V = decltype(load(T{}));
    const std::array<std::span<const int64_t>, 3> st{a.strides, b.strides, out.strides};
    const V al = convert_value<V>(alpha);
    for_each_element<3>(out.sizes, st, [&](const std::array<int64_t, 3>& off) {
      const V x = load(read_elem<T>(a.data, off[0]));
      const V y = load(read_elem<T>(b.data, off[1]));
      if (op == BinaryOp::kPolar || op == BinaryOp::kComplex) {
        if constexpr (std::is_floating_point_v<V>) {
          const std::complex<V> z = op == BinaryOp::kComplex
                                        ? std::complex<V>(x, y)
                                        : std::complex<V>(x * std::cos(y), x * std::sin(y));
          write_elem<std::complex<V>>(out.data, off[2], z);
        } else {
          AOTRT_FAIL(kInternal, fn, ": polar or complex of a non-floating dtype");
        }
        return;
      }
      V r{};
      switch (op) {
        case BinaryOp::kAdd:
          if constexpr (std::is_same_v<T, bool>) {
            r = x || (y && alpha != 0);
          } else if constexpr (std::is_integral_v<V>) {
            r = wrapping_add(x, wrapping_mul(al, y));
          } else {
            r = x + al * y;
          }
          break;
        case BinaryOp::kMul:
          if constexpr (std::is_same_v<T, bool>) {
            r = x && y;
          } else if constexpr (std::is_integral_v<V>) {
            r = wrapping_mul(x, y);
          } else {
            r = x * y;
          }
          break;
        case BinaryOp::kPow:
        case BinaryOp::kPowScalarExponent:
          if constexpr (std::is_same_v<T, bool>) {
            AOTRT_FAIL(kInvalidArgument, fn, ": bool pow");
          } else if constexpr (std::is_integral_v<V>) {
            r = int_pow(x, y);
          } else if (op == BinaryOp::kPowScalarExponent) {
            r = pow_scalar_exponent(x, y);
          } else if constexpr (is_complex_v<V>) {
            r = complex_pow(x, y);
          } else {
            r = std::pow(x, y);
          }
          break;
        case BinaryOp::kGcd:
          if constexpr (std::is_integral_v<V> && !std::is_same_v<T, bool>) {
            // On the magnitudes, unsigned: std::gcd of the most negative value is
            // undefined; ATen's result for it wraps to that value.
            using W = WrapOf<V>;
            const W a = x < 0 ? W(0) - static_cast<W>(x) : static_cast<W>(x);
            const W b = y < 0 ? W(0) - static_cast<W>(y) : static_cast<W>(y);
            r = static_cast<V>(std::gcd(a, b));
          } else {
            AOTRT_FAIL(kInternal, fn, ": gcd of a non-integer dtype");
          }
          break;
        default: break;
      }
      write_elem<T>(out.data, off[2], convert_value<T>(r));
    });
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(a.dtype), " is not served");
}

constexpr PointwiseKernels kPointwise{.unary = unary, .binary = binary};
AOTRT_REGISTER_KERNELS(PointwiseKernels, cpu, kPointwise);

}  // namespace
}  // namespace aotrt::cpu
