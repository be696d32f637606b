#include "core/handles.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "core/error.h"

namespace aotrt {
namespace {

static_assert(sizeof(AtenTensorHandle) == sizeof(uint64_t), "Note [Handle values] packs 64 bits");

constexpr uint32_t kShards = 32;
constexpr uint32_t kChunkBits = 12;  // slots per chunk: 4096 (64 KiB)
constexpr uint32_t kChunkSlots = uint32_t{1} << kChunkBits;
constexpr uint32_t kChunks = 1024;  // per shard: 4M slots, 128M in all
constexpr uint32_t kNoSlot = UINT32_MAX;

struct Slot {
  // Odd while a handle names this slot; only a handle made with this very
  // generation is live (Note [Handle values]).
  std::atomic<uint32_t> generation{0};
  uint32_t next_free = kNoSlot;  // under the shard's lock
  std::atomic<TensorImpl*> tensor{nullptr};
};

struct alignas(64) Shard {
  std::mutex mutex;
  uint32_t free_head = kNoSlot;  // local index of the first free slot
  uint32_t used = 0;             // local slots ever handed out
  // Chunks never move or go away, so a lookup reads them without the lock.
  std::array<std::atomic<Slot*>, kChunks> chunks{};
};

struct Registry {
  std::array<Shard, kShards> shards;
  std::atomic<int64_t> count{0};
  std::atomic<uint32_t> next_shard{0};
};

Registry& registry() {
  // Never destroyed: handles may be released from static destructors of
  // other libraries during exit.
  static Registry* r = new Registry();
  return *r;
}

thread_local HandleWatch* t_watch = nullptr;

// Slot index i lives in shard i % kShards at local index i / kShards.
struct Decoded {
  Shard* shard = nullptr;
  Slot* slot = nullptr;  // null: no such slot was ever made
  uint32_t local = 0;
  uint32_t generation = 0;
};

Decoded decode(AtenTensorHandle h) {
  const auto value = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
  const auto index = static_cast<uint32_t>(value);
  Decoded d;
  d.generation = static_cast<uint32_t>(value >> 32);
  d.shard = &registry().shards[index % kShards];
  d.local = index / kShards;
  if (d.local >= kChunks * kChunkSlots) return d;
  Slot* chunk = d.shard->chunks[d.local >> kChunkBits].load(std::memory_order_acquire);
  if (chunk != nullptr) d.slot = &chunk[d.local & (kChunkSlots - 1)];
  return d;
}

bool live(const Decoded& d) {
  return d.slot != nullptr && (d.generation & 1) != 0 &&
         d.slot->generation.load(std::memory_order_acquire) == d.generation;
}

// Why a handle that is not live is refused, as precisely as its value says.
const char* not_live_reason(const Decoded& d) {
  if (d.slot != nullptr && (d.generation & 1) != 0) {
    const uint32_t now = d.slot->generation.load(std::memory_order_relaxed);
    if (now == 0 || now > d.generation) return "it was deleted (its slot has been reused since, or retired)";
  }
  return "it was deleted, or never made by aotrt";
}

Shard& shard_of_this_thread() {
  static thread_local uint32_t mine = kNoSlot;
  Registry& r = registry();
  if (mine == kNoSlot) mine = r.next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
  return r.shards[mine];
}

}  // namespace

HandleWatch::HandleWatch() { t_watch = this; }
HandleWatch::~HandleWatch() { t_watch = nullptr; }

AtenTensorHandle handle_register(std::unique_ptr<TensorImpl> t) {
  Registry& r = registry();
  Shard& s = shard_of_this_thread();
  const auto shard_index = static_cast<uint32_t>(&s - r.shards.data());
  uint32_t local = 0, generation = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    Slot* slot = nullptr;
    if (s.free_head != kNoSlot) {
      local = s.free_head;
      slot = &s.chunks[local >> kChunkBits].load(std::memory_order_relaxed)[local & (kChunkSlots - 1)];
      s.free_head = slot->next_free;
    } else {
      AOTRT_CHECK(s.used < kChunks * kChunkSlots, kOutOfMemory, "aotrt: more than ",
                  uint64_t{kChunks} * kChunkSlots, " live tensor handles made by one thread's shard");
      local = s.used;
      std::atomic<Slot*>& chunk = s.chunks[local >> kChunkBits];
      if (chunk.load(std::memory_order_relaxed) == nullptr) {
        chunk.store(new Slot[kChunkSlots], std::memory_order_release);
      }
      ++s.used;
      slot = &chunk.load(std::memory_order_relaxed)[local & (kChunkSlots - 1)];
    }
    generation = slot->generation.load(std::memory_order_relaxed) + 1;  // odd
    slot->tensor.store(t.release(), std::memory_order_relaxed);
    slot->generation.store(generation, std::memory_order_release);
  }
  r.count.fetch_add(1, std::memory_order_relaxed);
  const uint64_t value = uint64_t{generation} << 32 | (uint64_t{local} * kShards + shard_index);
  const auto handle = reinterpret_cast<AtenTensorHandle>(static_cast<uintptr_t>(value));
  if (t_watch != nullptr) t_watch->made.push_back(handle);
  return handle;
}

TensorImpl& handle_get(AtenTensorHandle h, const char* what) {
  AOTRT_CHECK(h != nullptr, kInvalidArgument, what, " is a null tensor handle");
  const Decoded d = decode(h);
  AOTRT_CHECK(live(d), kInvalidHandle, what, " (", static_cast<const void*>(h),
              ") is not a live tensor handle: ", not_live_reason(d));
  return *d.slot->tensor.load(std::memory_order_relaxed);
}

TensorImpl* handle_lookup(AtenTensorHandle h) noexcept {
  if (h == nullptr) return nullptr;
  const Decoded d = decode(h);
  return live(d) ? d.slot->tensor.load(std::memory_order_relaxed) : nullptr;
}

TensorImpl& handle_get_defined(AtenTensorHandle h, const char* what) {
  TensorImpl& t = handle_get(h, what);
  AOTRT_CHECK(t.defined(), kInvalidArgument, what, " is an undefined tensor");
  return t;
}

void handle_delete(AtenTensorHandle h, const char* what) {
  AOTRT_CHECK(h != nullptr, kInvalidArgument, what, " is a null tensor handle");
  const Decoded d = decode(h);
  // The exchange makes one of two racing deletes of a handle the one that frees it.
  uint32_t expected = d.generation;
  const uint32_t next = d.generation + 1;  // even; 0 retires the slot
  const bool mine = (d.generation & 1) != 0 && d.slot != nullptr &&
                    d.slot->generation.compare_exchange_strong(expected, next,
                                                               std::memory_order_acq_rel);
  AOTRT_CHECK(mine, kInvalidHandle, what, " (", static_cast<const void*>(h),
              ") is not a live tensor handle: deleted twice, or never made by aotrt");
  TensorImpl* t = d.slot->tensor.exchange(nullptr, std::memory_order_relaxed);
  if (next != 0) {
    std::lock_guard<std::mutex> lock(d.shard->mutex);
    d.slot->next_free = d.shard->free_head;
    d.shard->free_head = d.local;
  }
  registry().count.fetch_sub(1, std::memory_order_relaxed);
  if (t_watch != nullptr) t_watch->deleted.push_back(h);
  // Outside the lock: dropping the storage may call into an allocator.
  delete t;
}

bool handle_is_live(AtenTensorHandle h) { return h != nullptr && live(decode(h)); }

int64_t handle_live_count() { return registry().count.load(std::memory_order_relaxed); }

uint32_t handle_slot(AtenTensorHandle h) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(h));
}

}  // namespace aotrt
