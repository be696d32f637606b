// Note [Integer wraparound]
// ATen's integer kernels (sums, products, pow, abs, scans, pooling windows,
// integer bmm) wrap as two's complement when they overflow. C++ leaves signed
// overflow undefined, and types narrower than int promote to (signed) int, so
// aotrt computes in an unsigned type at least as wide as unsigned int and
// converts back (the op_shims fuzzer found int16 pow doing 63489 * 63489 in
// int, and an int64 avg_pool window summing past 2^63). Non-integer
// arguments are added and multiplied as they are. Host and device functions:
// the CPU kernels and the CUDA kernels (through ops/pointwise_math.h,
// ops/pooling_math.h) use these.
#pragma once

#include <type_traits>

#include "core/host_device.h"

namespace aotrt {

template <typename I>
using WrapOf = std::common_type_t<std::make_unsigned_t<I>, unsigned>;

template <typename A>
inline constexpr bool wraps_v = std::is_integral_v<A> && !std::is_same_v<A, bool>;

template <typename A>
AOTRT_HOST_DEVICE inline A wrapping_add(A a, A b) {
  if constexpr (wraps_v<A>) {
    return static_cast<A>(static_cast<WrapOf<A>>(a) + static_cast<WrapOf<A>>(b));
  } else {
    return a + b;
  }
}

template <typename A>
AOTRT_HOST_DEVICE inline A wrapping_mul(A a, A b) {
  if constexpr (wraps_v<A>) {
    return static_cast<A>(static_cast<WrapOf<A>>(a) * static_cast<WrapOf<A>>(b));
  } else {
    return a * b;
  }
}

// -a, wrapping (the most negative value is its own negation, as in ATen).
template <typename I>
AOTRT_HOST_DEVICE inline I wrapping_neg(I a) {
  return static_cast<I>(WrapOf<I>(0) - static_cast<WrapOf<I>>(a));
}

// |x| in the unsigned type: the most negative value's magnitude wraps.
template <typename I>
AOTRT_HOST_DEVICE inline WrapOf<I> magnitude(I x) {
  using W = WrapOf<I>;
  if constexpr (std::is_signed_v<I>) {
    return x < 0 ? W(0) - static_cast<W>(x) : static_cast<W>(x);
  } else {
    return static_cast<W>(x);
  }
}

}  // namespace aotrt
