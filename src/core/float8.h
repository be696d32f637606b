// The four 8-bit floating dtypes (ScalarType Float8_*), as their bits, with
// the conversions ATen's CPU makes.
//
// Note [Float8 conversions]
// Formats (sign, exponent, mantissa bits, exponent bias):
//   float8_e4m3fn    1-4-3, bias 7:  no infinity; S.1111.111 is NaN; max 448.
//   float8_e5m2      1-5-2, bias 15: IEEE-like; infinities; max 57344.
//   float8_e4m3fnuz  1-4-3, bias 8:  0x80 is the only NaN; no -0, no infinity; max 240.
//   float8_e5m2fnuz  1-5-2, bias 16: 0x80 is the only NaN; no -0, no infinity; max 57344.
// float to float8 rounds to nearest, ties to even (subnormals included), as
// torch 2.13 converts on the CPU (checked against eager for every code and
// the midpoints between codes, tests/unit/ops gen_ops_reference.py's
// float8 cases):
//   e4m3fn   a value that rounds past 448, and +-inf, saturates to +-448;
//            NaN stays NaN (0x7F with its sign);
//   e5m2     a value that rounds past 57344 becomes +-inf; NaN is 0x7F with
//            its sign;
//   *fnuz    NaN, +-inf and a value that rounds past the max become 0x80
//            (NaN); a value that rounds to zero is +0.
// Other dtypes reach float8 through float (ATen's Float8 constructors take a
// float), so a double is rounded twice, as there.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/dtype.h"

namespace aotrt {

struct Float8Format {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool fnuz;  // 0x80 is NaN, no -0 and no infinity
  bool has_inf;
  float max;
};

inline constexpr Float8Format kFloat8E4m3fn{4, 3, 7, false, false, 448.0f};
inline constexpr Float8Format kFloat8E5m2{5, 2, 15, false, true, 57344.0f};
inline constexpr Float8Format kFloat8E4m3fnuz{4, 3, 8, true, false, 240.0f};
inline constexpr Float8Format kFloat8E5m2fnuz{5, 2, 16, true, false, 57344.0f};

inline bool is_float8(ScalarType t) {
  return t == ScalarType::Float8_e4m3fn || t == ScalarType::Float8_e5m2 ||
         t == ScalarType::Float8_e4m3fnuz || t == ScalarType::Float8_e5m2fnuz;
}

// The format of a float8 dtype (kFloat8E4m3fn for any other: callers check
// is_float8 first).
inline constexpr const Float8Format& float8_format(ScalarType t) {
  switch (t) {
    case ScalarType::Float8_e5m2: return kFloat8E5m2;
    case ScalarType::Float8_e4m3fnuz: return kFloat8E4m3fnuz;
    case ScalarType::Float8_e5m2fnuz: return kFloat8E5m2fnuz;
    default: return kFloat8E4m3fn;
  }
}

inline float float8_to_float(uint8_t bits, const Float8Format& f) {
  const bool negative = (bits & 0x80) != 0;
  const int mant_mask = (1 << f.mantissa_bits) - 1;
  const int exp_max = (1 << f.exponent_bits) - 1;
  const int e = (bits >> f.mantissa_bits) & exp_max;
  const int m = bits & mant_mask;
  if (f.fnuz && bits == 0x80) return std::numeric_limits<float>::quiet_NaN();
  if (!f.fnuz && e == exp_max) {
    if (f.has_inf) {
      if (m != 0) return std::copysign(std::numeric_limits<float>::quiet_NaN(), negative ? -1.0f : 1.0f);
      return negative ? -std::numeric_limits<float>::infinity()
                      : std::numeric_limits<float>::infinity();
    }
    if (m == mant_mask) {
      return std::copysign(std::numeric_limits<float>::quiet_NaN(), negative ? -1.0f : 1.0f);
    }
  }
  // Subnormal: m * 2^(1 - bias - mantissa_bits); normal: (2^mb + m) * 2^(e - bias - mb).
  const float magnitude =
      e == 0 ? std::ldexp(static_cast<float>(m), 1 - f.bias - f.mantissa_bits)
             : std::ldexp(static_cast<float>((1 << f.mantissa_bits) + m),
                          e - f.bias - f.mantissa_bits);
  return negative ? -magnitude : magnitude;
}

// Note [Float8 conversions].
inline uint8_t float_to_float8(float v, const Float8Format& f) {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  if (std::isnan(v)) return f.fnuz ? 0x80 : static_cast<uint8_t>(sign | 0x7F);
  const uint8_t overflow =
      f.fnuz ? 0x80
             : static_cast<uint8_t>(sign | (f.has_inf ? 0x7C      // +-inf (e5m2)
                                                      : 0x7E));   // +-448 (e4m3fn)
  const double a = std::fabs(static_cast<double>(v));
  if (std::isinf(a)) return overflow;
  const int min_normal_exp = 1 - f.bias;
  int exp2 = 0;
  (void)std::frexp(a, &exp2);  // a = fraction * 2^exp2, fraction in [0.5, 1)
  const int exp = std::max(exp2 - 1, min_normal_exp);
  // a in units of its float8 spacing (exact: a power-of-two scaling of a float),
  // rounded to nearest even by the default rounding mode.
  const double units = std::nearbyint(std::ldexp(a, f.mantissa_bits - exp));
  const double rounded = std::ldexp(units, exp - f.mantissa_bits);
  if (rounded > static_cast<double>(f.max)) return overflow;
  if (rounded == 0.0) return f.fnuz ? 0x00 : sign;
  const auto u = static_cast<int>(units);  // 0 < u <= 2^(mb+1)
  int code;
  if (u < (1 << f.mantissa_bits)) {
    code = u;  // subnormal (exp == min_normal_exp)
  } else if (u == (2 << f.mantissa_bits)) {
    code = (exp + 1 + f.bias) << f.mantissa_bits;  // rounded up to the next binade
  } else {
    code = ((exp + f.bias) << f.mantissa_bits) | (u - (1 << f.mantissa_bits));
  }
  return static_cast<uint8_t>(sign | code);
}

}  // namespace aotrt
