// CPU kernels of the quantized oneDNN ops (ops/quantized.h; Note [Quantized
// oneDNN ops]): dequantize and quantize, one pass over any strides; the
// whole ops in oneDNN's int8 primitives (cpu/quantized.cpp).
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "cpu/elements.h"
#include "cpu/ops.h"
#include "ops/dispatch.h"
#include "ops/quantized.h"

namespace aotrt::cpu {
namespace {
using ops::QuantizedKernels;

// Strides that count the channel index of `dim` (0 everywhere when dim is -1).
std::vector<int64_t> channel_counter(size_t ndim, int64_t dim) {
  std::vector<int64_t> s(ndim, 0);
  if (dim >= 0) s[static_cast<size_t>(dim)] = 1;
  return s;
}

template <typename T>
void dequantize_as(const StridedView& in, std::span<const float> scales,
                   std::span<const int64_t> zero_points, int64_t channel_dim,
                   const StridedView& out) {
  const std::vector<int64_t> channel = channel_counter(in.sizes.size(), channel_dim);
  for_each_element<3>(in.sizes, {in.strides, out.strides, channel},
                      [&](const std::array<int64_t, 3>& off) {
                        const auto c = static_cast<size_t>(off[2]);
                        // In double: any int64 zero point, no overflow; exact for real ones.
                        const float v = static_cast<float>(
                            static_cast<double>(read_elem<T>(in.data, off[0])) -
                            static_cast<double>(zero_points[c]));
                        write_elem<float>(out.data, off[1], v * scales[c]);
                      });
}

void dequantize(const StridedView& in, std::span<const float> scales,
                std::span<const int64_t> zero_points, int64_t channel_dim,
                const StridedView& out, const char* fn) {
  const size_t channels = channel_dim < 0 ? 1 : static_cast<size_t>(in.sizes[channel_dim]);
  AOTRT_CHECK(scales.size() == channels && zero_points.size() == channels, kInternal, fn,
              ": dequantize needs one scale and zero point per channel");
  AOTRT_CHECK(out.dtype == ScalarType::Float32, kInternal, fn, ": dequantize writes float32");
  switch (in.dtype) {
    case ScalarType::UInt8: return dequantize_as<uint8_t>(in, scales, zero_points, channel_dim, out);
    case ScalarType::Int8: return dequantize_as<int8_t>(in, scales, zero_points, channel_dim, out);
    default: AOTRT_FAIL(kInternal, fn, ": dequantize of ", dtype_name(in.dtype));
  }
}

template <typename T>
void quantize_as(const StridedView& in, float scale, int64_t zero_point, const StridedView& out) {
  const float inv = 1.f / scale;  // as oneDNN applies an output scale
  constexpr float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  for_each_element<2>(in.sizes, {in.strides, out.strides}, [&](const std::array<int64_t, 2>& off) {
    const float y = read_elem<float>(in.data, off[0]);
    // nearbyint: round half to even, as ATen's quantize and oneDNN's saturation.
    float q = std::nearbyint(y * inv) + static_cast<float>(zero_point);
    if (std::isnan(q)) q = static_cast<float>(zero_point);  // NaN: the zero point
    q = std::fmin(std::fmax(q, lo), hi);  // saturated: any zero point, any value
    write_elem<T>(out.data, off[1], static_cast<T>(q));
  });
}

void quantize(const StridedView& in, float scale, int64_t zero_point, const StridedView& out,
              const char* fn) {
  AOTRT_CHECK(in.dtype == ScalarType::Float32, kInternal, fn, ": quantize reads float32");
  switch (out.dtype) {
    case ScalarType::UInt8: return quantize_as<uint8_t>(in, scale, zero_point, out);
    case ScalarType::Int8: return quantize_as<int8_t>(in, scale, zero_point, out);
    default: AOTRT_FAIL(kInternal, fn, ": quantize into ", dtype_name(out.dtype));
  }
}

constexpr QuantizedKernels kQuantized{.dequantize = dequantize,
                                      .quantize = quantize,
                                      .qconv_int8 = qconv_int8,
                                      .qlinear_int8 = qlinear_int8};
AOTRT_REGISTER_KERNELS(QuantizedKernels, cpu, kQuantized);

}  // namespace
}  // namespace aotrt::cpu
