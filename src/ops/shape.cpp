#include "ops/shape.h"

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/indexing.h"  // scalar_tensor
#include "ops/promote.h"

namespace aotrt::ops {
namespace {
using Dims = std::vector<int64_t>;
Dims to_vector(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

// A view of t with dim d narrowed to [start, start + length).
std::unique_ptr<TensorImpl> narrowed(const TensorImpl& t, int64_t d, int64_t start, int64_t length,
                                     const char* fn) {
  Dims sizes = to_vector(t.sizes());
  sizes[d] = length;
  return make_tensor(t.storage(), sizes, t.strides(),
                     checked_add(t.storage_offset(), checked_mul(start, t.strides()[d], fn), fn),
                     t.dtype(), fn);
}
}  // namespace

void fill(const TensorImpl& self, double value, const char* fn) { fill_tensor(self, value, fn); }

std::unique_ptr<TensorImpl> full(std::span<const int64_t> size, double value, ScalarType dtype,
                                 Device device, const char* fn) {
  for (int64_t s : size) {
    AOTRT_CHECK(s >= 0, kInvalidArgument, fn, ": negative dimension ", s);
  }
  auto t = empty_strided(size, contiguous_strides(size), dtype, device, fn);
  if (t->numel() > 0) fill(*t, value, fn);
  return t;
}

std::unique_ptr<TensorImpl> cat(const std::vector<const TensorImpl*>& tensors, int64_t dim,
                                const char* fn) {
  AOTRT_CHECK(!tensors.empty(), kInvalidArgument, fn, ": expected a non-empty list of Tensors");
  std::vector<const TensorImpl*> parts;
  for (const TensorImpl* t : tensors) {
    if (!(t->dim() == 1 && t->sizes()[0] == 0)) parts.push_back(t);  // legacy empty inputs
  }
  if (parts.empty()) parts.push_back(tensors[0]);
  const TensorImpl& ref = *parts[0];
  AOTRT_CHECK(ref.dim() > 0, kInvalidArgument, fn, ": zero-dimensional tensor cannot be concatenated");
  const int64_t d = wrap_dim(dim, ref.dim(), fn);
  Dims sizes = to_vector(ref.sizes());
  sizes[d] = 0;
  ScalarType dtype = ref.dtype();
  bool channels_last = ref.dim() == 4;
  for (size_t i = 0; i < parts.size(); ++i) {
    const TensorImpl& t = *parts[i];
    AOTRT_CHECK(t.dim() == ref.dim(), kInvalidArgument, fn, ": Tensors must have same number of dimensions: got ",
                ref.dim(), " and ", t.dim());
    AOTRT_CHECK(t.device() == ref.device(), kInvalidArgument, fn, ": tensor ", i, " is on ",
                t.device().str(), ", tensor 0 on ", ref.device().str());
    for (int64_t k = 0; k < t.dim(); ++k) {
      AOTRT_CHECK(k == d || t.sizes()[k] == ref.sizes()[k], kInvalidArgument, fn,
                  ": Sizes of tensors must match except in dimension ", d, ". Expected size ",
                  ref.sizes()[k], " but got size ", t.sizes()[k], " for tensor number ", i,
                  " in the list.");
    }
    sizes[d] = checked_add(sizes[d], t.sizes()[d], fn);
    dtype = promote_types(dtype, t.dtype(), fn);
    channels_last = channels_last && t.dim() == 4 &&
                    !is_contiguous(t.sizes(), t.strides()) &&
                    is_channels_last_strides_2d(t.sizes(), t.strides());
  }
  const Dims strides = channels_last ? channels_last_strides(sizes) : contiguous_strides(sizes);
  auto out = empty_strided(sizes, strides, dtype, ref.device(), fn);
  int64_t at = 0;
  for (const TensorImpl* t : parts) {
    const int64_t n = t->sizes()[d];
    if (n > 0) copy_tensor(*narrowed(*out, d, at, n, fn), *t, fn);
    at += n;
  }
  return out;
}

std::unique_ptr<TensorImpl> pad(const TensorImpl& self, std::span<const int64_t> pads,
                                std::string_view mode, std::optional<double> value, const char* fn) {
  AOTRT_CHECK(mode == "constant", kUnsupported, fn, ": pad mode '", mode,
              "' is not served (constant only)");
  AOTRT_CHECK(pads.size() % 2 == 0 && static_cast<int64_t>(pads.size() / 2) <= self.dim(),
              kInvalidArgument, fn, ": Padding length must be divisible by 2 and at most twice the "
              "number of dims, got ", pads.size());
  const int64_t nd = self.dim();
  Dims sizes = to_vector(self.sizes());
  // The part of self that survives cropping, and where it goes in the result.
  std::unique_ptr<TensorImpl> src = make_tensor(self.storage(), self.sizes(), self.strides(),
                                                self.storage_offset(), self.dtype(), fn);
  std::vector<std::pair<int64_t, int64_t>> place(nd, {0, 0});  // (start, length) per dim
  for (int64_t k = 0; k < nd; ++k) place[k] = {0, sizes[k]};
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    const int64_t d = nd - 1 - static_cast<int64_t>(i);
    const int64_t before = pads[2 * i], after = pads[2 * i + 1];
    const int64_t n = self.sizes()[d] + before + after;
    AOTRT_CHECK(n >= 0, kInvalidArgument, fn, ": The input size ", self.sizes()[d],
                ", plus negative padding ", before, " and ", after, " resulted in a negative output size");
    sizes[d] = n;
    const int64_t crop_lo = std::max<int64_t>(-before, 0), crop_hi = std::max<int64_t>(-after, 0);
    const int64_t keep = std::max<int64_t>(self.sizes()[d] - crop_lo - crop_hi, 0);
    src = narrowed(*src, d, std::min(crop_lo, self.sizes()[d]), keep, fn);
    place[d] = {std::max<int64_t>(before, 0), keep};
  }
  auto out = empty_strided(sizes, suggested_format_strides(sizes, self.sizes(), self.strides()),
                           self.dtype(), self.device(), fn);
  if (out->numel() > 0) fill(*out, value.value_or(0.0), fn);
  std::unique_ptr<TensorImpl> dst = make_tensor(out->storage(), out->sizes(), out->strides(), 0,
                                                out->dtype(), fn);
  for (int64_t k = 0; k < nd; ++k) dst = narrowed(*dst, k, place[k].first, place[k].second, fn);
  if (dst->numel() > 0) copy_tensor(*dst, *src, fn);
  return out;
}

std::unique_ptr<TensorImpl> clone(const TensorImpl& self, std::optional<MemoryFormat> format,
                                  const char* fn) {
  if (!format) return clone_tensor(self, fn);
  Dims strides = contiguous_strides(self.sizes());
  if (*format == MemoryFormat::ChannelsLast) {
    AOTRT_CHECK(self.dim() == 4, kInvalidArgument, fn,
                ": required rank 4 tensor to use channels_last format");
    strides = channels_last_strides(self.sizes());
  } else if (*format == MemoryFormat::ChannelsLast3d) {
    AOTRT_CHECK(self.dim() == 5, kInvalidArgument, fn,
                ": required rank 5 tensor to use channels_last_3d format");
    strides = channels_last_strides(self.sizes());
  }
  auto out = empty_strided(self.sizes(), strides, self.dtype(), self.device(), fn);
  if (out->numel() > 0) copy_tensor(*out, self, fn);
  return out;
}

}  // namespace aotrt::ops
