// CUDA kernels of the pooling family (ops/pooling.h): one thread per output
// element, every tensor read and written through its strides, each value
// computed as the CPU kernel computes it (src/cpu/ops/pooling.cpp; Note
// [Pooling semantics]): the same taps in the same order, the same
// accumulation types. max_unpool has no CUDA kernel: its bad-index refusal
// would need the device's verdict on the host, a sync inside the run.
#include <cuda_runtime.h>

#include <cstdint>
#include <cuda/std/limits>
#include <optional>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/pooling.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::GridMode;
using ops::GridPadding;
using ops::PoolingKernels;
using ops::PoolWindow;
using ops::Volume;

// A Volume by value in kernel parameters (plain arrays: no std::array on the device).
struct Vol {
  char* data;
  int64_t sizes[5];
  int64_t strides[5];

  template <typename T>
  __device__ __forceinline__ T* at(int64_t n, int64_t c, int64_t d, int64_t h,
                                   int64_t w) const {
    return reinterpret_cast<T*>(data) + n * strides[0] + c * strides[1] + d * strides[2] +
           h * strides[3] + w * strides[4];
  }
  __device__ __forceinline__ int64_t numel() const {
    return sizes[0] * sizes[1] * sizes[2] * sizes[3] * sizes[4];
  }
};
Vol vol(const Volume& v) {
  Vol r{v.data, {}, {}};
  for (int d = 0; d < 5; ++d) {
    r.sizes[d] = v.sizes[d];
    r.strides[d] = v.strides[d];
  }
  return r;
}
struct Win {
  int64_t kernel[3], stride[3], padding[3], dilation[3];
};
Win win(const PoolWindow& w) {
  Win r{};
  for (int i = 0; i < 3; ++i) {
    r.kernel[i] = w.kernel[i];
    r.stride[i] = w.stride[i];
    r.padding[i] = w.padding[i];
    r.dilation[i] = w.dilation[i];
  }
  return r;
}

// The (n, c, d, h, w) of row-major element i of v.
struct Pos {
  int64_t n, c, p[3];
};
__device__ __forceinline__ Pos position(const Vol& v, int64_t i) {
  Pos r;
  r.p[2] = i % v.sizes[4];
  i /= v.sizes[4];
  r.p[1] = i % v.sizes[3];
  i /= v.sizes[3];
  r.p[0] = i % v.sizes[2];
  i /= v.sizes[2];
  r.c = i % v.sizes[1];
  r.n = i / v.sizes[1];
  return r;
}

// The family's dtypes: the floating ones, int64 for the max and avg pools
// (with_int64), as the CPU kernels. Returns whether t is served.
template <typename F>
bool visit_pool_dtype(ScalarType t, bool with_int64, F&& f) {
  switch (t) {
    case ScalarType::Float32: f(float{}); return true;
    case ScalarType::Float64: f(double{}); return true;
    case ScalarType::Float16: f(__half{}); return true;
    case ScalarType::BFloat16: f(__nv_bfloat16{}); return true;
    case ScalarType::Int64:
      if (with_int64) f(int64_t{});
      return with_int64;
    default: return false;
  }
}

void check_served(bool served, ScalarType t, const char* fn) {
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(t), " is not served");
}

template <typename A>
__device__ __forceinline__ A lowest() {
  if constexpr (std::is_integral_v<A>) {
    return ::cuda::std::numeric_limits<A>::lowest();
  } else {
    return -::cuda::std::numeric_limits<A>::infinity();
  }
}

// The max over the box [lo, hi) of plane (n, c), stepped by step: a tap wins
// when greater or NaN. Writes the value and the flat index in the input plane.
template <typename T>
__device__ void max_of_window(const Vol& in, int64_t n, int64_t c, const int64_t* lo,
                              const int64_t* hi, const int64_t* step, T* out, int64_t* index) {
  using A = acc_t<T>;
  const int64_t H = in.sizes[3], W = in.sizes[4];
  A best = lowest<A>();
  int64_t best_i = (lo[0] * H + lo[1]) * W + lo[2];
  for (int64_t d = lo[0]; d < hi[0]; d += step[0]) {
    for (int64_t h = lo[1]; h < hi[1]; h += step[1]) {
      for (int64_t w = lo[2]; w < hi[2]; w += step[2]) {
        const A x = to_acc(*in.at<T>(n, c, d, h, w));
        if (x > best || is_nan(x)) {
          best = x;
          best_i = (d * H + h) * W + w;
        }
      }
    }
  }
  *out = from_acc<T>(best);
  *index = best_i;
}

template <typename T>
__device__ acc_t<T> window_sum(const Vol& in, int64_t n, int64_t c, const int64_t* lo,
                               const int64_t* hi) {
  acc_t<T> sum = 0;
  for (int64_t d = lo[0]; d < hi[0]; ++d)
    for (int64_t h = lo[1]; h < hi[1]; ++h)
      for (int64_t w = lo[2]; w < hi[2]; ++w) sum += to_acc(*in.at<T>(n, c, d, h, w));
  return sum;
}

template <typename T>
__global__ void max_pool_kernel(Vol out, Vol idx, Vol in, Win win) {
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    int64_t lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
      const int64_t start = o.p[k] * win.stride[k] - win.padding[k];
      hi[k] = min(start + (win.kernel[k] - 1) * win.dilation[k] + 1, in.sizes[2 + k]);
      lo[k] = start;
      while (lo[k] < 0) lo[k] += win.dilation[k];
    }
    max_of_window<T>(in, o.n, o.c, lo, hi, win.dilation, out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]),
                     idx.at<int64_t>(o.n, o.c, o.p[0], o.p[1], o.p[2]));
  }
}

void max_pool(const Volume& out, const Volume& idx, const Volume& in, const PoolWindow& w,
              const char* fn) {
  const OnDevice on(out.device);
  const Vol o = vol(out);
  check_served(visit_pool_dtype(in.dtype, true, [&](auto tag) {
                 using T = decltype(tag);
                 max_pool_kernel<T><<<blocks_for(o.sizes[0] * o.sizes[1] * o.sizes[2] *
                                                 o.sizes[3] * o.sizes[4]),
                                      kThreads, 0, on.stream>>>(o, vol(idx), vol(in), win(w));
                 AOTRT_CUDA_CHECK_LAUNCH();
               }),
               in.dtype, fn);
}

// divisor: divisor_override, or 0 for none.
template <typename T>
__global__ void avg_pool_kernel(Vol out, Vol in, Win win, bool count_include_pad,
                                int64_t divisor_override) {
  using A = acc_t<T>;
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    int64_t lo[3], hi[3], padded = 1, inside = 1;
    for (int k = 0; k < 3; ++k) {
      const int64_t size = in.sizes[2 + k];
      lo[k] = o.p[k] * win.stride[k] - win.padding[k];
      hi[k] = min(lo[k] + win.kernel[k], size + win.padding[k]);
      padded *= hi[k] - lo[k];
      lo[k] = max(lo[k], int64_t{0});
      hi[k] = min(hi[k], size);
      inside *= max(hi[k] - lo[k], int64_t{0});
    }
    T* dst = out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]);
    if (inside == 0) {
      *dst = from_acc<T>(A(0));
      continue;
    }
    const A sum = window_sum<T>(in, o.n, o.c, lo, hi);
    const int64_t divisor =
        divisor_override != 0 ? divisor_override : (count_include_pad ? padded : inside);
    *dst = from_acc<T>(sum / static_cast<A>(divisor));
  }
}

void avg_pool(const Volume& out, const Volume& in, const PoolWindow& w, bool count_include_pad,
              std::optional<int64_t> divisor_override, const char* fn) {
  const OnDevice on(out.device);
  const Vol o = vol(out);
  const int64_t n = o.sizes[0] * o.sizes[1] * o.sizes[2] * o.sizes[3] * o.sizes[4];
  check_served(visit_pool_dtype(in.dtype, true, [&](auto tag) {
                 using T = decltype(tag);
                 avg_pool_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(
                     o, vol(in), win(w), count_include_pad, divisor_override.value_or(0));
                 AOTRT_CUDA_CHECK_LAUNCH();
               }),
               in.dtype, fn);
}

// Adaptive bins: [floor(o in / out), ceil((o + 1) in / out)). idx.data is
// null for the average.
template <typename T>
__global__ void adaptive_pool_kernel(Vol out, Vol idx, Vol in) {
  using A = acc_t<T>;
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    int64_t lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
      const int64_t os = out.sizes[2 + k], is = in.sizes[2 + k];
      lo[k] = (o.p[k] * is) / os;
      hi[k] = ((o.p[k] + 1) * is + os - 1) / os;
    }
    T* dst = out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]);
    if (idx.data != nullptr) {
      const int64_t one[3] = {1, 1, 1};
      max_of_window<T>(in, o.n, o.c, lo, hi, one, dst,
                       idx.at<int64_t>(o.n, o.c, o.p[0], o.p[1], o.p[2]));
      continue;
    }
    const A sum = window_sum<T>(in, o.n, o.c, lo, hi);
    const int64_t count = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
    *dst = from_acc<T>(sum / static_cast<A>(count));
  }
}

void adaptive_pool(const Volume& out, const Volume* idx, const Volume& in, const char* fn) {
  const OnDevice on(out.device);
  const Vol o = vol(out);
  const Vol ix = idx != nullptr ? vol(*idx) : Vol{nullptr, {}, {}};
  const int64_t n = o.sizes[0] * o.sizes[1] * o.sizes[2] * o.sizes[3] * o.sizes[4];
  check_served(visit_pool_dtype(in.dtype, false, [&](auto tag) {
                 using T = decltype(tag);
                 adaptive_pool_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(o, ix,
                                                                                   vol(in));
                 AOTRT_CUDA_CHECK_LAUNCH();
               }),
               in.dtype, fn);
}

// x rounded to T and back: ATen's scalar_t arithmetic for float16/bfloat16.
template <typename T>
__device__ __forceinline__ acc_t<T> round_to(acc_t<T> x) {
  return to_acc(from_acc<T>(x));
}

// Window start i (of out) of a fractional max pool along one dim, computed
// in T as the CPU's fractional_starts (each step rounded to T).
template <typename T>
__device__ int64_t fractional_start(T sample, int64_t i, int64_t in, int64_t out, int64_t k) {
  if (i == out - 1) return in - k;
  if constexpr (std::is_same_v<T, double>) {
    const double alpha = static_cast<double>(in - k) / static_cast<double>(out - 1);
    return static_cast<int64_t>((static_cast<double>(i) + sample) * alpha) -
           static_cast<int64_t>(sample * alpha);
  } else {
    const float u = to_acc(sample);
    const float alpha = round_to<T>(round_to<T>(static_cast<float>(in - k)) /
                                    round_to<T>(static_cast<float>(out - 1)));
    return static_cast<int64_t>(round_to<T>(round_to<T>(round_to<T>(static_cast<float>(i)) + u) *
                                            alpha)) -
           static_cast<int64_t>(round_to<T>(u * alpha));
  }
}

// samples: [N, C, 1, 1, nd]; 2-d: sample 0 places W, 1 places H; 3-d: 0 D, 1 H, 2 W.
template <typename T>
__global__ void fractional_kernel(Vol out, Vol idx, Vol in, Vol samples, Win w, int nd) {
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    int64_t lo[3] = {0, 0, 0}, hi[3];
    for (int k = 3 - nd; k < 3; ++k) {
      const int64_t which = nd == 2 ? (k == 2 ? 0 : 1) : k;
      const T u = *samples.at<T>(o.n, o.c, 0, 0, which);
      lo[k] = fractional_start<T>(u, o.p[k], in.sizes[2 + k], out.sizes[2 + k], w.kernel[k]);
    }
    for (int k = 0; k < 3; ++k) hi[k] = lo[k] + w.kernel[k];
    const int64_t one[3] = {1, 1, 1};
    max_of_window<T>(in, o.n, o.c, lo, hi, one, out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]),
                     idx.at<int64_t>(o.n, o.c, o.p[0], o.p[1], o.p[2]));
  }
}

void fractional_max_pool(const Volume& out, const Volume& idx, const Volume& in,
                         const Volume& samples, std::array<int64_t, 3> kernel, int nd,
                         const char* fn) {
  const OnDevice on(out.device);
  const Vol o = vol(out);
  const int64_t n = o.sizes[0] * o.sizes[1] * o.sizes[2] * o.sizes[3] * o.sizes[4];
  PoolWindow pw;
  pw.kernel = kernel;
  check_served(visit_pool_dtype(in.dtype, false, [&](auto tag) {
                 using T = decltype(tag);
                 if constexpr (!std::is_integral_v<T>) {  // never int64: with_int64 is false
                   fractional_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(
                       o, vol(idx), vol(in), vol(samples), win(pw), nd);
                   AOTRT_CUDA_CHECK_LAUNCH();
                 }
               }),
               in.dtype, fn);
}

// The grid sampler's arithmetic in the input's dtype, as the CPU's: float and
// double as they are; float16/bfloat16 in float, each result rounded (Low).
template <typename T>
struct Low {
  float v;
  __device__ Low() : v(0) {}
  __device__ Low(double x) : v(round_to<T>(static_cast<float>(x))) {}  // NOLINT: implicit
  __device__ friend Low operator+(Low a, Low b) { return Low(a.v + b.v); }
  __device__ friend Low operator-(Low a, Low b) { return Low(a.v - b.v); }
  __device__ friend Low operator*(Low a, Low b) { return Low(a.v * b.v); }
  __device__ friend Low operator/(Low a, Low b) { return Low(a.v / b.v); }
  __device__ friend bool operator<(Low a, Low b) { return a.v < b.v; }
  __device__ friend bool operator==(Low a, Low b) { return a.v == b.v; }
};
template <typename S>
__device__ __forceinline__ double raw(S x) {
  if constexpr (std::is_floating_point_v<S>) {
    return x;
  } else {
    return x.v;
  }
}
template <typename T>
using grid_t = std::conditional_t<std::is_floating_point_v<T>, T, Low<T>>;

template <typename S>
__device__ S reflect(S x, S twice_low, S twice_high) {
  if (twice_low == twice_high) return S(0);
  const S lo = twice_low / S(2), span = (twice_high - twice_low) / S(2);
  x = S(fabs(raw(x - lo)));
  const S extra = S(fmod(raw(x), raw(span)));
  const auto flips = static_cast<int64_t>(floor(raw(x / span)));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

template <typename S>
__device__ S source_index(S coord, int64_t size, GridPadding padding, bool align) {
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
  if (!isfinite(c) || c > 2147483647.0 || c < -2147483648.0) coord = S(-100);
  return coord;
}

template <typename T>
__global__ void grid_sampler_kernel(Vol out, Vol in, Vol grid, GridMode mode,
                                    GridPadding padding, bool align) {
  using S = grid_t<T>;
  const int64_t D = in.sizes[2], H = in.sizes[3], W = in.sizes[4];
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    auto coord = [&](int64_t k) {
      return S(static_cast<double>(to_acc(*grid.at<T>(o.n, o.p[0], o.p[1], o.p[2], k))));
    };
    const S ix = source_index<S>(coord(0), W, padding, align);
    const S iy = source_index<S>(coord(1), H, padding, align);
    const S iz = source_index<S>(coord(2), D, padding, align);
    auto inside = [&](int64_t z, int64_t y, int64_t x) {
      return z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
    };
    auto value = [&](int64_t z, int64_t y, int64_t x) {
      return S(static_cast<double>(to_acc(*in.at<T>(o.n, o.c, z, y, x))));
    };
    S result = S(0);
    if (mode == GridMode::kNearest) {
      const auto x = static_cast<int64_t>(nearbyint(raw(ix)));
      const auto y = static_cast<int64_t>(nearbyint(raw(iy)));
      const auto z = static_cast<int64_t>(nearbyint(raw(iz)));
      if (inside(z, y, x)) result = value(z, y, x);
    } else {
      const auto x0 = static_cast<int64_t>(floor(raw(ix)));
      const auto y0 = static_cast<int64_t>(floor(raw(iy)));
      const auto z0 = static_cast<int64_t>(floor(raw(iz)));
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
    *out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]) = from_acc<T>(raw(result));
  }
}

void grid_sampler_3d(const Volume& out, const Volume& in, const Volume& grid, GridMode mode,
                     GridPadding padding, bool align, const char* fn) {
  const OnDevice on(out.device);
  const Vol o = vol(out);
  const int64_t n = o.sizes[0] * o.sizes[1] * o.sizes[2] * o.sizes[3] * o.sizes[4];
  check_served(visit_pool_dtype(in.dtype, false, [&](auto tag) {
                 using T = decltype(tag);
                 if constexpr (!std::is_integral_v<T>) {
                   grid_sampler_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(
                       o, vol(in), vol(grid), mode, padding, align);
                   AOTRT_CUDA_CHECK_LAUNCH();
                 }
               }),
               in.dtype, fn);
}

// Antialiased bilinear taps along one dim, as the CPU's aa_taps: the scale,
// support and inverse scale in T, the most taps an output has.
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
  return AaDim<T>{scale, support, invscale, in,
                  static_cast<int64_t>(std::ceil(support)) * 2 + 1};
}

// Output o along a dim: sum_j src(first + j) * w_j with the triangle weights
// normalised to sum 1, each step in T as the CPU's aa_taps and aa_tap_sum.
template <typename T, typename Src>
__device__ T aa_resample(const AaDim<T>& a, int64_t o, Src&& src) {
  const auto center = static_cast<T>(a.scale * (o + 0.5));
  const int64_t lo = max(static_cast<int64_t>(center - a.support + 0.5), int64_t{0});
  const int64_t hi = min(static_cast<int64_t>(center + a.support + 0.5), a.in);
  const int64_t size = min(max(hi - lo, int64_t{0}), a.max_taps);
  auto tri = [&](int64_t j) {
    const T x = fabs(static_cast<T>((static_cast<T>(j + lo) - center + 0.5) * a.invscale));
    return x < T(1) ? T(1) - x : T(0);
  };
  T total = 0;
  for (int64_t j = 0; j < size; ++j) total += tri(j);
  auto weight = [&](int64_t j) { return total != T(0) ? tri(j) / total : tri(j); };
  if (size == 0) return T(0);
  T acc = src(lo) * weight(0);
  for (int64_t j = 1; j < size; ++j) acc += src(lo + j) * weight(j);
  return acc;
}

// One separable pass: out has in's sizes but along dim (3: H, 4: W).
template <typename T>
__global__ void aa_pass_kernel(Vol out, Vol in, AaDim<T> a, int dim) {
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    const int64_t y = o.p[1], x = o.p[2];
    T v;
    if (dim == 4) {
      v = aa_resample<T>(a, x, [&](int64_t j) { return *in.at<T>(o.n, o.c, 0, y, j); });
    } else {
      v = aa_resample<T>(a, y, [&](int64_t j) { return *in.at<T>(o.n, o.c, 0, j, x); });
    }
    *out.at<T>(o.n, o.c, 0, y, x) = v;
  }
}

template <typename T>
void aa_pass(const Vol& out, const Vol& in, const AaDim<T>& a, int dim, cudaStream_t stream) {
  const int64_t n = out.sizes[0] * out.sizes[1] * out.sizes[3] * out.sizes[4];
  aa_pass_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(out, in, a, dim);
  AOTRT_CUDA_CHECK_LAUNCH();
}

// W first (into a dense temporary when H changes too), then H; a dim whose
// size does not change is skipped, as on the CPU.
void upsample_bilinear_aa(const Volume& out, const Volume& in, bool align,
                          std::optional<double> scale_h, std::optional<double> scale_w,
                          const char* fn) {
  const OnDevice on(out.device);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const Vol o = vol(out), src = vol(in);
    const int64_t N = src.sizes[0], C = src.sizes[1], H = src.sizes[3], W = src.sizes[4];
    const int64_t OH = o.sizes[3], OW = o.sizes[4];
    const AaDim<T> aw = aa_dim<T>(W, OW, align, scale_w), ah = aa_dim<T>(H, OH, align, scale_h);
    if (OW == W) return aa_pass<T>(o, src, ah, 3, on.stream);
    if (OH == H) return aa_pass<T>(o, src, aw, 4, on.stream);
    Temp<T> across(on.device, N * C * H * OW);
    const Vol mid{reinterpret_cast<char*>(across.get()),
                  {N, C, 1, H, OW},
                  {C * H * OW, H * OW, H * OW, OW, 1}};
    aa_pass<T>(mid, src, aw, 4, on.stream);
    aa_pass<T>(o, mid, ah, 3, on.stream);
  };
  if (in.dtype == ScalarType::Float32) return run(float{});
  if (in.dtype == ScalarType::Float64) return run(double{});
  AOTRT_FAIL(kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

constexpr PoolingKernels kPooling{.max_pool = max_pool,
                                  .avg_pool = avg_pool,
                                  .adaptive_pool = adaptive_pool,
                                  .fractional_max_pool = fractional_max_pool,
                                  .max_unpool = nullptr,
                                  .grid_sampler_3d = grid_sampler_3d,
                                  .upsample_bilinear_aa = upsample_bilinear_aa};
AOTRT_REGISTER_KERNELS(PoolingKernels, cuda, kPooling);

}  // namespace
}  // namespace aotrt::cuda
