// Factories without random numbers: hann_window and _efficientzerotensor.
//
// Note [Window and zero factories]
// hann_window(N) is ATen's periodic Hann window (the C shim's overload has
// no `periodic`, whose default is true): 0.5 - 0.5 cos(2 pi n / N) for
// n < N, computed as ATen does in the output dtype (arange, times
// 2 pi / N, cos, times -0.5, plus 0.5); N = 1 gives [1], N = 0 an empty
// tensor; the dtype defaults to float32 and must be floating. The CUDA
// kernel computes each element the same way (cos in the compute type).
// _efficientzerotensor(size) is ATen's ZeroTensor, which reads as zeros
// and takes no memory there; aotrt makes real zeros (contiguous) on either
// device, since nothing downstream can tell the difference but memory.
#pragma once

#include <memory>
#include <optional>
#include <span>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. out: dense [N] floating.
struct FactoryKernels {
  void (*hann_window)(const TensorImpl& out, int64_t window_length);
};

std::unique_ptr<TensorImpl> hann_window(int64_t window_length, std::optional<ScalarType> dtype,
                                        Device device, const char* fn);
std::unique_ptr<TensorImpl> efficient_zero_tensor(std::span<const int64_t> size,
                                                  std::optional<ScalarType> dtype, Device device,
                                                  const char* fn);

}  // namespace aotrt::ops
