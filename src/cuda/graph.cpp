// cuda::Graph (cuda/cuda.h): a CUDA graph captured on a private stream whose
// memory is a private pool of the caching allocator. The model-level logic
// (warm-up, static inputs and outputs) is in runtime/cuda_graph.cpp.
#include <memory>
#include <string>

#include "cuda/cuda.h"
#include "cuda/runtime.h"

namespace aotrt::cuda {

struct Graph::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;  // private: only this graph queues work on it
  cudaEvent_t fork = nullptr;     // wait_for: the private stream after another
  // Recorded after the last work that used the graph's memory (warm-up runs
  // on the private stream, then each replay); last_stream is where.
  cudaEvent_t last = nullptr;
  cudaStream_t last_stream = nullptr;
  bool last_recorded = false;
  bool capturing = false;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

Graph::Graph(int device_index) {
  check_device_index(device_index, "cuda::Graph");
  DeviceGuard guard(device_index);
  auto impl = std::make_unique<Impl>();
  impl->device = device_index;
  // Non-blocking: work on the legacy default stream neither waits for nor
  // joins a capture of this stream.
  AOTRT_CUDA_CHECK(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking));
  try {
    AOTRT_CUDA_CHECK(cudaEventCreateWithFlags(&impl->fork, cudaEventDisableTiming));
    AOTRT_CUDA_CHECK(cudaEventCreateWithFlags(&impl->last, cudaEventDisableTiming));
    set_private_pool(device_index, impl->stream, true);
  } catch (...) {
    if (impl->fork != nullptr) (void)cudaEventDestroy(impl->fork);
    if (impl->last != nullptr) (void)cudaEventDestroy(impl->last);
    (void)cudaStreamDestroy(impl->stream);
    (void)cudaGetLastError();
    throw;
  }
  impl_ = impl.release();
}

Graph::~Graph() {
  if (impl_ == nullptr) return;
  Impl& g = *impl_;
  try {
    DeviceGuard guard(g.device);
    abandon_capture();
    // The pool's blocks are freed below: nothing may still run on them.
    if (g.last_recorded) (void)cudaEventSynchronize(g.last);
    (void)cudaStreamSynchronize(g.stream);
    if (g.exec != nullptr) (void)cudaGraphExecDestroy(g.exec);
    if (g.graph != nullptr) (void)cudaGraphDestroy(g.graph);
    set_private_pool(g.device, g.stream, false);
    forget_stream(g.device, g.stream);  // a block still live keeps its segment (Note [A stream that goes away])
    (void)cudaEventDestroy(g.fork);
    (void)cudaEventDestroy(g.last);
    (void)cudaStreamDestroy(g.stream);
    (void)cudaGetLastError();
  } catch (...) {
    // The runtime is gone (process exit) or the device is broken.
  }
  delete impl_;
}

int Graph::device() const { return impl_->device; }

void* Graph::stream() const { return impl_->stream; }

void Graph::wait_for(void* stream) {
  Impl& g = *impl_;
  DeviceGuard guard(g.device);
  const auto other = static_cast<cudaStream_t>(stream);
  if (other == g.stream) return;
  AOTRT_CUDA_CHECK(cudaEventRecord(g.fork, other));
  AOTRT_CUDA_CHECK(cudaStreamWaitEvent(g.stream, g.fork, 0));
}

void Graph::prepare(void* stream) {
  Impl& g = *impl_;
  const auto s = static_cast<cudaStream_t>(stream);
  if (!g.last_recorded || g.last_stream == s) return;  // one stream orders itself
  DeviceGuard guard(g.device);
  AOTRT_CUDA_CHECK(cudaStreamWaitEvent(s, g.last, 0));
}

void Graph::begin_capture() {
  Impl& g = *impl_;
  AOTRT_CHECK(g.exec == nullptr && !g.capturing, kInternal,
              "cuda::Graph::begin_capture: already captured");
  DeviceGuard guard(g.device);
  AOTRT_CUDA_CHECK(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeThreadLocal));
  g.capturing = true;
}

void Graph::end_capture(const std::string& what) {
  Impl& g = *impl_;
  AOTRT_CHECK(g.capturing, kInternal, "cuda::Graph::end_capture: not capturing");
  DeviceGuard guard(g.device);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(g.stream, &graph);
  g.capturing = false;
  if (ended != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    AOTRT_FAIL(kUnsupported, what, ": the run could not be captured into a CUDA graph: "
               "cudaStreamEndCapture failed: ", cudaGetErrorName(ended), " (",
               cudaGetErrorString(ended), "); a call during the run that the capture does not "
               "allow (a host wait, a device allocation, a copy to pageable host memory) "
               "broke it");
  }
  AOTRT_CHECK(graph != nullptr, kBackend, what, ": cudaStreamEndCapture returned no graph");
  g.graph = graph;
  const cudaError_t made = cudaGraphInstantiate(&g.exec, g.graph, 0);
  if (made != cudaSuccess) {
    (void)cudaGetLastError();
    g.exec = nullptr;
    AOTRT_FAIL(kBackend, what, ": cudaGraphInstantiate of the captured run failed: ",
               cudaGetErrorName(made), " (", cudaGetErrorString(made), ")");
  }
  // Uploads now, so that the first replay does not pay for it.
  AOTRT_CUDA_CHECK(cudaGraphUpload(g.exec, g.stream));
  // The first replay comes after the warm-up runs and the upload.
  AOTRT_CUDA_CHECK(cudaEventRecord(g.last, g.stream));
  g.last_stream = g.stream;
  g.last_recorded = true;
}

void Graph::abandon_capture() noexcept {
  Impl& g = *impl_;
  if (!g.capturing) return;
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(g.stream, &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  g.capturing = false;
}

bool Graph::captured() const { return impl_ != nullptr && impl_->exec != nullptr; }

uint64_t Graph::pool_bytes() const {
  return static_cast<uint64_t>(stream_reserved_bytes(impl_->device, impl_->stream));
}

void Graph::replay(void* stream) {
  Impl& g = *impl_;
  AOTRT_CHECK(g.exec != nullptr, kInternal, "cuda::Graph::replay before a capture");
  const auto s = static_cast<cudaStream_t>(stream);
  DeviceGuard guard(g.device);
  AOTRT_CUDA_CHECK(cudaGraphLaunch(g.exec, s));
  // Only the next prepare() on another stream, and the destructor, wait for it.
  AOTRT_CUDA_CHECK(cudaEventRecord(g.last, s));
  g.last_stream = s;
  g.last_recorded = true;
}

Graph::OnPrivateStream::OnPrivateStream(const Graph& graph)
    : device_(graph.device()), previous_(current_cuda_stream(graph.device())) {
  set_current_cuda_stream(device_, static_cast<cudaStream_t>(graph.stream()));
}

Graph::OnPrivateStream::~OnPrivateStream() {
  try {
    set_current_cuda_stream(device_, static_cast<cudaStream_t>(previous_));
  } catch (...) {
    // device_ was checked when this was made; nothing else can throw.
  }
}

}  // namespace aotrt::cuda
