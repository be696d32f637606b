// The factory family's semantics: see Note [Window and zero factories].
#include "ops/factory.h"

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dispatch.h"

namespace aotrt::ops {

std::unique_ptr<TensorImpl> hann_window(int64_t window_length, std::optional<ScalarType> dtype,
                                        Device device, const char* fn) {
  AOTRT_CHECK(window_length >= 0, kInvalidArgument, fn,
              ": requires non-negative window_length, got window_length=", window_length);
  const ScalarType t = dtype.value_or(ScalarType::Float32);
  AOTRT_CHECK(t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16 ||
                  t == ScalarType::BFloat16,
              kInvalidArgument, fn, ": expected a floating point dtype, got ", dtype_name(t));
  const int64_t size[] = {window_length}, stride[] = {1};
  auto out = empty_strided(size, stride, t, device, fn);
  if (window_length > 0) kernel(&FactoryKernels::hann_window, device, fn)(*out, window_length);
  return out;
}

std::unique_ptr<TensorImpl> efficient_zero_tensor(std::span<const int64_t> size,
                                                  std::optional<ScalarType> dtype, Device device,
                                                  const char* fn) {
  for (int64_t s : size) {
    AOTRT_CHECK(s >= 0, kInvalidArgument, fn, ": negative dimension ", s, " in 'size'");
  }
  auto out = empty_strided(size, contiguous_strides(size), dtype.value_or(ScalarType::Float32),
                           device, fn);
  zero_tensor(*out, fn);
  return out;
}

}  // namespace aotrt::ops
