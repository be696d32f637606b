#include "core/handles.h"

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <unordered_set>

#include "core/error.h"

namespace aotrt {
namespace {

constexpr size_t kShards = 32;

struct Shard {
  std::mutex mutex;
  std::unordered_set<const void*> live;
};

struct Registry {
  std::array<Shard, kShards> shards;
  std::atomic<int64_t> count{0};

  Shard& shard_of(const void* p) {
    // Handles are heap blocks of at least 16-byte alignment; drop the low bits.
    return shards[(reinterpret_cast<uintptr_t>(p) >> 4) % kShards];
  }
};

Registry& registry() {
  // Never destroyed: handles may be released from static destructors of
  // other libraries during exit.
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

AtenTensorHandle handle_register(std::unique_ptr<TensorImpl> t) {
  Registry& r = registry();
  TensorImpl* raw = t.get();
  Shard& s = r.shard_of(raw);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.live.insert(raw);
  }
  r.count.fetch_add(1, std::memory_order_relaxed);
  t.release();
  return to_handle(raw);
}

TensorImpl& handle_get(AtenTensorHandle h, const char* what) {
  AOTRT_CHECK(h != nullptr, kInvalidArgument, what, " is a null tensor handle");
  Shard& s = registry().shard_of(h);
  std::lock_guard<std::mutex> lock(s.mutex);
  AOTRT_CHECK(s.live.count(h) != 0, kInvalidHandle, what, " (", static_cast<const void*>(h),
              ") is not a live tensor handle: it was deleted, or never made by aotrt");
  return *reinterpret_cast<TensorImpl*>(h);
}

TensorImpl& handle_get_defined(AtenTensorHandle h, const char* what) {
  TensorImpl& t = handle_get(h, what);
  AOTRT_CHECK(t.defined(), kInvalidArgument, what, " is an undefined tensor");
  return t;
}

void handle_delete(AtenTensorHandle h, const char* what) {
  AOTRT_CHECK(h != nullptr, kInvalidArgument, what, " is a null tensor handle");
  Registry& r = registry();
  Shard& s = r.shard_of(h);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    AOTRT_CHECK(s.live.erase(h) != 0, kInvalidHandle, what, " (",
                static_cast<const void*>(h),
                ") is not a live tensor handle: deleted twice, or never made by aotrt");
  }
  r.count.fetch_sub(1, std::memory_order_relaxed);
  // Outside the lock: dropping the storage may call into an allocator.
  delete reinterpret_cast<TensorImpl*>(h);
}

bool handle_is_live(AtenTensorHandle h) {
  if (h == nullptr) return false;
  Shard& s = registry().shard_of(h);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.live.count(h) != 0;
}

int64_t handle_live_count() { return registry().count.load(std::memory_order_relaxed); }

}  // namespace aotrt
