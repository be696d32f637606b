// Pooling and resampling over the spatial dims of [N, C, (D,) H, W] tensors:
// max_pool2d/3d_with_indices, avg_pool2d/3d, _adaptive_avg_pool2d/3d,
// adaptive_max_pool2d/3d, fractional_max_pool2d/3d, max_unpool2d/3d,
// grid_sampler_3d, _upsample_bilinear2d_aa.
//
// Note [Pooling semantics]
// Checked against torch 2.13 eager (tests/unit/ops/gen_ops_reference.py,
// family "pooling"; tests/e2e/test_ops_pooling.py):
// - Inputs may be batched ([N, C, H, W] / [N, C, D, H, W]) or not ([C, H, W]
//   / [C, D, H, W]), of any strides and offset; the kernels read them in
//   place. A 2-d op is the 3-d one with a depth of 1.
// - Output sizes (max and avg pools): ATen's pooling_output_shape,
//   floor((in + 2 pad - dil (k - 1) - 1 + (ceil ? stride - 1 : 0)) / stride)
//   + 1, less one when ceil_mode puts the last window's start at or past
//   in + pad. An empty stride list means stride = kernel_size; one int
//   stands for every dim. pad must be at most half the (effective) kernel.
// - max pools: a window starts at o * stride - pad and steps by dilation;
//   taps in the padding are skipped (-inf semantics). The index is the
//   flat position in the input plane (d H + h) W + w, int64. A tap wins when
//   it is greater than the running value or is NaN, so a NaN wins and the
//   last NaN of a window gives the index. Integer inputs are served (ATen
//   serves int64 too), their running value starting at the type's lowest.
// - avg_pool: the window [o * stride - pad, + k) is clipped to in + pad for
//   the count_include_pad divisor, then to the input for the sum; the
//   divisor is divisor_override when given (not 0), else the clipped size
//   with or without the padding. Sums are in float for float16/bfloat16/
//   float32, double for float64, int64 for integers (the quotient
//   truncated, as ATen's integer division). ATen's CPU avg_pool3d refuses
//   float16/bfloat16 on contiguous inputs; aotrt serves them (float sums).
// - adaptive pools: bin o of in / out covers [floor(o in / out),
//   ceil((o + 1) in / out)).
// - fractional_max_pool: random_samples [N, C, 2 or 3] (the input's dtype)
//   place the windows: for u = sample (2-d: [0] for W, [1] for H; 3-d: [0]
//   T, [1] H, [2] W), alpha = (in - k) / (out - 1), start_i =
//   int((i + u) alpha) - int(u alpha), the last start in - k; computed in
//   the input's dtype (each step rounded for float16/bfloat16, as ATen's
//   scalar_t arithmetic). The max is the max pool's (NaN wins).
// - max_unpool: a zero output of output_size; every input element goes to
//   its index in its plane; an index outside [0, plane) is refused after
//   the pass ("Found an invalid max index"); on CUDA it is skipped (Note
//   [Max unpool on CUDA] in cuda/ops/pooling.cu).
// - grid_sampler_3d: grid [N, D', H', W', 3] holds (x, y, z) in [-1, 1] for
//   (W, H, D); unnormalised as ((c + 1) / 2)(size - 1) with align_corners,
//   else ((c + 1) size - 1) / 2; border clips to [0, size - 1], reflection
//   reflects about the (half-)pixel edges then clips; a coordinate that is
//   not finite or beyond int range becomes -100 (out of bounds). Trilinear
//   weights the 8 corners in bounds; nearest rounds half to even. Bicubic is
//   refused (ATen: 4-d input only).
// - _upsample_bilinear2d_aa (antialiased bilinear, ATen's separable
//   resampling): per dim, scale = (in - 1) / (out - 1) with align_corners (0
//   for out 1), else 1 / scales_{h,w} when given and > 0, else in / out;
//   support = scale when scale >= 1, else 1; output o's taps are
//   [max(int(c - support + 0.5), 0), min(int(c + support + 0.5), in)) with
//   center c = scale (o + 0.5), tap j weighted by the triangle filter
//   max(0, 1 - |(j - c + 0.5) / max(scale, 1)|), normalised to sum 1. W is
//   resampled first, into a temporary, then H; a dim whose size does not
//   change is skipped. Weights, centres and sums are in the input's dtype
//   (float32 or float64; ATen's CPU kernel refuses float16 and bfloat16 and
//   serves uint8 through fixed-point weights, which aotrt refuses).
// - Layout: the 2-d pools (max, avg, adaptive avg/max) and max_unpool2d,
//   max_pool3d and _upsample_bilinear2d_aa give a channels-last output when the 4-d (or, for
//   max_pool3d, 5-d) input's strides are channels-last (c10's
//   suggest_memory_format); every other result is contiguous, as eager's.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "core/tensor.h"

namespace aotrt::ops {

// A tensor seen as five dims (N, C, D, H, W for pools; any five dims for the
// sampling grid), in elements; the kernels read and write through strides.
struct Volume {
  char* data = nullptr;
  ScalarType dtype = ScalarType::Float32;
  Device device;  // where data lives (the CUDA kernels launch on its current stream)
  std::array<int64_t, 5> sizes{}, strides{};
};

// Windows of a max or avg pool over (D, H, W).
struct PoolWindow {
  std::array<int64_t, 3> kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0},
      dilation{1, 1, 1};
};

enum class GridMode : int64_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum class GridPadding : int64_t { kZeros = 0, kBorder = 1, kReflection = 2 };

// See Note [Op dispatch] in ops/dispatch.h; Note [Pooling semantics].
// `indices` is int64 with out's sizes.
struct PoolingKernels {
  void (*max_pool)(const Volume& out, const Volume& indices, const Volume& in,
                   const PoolWindow& w, const char* fn);
  void (*avg_pool)(const Volume& out, const Volume& in, const PoolWindow& w,
                   bool count_include_pad, std::optional<int64_t> divisor_override,
                   const char* fn);
  // indices is null for the average.
  void (*adaptive_pool)(const Volume& out, const Volume* indices, const Volume& in,
                        const char* fn);
  // samples: [N, C, 1, 1, spatial_dims].
  void (*fractional_max_pool)(const Volume& out, const Volume& indices, const Volume& in,
                              const Volume& samples, std::array<int64_t, 3> kernel,
                              int spatial_dims, const char* fn);
  // out is zeroed by the family.
  void (*max_unpool)(const Volume& out, const Volume& in, const Volume& indices,
                     const char* fn);
  // grid: [N, D', H', W', 3].
  void (*grid_sampler_3d)(const Volume& out, const Volume& in, const Volume& grid,
                          GridMode mode, GridPadding padding, bool align_corners,
                          const char* fn);
  // out: in's N and C, the output's H and W (D = 1 for both); scales as
  // given (nullopt: None).
  void (*upsample_bilinear_aa)(const Volume& out, const Volume& in, bool align_corners,
                               std::optional<double> scale_h, std::optional<double> scale_w,
                               const char* fn);
};

struct PoolWithIndices {
  std::unique_ptr<TensorImpl> values;
  std::unique_ptr<TensorImpl> indices;  // int64
};

// spatial_dims is 2 or 3 for each of these.
PoolWithIndices max_pool_with_indices(const TensorImpl& self, int spatial_dims,
                                      std::span<const int64_t> kernel_size,
                                      std::span<const int64_t> stride,
                                      std::span<const int64_t> padding,
                                      std::span<const int64_t> dilation, bool ceil_mode,
                                      const char* fn);
std::unique_ptr<TensorImpl> avg_pool(const TensorImpl& self, int spatial_dims,
                                     std::span<const int64_t> kernel_size,
                                     std::span<const int64_t> stride,
                                     std::span<const int64_t> padding, bool ceil_mode,
                                     bool count_include_pad,
                                     std::optional<int64_t> divisor_override, const char* fn);
std::unique_ptr<TensorImpl> adaptive_avg_pool(const TensorImpl& self, int spatial_dims,
                                              std::span<const int64_t> output_size,
                                              const char* fn);
PoolWithIndices adaptive_max_pool(const TensorImpl& self, int spatial_dims,
                                  std::span<const int64_t> output_size, const char* fn);
PoolWithIndices fractional_max_pool(const TensorImpl& self, int spatial_dims,
                                    std::span<const int64_t> kernel_size,
                                    std::span<const int64_t> output_size,
                                    const TensorImpl& random_samples, const char* fn);
// stride and padding: max_unpool3d's (checked only, as ATen); empty for 2-d.
std::unique_ptr<TensorImpl> max_unpool(const TensorImpl& self, const TensorImpl& indices,
                                       int spatial_dims, std::span<const int64_t> output_size,
                                       std::span<const int64_t> stride,
                                       std::span<const int64_t> padding, const char* fn);
// aten::cudnn_grid_sampler(self [N, C, H, W], grid [N, H', W', 2]): cuDNN's
// spatial transformer sampler, which is grid_sample with bilinear
// interpolation, zero padding and align_corners=True (what ATen hands cuDNN;
// Note [cuDNN grid sampler] in ops/pooling.cpp).
std::unique_ptr<TensorImpl> cudnn_grid_sampler(const TensorImpl& self, const TensorImpl& grid,
                                               const char* fn);
std::unique_ptr<TensorImpl> grid_sampler_3d(const TensorImpl& input, const TensorImpl& grid,
                                            int64_t interpolation_mode, int64_t padding_mode,
                                            bool align_corners, const char* fn);

// _upsample_bilinear2d_aa(self [N, C, H, W], output_size [2], align_corners,
// scales_h, scales_w).
std::unique_ptr<TensorImpl> upsample_bilinear2d_aa(const TensorImpl& self,
                                                   std::span<const int64_t> output_size,
                                                   bool align_corners,
                                                   std::optional<double> scales_h,
                                                   std::optional<double> scales_w,
                                                   const char* fn);

}  // namespace aotrt::ops
