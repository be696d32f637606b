// Note [Library call graphs] (cuda/call_graphs.h).
#include "cuda/call_graphs.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "shim/profile.h"

namespace aotrt::cuda {

namespace {

std::atomic<uint64_t> g_next_plan_id{1};

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("AOTRT_LIBRARY_CALL_GRAPHS");
    return v == nullptr || *v == '\0' || std::strcmp(v, "0") != 0;
  }()};
  return on;
}

struct Entry {
  uint32_t sightings = 0;
  bool refused = false;
  cudaGraphExec_t exec = nullptr;
};

// One thread's graphs. Destroyed at thread exit, which for the main thread
// is before the CUDA runtime's own teardown; errors there are ignored.
struct ThreadCallGraphs {
  std::unordered_map<PlanKey, Entry, PlanKeyHash> entries;
  std::vector<cudaStream_t> capture_streams;  // per device, made on first capture
  CallGraphStats stats;

  void clear() noexcept {
    for (auto& [key, e] : entries) {
      if (e.exec != nullptr) (void)cudaGraphExecDestroy(e.exec);
    }
    entries.clear();
  }
  ~ThreadCallGraphs() {
    clear();
    for (size_t d = 0; d < capture_streams.size(); ++d) {
      if (capture_streams[d] == nullptr) continue;
      forget_stream(static_cast<int>(d), capture_streams[d]);  // Note [A stream that goes away]
      (void)cudaStreamDestroy(capture_streams[d]);
    }
    (void)cudaGetLastError();
  }
};

thread_local ThreadCallGraphs t_graphs;

cudaStream_t capture_stream(int device) {
  auto& streams = t_graphs.capture_streams;
  if (streams.size() <= static_cast<size_t>(device)) streams.resize(static_cast<size_t>(device) + 1, nullptr);
  cudaStream_t& s = streams[static_cast<size_t>(device)];
  if (s == nullptr) {
    // Non-blocking: work on the legacy default stream neither waits for nor
    // joins a capture of it.
    AOTRT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  }
  return s;
}

}  // namespace

uint64_t next_library_plan_id() noexcept { return g_next_plan_id.fetch_add(1, std::memory_order_relaxed); }

bool library_call_graphs_enabled() noexcept { return enabled_flag().load(std::memory_order_relaxed); }
void set_library_call_graphs(bool on) noexcept { enabled_flag().store(on, std::memory_order_relaxed); }

CallGraphStats call_graph_stats() noexcept { return t_graphs.stats; }
size_t call_graph_entries() noexcept { return t_graphs.entries.size(); }
void clear_call_graphs() noexcept { t_graphs.clear(); }

namespace detail {

CallGraphStep call_graph_step(const PlanKey& key, int device, cudaStream_t stream,
                              cudaStream_t* capture) {
  ThreadCallGraphs& g = t_graphs;
  if (!library_call_graphs_enabled()) {
    ++g.stats.direct;
    return CallGraphStep::kDirect;
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    ++g.stats.direct;
    return CallGraphStep::kDirect;
  }
  if (status != cudaStreamCaptureStatusNone) {  // the model's graph holds the call
    ++g.stats.direct;
    return CallGraphStep::kDirect;
  }
  auto it = g.entries.find(key);
  if (it == g.entries.end()) {
    if (g.entries.size() >= kMaxCallGraphs) g.clear();
    g.entries.emplace(key, Entry{1, false, nullptr});
    ++g.stats.direct;
    return CallGraphStep::kDirect;
  }
  Entry& e = it->second;
  if (e.exec != nullptr) {
    cudaError_t launched;
    {
      profiling::LibraryCallTimer timer("cudaGraphLaunch (a replayed library call)");
      launched = cudaGraphLaunch(e.exec, stream);
    }
    if (launched == cudaSuccess) {
      ++g.stats.launched;
      return CallGraphStep::kLaunched;
    }
    // Nothing was queued: forget the graph and make the call directly.
    (void)cudaGetLastError();
    (void)cudaGraphExecDestroy(e.exec);
    e.exec = nullptr;
    e.refused = true;
    ++g.stats.direct;
    return CallGraphStep::kDirect;
  }
  if (e.refused || ++e.sightings < 2) {
    ++g.stats.direct;
    return CallGraphStep::kDirect;
  }
  const cudaStream_t s = capture_stream(device);
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)cudaGetLastError();
    e.refused = true;
    ++g.stats.direct;
    return CallGraphStep::kDirect;
  }
  *capture = s;
  return CallGraphStep::kCapture;
}

bool end_call_capture(const PlanKey& key, int device, cudaStream_t stream, bool ok) {
  ThreadCallGraphs& g = t_graphs;
  const cudaStream_t s = g.capture_streams[static_cast<size_t>(device)];
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  cudaGraphExec_t exec = nullptr;
  bool made = ok && ended == cudaSuccess && graph != nullptr &&
              cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  made = made && cudaGraphLaunch(exec, stream) == cudaSuccess;
  if (!made) {
    (void)cudaGetLastError();
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    auto it = g.entries.find(key);
    if (it != g.entries.end()) it->second.refused = true;
    ++g.stats.refused;
    ++g.stats.direct;
    return false;
  }
  ++g.stats.captured;
  ++g.stats.launched;
  auto it = g.entries.find(key);
  if (it == g.entries.end()) {
    (void)cudaGraphExecDestroy(exec);  // freed after it ran
  } else {
    it->second.exec = exec;
  }
  return true;
}

void abandon_call_capture(int device) noexcept {
  ThreadCallGraphs& g = t_graphs;
  if (g.capture_streams.size() <= static_cast<size_t>(device)) return;
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(g.capture_streams[static_cast<size_t>(device)], &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
}

}  // namespace detail

}  // namespace aotrt::cuda
