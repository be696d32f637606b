// The CPU allocator: 64-byte-aligned blocks from aligned_alloc, counted, with
// a cache of freed large blocks. See Note [CPU block cache].
//
// Note [CPU block cache]
// Why: glibc gives large blocks back to the OS when they are freed (munmap
// above the mmap threshold, brk trimming of the heap top), and the next run
// page-faults fresh memory in again. For a CPU resnet18 package this made
// aoti_torch_delete_tensor_object cost ~49 us a call (1.9 ms of a 20 ms run;
// strace showed ~5 brk calls a run at ~320 us each) and slowed the
// convolutions that touched the fresh pages; raising glibc's trim and mmap
// thresholds took the run from ~20.8 ms to ~14 ms. A library must not change
// process-wide malloc settings, so the allocator keeps such blocks itself.
// Policy:
//  - Only blocks of at least kMinCachedBlock (64 KiB, after rounding to 64) are
//    cached; smaller ones are cheap in glibc's own bins and go to free().
//  - Free lists are keyed by the exact rounded size: a model asks for the
//    same sizes every run, so exact reuse is enough and wastes nothing. The
//    most recently freed block of a size is handed out first (warm pages).
//  - At most cache_limit bytes are cached: 1 GiB by default, or the value of
//    AOTRT_CPU_CACHE_BYTES (0 disables the cache). A block that would pass the
//    cap evicts the least recently freed blocks first, so a cache filled by
//    shapes that are no longer used makes room for the ones in use; a block
//    larger than the cap itself is freed.
//  - stats().live_bytes counts only blocks in use (what was asked for, as
//    before); cached_bytes counts the cached blocks' rounded sizes. set_limit
//    caps live bytes only, as the interface says; cached blocks do not count.
//  - When aligned_alloc fails, the cache is emptied and the call tried once
//    more before the out-of-memory error.
//  - empty_cache() frees every cached block (live ones are untouched).
//  - Under AddressSanitizer the cache is off: a block handed out again would
//    hide a use-after-free of tensor memory from ASan, which only sees the
//    free() of a block (and keeps freed memory in quarantine to catch it).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "cpu/cpu.h"

#if defined(__SANITIZE_ADDRESS__)
#define AOTRT_CPU_CACHE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AOTRT_CPU_CACHE_UNDER_ASAN 1
#endif
#endif

namespace aotrt::cpu {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kMinCachedBlock = size_t{64} << 10;
constexpr size_t kDefaultCacheLimit = size_t{1} << 30;

#ifdef AOTRT_CPU_CACHE_UNDER_ASAN
constexpr bool kCacheAllowed = false;  // See Note [CPU block cache]: ASan must see every free
#else
constexpr bool kCacheAllowed = true;
#endif

size_t rounded_size(size_t nbytes) { return (nbytes + kAlignment - 1) / kAlignment * kAlignment; }

// AOTRT_CPU_CACHE_BYTES if it is a plain decimal byte count, else the default.
size_t cache_limit_from_env() {
  const char* v = std::getenv("AOTRT_CPU_CACHE_BYTES");
  if (v == nullptr || *v == '\0') return kDefaultCacheLimit;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end != '\0' || errno != 0) {
    std::fprintf(stderr, "aotrt: AOTRT_CPU_CACHE_BYTES='%s' is not a byte count; using %zu\n", v,
                 kDefaultCacheLimit);
    return kDefaultCacheLimit;
  }
  return static_cast<size_t>(n);
}

// Freed large blocks by exact size, oldest first in lru_. Thread-safe.
class BlockCache {
 public:
  explicit BlockCache(size_t limit) : limit_(kCacheAllowed ? limit : 0) {}

  // A cached block of exactly `size` bytes, or nullptr.
  void* take(size_t size) {
    if (limit_.load(std::memory_order_relaxed) == 0) return nullptr;  // nothing is cached
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_size_.find(size);
    if (it == by_size_.end() || it->second.empty()) return nullptr;
    const auto node = it->second.back();
    it->second.pop_back();
    void* p = node->ptr;
    lru_.erase(node);
    cached_bytes_.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed);
    return p;
  }

  // Keeps the block for reuse, evicting the oldest to stay under the limit;
  // false when it is not kept (the caller frees it).
  bool put(void* ptr, size_t size) noexcept {
    if (size > limit_.load(std::memory_order_relaxed)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    const size_t limit = limit_.load(std::memory_order_relaxed);
    if (size > limit) return false;
    shrink_to(limit - size);
    try {
      std::vector<std::list<Block>::iterator>& same = by_size_[size];
      // Grown first, so that the push_back after the list's cannot throw.
      if (same.size() == same.capacity()) same.reserve(std::max<size_t>(4, 2 * same.size()));
      lru_.push_back(Block{ptr, size});
      same.push_back(std::prev(lru_.end()));
    } catch (const std::bad_alloc&) {
      return false;  // no memory for the bookkeeping: really free the block
    }
    cached_bytes_.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
    return true;
  }

  size_t set_limit(size_t limit) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t previous = limit_.load(std::memory_order_relaxed);
    if (!kCacheAllowed) return previous;
    limit_.store(limit, std::memory_order_relaxed);
    shrink_to(limit);
    return previous;
  }

  size_t limit() const { return limit_.load(std::memory_order_relaxed); }

  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    shrink_to(0);
  }

  int64_t cached_bytes() const { return cached_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Block {
    void* ptr;
    size_t size;
  };

  // Frees the least recently cached blocks until at most `bytes` are cached.
  // Holds mu_.
  void shrink_to(size_t bytes) noexcept {
    while (!lru_.empty() && static_cast<size_t>(cached_bytes()) > bytes) {
      const Block oldest = lru_.front();
      // Within a size, blocks are appended in the order they were freed, so the
      // oldest block overall is the first of its size's list.
      auto same = by_size_.find(oldest.size);
      same->second.erase(same->second.begin());
      if (same->second.empty()) by_size_.erase(same);  // sizes no longer used do not pile up
      lru_.pop_front();
      std::free(oldest.ptr);
      cached_bytes_.fetch_sub(static_cast<int64_t>(oldest.size), std::memory_order_relaxed);
    }
  }

  mutable std::mutex mu_;
  std::atomic<size_t> limit_;
  std::atomic<int64_t> cached_bytes_{0};  // written under mu_; read without it by stats()
  std::list<Block> lru_;                   // every cached block, least recently freed first
  std::unordered_map<size_t, std::vector<std::list<Block>::iterator>> by_size_;
};

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const int64_t limit = limit_.load(std::memory_order_relaxed);
    // (A fuzzer's new_zeros asked for 2^63 - 1 bytes: live + nbytes overflowed.)
    if (exceeds_limit(live_.load(std::memory_order_relaxed), nbytes, limit)) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      AOTRT_FAIL(kOutOfMemory, "cpu allocator: cannot allocate ", nbytes, " bytes: ",
                 live_.load(), " bytes are live and the limit is ", limit);
    }
    const size_t rounded = rounded_size(nbytes);
    void* p = rounded >= kMinCachedBlock ? cache_.take(rounded) : nullptr;
    if (p == nullptr) p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr && cache_.cached_bytes() > 0) {
      cache_.clear();  // the system may have room once our cached blocks are back
      p = std::aligned_alloc(kAlignment, rounded);
    }
    if (p == nullptr) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      AOTRT_FAIL(kOutOfMemory, "cpu allocator: cannot allocate ", nbytes,
                 " bytes: the system has no memory for it");
    }
    const int64_t live = live_.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
    allocations_.fetch_add(1, std::memory_order_relaxed);
    total_.fetch_add(1, std::memory_order_relaxed);
    return p;
  }

  void deallocate(void* ptr, size_t nbytes) noexcept override {
    if (ptr == nullptr) return;
    const size_t rounded = rounded_size(nbytes);
    if (rounded < kMinCachedBlock || !cache_.put(ptr, rounded)) std::free(ptr);
    live_.fetch_sub(static_cast<int64_t>(nbytes));
    allocations_.fetch_sub(1, std::memory_order_relaxed);
  }

  AllocatorStats stats() const override {
    AllocatorStats s;
    s.live_bytes = live_.load();
    s.peak_bytes = peak_.load();
    s.cached_bytes = cache_.cached_bytes();  // ours only: malloc's own caching is not counted
    s.live_allocations = allocations_.load();
    s.total_allocations = total_.load();
    s.failed_allocations = failed_.load();
    return s;
  }

  void reset_peak() override { peak_.store(live_.load()); }
  void set_limit(int64_t max_live_bytes) override { limit_.store(max_live_bytes); }

  BlockCache& cache() { return cache_; }

 private:
  std::atomic<int64_t> live_{0}, peak_{0}, allocations_{0}, total_{0}, failed_{0}, limit_{0};
  BlockCache cache_{cache_limit_from_env()};
};

CpuAllocator& cpu_allocator() {
  static CpuAllocator* a = new CpuAllocator();  // outlives every storage, even at exit
  return *a;
}

}  // namespace

Allocator& allocator() { return cpu_allocator(); }

void empty_cache() { cpu_allocator().cache().clear(); }

size_t set_cache_limit(size_t max_cached_bytes) {
  return cpu_allocator().cache().set_limit(max_cached_bytes);
}

size_t cache_limit() { return cpu_allocator().cache().limit(); }

}  // namespace aotrt::cpu
