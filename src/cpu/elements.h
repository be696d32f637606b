// Elements of every dtype on the CPU: the C++ type of a dtype (visit_dtype),
// widening a stored element to a computable value (load), converting a
// value to a stored element with ATen's CPU rules (convert_value) and
// visiting the elements of views of one shape (for_each_element), shared by
// the strided copy (cpu/copy.cpp) and the op kernels (cpu/ops/).
#pragma once

#include <array>
#include <cmath>
#include <complex>
#include <cstring>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/float8.h"
#include "core/wraparound.h"

namespace aotrt::cpu {

using c64 = std::complex<float>;
using c128 = std::complex<double>;

template <typename T>
constexpr bool is_complex_v = std::is_same_v<T, c64> || std::is_same_v<T, c128>;

// A stored complex32 element (ATen's ComplexHalf): two float16 halves. Only the
// strided copy converts it (cpu/copy.cpp), through complex64, which holds every
// value; visit_dtype leaves it out, so no op kernel is compiled for it.
struct ComplexHalf {
  Half real, imag;
};

// A stored float8 element of dtype T (Note [Float8 conversions] in
// core/float8.h). Like ComplexHalf, only the strided copy converts it.
template <ScalarType T>
struct Float8 {
  static constexpr ScalarType dtype = T;
  uint8_t bits;
};
template <typename T>
constexpr bool is_float8_v = false;
template <ScalarType T>
constexpr bool is_float8_v<Float8<T>> = true;

// Widen a stored element to a computable value.
template <typename S>
auto load(const S& s) {
  if constexpr (is_float8_v<S>) {
    return float8_to_float(s.bits, float8_format(S::dtype));
  } else if constexpr (std::is_same_v<S, Half>) {
    return half_to_float(s.bits);
  } else if constexpr (std::is_same_v<S, ComplexHalf>) {
    return c64(half_to_float(s.real.bits), half_to_float(s.imag.bits));
  } else if constexpr (std::is_same_v<S, BFloat16>) {
    return bfloat16_to_float(s.bits);
  } else {
    return s;
  }
}

// Note [Float to integer conversion]
// C++ leaves converting a NaN or out-of-range float to an integer undefined;
// ATen's CPU result is what x86-64 compilers emit for static_cast, and aotrt
// gives the same without undefined behaviour:
//  - int64: truncate; NaN or outside [-2^63, 2^63) gives INT64_MIN;
//  - int32 and everything narrower (int16, int8, uint16, uint8): through
//    int32, whose NaN or out-of-range value is INT32_MIN, then the low bits
//    (so 300.7 -> uint8 44, NaN -> uint8 0);
//  - uint32: through int64, then the low 32 bits;
//  - uint64: below 2^63 through int64; from 2^63 on, v - 2^63 through int64
//    with the top bit flipped (so 1e19 is exact, inf gives 0).
// CUDA saturates instead; the CUDA backend has its own rule.
inline int64_t float_to_int64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(v);
}

inline int32_t float_to_int32(double v) {
  // Truncation keeps (-2^31 - 1, 2^31) inside int32.
  if (!(v > -2147483649.0 && v < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);
}

template <typename I>
I float_to_int(double v) {
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (!(v >= 9223372036854775808.0)) return static_cast<uint64_t>(float_to_int64(v));
    return static_cast<uint64_t>(float_to_int64(v - 9223372036854775808.0)) ^ (uint64_t{1} << 63);
  } else if constexpr (sizeof(I) == 8 || std::is_same_v<I, uint32_t>) {
    return static_cast<I>(float_to_int64(v));
  } else {
    return static_cast<I>(float_to_int32(v));
  }
}

template <typename D, typename V>
D convert_value(V v) {
  if constexpr (std::is_same_v<D, bool>) {
    if constexpr (is_complex_v<V>) {
      return v.real() != 0 || v.imag() != 0;
    } else {
      return v != V(0);
    }
  } else if constexpr (std::is_same_v<D, ComplexHalf>) {
    const c64 c = convert_value<c64>(v);
    return ComplexHalf{Half{float_to_half(c.real())}, Half{float_to_half(c.imag())}};
  } else if constexpr (is_complex_v<V>) {
    if constexpr (is_complex_v<D>) {
      return D(static_cast<typename D::value_type>(v.real()),
               static_cast<typename D::value_type>(v.imag()));
    } else {
      return convert_value<D>(v.real());  // ATen drops the imaginary part
    }
  } else if constexpr (is_float8_v<D>) {
    return D{float_to_float8(static_cast<float>(v), float8_format(D::dtype))};
  } else if constexpr (std::is_same_v<D, Half>) {
    return Half{float_to_half(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<D, BFloat16>) {
    return BFloat16{float_to_bfloat16(static_cast<float>(v))};
  } else if constexpr (is_complex_v<D>) {
    return D(static_cast<typename D::value_type>(v), 0);
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) {
    return float_to_int<D>(static_cast<double>(v));
  } else {
    return static_cast<D>(v);
  }
}

// ATen's integral types (AT_DISPATCH_INTEGRAL_TYPES: uint8, int8, int16, int32,
// int64), the ones its integer matmul and convolution kernels serve.
inline bool is_aten_integral(ScalarType t) {
  return t == ScalarType::UInt8 || t == ScalarType::Int8 || t == ScalarType::Int16 ||
         t == ScalarType::Int32 || t == ScalarType::Int64;
}

// Calls f(T{}) with the C++ type of a dtype aotrt converts; false otherwise.
template <typename F>
bool visit_dtype(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::UInt8: f(uint8_t{}); return true;
    case ScalarType::Int8: f(int8_t{}); return true;
    case ScalarType::Int16: f(int16_t{}); return true;
    case ScalarType::Int32: f(int32_t{}); return true;
    case ScalarType::Int64: f(int64_t{}); return true;
    case ScalarType::UInt16: f(uint16_t{}); return true;
    case ScalarType::UInt32: f(uint32_t{}); return true;
    case ScalarType::UInt64: f(uint64_t{}); return true;
    case ScalarType::Float16: f(Half{}); return true;
    case ScalarType::BFloat16: f(BFloat16{}); return true;
    case ScalarType::Float32: f(float{}); return true;
    case ScalarType::Float64: f(double{}); return true;
    case ScalarType::Bool: f(bool{}); return true;
    case ScalarType::Complex64: f(c64{}); return true;
    case ScalarType::Complex128: f(c128{}); return true;
    default: return false;  // float8 and complex32: only the copy converts them
  }
}

// The element `elem` elements past base (any dtype's C++ type T; memcpy, so
// views of any alignment are fine).
// A bool element is read as its byte, any nonzero byte true: memory of a bool
// tensor may hold other bytes than 0 and 1 (a view_dtype of uint8, or a
// fuzzer's fill), and loading such a byte as bool is undefined.
template <typename T>
T read_elem(const char* base, int64_t elem) {
  if constexpr (std::is_same_v<T, bool>) {
    uint8_t byte;
    std::memcpy(&byte, base + elem, 1);
    return byte != 0;
  } else {
    T v;
    std::memcpy(&v, base + elem * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return v;
  }
}
template <typename T>
void write_elem(char* base, int64_t elem, T v) {
  std::memcpy(base + elem * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

// f(offset in each view) for every index of the shape, row-major.
template <size_t N, typename F>
void for_each_element(std::span<const int64_t> shape,
                      const std::array<std::span<const int64_t>, N>& strides, F&& f) {
  const size_t nd = shape.size();
  for (int64_t s : shape) {
    if (s == 0) return;
  }
  std::vector<int64_t> idx(nd, 0);
  std::array<int64_t, N> off{};
  while (true) {
    f(off);
    size_t d = nd;
    while (true) {
      if (d == 0) return;
      --d;
      if (++idx[d] < shape[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k) off[k] -= (shape[d] - 1) * strides[k][d];
      idx[d] = 0;
    }
  }
}

template <typename V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Element i of a float32, bfloat16 or float16 buffer as float32 (the
// floating dtypes a kernel that computes in float32 reads at run time).
inline float load_float_element(const void* p, int64_t i, ScalarType dt) {
  switch (dt) {
    case ScalarType::BFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
    case ScalarType::Float16: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

}  // namespace aotrt::cpu
