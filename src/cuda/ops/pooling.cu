// CUDA kernels of the pooling family (ops/pooling.h): one thread per output
// element, every tensor read and written through its strides, each value
// computed as the CPU kernel computes it (src/cpu/ops/pooling.cpp; Note
// [Pooling semantics]): the same taps in the same order, the same
// accumulation types; max_unpool one thread per input element (Note [Max
// unpool on CUDA]).
//
// Note [Max unpool on CUDA]
// The CPU refuses an index outside [0, plane) after its pass ("Found an
// invalid max index"). Here the indices are on the device and refusing one
// would make the host wait for the kernel (ATen's CUDA kernel stops the
// process with a device-side assert instead): as Note [Indexing on CUDA],
// such an element is skipped, so its place stays zero and no memory outside
// the output is written. Where two elements of a plane name one place, one of
// them is kept (which one is unspecified, as ATen's CUDA kernel); the CPU
// keeps the last.
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/pooling.h"
#include "ops/pooling_math.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::GridMode;
using ops::GridPadding;
using ops::PoolingKernels;
using ops::PoolWindow;
using ops::Volume;
namespace pooling_math = ops::pooling_math;

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

template <typename F>
bool visit_pool_dtype(ScalarType t, bool with_int64, F&& f) {
  return pooling_math::visit_pool_dtype<__half, __nv_bfloat16>(t, with_int64,
                                                               std::forward<F>(f));
}

void check_served(bool served, ScalarType t, const char* fn) {
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(t), " is not served");
}

// Element (d, h, w) of plane (n, c) of in, in T's accumulation type.
template <typename T>
struct Reader {
  const Vol& in;
  int64_t n, c;
  __device__ __forceinline__ acc_t<T> operator()(int64_t d, int64_t h, int64_t w) const {
    return to_acc(*in.at<T>(n, c, d, h, w));
  }
};

// The max of plane (n, c) over the box stepped by `step`: value and index out.
template <typename T>
__device__ void max_of_window(const Vol& in, int64_t n, int64_t c, const pooling_math::Box& box,
                              const int64_t* step, const Pos& o, const Vol& out,
                              const Vol& idx) {
  const auto best = pooling_math::window_max<acc_t<T>>(box, step, in.sizes[3], in.sizes[4],
                                                       Reader<T>{in, n, c});
  *out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]) = from_acc<T>(best.value);
  *idx.at<int64_t>(o.n, o.c, o.p[0], o.p[1], o.p[2]) = best.index;
}

__constant__ const int64_t kUnitStep[3] = {1, 1, 1};

template <typename T>
__global__ void max_pool_kernel(Vol out, Vol idx, Vol in, Win win) {
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    const pooling_math::Box box = pooling_math::max_pool_box(
        o.p, &in.sizes[2], win.kernel, win.stride, win.padding, win.dilation);
    max_of_window<T>(in, o.n, o.c, box, win.dilation, o, out, idx);
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
    const pooling_math::AvgBox a =
        pooling_math::avg_pool_box(o.p, &in.sizes[2], win.kernel, win.stride, win.padding);
    T* dst = out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]);
    if (a.inside == 0) {
      *dst = from_acc<T>(A(0));
      continue;
    }
    const A sum = pooling_math::window_sum<A>(a.box, Reader<T>{in, o.n, o.c});
    const int64_t divisor =
        divisor_override != 0 ? divisor_override : (count_include_pad ? a.padded : a.inside);
    *dst = from_acc<T>(pooling_math::window_mean(sum, divisor));
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

// idx.data is null for the average.
template <typename T>
__global__ void adaptive_pool_kernel(Vol out, Vol idx, Vol in) {
  using A = acc_t<T>;
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    const pooling_math::Box b = pooling_math::adaptive_box(o.p, &in.sizes[2], &out.sizes[2]);
    if (idx.data != nullptr) {
      max_of_window<T>(in, o.n, o.c, b, kUnitStep, o, out, idx);
      continue;
    }
    const A sum = pooling_math::window_sum<A>(b, Reader<T>{in, o.n, o.c});
    const int64_t count = (b.hi[0] - b.lo[0]) * (b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2]);
    *out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]) = from_acc<T>(sum / static_cast<A>(count));
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

// The rounding of ATen's scalar_t arithmetic for T (pooling_math::Low).
template <typename T>
struct RoundTo {
  __device__ static float round(float x) { return round_to<T>(x); }
};

// Window start i of a fractional max pool along one dim, in T.
template <typename T>
__device__ int64_t fractional_start(T sample, int64_t i, int64_t in, int64_t out, int64_t k) {
  if constexpr (std::is_same_v<T, double>) {
    return pooling_math::fractional_start(sample, i, in, out, k, [](double x) { return x; });
  } else {
    return pooling_math::fractional_start(to_acc(sample), i, in, out, k, RoundTo<T>::round);
  }
}

// samples: [N, C, 1, 1, nd]; 2-d: sample 0 places W, 1 places H; 3-d: 0 D, 1 H, 2 W.
template <typename T>
__global__ void fractional_kernel(Vol out, Vol idx, Vol in, Vol samples, Win w, int nd) {
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    pooling_math::Box box{{0, 0, 0}, {}};
    for (int k = 3 - nd; k < 3; ++k) {
      const int64_t which = nd == 2 ? (k == 2 ? 0 : 1) : k;
      const T u = *samples.at<T>(o.n, o.c, 0, 0, which);
      box.lo[k] = fractional_start<T>(u, o.p[k], in.sizes[2 + k], out.sizes[2 + k], w.kernel[k]);
    }
    for (int k = 0; k < 3; ++k) box.hi[k] = box.lo[k] + w.kernel[k];
    max_of_window<T>(in, o.n, o.c, box, kUnitStep, o, out, idx);
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
using grid_t =
    std::conditional_t<std::is_floating_point_v<T>, T, pooling_math::Low<RoundTo<T>>>;

template <typename T>
__global__ void grid_sampler_kernel(Vol out, Vol in, Vol grid, GridMode mode,
                                    GridPadding padding, bool align) {
  using S = grid_t<T>;
  AOTRT_GRID_STRIDE(i, out.numel()) {
    const Pos o = position(out, i);
    auto coord = [&](int64_t k) {
      return S(static_cast<double>(to_acc(*grid.at<T>(o.n, o.p[0], o.p[1], o.p[2], k))));
    };
    auto value = [&](int64_t z, int64_t y, int64_t x) {
      return S(static_cast<double>(to_acc(*in.at<T>(o.n, o.c, z, y, x))));
    };
    const S result = pooling_math::grid_sample<S>(coord(0), coord(1), coord(2), in.sizes[2],
                                                  in.sizes[3], in.sizes[4], mode, padding,
                                                  align, value);
    *out.at<T>(o.n, o.c, o.p[0], o.p[1], o.p[2]) = from_acc<T>(pooling_math::raw(result));
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

// Element i of in goes to its index in its plane of out (Note [Max unpool on CUDA]).
template <typename T>
__global__ void max_unpool_kernel(Vol out, Vol in, Vol idx) {
  const int64_t H = out.sizes[3], W = out.sizes[4];
  const int64_t plane = out.sizes[2] * H * W;
  AOTRT_GRID_STRIDE(i, in.numel()) {
    const Pos p = position(in, i);
    const int64_t k = *idx.at<int64_t>(p.n, p.c, p.p[0], p.p[1], p.p[2]);
    if (k < 0 || k >= plane) continue;
    const T v = *in.at<T>(p.n, p.c, p.p[0], p.p[1], p.p[2]);
    *out.at<T>(p.n, p.c, k / (H * W), (k / W) % H, k % W) = v;
  }
}

void max_unpool(const Volume& out, const Volume& in, const Volume& idx, const char* fn) {
  const OnDevice on(out.device);
  const Vol src = vol(in);
  const int64_t n = src.sizes[0] * src.sizes[1] * src.sizes[2] * src.sizes[3] * src.sizes[4];
  if (n == 0) return;
  check_served(visit_pool_dtype(in.dtype, false, [&](auto tag) {
                 using T = decltype(tag);
                 max_unpool_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(vol(out), src,
                                                                                 vol(idx));
                 AOTRT_CUDA_CHECK_LAUNCH();
               }),
               in.dtype, fn);
}

using pooling_math::AaDim;

// Output o along a dim: sum_j src(first + j) * w_j with the triangle weights
// normalised to sum 1, each step in T as the CPU's aa_weights and aa_tap_sum.
template <typename T, typename Src>
__device__ T aa_resample(const AaDim<T>& a, int64_t o, Src&& src) {
  const pooling_math::AaTaps<T> t = pooling_math::aa_taps(a, o);
  if (t.count == 0) return T(0);
  const T total = pooling_math::aa_total(a, t);
  auto weight = [&](int64_t j) { return pooling_math::aa_normalised_weight(a, t, j, total); };
  T acc = src(t.first) * weight(0);
  for (int64_t j = 1; j < t.count; ++j) acc += src(t.first + j) * weight(j);
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
    const AaDim<T> aw = pooling_math::aa_dim<T>(W, OW, align, scale_w);
    const AaDim<T> ah = pooling_math::aa_dim<T>(H, OH, align, scale_h);
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
                                  .max_unpool = max_unpool,
                                  .grid_sampler_3d = grid_sampler_3d,
                                  .upsample_bilinear_aa = upsample_bilinear_aa};
AOTRT_REGISTER_KERNELS(PoolingKernels, cuda, kPooling);

}  // namespace
}  // namespace aotrt::cuda
