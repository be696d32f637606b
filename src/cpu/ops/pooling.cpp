// CPU kernels of the pooling family (ops/pooling.h): one (n, c) plane at a time, planes
// in parallel through for_each_line; every tensor read and written through its
// strides (Note [Pooling semantics]).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "core/error.h"
#include "cpu/elements.h"
#include "cpu/lines.h"
#include "ops/dispatch.h"
#include "ops/pooling.h"

namespace aotrt::cpu {
namespace {
using ops::GridMode;
using ops::GridPadding;
using ops::PoolingKernels;
using ops::PoolWindow;
using ops::Volume;

// ATen's opmath type on the CPU: float for the 16-bit floats and float32, double for
// float64, int64 for integers.
template <typename T>
using acc_t = std::conditional_t<
    std::is_same_v<T, double>, double,
    std::conditional_t<std::is_integral_v<T>, int64_t, float>>;

// Element (n, c, d, h, w) of v, as T.
struct At {
  const Volume& v;
  int64_t offset(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) const {
    return n * v.strides[0] + c * v.strides[1] + d * v.strides[2] + h * v.strides[3] +
           w * v.strides[4];
  }
};

// Calls f(n, c) for every plane of out, in parallel when there is enough work.
template <typename F>
void for_each_plane(const Volume& out, F&& f) {
  const int64_t n = out.sizes[0], c = out.sizes[1];
  const int64_t plane = out.sizes[2] * out.sizes[3] * out.sizes[4];
  const int64_t sizes[] = {n, c, plane}, ids[] = {c, 1, 0};
  for_each_line(sizes, 2, ids, ids, [&](int64_t id, int64_t) { f(id / c, id % c); });
}

// Calls f(n, c, {d, h, w}) for every element of out, planes in parallel.
template <typename F>
void for_each_output(const Volume& out, F&& f) {
  for_each_plane(out, [&](int64_t n, int64_t c) {
    for (int64_t d = 0; d < out.sizes[2]; ++d)
      for (int64_t h = 0; h < out.sizes[3]; ++h)
        for (int64_t w = 0; w < out.sizes[4]; ++w) f(n, c, std::array<int64_t, 3>{d, h, w});
  });
}

// The dtypes of the family: the floating ones, and int64 for the max and avg pools
// (with_int64), as ATen's CPU kernels.
template <typename F>
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

template <typename A>
A lowest() {
  if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
  return std::numeric_limits<A>::lowest();
}

// The max of the taps (d, h, w) of plane (n, c) in the boxes [d0, d1) x [h0, h1) x
// [w0, w1) stepped by `step`: a tap wins when greater or NaN. Writes value and index.
template <typename T>
void max_of_window(const Volume& in, int64_t n, int64_t c, std::array<int64_t, 3> lo,
                   std::array<int64_t, 3> hi, std::array<int64_t, 3> step, char* out_elem,
                   char* index_elem) {
  using A = acc_t<T>;
  const At src{in};
  const int64_t H = in.sizes[3], W = in.sizes[4];
  A best = lowest<A>();
  int64_t best_i = (lo[0] * H + lo[1]) * W + lo[2];
  for (int64_t d = lo[0]; d < hi[0]; d += step[0]) {
    for (int64_t h = lo[1]; h < hi[1]; h += step[1]) {
      for (int64_t w = lo[2]; w < hi[2]; w += step[2]) {
        const A x = static_cast<A>(load(read_elem<T>(in.data, src.offset(n, c, d, h, w))));
        if (x > best || is_nan(x)) {
          best = x;
          best_i = (d * H + h) * W + w;
        }
      }
    }
  }
  write_elem<T>(out_elem, 0, convert_value<T>(best));
  write_elem<int64_t>(index_elem, 0, best_i);
}

// The sum of plane (n, c) over the box [lo, hi), in A (integers wrap: Note
// [Integer wraparound]).
template <typename T, typename A = acc_t<T>>
A window_sum(const Volume& in, int64_t n, int64_t c, const int64_t* lo, const int64_t* hi) {
  const At src{in};
  A sum = 0;
  for (int64_t d = lo[0]; d < hi[0]; ++d)
    for (int64_t h = lo[1]; h < hi[1]; ++h)
      for (int64_t w = lo[2]; w < hi[2]; ++w)
        sum = wrapping_add(sum, static_cast<A>(load(read_elem<T>(in.data, src.offset(n, c, d, h, w)))));
  return sum;
}

char* elem_ptr(const Volume& v, int64_t off, size_t itemsize) {
  return v.data + off * static_cast<int64_t>(itemsize);
}

// The address of element (n, c, pos) of v, whose elements are T.
template <typename T>
char* elem_at(const Volume& v, int64_t n, int64_t c, const std::array<int64_t, 3>& pos) {
  return elem_ptr(v, At{v}.offset(n, c, pos[0], pos[1], pos[2]), sizeof(T));
}

void max_pool(const Volume& out, const Volume& idx, const Volume& in, const PoolWindow& win,
              const char* fn) {
  const bool served = visit_pool_dtype(in.dtype, true, [&](auto tag) {
    using T = decltype(tag);
    for_each_output(out, [&](int64_t n, int64_t c, const std::array<int64_t, 3>& opos) {
      std::array<int64_t, 3> lo{}, hi{};
      for (int i = 0; i < 3; ++i) {
        const int64_t start = opos[i] * win.stride[i] - win.padding[i];
        hi[i] = std::min(start + (win.kernel[i] - 1) * win.dilation[i] + 1, in.sizes[2 + i]);
        lo[i] = start;
        while (lo[i] < 0) lo[i] += win.dilation[i];
      }
      max_of_window<T>(in, n, c, lo, hi, win.dilation, elem_at<T>(out, n, c, opos),
                       elem_at<int64_t>(idx, n, c, opos));
    });
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

void avg_pool(const Volume& out, const Volume& in, const PoolWindow& win, bool count_include_pad,
              std::optional<int64_t> divisor_override, const char* fn) {
  const bool served = visit_pool_dtype(in.dtype, true, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    for_each_output(out, [&](int64_t n, int64_t c, const std::array<int64_t, 3>& opos) {
      int64_t lo[3], hi[3], padded = 1, inside = 1;
      for (int i = 0; i < 3; ++i) {
        const int64_t size = in.sizes[2 + i];
        lo[i] = opos[i] * win.stride[i] - win.padding[i];
        hi[i] = std::min(lo[i] + win.kernel[i], size + win.padding[i]);
        padded *= hi[i] - lo[i];
        lo[i] = std::max<int64_t>(lo[i], 0);
        hi[i] = std::min(hi[i], size);
        inside *= std::max<int64_t>(hi[i] - lo[i], 0);
      }
      char* dst = elem_at<T>(out, n, c, opos);
      if (inside == 0) {
        write_elem<T>(dst, 0, convert_value<T>(0.0));
        return;
      }
      const A sum = window_sum<T>(in, n, c, lo, hi);
      const int64_t divisor =
          divisor_override ? *divisor_override : (count_include_pad ? padded : inside);
      A mean;
      if constexpr (std::is_integral_v<A>) {
        // INT64_MIN / -1 traps; ATen's result wraps (a negative divisor_override is allowed).
        mean = divisor == -1 ? wrapping_neg(sum) : sum / divisor;
      } else {
        mean = sum / static_cast<A>(divisor);
      }
      write_elem<T>(dst, 0, convert_value<T>(mean));
    });
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

int64_t bin_start(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
int64_t bin_end(int64_t o, int64_t out, int64_t in) { return ((o + 1) * in + out - 1) / out; }

void adaptive_pool(const Volume& out, const Volume* idx, const Volume& in, const char* fn) {
  const bool served = visit_pool_dtype(in.dtype, false, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    for_each_output(out, [&](int64_t n, int64_t c, const std::array<int64_t, 3>& opos) {
      std::array<int64_t, 3> lo{}, hi{};
      for (int i = 0; i < 3; ++i) {
        lo[i] = bin_start(opos[i], out.sizes[2 + i], in.sizes[2 + i]);
        hi[i] = bin_end(opos[i], out.sizes[2 + i], in.sizes[2 + i]);
      }
      char* dst = elem_at<T>(out, n, c, opos);
      if (idx != nullptr) {
        max_of_window<T>(in, n, c, lo, hi, {1, 1, 1}, dst, elem_at<int64_t>(*idx, n, c, opos));
        return;
      }
      const A sum = window_sum<T>(in, n, c, lo.data(), hi.data());
      const int64_t count = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
      write_elem<T>(dst, 0, convert_value<T>(sum / static_cast<A>(count)));
    });
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

// Window starts of a fractional max pool along one dim, computed in T as ATen's
// scalar_t arithmetic (each step rounded to T).
template <typename T>
void fractional_starts(T sample, int64_t in, int64_t out, int64_t k, int64_t* starts) {
  auto r = [](auto x) { return static_cast<float>(load(convert_value<T>(x))); };
  if constexpr (std::is_same_v<T, double>) {
    const double alpha = static_cast<double>(in - k) / static_cast<double>(out - 1);
    for (int64_t i = 0; i + 1 < out; ++i) {
      starts[i] = static_cast<int64_t>((static_cast<double>(i) + sample) * alpha) -
                  static_cast<int64_t>(sample * alpha);
    }
  } else {
    const float u = static_cast<float>(load(sample));
    const float alpha = r(r(static_cast<float>(in - k)) / r(static_cast<float>(out - 1)));
    for (int64_t i = 0; i + 1 < out; ++i) {
      starts[i] = static_cast<int64_t>(r(r(r(static_cast<float>(i)) + u) * alpha)) -
                  static_cast<int64_t>(r(u * alpha));
    }
  }
  if (out > 0) starts[out - 1] = in - k;
}

void fractional_max_pool(const Volume& out, const Volume& idx, const Volume& in,
                         const Volume& samples, std::array<int64_t, 3> k, int nd,
                         const char* fn) {
  const bool served = visit_pool_dtype(in.dtype, false, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_integral_v<T>) {  // never int64: with_int64 is false
      const At smp{samples};
      for_each_plane(out, [&](int64_t n, int64_t c) {
        std::vector<int64_t> starts[3];
        for (int i = 3 - nd; i < 3; ++i) {
          // 2-d: sample 0 places W, 1 places H; 3-d: 0 D, 1 H, 2 W.
          const int64_t which = nd == 2 ? (i == 2 ? 0 : 1) : i;
          const T u = read_elem<T>(samples.data, smp.offset(n, c, 0, 0, which));
          starts[i].resize(static_cast<size_t>(out.sizes[2 + i]));
          fractional_starts<T>(u, in.sizes[2 + i], out.sizes[2 + i], k[i], starts[i].data());
        }
        if (nd == 2) starts[0].assign(static_cast<size_t>(out.sizes[2]), 0);
        for (int64_t od = 0; od < out.sizes[2]; ++od)
          for (int64_t oh = 0; oh < out.sizes[3]; ++oh)
            for (int64_t ow = 0; ow < out.sizes[4]; ++ow) {
              const std::array<int64_t, 3> lo{starts[0][od], starts[1][oh], starts[2][ow]};
              const std::array<int64_t, 3> opos{od, oh, ow};
              max_of_window<T>(in, n, c, lo, {lo[0] + k[0], lo[1] + k[1], lo[2] + k[2]},
                               {1, 1, 1}, elem_at<T>(out, n, c, opos),
                               elem_at<int64_t>(idx, n, c, opos));
            }
      });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

void max_unpool(const Volume& out, const Volume& in, const Volume& idx, const char* fn) {
  std::atomic<int64_t> bad{-1};
  const int64_t plane = out.sizes[2] * out.sizes[3] * out.sizes[4];
  const int64_t H = out.sizes[3], W = out.sizes[4];
  const bool served = visit_pool_dtype(in.dtype, false, [&](auto tag) {
    using T = decltype(tag);
    const At o{out}, src{in}, ix{idx};
    for_each_plane(in, [&](int64_t n, int64_t c) {
      for (int64_t d = 0; d < in.sizes[2]; ++d)
        for (int64_t h = 0; h < in.sizes[3]; ++h)
          for (int64_t w = 0; w < in.sizes[4]; ++w) {
            const int64_t i = read_elem<int64_t>(idx.data, ix.offset(n, c, d, h, w));
            if (i < 0 || i >= plane) {
              bad.store(i, std::memory_order_relaxed);
              continue;
            }
            const T x = read_elem<T>(in.data, src.offset(n, c, d, h, w));
            write_elem<T>(out.data, o.offset(n, c, i / (H * W), (i / W) % H, i % W), x);
          }
    });
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
  const int64_t b = bad.load();
  AOTRT_CHECK(b == -1, kInvalidArgument, fn, ": argument 'indices': Found an invalid max index: ",
              b, " (output volumes are of size ", plane, ")");
}

// The grid sampler computes in the input's dtype, as ATen's scalar_t arithmetic: for
// float16/bfloat16 every operation is done in float and rounded to the dtype (Low<T>).
template <typename T>
struct Low {
  float v = 0;
  Low() = default;
  Low(double x) : v(static_cast<float>(load(convert_value<T>(x)))) {}  // NOLINT: implicit
  friend Low operator+(Low a, Low b) { return Low(a.v + b.v); }
  friend Low operator-(Low a, Low b) { return Low(a.v - b.v); }
  friend Low operator*(Low a, Low b) { return Low(a.v * b.v); }
  friend Low operator/(Low a, Low b) { return Low(a.v / b.v); }
  friend bool operator<(Low a, Low b) { return a.v < b.v; }
  friend bool operator>(Low a, Low b) { return a.v > b.v; }
  friend bool operator==(Low a, Low b) { return a.v == b.v; }
};
template <typename S>
double raw(S x) {
  if constexpr (std::is_floating_point_v<S>) {
    return x;
  } else {
    return x.v;
  }
}
template <typename T>
using grid_t = std::conditional_t<std::is_floating_point_v<T>, T, Low<T>>;

// ATen's reflect_coordinates and grid_sampler_compute_source_index (Note [Pooling
// semantics]).
template <typename S>
S reflect(S x, S twice_low, S twice_high) {
  if (twice_low == twice_high) return S(0);
  const S lo = twice_low / S(2), span = (twice_high - twice_low) / S(2);
  x = S(std::fabs(raw(x - lo)));
  const S extra = S(std::fmod(raw(x), raw(span)));
  const auto flips = static_cast<int64_t>(std::floor(raw(x / span)));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

template <typename S>
S source_index(S coord, int64_t size, GridPadding padding, bool align) {
  const S sz = S(static_cast<double>(size)), one = S(1), two = S(2);
  coord = align ? ((coord + one) / two) * (sz - one) : ((coord + one) * sz - one) / two;
  auto clip = [&](S x) { return std::min(sz - one, std::max(x, S(0))); };
  if (padding == GridPadding::kBorder) {
    coord = clip(coord);
  } else if (padding == GridPadding::kReflection) {
    coord = align ? reflect(coord, S(0), S(2.0 * static_cast<double>(size - 1)))
                  : reflect(coord, S(-1), S(2.0 * static_cast<double>(size) - 1));
    coord = clip(coord);
  }
  const double c = raw(coord);
  if (!std::isfinite(c) || c > std::numeric_limits<int>::max() ||
      c < std::numeric_limits<int>::min()) {
    coord = S(-100);
  }
  return coord;
}

void grid_sampler_3d(const Volume& out, const Volume& in, const Volume& grid, GridMode mode,
                     GridPadding padding, bool align, const char* fn) {
  const bool served = visit_pool_dtype(in.dtype, false, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_integral_v<T>) {  // never int64: with_int64 is false
      using S = grid_t<T>;
      const At src{in}, g{grid};
      const int64_t D = in.sizes[2], H = in.sizes[3], W = in.sizes[4];
      auto inside = [&](int64_t z, int64_t y, int64_t x) {
        return z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
      };
      for_each_output(out, [&](int64_t n, int64_t c, const std::array<int64_t, 3>& opos) {
        auto coord = [&](int64_t k) {
          return S(load(read_elem<T>(grid.data, g.offset(n, opos[0], opos[1], opos[2], k))));
        };
        const S ix = source_index<S>(coord(0), W, padding, align);
        const S iy = source_index<S>(coord(1), H, padding, align);
        const S iz = source_index<S>(coord(2), D, padding, align);
        auto value = [&](int64_t z, int64_t y, int64_t x) {
          return S(load(read_elem<T>(in.data, src.offset(n, c, z, y, x))));
        };
        S result = S(0);
        if (mode == GridMode::kNearest) {
          const auto x = static_cast<int64_t>(std::nearbyint(raw(ix)));
          const auto y = static_cast<int64_t>(std::nearbyint(raw(iy)));
          const auto z = static_cast<int64_t>(std::nearbyint(raw(iz)));
          if (inside(z, y, x)) result = value(z, y, x);
        } else {
          const auto x0 = static_cast<int64_t>(std::floor(raw(ix)));
          const auto y0 = static_cast<int64_t>(std::floor(raw(iy)));
          const auto z0 = static_cast<int64_t>(std::floor(raw(iz)));
          // The weight of a corner is the product of its distances to the opposite
          // corner; corners in ATen's order (z, then y, then x).
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
        }
        write_elem<T>(elem_at<T>(out, n, c, opos), 0, convert_value<T>(raw(result)));
      });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

// Antialiased bilinear resampling along one dim (Note [Pooling semantics]): the
// taps of output o start at first[o], weights[o] sums to 1; all in T.
template <typename T>
struct AaTaps {
  std::vector<int64_t> first;
  std::vector<std::vector<T>> weights;
};

template <typename T>
AaTaps<T> aa_taps(int64_t in, int64_t out, bool align, std::optional<double> given) {
  T scale;
  if (align) {
    scale = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  } else {
    scale = given && *given > 0 ? static_cast<T>(1.0 / *given)
                                : static_cast<T>(in) / static_cast<T>(out);
  }
  const T support = scale >= T(1) ? static_cast<T>(1.0 * scale) : T(1);
  const T invscale = scale >= T(1) ? T(1) / scale : T(1);
  const auto max_taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  AaTaps<T> r;
  r.first.resize(static_cast<size_t>(out));
  r.weights.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const auto center = static_cast<T>(scale * (o + 0.5));
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t size = std::clamp<int64_t>(
        std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in) - lo, 0, max_taps);
    std::vector<T>& wt = r.weights[static_cast<size_t>(o)];
    wt.resize(static_cast<size_t>(size));
    T total = 0;
    for (int64_t j = 0; j < size; ++j) {
      const T x = std::abs(static_cast<T>((j + lo - center + 0.5) * invscale));
      wt[j] = x < T(1) ? T(1) - x : T(0);
      total += wt[j];
    }
    if (total != T(0)) {
      for (T& v : wt) v /= total;
    }
    r.first[static_cast<size_t>(o)] = lo;
  }
  return r;
}

// out[k] = sum_j src[(first + j) * step] * w[j] over one line, in T.
template <typename T>
T aa_tap_sum(const T* src, int64_t step, int64_t first, const std::vector<T>& w) {
  if (w.empty()) return T(0);
  T acc = src[first * step] * w[0];
  for (size_t j = 1; j < w.size(); ++j) acc += src[(first + static_cast<int64_t>(j)) * step] * w[j];
  return acc;
}

void upsample_bilinear_aa(const Volume& out, const Volume& in, bool align,
                          std::optional<double> scale_h, std::optional<double> scale_w,
                          const char* fn) {
  const bool served = visit_pool_dtype(in.dtype, false, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const int64_t H = in.sizes[3], W = in.sizes[4], OH = out.sizes[3], OW = out.sizes[4];
      const AaTaps<T> tw = aa_taps<T>(W, OW, align, scale_w);
      const AaTaps<T> th = aa_taps<T>(H, OH, align, scale_h);
      const At src{in};
      for_each_plane(out, [&](int64_t n, int64_t c) {
        thread_local std::vector<T> plane, across;
        // The input plane, dense [H, W].
        plane.resize(static_cast<size_t>(H * W));
        for (int64_t y = 0; y < H; ++y)
          for (int64_t x = 0; x < W; ++x)
            plane[y * W + x] = read_elem<T>(in.data, src.offset(n, c, 0, y, x));
        // Along W (when its size changes), then along H.
        const T* rows = plane.data();
        if (OW != W) {
          across.resize(static_cast<size_t>(H * OW));
          for (int64_t y = 0; y < H; ++y)
            for (int64_t x = 0; x < OW; ++x)
              across[y * OW + x] = aa_tap_sum(plane.data() + y * W, 1, tw.first[x], tw.weights[x]);
          rows = across.data();
        }
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t x = 0; x < OW; ++x) {
            const T v = OH != H ? aa_tap_sum(rows + x, OW, th.first[y], th.weights[y])
                                : rows[y * OW + x];
            write_elem<T>(elem_at<T>(out, n, c, {0, y, x}), 0, v);
          }
      });
    }
  });
  AOTRT_CHECK(served && (in.dtype == ScalarType::Float32 || in.dtype == ScalarType::Float64),
              kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

constexpr PoolingKernels kPooling{.max_pool = max_pool,
                                  .avg_pool = avg_pool,
                                  .adaptive_pool = adaptive_pool,
                                  .fractional_max_pool = fractional_max_pool,
                                  .max_unpool = max_unpool,
                                  .grid_sampler_3d = grid_sampler_3d,
                                  .upsample_bilinear_aa = upsample_bilinear_aa};
AOTRT_REGISTER_KERNELS(PoolingKernels, cpu, kPooling);

}  // namespace
}  // namespace aotrt::cpu
