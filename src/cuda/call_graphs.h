// Library calls replayed as CUDA graphs (Note [Library call graphs]).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/plan_key.h"
#include "cuda/runtime.h"

namespace aotrt::cuda {

// Note [Library call graphs]
// In plain mode (no model-level CUDA graph) a cuDNN convolution or a
// cuBLASLt GEMM costs 10-15 us of host time inside the library even with its
// plan cached (cudnnBackendExecute 11.4 us, cublasLtMatmul 9.7 us on the
// H200: bench/results/cuda-profile-2026-12-03.txt), most of a small model's
// run. A call repeats exactly, run after run, when its plan, its operands'
// addresses, its scalars and its workspace do (the caching allocator hands
// out the same addresses in a steady state), so the second sighting of such
// a call is captured, on a private stream of the thread, into a graph of its
// own, and that and every later sighting launch the graph on the caller's
// stream: one cudaGraphLaunch instead of the library's host work.
// - The key is everything the queued kernels depend on: the plan (by a
//   process-unique id, so an evicted and rebuilt plan never meets an old
//   graph), every device address the call passes, the scalars, the
//   workspace. A graph is only launched for a call with exactly its key, so
//   it touches only memory that call would have touched.
// - A first sighting runs directly: a call seen once (a fresh input buffer
//   every run) never costs a capture. The capture, instantiation and upload
//   happen at the second sighting, in a warm-up run, never in a steady state.
// - While the caller's stream is being captured (model-level graph mode) the
//   call is made directly and not counted: the model's graph holds it.
// - A call the capture refuses (or the library refuses under capture) is
//   remembered and made directly from then on.
// - Each thread keeps at most kMaxCallGraphs keys; past that it starts over
//   (an executable graph still running is freed when it completes).
// - AOTRT_LIBRARY_CALL_GRAPHS=0 (read once) or set_library_call_graphs(false)
//   turns it off.
inline constexpr size_t kMaxCallGraphs = 2048;

// The first value of a call's key: which library call it is.
enum CallKind : int64_t { kConvCall = 1, kLtMatmulCall = 2 };

inline int64_t address_value(const void* p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }

// A process-unique id for a newly built library plan.
uint64_t next_library_plan_id() noexcept;

bool library_call_graphs_enabled() noexcept;
void set_library_call_graphs(bool on) noexcept;

struct CallGraphStats {
  uint64_t launched = 0;   // calls served by a graph launch
  uint64_t captured = 0;   // graphs made
  uint64_t direct = 0;     // calls made directly (first sightings, refusals, captures in progress)
  uint64_t refused = 0;    // keys the capture refused
};
// The calling thread's counts, and its entries' number.
CallGraphStats call_graph_stats() noexcept;
size_t call_graph_entries() noexcept;
void clear_call_graphs() noexcept;

namespace detail {
enum class CallGraphStep { kDirect, kCapture, kLaunched };
// Looks the key up: launches its graph on `stream` (kLaunched), asks for a
// capture (kCapture: begin_call_capture was called, the caller makes the call
// on the returned stream), or asks for a direct call.
CallGraphStep call_graph_step(const PlanKey& key, int device, cudaStream_t stream,
                              cudaStream_t* capture_stream);
// Ends the capture begun for `key`: `ok` is the call's own success. Returns
// true when the graph was made and launched on `stream`; false when the call
// must be made directly (nothing from the capture ran).
bool end_call_capture(const PlanKey& key, int device, cudaStream_t stream, bool ok);
void abandon_call_capture(int device) noexcept;
}  // namespace detail

// Runs `call(s)`, which queues one library call on stream `s` and returns
// whether the library accepted it, for a call on `stream` whose key is `key`
// (Note [Library call graphs]); returns whether it was accepted (by the
// library, or earlier, for a replayed graph).
template <typename Call>
bool replay_or_call(const PlanKey& key, int device, cudaStream_t stream, Call&& call) {
  cudaStream_t capture = nullptr;
  switch (detail::call_graph_step(key, device, stream, &capture)) {
    case detail::CallGraphStep::kLaunched:
      return true;
    case detail::CallGraphStep::kDirect:
      return call(stream);
    case detail::CallGraphStep::kCapture:
      break;
  }
  bool ok = false;
  try {
    ok = call(capture);
  } catch (...) {
    detail::abandon_call_capture(device);
    throw;
  }
  if (detail::end_call_capture(key, device, stream, ok)) return true;
  return call(stream);
}

}  // namespace aotrt::cuda
