// The tensor behind an AtenTensorHandle: a view of a Storage.
//
// Invariant: a defined TensorImpl holds one reference on its storage, and its
// sizes, strides and storage offset (in elements of its dtype) were checked
// by check_view_in_storage() when it was made (see Note [View span]); so
// data_ptr() and every element the view addresses lie inside the storage.
// Nothing here copies memory: a view always stays in its parent's storage.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/storage.h"

namespace aotrt {

class TensorImpl {
 public:
  // An undefined tensor (aoti_torch_new_uninitialized_tensor).
  TensorImpl() = default;
  // Never copied or moved: handles point at it, and its dims may point into it.
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  bool defined() const { return static_cast<bool>(storage_); }
  const StorageRef& storage() const { return storage_; }
  Device device() const { return storage_->device(); }
  ScalarType dtype() const { return dtype_; }
  size_t itemsize() const { return element_size(dtype_); }
  int64_t dim() const { return static_cast<int64_t>(ndim_); }
  std::span<const int64_t> sizes() const { return {dims_, ndim_}; }
  std::span<const int64_t> strides() const { return {dims_ + ndim_, ndim_}; }
  // Stable pointers for aoti_torch_get_sizes/_strides (borrowed by callers).
  int64_t* sizes_data() { return dims_; }
  int64_t* strides_data() { return dims_ + ndim_; }
  int64_t storage_offset() const { return storage_offset_; }
  int64_t numel() const { return numel_; }
  // Bytes of storage from its start to one past the last element addressed.
  int64_t end_byte() const { return end_byte_; }
  bool is_contiguous() const;
  // Address of element 0; null for a storage with no memory and, as in c10,
  // for a tensor with no elements.
  void* data_ptr() const;

  // Makes this handle an alias of other (aoti_torch_assign_tensors).
  void assign(const TensorImpl& other);
  // Gives this tensor new sizes and strides on its storage, checked as
  // make_tensor checks them (resize_). Pointers from sizes_data() and
  // strides_data() taken before are invalidated, as c10's are.
  void set_sizes_and_strides(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                             const char* what);

 private:
  friend std::unique_ptr<TensorImpl> make_tensor(StorageRef, std::span<const int64_t>,
                                                 std::span<const int64_t>, int64_t,
                                                 ScalarType, const char*);
  // Sizes then strides: inline up to kInlineDims dims, so that making a
  // handle (which every shim call that returns a tensor does) allocates only
  // the TensorImpl itself.
  static constexpr size_t kInlineDims = 6;
  void set_dims(std::span<const int64_t> sizes, std::span<const int64_t> strides);

  StorageRef storage_;
  int64_t inline_dims_[2 * kInlineDims] = {};
  std::unique_ptr<int64_t[]> heap_dims_;
  int64_t* dims_ = inline_dims_;
  size_t ndim_ = 0;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 0;
  int64_t end_byte_ = 0;
  ScalarType dtype_ = ScalarType::Float32;
};

// The one way a defined TensorImpl is made: checks the view against its
// storage (check_view_in_storage) and takes a reference on it. `what` names
// the caller in error messages.
std::unique_ptr<TensorImpl> make_tensor(StorageRef storage, std::span<const int64_t> sizes,
                                        std::span<const int64_t> strides,
                                        int64_t storage_offset, ScalarType dtype,
                                        const char* what);

// New memory for a view with these sizes and strides: the storage is as large
// as the view's span (ATen's empty_strided).
std::unique_ptr<TensorImpl> empty_strided(std::span<const int64_t> sizes,
                                          std::span<const int64_t> strides, ScalarType dtype,
                                          Device device, const char* what);

// A lightweight description of a defined tensor for kernels: its first
// element's address, sizes and strides (elements), dtype and device. It
// borrows everything from the TensorImpl it came from.
struct StridedView {
  char* data = nullptr;
  std::span<const int64_t> sizes;
  std::span<const int64_t> strides;
  ScalarType dtype = ScalarType::Float32;
  Device device;

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const;
  size_t itemsize() const { return element_size(dtype); }
};
StridedView strided_view(const TensorImpl& t);

}  // namespace aotrt
