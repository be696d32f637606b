// CudaGraphRunner: see Note [CUDA graph mode] in runtime/cuda_graph.h.
#include "runtime/cuda_graph.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/copy.h"
#include "core/handles.h"
#include "cuda/cuda.h"

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
               const ContainerCall& call) {
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
    graph->wait_for(caller_stream);

    // Note [CUDA graph mode], step 2.
    while (warmups < kMaxWarmupRuns) {
      const int64_t before = cuda::driver_allocations(device.index);
      ++warmups;
      run_on_private_stream(call);  // outputs freed at once, into the pool
      if (warmups > 1 && cuda::driver_allocations(device.index) == before) break;
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

    for (const Tensor& t : static_outputs) {
      if (!t.defined()) {
        output_storage.push_back(-1);
        continue;
      }
      const StorageRef& s = handle_get_defined(t.handle(), kFn).storage();
      auto it = std::find_if(storages.begin(), storages.end(),
                             [&](const StorageRef& r) { return r.get() == s.get(); });
      output_storage.push_back(static_cast<int>(it - storages.begin()));
      if (it == storages.end()) storages.push_back(s);
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
    static_outputs.clear();
    static_inputs.clear();
    output_storage.clear();
    storages.clear();
    graph.reset();
  }
};

CudaGraphRunner::CudaGraphRunner(Device device, std::string what,
                                 std::vector<std::string> input_names, size_t num_outputs)
    : s_(std::make_unique<State>()) {
  AOTRT_CHECK(device.is_cuda(), kInvalidArgument, what,
              ": CUDA graph mode is for CUDA models; this one runs on ", device.str());
  AOTRT_CHECK(cuda::built(), kUnsupported, what,
              ": CUDA graph mode asked for, but this aotrt was built without CUDA");
  s_->device = device;
  s_->what = std::move(what);
  s_->input_names = std::move(input_names);
  s_->num_outputs = num_outputs;
}

CudaGraphRunner::~CudaGraphRunner() {
  if (s_ != nullptr) s_->reset();
}

bool CudaGraphRunner::captured() const { return s_->graph != nullptr && s_->graph->captured(); }

int CudaGraphRunner::warmup_runs() const { return s_->warmups; }

std::vector<Tensor> CudaGraphRunner::run(std::span<const AtenTensorHandle> inputs,
                                         const ContainerCall& call) {
  State& s = *s_;
  AOTRT_CHECK(s.refused.empty(), kUnsupported, s.refused);
  void* stream = cuda::current_stream(s.device.index);
  if (!captured()) {
    AOTRT_CHECK(inputs.size() == s.input_names.size(), kInvalidArgument, kFn, ": ", s.what,
                " takes ", s.input_names.size(), " input(s), got ", inputs.size());
    try {
      s.capture(inputs, stream, call);
    } catch (const std::exception& e) {
      if (s.capture_failed) s.refused = e.what();
      s.capture_failed = false;
      s.warmups = 0;
      s.reset();
      throw;
    }
  } else {
    s.check_inputs(inputs);
  }
  s.graph->prepare(stream);
  s.copy_inputs(inputs);
  s.graph->replay(stream);
  return s.copy_outputs();
}

}  // namespace aotrt::runtime
