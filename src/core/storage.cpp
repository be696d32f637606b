#include "core/storage.h"

#include <memory>
#include <utility>

#include "core/error.h"

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

StorageRef Storage::deferred(Device device, size_t nbytes,
                             std::unique_ptr<const StorageSource> source) {
  AOTRT_CHECK(source != nullptr, kInternal, "Storage::deferred: no source");
  StorageRef s(new Storage(device, nullptr, nbytes, &allocator_for(device)));
  s->deferred_ = std::make_unique<Deferred>();
  s->deferred_->source = std::move(source);
  s->pending_.store(true, std::memory_order_release);
  return s;
}

void* Storage::materialize() const {
  // A throw (no memory) leaves the flag unset, so a later call tries again.
  std::call_once(deferred_->made, [this] {
    void* data = allocator_->allocate(nbytes_);
    try {
      deferred_->source->fill(data, nbytes_);
    } catch (...) {
      allocator_->deallocate(data, nbytes_);
      throw;
    }
    data_ = data;
    pending_.store(false, std::memory_order_release);
  });
  return data_;
}

void Storage::mark_constant() {
  if (derived() != nullptr) return;
  auto fresh = std::make_unique<DerivedCache>();
  DerivedCache* expected = nullptr;
  if (derived_.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) {
    fresh.release();
  }
}

void Storage::swap_memory(Storage& other) {
  AOTRT_CHECK(owns_memory() && other.owns_memory() && derived() == nullptr &&
                  deferred_ == nullptr && other.deferred_ == nullptr &&
                  other.derived() == nullptr && device_ == other.device_,
              kInternal, "Storage::swap_memory: only owned, non-constant storages of one device "
              "exchange memory");
  std::swap(data_, other.data_);
  std::swap(nbytes_, other.nbytes_);
  std::swap(allocator_, other.allocator_);
}

Storage::~Storage() {
  delete derived_.load(std::memory_order_acquire);
  if (allocator_ != nullptr && data_ != nullptr) allocator_->deallocate(data_, nbytes_);
}

}  // namespace aotrt
