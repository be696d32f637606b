// aotrt::Tensor (aotrt/aotrt.h): an owning wrapper of one registered handle.
#include <utility>

#include "aotrt/aotrt.h"
#include "core/copy.h"
#include "core/handles.h"
#include "core/view.h"
#include "cuda/cuda.h"
#include "ops/linalg.h"

namespace aotrt {
namespace {

TensorImpl& impl_of(AtenTensorHandle h, const char* fn) {
  AOTRT_CHECK(h != nullptr, kInvalidArgument, fn, ": the Tensor is empty (no handle)");
  return handle_get_defined(h, fn);
}

// A new handle to the same view (or to an undefined tensor).
AtenTensorHandle alias_handle(AtenTensorHandle h, const char* fn) {
  const TensorImpl& t = handle_get(h, fn);
  if (!t.defined()) return handle_register(std::make_unique<TensorImpl>());
  return handle_register(
      make_tensor(t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype(), fn));
}

Device checked_device(Device device, const char* fn) {
  Device d = make_device(static_cast<int32_t>(device.type), device.index, fn);
  if (d.is_cuda()) {
    AOTRT_CHECK(cuda::built(), kUnsupported, fn, ": device ", d.str(),
                " asked for, but this aotrt was built without CUDA");
    if (d.index < 0) d.index = cuda::current_device();
  }
  return d;
}

Tensor dense_copy(AtenTensorHandle h, ScalarType as, Device device, const char* fn) {
  const TensorImpl& src = impl_of(h, fn);
  device = checked_device(device, fn);
  const std::vector<int64_t> strides = contiguous_strides(src.sizes());
  auto dst = empty_strided(src.sizes(), strides, as, device, fn);
  copy_tensor(*dst, src, fn);
  return Tensor::adopt(handle_register(std::move(dst)));
}

}  // namespace

Tensor::~Tensor() {
  if (handle_ == nullptr) return;
  try {
    handle_delete(handle_, "aotrt::Tensor::~Tensor");
  } catch (...) {
    // Only a broken invariant gets here (the handle was deleted behind our
    // back); a destructor has no one to tell.
  }
}

Tensor::Tensor(const Tensor& other) {
  if (other.handle_ != nullptr) handle_ = alias_handle(other.handle_, "aotrt::Tensor copy");
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor::Tensor(Tensor&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    Tensor old(std::move(*this));  // deleted at the end of the scope
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Tensor Tensor::from_blob(void* data, const std::vector<int64_t>& sizes,
                         const std::vector<int64_t>& strides, ScalarType dtype, Device device,
                         int64_t storage_offset) {
  const char* fn = "aotrt::Tensor::from_blob";
  AOTRT_CHECK(sizes.size() == strides.size(), kInvalidArgument, fn, ": ", sizes.size(),
              " sizes but ", strides.size(), " strides");
  AOTRT_CHECK(is_valid_dtype(static_cast<int32_t>(dtype)), kInvalidArgument, fn, ": dtype ",
              static_cast<int32_t>(dtype), " is not one aotrt knows");
  device = checked_device(device, fn);
  const ViewSpan span = view_span(sizes, strides, storage_offset, element_size(dtype), fn);
  AOTRT_CHECK(data != nullptr || span.end_byte == 0, kInvalidArgument, fn,
              ": data is null for a view of ", span.end_byte, " bytes");
  StorageRef storage = Storage::borrow(device, data, static_cast<size_t>(span.end_byte));
  return Tensor(handle_register(make_tensor(std::move(storage), sizes, strides, storage_offset,
                                            dtype, fn)));
}

Tensor Tensor::empty(const std::vector<int64_t>& sizes, ScalarType dtype, Device device) {
  const char* fn = "aotrt::Tensor::empty";
  AOTRT_CHECK(is_valid_dtype(static_cast<int32_t>(dtype)), kInvalidArgument, fn, ": dtype ",
              static_cast<int32_t>(dtype), " is not one aotrt knows");
  device = checked_device(device, fn);
  const std::vector<int64_t> strides = contiguous_strides(sizes);
  return Tensor(handle_register(aotrt::empty_strided(sizes, strides, dtype, device, fn)));
}

Tensor Tensor::empty_strided(const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& strides, ScalarType dtype,
                             Device device) {
  const char* fn = "aotrt::Tensor::empty_strided";
  AOTRT_CHECK(sizes.size() == strides.size(), kInvalidArgument, fn, ": ", sizes.size(),
              " sizes but ", strides.size(), " strides");
  AOTRT_CHECK(is_valid_dtype(static_cast<int32_t>(dtype)), kInvalidArgument, fn, ": dtype ",
              static_cast<int32_t>(dtype), " is not one aotrt knows");
  device = checked_device(device, fn);
  return Tensor(handle_register(aotrt::empty_strided(sizes, strides, dtype, device, fn)));
}

Tensor& Tensor::copy_(const Tensor& src) {
  const char* fn = "aotrt::Tensor::copy_";
  copy_tensor(impl_of(handle_, fn), impl_of(src.handle_, fn), fn);
  return *this;
}

Tensor Tensor::adopt(AtenTensorHandle handle) {
  handle_get(handle, "aotrt::Tensor::adopt");  // throws unless live
  return Tensor(handle);
}

bool Tensor::defined() const {
  return handle_ != nullptr && handle_get(handle_, "aotrt::Tensor::defined").defined();
}

int64_t Tensor::dim() const { return impl_of(handle_, "aotrt::Tensor::dim").dim(); }
std::span<const int64_t> Tensor::sizes() const {
  return impl_of(handle_, "aotrt::Tensor::sizes").sizes();
}
std::span<const int64_t> Tensor::strides() const {
  return impl_of(handle_, "aotrt::Tensor::strides").strides();
}
int64_t Tensor::storage_offset() const {
  return impl_of(handle_, "aotrt::Tensor::storage_offset").storage_offset();
}
int64_t Tensor::numel() const { return impl_of(handle_, "aotrt::Tensor::numel").numel(); }
ScalarType Tensor::dtype() const { return impl_of(handle_, "aotrt::Tensor::dtype").dtype(); }
Device Tensor::device() const { return impl_of(handle_, "aotrt::Tensor::device").device(); }
void* Tensor::data_ptr() const { return impl_of(handle_, "aotrt::Tensor::data_ptr").data_ptr(); }
bool Tensor::is_contiguous() const {
  return impl_of(handle_, "aotrt::Tensor::is_contiguous").is_contiguous();
}

Tensor Tensor::dense_host_copy() const { return dense_host_copy(dtype()); }
Tensor Tensor::dense_host_copy(ScalarType as) const {
  const char* fn = "aotrt::Tensor::dense_host_copy";
  Tensor host = dense_copy(handle_, as, cpu_device(), fn);
  // The copy waited for the device: what its work found (Note [Linalg errors on CUDA]).
  ops::raise_deferred_errors(device(), fn);
  return host;
}
Tensor Tensor::to(Device device) const {
  return dense_copy(handle_, dtype(), device, "aotrt::Tensor::to");
}

AtenTensorHandle Tensor::release() { return std::exchange(handle_, nullptr); }

}  // namespace aotrt
