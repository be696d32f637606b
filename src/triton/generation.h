// Serving a generation package from a Triton model (Note [Generation models]
// in config.h says which models, and their tensors): a pool of sessions that
// generate the requests' tokens and send them back as they come.
//
// Note [Serving generation]
// An instance of a generation model holds one aotrt::Generator (the
// package's graphs over one copy of the weights) and at most max_sessions
// slots; a second instance would load the weights again, so one instance
// (instance_group count 1) serves a device, max_sessions its concurrency.
// A slot is a worker thread and, once it has served a request, one Sequence:
// a Session of the program (its own KV cache and the other state the graphs
// write) with the decode loop's buffers; on CUDA also its own
// stream, pinned token slots, and the CUDA graphs its steps were captured in
// (Note [Session graphs], Note [The decode loop]).
// TRITONBACKEND_ModelInstanceExecute reads and checks each request's inputs
// and queues it; it returns at once, so the server hands the instance the
// next requests while earlier ones generate. A free slot takes the oldest
// queued request and generates it in its sequence: with streaming each new
// token is sent as soon as the host reads it (a response from the request's
// factory), then the final flag alone; without it one response holds every
// token. The slot then resets its sequence (the cache back to the package's
// values, length 0) and takes the next request. The sequence is kept, so its
// cache memory and its CUDA graphs (captured during the slot's first
// request) serve every later request in that slot: a steady-state request
// allocates no device memory and captures nothing. Slots make their sequence
// when they first take a request, so a model holds caches only for the
// concurrency it has seen (the metric aotrt_generation_sessions).
// Before each token is sent the slot asks the server whether the request was
// cancelled (the client cancelled it, or its gRPC stream went away); if so
// the generation stops after that step, the request gets a final CANCELLED
// error response (the convention of Triton's request cancellation), and the
// slot is free for the next request: the session count
// (aotrt_generation_active_sessions) drops at once. A cancelled request still
// queued is answered when a slot reaches it, without generating. Answering
// later instead (200 ms after the cancellation) left tritonserver 2.51's gRPC
// handler holding the model in 3 runs of 3, unloaded only at the exit timeout
// (Note [Cancelling a finished stream] in python/aotrt_tools/triton.py).
// Concurrency: the slots' decode steps are separate runs of the decode graph,
// serialised on the host by the model's run mutex; on CUDA their device work
// overlaps on the slots' streams, on the CPU each step has the cores. So
// total tokens/s grows with streams only while one stream leaves the device
// idle (host gaps, small kernels); a step reads every weight once per row.
// A batched package would change that: a decode graph exported for B rows
// with one cache position per row (ids [B, 1], positions [B], caches
// [B, heads, L, dim]) makes a slot a row of one shared session, and one step
// advances every active row, reading the weights once (continuous batching:
// a new request prefills its row and joins the next step, a finished or
// cancelled row is freed and its positions masked). One CUDA graph per row
// count (or per bucket of them) would replace the per-slot graphs, and the
// cache would be allocated once for B rows instead of per slot. No package
// aotrt can make today has such a graph (Hugging Face's exportable module
// takes one cache_position for the whole batch), so slots generate one
// after another.
#pragma once

#include <memory>
#include <string>

#include "aotrt/generate.h"
#include "triton/config.h"
#include "triton/triton_api.h"

namespace aotrt::triton {

class GenerationServer {
 public:
  // `instance` is the Triton instance the statistics are reported for.
  GenerationServer(GenerationModelConfig config, Generator generator,
                   TRITONBACKEND_ModelInstance* instance, const std::string& instance_name);
  // Answers the queued requests with UNAVAILABLE, stops the running ones
  // after their current step, and joins the slots.
  ~GenerationServer();
  GenerationServer(const GenerationServer&) = delete;
  GenerationServer& operator=(const GenerationServer&) = delete;

  // Takes `request`: it is answered and released here (an error response
  // when its inputs do not fit) or by the slot that serves it. Never throws.
  void submit(TRITONBACKEND_Request* request) noexcept;

  const Generator& generator() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace aotrt::triton
