// Element types. Codes equal c10::ScalarType, which is what the
// aoti_torch_dtype_* getters return and what generated code passes back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace aotrt {

enum class ScalarType : int32_t {
  UInt8 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  Float16 = 5,
  Float32 = 6,
  Float64 = 7,
  Complex32 = 8,
  Complex64 = 9,
  Complex128 = 10,
  Bool = 11,
  BFloat16 = 15,
  Float8_e5m2 = 23,
  Float8_e4m3fn = 24,
  Float8_e5m2fnuz = 25,
  Float8_e4m3fnuz = 26,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
};

// Bytes per element; 0 for a code that is no dtype aotrt knows.
size_t element_size(int32_t code);
inline size_t element_size(ScalarType t) { return element_size(static_cast<int32_t>(t)); }
bool is_valid_dtype(int32_t code);
const char* dtype_name(ScalarType t);
// The dtype dtype_name() calls `name` ("bfloat16"), or false when none does.
bool dtype_from_name(std::string_view name, ScalarType* out);
bool is_floating(ScalarType t);
bool is_complex(ScalarType t);

// ScalarType from a code, or throws kInvalidArgument naming `what`.
ScalarType to_dtype(int32_t code, const char* what);

// IEEE half and bfloat16, as their bits, with round-to-nearest-even
// conversion from float (NaN stays NaN).
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
inline float bfloat16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint16_t float_to_bfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace aotrt
