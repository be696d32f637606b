#include <atomic>
#include <cstdlib>
#include <mutex>

#include "core/error.h"
#include "cpu/cpu.h"

namespace aotrt::cpu {
namespace {

constexpr size_t kAlignment = 64;

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const int64_t limit = limit_.load(std::memory_order_relaxed);
    if (limit > 0 && live_.load(std::memory_order_relaxed) + static_cast<int64_t>(nbytes) > limit) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      AOTRT_FAIL(kOutOfMemory, "cpu allocator: cannot allocate ", nbytes, " bytes: ",
                 live_.load(), " bytes are live and the limit is ", limit);
    }
    const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
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
    std::free(ptr);
    live_.fetch_sub(static_cast<int64_t>(nbytes));
    allocations_.fetch_sub(1, std::memory_order_relaxed);
  }

  AllocatorStats stats() const override {
    AllocatorStats s;
    s.live_bytes = live_.load();
    s.peak_bytes = peak_.load();
    s.cached_bytes = 0;  // malloc's own caching is not ours to count
    s.live_allocations = allocations_.load();
    s.total_allocations = total_.load();
    s.failed_allocations = failed_.load();
    return s;
  }

  void reset_peak() override { peak_.store(live_.load()); }
  void set_limit(int64_t max_live_bytes) override { limit_.store(max_live_bytes); }

 private:
  std::atomic<int64_t> live_{0}, peak_{0}, allocations_{0}, total_{0}, failed_{0}, limit_{0};
};

}  // namespace

Allocator& allocator() {
  static CpuAllocator* a = new CpuAllocator();  // outlives every storage, even at exit
  return *a;
}

}  // namespace aotrt::cpu
