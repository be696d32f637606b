// The pooling family's semantics: see Note [Pooling semantics].
#include "ops/pooling.h"

#include <string>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/factory.h"

namespace aotrt::ops {
namespace {

using Sizes = std::vector<int64_t>;

bool is_low_or_float(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16 ||
         t == ScalarType::BFloat16;
}

void check_float_input(const TensorImpl& t, const char* name, const char* fn) {
  AOTRT_CHECK(is_low_or_float(t.dtype()), kUnsupported, fn, ": argument '", name, "' is ",
              dtype_name(t.dtype()),
              "; aotrt serves float32, float64, float16 and bfloat16 here (as ATen's CPU kernel)");
}

// The input of a pool over `nd` spatial dims: [C, ...] or [N, C, ...], every dim but the
// batch non-empty.
void check_pool_input(const TensorImpl& self, int nd, const char* fn) {
  const int64_t dim = self.dim();
  AOTRT_CHECK(dim == nd + 1 || dim == nd + 2, kInvalidArgument, fn, ": argument 'self': expected ",
              nd + 1, "D or ", nd + 2, "D (batch mode) tensor, got ", dim, "D of sizes ",
              sizes_text(self.sizes()));
  for (int64_t d = dim - nd - 1; d < dim; ++d) {
    AOTRT_CHECK(self.sizes()[d] > 0, kInvalidArgument, fn, ": argument 'self' of sizes ",
                sizes_text(self.sizes()), " has an empty non-batch dim ", d);
  }
}

// One int for every spatial dim or one per dim; empty gives `fallback` (the stride's
// default, the kernel) when allowed.
std::array<int64_t, 3> per_dim(std::span<const int64_t> v, int nd, const char* name,
                               const char* fn, std::optional<std::array<int64_t, 3>> fallback,
                               int64_t unused_value) {
  std::array<int64_t, 3> r{unused_value, unused_value, unused_value};
  if (v.empty() && fallback) return *fallback;
  AOTRT_CHECK(v.size() == 1 || static_cast<int>(v.size()) == nd, kInvalidArgument, fn,
              ": argument '", name, "' must be a single int or ", nd, " ints",
              fallback ? " (or empty)" : "", ", got ", v.size());
  for (int i = 0; i < nd; ++i) r[3 - nd + i] = v.size() == 1 ? v[0] : v[i];
  return r;
}

// ATen's pooling_output_shape.
// ATen's output size of a pooled dim. Arguments come from the model (or a
// fuzzer): every step is checked, and an overflow refuses naming `fn`.
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil,
                    const char* fn) {
  const int64_t extent = checked_add(checked_mul(dil, k - 1, fn), 1, fn);  // the dilated window
  const int64_t padded = checked_add(in, checked_mul(2, pad, fn), fn);
  const int64_t num = checked_add(padded - extent, ceil ? stride - 1 : 0, fn);
  // floor(num / stride) + 1, with no intermediate past int64 (stride > 0, num > -2^63).
  int64_t out = (num >= 0 ? num / stride : -((-num - 1) / stride) - 1) + 1;
  if (ceil && checked_mul(out - 1, stride, fn) >= checked_add(in, pad, fn)) --out;
  return out;
}

// Strides of a new output of `sizes` in the layout ATen gives it: channels-last when
// `follow_layout` and the input's strides are (4-d: channels_last, 5-d:
// channels_last_3d), else contiguous.
Sizes output_strides(const TensorImpl& self, const Sizes& sizes, bool follow_layout) {
  if (!follow_layout) return contiguous_strides(sizes);
  return suggested_format_strides(sizes, self.sizes(), self.strides());
}

// A second tensor argument must live where self does (the kernels read both).
void check_device_of(const TensorImpl& self, const TensorImpl& t, const char* what,
                     const char* fn) {
  AOTRT_CHECK(t.device() == self.device(), kInvalidArgument, fn, ": argument '", what,
              "' is on ", t.device().str(), ", the input on ", self.device().str());
}

// t as (N, C, D, H, W): an unbatched tensor gets N = 1, a 2-d pool's D = 1.
Volume volume_of(const TensorImpl& t, int nd) {
  const StridedView v = strided_view(t);
  Volume r;
  r.data = v.data;
  r.dtype = v.dtype;
  r.device = v.device;
  const int64_t dim = t.dim();
  const bool batched = dim == nd + 2;
  r.sizes = {batched ? t.sizes()[0] : 1, 1, 1, 1, 1};
  r.strides = {batched ? t.strides()[0] : 0, 0, 0, 0, 0};
  const int64_t c = batched ? 1 : 0;
  r.sizes[1] = t.sizes()[c];
  r.strides[1] = t.strides()[c];
  for (int i = 0; i < nd; ++i) {
    r.sizes[5 - nd + i] = t.sizes()[c + 1 + i];
    r.strides[5 - nd + i] = t.strides()[c + 1 + i];
  }
  return r;
}

// self's leading (batch, channel) sizes followed by `spatial`'s last nd.
Sizes with_spatial(const TensorImpl& self, int nd, const std::array<int64_t, 3>& spatial) {
  Sizes s(self.sizes().begin(), self.sizes().end() - nd);
  for (int i = 3 - nd; i < 3; ++i) s.push_back(spatial[i]);
  return s;
}

std::string dims_text(const std::array<int64_t, 3>& v, int nd) {
  std::string s;
  for (int i = 3 - nd; i < 3; ++i) s += (i > 3 - nd ? "x" : "") + std::to_string(v[i]);
  return s;
}

struct PoolShape {
  PoolWindow window;
  Sizes out_sizes;
};

PoolShape pool_shape(const TensorImpl& self, int nd, std::span<const int64_t> kernel_size,
                     std::span<const int64_t> stride, std::span<const int64_t> padding,
                     std::span<const int64_t> dilation, bool ceil_mode, bool is_max,
                     const char* fn) {
  check_pool_input(self, nd, fn);
  PoolShape r;
  PoolWindow& w = r.window;
  w.kernel = per_dim(kernel_size, nd, "kernel_size", fn, std::nullopt, 1);
  w.stride = per_dim(stride, nd, "stride", fn, w.kernel, 1);
  w.padding = per_dim(padding, nd, "padding", fn, std::nullopt, 0);
  w.dilation = is_max ? per_dim(dilation, nd, "dilation", fn, std::nullopt, 1)
                      : std::array<int64_t, 3>{1, 1, 1};
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};
  for (int i = 3 - nd; i < 3; ++i) {
    const int64_t k = w.kernel[i], s = w.stride[i], p = w.padding[i], d = w.dilation[i];
    AOTRT_CHECK(k > 0, kInvalidArgument, fn, ": argument 'kernel_size' must be greater than zero, ",
                "got ", k);
    AOTRT_CHECK(s > 0, kInvalidArgument, fn, ": argument 'stride' must be greater than zero, got ",
                s);
    AOTRT_CHECK(d > 0, kInvalidArgument, fn,
                ": argument 'dilation' must be greater than zero, got ", d);
    AOTRT_CHECK(p >= 0, kInvalidArgument, fn, ": argument 'padding' must be non-negative, got ",
                p);
    if (is_max) {
      AOTRT_CHECK(p <= checked_add(checked_mul(k - 1, d, fn), 1, fn) / 2, kInvalidArgument, fn,
                  ": argument 'padding': pad should be at most half of effective kernel size, "
                  "but got pad=", p, ", kernel_size=", k, " and dilation=", d);
    } else {
      AOTRT_CHECK(p <= k / 2, kInvalidArgument, fn,
                  ": argument 'padding': pad should be smaller than or equal to half of kernel "
                  "size, but got pad=", p, ", kernel_size=", k);
    }
    in[i] = self.sizes()[self.dim() - 3 + i];
    out[i] = pooled_size(in[i], k, p, s, d, ceil_mode, fn);
  }
  for (int i = 3 - nd; i < 3; ++i) {
    AOTRT_CHECK(out[i] > 0, kInvalidArgument, fn, ": Given input size: (", dims_text(in, nd),
                "). Calculated output size: (", dims_text(out, nd), "). Output size is too small");
  }
  r.out_sizes = with_spatial(self, nd, out);
  return r;
}

void check_nd(int nd, const char* fn) {
  AOTRT_CHECK(nd == 2 || nd == 3, kInternal, fn, ": ", nd, " spatial dims");
}

std::array<int64_t, 3> output_size_of(int nd, std::span<const int64_t> output_size,
                                      const char* fn) {
  AOTRT_CHECK(static_cast<int>(output_size.size()) == nd, kInvalidArgument, fn,
              ": argument 'output_size' must have ", nd, " elements, got ", output_size.size());
  std::array<int64_t, 3> r{1, 1, 1};
  for (int i = 0; i < nd; ++i) {
    AOTRT_CHECK(output_size[i] >= 0, kInvalidArgument, fn,
                ": argument 'output_size' elements must be non-negative, got ",
                sizes_text(output_size));
    r[3 - nd + i] = output_size[i];
  }
  return r;
}

}  // namespace

PoolWithIndices max_pool_with_indices(const TensorImpl& self, int nd,
                                      std::span<const int64_t> kernel_size,
                                      std::span<const int64_t> stride,
                                      std::span<const int64_t> padding,
                                      std::span<const int64_t> dilation, bool ceil_mode,
                                      const char* fn) {
  check_nd(nd, fn);
  AOTRT_CHECK(is_low_or_float(self.dtype()) || self.dtype() == ScalarType::Int64, kUnsupported,
              fn, ": argument 'self' is ", dtype_name(self.dtype()),
              "; aotrt serves float32, float64, float16, bfloat16 and int64 (as ATen's CPU kernel)");
  const PoolShape s =
      pool_shape(self, nd, kernel_size, stride, padding, dilation, ceil_mode, true, fn);
  const Sizes st = output_strides(self, s.out_sizes, true);
  PoolWithIndices r;
  r.values = empty_strided(s.out_sizes, st, self.dtype(), self.device(), fn);
  r.indices = empty_strided(s.out_sizes, st, ScalarType::Int64, self.device(), fn);
  if (r.values->numel() == 0) return r;
  kernel(&PoolingKernels::max_pool, self.device(), fn)(
      volume_of(*r.values, nd), volume_of(*r.indices, nd), volume_of(self, nd), s.window, fn);
  return r;
}

std::unique_ptr<TensorImpl> avg_pool(const TensorImpl& self, int nd,
                                     std::span<const int64_t> kernel_size,
                                     std::span<const int64_t> stride,
                                     std::span<const int64_t> padding, bool ceil_mode,
                                     bool count_include_pad,
                                     std::optional<int64_t> divisor_override, const char* fn) {
  check_nd(nd, fn);
  AOTRT_CHECK(is_low_or_float(self.dtype()) || self.dtype() == ScalarType::Int64, kUnsupported,
              fn, ": argument 'self' is ", dtype_name(self.dtype()),
              "; aotrt serves float32, float64, float16, bfloat16 and int64 (as ATen's CPU kernel)");
  AOTRT_CHECK(!divisor_override || *divisor_override != 0, kInvalidArgument, fn,
              ": argument 'divisor_override': divisor must be not zero");
  const PoolShape s = pool_shape(self, nd, kernel_size, stride, padding, {}, ceil_mode, false, fn);
  auto out = empty_strided(s.out_sizes, output_strides(self, s.out_sizes, nd == 2), self.dtype(),
                           self.device(), fn);
  if (out->numel() == 0) return out;
  kernel(&PoolingKernels::avg_pool, self.device(), fn)(volume_of(*out, nd), volume_of(self, nd),
                                                       s.window, count_include_pad,
                                                       divisor_override, fn);
  return out;
}

std::unique_ptr<TensorImpl> adaptive_avg_pool(const TensorImpl& self, int nd,
                                              std::span<const int64_t> output_size,
                                              const char* fn) {
  check_nd(nd, fn);
  check_float_input(self, "self", fn);
  check_pool_input(self, nd, fn);
  const Sizes sizes = with_spatial(self, nd, output_size_of(nd, output_size, fn));
  auto out = empty_strided(sizes, output_strides(self, sizes, nd == 2), self.dtype(),
                           self.device(), fn);
  if (out->numel() == 0) return out;
  kernel(&PoolingKernels::adaptive_pool, self.device(), fn)(volume_of(*out, nd), nullptr,
                                                            volume_of(self, nd), fn);
  return out;
}

PoolWithIndices adaptive_max_pool(const TensorImpl& self, int nd,
                                  std::span<const int64_t> output_size, const char* fn) {
  check_nd(nd, fn);
  check_float_input(self, "self", fn);
  check_pool_input(self, nd, fn);
  const Sizes sizes = with_spatial(self, nd, output_size_of(nd, output_size, fn));
  const Sizes st = output_strides(self, sizes, nd == 2);
  PoolWithIndices r;
  r.values = empty_strided(sizes, st, self.dtype(), self.device(), fn);
  r.indices = empty_strided(sizes, st, ScalarType::Int64, self.device(), fn);
  if (r.values->numel() == 0) return r;
  const Volume idx = volume_of(*r.indices, nd);
  kernel(&PoolingKernels::adaptive_pool, self.device(), fn)(volume_of(*r.values, nd), &idx,
                                                            volume_of(self, nd), fn);
  return r;
}

PoolWithIndices fractional_max_pool(const TensorImpl& self, int nd,
                                    std::span<const int64_t> kernel_size,
                                    std::span<const int64_t> output_size,
                                    const TensorImpl& random_samples, const char* fn) {
  check_nd(nd, fn);
  check_float_input(self, "self", fn);
  check_pool_input(self, nd, fn);
  AOTRT_CHECK(random_samples.dtype() == self.dtype(), kInvalidArgument, fn,
              ": argument 'random_samples' is ", dtype_name(random_samples.dtype()),
              "; expected the input's dtype ", dtype_name(self.dtype()));
  AOTRT_CHECK(kernel_size.size() == static_cast<size_t>(nd), kInvalidArgument, fn,
              ": argument 'kernel_size' must have ", nd, " elements, got ", kernel_size.size());
  const std::array<int64_t, 3> k = per_dim(kernel_size, nd, "kernel_size", fn, std::nullopt, 1);
  const std::array<int64_t, 3> o = output_size_of(nd, output_size, fn);
  const bool batched = self.dim() == nd + 2;
  const int64_t n = batched ? self.sizes()[0] : 1, c = self.sizes()[batched ? 1 : 0];
  for (int i = 3 - nd; i < 3; ++i) {
    const int64_t in = self.sizes()[self.dim() - 3 + i];
    AOTRT_CHECK(k[i] > 0, kInvalidArgument, fn,
                ": argument 'kernel_size' must be greater than zero, got ", k[i]);
    // o + k - 1 <= in, written so that no sum can overflow (o, in >= 0; k > 0).
    AOTRT_CHECK(k[i] - 1 <= in - o[i], kInvalidArgument, fn, ": argument 'output_size': ",
                "output size ", o[i], " with pool size ", k[i], " is too large for input size ",
                in);
  }
  check_device_of(self, random_samples, "random_samples", fn);
  AOTRT_CHECK(random_samples.dim() == 3 && random_samples.sizes()[0] >= n &&
                  random_samples.sizes()[1] == c && random_samples.sizes()[2] == nd,
              kInvalidArgument, fn, ": argument 'random_samples' has sizes ",
              sizes_text(random_samples.sizes()), "; expected [", n, ", ", c, ", ", nd, "]");
  const Sizes sizes = with_spatial(self, nd, o);
  const Sizes st = contiguous_strides(sizes);
  PoolWithIndices r;
  r.values = empty_strided(sizes, st, self.dtype(), self.device(), fn);
  r.indices = empty_strided(sizes, st, ScalarType::Int64, self.device(), fn);
  if (r.values->numel() == 0) return r;
  const StridedView sv = strided_view(random_samples);
  Volume samples;
  samples.data = sv.data;
  samples.dtype = sv.dtype;
  samples.device = sv.device;
  samples.sizes = {random_samples.sizes()[0], c, 1, 1, nd};
  samples.strides = {random_samples.strides()[0], random_samples.strides()[1], 0, 0,
                     random_samples.strides()[2]};
  kernel(&PoolingKernels::fractional_max_pool, self.device(), fn)(
      volume_of(*r.values, nd), volume_of(*r.indices, nd), volume_of(self, nd), samples, k, nd,
      fn);
  return r;
}

std::unique_ptr<TensorImpl> max_unpool(const TensorImpl& self, const TensorImpl& indices,
                                       int nd, std::span<const int64_t> output_size,
                                       std::span<const int64_t> stride,
                                       std::span<const int64_t> padding, const char* fn) {
  check_nd(nd, fn);
  check_float_input(self, "self", fn);
  check_device_of(self, indices, "indices", fn);
  AOTRT_CHECK(indices.dtype() == ScalarType::Int64, kInvalidArgument, fn,
              ": argument 'indices' must be int64, got ", dtype_name(indices.dtype()));
  AOTRT_CHECK(self.dim() == nd + 1 || self.dim() == nd + 2, kInvalidArgument, fn,
              ": argument 'self': expected ", nd + 1, "D or ", nd + 2, "D tensor, got ",
              self.dim(), "D");
  AOTRT_CHECK(std::equal(self.sizes().begin(), self.sizes().end(), indices.sizes().begin(),
                         indices.sizes().end()),
              kInvalidArgument, fn, ": argument 'indices' of sizes ", sizes_text(indices.sizes()),
              " must have the shape of 'self', ", sizes_text(self.sizes()));
  for (int64_t d = self.dim() - nd - 1; d < self.dim(); ++d) {
    AOTRT_CHECK(self.sizes()[d] > 0, kInvalidArgument, fn, ": argument 'self' of sizes ",
                sizes_text(self.sizes()), " has an empty non-batch dim ", d);
  }
  const std::array<int64_t, 3> o = output_size_of(nd, output_size, fn);
  if (nd == 3) {
    AOTRT_CHECK(stride.size() == 3, kInvalidArgument, fn,
                ": argument 'stride' must have 3 elements, got ", stride.size());
    AOTRT_CHECK(padding.size() == 3, kInvalidArgument, fn,
                ": argument 'padding' must have 3 elements, got ", padding.size());
    for (int64_t s : stride) {
      AOTRT_CHECK(s > 0, kInvalidArgument, fn,
                  ": argument 'stride' should be greater than zero, got ", sizes_text(stride));
    }
  }
  const Sizes sizes = with_spatial(self, nd, o);
  auto out = empty_strided(sizes, output_strides(self, sizes, nd == 2), self.dtype(),
                           self.device(), fn);
  if (out->numel() == 0) return out;
  zero_tensor(*out, fn);
  kernel(&PoolingKernels::max_unpool, self.device(), fn)(volume_of(*out, nd), volume_of(self, nd),
                                                         volume_of(indices, nd), fn);
  return out;
}

std::unique_ptr<TensorImpl> grid_sampler_3d(const TensorImpl& input, const TensorImpl& grid,
                                            int64_t interpolation_mode, int64_t padding_mode,
                                            bool align_corners, const char* fn) {
  check_float_input(input, "input", fn);
  check_device_of(input, grid, "grid", fn);
  AOTRT_CHECK(grid.dtype() == input.dtype(), kInvalidArgument, fn, ": argument 'grid' is ",
              dtype_name(grid.dtype()), "; expected the input's dtype ",
              dtype_name(input.dtype()));
  AOTRT_CHECK(input.dim() == 5 && grid.dim() == 5, kInvalidArgument, fn,
              ": expected 5D 'input' and 'grid', got ", input.dim(), "D and ", grid.dim(), "D");
  AOTRT_CHECK(grid.sizes()[0] == input.sizes()[0], kInvalidArgument, fn,
              ": argument 'grid' has batch size ", grid.sizes()[0], ", 'input' ",
              input.sizes()[0]);
  AOTRT_CHECK(grid.sizes()[4] == 3, kInvalidArgument, fn,
              ": argument 'grid' must have size 3 in its last dim, got sizes ",
              sizes_text(grid.sizes()));
  for (int d = 2; d < 5; ++d) {
    AOTRT_CHECK(input.sizes()[d] > 0, kInvalidArgument, fn, ": argument 'input' of sizes ",
                sizes_text(input.sizes()), " has an empty spatial dim ", d);
  }
  AOTRT_CHECK(interpolation_mode == 0 || interpolation_mode == 1, kInvalidArgument, fn,
              ": argument 'interpolation_mode' ", interpolation_mode,
              interpolation_mode == 2 ? " (bicubic) only supports 4D input"
                                      : " is not 0 (bilinear) or 1 (nearest)");
  AOTRT_CHECK(padding_mode >= 0 && padding_mode <= 2, kInvalidArgument, fn,
              ": argument 'padding_mode' ", padding_mode,
              " is not 0 (zeros), 1 (border) or 2 (reflection)");
  const Sizes sizes{input.sizes()[0], input.sizes()[1], grid.sizes()[1], grid.sizes()[2],
                    grid.sizes()[3]};
  auto out = empty_strided(sizes, contiguous_strides(sizes), input.dtype(), input.device(), fn);
  if (out->numel() == 0) return out;
  const StridedView gv = strided_view(grid);
  Volume g;
  g.data = gv.data;
  g.dtype = gv.dtype;
  g.device = gv.device;
  for (int d = 0; d < 5; ++d) {
    g.sizes[d] = grid.sizes()[d];
    g.strides[d] = grid.strides()[d];
  }
  kernel(&PoolingKernels::grid_sampler_3d, input.device(), fn)(
      volume_of(*out, 3), volume_of(input, 3), g, static_cast<GridMode>(interpolation_mode),
      static_cast<GridPadding>(padding_mode), align_corners, fn);
  return out;
}

// Note [cuDNN grid sampler]
// torch exports F.grid_sample on CUDA with cuDNN enabled (bilinear, zeros,
// align_corners, 4-d) as aten::cudnn_grid_sampler, which has no C shim (the
// proxy executor calls it: torchvision's RAFT). aotrt serves it on both
// devices as grid_sampler_3d over a depth of one: the input viewed as [N, C,
// 1, H, W], the grid given z = 0. With align_corners a depth of one puts z = 0
// on plane 0 with weight exactly 1 and the (out-of-range, zero-padded) plane
// 1 with weight 0, so each output is the 2-d bilinear sum plus exact zeros.
std::unique_ptr<TensorImpl> cudnn_grid_sampler(const TensorImpl& self, const TensorImpl& grid,
                                               const char* fn) {
  AOTRT_CHECK(self.dim() == 4 && grid.dim() == 4, kInvalidArgument, fn,
              ": expected 4D 'self' and 'grid', got ", self.dim(), "D and ", grid.dim(), "D");
  AOTRT_CHECK(grid.sizes()[3] == 2, kInvalidArgument, fn,
              ": argument 'grid' must have size 2 in its last dim, got sizes ",
              sizes_text(grid.sizes()));
  const int64_t n = self.sizes()[0], c = self.sizes()[1], h = self.sizes()[2], w = self.sizes()[3];
  const int64_t ho = grid.sizes()[1], wo = grid.sizes()[2];
  const int64_t in_sizes[] = {n, c, 1, h, w};
  const int64_t in_strides[] = {self.strides()[0], self.strides()[1], h * self.strides()[2],
                                self.strides()[2], self.strides()[3]};
  const auto input = make_tensor(self.storage(), in_sizes, in_strides, self.storage_offset(),
                                 self.dtype(), fn);
  const Sizes grid_sizes{n, 1, ho, wo, 3};
  const auto grid3 =
      empty_strided(grid_sizes, contiguous_strides(grid_sizes), grid.dtype(), grid.device(), fn);
  const int64_t xy_sizes[] = {n, 1, ho, wo, 2};
  const int64_t xy_strides[] = {ho * wo * 3, ho * wo * 3, wo * 3, 3, 1};
  const int64_t src_strides[] = {grid.strides()[0], grid.strides()[0], grid.strides()[1],
                                 grid.strides()[2], grid.strides()[3]};
  copy_tensor(*make_tensor(grid3->storage(), xy_sizes, xy_strides, 0, grid.dtype(), fn),
              *make_tensor(grid.storage(), xy_sizes, src_strides, grid.storage_offset(),
                           grid.dtype(), fn),
              fn);
  const int64_t z_sizes[] = {n, 1, ho, wo};
  const int64_t z_strides[] = {ho * wo * 3, ho * wo * 3, wo * 3, 3};
  copy_tensor(*make_tensor(grid3->storage(), z_sizes, z_strides, 2, grid.dtype(), fn),
              *efficient_zero_tensor(z_sizes, grid.dtype(), grid.device(), fn), fn);
  auto out = grid_sampler_3d(*input, *grid3, /*bilinear*/ 0, /*zeros*/ 0, /*align_corners*/ true,
                             fn);
  const int64_t out_sizes[] = {n, c, ho, wo};
  const int64_t out_strides[] = {c * ho * wo, ho * wo, wo, 1};
  return make_tensor(out->storage(), out_sizes, out_strides, 0, out->dtype(), fn);
}

std::unique_ptr<TensorImpl> upsample_bilinear2d_aa(const TensorImpl& self,
                                                   std::span<const int64_t> output_size,
                                                   bool align_corners,
                                                   std::optional<double> scales_h,
                                                   std::optional<double> scales_w,
                                                   const char* fn) {
  AOTRT_CHECK(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::Float64,
              kUnsupported, fn, ": argument 'self' is ", dtype_name(self.dtype()),
              "; aotrt serves float32 and float64 here (ATen's CPU kernel refuses float16 and "
              "bfloat16; its uint8 path is not served)");
  AOTRT_CHECK(self.dim() == 4, kInvalidArgument, fn, ": argument 'self': it is expected "
              "input_size equals to 4, but got size ", self.dim());
  AOTRT_CHECK(output_size.size() == 2, kInvalidArgument, fn, ": argument 'output_size': it is "
              "expected output_size equals to 2, but got size ", output_size.size());
  const int64_t h = self.sizes()[2], w = self.sizes()[3];
  AOTRT_CHECK(h > 0 && w > 0 && output_size[0] > 0 && output_size[1] > 0, kInvalidArgument, fn,
              ": input and output sizes should be greater than 0, but got input (H: ", h,
              ", W: ", w, ") output (H: ", output_size[0], ", W: ", output_size[1], ")");
  const Sizes sizes{self.sizes()[0], self.sizes()[1], output_size[0], output_size[1]};
  auto out = empty_strided(sizes, output_strides(self, sizes, true), self.dtype(), self.device(),
                           fn);
  if (out->numel() == 0) return out;
  if (sizes[2] == h && sizes[3] == w) {  // ATen: a copy
    copy_tensor(*out, self, fn);
    return out;
  }
  kernel(&PoolingKernels::upsample_bilinear_aa, self.device(), fn)(
      volume_of(*out, 2), volume_of(self, 2), align_corners, scales_h, scales_w, fn);
  return out;
}

}  // namespace aotrt::ops
