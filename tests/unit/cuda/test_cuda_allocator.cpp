// The CUDA caching allocator (cuda/allocator.cpp): reuse without cudaMalloc,
// the rounding and waste rules, cross-stream safety, limits and OOM messages,
// stats, and thread safety. The allocator is process-wide, so every check is
// on the change of a counter across the test's own calls.
#include <gtest/gtest.h>

#include <thread>

#include "core/error.h"
#include "cuda_test_util.h"

namespace aotrt::cuda::test {
namespace {

// Restores the allocator limit and the thread's current stream on exit.
struct Scope {
  ~Scope() {
    allocator(0).set_limit(0);
    set_current_cuda_stream(0, nullptr);
  }
};

TEST(CudaAllocator, SecondIdenticalAllocationReusesTheBlock) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  const size_t size = 3 * 1000 * 1000 + 17;
  void* p = a.allocate(size);
  ASSERT_NE(p, nullptr);
  a.deallocate(p, size);
  const CachingAllocatorCounters before = allocator_counters(0);
  const AllocatorStats stats_before = a.stats();
  void* q = a.allocate(size);
  EXPECT_EQ(q, p);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, before.cuda_mallocs)
      << "a cached block of the same size must not cost a cudaMalloc";
  EXPECT_EQ(a.stats().total_allocations, stats_before.total_allocations + 1);
  EXPECT_EQ(allocator_counters(0).cache_hits, before.cache_hits + 1);
  a.deallocate(q, size);
}

TEST(CudaAllocator, SteadyStateMakesNoCudaMalloc) {
  require_device();
  Allocator& a = allocator(0);
  const std::vector<size_t> sizes = {1, 512, 513, 4096, 100000, 1 << 20, (1 << 20) + 1,
                                     5 << 20, 64 << 20};
  auto run = [&] {
    std::vector<void*> ptrs;
    for (size_t s : sizes) ptrs.push_back(a.allocate(s));
    for (size_t i = 0; i < sizes.size(); ++i) a.deallocate(ptrs[i], sizes[i]);
  };
  run();
  const int64_t mallocs = allocator_counters(0).cuda_mallocs;
  const int64_t total = a.stats().total_allocations;
  for (int i = 0; i < 5; ++i) run();
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs);
  EXPECT_EQ(a.stats().total_allocations, total + 5 * static_cast<int64_t>(sizes.size()));
}

TEST(CudaAllocator, RoundsAndBoundsWaste) {
  require_device();
  Allocator& a = allocator(0);
  empty_cache(0);
  // Small requests round to 512 bytes: 1 and 500 bytes share a block size.
  void* p = a.allocate(1);
  const int64_t live_small = a.stats().live_bytes;
  a.deallocate(p, 1);
  int64_t mallocs = allocator_counters(0).cuda_mallocs;
  void* q = a.allocate(500);
  EXPECT_EQ(q, p);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs);
  EXPECT_GE(live_small, 512);
  a.deallocate(q, 500);

  // A 64 MiB block does not serve a 2 MiB request (too much waste)...
  void* big = a.allocate(64 << 20);
  a.deallocate(big, 64 << 20);
  mallocs = allocator_counters(0).cuda_mallocs;
  void* small = a.allocate(2 << 20);
  EXPECT_NE(small, big);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs + 1);
  // ...but serves a request within a quarter of it.
  void* near = a.allocate((56 << 20) + 5);
  EXPECT_EQ(near, big);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs + 1);
  a.deallocate(small, 2 << 20);
  a.deallocate(near, (56 << 20) + 5);
  empty_cache(0);
}

TEST(CudaAllocator, StatsCountLivePeakAndCached) {
  require_device();
  Allocator& a = allocator(0);
  empty_cache(0);
  const AllocatorStats s0 = a.stats();
  a.reset_peak();
  void* p = a.allocate(10 << 20);
  void* q = a.allocate(4 << 20);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.live_bytes - s0.live_bytes, 14 << 20);
  EXPECT_EQ(s.live_allocations - s0.live_allocations, 2);
  EXPECT_EQ(s.peak_bytes, s.live_bytes);
  a.deallocate(p, 10 << 20);
  s = a.stats();
  EXPECT_EQ(s.live_bytes - s0.live_bytes, 4 << 20);
  EXPECT_EQ(s.cached_bytes, 10 << 20);
  EXPECT_EQ(s.peak_bytes - s0.live_bytes, 14 << 20);
  EXPECT_EQ(allocator_counters(0).reserved_bytes, s.live_bytes + s.cached_bytes);
  a.deallocate(q, 4 << 20);
  const int64_t frees = allocator_counters(0).cuda_frees;
  empty_cache(0);
  EXPECT_EQ(a.stats().cached_bytes, 0);
  EXPECT_EQ(allocator_counters(0).cuda_frees, frees + 2);
  EXPECT_EQ(a.allocate(0), nullptr);
}

// Note [Cross-stream reuse]: a block freed on stream A while A still has
// queued work goes to stream B only once that work has completed.
TEST(CudaAllocator, CrossStreamReuseWaitsForTheFree) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  TestStream sa, sb;
  ASSERT_NE(sa.get(), nullptr);
  const size_t size = 8 << 20;
  empty_cache(0);  // no completed block of another stream to take instead

  set_current_cuda_stream(0, sa.get());
  void* p = a.allocate(size);
  StreamBlocker blocker;
  blocker.block(sa.get());
  // Work that uses the block, queued behind the blocker, then the free.
  CUDA_OK(cudaMemsetAsync(p, 0xAB, size, sa.get()));
  a.deallocate(p, size);

  // The same stream may take it back at once: its order protects it.
  void* again = a.allocate(size);
  EXPECT_EQ(again, p);
  CUDA_OK(cudaMemsetAsync(again, 0xCD, size, sa.get()));
  a.deallocate(again, size);

  // Another stream may not while A's work is pending.
  set_current_cuda_stream(0, sb.get());
  const int64_t mallocs = allocator_counters(0).cuda_mallocs;
  void* other = a.allocate(size);
  EXPECT_NE(other, p) << "a block with pending work on stream A went to stream B";
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs + 1);
  EXPECT_EQ(cudaStreamQuery(sa.get()), cudaErrorNotReady) << "stream A ran ahead of the test";

  blocker.release();
  CUDA_OK(cudaStreamSynchronize(sa.get()));
  // Now the free has completed: stream B may take the block without cudaMalloc.
  const int64_t reuses = allocator_counters(0).cross_stream_reuses;
  void* later = a.allocate(size);
  EXPECT_EQ(later, p);
  EXPECT_EQ(allocator_counters(0).cross_stream_reuses, reuses + 1);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs + 1);
  // And the memory holds what stream A wrote last: nothing ran out of order.
  std::vector<unsigned char> head(16);
  CUDA_OK(cudaMemcpy(head.data(), later, head.size(), cudaMemcpyDeviceToHost));
  for (unsigned char b : head) EXPECT_EQ(b, 0xCD);
  a.deallocate(other, size);
  a.deallocate(later, size);
  CUDA_OK(cudaDeviceSynchronize());
  empty_cache(0);
}

TEST(CudaAllocator, LimitFailsNamingTheSize) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  const int64_t live = a.stats().live_bytes;
  a.set_limit(live + (32 << 20));
  void* ok = a.allocate(16 << 20);
  const int64_t failed = a.stats().failed_allocations;
  try {
    a.allocate(20 << 20);
    FAIL() << "allocation over the limit succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    const std::string m = e.what();
    EXPECT_NE(m.find("20971520"), std::string::npos) << m;
    EXPECT_NE(m.find("limit"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(live + (16 << 20))), std::string::npos)
        << "message should give the live bytes: " << m;
  }
  EXPECT_EQ(a.stats().failed_allocations, failed + 1);
  a.deallocate(ok, 16 << 20);
  a.set_limit(0);
  void* fine = a.allocate(20 << 20);
  EXPECT_NE(fine, nullptr);
  a.deallocate(fine, 20 << 20);
}

TEST(CudaAllocator, DeviceOutOfMemoryFreesTheCacheRetriesAndNamesTheSize) {
  require_device();
  Allocator& a = allocator(0);
  // Something in the cache, so the retry path frees it.
  void* p = a.allocate(6 << 20);
  a.deallocate(p, 6 << 20);
  ASSERT_GT(a.stats().cached_bytes, 0);
  const int64_t frees = allocator_counters(0).cuda_frees;
  const size_t huge = size_t{1} << 50;  // 1 PiB
  try {
    a.allocate(huge);
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    const std::string m = e.what();
    EXPECT_NE(m.find(std::to_string(huge)), std::string::npos) << m;
    EXPECT_NE(m.find("live bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("cached bytes"), std::string::npos) << m;
  }
  EXPECT_EQ(a.stats().cached_bytes, 0) << "the cache was not freed before the retry";
  EXPECT_GT(allocator_counters(0).cuda_frees, frees);
  // The device still works afterwards (the error was not sticky).
  void* q = a.allocate(1 << 20);
  CUDA_OK(cudaMemset(q, 0, 1 << 20));
  a.deallocate(q, 1 << 20);
}

TEST(CudaAllocator, ThreadsAllocateConcurrently) {
  require_device();
  Allocator& a = allocator(0);
  const AllocatorStats before = a.stats();
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      TestStream s;
      set_current_cuda_stream(0, s.get());
      std::mt19937_64 rng(t);
      std::vector<std::pair<void*, size_t>> held;
      for (int i = 0; i < 300; ++i) {
        if (held.empty() || rng() % 2) {
          const size_t n = 1 + rng() % (3 << 20);
          void* p = a.allocate(n);
          if (p == nullptr || cudaMemsetAsync(p, t, n, s.get()) != cudaSuccess) ++errors;
          held.emplace_back(p, n);
        } else {
          a.deallocate(held.back().first, held.back().second);
          held.pop_back();
        }
      }
      for (auto& [p, n] : held) a.deallocate(p, n);
      if (cudaStreamSynchronize(s.get()) != cudaSuccess) ++errors;
      set_current_cuda_stream(0, nullptr);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  const AllocatorStats after = a.stats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.live_allocations, before.live_allocations);
  EXPECT_EQ(allocator_counters(0).reserved_bytes, after.live_bytes + after.cached_bytes);
  CUDA_OK(cudaDeviceSynchronize());
  empty_cache(0);
}

TEST(CudaAllocator, DeviceBufferReturnsItsBlock) {
  require_device();
  empty_cache(0);  // no other cached block of the same size
  const AllocatorStats before = allocator(0).stats();
  void* data = nullptr;
  {
    DeviceBuffer b(0, 1000);
    data = b.data();
    EXPECT_NE(data, nullptr);
    EXPECT_EQ(b.nbytes(), 1000u);
    DeviceBuffer moved(std::move(b));
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_EQ(moved.data(), data);
    EXPECT_EQ(allocator(0).stats().live_allocations, before.live_allocations + 1);
  }
  EXPECT_EQ(allocator(0).stats().live_allocations, before.live_allocations);
  DeviceBuffer again(0, 1000);
  EXPECT_EQ(again.data(), data);
}

TEST(CudaAllocator, StorageOfACudaTensorComesFromIt) {
  require_device();
  const AllocatorStats before = allocator(0).stats();
  const std::vector<int64_t> sizes = {256, 256}, strides = {256, 1};
  {
    auto t = empty_strided(sizes, strides, ScalarType::Float32, cuda0(), "test");
    EXPECT_EQ(allocator(0).stats().live_allocations, before.live_allocations + 1);
    EXPECT_EQ(allocator(0).stats().live_bytes, before.live_bytes + 256 * 256 * 4);
  }
  EXPECT_EQ(allocator(0).stats().live_allocations, before.live_allocations);
}

TEST(CudaAllocator, RefusesAnUnknownDevice) {
  require_device();
  try {
    allocator(device_count());
    FAIL() << "allocator of a missing device";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(std::to_string(device_count())), std::string::npos);
  }
}

}  // namespace
}  // namespace aotrt::cuda::test
