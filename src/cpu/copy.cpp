// Strided element loops for the CPU: copy with dtype conversion, and fill.
//
// Dims of size 1 are dropped, the rest ordered by the destination's strides
// (innermost last) and merged where both sides are contiguous across them;
// the innermost run becomes one memcpy when both sides are dense there.
// All index arithmetic is 64-bit.
#include <algorithm>
#include <array>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "cpu/cpu.h"

namespace aotrt::cpu {
namespace {

constexpr int kMaxDims = 64;

// Dims of a loop nest over one or two views, in bytes.
struct LoopNest {
  int ndim = 0;
  std::array<int64_t, kMaxDims> sizes{};
  std::array<int64_t, kMaxDims> dst{};
  std::array<int64_t, kMaxDims> src{};
};

LoopNest make_nest(const StridedView& d, const StridedView* s) {
  AOTRT_CHECK(d.dim() <= kMaxDims, kUnsupported, "copy: ", d.dim(),
              " dims; at most ", kMaxDims, " are served");
  const int64_t di = static_cast<int64_t>(d.itemsize());
  const int64_t si = s ? static_cast<int64_t>(s->itemsize()) : 0;
  std::array<int, kMaxDims> order{};
  int n = 0;
  for (int i = 0; i < d.dim(); ++i) {
    if (d.sizes[i] != 1) order[n++] = i;
  }
  // Innermost = smallest destination stride; stable keeps row-major ties.
  std::stable_sort(order.begin(), order.begin() + n,
                   [&](int a, int b) { return d.strides[a] > d.strides[b]; });
  LoopNest nest;
  for (int k = 0; k < n; ++k) {
    const int i = order[k];
    const int64_t size = d.sizes[i], ds = d.strides[i] * di, ss = s ? s->strides[i] * si : 0;
    if (nest.ndim > 0) {
      const int j = nest.ndim - 1;
      // Merge into the previous (outer) dim when it steps over exactly this one.
      if (nest.dst[j] == ds * size && nest.src[j] == ss * size) {
        nest.sizes[j] *= size;
        nest.dst[j] = ds;
        nest.src[j] = ss;
        continue;
      }
    }
    nest.sizes[nest.ndim] = size;
    nest.dst[nest.ndim] = ds;
    nest.src[nest.ndim] = ss;
    ++nest.ndim;
  }
  if (nest.ndim == 0) {  // a single element
    nest.ndim = 1;
    nest.sizes[0] = 1;
  }
  return nest;
}

// Runs inner(dst, src, n, dst_step, src_step) over every innermost run.
template <typename Inner>
void for_each_run(const LoopNest& nest, char* dst, const char* src, Inner&& inner) {
  const int outer = nest.ndim - 1;
  std::array<int64_t, kMaxDims> index{};
  while (true) {
    inner(dst, src, nest.sizes[outer], nest.dst[outer], nest.src[outer]);
    int d = outer - 1;
    for (; d >= 0; --d) {
      dst += nest.dst[d];
      src += nest.src[d];
      if (++index[d] < nest.sizes[d]) break;
      dst -= nest.dst[d] * nest.sizes[d];
      src -= nest.src[d] * nest.sizes[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// --- Element conversion --------------------------------------------------------

using c64 = std::complex<float>;
using c128 = std::complex<double>;

template <typename T>
constexpr bool is_complex_v = std::is_same_v<T, c64> || std::is_same_v<T, c128>;

// Widen a stored element to a computable value.
template <typename S>
auto load(const S& s) {
  if constexpr (std::is_same_v<S, Half>) {
    return half_to_float(s.bits);
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
int64_t float_to_int64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(v);
}

int32_t float_to_int32(double v) {
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
  } else if constexpr (is_complex_v<V>) {
    if constexpr (is_complex_v<D>) {
      return D(static_cast<typename D::value_type>(v.real()),
               static_cast<typename D::value_type>(v.imag()));
    } else {
      return convert_value<D>(v.real());  // ATen drops the imaginary part
    }
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

template <typename D, typename S>
void convert_run(char* dst, const char* src, int64_t n, int64_t ds, int64_t ss) {
  for (int64_t i = 0; i < n; ++i) {
    S s;
    std::memcpy(&s, src + i * ss, sizeof(S));
    const D d = convert_value<D>(load(s));
    std::memcpy(dst + i * ds, &d, sizeof(D));
  }
}

using RunFn = void (*)(char*, const char*, int64_t, int64_t, int64_t);

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
    default: return false;  // float8 and complex32: same-dtype copies only
  }
}

RunFn converter(ScalarType dst, ScalarType src) {
  RunFn fn = nullptr;
  visit_dtype(dst, [&](auto d) {
    visit_dtype(src, [&](auto s) { fn = &convert_run<decltype(d), decltype(s)>; });
  });
  return fn;
}

template <typename T>
void copy_run_typed(char* dst, const char* src, int64_t n, int64_t ds, int64_t ss) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, sizeof(T));
}

void copy_run_bytes(char* dst, const char* src, int64_t n, int64_t ds, int64_t ss,
                    size_t itemsize) {
  if (ds == static_cast<int64_t>(itemsize) && ss == ds) {
    std::memcpy(dst, src, static_cast<size_t>(n) * itemsize);
    return;
  }
  switch (itemsize) {
    case 1: copy_run_typed<uint8_t>(dst, src, n, ds, ss); return;
    case 2: copy_run_typed<uint16_t>(dst, src, n, ds, ss); return;
    case 4: copy_run_typed<uint32_t>(dst, src, n, ds, ss); return;
    case 8: copy_run_typed<uint64_t>(dst, src, n, ds, ss); return;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, itemsize);
  }
}

}  // namespace

bool can_convert(ScalarType dst_dtype, ScalarType src_dtype) {
  return dst_dtype == src_dtype || converter(dst_dtype, src_dtype) != nullptr;
}

void copy_strided(const StridedView& dst, const StridedView& src) {
  AOTRT_CHECK(dst.sizes.size() == src.sizes.size(), kInternal,
              "copy_strided: views of different rank");
  if (dst.numel() == 0) return;
  const LoopNest nest = make_nest(dst, &src);
  if (dst.dtype == src.dtype) {
    const size_t itemsize = dst.itemsize();
    for_each_run(nest, dst.data, src.data,
                 [itemsize](char* d, const char* s, int64_t n, int64_t ds, int64_t ss) {
                   copy_run_bytes(d, s, n, ds, ss, itemsize);
                 });
    return;
  }
  const RunFn fn = converter(dst.dtype, src.dtype);
  AOTRT_CHECK(fn != nullptr, kUnsupported, "copy from ", dtype_name(src.dtype), " to ",
              dtype_name(dst.dtype), " is not served by aotrt");
  for_each_run(nest, dst.data, src.data, fn);
}

void fill_zero(const StridedView& dst) {
  if (dst.numel() == 0) return;
  const LoopNest nest = make_nest(dst, nullptr);
  const size_t itemsize = dst.itemsize();
  for_each_run(nest, dst.data, nullptr,
               [itemsize](char* d, const char*, int64_t n, int64_t ds, int64_t) {
                 if (ds == static_cast<int64_t>(itemsize)) {
                   std::memset(d, 0, static_cast<size_t>(n) * itemsize);
                 } else {
                   for (int64_t i = 0; i < n; ++i) std::memset(d + i * ds, 0, itemsize);
                 }
               });
}

}  // namespace aotrt::cpu
