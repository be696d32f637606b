// CUDA kernels of the random ops (ops/random.h): element i of the output
// from its own Philox block philox4x32_10(seed, base + i) (core/philox.h),
// mapped to a value exactly as the CPU kernel maps it (Note [Random
// streams]), so both devices draw the same numbers for the same seed and
// offset (up to the last bits of the device's log, sqrt and cos for normal
// and exponential draws). One thread per element; randperm's Fisher-Yates
// shuffle is sequential by definition and runs in one thread, as the CPU's.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/philox.h"
// philox.h and cuda/int_divider.h each define it for their own functions.
#undef AOTRT_HOST_DEVICE
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

struct OnDevice {
  int device;
  DeviceGuard guard;
  cudaStream_t stream;
  explicit OnDevice(const TensorImpl& t)
      : device(t.device().index), guard(device), stream(current_cuda_stream(device)) {}
};

void generate(const TensorImpl& out, const RandomDraw& draw, uint64_t seed, uint64_t base) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const OnDevice on(out);
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
  const OnDevice on(out);
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
  const OnDevice on(out);
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

constexpr RandomKernels kRandom{.generate = generate, .randperm = randperm, .dropout = dropout};
AOTRT_REGISTER_KERNELS(RandomKernels, cuda, kRandom);

}  // namespace
}  // namespace aotrt::cuda
