// Counted storage and the CPU allocator (core/storage.h, core/allocator.h,
// cpu/allocator.cpp). See Note [Storage ownership].
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "core/storage.h"
#include "cuda/cuda.h"

using namespace aotrt;

namespace {

Allocator& cpu_alloc() { return allocator_for(cpu_device()); }

TEST(CoreStorage, AllocatedMemoryIsCountedAndFreedWithTheLastReference) {
  const AllocatorStats before = cpu_alloc().stats();
  {
    StorageRef a = Storage::allocate(cpu_device(), 1000);
    EXPECT_TRUE(a->owns_memory());
    EXPECT_EQ(a->nbytes(), 1000u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % 64, 0u);  // 64-byte aligned
    EXPECT_EQ(a->use_count(), 1);
    EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes + 1000);
    EXPECT_EQ(cpu_alloc().stats().live_allocations, before.live_allocations + 1);
    StorageRef b = a;
    EXPECT_EQ(a->use_count(), 2);
    StorageRef c = std::move(b);
    EXPECT_FALSE(b);
    EXPECT_EQ(a->use_count(), 2);
    a = StorageRef();
    EXPECT_EQ(c->use_count(), 1);
    EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes + 1000);  // c still holds it
  }
  EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes);
  EXPECT_EQ(cpu_alloc().stats().live_allocations, before.live_allocations);
  EXPECT_EQ(cpu_alloc().stats().total_allocations, before.total_allocations + 1);
}

TEST(CoreStorage, SelfAssignmentKeepsTheReference) {
  StorageRef a = Storage::allocate(cpu_device(), 8);
  const StorageRef& alias = a;
  a = alias;
  ASSERT_TRUE(a);
  EXPECT_EQ(a->use_count(), 1);
}

TEST(CoreStorage, BorrowedMemoryIsNeverFreedNorCounted) {
  std::vector<uint8_t> mine(256, 0xab);
  const AllocatorStats before = cpu_alloc().stats();
  {
    StorageRef s = Storage::borrow(cpu_device(), mine.data(), mine.size());
    EXPECT_FALSE(s->owns_memory());
    EXPECT_EQ(s->data(), mine.data());
    StorageRef t = s;
    EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes);
  }
  EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes);
  EXPECT_EQ(cpu_alloc().stats().total_allocations, before.total_allocations);
  for (uint8_t b : mine) ASSERT_EQ(b, 0xab);
}

TEST(CoreStorage, ZeroBytesHasNoMemoryAndNoBlock) {
  const AllocatorStats before = cpu_alloc().stats();
  StorageRef s = Storage::allocate(cpu_device(), 0);
  EXPECT_EQ(s->data(), nullptr);
  EXPECT_EQ(cpu_alloc().stats().live_allocations, before.live_allocations);
}

// Note [Deferred storages]: a source that counts its fills and can be told to fail.
class CountingSource final : public StorageSource {
 public:
  explicit CountingSource(std::atomic<int>& fills, bool fail = false)
      : fills_(fills), fail_(fail) {}
  void fill(void* dst, size_t nbytes) const override {
    fills_.fetch_add(1);
    if (fail_) AOTRT_FAIL(kInvalidArgument, "the source cannot be read");
    auto* p = static_cast<uint8_t*>(dst);
    for (size_t i = 0; i < nbytes; ++i) p[i] = static_cast<uint8_t>(i * 3);
  }

 private:
  std::atomic<int>& fills_;
  bool fail_;
};

TEST(CoreStorage, DeferredMemoryIsMadeOnceOnFirstUseAndFreedWithTheLastReference) {
  const AllocatorStats before = cpu_alloc().stats();
  std::atomic<int> fills{0};
  {
    StorageRef s = Storage::deferred(cpu_device(), 4096, std::make_unique<CountingSource>(fills));
    EXPECT_TRUE(s->owns_memory());
    EXPECT_EQ(s->nbytes(), 4096u);
    EXPECT_NE(s->pending_source(), nullptr);
    EXPECT_EQ(s->source(), s->pending_source());
    EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes);  // nothing yet
    EXPECT_EQ(fills.load(), 0);
    // Many first readers at once: one fill, one block, every reader sees it filled.
    std::vector<std::thread> readers;
    std::vector<const uint8_t*> seen(8);
    for (size_t t = 0; t < seen.size(); ++t) {
      readers.emplace_back([&, t] { seen[t] = static_cast<const uint8_t*>(s->data()); });
    }
    for (auto& r : readers) r.join();
    EXPECT_EQ(fills.load(), 1);
    for (const uint8_t* p : seen) {
      ASSERT_EQ(p, seen[0]);
      ASSERT_EQ(p[4095], static_cast<uint8_t>(4095 * 3));
    }
    EXPECT_EQ(s->pending_source(), nullptr);
    EXPECT_NE(s->source(), nullptr);  // still known: what the bytes were made from
    EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes + 4096);
  }
  EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes);
  EXPECT_EQ(cpu_alloc().stats().live_allocations, before.live_allocations);
}

TEST(CoreStorage, DeferredMemoryNeverUsedIsNeverAllocated) {
  const AllocatorStats before = cpu_alloc().stats();
  std::atomic<int> fills{0};
  { StorageRef s = Storage::deferred(cpu_device(), 1 << 20, std::make_unique<CountingSource>(fills)); }
  EXPECT_EQ(fills.load(), 0);
  EXPECT_EQ(cpu_alloc().stats().total_allocations, before.total_allocations);
}

TEST(CoreStorage, DeferredFillThatThrowsLeavesNoBlockAndIsTriedAgain) {
  const AllocatorStats before = cpu_alloc().stats();
  std::atomic<int> fills{0};
  StorageRef s =
      Storage::deferred(cpu_device(), 64, std::make_unique<CountingSource>(fills, true));
  for (int i = 1; i <= 2; ++i) {
    EXPECT_THROW(s->data(), Error);
    EXPECT_EQ(fills.load(), i);
    EXPECT_NE(s->pending_source(), nullptr);
    EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes);
  }
}

TEST(CoreStorage, ReferencesReleasedFromManyThreadsFreeOnce) {
  const AllocatorStats before = cpu_alloc().stats();
  {
    StorageRef s = Storage::allocate(cpu_device(), 4096);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([s] {
        for (int i = 0; i < 10000; ++i) {
          StorageRef copy = s;
          StorageRef moved = std::move(copy);
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(s->use_count(), 1);
  }
  EXPECT_EQ(cpu_alloc().stats().live_bytes, before.live_bytes);
}

TEST(CoreAllocator, PeakAndResetPeak) {
  Allocator& a = cpu_alloc();
  a.reset_peak();
  const int64_t base = a.stats().live_bytes;
  EXPECT_EQ(a.stats().peak_bytes, base);
  {
    StorageRef s = Storage::allocate(cpu_device(), 1 << 20);
    EXPECT_EQ(a.stats().peak_bytes, base + (1 << 20));
  }
  EXPECT_EQ(a.stats().peak_bytes, base + (1 << 20));  // peak survives the free
  a.reset_peak();
  EXPECT_EQ(a.stats().peak_bytes, base);
}

TEST(CoreAllocator, LimitRefusesWithOutOfMemoryAndCountsTheFailure) {
  Allocator& a = cpu_alloc();
  const AllocatorStats before = a.stats();
  a.set_limit(before.live_bytes + 1000);
  try {
    StorageRef s = Storage::allocate(cpu_device(), 2000);
    a.set_limit(0);
    FAIL() << "allocation past the limit succeeded";
  } catch (const Error& e) {
    a.set_limit(0);
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    const std::string what = e.what();
    EXPECT_NE(what.find("2000"), std::string::npos) << what;
    EXPECT_NE(what.find("limit"), std::string::npos) << what;
  }
  const AllocatorStats after = a.stats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.failed_allocations, before.failed_allocations + 1);
  EXPECT_NO_THROW(StorageRef s = Storage::allocate(cpu_device(), 2000));  // limit lifted
}

TEST(CoreAllocator, SystemOutOfMemoryIsAnErrorNotAnAbort) {
  Allocator& a = cpu_alloc();
  const AllocatorStats before = a.stats();
  EXPECT_THROW(StorageRef s = Storage::allocate(cpu_device(), size_t{1} << 62), Error);
  EXPECT_EQ(a.stats().live_bytes, before.live_bytes);
  EXPECT_EQ(a.stats().failed_allocations, before.failed_allocations + 1);
}

#ifndef AOTRT_WITH_CUDA
TEST(CoreAllocator, CudaAllocatorOfABuildWithoutCudaIsRefused) {
  EXPECT_FALSE(cuda::built());
  try {
    allocator_for(Device{DeviceType::CUDA, 0});
    FAIL() << "got a CUDA allocator without CUDA";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("without CUDA"), std::string::npos) << e.what();
  }
}
#endif

}  // namespace
