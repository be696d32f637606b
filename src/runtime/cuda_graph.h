// CUDA graph mode of aotrt::Model (LoadOptions::cuda_graph): the model's run
// captured into a CUDA graph and replayed with one launch.
//
// Note [CUDA graph mode]
// A graph's first run (CudaGraphRunner):
//  1. allocates static inputs with the layout of the inputs it was given,
//     from the private pool of a cuda::Graph (Note [Private pools for graph
//     capture] in cuda/runtime.h), and copies the inputs into them;
//  2. runs the model on the graph's private stream (RunSingleThreaded: Run
//     records and polls an event, which a capture forbids) until a run makes
//     no cudaMalloc: the first such run also loads the kernels lazily
//     (cuModuleLoadData), folds constants and makes library handles, none of
//     which a capture allows; the runs after it leave the pool holding every
//     block one run needs (at most kMaxWarmupRuns runs);
//  3. compares each static input with the caller's input (copies to the host:
//     the one wait for the device of this run): one that changed is an input
//     the model writes into (AOTInductor writes a mutated input in place),
//     which a replay would write into the static copy instead;
//  4. captures one more run (cudaStreamCaptureModeThreadLocal); its outputs
//     become the static outputs, and the blocks its intermediates used stay
//     in the pool, so the graph's addresses stay valid while it lives.
// Every run, the first included, then copies its inputs into the static
// inputs, replays the graph on the calling thread's current stream, copies
// the static inputs the model writes back into the caller's (so that they
// change as in a plain run), and returns COPIES of the static outputs (in new
// memory from the caching allocator, outputs that shared memory still
// sharing it): outputs stay valid after later runs, at the price of one
// device-to-device copy per output storage. Replays on different streams are
// ordered after each other by an event; the host never waits.
// With CudaGraphMode::kOn, a run that cannot be captured (a host wait, an
// allocation that misses the pool, a copy to pageable memory) is refused with
// kUnsupported naming the failing call; the refusal is kept and every later
// run throws it again; inputs must keep the first run's dtype, sizes and
// strides; an output that is a view of an input comes back as a copy.
//
// Note [Automatic CUDA graphs]
// CudaGraphMode::kAuto, the default, uses graphs only where nothing but the
// speed changes. Measured on the H200 (bench/results/cuda-2026-11-30.md,
// plain vs graph replay per run): c2f_block_80 86 -> 40 us, resnet18 b1 795
// -> 309, mobilenet_v3_small 1379 -> 390, resnet50 b32 2760 -> 2644,
// transformer d512 282 -> 269, a bf16 LLaMA decoder 1257 -> 1073
// (bench/results/attention-h200-2026-12-01.md): plain runs are bound by the
// host's launches and library calls (cudnnBackendExecute alone takes ~11 us
// of host time), which one graph launch replaces. So CudaGraphs:
//  - runs a layout of inputs (dtype, sizes, strides) plainly the first time
//    it is seen, and captures it the second time (a layout seen once, e.g. a
//    dynamic shape that keeps changing, costs no capture and no pool);
//  - keeps at most kMaxGraphs graphs (each holds a private pool as large as a
//    run's intermediates) among at most kMaxLayouts layouts it counts; other
//    layouts run plainly;
//  - gives graphs up for the whole model, running plainly from then on, when
//    a capture fails (the model waits for the device or allocates outside the
//    pool), when the private pool runs out of memory, when the model writes
//    into an input (step 3 of Note [CUDA graph mode]), or when an output is a
//    view of an input (a plain run returns the view, a graph a copy). The
//    reason is Model::cuda_graph_status().declined. The run that finds it is
//    run plainly too: nothing is refused for graph reasons.
// What it cannot see: a model that writes an input only with values the input
// already held during the capture's runs (an in-place clamp of in-range data)
// passes step 3; a replay then leaves that input of the caller's unwritten.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"

namespace aotrt::runtime {

// Runs the model's container once on `stream`: input handles are stolen
// (slots it did not steal stay set, for the caller to delete), output handles
// are written. Throws the model's failure.
using ContainerCall = std::function<void(AtenTensorHandle* inputs, size_t num_inputs,
                                         AtenTensorHandle* outputs, size_t num_outputs,
                                         void* stream)>;

class StateGuard;  // runtime/model_state.h

class CudaGraphRunner {
 public:
  static constexpr int kMaxWarmupRuns = 4;

  // `what` names the model in messages ("model 'm' of x.pt2"). `automatic`:
  // CudaGraphMode::kAuto's rules (Note [Automatic CUDA graphs]).
  CudaGraphRunner(Device device, std::string what, std::vector<std::string> input_names,
                  size_t num_outputs, bool automatic);
  ~CudaGraphRunner();
  CudaGraphRunner(const CudaGraphRunner&) = delete;
  CudaGraphRunner& operator=(const CudaGraphRunner&) = delete;

  // One run in graph mode (capturing first when none was made). `inputs` are
  // borrowed handles to the caller's inputs, on the model's device with the
  // strides the model expects (Model::run made and checked them). Not
  // thread-safe: the Model serialises runs. Automatic only: nullopt when the
  // graph would behave differently from a plain run (declined() says why);
  // the caller then runs this one plainly and drops the runner.
  // `guard` (a session's state) is saved before the warm-up runs of a
  // capture and restored after them, so that the run is done once.
  std::optional<std::vector<Tensor>> run(std::span<const AtenTensorHandle> inputs,
                                         const ContainerCall& call, StateGuard* guard = nullptr);

  bool captured() const;
  // The device memory its graph's private pool holds (0 before a capture).
  uint64_t pool_bytes() const;
  // Warm-up runs the capture took (0 before it).
  int warmup_runs() const;
  // The last run's failure came from capturing (the model cannot be
  // captured), not from the run itself.
  bool capture_refused() const;
  const std::string& declined() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// A Model's CUDA graphs in one of the modes of CudaGraphMode (Notes [CUDA graph
// mode], [Automatic CUDA graphs]). Not thread-safe: the Model serialises runs.
class CudaGraphs {
 public:
  static constexpr int kMaxGraphs = 4;
  static constexpr size_t kMaxLayouts = 64;

  CudaGraphs(CudaGraphMode mode, Device device, std::string what,
             std::vector<std::string> input_names, size_t num_outputs);
  ~CudaGraphs();
  CudaGraphs(const CudaGraphs&) = delete;
  CudaGraphs& operator=(const CudaGraphs&) = delete;

  // The outputs of a graph's run, or nullopt: the caller runs this one plainly
  // (and calls count_plain_run). Throws what the run throws; with kOn also the
  // capture's refusal.
  std::optional<std::vector<Tensor>> run(std::span<const AtenTensorHandle> inputs,
                                         const ContainerCall& call, StateGuard* guard = nullptr);
  void count_plain_run() { ++plain_runs_; }
  // The device memory the graphs' private pools hold.
  uint64_t pool_bytes() const;
  // The constants changed: captured kernels read the old addresses, so every
  // graph is dropped (its layouts are captured again).
  void reset();
  Model::CudaGraphStatus status() const;

 private:
  struct Layout {
    std::vector<int64_t> key;
    int64_t seen = 0;
    std::unique_ptr<CudaGraphRunner> runner;
  };
  std::unique_ptr<CudaGraphRunner> make_runner() const;
  std::optional<std::vector<Tensor>> run_auto(std::span<const AtenTensorHandle> inputs,
                                              const ContainerCall& call, StateGuard* guard);

  CudaGraphMode mode_;
  Device device_;
  std::string what_;
  std::vector<std::string> input_names_;
  size_t num_outputs_;
  std::unique_ptr<CudaGraphRunner> single_;  // kOn
  std::vector<Layout> layouts_;              // kAuto
  std::string declined_;                     // kAuto: graphs given up, and why
  int64_t replays_ = 0;
  int64_t plain_runs_ = 0;
};

}  // namespace aotrt::runtime
