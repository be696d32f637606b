// What the rest of aotrt asks of the CUDA backend. A build without CUDA links
// cuda/no_cuda.cpp instead, whose functions say that CUDA was not built.
#pragma once

#include <cstdint>
#include <string>

#include "core/allocator.h"
#include "core/tensor.h"

namespace aotrt::cuda {

// True when aotrt was built with the CUDA backend.
bool built();

// Why a build without CUDA refuses every CUDA entry point (no_cuda.cpp, and
// the op dispatch of ops/dispatch.h).
inline constexpr const char* kNotBuiltMessage =
    "this aotrt was built without CUDA (configure with -DAOTRT_CUDA=ON on a "
    "machine with the CUDA toolkit)";

// The caching allocator of one device.
Allocator& allocator(int device_index);

// The calling thread's current device (cudaGetDevice).
int current_device();

// The calling thread's current stream on a device, as the cudaStream_t a CUDA
// model's Run takes (nullptr: the legacy default stream).
void* current_stream(int device_index);

// Copies between any two same-sized strided views where at least one side
// is CUDA memory, converting dtypes, on the current stream of the CUDA side.
// Host memory on the other side is staged; nothing waits for the host
// except a device-to-host copy into memory the caller reads next.
void copy(const StridedView& dst, const StridedView& src);

// Makes the CUDA driver and runtime symbols a model .so imports (cuModuleLoadData,
// cuLaunchKernel, cudaMalloc, ...) visible to it: dlopens libcuda.so.1 and
// aotrt's libcudart with RTLD_GLOBAL. Called before a CUDA model is dlopened;
// throws kBackend naming the library when the driver is absent.
void expose_runtime_symbols();

// Writes zero to every element of a CUDA view, on the current stream.
void fill_zero(const StridedView& dst);
// Writes `element` (dst.itemsize() bytes of dst's dtype) to every element of
// a CUDA view, on the current stream, without a host round trip.
void fill(const StridedView& dst, const void* element);

// Waits until the work queued so far on the calling thread's current stream
// of a device has finished (for benchmarks and callers of the async API;
// nothing inside a run calls it).
void synchronize(int device_index);
// Waits until all work queued on a device, on every stream, has finished
// (before memory that runs on any stream may still read is reused).
void synchronize_device(int device_index);

// cudaMalloc calls the caching allocator of a device has made so far:
// benchmarks and tests check that a steady-state run makes none.
int64_t driver_allocations(int device_index);

// cudaProfilerStart / cudaProfilerStop: bound the part of a program that a
// profiler started with capture off (ncu --profile-from-start off, nsys
// --capture-range=cudaProfilerApi) records. aotrt bench --profiler-range.
void profiler_range(bool start);

// The kernel modules model .so files loaded (Note [Kernel modules of a
// model] in cuda/modules.cpp): how many are loaded now, and unloading those
// of one model, which the runtime does after its container is gone and
// before dlclose.
size_t loaded_module_count();
void unload_model_modules(void* so_handle) noexcept;

// Note [Pooled streams]
// One of a fixed set of non-blocking streams of a device, handed out in
// turn, made at first use and never destroyed (as c10's stream pool): the
// caching allocator keeps blocks per stream and records frees on it, so a
// stream owned by an object (a generation sequence) would have to be
// forgotten before it goes (Note [A stream that goes away] in
// cuda/runtime.h) and its memory would sit idle until its work ran.
void* pooled_stream(int device_index);

// Call before destroying a stream (a cudaStream_t) that aotrt ran work on: the memory and
// workspaces aotrt keeps for it stop naming it (Note [A stream that goes away] in
// cuda/runtime.h). Does not wait for the stream. Never throws.
void forget_stream(int device_index, void* stream) noexcept;

// Host memory that device-to-host copies fill without the host waiting
// (cudaHostAlloc), freed with this object.
class PinnedHostBuffer {
 public:
  explicit PinnedHostBuffer(size_t nbytes);
  ~PinnedHostBuffer();
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;
  void* data() const { return data_; }
  size_t size() const { return nbytes_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
};

// An event of a device (timing off): recorded on a stream, waited for by the
// host.
class Event {
 public:
  explicit Event(int device_index);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(void* stream);
  // Waits until the work queued before the last record() has finished.
  void synchronize();

 private:
  int device_;
  void* event_ = nullptr;
};

// Copies `nbytes` of device memory into pinned host memory, queued on
// `stream`; the host reads it after an Event recorded next on that stream.
void copy_to_host_async(void* dst, const void* src, size_t nbytes, int device_index, void* stream);

// Makes `stream` the calling thread's current stream of `device_index` for
// its scope (Note [Current stream] in cuda/stream.cpp).
class StreamScope {
 public:
  StreamScope(int device_index, void* stream);
  ~StreamScope();  // never throws
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  int device_;
  void* previous_;
};

// A CUDA graph captured from the work queued on a private stream, replayed
// with one cudaGraphLaunch (cuda/graph.cpp). See Note [CUDA graph mode] in
// runtime/cuda_graph.h for how a model uses it.
class Graph {
 public:
  // Creates the private stream and reserves its memory as a private pool
  // (Note [Private pools for graph capture] in cuda/runtime.h).
  explicit Graph(int device_index);
  // Waits for the last replay, then frees the graph, the stream and every
  // cached block of its pool. Memory the caller still holds from the pool
  // must be freed first.
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  int device() const;
  // The private stream, as a cudaStream_t: warm-up runs and the capture go here.
  void* stream() const;
  // Orders the private stream after the work queued so far on `stream` (an
  // event; the host does not wait).
  void wait_for(void* stream);
  // Orders `stream` after everything that used the graph's memory so far:
  // the warm-up runs on the private stream, or the last replay when that was
  // on another stream. Call it before writing the graph's static inputs.
  void prepare(void* stream);
  // Starts capturing the private stream (thread-local mode: a host wait,
  // driver allocation or other unsafe call from this thread makes the capture
  // fail). Allocations from the pool must hit its cache meanwhile.
  void begin_capture();
  // Ends the capture and instantiates the graph; throws naming the CUDA
  // error when the capture was broken. `what` says who captured.
  void end_capture(const std::string& what);
  // Ends a capture that failed on the host side, discarding what it recorded.
  void abandon_capture() noexcept;
  bool captured() const;
  // The bytes of device memory its private pool holds.
  uint64_t pool_bytes() const;
  // Launches the graph on `stream` (after prepare(stream)). The host does
  // not wait.
  void replay(void* stream);

  // Makes the private stream the calling thread's current stream of the
  // graph's device for its scope, so that memory allocated meanwhile comes
  // from the private pool.
  class OnPrivateStream {
   public:
    explicit OnPrivateStream(const Graph& graph);
    ~OnPrivateStream();  // never throws
    OnPrivateStream(const OnPrivateStream&) = delete;
    OnPrivateStream& operator=(const OnPrivateStream&) = delete;

   private:
    int device_;
    void* previous_;
  };

 private:
  struct Impl;
  Impl* impl_ = nullptr;
};

}  // namespace aotrt::cuda
