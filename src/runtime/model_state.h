// The hooks aotrt::Model gives the session layer (src/session/): which
// constants are a run's state, runs that bind a session's tensors to them,
// and constants shared between the graphs of one package. A Model that no
// session uses pays one comparison per run for them.
//
// Note [Session state]
// A graph exported with a KV cache (Hugging Face's static cache, a gpt-fast
// cache) keeps it in buffers the graph writes in place: torch.export lifts
// module buffers to constants of the AOTInductor container, and the
// generated code writes them. A Session owns a copy of exactly those
// constants and shares every other one (the weights). Which they are is read
// from the package, per constant (ConstantInfo::session_state):
//  - a constant the generated code writes (Note [Constants a run writes] in
//    package/wrapper_source.h), of any type;
//  - a buffer (torch's ConstantType, from GetConstantType or the generated
//    constants_info_) the code names in a way that may write it;
//  - without the generated source, every buffer (a buffer the code only reads,
//    such as rotary frequencies, then costs each session a copy; never wrong).
// Parameters and tensor constants the code only reads, folded constants and
// constants the code never names are shared.
//
// Note [Bound state]
// The container holds one tensor per constant; a session's run first gives
// the container the session's tensors for the state constants
// (UpdateUserManagedConstantBuffer on the active buffer, no copy), unless
// they are already the bound ones. Binding costs a walk over the model's
// constants (tens of microseconds), paid only when the session differs from
// the previous run's, and runs of one Model are serialised (its run mutex),
// so a binding holds for the whole run. A captured CUDA graph keeps the
// addresses it was captured with: a session's graphs replay without binding.
// The model's own tensors for its state constants (the package's initial
// values) are bound back for a run without a session.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "runtime/container_api.h"

namespace aotrt::runtime {

class CudaGraphs;

// Saves a session's state before a CUDA graph's warm-up runs and puts it back
// after them, so that capturing a step runs it exactly once (Note [Session
// graphs] in session/session.cpp). Both are queued on the calling thread's
// current stream, which the graph orders its private stream with.
class StateGuard {
 public:
  virtual ~StateGuard() = default;
  virtual void save() = 0;
  virtual void restore() = 0;
};

// What a session brings to one run of one graph.
struct RunState {
  uint64_t id = 0;  // unique per session; never 0 (0 is the model's own state)
  // The session's tensor for each of the model's state constants, by the
  // container's name (ModelAccess::state), borrowed for the run.
  std::span<const ConstantMapEntry> entries;
  CudaGraphs* graphs = nullptr;  // the session's graphs of this model; null: plain runs
  StateGuard* guard = nullptr;   // around a capture's warm-up runs
};

struct ModelAccess {
  // The model's state constants (ConstantInfo::session_state), in constant order.
  static std::vector<const ConstantInfo*> state(const Model& m);
  // Whether the package says which constants are state (constant types or
  // the generated source); without, sessions are refused.
  static bool state_known(const Model& m);
  // A run with the session's tensors bound (Note [Bound state]).
  static std::vector<Tensor> run(Model& m, std::span<const Tensor> inputs, const RunState& state);
  // New handles to the tensors the model holds now for its non-folded
  // constants, by the container's name (the model's own state included).
  static std::map<std::string, Tensor> constants(const Model& m);
  // Replaces every non-state constant whose FQN, dtype and layout match one
  // of `shared` (by FQN) with that tensor, and the model's own state with
  // `shared`'s where they match too; copies the rest out of the model's own
  // memory; then frees the memory the model loaded its constants into.
  // Returns the bytes of constants now shared.
  static uint64_t share_constants(Model& m, const std::map<std::string, Tensor>& shared_by_fqn);
  // Counts weight swaps: a session's CUDA graphs captured before the last
  // swap read the old weights.
  static uint64_t weights_version(const Model& m);
  // Graphs for one session's runs of this model, in the model's CUDA graph
  // mode; null for a CPU model or with graphs off.
  static std::unique_ptr<CudaGraphs> make_graphs(const Model& m);
};

}  // namespace aotrt::runtime
