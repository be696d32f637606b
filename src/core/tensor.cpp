#include "core/tensor.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/view.h"

namespace aotrt {

bool TensorImpl::is_contiguous() const { return aotrt::is_contiguous(sizes(), strides()); }

void* TensorImpl::data_ptr() const {
  char* base = static_cast<char*>(storage_->data());
  // As c10: a tensor with no elements has no address (it may sit at the very
  // end of its storage, where no element is).
  if (base == nullptr || numel_ == 0) return nullptr;
  return base + storage_offset_ * static_cast<int64_t>(itemsize());
}

void TensorImpl::set_dims(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  const size_t n = sizes.size();
  if (n > kInlineDims) {
    auto heap = std::make_unique<int64_t[]>(2 * n);  // before anything changes
    std::copy(sizes.begin(), sizes.end(), heap.get());
    std::copy(strides.begin(), strides.end(), heap.get() + n);
    heap_dims_ = std::move(heap);
    dims_ = heap_dims_.get();
  } else {
    // memmove semantics: sizes and strides may be this tensor's own.
    int64_t buf[2 * kInlineDims];
    std::copy(sizes.begin(), sizes.end(), buf);
    std::copy(strides.begin(), strides.end(), buf + n);
    std::copy(buf, buf + 2 * n, inline_dims_);
    dims_ = inline_dims_;
    heap_dims_.reset();
  }
  ndim_ = n;
}

void TensorImpl::assign(const TensorImpl& other) {
  // Copy everything first, so assigning a handle to itself changes nothing.
  StorageRef storage = other.storage_;
  set_dims(other.sizes(), other.strides());
  storage_ = std::move(storage);
  storage_offset_ = other.storage_offset_;
  numel_ = other.numel_;
  end_byte_ = other.end_byte_;
  dtype_ = other.dtype_;
}

void TensorImpl::set_sizes_and_strides(std::span<const int64_t> sizes,
                                       std::span<const int64_t> strides, const char* what) {
  AOTRT_CHECK(defined(), kInvalidArgument, what, ": the tensor is undefined");
  const ViewSpan span = check_view_in_storage(sizes, strides, storage_offset_, itemsize(),
                                              storage_->nbytes(), what);
  set_dims(sizes, strides);  // which copes with sizes and strides of its own
  numel_ = span.numel;
  end_byte_ = span.end_byte;
}

std::unique_ptr<TensorImpl> make_tensor(StorageRef storage, std::span<const int64_t> sizes,
                                        std::span<const int64_t> strides,
                                        int64_t storage_offset, ScalarType dtype,
                                        const char* what) {
  AOTRT_CHECK(storage, kInternal, what, ": tensor without storage");
  const ViewSpan span = check_view_in_storage(sizes, strides, storage_offset,
                                              element_size(dtype), storage->nbytes(), what);
  auto t = std::make_unique<TensorImpl>();
  t->storage_ = std::move(storage);
  t->set_dims(sizes, strides);
  t->storage_offset_ = storage_offset;
  t->numel_ = span.numel;
  t->end_byte_ = span.end_byte;
  t->dtype_ = dtype;
  return t;
}

std::unique_ptr<TensorImpl> empty_strided(std::span<const int64_t> sizes,
                                          std::span<const int64_t> strides, ScalarType dtype,
                                          Device device, const char* what) {
  const ViewSpan span = view_span(sizes, strides, 0, element_size(dtype), what);
  StorageRef storage;
  try {
    storage = Storage::allocate(device, static_cast<size_t>(span.end_byte));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kOutOfMemory) throw;
    // Say which allocation failed, not only how many bytes.
    std::string dims;
    for (size_t d = 0; d < sizes.size(); ++d) dims += (d ? ", " : "") + std::to_string(sizes[d]);
    AOTRT_FAIL(kOutOfMemory, what, ": a ", dtype_name(dtype), " tensor of sizes [", dims, "] on ",
               device.str(), ": ", e.what());
  }
  return make_tensor(std::move(storage), sizes, strides, 0, dtype, what);
}

int64_t StridedView::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

StridedView strided_view(const TensorImpl& t) {
  AOTRT_CHECK(t.defined(), kInvalidArgument, "tensor is undefined");
  return StridedView{static_cast<char*>(t.data_ptr()), t.sizes(), t.strides(), t.dtype(),
                     t.device()};
}

}  // namespace aotrt
