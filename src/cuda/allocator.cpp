// The CUDA caching allocator: one per device. See Note [CUDA caching allocator]
// in cuda/runtime.h for the idea; the rules are below.
//
// Note [Block sizes and reuse]
// Requests are rounded up: to 512 bytes up to 1 MiB, to 2 MiB above (the
// granularity cudaMalloc maps large blocks with anyway). Each block is one
// cudaMalloc; blocks are never split. A free block serves a later request of
// rounded size r when it is the smallest cached block of at least r on the
// same stream and wastes little: at most 2r for small requests, at most
// r + r/4 for large ones. live_bytes and cached_bytes count block sizes, so
// live + cached is exactly what the allocator holds from cudaMalloc.
//
// Note [Cross-stream reuse]
// A Storage is freed when its last handle goes, which can be while kernels
// that use the block are still queued on the stream it was allocated on.
// Reusing it on that same stream is safe: the stream runs the old kernels
// before the new user's. Another stream has no such order, so on free we
// record an event on the block's stream, and hand the block to another
// stream only once cudaEventQuery says that event completed. Nothing ever
// blocks the host. (A block used on a second stream by its owner, as
// torch's record_stream allows, is not tracked: generated code uses one
// stream per run.)
//
// Note [Out of memory]
// When cudaMalloc fails, every cached block of the device is freed
// (cudaFree waits for the device, so no kernel still uses them) and the
// cudaMalloc is tried once more; if that fails too, Error(kOutOfMemory)
// names the size asked for and what the allocator holds. set_limit() caps
// live bytes and fails the same way without touching the device.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cuda_profiler_api.h>

#include "cuda/runtime.h"

namespace aotrt::cuda {
namespace {

constexpr size_t kSmallRequest = size_t{1} << 20;
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = size_t{2} << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

size_t block_size_for(size_t nbytes) {
  return nbytes <= kSmallRequest ? round_up(nbytes, kSmallRound) : round_up(nbytes, kLargeRound);
}

// Whether a cached block of `size` bytes may serve a request rounded to `want`.
bool fits(size_t size, size_t want) {
  if (size < want) return false;
  return want <= kSmallRequest ? size <= 2 * want : size <= want + want / 4;
}

}  // namespace

class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}

  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    const size_t size = block_size_for(nbytes);
    const cudaStream_t stream = current_cuda_stream(device_);
    std::lock_guard<std::mutex> lock(mu_);
    if (exceeds_limit(stats_.live_bytes, size, limit_)) {
      ++stats_.failed_allocations;
      AOTRT_FAIL(kOutOfMemory, "CUDA allocator (device ", device_, "): cannot allocate ", nbytes,
                 " bytes (", size, " rounded): the limit set with set_limit is ", limit_,
                 " bytes and ", stats_.live_bytes, " bytes are live (", stats_.cached_bytes,
                 " more are cached)");
    }
    Block block;
    if (!take_cached(stream, size, &block)) {
      refuse_if_capturing(stream, nbytes, size);
      block.ptr = device_malloc(nbytes, size);
      block.size = size;
      block.stream = stream;
    }
    live_.emplace(block.ptr, block);
    stats_.live_bytes += static_cast<int64_t>(block.size);
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.live_bytes);
    ++stats_.live_allocations;
    ++stats_.total_allocations;
    return block.ptr;
  }

  void deallocate(void* ptr, size_t nbytes) noexcept override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      std::fprintf(stderr, "aotrt: CUDA allocator (device %d): free of %p (%zu bytes), which it "
                   "did not hand out; ignored\n", device_, ptr, nbytes);
      return;
    }
    Block block = it->second;
    live_.erase(it);
    // Note [Private pools for graph capture]: no event, so no other stream takes it.
    const bool keep = !private_.empty() && private_.count(block.stream) != 0;
    block.freed = keep ? nullptr : record_free(block.stream);
    stats_.live_bytes -= static_cast<int64_t>(block.size);
    stats_.cached_bytes += static_cast<int64_t>(block.size);
    --stats_.live_allocations;
    free_[block.stream].emplace(block.size, block);
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
    auto s = free_.find(stream);
    if (s == free_.end()) return;
    DeviceGuard guard(device_);
    for (auto& [size, block] : s->second) {
      if (cudaFree(block.ptr) != cudaSuccess) (void)cudaGetLastError();
      stats_.cached_bytes -= static_cast<int64_t>(block.size);
      ++counters_.cuda_frees;
    }
    free_.erase(s);
  }

  bool is_private(cudaStream_t stream) const {
    std::lock_guard<std::mutex> lock(mu_);
    return private_.count(stream) != 0;
  }

  CachingAllocatorCounters counters() const {
    std::lock_guard<std::mutex> lock(mu_);
    CachingAllocatorCounters c = counters_;
    c.reserved_bytes = stats_.live_bytes + stats_.cached_bytes;
    return c;
  }

 private:
  struct Block {
    void* ptr = nullptr;
    size_t size = 0;
    cudaStream_t stream = nullptr;  // the stream whose order protects the block
    cudaEvent_t freed = nullptr;    // recorded on `stream` at free; null: not recorded
  };
  using SizeMap = std::multimap<size_t, Block>;

  // Takes a cached block for `stream` (Notes [Block sizes and reuse] and
  // [Cross-stream reuse]); false on a miss. Called with mu_ held.
  bool take_cached(cudaStream_t stream, size_t size, Block* out) {
    if (auto s = free_.find(stream); s != free_.end()) {
      auto it = s->second.lower_bound(size);
      if (it != s->second.end() && fits(it->first, size) && within_limit(it->first)) {
        *out = take(s->second, it);
        ++counters_.cache_hits;
        return true;
      }
    }
    // A private pool keeps to its own blocks (Note [Private pools for graph capture]).
    if (!private_.empty() && private_.count(stream) != 0) return false;
    // Another stream's block, once its free has completed on the device.
    SizeMap* best_map = nullptr;
    SizeMap::iterator best;
    for (auto& [other, blocks] : free_) {
      if (other == stream) continue;
      for (auto it = blocks.lower_bound(size); it != blocks.end() && fits(it->first, size); ++it) {
        if (best_map != nullptr && it->first >= best->first) break;
        if (!within_limit(it->first) || !free_completed(it->second)) continue;
        best_map = &blocks;
        best = it;
        break;
      }
    }
    if (best_map == nullptr) return false;
    *out = take(*best_map, best);
    out->stream = stream;
    ++counters_.cache_hits;
    ++counters_.cross_stream_reuses;
    return true;
  }

  Block take(SizeMap& blocks, SizeMap::iterator it) {
    Block block = it->second;
    blocks.erase(it);
    if (block.freed != nullptr) events_.push_back(block.freed);
    block.freed = nullptr;
    stats_.cached_bytes -= static_cast<int64_t>(block.size);
    return block;
  }

  bool within_limit(size_t size) const {
    return !exceeds_limit(stats_.live_bytes, size, limit_);
  }

  static bool free_completed(const Block& block) {
    if (block.freed == nullptr) return false;  // never recorded: only its own stream may reuse it
    const cudaError_t e = cudaEventQuery(block.freed);
    if (e == cudaSuccess) return true;
    (void)cudaGetLastError();  // cudaErrorNotReady, or a failure: not reusable now either way
    return false;
  }

  // An event recorded on `stream` now, or null if that failed (then the
  // block stays with its stream). Called with mu_ held; never throws.
  cudaEvent_t record_free(cudaStream_t stream) noexcept {
    try {
      DeviceGuard guard(device_);  // the legacy default stream is the current device's
      cudaEvent_t event = nullptr;
      if (!events_.empty()) {
        event = events_.back();
        events_.pop_back();
      } else if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
      }
      if (cudaEventRecord(event, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        events_.push_back(event);
        return nullptr;
      }
      return event;
    } catch (...) {
      return nullptr;  // the runtime is gone (process exit) or the device is broken
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

  // cudaMalloc of `size` bytes, with Note [Out of memory]. Called with mu_ held.
  void* device_malloc(size_t nbytes, size_t size) {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    cudaError_t e = cudaMalloc(&ptr, size);
    if (e == cudaErrorMemoryAllocation && stats_.cached_bytes > 0) {
      (void)cudaGetLastError();
      release_cached();
      e = cudaMalloc(&ptr, size);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      ++stats_.failed_allocations;
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
      const bool oom = e == cudaErrorMemoryAllocation;
      throw Error(oom ? ErrorKind::kOutOfMemory : ErrorKind::kBackend,
                  detail::concat("CUDA allocator (device ", device_, "): cannot allocate ",
                                 nbytes, " bytes (", size, " rounded): cudaMalloc failed: ",
                                 cudaGetErrorString(e), "; this allocator holds ",
                                 stats_.live_bytes, " live bytes in ", stats_.live_allocations,
                                 " blocks and ", stats_.cached_bytes,
                                 " cached bytes; the device reports ", free_bytes,
                                 " bytes free of ", total_bytes));
    }
    ++counters_.cuda_mallocs;
    return ptr;
  }

  // cudaFree of every cached block. Called with mu_ held.
  // A private pool's blocks stay: a captured graph still writes to them
  // (Note [Private pools for graph capture]).
  void release_cached() {
    DeviceGuard guard(device_);
    for (auto it = free_.begin(); it != free_.end();) {
      if (private_.count(it->first) != 0) {
        ++it;
        continue;
      }
      for (auto& [size, block] : it->second) {
        if (cudaFree(block.ptr) != cudaSuccess) (void)cudaGetLastError();
        if (block.freed != nullptr) events_.push_back(block.freed);
        stats_.cached_bytes -= static_cast<int64_t>(block.size);
        ++counters_.cuda_frees;
      }
      it = free_.erase(it);
    }
  }

  const int device_;
  mutable std::mutex mu_;
  std::unordered_map<void*, Block> live_;
  std::map<cudaStream_t, SizeMap> free_;
  std::vector<cudaEvent_t> events_;  // spares for record_free
  std::unordered_set<cudaStream_t> private_;  // Note [Private pools for graph capture]
  AllocatorStats stats_;
  CachingAllocatorCounters counters_;
  int64_t limit_ = 0;
};

namespace {

CachingAllocator& caching_allocator(int device_index) {
  check_device_index(device_index, "CUDA allocator");
  // Created once, never destroyed: storages may be freed during exit.
  static const std::vector<CachingAllocator*> allocators = [] {
    std::vector<CachingAllocator*> v;
    for (int d = 0; d < device_count(); ++d) v.push_back(new CachingAllocator(d));
    return v;
  }();
  return *allocators[device_index];
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

void set_private_pool(int device_index, cudaStream_t stream, bool is_private) {
  caching_allocator(device_index).set_private(stream, is_private);
}

bool is_private_pool(int device_index, cudaStream_t stream) {
  return caching_allocator(device_index).is_private(stream);
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
