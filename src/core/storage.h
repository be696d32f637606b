// Storage owns (or borrows) one block of bytes on one device.
//
// Note [Storage ownership]
// A Storage is counted: every tensor handle that can reach it holds exactly
// one reference, whatever made the handle (empty_strided, a view of a view,
// new_tensor_handle, a reinterpret at any offset). When the last reference
// goes, owned memory is given back to the allocator it came from; borrowed
// memory (from_blob, caller-owned inputs) is never freed. The count is atomic
// so handles may be released from any thread in any order.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "core/allocator.h"
#include "core/derived_cache.h"
#include "core/device.h"

namespace aotrt {

class StorageRef;

// Note [Deferred storages]
// A storage whose bytes are made from a source on their first use: owned
// memory of nbytes that is allocated and filled by the source's fill(), once
// (thread-safe), when data() is first asked for. Until then it holds no
// memory, and a reader that knows the source's form can read the source
// instead (pending_source()). The one source today is a oneDNN-blocked
// constant of a freezing=True package (Note [Opaque constants] in
// shim/tensor_shims.cpp): the oneDNN ops reorder its blocked bytes straight
// into their primitives' layouts (or use them in place) and never make the
// plain copy; anything else that reads the tensor (generated code asking for
// its pointer, a copy, a plain kernel) gets the plain copy, made then.
class StorageSource {
 public:
  virtual ~StorageSource() = default;
  // Writes the storage's nbytes (its elements in the storage's own layout) into dst.
  virtual void fill(void* dst, size_t nbytes) const = 0;
};

class Storage {
 public:
  // New memory of nbytes from the device's allocator.
  static StorageRef allocate(Device device, size_t nbytes);
  // Memory the caller keeps ownership of; aotrt never frees it.
  static StorageRef borrow(Device device, void* data, size_t nbytes);
  // Owned memory of nbytes made from `source` on first use (Note [Deferred
  // storages]); what `source` reads must stay readable while the storage lives.
  static StorageRef deferred(Device device, size_t nbytes,
                             std::unique_ptr<const StorageSource> source);

  // The bytes; a deferred storage's are allocated and filled here, once.
  void* data() const {
    if (pending_.load(std::memory_order_acquire)) [[unlikely]] return materialize();
    return data_;
  }
  // A deferred storage's source, made or not; null for the others.
  const StorageSource* source() const { return deferred_ ? deferred_->source.get() : nullptr; }
  // A deferred storage's source while its bytes are not made yet, else null.
  const StorageSource* pending_source() const {
    return pending_.load(std::memory_order_acquire) ? deferred_->source.get() : nullptr;
  }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool owns_memory() const { return allocator_ != nullptr; }
  int64_t use_count() const { return refs_.load(std::memory_order_acquire); }

  // See Note [Constant storages] in core/derived_cache.h: marks the bytes as
  // never written while this storage lives; idempotent, thread-safe.
  void mark_constant();
  // The cache of a storage marked constant, else null.
  DerivedCache* derived() const { return derived_.load(std::memory_order_acquire); }

  // Exchanges the memory (block, size and allocator) of two storages that
  // both own theirs and are not constant: how resize_ grows a storage in
  // place, so that every view of it sees the new block (c10's
  // StorageImpl::set_data_ptr). The caller has copied what must survive.
  void swap_memory(Storage& other);
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

 private:
  friend class StorageRef;
  Storage(Device device, void* data, size_t nbytes, Allocator* allocator)
      : device_(device), data_(data), nbytes_(nbytes), allocator_(allocator) {}
  ~Storage();
  void* materialize() const;

  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    // acq_rel: the thread that frees must see every write made through
    // other handles before they let go.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  std::atomic<int64_t> refs_{1};
  Device device_;
  mutable void* data_;  // set once by materialize() for a deferred storage
  size_t nbytes_;
  Allocator* allocator_;  // null: borrowed
  std::atomic<DerivedCache*> derived_{nullptr};  // owned; set once by mark_constant
  struct Deferred {
    std::unique_ptr<const StorageSource> source;
    std::once_flag made;
  };
  std::unique_ptr<Deferred> deferred_;  // Note [Deferred storages]; null for the others
  mutable std::atomic<bool> pending_{false};
};

// An intrusive counted pointer to a Storage.
class StorageRef {
 public:
  StorageRef() = default;
  StorageRef(const StorageRef& other) : ptr_(other.ptr_) {
    if (ptr_) ptr_->retain();
  }
  StorageRef(StorageRef&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  StorageRef& operator=(StorageRef other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }
  ~StorageRef() {
    if (ptr_) ptr_->release();
  }

  Storage* get() const { return ptr_; }
  Storage* operator->() const { return ptr_; }
  Storage& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  friend class Storage;
  explicit StorageRef(Storage* adopted) : ptr_(adopted) {}  // takes the initial reference
  Storage* ptr_ = nullptr;
};

}  // namespace aotrt
