#include "core/storage.h"

#include <memory>

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

void Storage::mark_constant() {
  if (derived() != nullptr) return;
  auto fresh = std::make_unique<DerivedCache>();
  DerivedCache* expected = nullptr;
  if (derived_.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) {
    fresh.release();
  }
}

Storage::~Storage() {
  delete derived_.load(std::memory_order_acquire);
  if (allocator_ != nullptr) allocator_->deallocate(data_, nbytes_);
}

}  // namespace aotrt
