#include "ops/views.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"

namespace aotrt::ops {
namespace {

using Dims = std::vector<int64_t>;
Dims to_vector(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

std::unique_ptr<TensorImpl> view_of(const TensorImpl& self, const Dims& sizes, const Dims& strides,
                                    int64_t offset, ScalarType dtype, const char* fn) {
  return make_tensor(self.storage(), sizes, strides, offset, dtype, fn);
}

int64_t wrap_nonzero_dim(const TensorImpl& self, int64_t dim, const char* op, const char* fn) {
  AOTRT_CHECK(self.dim() > 0, kInvalidArgument, fn, ": ", op,
              "() cannot be applied to a 0-dim tensor.");
  return wrap_dim(dim, self.dim(), fn);
}

// Strides for `shape` over the memory of (sizes, strides), or none when no
// view can express it: each run of old dims that are contiguous with one
// another (stride[i] == stride[i+1] * size[i+1]) must map onto whole new dims.
std::optional<Dims> view_strides(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                                 const Dims& shape) {
  Dims out(shape.size());
  // An empty tensor's other sizes may be anything (their product need not
  // fit); a non-empty one's product is its numel, which fits.
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return contiguous_strides(shape);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    // A chunk ends where the next outer dim is not contiguous with this one.
    // (A size-1 dim may have any stride: products with it are checked, and
    // one that overflows cannot be a stride a view can take.)
    int64_t contiguous_stride = 0;
    const bool fits = !__builtin_mul_overflow(tensor_numel, chunk_base_stride, &contiguous_stride);
    if (d == 0 || (sizes[d - 1] != 1 && (!fits || strides[d - 1] != contiguous_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        if (__builtin_mul_overflow(view_numel, chunk_base_stride, &out[view_d])) return std::nullopt;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// ATen's infer_size: one -1 takes what the others leave.
Dims infer_shape(std::span<const int64_t> shape, int64_t numel, const char* fn) {
  Dims out = to_vector(shape);
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      AOTRT_CHECK(infer < 0, kInvalidArgument, fn, ": only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      AOTRT_CHECK(out[i] >= 0, kInvalidArgument, fn, ": invalid shape dimension ", out[i]);
      known = checked_mul(known, out[i], fn);  // a product past int64 is no input's size
    }
  }
  if (infer >= 0) {
    AOTRT_CHECK(known != 0 && numel % known == 0, kInvalidArgument, fn, ": shape is invalid for input of size ",
                numel);
    out[infer] = numel / known;
    known = checked_mul(known, out[infer], fn);
  }
  AOTRT_CHECK(known == numel, kInvalidArgument, fn, ": shape is invalid for input of size ", numel);
  return out;
}

}  // namespace

std::unique_ptr<TensorImpl> narrow(const TensorImpl& self, int64_t dim, int64_t start,
                                   int64_t length, const char* fn) {
  const int64_t d = wrap_nonzero_dim(self, dim, "narrow", fn);
  const int64_t size = self.sizes()[d];
  AOTRT_CHECK(start >= -size && start <= size, kInvalidArgument, fn, ": start out of range (expected to be in range of [",
              -size, ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  AOTRT_CHECK(length >= 0 && start <= size - length, kInvalidArgument, fn, ": start (", start,
              ") + length (", length, ") exceeds dimension size (", size, ").");
  Dims sizes = to_vector(self.sizes());
  sizes[d] = length;
  return view_of(self, sizes, to_vector(self.strides()),
                 self.storage_offset() + start * self.strides()[d], self.dtype(), fn);
}

std::unique_ptr<TensorImpl> slice(const TensorImpl& self, int64_t dim,
                                  std::optional<int64_t> start_opt, std::optional<int64_t> end_opt,
                                  int64_t step, const char* fn) {
  const int64_t d = wrap_nonzero_dim(self, dim, "slice", fn);
  AOTRT_CHECK(step > 0, kInvalidArgument, fn, ": slice step must be positive, got ", step);
  const int64_t size = self.sizes()[d];
  auto clamp = [&](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  const int64_t start = clamp(start_opt.value_or(0));
  const int64_t end = std::max(start, clamp(end_opt.value_or(std::numeric_limits<int64_t>::max())));
  Dims sizes = to_vector(self.sizes()), strides = to_vector(self.strides());
  sizes[d] = end == start ? 0 : (end - start - 1) / step + 1;  // no overflow for a huge step
  const int64_t offset = self.storage_offset() + start * strides[d];
  // A dim of one element addresses nothing with its stride (and stride * step may not fit).
  if (sizes[d] > 1) strides[d] = checked_mul(strides[d], step, fn);
  return view_of(self, sizes, strides, offset, self.dtype(), fn);
}

std::unique_ptr<TensorImpl> permute(const TensorImpl& self, std::span<const int64_t> dims,
                                    const char* fn) {
  const int64_t n = self.dim();
  AOTRT_CHECK(static_cast<int64_t>(dims.size()) == n, kInvalidArgument, fn,
              ": number of dims don't match in permute (input has ", n, ", dims has ",
              dims.size(), ")");
  Dims sizes(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = wrap_dim(dims[i], n, fn);
    AOTRT_CHECK(!seen[d], kInvalidArgument, fn, ": repeated dim ", dims[i], " in permute");
    seen[d] = true;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return view_of(self, sizes, strides, self.storage_offset(), self.dtype(), fn);
}

std::unique_ptr<TensorImpl> squeeze_dim(const TensorImpl& self, int64_t dim, const char* fn) {
  const int64_t d = wrap_dim(dim, self.dim(), fn);
  Dims sizes = to_vector(self.sizes()), strides = to_vector(self.strides());
  if (self.dim() > 0 && sizes[d] == 1) {
    sizes.erase(sizes.begin() + d);
    strides.erase(strides.begin() + d);
  }
  return view_of(self, sizes, strides, self.storage_offset(), self.dtype(), fn);
}

std::unique_ptr<TensorImpl> reshape(const TensorImpl& self, std::span<const int64_t> shape,
                                    const char* fn) {
  const Dims sizes = infer_shape(shape, self.numel(), fn);
  if (auto strides = view_strides(self.sizes(), self.strides(), sizes)) {
    return view_of(self, sizes, *strides, self.storage_offset(), self.dtype(), fn);
  }
  auto packed = empty_strided(self.sizes(), contiguous_strides(self.sizes()), self.dtype(),
                              self.device(), fn);
  copy_tensor(*packed, self, fn);
  return make_tensor(packed->storage(), sizes, contiguous_strides(sizes), 0, self.dtype(), fn);
}

std::unique_ptr<TensorImpl> view_dtype(const TensorImpl& self, ScalarType dtype, const char* fn) {
  const int64_t from = static_cast<int64_t>(self.itemsize());
  const int64_t to = static_cast<int64_t>(element_size(dtype));
  Dims sizes = to_vector(self.sizes()), strides = to_vector(self.strides());
  if (from == to) return view_of(self, sizes, strides, self.storage_offset(), dtype, fn);
  AOTRT_CHECK(self.dim() > 0, kInvalidArgument, fn, ": self.dim() cannot be 0 to view ",
              dtype_name(self.dtype()), " as ", dtype_name(dtype), " (different element sizes)");
  const int64_t last = self.dim() - 1;
  AOTRT_CHECK(strides[last] == 1, kInvalidArgument, fn,
              ": self.stride(-1) must be 1 to view ", dtype_name(self.dtype()), " as ",
              dtype_name(dtype), " (different element sizes), but got ", strides[last]);
  int64_t offset = self.storage_offset();
  if (from > to) {
    const int64_t r = from / to;
    for (int64_t i = 0; i < last; ++i) {
      // A dim of one element addresses nothing with its stride, which may be
      // any value (slice leaves a huge step's): kept when stride * r does not fit.
      int64_t scaled;
      if (!__builtin_mul_overflow(strides[i], r, &scaled)) {
        strides[i] = scaled;
      } else {
        AOTRT_CHECK(sizes[i] <= 1, kOutOfBounds, fn, ": self.stride(", i, ") is ", strides[i],
                    ", which times ", r, " overflows int64 viewing ", dtype_name(self.dtype()),
                    " as ", dtype_name(dtype));
      }
    }
    sizes[last] = checked_mul(sizes[last], r, fn);
    offset = checked_mul(offset, r, fn);
  } else {
    const int64_t r = to / from;
    AOTRT_CHECK(sizes[last] % r == 0, kInvalidArgument, fn, ": self.size(-1) must be divisible by ", r,
                " to view ", dtype_name(self.dtype()), " as ", dtype_name(dtype),
                " (different element sizes), but got ", sizes[last]);
    AOTRT_CHECK(offset % r == 0, kInvalidArgument, fn, ": self.storage_offset() must be divisible by ", r,
                " to view ", dtype_name(self.dtype()), " as ", dtype_name(dtype), ", but got ", offset);
    for (int64_t i = 0; i < last; ++i) {
      AOTRT_CHECK(strides[i] % r == 0, kInvalidArgument, fn, ": self.stride(", i,
                  ") must be divisible by ", r, " to view ", dtype_name(self.dtype()), " as ",
                  dtype_name(dtype), " (different element sizes), but got ", strides[i]);
      strides[i] /= r;
    }
    sizes[last] /= r;
    offset /= r;
  }
  return view_of(self, sizes, strides, offset, dtype, fn);
}

std::unique_ptr<TensorImpl> view_as_real(const TensorImpl& self, const char* fn) {
  ScalarType real;
  switch (self.dtype()) {
    case ScalarType::Complex32: real = ScalarType::Float16; break;
    case ScalarType::Complex64: real = ScalarType::Float32; break;
    case ScalarType::Complex128: real = ScalarType::Float64; break;
    default:
      AOTRT_FAIL(kInvalidArgument, fn, ": view_as_real is only supported for complex tensors, not ",
                 dtype_name(self.dtype()));
  }
  Dims sizes = to_vector(self.sizes()), strides = to_vector(self.strides());
  for (int64_t& s : strides) s *= 2;
  sizes.push_back(2);
  strides.push_back(1);
  return view_of(self, sizes, strides, self.storage_offset() * 2, real, fn);
}

std::unique_ptr<TensorImpl> view_as_complex(const TensorImpl& self, const char* fn) {
  ScalarType complex;
  switch (self.dtype()) {
    case ScalarType::Float16: complex = ScalarType::Complex32; break;
    case ScalarType::Float32: complex = ScalarType::Complex64; break;
    case ScalarType::Float64: complex = ScalarType::Complex128; break;
    default:
      AOTRT_FAIL(kInvalidArgument, fn,
                 ": view_as_complex is only supported for half, float and double tensors, but got ",
                 dtype_name(self.dtype()));
  }
  AOTRT_CHECK(self.dim() > 0 && self.sizes().back() == 2, kInvalidArgument, fn,
              ": Tensor must have a last dimension of size 2");
  AOTRT_CHECK(self.strides().back() == 1, kInvalidArgument, fn,
              ": Tensor must have a last dimension with stride 1");
  Dims sizes = to_vector(self.sizes()), strides = to_vector(self.strides());
  sizes.pop_back();
  strides.pop_back();
  for (int64_t& s : strides) {
    AOTRT_CHECK(s % 2 == 0, kInvalidArgument, fn, ": Tensor must have a stride divisible by 2 for all but last dimension");
    s /= 2;
  }
  AOTRT_CHECK(self.storage_offset() % 2 == 0, kInvalidArgument, fn,
              ": Tensor must have a storage_offset divisible by 2");
  return view_of(self, sizes, strides, self.storage_offset() / 2, complex, fn);
}

// Note [Resizing in place]
// resize_ follows ATen's resize_ (resize_impl_cpu_, then
// empty_tensor_restride): sizes equal to self's keep self's strides, other
// sizes get contiguous ones, and a memory format, when given, restrides
// densely in it (preserve_format is refused, as ATen refuses it). When the
// new view needs more bytes than the storage has (its span, computed as
// every view's is: Note [View span]), the storage grows in place to exactly
// that: a new block from the same device's allocator, the old bytes copied
// into it on the device's stream, then the two blocks exchanged
// (Storage::swap_memory), so that every other view of the storage sees the
// new block and its old values, as with c10's resizable storages; the old
// block goes back to its allocator with the temporary storage. Bytes past
// the old end are uninitialised (ATen fills them only in deterministic
// mode). ATen grows to the contiguous size even when a memory format is
// given afterwards; growing to the final view's span also covers the case
// where restriding an overlapping view (an expand) needs more than it had,
// which ATen leaves out of bounds. Memory aotrt does not own (a caller's
// input, a weight it borrows) or a constant's storage cannot grow: ATen's
// "Trying to resize storage that is not resizable". A resize_ that needs no
// more bytes allocates nothing; one that grows allocates, like ATen's.
void resize_(TensorImpl& self, std::span<const int64_t> size,
             std::optional<MemoryFormatArg> format, const char* fn) {
  for (const int64_t s : size) {
    AOTRT_CHECK(s >= 0, kInvalidArgument, fn, ": Trying to create tensor with negative dimension ",
                s);
  }
  const bool same = std::equal(size.begin(), size.end(), self.sizes().begin(), self.sizes().end());
  Dims strides = same ? to_vector(self.strides()) : contiguous_strides(size);
  if (format) {
    AOTRT_CHECK(*format != MemoryFormatArg::kPreserve, kInvalidArgument, fn,
                ": Unsupported memory format preserve_format");
    strides = memory_format_strides(size, *format, fn);
  }
  const ViewSpan span = view_span(size, strides, self.storage_offset(), self.itemsize(), fn);
  Storage& storage = *self.storage();
  if (!span.empty() && static_cast<uint64_t>(span.end_byte) > storage.nbytes()) {
    AOTRT_CHECK(storage.owns_memory() && storage.derived() == nullptr, kUnsupported, fn,
                ": Trying to resize storage that is not resizable (", storage.nbytes(),
                " bytes ", storage.owns_memory() ? "of a constant" : "that aotrt does not own",
                ", ", span.end_byte, " needed)");
    StorageRef grown = Storage::allocate(storage.device(), static_cast<size_t>(span.end_byte));
    const int64_t old_bytes = static_cast<int64_t>(storage.nbytes());
    if (old_bytes > 0) {
      const int64_t n[] = {old_bytes};
      const int64_t one[] = {1};
      copy_tensor(*make_tensor(grown, n, one, 0, ScalarType::UInt8, fn),
                  *make_tensor(self.storage(), n, one, 0, ScalarType::UInt8, fn), fn);
    }
    storage.swap_memory(*grown);
  }
  self.set_sizes_and_strides(size, strides, fn);
}

void resize_as_(TensorImpl& self, const TensorImpl& the_template,
                std::optional<MemoryFormatArg> format, const char* fn) {
  AOTRT_CHECK(the_template.device() == self.device(), kInvalidArgument, fn, ": the_template is on ",
              the_template.device().str(), ", self on ", self.device().str());
  if (format == MemoryFormatArg::kPreserve) {
    const auto ts = the_template.sizes();
    const auto tt = the_template.strides();
    format = is_channels_last_strides_2d(ts, tt)   ? MemoryFormatArg::kChannelsLast
             : is_channels_last_strides_3d(ts, tt) ? MemoryFormatArg::kChannelsLast3d
                                                   : MemoryFormatArg::kContiguous;
  }
  resize_(self, the_template.sizes(), format, fn);
}

void set_(TensorImpl& self, const TensorImpl& source, const char* fn) {
  AOTRT_CHECK(source.dtype() == self.dtype(), kInvalidArgument, fn,
              ": Could not set tensor of type ", dtype_name(source.dtype()),
              " to a tensor of type ", dtype_name(self.dtype()));
  AOTRT_CHECK(source.device() == self.device(), kInvalidArgument, fn, ": source is on ",
              source.device().str(), ", self on ", self.device().str());
  self.assign(source);
}

}  // namespace aotrt::ops
