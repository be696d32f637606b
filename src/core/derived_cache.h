// Data derived from a constant storage's bytes (a convolution weight
// reordered to oneDNN's blocked layout), kept with that storage.
//
// Note [Constant storages]
// A Storage is marked constant (Storage::mark_constant) only by whoever knows
// that no one writes its bytes while it lives: aotrt::Model marks its
// container's Parameter and TensorConstant storages (never a Buffer: a model
// may mutate one in place; never memory the caller gave in place) once they
// are loaded (Note [Constant marking] in runtime/model.cpp), and the shim
// marks the deferred storage it makes for a freezing package's opaque
// (_mkldnn) constant (Note [Opaque constants] in shim/tensor_shims.cpp). A marked
// storage carries a DerivedCache: entries are made on first use and die with
// the storage, so a cache entry can neither outlive its source nor be found
// through another storage that happens to reuse the same address (the key
// is the Storage object, not a data pointer). Replacing a constant (a swap,
// an update) gives the model a new Storage, which starts with no entries.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace aotrt {

class DerivedCache {
 public:
  using Key = std::vector<int64_t>;

  // The entry for key, or null.
  std::shared_ptr<const void> find(const Key& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : entries_) {
      if (k == key) return v;
    }
    return nullptr;
  }
  // Keeps `value` for key unless another thread did first; returns the kept one.
  std::shared_ptr<const void> insert(Key key, std::shared_ptr<const void> value) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : entries_) {
      if (k == key) return v;
    }
    entries_.emplace_back(std::move(key), value);
    return value;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  // A constant is used by a handful of primitives at most: a list is enough.
  mutable std::mutex mu_;
  std::vector<std::pair<Key, std::shared_ptr<const void>>> entries_;
};

}  // namespace aotrt
