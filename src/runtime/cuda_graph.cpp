// CudaGraphRunner: see Note [CUDA graph mode] in runtime/cuda_graph.h.
#include "runtime/cuda_graph.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "core/copy.h"
#include "core/dtype.h"
#include "core/handles.h"
#include "cuda/cuda.h"
#include "runtime/model_state.h"

namespace aotrt::runtime {
namespace {

constexpr const char* kFn = "aotrt::Model::run (CUDA graph mode)";

std::string list(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string layout_text(const TensorImpl& t) {
  return std::string(dtype_name(t.dtype())) + " sizes " + list(t.sizes()) + " strides " +
         list(t.strides());
}

bool same_layout(const TensorImpl& a, const TensorImpl& b) {
  return a.dtype() == b.dtype() && std::ranges::equal(a.sizes(), b.sizes()) &&
         std::ranges::equal(a.strides(), b.strides());
}

// A new handle to the same view, for the model to steal.
AtenTensorHandle fresh_handle(const TensorImpl& t) {
  return handle_register(
      make_tensor(t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype(), kFn));
}

}  // namespace

struct CudaGraphRunner::State {
  Device device;
  std::string what;
  std::vector<std::string> input_names;
  size_t num_outputs = 0;

  // Declared first so that it is destroyed last: the static tensors below
  // give their blocks back to its pool before it frees the pool.
  std::unique_ptr<cuda::Graph> graph;
  std::vector<Tensor> static_inputs;
  std::vector<Tensor> static_outputs;  // undefined for a None output
  // Per output, the index of its storage in `storages` (-1: None), so that
  // outputs sharing memory get copies sharing memory.
  std::vector<int> output_storage;
  std::vector<StorageRef> storages;
  std::string refused;  // why the capture failed; rethrown by every run
  bool capture_failed = false;  // the failure came from the capture itself
  int warmups = 0;
  bool automatic = false;
  std::string declined;        // automatic: why a graph would not behave as a plain run
  std::vector<size_t> written;  // inputs the model writes into (Note [CUDA graph mode], 3.)

  // One run of the container on the graph's stream with the static inputs;
  // the outputs are adopted, a handle returned twice aliased, as Model::run does.
  std::vector<Tensor> run_on_private_stream(const ContainerCall& call) {
    std::vector<AtenTensorHandle> in;
    struct Unstolen {
      std::vector<AtenTensorHandle>& handles;
      ~Unstolen() {
        for (AtenTensorHandle h : handles) {
          if (h != nullptr) aoti_torch_delete_tensor_object(h);
        }
      }
    } unstolen{in};
    in.reserve(static_inputs.size());
    for (const Tensor& t : static_inputs) {
      in.push_back(fresh_handle(handle_get_defined(t.handle(), kFn)));
    }
    std::vector<AtenTensorHandle> out(num_outputs, nullptr);
    call(in.data(), in.size(), out.data(), out.size(), graph->stream());
    std::vector<Tensor> result(num_outputs);
    for (size_t i = 0; i < num_outputs; ++i) {
      if (out[i] == nullptr) continue;
      size_t first = 0;
      while (out[first] != out[i]) ++first;
      result[i] = first == i ? Tensor::adopt(out[i]) : result[first];
    }
    return result;
  }

  void capture(std::span<const AtenTensorHandle> inputs, void* caller_stream,
               const ContainerCall& call, StateGuard* guard) {
    graph = std::make_unique<cuda::Graph>(device.index);
    {
      cuda::Graph::OnPrivateStream on(*graph);  // static inputs come from the pool
      for (AtenTensorHandle h : inputs) {
        const TensorImpl& src = handle_get_defined(h, kFn);
        static_inputs.push_back(Tensor::adopt(handle_register(
            empty_strided(src.sizes(), src.strides(), src.dtype(), device, kFn))));
      }
    }
    graph->prepare(caller_stream);
    copy_inputs(inputs);
    // A session's state is saved before the warm-up runs and put back after
    // them (on the caller's stream, ordered with the private one), so that
    // the replay below is the one run that counts.
    if (guard != nullptr) guard->save();
    graph->wait_for(caller_stream);
    auto restore = [&] {
      if (guard == nullptr) return;
      graph->prepare(caller_stream);
      guard->restore();
      graph->wait_for(caller_stream);
    };

    // Note [CUDA graph mode], step 2.
    try {
      while (warmups < kMaxWarmupRuns) {
        const int64_t before = cuda::driver_allocations(device.index);
        ++warmups;
        run_on_private_stream(call);  // outputs freed at once, into the pool
        if (warmups > 1 && cuda::driver_allocations(device.index) == before) break;
      }
    } catch (...) {
      restore();
      throw;
    }
    restore();
    written = written_inputs(inputs);  // step 3
    if (automatic && !written.empty()) {
      declined = what + " writes into its input " + std::to_string(written[0]) + " ('" +
                 input_names[written[0]] + "'), which a graph's replay would write into its "
                 "own copy instead";
      return;
    }

    // A failure before this point (a bad input, out of memory) is the run's
    // and may pass; one from here on says the model cannot be captured.
    capture_failed = true;
    graph->begin_capture();
    try {
      static_outputs = run_on_private_stream(call);
    } catch (const std::exception& e) {
      graph->abandon_capture();
      static_outputs.clear();
      AOTRT_FAIL(kUnsupported, what, ": the run could not be captured into a CUDA graph: ",
                 e.what());
    }
    graph->end_capture(what);
    capture_failed = false;

    for (size_t i = 0; i < static_outputs.size(); ++i) {
      const Tensor& t = static_outputs[i];
      if (!t.defined()) {
        output_storage.push_back(-1);
        continue;
      }
      const StorageRef& s = handle_get_defined(t.handle(), kFn).storage();
      if (automatic && declined.empty()) {
        for (size_t k = 0; k < static_inputs.size(); ++k) {
          if (handle_get_defined(static_inputs[k].handle(), kFn).storage().get() == s.get()) {
            declined = what + ": its output " + std::to_string(i) + " is a view of its input " +
                       std::to_string(k) + " ('" + input_names[k] + "'), which a graph "
                       "returns as a copy";
          }
        }
      }
      auto it = std::find_if(storages.begin(), storages.end(),
                             [&](const StorageRef& r) { return r.get() == s.get(); });
      output_storage.push_back(static_cast<int>(it - storages.begin()));
      if (it == storages.end()) storages.push_back(s);
    }
  }

  // Note [CUDA graph mode], step 3: the static inputs the warm-up runs
  // changed. Read on the private stream, after those runs; waits for them.
  std::vector<size_t> written_inputs(std::span<const AtenTensorHandle> inputs) {
    cuda::Graph::OnPrivateStream on(*graph);
    std::vector<size_t> changed;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorImpl& dst = handle_get_defined(static_inputs[i].handle(), kFn);
      const TensorImpl& src = handle_get_defined(inputs[i], kFn);
      if (src.storage().get() == dst.storage().get()) continue;
      const Tensor theirs = Tensor::adopt(fresh_handle(src)).dense_host_copy();
      const Tensor ours = static_inputs[i].dense_host_copy();
      const size_t bytes = static_cast<size_t>(ours.numel()) * element_size(ours.dtype());
      if (bytes > 0 && std::memcmp(ours.data_ptr(), theirs.data_ptr(), bytes) != 0) {
        changed.push_back(i);
      }
    }
    return changed;
  }

  // After a replay: the caller's inputs get what the model wrote into the
  // static ones, on the current stream (kOn; kAuto declines such models).
  void copy_written_back(std::span<const AtenTensorHandle> inputs) {
    for (size_t i : written) {
      const TensorImpl& dst = handle_get_defined(inputs[i], kFn);
      const TensorImpl& src = handle_get_defined(static_inputs[i].handle(), kFn);
      if (src.storage().get() == dst.storage().get()) continue;
      copy_tensor(dst, src, kFn);
    }
  }

  // Copies the caller's inputs into the static inputs, on the current stream.
  void copy_inputs(std::span<const AtenTensorHandle> inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorImpl& dst = handle_get_defined(static_inputs[i].handle(), kFn);
      const TensorImpl& src = handle_get_defined(inputs[i], kFn);
      if (src.storage().get() == dst.storage().get()) continue;  // the caller passed them back
      copy_tensor(dst, src, kFn);
    }
  }

  void check_inputs(std::span<const AtenTensorHandle> inputs) const {
    AOTRT_CHECK(inputs.size() == static_inputs.size(), kInvalidArgument, kFn, ": ", what,
                " takes ", static_inputs.size(), " input(s), got ", inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorImpl& want = handle_get_defined(static_inputs[i].handle(), kFn);
      const TensorImpl& got = handle_get_defined(inputs[i], kFn);
      AOTRT_CHECK(same_layout(want, got), kInvalidArgument, kFn, ": input ", i, " ('",
                  input_names[i], "') of ", what, " is ", layout_text(got),
                  " but the CUDA graph was captured for ", layout_text(want),
                  "; a model in graph mode takes the layout of its first run (load another "
                  "Model for other shapes)");
    }
  }

  // New memory for each static output storage, filled on the current stream.
  std::vector<Tensor> copy_outputs() const {
    std::vector<StorageRef> copies;
    copies.reserve(storages.size());
    for (const StorageRef& s : storages) {
      StorageRef fresh = Storage::allocate(device, s->nbytes());
      const int64_t bytes[] = {static_cast<int64_t>(s->nbytes())}, unit[] = {1};
      if (bytes[0] > 0) {
        auto dst = make_tensor(fresh, bytes, unit, 0, ScalarType::UInt8, kFn);
        auto src = make_tensor(s, bytes, unit, 0, ScalarType::UInt8, kFn);
        copy_tensor(*dst, *src, kFn);
      }
      copies.push_back(std::move(fresh));
    }
    std::vector<Tensor> result(static_outputs.size());
    for (size_t i = 0; i < static_outputs.size(); ++i) {
      if (output_storage[i] < 0) continue;
      const TensorImpl& t = handle_get_defined(static_outputs[i].handle(), kFn);
      result[i] = Tensor::adopt(handle_register(
          make_tensor(copies[static_cast<size_t>(output_storage[i])], t.sizes(), t.strides(),
                      t.storage_offset(), t.dtype(), kFn)));
    }
    return result;
  }

  // Gives back everything of a failed capture; the pool is freed with the graph.
  void reset() noexcept {
    written.clear();
    static_outputs.clear();
    static_inputs.clear();
    output_storage.clear();
    storages.clear();
    graph.reset();
  }
};

CudaGraphRunner::CudaGraphRunner(Device device, std::string what,
                                 std::vector<std::string> input_names, size_t num_outputs,
                                 bool automatic)
    : s_(std::make_unique<State>()) {
  AOTRT_CHECK(device.is_cuda(), kInvalidArgument, what,
              ": CUDA graph mode is for CUDA models; this one runs on ", device.str());
  AOTRT_CHECK(cuda::built(), kUnsupported, what,
              ": CUDA graph mode asked for, but this aotrt was built without CUDA");
  s_->device = device;
  s_->what = std::move(what);
  s_->input_names = std::move(input_names);
  s_->num_outputs = num_outputs;
  s_->automatic = automatic;
}

CudaGraphRunner::~CudaGraphRunner() {
  if (s_ != nullptr) s_->reset();
}

bool CudaGraphRunner::captured() const { return s_->graph != nullptr && s_->graph->captured(); }

int CudaGraphRunner::warmup_runs() const { return s_->warmups; }

uint64_t CudaGraphRunner::pool_bytes() const {
  return s_->graph != nullptr ? s_->graph->pool_bytes() : 0;
}

bool CudaGraphRunner::capture_refused() const { return !s_->refused.empty(); }

const std::string& CudaGraphRunner::declined() const { return s_->declined; }

std::optional<std::vector<Tensor>> CudaGraphRunner::run(std::span<const AtenTensorHandle> inputs,
                                                        const ContainerCall& call,
                                                        StateGuard* guard) {
  State& s = *s_;
  AOTRT_CHECK(s.refused.empty(), kUnsupported, s.refused);
  if (!s.declined.empty()) return std::nullopt;
  void* stream = cuda::current_stream(s.device.index);
  if (!captured()) {
    AOTRT_CHECK(inputs.size() == s.input_names.size(), kInvalidArgument, kFn, ": ", s.what,
                " takes ", s.input_names.size(), " input(s), got ", inputs.size());
    try {
      s.capture(inputs, stream, call, guard);
    } catch (const std::exception& e) {
      if (s.capture_failed) s.refused = e.what();
      s.capture_failed = false;
      s.warmups = 0;
      s.reset();
      throw;
    }
    if (!s.declined.empty()) {
      s.reset();
      return std::nullopt;
    }
  } else {
    s.check_inputs(inputs);
  }
  s.graph->prepare(stream);
  s.copy_inputs(inputs);
  s.graph->replay(stream);
  s.copy_written_back(inputs);
  return s.copy_outputs();
}

// --- CudaGraphs ---------------------------------------------------------------------------

namespace {

// The layout key of a run's inputs: per input its dtype, dims, sizes, strides.
void layout_key(std::span<const AtenTensorHandle> inputs, std::vector<int64_t>& key) {
  key.clear();
  for (AtenTensorHandle h : inputs) {
    const TensorImpl& t = handle_get_defined(h, kFn);
    key.push_back(static_cast<int64_t>(t.dtype()));
    key.push_back(t.dim());
    key.insert(key.end(), t.sizes().begin(), t.sizes().end());
    key.insert(key.end(), t.strides().begin(), t.strides().end());
  }
}

}  // namespace

CudaGraphs::CudaGraphs(CudaGraphMode mode, Device device, std::string what,
                       std::vector<std::string> input_names, size_t num_outputs)
    : mode_(mode),
      device_(device),
      what_(std::move(what)),
      input_names_(std::move(input_names)),
      num_outputs_(num_outputs) {
  AOTRT_CHECK(mode != CudaGraphMode::kOff, kInternal, "CudaGraphs made for mode off");
  if (mode_ == CudaGraphMode::kOn) single_ = make_runner();
}

CudaGraphs::~CudaGraphs() = default;

std::unique_ptr<CudaGraphRunner> CudaGraphs::make_runner() const {
  return std::make_unique<CudaGraphRunner>(device_, what_, input_names_, num_outputs_,
                                           mode_ == CudaGraphMode::kAuto);
}

std::optional<std::vector<Tensor>> CudaGraphs::run(std::span<const AtenTensorHandle> inputs,
                                                   const ContainerCall& call, StateGuard* guard) {
  std::optional<std::vector<Tensor>> out = mode_ == CudaGraphMode::kOn
                                               ? single_->run(inputs, call, guard)
                                               : run_auto(inputs, call, guard);
  if (out) ++replays_;
  return out;
}

std::optional<std::vector<Tensor>> CudaGraphs::run_auto(std::span<const AtenTensorHandle> inputs,
                                                        const ContainerCall& call,
                                                        StateGuard* guard) {
  if (!declined_.empty()) return std::nullopt;
  thread_local std::vector<int64_t> t_key;
  layout_key(inputs, t_key);
  auto it = std::find_if(layouts_.begin(), layouts_.end(),
                         [&](const Layout& l) { return l.key == t_key; });
  if (it == layouts_.end()) {
    if (layouts_.size() < kMaxLayouts) layouts_.push_back(Layout{t_key, 1, nullptr});
    return std::nullopt;  // first seen: plain
  }
  Layout& layout = *it;
  if (layout.runner == nullptr) {
    ++layout.seen;
    const auto graphs = std::count_if(layouts_.begin(), layouts_.end(),
                                      [](const Layout& l) { return l.runner != nullptr; });
    if (layout.seen < 2 || graphs >= kMaxGraphs) return std::nullopt;
    layout.runner = make_runner();
  }
  try {
    std::optional<std::vector<Tensor>> out = layout.runner->run(inputs, call, guard);
    if (!out) {
      declined_ = layout.runner->declined();
      reset();
    }
    return out;
  } catch (const Error& e) {
    // The model cannot be captured, or the graph's private pool found no
    // memory: plain runs from now on. Any other failure is the run's own.
    if (!layout.runner->capture_refused() && e.kind() != ErrorKind::kOutOfMemory) {
      if (!layout.runner->captured()) layout.runner.reset();
      throw;
    }
    declined_ = e.what();
    reset();
    return std::nullopt;
  }
}

uint64_t CudaGraphs::pool_bytes() const {
  uint64_t bytes = single_ != nullptr ? single_->pool_bytes() : 0;
  for (const Layout& l : layouts_) {
    if (l.runner != nullptr) bytes += l.runner->pool_bytes();
  }
  return bytes;
}

void CudaGraphs::reset() {
  if (single_ != nullptr) single_ = make_runner();
  for (Layout& l : layouts_) l.runner.reset();
}

Model::CudaGraphStatus CudaGraphs::status() const {
  Model::CudaGraphStatus st;
  st.mode = mode_;
  if (mode_ == CudaGraphMode::kOn) {
    st.graphs = single_->captured() ? 1 : 0;
  } else {
    st.graphs = static_cast<int>(std::count_if(
        layouts_.begin(), layouts_.end(),
        [](const Layout& l) { return l.runner != nullptr && l.runner->captured(); }));
  }
  st.replays = replays_;
  st.plain_runs = plain_runs_;
  st.declined = declined_;
  return st;
}

}  // namespace aotrt::runtime
