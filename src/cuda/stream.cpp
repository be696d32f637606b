// Devices and the per-thread current stream.
//
// Note [Current stream]
// Each thread has, for each device, a current stream: the legacy default
// stream (nullptr) until a stream guard (aoti_torch_create_cuda_stream_guard,
// which generated run_impl opens with) installs another. Everything aotrt
// enqueues - kernels, copies, frees recorded by the caching allocator - goes
// to the current stream of the device it works on, so one run is ordered by
// that one stream and needs no host synchronisation.
#include <array>
#include <mutex>

#include "cuda/handles.h"
#include "cuda/runtime.h"

namespace aotrt::cuda {
namespace {

constexpr int kMaxDevices = 64;
thread_local std::array<cudaStream_t, kMaxDevices> t_current_stream{};

}  // namespace

int device_count() {
  // The count cannot change while the process runs; 0 when there is no driver.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n < kMaxDevices ? n : kMaxDevices;
  }();
  return count;
}

void check_device_index(int device_index, const char* what) {
  const int count = device_count();
  AOTRT_CHECK(count > 0, kBackend, what, ": no CUDA device is visible to this process");
  AOTRT_CHECK(device_index >= 0 && device_index < count, kInvalidArgument, what,
              ": CUDA device index ", device_index, " is out of range (", count,
              count == 1 ? " device is" : " devices are", " visible)");
}

int current_device() {
  int d = 0;
  AOTRT_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_current_device(int device_index) {
  check_device_index(device_index, "set_current_device");
  AOTRT_CUDA_CHECK(cudaSetDevice(device_index));
}

cudaStream_t current_cuda_stream(int device_index) {
  check_device_index(device_index, "current_cuda_stream");
  return t_current_stream[device_index];
}

void set_current_cuda_stream(int device_index, cudaStream_t stream) {
  check_device_index(device_index, "set_current_cuda_stream");
  t_current_stream[device_index] = stream;
}

void synchronize(int device_index) {
  const cudaStream_t stream = current_cuda_stream(device_index);
  DeviceGuard guard(device_index);  // the legacy default stream is the current device's
  AOTRT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void synchronize_device(int device_index) {
  DeviceGuard guard(device_index);
  AOTRT_CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceGuard::DeviceGuard(int device_index) {
  check_device_index(device_index, "DeviceGuard");
  int current = 0;
  AOTRT_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_index) {
    AOTRT_CUDA_CHECK(cudaSetDevice(device_index));
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace aotrt::cuda

namespace aotrt::cuda {

void* pooled_stream(int device_index) {
  // Note [Pooled streams].
  constexpr int kStreams = 16;
  struct Pool {
    std::mutex mu;
    std::array<cudaStream_t, kStreams> streams{};
    int next = 0;
  };
  static std::array<Pool, kMaxDevices> pools;
  check_device_index(device_index, "pooled_stream");
  Pool& p = pools[device_index];
  std::lock_guard<std::mutex> lock(p.mu);
  cudaStream_t& s = p.streams[p.next];
  p.next = (p.next + 1) % kStreams;
  if (s == nullptr) {
    DeviceGuard guard(device_index);
    AOTRT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  }
  return s;
}

void forget_stream(int device_index, void* stream) noexcept {
  try {
    forget_stream_memory(device_index, static_cast<cudaStream_t>(stream));
  } catch (...) {
    // A device index out of range: aotrt never allocated on it.
  }
  forget_stream_workspaces();
}

PinnedHostBuffer::PinnedHostBuffer(size_t nbytes) : nbytes_(nbytes) {
  AOTRT_CUDA_CHECK(cudaHostAlloc(&data_, nbytes > 0 ? nbytes : 1, cudaHostAllocDefault));
}

PinnedHostBuffer::~PinnedHostBuffer() {
  if (data_ != nullptr) (void)cudaFreeHost(data_);
}

Event::Event(int device_index) : device_(device_index) {
  DeviceGuard guard(device_index);
  cudaEvent_t event = nullptr;
  AOTRT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  event_ = event;
}

Event::~Event() {
  if (event_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

void Event::record(void* stream) {
  DeviceGuard guard(device_);
  AOTRT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), static_cast<cudaStream_t>(stream)));
}

void Event::synchronize() {
  AOTRT_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
}

void copy_to_host_async(void* dst, const void* src, size_t nbytes, int device_index, void* stream) {
  DeviceGuard guard(device_index);
  AOTRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost,
                                   static_cast<cudaStream_t>(stream)));
}

StreamScope::StreamScope(int device_index, void* stream)
    : device_(device_index), previous_(current_cuda_stream(device_index)) {
  set_current_cuda_stream(device_, static_cast<cudaStream_t>(stream));
}

StreamScope::~StreamScope() {
  try {
    set_current_cuda_stream(device_, static_cast<cudaStream_t>(previous_));
  } catch (...) {
    // device_ was checked when this was made; nothing else can throw.
  }
}

}  // namespace aotrt::cuda
