#include "core/handles.h"

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <cstdint>
#include <vector>

#include "core/error.h"

namespace aotrt {
namespace {

constexpr size_t kShards = 32;

// A set of pointers by open addressing (linear probing; an erase shifts the
// rest of its run back instead of leaving a tombstone), so that once it has
// grown to the number of live handles, registering and deleting handles
// allocates nothing: a steady-state run makes and drops handles at the same
// rate.
class PointerSet {
 public:
  bool contains(const void* p) const { return !slots_.empty() && slots_[find(p)] == p; }

  bool insert(const void* p) {
    if (2 * (live_ + 1) > slots_.size()) grow();
    const size_t i = find(p);
    if (slots_[i] == p) return false;
    slots_[i] = p;
    ++live_;
    return true;
  }

  bool erase(const void* p) {
    if (slots_.empty()) return false;
    size_t i = find(p);
    if (slots_[i] != p) return false;
    slots_[i] = nullptr;
    // Backward shift: an entry after the hole moves into it unless its home
    // slot lies cyclically in (hole, entry].
    const size_t mask = slots_.size() - 1;
    for (size_t j = (i + 1) & mask; slots_[j] != nullptr; j = (j + 1) & mask) {
      const size_t home = slot_of(slots_[j]);
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      slots_[j] = nullptr;
      i = j;
    }
    --live_;
    return true;
  }

 private:
  size_t slot_of(const void* p) const {
    // Heap blocks are 16-byte aligned; Fibonacci hashing spreads the rest.
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >>
                               (64 - bits_));
  }
  // The slot holding p, or the empty slot where it would go.
  size_t find(const void* p) const {
    const size_t mask = slots_.size() - 1;
    size_t i = slot_of(p);
    while (slots_[i] != nullptr && slots_[i] != p) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<const void*> old = std::move(slots_);
    bits_ = old.empty() ? 6 : bits_ + 1;
    slots_.assign(size_t{1} << bits_, nullptr);
    live_ = 0;
    for (const void* p : old) {
      if (p != nullptr) slots_[find(p)] = p, ++live_;
    }
  }

  std::vector<const void*> slots_;  // size 2^bits_, or empty
  size_t bits_ = 0;
  size_t live_ = 0;
};

struct Shard {
  std::mutex mutex;
  PointerSet live;
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

thread_local HandleWatch* t_watch = nullptr;

}  // namespace

HandleWatch::HandleWatch() { t_watch = this; }
HandleWatch::~HandleWatch() { t_watch = nullptr; }

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
  if (t_watch != nullptr) t_watch->made.push_back(to_handle(raw));
  return to_handle(raw);
}

TensorImpl& handle_get(AtenTensorHandle h, const char* what) {
  AOTRT_CHECK(h != nullptr, kInvalidArgument, what, " is a null tensor handle");
  Shard& s = registry().shard_of(h);
  std::lock_guard<std::mutex> lock(s.mutex);
  AOTRT_CHECK(s.live.contains(h), kInvalidHandle, what, " (", static_cast<const void*>(h),
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
  if (t_watch != nullptr) t_watch->deleted.push_back(h);
  // Outside the lock: dropping the storage may call into an allocator.
  delete reinterpret_cast<TensorImpl*>(h);
}

bool handle_is_live(AtenTensorHandle h) {
  if (h == nullptr) return false;
  Shard& s = registry().shard_of(h);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.live.contains(h);
}

int64_t handle_live_count() { return registry().count.load(std::memory_order_relaxed); }

}  // namespace aotrt
