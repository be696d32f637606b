// CUDA graph mode of aotrt::Model (LoadOptions::cuda_graph): the model's run
// captured once into a CUDA graph and replayed with one launch.
//
// Note [CUDA graph mode]
// The first run in graph mode:
//  1. allocates static inputs with the layout of the inputs it was given,
//     from the private pool of a cuda::Graph (Note [Private pools for graph
//     capture] in cuda/runtime.h), and copies the inputs into them;
//  2. runs the model on the graph's private stream (RunSingleThreaded: Run
//     records and polls an event, which a capture forbids) until a run makes
//     no cudaMalloc: the first such run also loads the kernels lazily
//     (cuModuleLoadData), folds constants and makes library handles, none of
//     which a capture allows; the runs after it leave the pool holding every
//     block one run needs (at most kMaxWarmupRuns runs);
//  3. captures one more run (cudaStreamCaptureModeThreadLocal); its outputs
//     become the static outputs, and the blocks its intermediates used stay
//     in the pool, so the graph's addresses stay valid while it lives.
// A run that cannot be captured (a host wait, an allocation that misses the
// pool, a copy to pageable memory) is refused with kUnsupported naming the
// failing call; the refusal is kept and every later run throws it again.
// Every run, the first included, then copies its inputs into the static
// inputs and replays the graph on the calling thread's current stream, and
// returns COPIES of the static outputs (in new memory from the caching
// allocator, outputs that shared memory still sharing it): outputs behave as
// in eager mode and stay valid after later runs, at the price of one
// device-to-device copy per output storage. Inputs must keep the dtype,
// sizes and strides of the first run's. Replays on different streams are
// ordered after each other by an event; the host never waits.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
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

class CudaGraphRunner {
 public:
  static constexpr int kMaxWarmupRuns = 4;

  // `what` names the model in messages ("model 'm' of x.pt2").
  CudaGraphRunner(Device device, std::string what, std::vector<std::string> input_names,
                  size_t num_outputs);
  ~CudaGraphRunner();
  CudaGraphRunner(const CudaGraphRunner&) = delete;
  CudaGraphRunner& operator=(const CudaGraphRunner&) = delete;

  // One run in graph mode (capturing first when none was made). `inputs` are
  // borrowed handles to the caller's inputs, on the model's device with the
  // strides the model expects (Model::run made and checked them). Not
  // thread-safe: the Model serialises runs.
  std::vector<Tensor> run(std::span<const AtenTensorHandle> inputs, const ContainerCall& call);

  bool captured() const;
  // Warm-up runs the capture took (0 before it).
  int warmup_runs() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace aotrt::runtime
