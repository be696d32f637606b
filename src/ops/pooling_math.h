// The arithmetic of the pooling family that both backends' kernels compute
// the same way (Note [Pooling semantics]): window starts of fractional max
// pools, the grid sampler's source coordinates, antialiased bilinear taps.
// Host and device functions (compiled by nvcc for src/cuda/ops/pooling.cu,
// by the host compiler for src/cpu/ops/pooling.cpp), with no library calls
// but the C math functions both sides have.
#pragma once

#include "core/host_device.h"
#include "core/wraparound.h"
#include <math.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "ops/pooling.h"


namespace aotrt::ops::pooling_math {

// Calls f(T{}) for the family's dtypes: the floating ones (Half and BFloat16
// are the backend's 16-bit types), and int64 when with_int64 (the max and
// avg pools, as ATen's CPU kernels). Returns whether t is served.
template <typename Half, typename BFloat16, typename F>
bool visit_pool_dtype(ScalarType t, bool with_int64, F&& f) {
  switch (t) {
    case ScalarType::Float32: f(float{}); return true;
    case ScalarType::Float64: f(double{}); return true;
    case ScalarType::Float16: f(Half{}); return true;
    case ScalarType::BFloat16: f(BFloat16{}); return true;
    case ScalarType::Int64:
      if (with_int64) f(int64_t{});
      return with_int64;
    default: return false;
  }
}

// A pool's window around output position o (per dim k of 3): the max pool's
// taps [lo, hi) stepped by the dilation, skipping the padding.
struct Box {
  int64_t lo[3], hi[3];
};
AOTRT_HOST_DEVICE inline Box max_pool_box(const int64_t* o, const int64_t* in_sizes,
                                         const int64_t* kernel, const int64_t* stride,
                                         const int64_t* padding, const int64_t* dilation) {
  Box b;
  for (int k = 0; k < 3; ++k) {
    const int64_t start = o[k] * stride[k] - padding[k];
    const int64_t end = start + (kernel[k] - 1) * dilation[k] + 1;
    b.hi[k] = end < in_sizes[k] ? end : in_sizes[k];
    b.lo[k] = start;
    while (b.lo[k] < 0) b.lo[k] += dilation[k];
  }
  return b;
}
// The avg pool's window clipped to the input, with the count of the window
// clipped to in + pad (count_include_pad's divisor) and to the input.
struct AvgBox {
  Box box;
  int64_t padded = 1, inside = 1;
};
AOTRT_HOST_DEVICE inline AvgBox avg_pool_box(const int64_t* o, const int64_t* in_sizes,
                                            const int64_t* kernel, const int64_t* stride,
                                            const int64_t* padding) {
  AvgBox r;
  for (int k = 0; k < 3; ++k) {
    const int64_t size = in_sizes[k];
    int64_t lo = o[k] * stride[k] - padding[k];
    int64_t hi = lo + kernel[k] < size + padding[k] ? lo + kernel[k] : size + padding[k];
    r.padded *= hi - lo;
    lo = lo > 0 ? lo : 0;
    hi = hi < size ? hi : size;
    r.inside *= hi > lo ? hi - lo : 0;
    r.box.lo[k] = lo;
    r.box.hi[k] = hi;
  }
  return r;
}
// The adaptive pools' bin of o: [floor(o in / out), ceil((o + 1) in / out)).
AOTRT_HOST_DEVICE inline Box adaptive_box(const int64_t* o, const int64_t* in_sizes,
                                         const int64_t* out_sizes) {
  Box b;
  for (int k = 0; k < 3; ++k) {
    b.lo[k] = (o[k] * in_sizes[k]) / out_sizes[k];
    b.hi[k] = ((o[k] + 1) * in_sizes[k] + out_sizes[k] - 1) / out_sizes[k];
  }
  return b;
}

// The max over the box stepped by `step` of read(d, h, w) (in A, the
// accumulation type): a tap wins when greater or NaN; its flat index in the
// input plane (d H + h) W + w.
template <typename A>
struct MaxAt {
  A value;
  int64_t index;
};
template <typename A, typename Read>
AOTRT_HOST_DEVICE inline MaxAt<A> window_max(const Box& b, const int64_t* step, int64_t H,
                                            int64_t W, const Read& read) {
  MaxAt<A> best{std::is_integral_v<A> ? static_cast<A>(INT64_MIN) : static_cast<A>(-INFINITY),
                (b.lo[0] * H + b.lo[1]) * W + b.lo[2]};
  for (int64_t d = b.lo[0]; d < b.hi[0]; d += step[0])
    for (int64_t h = b.lo[1]; h < b.hi[1]; h += step[1])
      for (int64_t w = b.lo[2]; w < b.hi[2]; w += step[2]) {
        const A x = read(d, h, w);
        if (x > best.value || x != x) best = MaxAt<A>{x, (d * H + h) * W + w};
      }
  return best;
}
// The sum over the box of read(d, h, w), in A (integers wrap: Note [Integer
// wraparound]).
template <typename A, typename Read>
AOTRT_HOST_DEVICE inline A window_sum(const Box& b, const Read& read) {
  A sum = 0;
  for (int64_t d = b.lo[0]; d < b.hi[0]; ++d)
    for (int64_t h = b.lo[1]; h < b.hi[1]; ++h)
      for (int64_t w = b.lo[2]; w < b.hi[2]; ++w) sum = wrapping_add(sum, static_cast<A>(read(d, h, w)));
  return sum;
}
// An average pool's value: sum / divisor, in A. INT64_MIN / -1 traps on the
// CPU; ATen's result wraps (a negative divisor_override is allowed).
template <typename A>
AOTRT_HOST_DEVICE inline A window_mean(A sum, int64_t divisor) {
  if constexpr (std::is_integral_v<A>) {
    return divisor == -1 ? wrapping_neg(sum) : static_cast<A>(sum / divisor);
  } else {
    return sum / static_cast<A>(divisor);
  }
}

// ATen's scalar_t arithmetic for float16/bfloat16: every operation in float,
// its result rounded to the dtype. Round is the backend's rounding, a type
// with `static float round(float)`.
template <typename Round>
struct Low {
  float v = 0;
  AOTRT_HOST_DEVICE Low() {}
  AOTRT_HOST_DEVICE Low(double x) : v(Round::round(static_cast<float>(x))) {}  // NOLINT: implicit
  AOTRT_HOST_DEVICE friend Low operator+(Low a, Low b) { return Low(a.v + b.v); }
  AOTRT_HOST_DEVICE friend Low operator-(Low a, Low b) { return Low(a.v - b.v); }
  AOTRT_HOST_DEVICE friend Low operator*(Low a, Low b) { return Low(a.v * b.v); }
  AOTRT_HOST_DEVICE friend Low operator/(Low a, Low b) { return Low(a.v / b.v); }
  AOTRT_HOST_DEVICE friend bool operator<(Low a, Low b) { return a.v < b.v; }
  AOTRT_HOST_DEVICE friend bool operator==(Low a, Low b) { return a.v == b.v; }
};
template <typename S>
AOTRT_HOST_DEVICE inline double raw(S x) {
  if constexpr (std::is_floating_point_v<S>) {
    return x;
  } else {
    return x.v;
  }
}

// Window start i of a fractional max pool along one dim (in, out, kernel k)
// for sample u: int((i + u) alpha) - int(u alpha), alpha = (in - k) / (out -
// 1), the last start in - k. F is float or double; for float16/bfloat16 F is
// float and `round` rounds each step to the dtype (identity otherwise). A
// sample outside [0, 1) (torch draws them in it) could place a window
// outside the input: the start is kept in [0, in - k], so no read leaves it.
template <typename F, typename Round>
AOTRT_HOST_DEVICE inline int64_t fractional_start(F u, int64_t i, int64_t in, int64_t out,
                                                 int64_t k, Round round) {
  if (i == out - 1) return in - k;
  const F alpha = round(round(static_cast<F>(in - k)) / round(static_cast<F>(out - 1)));
  const int64_t start = static_cast<int64_t>(round(round(round(static_cast<F>(i)) + u) * alpha)) -
                        static_cast<int64_t>(round(u * alpha));
  return start < 0 ? 0 : (start > in - k ? in - k : start);
}

// ATen's reflect_coordinates.
template <typename S>
AOTRT_HOST_DEVICE inline S reflect(S x, S twice_low, S twice_high) {
  if (twice_low == twice_high) return S(0);
  const S lo = twice_low / S(2), span = (twice_high - twice_low) / S(2);
  x = S(::fabs(raw(x - lo)));
  const S extra = S(::fmod(raw(x), raw(span)));
  const auto flips = static_cast<int64_t>(::floor(raw(x / span)));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

// ATen's grid_sampler_compute_source_index: the input coordinate of grid
// value `coord` along a dim of `size`; -100 (out of bounds) for a result
// that is not finite or beyond int range.
template <typename S>
AOTRT_HOST_DEVICE inline S source_index(S coord, int64_t size, GridPadding padding, bool align) {
  const S sz = S(static_cast<double>(size)), one = S(1), two = S(2);
  coord = align ? ((coord + one) / two) * (sz - one) : ((coord + one) * sz - one) / two;
  auto clip = [&](S x) {  // std::min(size - 1, std::max(x, 0)), NaN as std's
    const S lo = x < S(0) ? S(0) : x;
    return lo < sz - one ? lo : sz - one;
  };
  if (padding == GridPadding::kBorder) {
    coord = clip(coord);
  } else if (padding == GridPadding::kReflection) {
    coord = align ? reflect(coord, S(0), S(2.0 * static_cast<double>(size - 1)))
                  : reflect(coord, S(-1), S(2.0 * static_cast<double>(size) - 1));
    coord = clip(coord);
  }
  const double c = raw(coord);
  const bool finite = c - c == 0;  // NaN and infinities give NaN
  if (!finite || c > 2147483647.0 || c < -2147483648.0) coord = S(-100);
  return coord;
}

// One output of grid_sampler_3d, in S: the grid's (gx, gy, gz) over an
// input of D x H x W, whose element (z, y, x) value(z, y, x) reads as S.
// Nearest rounds half to even; trilinear weights each corner in bounds by
// the product of its distances to the opposite corner, corners in ATen's
// order (z, then y, then x).
template <typename S, typename Value>
AOTRT_HOST_DEVICE inline S grid_sample(S gx, S gy, S gz, int64_t D, int64_t H, int64_t W,
                                      GridMode mode, GridPadding padding, bool align,
                                      const Value& value) {
  const S ix = source_index<S>(gx, W, padding, align);
  const S iy = source_index<S>(gy, H, padding, align);
  const S iz = source_index<S>(gz, D, padding, align);
  auto inside = [&](int64_t z, int64_t y, int64_t x) {
    return z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
  };
  S result = S(0);
  if (mode == GridMode::kNearest) {
    const auto x = static_cast<int64_t>(::nearbyint(raw(ix)));
    const auto y = static_cast<int64_t>(::nearbyint(raw(iy)));
    const auto z = static_cast<int64_t>(::nearbyint(raw(iz)));
    if (inside(z, y, x)) result = value(z, y, x);
    return result;
  }
  const auto x0 = static_cast<int64_t>(::floor(raw(ix)));
  const auto y0 = static_cast<int64_t>(::floor(raw(iy)));
  const auto z0 = static_cast<int64_t>(::floor(raw(iz)));
  auto dist = [](S at, int64_t lo, int64_t far) {
    return far ? at - S(static_cast<double>(lo)) : S(static_cast<double>(lo + 1)) - at;
  };
  for (int64_t dz = 0; dz < 2; ++dz)
    for (int64_t dy = 0; dy < 2; ++dy)
      for (int64_t dx = 0; dx < 2; ++dx) {
        const S weight = dist(ix, x0, dx) * dist(iy, y0, dy) * dist(iz, z0, dz);
        if (inside(z0 + dz, y0 + dy, x0 + dx)) {
          result = result + value(z0 + dz, y0 + dy, x0 + dx) * weight;
        }
      }
  return result;
}

// Antialiased bilinear resampling along one dim, in T (float or double):
// scale, support, inverse scale, the input size and the most taps an output
// has.
template <typename T>
struct AaDim {
  T scale, support, invscale;
  int64_t in, max_taps;
};
template <typename T>
AaDim<T> aa_dim(int64_t in, int64_t out, bool align, std::optional<double> given) {
  T scale;
  if (align) {
    scale = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  } else {
    scale = given && *given > 0 ? static_cast<T>(1.0 / *given)
                                : static_cast<T>(in) / static_cast<T>(out);
  }
  const T support = scale >= T(1) ? static_cast<T>(1.0 * scale) : T(1);
  const T invscale = scale >= T(1) ? T(1) / scale : T(1);
  return AaDim<T>{scale, support, invscale, in, static_cast<int64_t>(::ceil(support)) * 2 + 1};
}

// Output o's taps: [first, first + count) of the input, centred at `center`.
template <typename T>
struct AaTaps {
  T center;
  int64_t first, count;
};
template <typename T>
AOTRT_HOST_DEVICE inline AaTaps<T> aa_taps(const AaDim<T>& a, int64_t o) {
  const auto center = static_cast<T>(a.scale * (o + 0.5));
  const auto lo0 = static_cast<int64_t>(center - a.support + 0.5);
  const int64_t lo = lo0 > 0 ? lo0 : 0;
  const auto hi0 = static_cast<int64_t>(center + a.support + 0.5);
  const int64_t hi = hi0 < a.in ? hi0 : a.in;
  const int64_t count = hi - lo < 0 ? 0 : (hi - lo > a.max_taps ? a.max_taps : hi - lo);
  return AaTaps<T>{center, lo, count};
}
// The triangle filter's (unnormalised) weight of tap j of `t`.
template <typename T>
AOTRT_HOST_DEVICE inline T aa_weight(const AaDim<T>& a, const AaTaps<T>& t, int64_t j) {
  const T x = ::fabs(static_cast<T>((static_cast<T>(j + t.first) - t.center + 0.5) * a.invscale));
  return x < T(1) ? T(1) - x : T(0);
}
// The sum of the weights of `t`, in tap order.
template <typename T>
AOTRT_HOST_DEVICE inline T aa_total(const AaDim<T>& a, const AaTaps<T>& t) {
  T total = 0;
  for (int64_t i = 0; i < t.count; ++i) total += aa_weight(a, t, i);
  return total;
}
// Tap j's weight normalised so that the taps sum to 1 (as they are when
// their sum, total, is 0).
template <typename T>
AOTRT_HOST_DEVICE inline T aa_normalised_weight(const AaDim<T>& a, const AaTaps<T>& t, int64_t j,
                                               T total) {
  const T w = aa_weight(a, t, j);
  return total != T(0) ? w / total : w;
}

}  // namespace aotrt::ops::pooling_math

