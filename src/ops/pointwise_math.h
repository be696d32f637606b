// The integer arithmetic of the pointwise family both backends compute the
// same way (Note [Pointwise semantics]): two's-complement wrapping, ATen's
// integer pow, magnitudes. Host and device functions (nvcc compiles them for
// src/cuda/ops/pointwise.cu).
#pragma once

#include <type_traits>

#if defined(__CUDACC__)
#define AOTRT_POINTWISE_HD __host__ __device__
#else
#define AOTRT_POINTWISE_HD
#endif

namespace aotrt::ops::pointwise_math {

// Two's-complement arithmetic of I, as ATen's integer kernels give it: done
// in an unsigned type at least as wide as unsigned int, since narrower ones
// promote to (signed) int, whose overflow is undefined (the op_shims fuzzer
// found int16 pow doing 63489 * 63489 in int).
template <typename I>
using WrapOf = std::common_type_t<std::make_unsigned_t<I>, unsigned>;

template <typename I>
AOTRT_POINTWISE_HD inline I wrap_mul(I a, I b) {
  return static_cast<I>(static_cast<WrapOf<I>>(a) * static_cast<WrapOf<I>>(b));
}

template <typename I>
AOTRT_POINTWISE_HD inline I wrap_add(I a, I b) {
  return static_cast<I>(static_cast<WrapOf<I>>(a) + static_cast<WrapOf<I>>(b));
}

// |x| in the unsigned type: the most negative value's magnitude wraps.
template <typename I>
AOTRT_POINTWISE_HD inline WrapOf<I> magnitude(I x) {
  using W = WrapOf<I>;
  if constexpr (std::is_signed_v<I>) {
    return x < 0 ? W(0) - static_cast<W>(x) : static_cast<W>(x);
  } else {
    return static_cast<W>(x);
  }
}

// ATen's integer pow: repeated squaring; negative exponents give 1 for base
// 1, +-1 for base -1, else 0.
template <typename I>
AOTRT_POINTWISE_HD inline I int_pow(I base, I exp) {
  if constexpr (std::is_signed_v<I>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? I(-1) : I(1);
      return 0;
    }
  }
  I result = 1, b = base;
  for (auto e = static_cast<std::make_unsigned_t<I>>(exp); e != 0; e >>= 1) {
    if (e & 1) result = wrap_mul(result, b);
    b = wrap_mul(b, b);
  }
  return result;
}

}  // namespace aotrt::ops::pointwise_math

#undef AOTRT_POINTWISE_HD
