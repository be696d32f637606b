// The CUDA caching allocator: one per device. See Note [CUDA caching allocator]
// in cuda/runtime.h for the idea; the rules are below.
//
// Note [Block sizes and reuse]
// Memory comes from cudaMalloc in segments carved into blocks by a BlockPool
// (Note [Block pool] in core/block_pool.h, which gives the sizes: PyTorch's
// CUDACachingAllocator's). Requests are rounded up to 512 bytes; one of at
// most 1 MiB takes a block of a 2 MiB segment of its stream's small pool, a
// larger one the best-fitting block of its stream's large pool (segments of
// 20 MiB under 10 MiB, of the request rounded up to 2 MiB from there), split
// when the rest is worth keeping; a freed block merges with its free
// neighbours. So two 1.5625 MiB activations share one 20 MiB segment and count
// 2 x 1.5625 MiB live, as eager PyTorch counts them (when each block was its
// own cudaMalloc rounded to 2 MiB, they counted 2 x 2 MiB). live_bytes counts
// the blocks handed out, cached_bytes the free ones: live + cached is exactly
// what the allocator holds from cudaMalloc.
//
// Note [Cross-stream reuse]
// A Storage is freed when its last handle goes, which can be while kernels
// that use the block are still queued on the stream it was allocated on.
// Reusing it on that same stream is safe: the stream runs the old kernels
// before the new user's. Another stream has no such order, so a segment
// belongs to one stream, and every block carved from it is that stream's.
// The free that leaves a segment wholly free records the segment's one event
// on its stream (re-recording the same event: it completes once that free's
// stream work has run, and the stream ran all earlier work on the segment's
// blocks before it); other frees make no driver call at all (a small CNN
// frees 40-80 blocks a run, mostly inside segments that stay in use). A
// segment moves to another stream only whole: every block of it free and
// merged back, its event recorded at that last free and completed by
// cudaEventQuery; the smallest
// such segment that holds the request moves. A segment with a live block
// never moves, so its free blocks wait for their own stream. Whole segments,
// not blocks, because then one event per segment (made once, re-recorded)
// covers every block, and the blocks of a segment never sit in two streams'
// pools, where merging them would mix two streams' orders. Nothing ever
// blocks the host. (A block used on a second stream by its owner, as
// torch's record_stream allows, is not tracked: generated code uses one
// stream per run.)
//
// Note [Out of memory]
// When cudaMalloc fails, every wholly free cached segment of the device is
// freed (cudaFree waits for the device, so no kernel still uses them) and the
// cudaMalloc is tried once more; if that fails too, Error(kOutOfMemory)
// names the size asked for and what the allocator holds. A segment with a
// live block stays. set_limit() caps live bytes and fails the same way
// without touching the device; under a cap a block is split exactly when the
// rest it would otherwise keep would pass the cap.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cuda_profiler_api.h>

#include "core/block_pool.h"
#include "cuda/runtime.h"

namespace aotrt::cuda {
namespace {

BlockPool::Owner owner_of(cudaStream_t stream) { return reinterpret_cast<BlockPool::Owner>(stream); }

cudaStream_t stream_of(BlockPool::Owner owner) { return reinterpret_cast<cudaStream_t>(owner); }

// The owner of the segments of streams that went away (Note [A stream that goes away]): no
// stream has this handle, so no request is served from its pools and no event is recorded on it.
constexpr BlockPool::Owner kGone = ~BlockPool::Owner{0};

}  // namespace

class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}

  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const cudaStream_t stream = current_cuda_stream(device_);
    std::lock_guard<std::mutex> lock(mu_);
    if (nbytes > BlockPool::kMaxRequest) {
      ++stats_.failed_allocations;
      AOTRT_FAIL(kOutOfMemory, "CUDA allocator (device ", device_, "): cannot allocate ", nbytes,
                 " bytes: more than any device holds");
    }
    const size_t size = BlockPool::round(nbytes);
    if (exceeds_limit(stats_.live_bytes, size, limit_)) {
      ++stats_.failed_allocations;
      AOTRT_FAIL(kOutOfMemory, "CUDA allocator (device ", device_, "): cannot allocate ", nbytes,
                 " bytes (", size, " rounded): the limit set with set_limit is ", limit_,
                 " bytes and ", stats_.live_bytes, " bytes are live (", stats_.cached_bytes,
                 " more are cached)");
    }
    BlockPool::Block* block = take_cached(stream, size);
    if (block == nullptr) {
      refuse_if_capturing(stream, nbytes, size);
      block = new_segment(stream, nbytes, size);
    }
    // Under a cap, a rest that would pass it is split off (Note [Out of memory]).
    const bool exact = exceeds_limit(stats_.live_bytes, pool_.allocated_size(block, size), limit_);
    pool_.allocate(block, size, exact);
    sync_stats();
    ++stats_.total_allocations;
    return reinterpret_cast<void*>(block->addr);
  }

  void deallocate(void* ptr, size_t nbytes) noexcept override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    BlockPool::Block* block = nullptr;
    try {
      block = pool_.free(reinterpret_cast<uintptr_t>(ptr));
    } catch (...) {
      // Out of host memory while indexing the free block: it stays counted as
      // cached but is not reused until its neighbours merge with it.
      std::fprintf(stderr, "aotrt: CUDA allocator (device %d): out of host memory while "
                   "freeing %p\n", device_, ptr);
      sync_stats();
      return;
    }
    if (block == nullptr) {
      std::fprintf(stderr, "aotrt: CUDA allocator (device %d): free of %p (%zu bytes), which it "
                   "did not hand out; ignored\n", device_, ptr, nbytes);
      return;
    }
    BlockPool::Segment& segment = *block->segment;
    // Note [Private pools for graph capture]: no event, so no other stream takes it.
    // Note [Cross-stream reuse]: only a wholly free segment moves, so only the
    // free that empties it records the event.
    // Note [A stream that goes away]: the fence recorded then stays armed.
    if (segment.owner != kGone) {
      const cudaStream_t stream = stream_of(segment.owner);
      segment.fence_armed = !is_private(stream) && segment.wholly_free() && record_free(segment, stream);
    }
    sync_stats();
  }

  // Note [A stream that goes away]. Never throws.
  void forget(cudaStream_t stream) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      private_.erase(stream);
      pool_.hand_over(owner_of(stream), kGone, [&](BlockPool::Segment& s) {
        s.fence_armed = record_free(s, stream);
      });
    } catch (...) {
      // Out of host memory before anything moved: the segments stay the stream's.
    }
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void reset_peak() override {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_bytes = stats_.live_bytes;
  }

  void set_limit(int64_t max_live_bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = max_live_bytes;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached();
  }

  void set_private(cudaStream_t stream, bool is_private) {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_private) {
      private_.insert(stream);
      return;
    }
    private_.erase(stream);
    // Its wholly free segments go back to the driver; one that still holds a
    // live block stays with the stream, now an ordinary one.
    const BlockPool::Owner owner = owner_of(stream);
    release_segments([owner](const BlockPool::Segment& s) { return s.owner == owner; });
  }

  // is_private, for callers outside (cublaslt_workspace).
  bool stream_is_private(cudaStream_t stream) const {
    std::lock_guard<std::mutex> lock(mu_);
    return is_private(stream);
  }

  int64_t reserved_bytes_of(cudaStream_t stream) const {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t bytes = 0;
    const BlockPool::Owner owner = owner_of(stream);
    pool_.for_each_segment([&](const BlockPool::Segment& s) {
      if (s.owner == owner) bytes += static_cast<int64_t>(s.size);
    });
    return bytes;
  }

  CachingAllocatorCounters counters() const {
    std::lock_guard<std::mutex> lock(mu_);
    CachingAllocatorCounters c = counters_;
    c.reserved_bytes = pool_.reserved_bytes();
    return c;
  }

 private:
  bool is_private(cudaStream_t stream) const {
    return !private_.empty() && private_.count(stream) != 0;
  }

  void sync_stats() {
    stats_.live_bytes = pool_.live_bytes();
    stats_.cached_bytes = pool_.cached_bytes();
    stats_.live_allocations = pool_.live_blocks();
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.live_bytes);
  }

  // A free block of `stream`'s pool for a request rounded to `size`, else a
  // wholly free segment of another stream moved to it (Notes [Block sizes and
  // reuse] and [Cross-stream reuse]); null on a miss. Called with mu_ held.
  BlockPool::Block* take_cached(cudaStream_t stream, size_t size) {
    const BlockPool::Owner owner = owner_of(stream);
    if (BlockPool::Block* b = pool_.find_free(owner, size)) {
      ++counters_.cache_hits;
      return b;
    }
    // A private pool keeps to its own segments (Note [Private pools for graph capture]).
    if (is_private(stream)) return nullptr;
    BlockPool::Segment* s = pool_.find_idle_segment(owner, size, [this](const BlockPool::Segment& seg) {
      return seg.fence_armed && !is_private(stream_of(seg.owner)) && free_completed(seg);
    });
    if (s == nullptr) return nullptr;
    pool_.move_segment(s, owner);
    s->fence_armed = false;  // the new stream's own order protects it from here
    ++counters_.cache_hits;
    ++counters_.cross_stream_reuses;
    return s->first;
  }

  static bool free_completed(const BlockPool::Segment& s) {
    const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(s.fence));
    if (e == cudaSuccess) return true;
    (void)cudaGetLastError();  // cudaErrorNotReady, or a failure: not reusable now either way
    return false;
  }

  // Records the segment's event on `stream` (its owner's) now; false if that
  // failed (then the segment stays with its owner). Called with mu_ held; never throws.
  bool record_free(BlockPool::Segment& segment, cudaStream_t stream) noexcept {
    try {
      DeviceGuard guard(device_);  // the legacy default stream is the current device's
      if (segment.fence == nullptr) {
        cudaEvent_t event = nullptr;
        if (!events_.empty()) {
          event = events_.back();
          events_.pop_back();
        } else if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
          (void)cudaGetLastError();
          return false;
        }
        segment.fence = event;
      }
      if (cudaEventRecord(static_cast<cudaEvent_t>(segment.fence), stream) !=
          cudaSuccess) {
        (void)cudaGetLastError();
        return false;
      }
      return true;
    } catch (...) {
      return false;  // the runtime is gone (process exit) or the device is broken
    }
  }

  // A cache miss while `stream` captures a CUDA graph: cudaMalloc is not
  // allowed then (Note [Private pools for graph capture]). Called with mu_ held.
  void refuse_if_capturing(cudaStream_t stream, size_t nbytes, size_t size) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    if (status == cudaStreamCaptureStatusNone) return;
    ++stats_.failed_allocations;
    AOTRT_FAIL(kBackend, "CUDA allocator (device ", device_, "): an allocation of ", nbytes,
               " bytes (", size, " rounded) during CUDA graph capture found no cached block, "
               "and cudaMalloc is not allowed while a stream captures: the run allocated "
               "differently from the warm-up runs before the capture");
  }

  // A new segment of `stream` for a request rounded to `size`: cudaMalloc,
  // with Note [Out of memory]; returns its one free block. Called with mu_ held.
  BlockPool::Block* new_segment(cudaStream_t stream, size_t nbytes, size_t size) {
    const size_t segment = BlockPool::segment_size(size);
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    cudaError_t e = cudaMalloc(&ptr, segment);
    if (e == cudaErrorMemoryAllocation && stats_.cached_bytes > 0) {
      (void)cudaGetLastError();
      release_cached();
      e = cudaMalloc(&ptr, segment);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      ++stats_.failed_allocations;
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
      const bool oom = e == cudaErrorMemoryAllocation;
      throw Error(oom ? ErrorKind::kOutOfMemory : ErrorKind::kBackend,
                  detail::concat("CUDA allocator (device ", device_, "): cannot allocate ",
                                 nbytes, " bytes (", size, " rounded, in a new segment of ",
                                 segment, " bytes): cudaMalloc failed: ", cudaGetErrorString(e),
                                 "; this allocator holds ", stats_.live_bytes, " live bytes in ",
                                 stats_.live_allocations, " blocks and ", stats_.cached_bytes,
                                 " cached bytes; the device reports ", free_bytes,
                                 " bytes free of ", total_bytes));
    }
    ++counters_.cuda_mallocs;
    try {
      BlockPool::Block* b = pool_.add_segment(owner_of(stream), reinterpret_cast<uintptr_t>(ptr),
                                              segment, BlockPool::is_small(size));
      sync_stats();
      return b;
    } catch (...) {
      if (cudaFree(ptr) != cudaSuccess) (void)cudaGetLastError();
      ++counters_.cuda_frees;
      throw;
    }
  }

  // cudaFree of every wholly free segment but a private pool's: a captured
  // graph still writes to those (Note [Private pools for graph capture]).
  // Called with mu_ held.
  void release_cached() {
    release_segments([this](const BlockPool::Segment& s) { return !is_private(stream_of(s.owner)); });
  }

  // cudaFree of every wholly free segment that `select` accepts; its event
  // becomes a spare. Called with mu_ held.
  template <typename Select>
  void release_segments(Select&& select) {
    DeviceGuard guard(device_);
    pool_.release_free_segments(select, [this](const BlockPool::Segment& s) noexcept {
      if (cudaFree(reinterpret_cast<void*>(s.base)) != cudaSuccess) (void)cudaGetLastError();
      if (s.fence != nullptr) keep_spare(static_cast<cudaEvent_t>(s.fence));
      ++counters_.cuda_frees;
    });
    sync_stats();
  }

  void keep_spare(cudaEvent_t event) noexcept {
    try {
      events_.push_back(event);
    } catch (...) {
      if (cudaEventDestroy(event) != cudaSuccess) (void)cudaGetLastError();
    }
  }

  const int device_;
  mutable std::mutex mu_;
  BlockPool pool_;
  std::vector<cudaEvent_t> events_;  // spares for segments' events
  std::unordered_set<cudaStream_t> private_;  // Note [Private pools for graph capture]
  AllocatorStats stats_;
  CachingAllocatorCounters counters_;
  int64_t limit_ = 0;
};

namespace {

CachingAllocator& caching_allocator(int device_index) {
  check_device_index(device_index, "CUDA allocator");
  // Created once, never destroyed, the list too (a static vector was destroyed at exit,
  // and a storage freed after it by another static's destructor read freed memory).
  static const std::vector<CachingAllocator*>* const allocators = [] {
    auto* v = new std::vector<CachingAllocator*>;
    for (int d = 0; d < device_count(); ++d) v->push_back(new CachingAllocator(d));
    return v;
  }();
  return *(*allocators)[device_index];
}

}  // namespace

Allocator& allocator(int device_index) { return caching_allocator(device_index); }

void empty_cache(int device_index) { caching_allocator(device_index).empty_cache(); }

CachingAllocatorCounters allocator_counters(int device_index) {
  return caching_allocator(device_index).counters();
}

int64_t driver_allocations(int device_index) {
  return caching_allocator(device_index).counters().cuda_mallocs;
}

void profiler_range(bool start) {
  AOTRT_CUDA_CHECK(start ? cudaProfilerStart() : cudaProfilerStop());
}

void forget_stream_memory(int device_index, cudaStream_t stream) {
  caching_allocator(device_index).forget(stream);
}

void set_private_pool(int device_index, cudaStream_t stream, bool is_private) {
  caching_allocator(device_index).set_private(stream, is_private);
}

bool is_private_pool(int device_index, cudaStream_t stream) {
  return caching_allocator(device_index).stream_is_private(stream);
}

int64_t stream_reserved_bytes(int device_index, cudaStream_t stream) {
  return caching_allocator(device_index).reserved_bytes_of(stream);
}

DeviceBuffer::DeviceBuffer(int device_index, size_t nbytes)
    : device_(device_index), data_(allocator(device_index).allocate(nbytes)), nbytes_(nbytes) {}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(other.device_),
      data_(std::exchange(other.data_, nullptr)),
      nbytes_(std::exchange(other.nbytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) allocator(device_).deallocate(data_, nbytes_);
    device_ = other.device_;
    data_ = std::exchange(other.data_, nullptr);
    nbytes_ = std::exchange(other.nbytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) allocator(device_).deallocate(data_, nbytes_);
}

}  // namespace aotrt::cuda
