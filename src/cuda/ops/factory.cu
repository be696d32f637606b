// The CUDA factory kernels (Note [Window and zero factories]): hann_window,
// one thread per element, each computed as the CPU kernel computes it (in the
// output's compute type, step by step: the multiply by -0.5 is exact, so a
// fused multiply-add rounds as the CPU's multiply then add).
#include <cuda_runtime.h>

#include <cstdint>
#include <numbers>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/factory.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::FactoryKernels;

// C: float for float32, float16 and bfloat16, double for float64.
template <typename T, typename C>
__global__ void hann_kernel(T* out, int64_t n, C step) {
  AOTRT_GRID_STRIDE(i, n) {
    const C v = n == 1 ? C(1) : cos(static_cast<C>(i) * step) * C(-0.5) + C(0.5);
    out[i] = from_acc<T>(v);
  }
}

void hann_window(const TensorImpl& out, int64_t n) {
  const OnDevice on(out.device());
  auto launch = [&](auto tag, auto compute) {
    using T = decltype(tag);
    using C = decltype(compute);
    // periodic: the window of n + 1 points, less its last (as the CPU's).
    const C step = static_cast<C>(2 * std::numbers::pi / static_cast<double>(n));
    hann_kernel<T, C><<<blocks_for(n), kThreads, 0, on.stream>>>(
        static_cast<T*>(out.data_ptr()), n, step);
    AOTRT_CUDA_CHECK_LAUNCH();
  };
  switch (out.dtype()) {
    case ScalarType::Float32: return launch(float{}, float{});
    case ScalarType::Float64: return launch(double{}, double{});
    case ScalarType::Float16: return launch(__half{}, float{});
    case ScalarType::BFloat16: return launch(__nv_bfloat16{}, float{});
    default: AOTRT_FAIL(kInternal, "hann_window kernel: dtype ", dtype_name(out.dtype()));
  }
}

constexpr FactoryKernels kFactory{.hann_window = hann_window};
AOTRT_REGISTER_KERNELS(FactoryKernels, cuda, kFactory);

}  // namespace
}  // namespace aotrt::cuda
