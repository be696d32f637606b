// CUDA kernels of the random ops (ops/random.h): element i of the output
// from its own Philox block philox4x32_10(seed, base + i) (core/philox.h),
// mapped to a value exactly as the CPU kernel maps it (Note [Random
// streams]), so both devices draw the same numbers for the same seed and
// offset (up to the last bits of the device's log, sqrt and cos for normal
// and exponential draws). One thread per element; randperm's Fisher-Yates
// shuffle is sequential by definition and runs in one thread, as the CPU's.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <cuda/std/functional>

#include "core/philox.h"
#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/random.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::RandomDraw;
using ops::RandomKernels;
using ops::RandomKind;

// What the kernel needs of a RandomDraw (by value; p on the device).
struct Draw {
  RandomKind kind;
  double a, b;
  int64_t low;
  uint64_t range;
  const double* p;
};

template <typename T>
__device__ __forceinline__ T value(const Draw& d, int64_t i, uint64_t seed, uint64_t base) {
  const PhiloxBlock r = philox4x32_10(seed, base + static_cast<uint64_t>(i));
  switch (d.kind) {
    case RandomKind::kUniform:
      if constexpr (sizeof(T) == 4) {
        return static_cast<T>(d.a + (d.b - d.a) * philox_unit_float(r.w[0]));
      } else {
        return static_cast<T>(d.a + (d.b - d.a) * philox_unit(r.w[0], r.w[1]));
      }
    case RandomKind::kNormal: {
      const double u1 = 1.0 - philox_unit(r.w[0], r.w[1]);
      const double u2 = philox_unit(r.w[2], r.w[3]);
      constexpr double kPi = 3.141592653589793238462643383279502884;
      return static_cast<T>(d.a + d.b * sqrt(-2.0 * log(u1)) * cos(2.0 * kPi * u2));
    }
    case RandomKind::kRandint: {
      const uint64_t bits = (static_cast<uint64_t>(r.w[1]) << 32) | r.w[0];
      return static_cast<T>(d.low + static_cast<int64_t>(bits % d.range));
    }
    case RandomKind::kBernoulli:
      return static_cast<T>(philox_unit(r.w[0], r.w[1]) < (d.p != nullptr ? d.p[i] : d.a) ? 1 : 0);
    case RandomKind::kExponential:
      return static_cast<T>(-log1p(-philox_unit(r.w[0], r.w[1])) / d.a);
  }
  return T{};
}

template <typename T>
__global__ void fill_kernel(T* out, int64_t n, Draw d, uint64_t seed, uint64_t base) {
  AOTRT_GRID_STRIDE(i, n) { out[i] = value<T>(d, i, seed, base); }
}

void generate(const TensorImpl& out, const RandomDraw& draw, uint64_t seed, uint64_t base) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const OnDevice on(out.device());
  const Draw d{draw.kind, draw.a, draw.b, draw.low, draw.range,
               draw.p != nullptr ? static_cast<const double*>(draw.p->data_ptr()) : nullptr};
  AOTRT_CHECK(draw.p == nullptr || draw.p->device() == out.device(), kInternal,
              "random kernel: probabilities on ", draw.p->device().str(), ", output on ",
              out.device().str());
  auto launch = [&](auto* data) {
    using T = std::remove_pointer_t<decltype(data)>;
    fill_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(data, n, d, seed, base);
    AOTRT_CUDA_CHECK_LAUNCH();
  };
  switch (out.dtype()) {
    case ScalarType::Float32: return launch(static_cast<float*>(out.data_ptr()));
    case ScalarType::Float64: return launch(static_cast<double*>(out.data_ptr()));
    case ScalarType::Int64: return launch(static_cast<int64_t*>(out.data_ptr()));
    default: AOTRT_FAIL(kInternal, "random kernel: dtype ", dtype_name(out.dtype()));
  }
}

__global__ void randperm_kernel(int64_t* v, int64_t n, uint64_t seed, uint64_t base) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const PhiloxBlock r = philox4x32_10(seed, base + static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(r.w[1]) << 32) | r.w[0];
    const int64_t j = i + static_cast<int64_t>(bits % static_cast<uint64_t>(n - i));
    const int64_t t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

void randperm(const TensorImpl& out, uint64_t seed, uint64_t base) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const OnDevice on(out.device());
  randperm_kernel<<<1, 1, 0, on.stream>>>(static_cast<int64_t*>(out.data_ptr()), n, seed, base);
  AOTRT_CUDA_CHECK_LAUNCH();
}

template <typename T>
__global__ void dropout_kernel(T* out, T* mask, const T* x, int64_t n, double keep, double scale,
                               uint64_t seed, uint64_t base) {
  AOTRT_GRID_STRIDE(i, n) {
    const PhiloxBlock r = philox4x32_10(seed, base + static_cast<uint64_t>(i));
    const bool kept = philox_unit(r.w[0], r.w[1]) < keep;
    mask[i] = kept ? T(1) : T(0);
    out[i] = kept ? static_cast<T>(x[i] * scale) : T(0);
  }
}

void dropout(const TensorImpl& out, const TensorImpl& mask, const TensorImpl& x, double keep,
             double scale, uint64_t seed, uint64_t base) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const OnDevice on(out.device());
  if (x.dtype() == ScalarType::Float32) {
    dropout_kernel<float><<<blocks_for(n), kThreads, 0, on.stream>>>(
        static_cast<float*>(out.data_ptr()), static_cast<float*>(mask.data_ptr()),
        static_cast<const float*>(x.data_ptr()), n, keep, scale, seed, base);
  } else {
    dropout_kernel<double><<<blocks_for(n), kThreads, 0, on.stream>>>(
        static_cast<double*>(out.data_ptr()), static_cast<double*>(mask.data_ptr()),
        static_cast<const double*>(x.data_ptr()), n, keep, scale, seed, base);
  }
  AOTRT_CUDA_CHECK_LAUNCH();
}

// Note [Multinomial on CUDA]
// Draws as Note [Random streams] says, counter for counter: with replacement
// a bisection of the row's cumulative weights (CUB's by-key scan), without
// it the keys p_c / e_c in descending order (sort.cu's stable row sort, ties
// in index order). The CPU refuses a weight that is NaN, infinite or
// negative and a row with no positive weight; here that needs the host to
// wait for the device (ATen's CUDA kernel asserts on the device instead), so
// such a weight counts as zero, and a row with no positive weight draws its
// last category with replacement, 0, 1, ... without.
struct ValidWeight {
  const double* p;
  __device__ __forceinline__ double operator()(int64_t i) const {
    const double w = p[i];
    return isfinite(w) && w > 0 ? w : 0.0;
  }
};

__global__ void draw_with_replacement(const double* cdf, int64_t n, int64_t k, int64_t total,
                                      int64_t* out, uint64_t seed, uint64_t base) {
  AOTRT_GRID_STRIDE(i, total) {  // i = r * k + j: sample j of row r
    const double* c = cdf + (i / k) * n;
    const PhiloxBlock r = philox4x32_10(seed, base + static_cast<uint64_t>(i));
    const double x = philox_unit(r.w[0], r.w[1]) * c[n - 1];
    int64_t lo = 0, hi = n;  // the first cumulative weight above x
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (c[mid] <= x) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[i] = lo < n - 1 ? lo : n - 1;
  }
}

__global__ void multinomial_keys(const double* p, double* keys, int64_t total, uint64_t seed,
                                 uint64_t base) {
  AOTRT_GRID_STRIDE(i, total) {  // i = r * n + c: category c of row r
    const PhiloxBlock r = philox4x32_10(seed, base + static_cast<uint64_t>(i));
    const double e = -log1p(-philox_unit(r.w[0], r.w[1]));
    const double w = ValidWeight{p}(i);
    keys[i] = w > 0 ? w / e : -1.0;  // a zero weight after every positive one
  }
}

__global__ void first_of_rows(const int64_t* positions, int64_t n, int64_t k, int64_t total,
                              int64_t* out) {
  AOTRT_GRID_STRIDE(i, total) { out[i] = positions[(i / k) * n + i % k]; }
}

void multinomial(const TensorImpl& probs, const TensorImpl& out, bool replacement, uint64_t seed,
                 uint64_t base, const char* fn) {
  (void)fn;
  const int64_t rows = probs.sizes()[0], n = probs.sizes()[1], k = out.sizes().back();
  const OnDevice on(out.device());
  const auto* p = static_cast<const double*>(probs.data_ptr());
  auto* o = static_cast<int64_t*>(out.data_ptr());
  const int64_t samples = rows * k, weights = rows * n;
  if (replacement) {
    Temp<double> cdf(on.device, weights);
    auto in = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                              ValidWeight{p});
    auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                                RowOf{IntDivider<uint64_t>(n)});
    cub_call(on.device, [&](void* temp, size_t& bytes) {
      return cub::DeviceScan::InclusiveScanByKey(temp, bytes, keys, in, cdf.get(),
                                                 ::cuda::std::plus<>(), weights,
                                                 ::cuda::std::equal_to<>(), on.stream);
    });
    draw_with_replacement<<<blocks_for(samples), kThreads, 0, on.stream>>>(cdf.get(), n, k,
                                                                           samples, o, seed, base);
    AOTRT_CUDA_CHECK_LAUNCH();
    return;
  }
  Temp<double> keys(on.device, weights);
  Temp<int64_t> positions(on.device, weights);
  multinomial_keys<<<blocks_for(weights), kThreads, 0, on.stream>>>(p, keys.get(), weights, seed,
                                                                    base);
  AOTRT_CUDA_CHECK_LAUNCH();
  sorted_row_positions(keys.get(), rows, n, /*descending=*/true, positions.get(), on.device,
                       on.stream);
  first_of_rows<<<blocks_for(samples), kThreads, 0, on.stream>>>(positions.get(), n, k, samples,
                                                                 o);
  AOTRT_CUDA_CHECK_LAUNCH();
}

constexpr RandomKernels kRandom{.generate = generate,
                                .randperm = randperm,
                                .dropout = dropout,
                                .multinomial = multinomial};
AOTRT_REGISTER_KERNELS(RandomKernels, cuda, kRandom);

}  // namespace
}  // namespace aotrt::cuda
