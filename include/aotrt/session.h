// Programs and sessions: every graph of a package over one copy of the
// weights, and independent sets of the state those graphs write (KV caches).
//
//   aotrt::Program program = aotrt::Program::load("llm.pt2");   // graphs "prefill", "decode"
//   aotrt::Session a = program.new_session();
//   aotrt::Session b = program.new_session();                   // its own cache
//   std::vector<aotrt::Tensor> logits = a.run("decode", inputs);
//
// A package made from several exported programs (torch._inductor.package.
// package_aoti with a dict, or several aot_compile'd models in one archive)
// holds one model folder per graph; Program loads them all and shares every
// constant two graphs hold alike (same original FQN, dtype and layout), so
// the weights are on the device once. The constants a graph writes (Note
// [Session state] in src/runtime/model_state.h) are a session's own: each
// Session holds a copy, initialised to the package's values, and the graphs
// of a program see one session's copy in that session's runs.
//
// Ownership: a Session keeps its Program's graphs and weights alive; a
// Program may be destroyed before its sessions. Sessions of one Program may
// run at the same time from several threads (each call is whole: one
// session's run does not interleave with another's on the same graph); a
// single Session is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"

namespace aotrt {

// A constant a session owns a copy of.
struct StateInfo {
  std::string name;  // its original FQN (the name shared by the program's graphs)
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  uint64_t nbytes = 0;               // bytes a session allocates for it
  std::vector<std::string> graphs;   // the graphs that hold it
};

class Session;

class Program {
 public:
  // Loads every graph of the package (or only `graphs`, when given) with
  // `options` (model_name is ignored), on one device. Throws Error; on any
  // failure nothing stays loaded.
  static Program load(const std::string& package_path, const LoadOptions& options = {},
                      const std::vector<std::string>& graphs = {});

  // The model folders of a package (data/aotinductor/<name>/), without
  // loading it.
  static std::vector<std::string> graph_names(const std::string& package_path);

  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;
  ~Program();

  const std::vector<std::string>& graphs() const;
  bool has_graph(const std::string& graph) const;
  // Throws kInvalidArgument naming the graphs there are.
  const ModelInfo& info(const std::string& graph) const;
  Device device() const;
  // What each session owns, and its bytes in all.
  const std::vector<StateInfo>& state() const;
  uint64_t session_state_bytes() const;
  // Bytes of constants the graphs share instead of holding one copy each.
  uint64_t shared_constant_bytes() const;

  // A new session, its state a copy of the package's initial values.
  Session new_session() const;

  class Impl;

 private:
  friend class Session;
  explicit Program(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

class Session {
 public:
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  // Frees the session's state and CUDA graphs (on CUDA after the work queued
  // on the session's stream has finished; the host does not wait).
  ~Session();

  // Runs one graph of the program with this session's state, as Model::run
  // runs a model (same input rules, outputs owned by the caller). On CUDA the
  // work goes to the calling thread's current stream and is captured into a
  // CUDA graph of this session's per input layout, as LoadOptions::cuda_graph
  // says; a capture runs the step once (Note [Session graphs]).
  std::vector<Tensor> run(const std::string& graph, std::span<const Tensor> inputs);

  // The state back to the package's initial values.
  void reset();
  // A new session whose state is a copy of this one's now (prefix reuse: a
  // shared prompt prefilled once).
  Session fork() const;

  const Program& program() const;
  uint64_t id() const;
  // Bytes this session holds: its state, and the memory its CUDA graphs keep.
  uint64_t memory_bytes() const;
  // The session's tensor for state constant `name` (StateInfo::name): a
  // view of its memory, not a copy.
  Tensor state(const std::string& name) const;

  class Impl;

 private:
  friend class Program;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace aotrt
