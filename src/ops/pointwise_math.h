// The integer arithmetic of the pointwise family both backends compute the
// same way (Note [Pointwise semantics]): ATen's integer pow, on the
// two's-complement wrapping of core/wraparound.h. Host and device functions
// (nvcc compiles them for src/cuda/ops/pointwise.cu).
#pragma once

#include <type_traits>

#include "core/host_device.h"
#include "core/wraparound.h"

namespace aotrt::ops::pointwise_math {

using ::aotrt::magnitude;
using ::aotrt::WrapOf;

// ATen's integer pow: repeated squaring; negative exponents give 1 for base
// 1, +-1 for base -1, else 0.
template <typename I>
AOTRT_HOST_DEVICE inline I int_pow(I base, I exp) {
  if constexpr (std::is_signed_v<I>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? I(-1) : I(1);
      return 0;
    }
  }
  I result = 1, b = base;
  for (auto e = static_cast<std::make_unsigned_t<I>>(exp); e != 0; e >>= 1) {
    if (e & 1) result = wrapping_mul(result, b);
    b = wrapping_mul(b, b);
  }
  return result;
}

}  // namespace aotrt::ops::pointwise_math
