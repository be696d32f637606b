// The CUDA caching allocator (cuda/allocator.cpp): reuse without cudaMalloc,
// rounding, segments split and merged, cross-stream safety, private pools,
// limits and OOM messages, stats, and thread safety. The allocator is
// process-wide, so every check is on the change of a counter across the
// test's own calls; tests that count segments run on a fresh stream after
// empty_cache, whose pool is empty and which finds no wholly free segment of
// another stream to take (a segment that holds a live block never moves).
#include <gtest/gtest.h>

#include <thread>

#include "aotrt/aotrt.h"
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

TEST(CudaAllocator, RoundsTo512BytesAndSplitsSegments) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  empty_cache(0);
  TestStream stream;
  set_current_cuda_stream(0, stream.get());
  // Small requests round to 512 bytes: 1 and 500 bytes share a block size.
  const int64_t live0 = a.stats().live_bytes;
  void* p = a.allocate(1);
  EXPECT_EQ(a.stats().live_bytes - live0, 512);
  a.deallocate(p, 1);
  int64_t mallocs = allocator_counters(0).cuda_mallocs;
  void* q = a.allocate(500);
  EXPECT_EQ(q, p);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs);
  a.deallocate(q, 500);

  // A free 64 MiB segment serves a 2 MiB request: split, the rest stays free...
  void* big = a.allocate(64 << 20);
  a.deallocate(big, 64 << 20);
  mallocs = allocator_counters(0).cuda_mallocs;
  void* small = a.allocate(2 << 20);
  EXPECT_EQ(small, big);
  // ...and serves the next request, right after it, without cudaMalloc.
  void* near = a.allocate((56 << 20) + 5);
  EXPECT_EQ(near, static_cast<char*>(big) + (2 << 20));
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs);
  EXPECT_EQ(a.stats().live_bytes - live0, (2 << 20) + (56 << 20) + 512);
  // Freed, the blocks merge back into the whole segment.
  a.deallocate(small, 2 << 20);
  a.deallocate(near, (56 << 20) + 5);
  void* whole = a.allocate(64 << 20);
  EXPECT_EQ(whole, big);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs);
  a.deallocate(whole, 64 << 20);
  CUDA_OK(cudaStreamSynchronize(stream.get()));
  empty_cache(0);
}

// Issue 13: a [1, 64, 80, 80] float32 activation (1.5625 MiB) held 2 MiB when
// every block was its own cudaMalloc; now blocks share segments and count
// their 512-rounded size, as eager PyTorch's allocator does.
TEST(CudaAllocator, TwoRequestsOfOneAndAHalfMiBShareOneSegment) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  empty_cache(0);
  TestStream stream;
  set_current_cuda_stream(0, stream.get());
  const AllocatorStats s0 = a.stats();
  const CachingAllocatorCounters c0 = allocator_counters(0);
  a.reset_peak();
  const size_t n = 3 << 19;  // 1.5 MiB
  void* p = a.allocate(n);
  void* q = a.allocate(n);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, c0.cuda_mallocs + 1) << "one 20 MiB segment";
  EXPECT_EQ(q, static_cast<char*>(p) + n);
  EXPECT_EQ(a.stats().live_bytes - s0.live_bytes, 2 * static_cast<int64_t>(n)) << "not 2 x 2 MiB";
  EXPECT_EQ(a.stats().peak_bytes - s0.live_bytes, 2 * static_cast<int64_t>(n));
  EXPECT_EQ(allocator_counters(0).reserved_bytes - c0.reserved_bytes, 20 << 20);
  EXPECT_EQ(a.stats().cached_bytes - s0.cached_bytes, (20 << 20) - 2 * static_cast<int64_t>(n));
  const size_t act = 1638400;  // [1, 64, 80, 80] float32
  void* r = a.allocate(act);
  EXPECT_EQ(r, static_cast<char*>(q) + n);
  EXPECT_EQ(a.stats().live_bytes - s0.live_bytes, 2 * static_cast<int64_t>(n) + static_cast<int64_t>(act));
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, c0.cuda_mallocs + 1);
  CUDA_OK(cudaMemsetAsync(p, 1, n, stream.get()));
  CUDA_OK(cudaMemsetAsync(q, 2, n, stream.get()));
  CUDA_OK(cudaMemsetAsync(r, 3, act, stream.get()));
  a.deallocate(q, n);
  a.deallocate(p, n);
  a.deallocate(r, act);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.live_bytes, s0.live_bytes);
  EXPECT_EQ(s.cached_bytes - s0.cached_bytes, 20 << 20);
  EXPECT_EQ(allocator_counters(0).reserved_bytes, s.live_bytes + s.cached_bytes);
  CUDA_OK(cudaStreamSynchronize(stream.get()));
  const int64_t frees = allocator_counters(0).cuda_frees;
  empty_cache(0);
  EXPECT_EQ(allocator_counters(0).cuda_frees, frees + 1) << "the segment, merged back whole";
  EXPECT_EQ(a.stats().cached_bytes, s0.cached_bytes);
  EXPECT_EQ(allocator_counters(0).reserved_bytes, c0.reserved_bytes);
}

TEST(CudaAllocator, StatsCountLivePeakAndCached) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  empty_cache(0);
  TestStream stream;
  set_current_cuda_stream(0, stream.get());
  const AllocatorStats s0 = a.stats();
  const int64_t reserved0 = allocator_counters(0).reserved_bytes;
  a.reset_peak();
  void* p = a.allocate(10 << 20);  // a 10 MiB segment of its own
  void* q = a.allocate(4 << 20);   // 4 MiB of a new 20 MiB segment
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.live_bytes - s0.live_bytes, 14 << 20);
  EXPECT_EQ(s.live_allocations - s0.live_allocations, 2);
  EXPECT_EQ(s.peak_bytes, s.live_bytes);
  EXPECT_EQ(s.cached_bytes - s0.cached_bytes, 16 << 20);
  a.deallocate(p, 10 << 20);
  s = a.stats();
  EXPECT_EQ(s.live_bytes - s0.live_bytes, 4 << 20);
  EXPECT_EQ(s.cached_bytes - s0.cached_bytes, 26 << 20);
  EXPECT_EQ(s.peak_bytes - s0.live_bytes, 14 << 20);
  EXPECT_EQ(allocator_counters(0).reserved_bytes, s.live_bytes + s.cached_bytes);
  EXPECT_EQ(allocator_counters(0).reserved_bytes - reserved0, 30 << 20);
  a.deallocate(q, 4 << 20);
  const int64_t frees = allocator_counters(0).cuda_frees;
  empty_cache(0);
  EXPECT_EQ(a.stats().cached_bytes, s0.cached_bytes);
  EXPECT_EQ(allocator_counters(0).cuda_frees, frees + 2);
  EXPECT_EQ(allocator_counters(0).reserved_bytes, reserved0);
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
  // A segment of its own (>= 10 MiB): stream B's first segment has no room
  // for its second request, which can only come from A's segment or cudaMalloc.
  const size_t size = 12 << 20;
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

// Note [A stream that goes away]: a stream forgotten and destroyed with work still queued,
// one block live and one freed. Its segments stop naming it; the later free records nothing
// on the dead stream (the driver would read freed memory); another stream takes the memory
// only once the queued work has run. (The cuBLASLt workspace half: CudaCallGraphs'
// NothingIsCapturedInsideTheCallersCaptureOrWhenOff, and the unit binary's clean exit.)
TEST(CudaAllocator, AStreamThatGoesAwayHandsItsMemoryOver) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  const size_t size = 12 << 20;  // a segment of its own
  empty_cache(0);
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  set_current_cuda_stream(0, s);
  void* live = a.allocate(size);
  void* freed = a.allocate(size);
  StreamBlocker blocker;
  blocker.block(s);
  CUDA_OK(cudaMemsetAsync(live, 0xAB, size, s));
  CUDA_OK(cudaMemsetAsync(freed, 0xAB, size, s));
  a.deallocate(freed, size);
  set_current_cuda_stream(0, nullptr);
  EXPECT_GT(stream_reserved_bytes(0, s), 0);
  aotrt::forget_cuda_stream(Device{DeviceType::CUDA, 0}, s);
  EXPECT_EQ(stream_reserved_bytes(0, s), 0) << "a segment still names the forgotten stream";
  CUDA_OK(cudaStreamDestroy(s));  // returns at once: the blocked work runs later
  a.deallocate(live, size);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  TestStream sb;
  set_current_cuda_stream(0, sb.get());
  const int64_t mallocs = allocator_counters(0).cuda_mallocs;
  void* other = a.allocate(size);
  EXPECT_TRUE(other != live && other != freed) << "memory with queued work went to another stream";
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs + 1);
  blocker.release();
  CUDA_OK(cudaDeviceSynchronize());
  const int64_t reuses = allocator_counters(0).cross_stream_reuses;
  void* later = a.allocate(size);
  EXPECT_TRUE(later == live || later == freed) << "the forgotten stream's memory was not reused";
  EXPECT_EQ(allocator_counters(0).cross_stream_reuses, reuses + 1);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs + 1);
  a.deallocate(other, size);
  a.deallocate(later, size);
  CUDA_OK(cudaDeviceSynchronize());
  empty_cache(0);
}

// Note [Cross-stream reuse]: a segment moves to another stream only whole;
// its free blocks wait for their own stream while another block of it lives.
TEST(CudaAllocator, CrossStreamReuseTakesOnlyWhollyFreeSegments) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  TestStream sa, sb;
  const size_t n = 3 << 19;  // 1.5 MiB
  empty_cache(0);

  set_current_cuda_stream(0, sa.get());
  void* p = a.allocate(n);
  void* q = a.allocate(n);
  ASSERT_EQ(q, static_cast<char*>(p) + n) << "both from one segment of stream A";
  a.deallocate(p, n);
  CUDA_OK(cudaStreamSynchronize(sa.get()));  // p's free has completed

  set_current_cuda_stream(0, sb.get());
  const CachingAllocatorCounters c0 = allocator_counters(0);
  void* other = a.allocate(n);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + (20 << 20);
  const uintptr_t at = reinterpret_cast<uintptr_t>(other);
  EXPECT_FALSE(at >= lo && at < hi) << "stream B got a block of A's segment while q lives in it";
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, c0.cuda_mallocs + 1);
  EXPECT_EQ(allocator_counters(0).cross_stream_reuses, c0.cross_stream_reuses);

  // q freed (on A's order) and completed: A's segment is wholly free and
  // moves to B for a request B's own segment (18.5 MiB free) cannot serve.
  a.deallocate(q, n);
  CUDA_OK(cudaStreamSynchronize(sa.get()));
  const size_t large = 19 << 20;
  void* moved = a.allocate(large);
  EXPECT_EQ(moved, p);
  EXPECT_EQ(allocator_counters(0).cross_stream_reuses, c0.cross_stream_reuses + 1);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, c0.cuda_mallocs + 1);
  a.deallocate(other, n);
  a.deallocate(moved, large);
  CUDA_OK(cudaDeviceSynchronize());
  empty_cache(0);
}

// Note [Private pools for graph capture] at the allocator: a private stream's
// segments never go to another stream nor back to the driver until the
// stream is unmarked.
TEST(CudaAllocator, PrivatePoolKeepsItsSegments) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  TestStream priv, other;
  const size_t n = 3 << 19;
  empty_cache(0);
  set_private_pool(0, priv.get(), true);
  const int64_t reserved0 = allocator_counters(0).reserved_bytes;

  set_current_cuda_stream(0, priv.get());
  void* p = a.allocate(n);
  CUDA_OK(cudaMemsetAsync(p, 0, n, priv.get()));
  a.deallocate(p, n);
  CUDA_OK(cudaStreamSynchronize(priv.get()));

  // Wholly free and idle, but private: another stream does not take it.
  set_current_cuda_stream(0, other.get());
  const CachingAllocatorCounters c0 = allocator_counters(0);
  void* o = a.allocate(n);
  EXPECT_NE(o, p);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, c0.cuda_mallocs + 1);
  EXPECT_EQ(allocator_counters(0).cross_stream_reuses, c0.cross_stream_reuses);
  a.deallocate(o, n);
  CUDA_OK(cudaStreamSynchronize(other.get()));

  // empty_cache frees the other stream's segment, not the private one.
  const int64_t frees = allocator_counters(0).cuda_frees;
  empty_cache(0);
  EXPECT_EQ(allocator_counters(0).cuda_frees, frees + 1);
  EXPECT_EQ(allocator_counters(0).reserved_bytes - reserved0, 20 << 20);
  set_current_cuda_stream(0, priv.get());
  const int64_t mallocs = allocator_counters(0).cuda_mallocs;
  void* again = a.allocate(n);
  EXPECT_EQ(again, p);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs);
  a.deallocate(again, n);
  CUDA_OK(cudaStreamSynchronize(priv.get()));

  // Unmarking gives its wholly free segment back to the driver.
  set_private_pool(0, priv.get(), false);
  EXPECT_EQ(allocator_counters(0).cuda_frees, frees + 2);
  EXPECT_EQ(allocator_counters(0).reserved_bytes, reserved0);
}

TEST(CudaAllocator, LimitFailsNamingTheSize) {
  require_device();
  Scope scope;
  Allocator& a = allocator(0);
  // A fresh stream: the 16 MiB come from a new segment of exactly 16 MiB, not
  // from a cached block whose unsplit rest would count as live.
  empty_cache(0);
  TestStream stream;
  set_current_cuda_stream(0, stream.get());
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
  Scope scope;
  Allocator& a = allocator(0);
  // A wholly free segment in the cache, so the retry path frees it; what
  // stays cached is the free part of segments that hold a live block.
  empty_cache(0);
  const int64_t kept = a.stats().cached_bytes;
  TestStream stream;
  set_current_cuda_stream(0, stream.get());
  void* p = a.allocate(6 << 20);
  a.deallocate(p, 6 << 20);
  CUDA_OK(cudaStreamSynchronize(stream.get()));
  ASSERT_EQ(a.stats().cached_bytes, kept + (20 << 20));
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
  EXPECT_EQ(a.stats().cached_bytes, kept) << "the cache was not freed before the retry";
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
