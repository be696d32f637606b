// ATen's promoteTypes for the dtypes the op families serve: bool below every
// number, integers by size (uint8 with int8 gives int16), any integer below
// any floating type, float16 with bfloat16 gives float32.
#pragma once

#include "core/dtype.h"
#include "core/error.h"

namespace aotrt::ops {

inline ScalarType promote_types(ScalarType a, ScalarType b, const char* fn) {
  if (a == b) return a;
  if (a == ScalarType::Bool) return b;
  if (b == ScalarType::Bool) return a;
  AOTRT_CHECK(!is_complex(a) && !is_complex(b), kUnsupported, fn, ": promoting ", dtype_name(a),
              " with ", dtype_name(b), " is not served");
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {
    const bool half_pair = (a == ScalarType::Float16 && b == ScalarType::BFloat16) ||
                           (a == ScalarType::BFloat16 && b == ScalarType::Float16);
    if (half_pair) return ScalarType::Float32;
    return element_size(a) >= element_size(b) ? a : b;
  }
  auto is_unsigned = [](ScalarType t) {
    return t == ScalarType::UInt8 || t == ScalarType::UInt16 || t == ScalarType::UInt32 ||
           t == ScalarType::UInt64;
  };
  if (is_unsigned(a) == is_unsigned(b)) return element_size(a) >= element_size(b) ? a : b;
  const ScalarType u = is_unsigned(a) ? a : b, s = is_unsigned(a) ? b : a;
  AOTRT_CHECK(u == ScalarType::UInt8, kUnsupported, fn, ": promoting ", dtype_name(a), " with ",
              dtype_name(b), " is not served");
  return element_size(s) > 1 ? s : ScalarType::Int16;
}

}  // namespace aotrt::ops
