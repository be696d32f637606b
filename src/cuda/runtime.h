// The CUDA backend's internal API, shared by its files (allocator, streams,
// copy kernels, library ops, shims). Only compiled with -DAOTRT_CUDA=ON.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "cuda/cuda.h"

// Quotes the failing call, file and line: AOTRT_CUDA_CHECK(cudaMemcpyAsync(...)).
#define AOTRT_CUDA_CHECK(expr)                                                          \
  do {                                                                                  \
    const cudaError_t aotrt_err_ = (expr);                                              \
    if (aotrt_err_ != cudaSuccess) {                                                    \
      (void)cudaGetLastError(); /* clear a sticky-free error so later calls work */     \
      AOTRT_FAIL(kBackend, #expr, " failed: ", cudaGetErrorString(aotrt_err_), " (",    \
                 __FILE__, ":", __LINE__, ")");                                         \
    }                                                                                   \
  } while (0)

namespace aotrt::cuda {

// --- Devices and streams (stream.cpp) -----------------------------------------------
// Each thread has a current stream per device; it starts as the legacy
// default stream (nullptr) until a stream guard sets another.
cudaStream_t current_cuda_stream(int device_index);
void set_current_cuda_stream(int device_index, cudaStream_t stream);
void set_current_device(int device_index);
int device_count();
// Throws kInvalidArgument naming `what` unless 0 <= device_index < device_count().
void check_device_index(int device_index, const char* what);

// Makes device_index the calling thread's current device for its scope and
// restores the previous one on exit (a no-op when it already is current).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device_index);
  ~DeviceGuard();  // never throws
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};
// The device of a CUDA view (its storage's index, never -1).
inline int device_of(const StridedView& v) { return v.device.index; }

// --- Memory (allocator.cpp) ------------------------------------------------------------
// Note [CUDA caching allocator]
// cudaMalloc'd segments are carved into blocks (Note [Block sizes and reuse]
// in cuda/allocator.cpp); blocks freed by a Storage go back to a per-device,
// per-stream cache and are reused by later allocations of the same stream, so
// a steady-state run makes no cudaMalloc or cudaFree. A segment belongs to
// the stream current when it was allocated, and so does every block carved
// from it; reuse on that stream is ordered by the stream itself.
class CachingAllocator;  // implements aotrt::Allocator
// Frees every wholly free segment of a device (cudaFree) but those of CUDA
// graphs' private pools; a segment holding a live block stays.
void empty_cache(int device_index);
// What the caching allocator of a device did with the driver, beyond
// Allocator::stats(): tests and benchmarks check reuse with these.
struct CachingAllocatorCounters {
  int64_t cuda_mallocs = 0;        // successful cudaMalloc calls
  int64_t cuda_frees = 0;          // cudaFree calls (wholly free segments released)
  int64_t cache_hits = 0;          // allocations served without a cudaMalloc
  int64_t cross_stream_reuses = 0; // of those, a segment moved from another stream
  int64_t reserved_bytes = 0;      // live + cached: what cudaMalloc handed us
};
CachingAllocatorCounters allocator_counters(int device_index);

// Note [Private pools for graph capture]
// A CUDA graph replays with the addresses its capture got from the allocator,
// so every block the captured run used must stay the graph's while the graph
// lives, even after the run freed it. A stream marked private keeps its
// segments: a block freed on it records no event, so no other stream ever
// takes its segment; and the private stream takes no other stream's segments
// (that needs cudaEventQuery, which a capture forbids). Blocks of its own
// segments are split and merged as any stream's, in the same order in the
// warm-up runs and the capture. While a stream captures, a cache miss throws
// instead of calling cudaMalloc: warm-up runs fill the cache before the
// capture (see Note [CUDA graph mode] in runtime/cuda_graph.h). empty_cache
// and the out-of-memory retry leave a private pool's segments alone;
// unmarking frees its wholly free segments (cudaFree): the stream must be
// idle. A segment that still holds a live block stays with the stream, now an
// ordinary one.
void set_private_pool(int device_index, cudaStream_t stream, bool is_private);
bool is_private_pool(int device_index, cudaStream_t stream);
// The bytes of the segments a stream holds (a graph's private pool).
int64_t stream_reserved_bytes(int device_index, cudaStream_t stream);

// Note [A stream that goes away]
// The allocator keeps each segment under the stream it was made on (Note [Cross-stream
// reuse]), and a thread's cuBLASLt workspaces are kept per stream. A stream destroyed while
// they still name it would have its handle passed to cudaEventRecord by a later free: a
// use after free in the driver (the unit tests died so at exit, and the Triton backend's
// instance streams did so after an unload). So whoever destroys a stream that aotrt ran work
// on calls forget_stream (cuda/cuda.h; aotrt::forget_cuda_stream for users) first, and:
// - the stream's segments, live blocks and all, go to an owner no stream has: each gets its
//   event recorded on the stream then, which completes once the work queued there so far
//   has run. A later free in such a segment records nothing; once wholly free and its event
//   complete, the segment moves to whichever stream asks, as any idle segment does. (A block
//   live at that point and then used on another stream is not tracked, as before.)
// - a private pool's mark is dropped;
// - every thread drops its cuBLASLt workspaces at its next GEMM (a count of forgotten
//   streams, compared there), so a new stream that gets the same handle does not reuse a
//   workspace that work queued on the old one may still use.
// Work already queued on the stream is not waited for.
void forget_stream_memory(int device_index, cudaStream_t stream);

// A temporary device buffer from the caching allocator, stream-ordered on the
// current stream; freed (returned to the cache) when it goes out of scope.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device_index, size_t nbytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

 private:
  int device_ = 0;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
};

// --- Copy kernels (copy.cu) ---------------------------------------------------------------
// All on `stream`, all with 64-bit indexing and dims merged where the layout
// allows; dst and src have the same sizes (src may have stride-0 dims).
// Device-to-device strided copy with dtype conversion (both views on one device).
void copy_device(const StridedView& dst, const StridedView& src, cudaStream_t stream);
// Gathers any device view into a dense row-major device buffer of its dtype.
void gather(void* dense_dst, const StridedView& src, cudaStream_t stream);
// Scatters a dense row-major device buffer into any device view of its dtype.
void scatter(const StridedView& dst, const void* dense_src, cudaStream_t stream);
// Writes zero to every element of a device view.
// Writes `element` (dst.itemsize() bytes, already in dst's dtype) to every
// element of a CUDA view; fill_zero_device writes zeros.
void fill_device(const StridedView& dst, const void* element, cudaStream_t stream);
void fill_zero_device(const StridedView& dst, cudaStream_t stream);
// Whether copy_device converts src to dst: the same dtype always; otherwise
// between bool, uint8, int8..int64, float16, bfloat16, float32, float64.
bool can_convert_device(ScalarType dst, ScalarType src);

// A dense view over a DeviceBuffer holding a packed copy of `src` (gathered on
// `stream`) - or `src` itself when it is already dense row-major.
struct PackedInput {
  DeviceBuffer buffer;  // empty when no copy was needed
  StridedView view;     // dense row-major view to hand to a library
  std::vector<int64_t> strides;  // storage for view.strides when packed
};
PackedInput pack_if_needed(const StridedView& src, cudaStream_t stream);

// --- Library ops (matmul.cpp, conv.cpp, attention.cu; handles.cpp) -----------------------
// Copies the library ops made on the calling thread: every operand they had
// to pack (gather) and every result they wrote back through a temporary
// (scatter) adds one. Tests read it to prove that an op took a view as it is.
uint64_t pack_count();

}  // namespace aotrt::cuda
