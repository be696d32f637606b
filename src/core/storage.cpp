#include "core/storage.h"

namespace aotrt {

StorageRef Storage::allocate(Device device, size_t nbytes) {
  Allocator& allocator = allocator_for(device);
  void* data = allocator.allocate(nbytes);
  try {
    return StorageRef(new Storage(device, data, nbytes, &allocator));
  } catch (...) {
    allocator.deallocate(data, nbytes);
    throw;
  }
}

StorageRef Storage::borrow(Device device, void* data, size_t nbytes) {
  return StorageRef(new Storage(device, data, nbytes, nullptr));
}

Storage::~Storage() {
  if (allocator_ != nullptr) allocator_->deallocate(data_, nbytes_);
}

}  // namespace aotrt
