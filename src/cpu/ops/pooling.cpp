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
#include "ops/pooling_math.h"

namespace aotrt::cpu {
namespace {
using ops::GridMode;
using ops::GridPadding;
using ops::PoolingKernels;
using ops::PoolWindow;
using ops::Volume;
namespace pooling_math = ops::pooling_math;

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

template <typename F>
bool visit_pool_dtype(ScalarType t, bool with_int64, F&& f) {
  return pooling_math::visit_pool_dtype<Half, BFloat16>(t, with_int64, std::forward<F>(f));
}

// Element (d, h, w) of plane (n, c) of in, in T's accumulation type.
template <typename T>
auto reader(const Volume& in, int64_t n, int64_t c) {
  return [src = At{in}, n, c](int64_t d, int64_t h, int64_t w) {
    return static_cast<acc_t<T>>(load(read_elem<T>(src.v.data, src.offset(n, c, d, h, w))));
  };
}

// The max of plane (n, c) over the box stepped by `step` (pooling_math::window_max):
// writes value and index.
template <typename T>
void max_of_window(const Volume& in, int64_t n, int64_t c, const pooling_math::Box& box,
                   const int64_t* step, char* out_elem, char* index_elem) {
  const auto best = pooling_math::window_max<acc_t<T>>(box, step, in.sizes[3], in.sizes[4],
                                                       reader<T>(in, n, c));
  write_elem<T>(out_elem, 0, convert_value<T>(best.value));
  write_elem<int64_t>(index_elem, 0, best.index);
}

constexpr int64_t kUnitStep[3] = {1, 1, 1};

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
      const pooling_math::Box box =
          pooling_math::max_pool_box(opos.data(), &in.sizes[2], win.kernel.data(),
                                     win.stride.data(), win.padding.data(), win.dilation.data());
      max_of_window<T>(in, n, c, box, win.dilation.data(), elem_at<T>(out, n, c, opos),
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
      const pooling_math::AvgBox a = pooling_math::avg_pool_box(
          opos.data(), &in.sizes[2], win.kernel.data(), win.stride.data(), win.padding.data());
      char* dst = elem_at<T>(out, n, c, opos);
      if (a.inside == 0) {
        write_elem<T>(dst, 0, convert_value<T>(0.0));
        return;
      }
      const A sum = pooling_math::window_sum<A>(a.box, reader<T>(in, n, c));
      const int64_t divisor =
          divisor_override ? *divisor_override : (count_include_pad ? a.padded : a.inside);
      write_elem<T>(dst, 0, convert_value<T>(pooling_math::window_mean(sum, divisor)));
    });
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

void adaptive_pool(const Volume& out, const Volume* idx, const Volume& in, const char* fn) {
  const bool served = visit_pool_dtype(in.dtype, false, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    for_each_output(out, [&](int64_t n, int64_t c, const std::array<int64_t, 3>& opos) {
      const pooling_math::Box b =
          pooling_math::adaptive_box(opos.data(), &in.sizes[2], &out.sizes[2]);
      char* dst = elem_at<T>(out, n, c, opos);
      if (idx != nullptr) {
        max_of_window<T>(in, n, c, b, kUnitStep, dst, elem_at<int64_t>(*idx, n, c, opos));
        return;
      }
      const A sum = pooling_math::window_sum<A>(b, reader<T>(in, n, c));
      const int64_t count = (b.hi[0] - b.lo[0]) * (b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2]);
      write_elem<T>(dst, 0, convert_value<T>(sum / static_cast<A>(count)));
    });
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

// The rounding of ATen's scalar_t arithmetic for T (pooling_math::Low).
template <typename T>
struct RoundTo {
  static float round(float x) { return static_cast<float>(load(convert_value<T>(x))); }
};

// Window starts of a fractional max pool along one dim, computed in T as ATen's
// scalar_t arithmetic (each step rounded to T).
template <typename T>
void fractional_starts(T sample, int64_t in, int64_t out, int64_t k, int64_t* starts) {
  for (int64_t i = 0; i < out; ++i) {
    if constexpr (std::is_same_v<T, double>) {
      starts[i] = pooling_math::fractional_start(sample, i, in, out, k, [](double x) { return x; });
    } else {
      starts[i] = pooling_math::fractional_start(static_cast<float>(load(sample)), i, in, out, k,
                                                 RoundTo<T>::round);
    }
  }
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
              const pooling_math::Box box{
                  {starts[0][od], starts[1][oh], starts[2][ow]},
                  {starts[0][od] + k[0], starts[1][oh] + k[1], starts[2][ow] + k[2]}};
              const std::array<int64_t, 3> opos{od, oh, ow};
              max_of_window<T>(in, n, c, box, kUnitStep, elem_at<T>(out, n, c, opos),
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
// float16/bfloat16 every operation is done in float and rounded to the dtype (Low).
template <typename T>
using grid_t =
    std::conditional_t<std::is_floating_point_v<T>, T, pooling_math::Low<RoundTo<T>>>;

void grid_sampler_3d(const Volume& out, const Volume& in, const Volume& grid, GridMode mode,
                     GridPadding padding, bool align, const char* fn) {
  const bool served = visit_pool_dtype(in.dtype, false, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_integral_v<T>) {  // never int64: with_int64 is false
      using S = grid_t<T>;
      const At src{in}, g{grid};
      for_each_output(out, [&](int64_t n, int64_t c, const std::array<int64_t, 3>& opos) {
        auto coord = [&](int64_t k) {
          return S(load(read_elem<T>(grid.data, g.offset(n, opos[0], opos[1], opos[2], k))));
        };
        auto value = [&](int64_t z, int64_t y, int64_t x) {
          return S(load(read_elem<T>(in.data, src.offset(n, c, z, y, x))));
        };
        const S result = pooling_math::grid_sample<S>(coord(0), coord(1), coord(2), in.sizes[2],
                                                      in.sizes[3], in.sizes[4], mode, padding,
                                                      align, value);
        write_elem<T>(elem_at<T>(out, n, c, opos), 0,
                      convert_value<T>(pooling_math::raw(result)));
      });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

// Antialiased bilinear resampling along one dim (Note [Pooling semantics]): the
// taps of output o start at first[o], weights[o] sums to 1; all in T.
template <typename T>
struct AaWeights {
  std::vector<int64_t> first;
  std::vector<std::vector<T>> weights;
};

template <typename T>
AaWeights<T> aa_weights(int64_t in, int64_t out, bool align, std::optional<double> given) {
  const pooling_math::AaDim<T> a = pooling_math::aa_dim<T>(in, out, align, given);
  AaWeights<T> r;
  r.first.resize(static_cast<size_t>(out));
  r.weights.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const pooling_math::AaTaps<T> t = pooling_math::aa_taps(a, o);
    std::vector<T>& wt = r.weights[static_cast<size_t>(o)];
    wt.resize(static_cast<size_t>(t.count));
    const T total = pooling_math::aa_total(a, t);
    for (int64_t j = 0; j < t.count; ++j) {
      wt[j] = pooling_math::aa_normalised_weight(a, t, j, total);
    }
    r.first[static_cast<size_t>(o)] = t.first;
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
      const AaWeights<T> tw = aa_weights<T>(W, OW, align, scale_w);
      const AaWeights<T> th = aa_weights<T>(H, OH, align, scale_h);
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
