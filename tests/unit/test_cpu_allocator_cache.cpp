// The CPU allocator's cache of freed large blocks (cpu/allocator.cpp, See
// Note [CPU block cache]): exact-size reuse, exact live_bytes, the cap,
// empty_cache, set_limit, many threads. Under AddressSanitizer the cache is
// off, and each test checks that instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "core/storage.h"
#include "cpu/cpu.h"

using namespace aotrt;

#if defined(__SANITIZE_ADDRESS__)
#define AOTRT_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AOTRT_TEST_UNDER_ASAN 1
#endif
#endif

namespace {

#ifdef AOTRT_TEST_UNDER_ASAN
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif

constexpr size_t kMiB = size_t{1} << 20;

// Sets the cache cap for one test, from an empty cache; restores both after.
class CacheLimit {
 public:
  explicit CacheLimit(size_t limit) : previous_(cpu::set_cache_limit(limit)) {
    cpu::empty_cache();
    EXPECT_EQ(cpu::cache_limit(), kUnderAsan ? 0 : limit) << "the cache is on unless under ASan";
  }
  ~CacheLimit() {
    cpu::empty_cache();
    cpu::set_cache_limit(previous_);
  }
  CacheLimit(const CacheLimit&) = delete;
  CacheLimit& operator=(const CacheLimit&) = delete;

 private:
  size_t previous_;
};

// Whether this build caches at all (not under AddressSanitizer). Not read
// from the allocator, so a cache switched off by mistake fails the tests.
bool cache_on() { return !kUnderAsan; }

int64_t cached() { return cpu::allocator().stats().cached_bytes; }
int64_t live() { return cpu::allocator().stats().live_bytes; }

TEST(CpuAllocatorCache, FreedBlockComesBackForTheSameSizeWithExactCounts) {
  CacheLimit cap(64 * kMiB);
  Allocator& a = cpu::allocator();
  const AllocatorStats before = a.stats();
  ASSERT_EQ(before.cached_bytes, 0);
  void* p = a.allocate(kMiB);
  std::memset(p, 0x5a, kMiB);
  EXPECT_EQ(live(), before.live_bytes + static_cast<int64_t>(kMiB));
  a.deallocate(p, kMiB);
  EXPECT_EQ(live(), before.live_bytes);
  if (!cache_on()) {  // AddressSanitizer: every free goes to free()
    EXPECT_EQ(cached(), 0);
    return;
  }
  EXPECT_EQ(cached(), static_cast<int64_t>(kMiB));
  // 10 bytes fewer rounds to the same 64-byte multiple: same block, but
  // live_bytes counts what was asked for.
  void* q = a.allocate(kMiB - 10);
  EXPECT_EQ(q, p);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 64, 0u);
  EXPECT_EQ(live(), before.live_bytes + static_cast<int64_t>(kMiB - 10));
  EXPECT_EQ(cached(), 0);
  EXPECT_EQ(a.stats().live_allocations, before.live_allocations + 1);
  EXPECT_EQ(a.stats().total_allocations, before.total_allocations + 2);
  a.deallocate(q, kMiB - 10);
  EXPECT_EQ(live(), before.live_bytes);
  EXPECT_EQ(a.stats().live_allocations, before.live_allocations);
  EXPECT_EQ(cached(), static_cast<int64_t>(kMiB));
}

TEST(CpuAllocatorCache, OtherSizesGetOtherBlocksAndSmallBlocksAreNotCached) {
  CacheLimit cap(64 * kMiB);
  Allocator& a = cpu::allocator();
  const int64_t base = live();
  void* p = a.allocate(kMiB);
  a.deallocate(p, kMiB);
  // p is cached (or, under ASan, in quarantine): no other size may get it.
  void* bigger = a.allocate(kMiB + 64);
  void* double_size = a.allocate(2 * kMiB);
  void* smaller = a.allocate(kMiB - 64);
  EXPECT_NE(bigger, p);
  EXPECT_NE(double_size, p);
  EXPECT_NE(smaller, p);
  EXPECT_EQ(live(), base + static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(cached(), cache_on() ? static_cast<int64_t>(kMiB) : 0);
  a.deallocate(bigger, kMiB + 64);
  a.deallocate(double_size, 2 * kMiB);
  a.deallocate(smaller, kMiB - 64);
  EXPECT_EQ(live(), base);
  EXPECT_EQ(cached(), cache_on() ? static_cast<int64_t>(5 * kMiB) : 0);
  // Below 64 KiB, free() keeps them well enough.
  const int64_t before_small = cached();
  void* small = a.allocate(60 << 10);
  a.deallocate(small, 60 << 10);
  EXPECT_EQ(cached(), before_small);
  void* threshold = a.allocate(64 << 10);
  a.deallocate(threshold, 64 << 10);
  EXPECT_EQ(cached(), before_small + (cache_on() ? (64 << 10) : 0));
}

TEST(CpuAllocatorCache, CapIsNeverPassedAndTheOldestBlocksGoFirst) {
  CacheLimit cap(3 * kMiB);
  Allocator& a = cpu::allocator();
  const int64_t base = live();
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(a.allocate(kMiB));
  for (void* p : blocks) {
    a.deallocate(p, kMiB);
    EXPECT_LE(cached(), static_cast<int64_t>(3 * kMiB));
  }
  EXPECT_EQ(live(), base);
  if (!cache_on()) {
    EXPECT_EQ(cached(), 0);
    return;
  }
  EXPECT_EQ(cached(), static_cast<int64_t>(3 * kMiB));
  // The three kept are the last three freed, most recent first.
  void* r0 = a.allocate(kMiB);
  void* r1 = a.allocate(kMiB);
  void* r2 = a.allocate(kMiB);
  EXPECT_EQ(r0, blocks[4]);
  EXPECT_EQ(r1, blocks[3]);
  EXPECT_EQ(r2, blocks[2]);
  EXPECT_EQ(cached(), 0);
  for (void* p : {r0, r1, r2}) a.deallocate(p, kMiB);
  // A block larger than the cap is freed, and the cache keeps what it had.
  void* huge = a.allocate(4 * kMiB);
  a.deallocate(huge, 4 * kMiB);
  EXPECT_EQ(cached(), static_cast<int64_t>(3 * kMiB));
  // Lowering the cap frees down to it at once.
  EXPECT_EQ(cpu::set_cache_limit(kMiB + kMiB / 2), 3 * kMiB);
  EXPECT_EQ(cached(), static_cast<int64_t>(kMiB));
  // Random sizes and orders: the cap holds after every step.
  std::mt19937 rng(7);
  std::vector<std::pair<void*, size_t>> held;
  for (int step = 0; step < 2000; ++step) {
    if (held.size() < 8 && (held.empty() || rng() % 2 == 0)) {
      const size_t n = (64 << 10) + (rng() % 16) * (64 << 10);
      held.emplace_back(a.allocate(n), n);
    } else {
      const size_t i = rng() % held.size();
      a.deallocate(held[i].first, held[i].second);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    }
    ASSERT_LE(cached(), static_cast<int64_t>(kMiB + kMiB / 2)) << "step " << step;
    ASSERT_GE(cached(), 0) << "step " << step;
  }
  for (auto& [p, n] : held) a.deallocate(p, n);
  EXPECT_EQ(live(), base);
}

TEST(CpuAllocatorCache, EmptyCacheReleasesEveryCachedBlockAndNoLiveOne) {
  CacheLimit cap(64 * kMiB);
  Allocator& a = cpu::allocator();
  const int64_t base = live();
  void* kept = a.allocate(2 * kMiB);
  std::memset(kept, 0x11, 2 * kMiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(a.allocate(kMiB + i * 4096));
  for (int i = 0; i < 4; ++i) a.deallocate(blocks[i], kMiB + i * 4096);
  EXPECT_EQ(cached(), cache_on() ? static_cast<int64_t>(4 * kMiB + 6 * 4096) : 0);
  cpu::empty_cache();
  EXPECT_EQ(cached(), 0);
  EXPECT_EQ(live(), base + static_cast<int64_t>(2 * kMiB));
  const auto* bytes = static_cast<const unsigned char*>(kept);
  EXPECT_TRUE(std::all_of(bytes, bytes + 2 * kMiB, [](unsigned char b) { return b == 0x11; }));
  a.deallocate(kept, 2 * kMiB);
  EXPECT_EQ(live(), base);
  // A cap of 0 disables the cache: nothing is kept.
  cpu::set_cache_limit(0);
  void* p = a.allocate(kMiB);
  a.deallocate(p, kMiB);
  EXPECT_EQ(cached(), 0);
}

TEST(CpuAllocatorCache, LimitStillRefusesNamingTheSizeEvenWithACachedBlock) {
  CacheLimit cap(64 * kMiB);
  Allocator& a = cpu::allocator();
  void* p = a.allocate(2 * kMiB);
  a.deallocate(p, 2 * kMiB);  // a block of exactly the size asked below is cached
  const AllocatorStats before = a.stats();
  a.set_limit(before.live_bytes + static_cast<int64_t>(kMiB));
  try {
    StorageRef s = Storage::allocate(cpu_device(), 2 * kMiB);
    a.set_limit(0);
    FAIL() << "allocation past the limit succeeded";
  } catch (const Error& e) {
    a.set_limit(0);
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(2 * kMiB)), std::string::npos) << what;
    EXPECT_NE(what.find("limit"), std::string::npos) << what;
  }
  const AllocatorStats after = a.stats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  EXPECT_EQ(after.failed_allocations, before.failed_allocations + 1);
  EXPECT_EQ(after.cached_bytes, before.cached_bytes) << "a refused request took a cached block";
  // With the limit lifted the same request is served, from the cache.
  {
    StorageRef s = Storage::allocate(cpu_device(), 2 * kMiB);
    if (cache_on()) EXPECT_EQ(s->data(), p);
    std::memset(s->data(), 0x22, 2 * kMiB);
    EXPECT_EQ(a.stats().live_bytes, before.live_bytes + static_cast<int64_t>(2 * kMiB));
  }
  EXPECT_EQ(a.stats().live_bytes, before.live_bytes);
}

TEST(CpuAllocatorCache, ManyThreadsKeepLiveBytesExactAndNeverShareABlock) {
  CacheLimit cap(4 * kMiB);  // small, so eviction races with reuse too
  Allocator& a = cpu::allocator();
  const AllocatorStats before = a.stats();
  constexpr int kThreads = 8, kSteps = 20000;
  // Mostly cached sizes, so nearly every step takes or puts under the mutex.
  const size_t sizes[] = {1000, 64 << 10, 64 << 10, 100 << 10, 100 << 10, kMiB, kMiB + 64, 3 * kMiB};
  std::atomic<int> corrupted{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<std::pair<unsigned char*, size_t>> held;
      const auto tag = static_cast<unsigned char>(t + 1);
      // Each block is stamped with its owner at both ends; another thread
      // handed the same block would overwrite the stamp.
      auto release = [&](size_t i) {
        auto [p, n] = held[i];
        if (p[0] != tag || p[n - 1] != tag) ++corrupted;
        a.deallocate(p, n);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      };
      while (!go.load()) std::this_thread::yield();
      for (int step = 0; step < kSteps; ++step) {
        if (held.size() < 4 && (held.empty() || rng() % 2 == 0)) {
          const size_t n = sizes[rng() % std::size(sizes)];
          auto* p = static_cast<unsigned char*>(a.allocate(n));
          p[0] = p[n - 1] = tag;
          held.emplace_back(p, n);
        } else {
          release(rng() % held.size());
        }
        if (step % 2000 == 0 && t == 0) cpu::empty_cache();  // races with put and take
      }
      while (!held.empty()) release(held.size() - 1);
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  const AllocatorStats after = a.stats();
  EXPECT_EQ(corrupted.load(), 0) << "two threads were handed the same block";
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  EXPECT_EQ(after.failed_allocations, before.failed_allocations);
  EXPECT_LE(after.cached_bytes, static_cast<int64_t>(4 * kMiB));
  EXPECT_GE(after.cached_bytes, 0);
}

}  // namespace
