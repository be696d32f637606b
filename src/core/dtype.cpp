#include "core/dtype.h"

#include "core/error.h"

namespace aotrt {

size_t element_size(int32_t code) {
  switch (static_cast<ScalarType>(code)) {
    case ScalarType::UInt8:
    case ScalarType::Int8:
    case ScalarType::Bool:
    case ScalarType::Float8_e5m2:
    case ScalarType::Float8_e4m3fn:
    case ScalarType::Float8_e5m2fnuz:
    case ScalarType::Float8_e4m3fnuz:
      return 1;
    case ScalarType::Int16:
    case ScalarType::UInt16:
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return 2;
    case ScalarType::Int32:
    case ScalarType::UInt32:
    case ScalarType::Float32:
    case ScalarType::Complex32:
      return 4;
    case ScalarType::Int64:
    case ScalarType::UInt64:
    case ScalarType::Float64:
    case ScalarType::Complex64:
      return 8;
    case ScalarType::Complex128:
      return 16;
  }
  return 0;
}

bool is_valid_dtype(int32_t code) { return element_size(code) != 0; }

const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::UInt8: return "uint8";
    case ScalarType::Int8: return "int8";
    case ScalarType::Int16: return "int16";
    case ScalarType::Int32: return "int32";
    case ScalarType::Int64: return "int64";
    case ScalarType::Float16: return "float16";
    case ScalarType::Float32: return "float32";
    case ScalarType::Float64: return "float64";
    case ScalarType::Complex32: return "complex32";
    case ScalarType::Complex64: return "complex64";
    case ScalarType::Complex128: return "complex128";
    case ScalarType::Bool: return "bool";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Float8_e5m2: return "float8_e5m2";
    case ScalarType::Float8_e4m3fn: return "float8_e4m3fn";
    case ScalarType::Float8_e5m2fnuz: return "float8_e5m2fnuz";
    case ScalarType::Float8_e4m3fnuz: return "float8_e4m3fnuz";
    case ScalarType::UInt16: return "uint16";
    case ScalarType::UInt32: return "uint32";
    case ScalarType::UInt64: return "uint64";
  }
  return "unknown";
}

bool dtype_from_name(std::string_view name, ScalarType* out) {
  for (int32_t code = 0; code < 64; ++code) {
    if (is_valid_dtype(code) && name == dtype_name(static_cast<ScalarType>(code))) {
      *out = static_cast<ScalarType>(code);
      return true;
    }
  }
  return false;
}

bool is_floating(ScalarType t) {
  switch (t) {
    case ScalarType::Float16:
    case ScalarType::Float32:
    case ScalarType::Float64:
    case ScalarType::BFloat16:
    case ScalarType::Float8_e5m2:
    case ScalarType::Float8_e4m3fn:
    case ScalarType::Float8_e5m2fnuz:
    case ScalarType::Float8_e4m3fnuz:
      return true;
    default:
      return false;
  }
}

bool is_complex(ScalarType t) {
  return t == ScalarType::Complex32 || t == ScalarType::Complex64 ||
         t == ScalarType::Complex128;
}

ScalarType to_dtype(int32_t code, const char* what) {
  AOTRT_CHECK(is_valid_dtype(code), kInvalidArgument, what, ": ", code,
              " is not a dtype code aotrt knows");
  return static_cast<ScalarType>(code);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal half: normalise into a float.
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;             // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;            // rounds to inf
  if (abs < 0x38800000u) {                                  // subnormal or zero half
    if (abs < 0x33000000u) return sign;                     // below half of the smallest subnormal
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;                  // 14..24
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return sign | static_cast<uint16_t>(result);
  }
  uint32_t result = ((abs >> 13) - (112u << 10));
  const uint32_t remainder = abs & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return sign | static_cast<uint16_t>(result);
}

}  // namespace aotrt
