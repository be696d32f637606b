// The CPU's factory kernels (Note [Window and zero factories]).
#include <cmath>
#include <numbers>

#include "cpu/elements.h"
#include "ops/dispatch.h"
#include "ops/factory.h"

namespace aotrt::cpu {
namespace {
using ops::FactoryKernels;

// In the output's compute type, step by step as ATen's hamming_window.
template <class T, class C>
void hann(T* out, int64_t n) {
  if (n == 1) {
    out[0] = convert_value<T>(C(1));
    return;
  }
  const int64_t periodic_length = n + 1;
  const C step = static_cast<C>(2 * std::numbers::pi / static_cast<double>(periodic_length - 1));
  for (int64_t i = 0; i < n; ++i) {
    const C v = std::cos(static_cast<C>(i) * step) * C(-0.5) + C(0.5);
    out[i] = convert_value<T>(v);
  }
}

void hann_window(const TensorImpl& out, int64_t n) {
  switch (out.dtype()) {
    case ScalarType::Float32: hann<float, float>(static_cast<float*>(out.data_ptr()), n); break;
    case ScalarType::Float64: hann<double, double>(static_cast<double*>(out.data_ptr()), n); break;
    case ScalarType::Float16: hann<Half, float>(static_cast<Half*>(out.data_ptr()), n); break;
    case ScalarType::BFloat16:
      hann<BFloat16, float>(static_cast<BFloat16*>(out.data_ptr()), n);
      break;
    default: AOTRT_FAIL(kInternal, "hann_window kernel: dtype ", dtype_name(out.dtype()));
  }
}

constexpr FactoryKernels kFactory{.hann_window = hann_window};
AOTRT_REGISTER_KERNELS(FactoryKernels, cpu, kFactory);

}  // namespace
}  // namespace aotrt::cpu
