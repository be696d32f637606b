// libtriton_aotrt.so: a Triton Inference Server backend that serves .pt2
// packages with aotrt. The server calls the TRITONBACKEND_* entry points
// below; each runs its body inside entry_boundary, so no exception crosses
// into the server: an aotrt::Error becomes a TRITONSERVER_Error with aotrt's
// message. A model directory holds config.pbtxt and <version>/model.pt2;
// each instance loads its own aotrt::Model on its device (a KIND_GPU one
// runs on a stream of its own). See Note [Batching along dim 0] (config.h).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "core/view.h"
#include "triton/config.h"
#include "triton/cuda_stream.h"
#include "triton/generation.h"
#include "triton/server.h"
#include "triton/triton_api.h"

namespace aotrt::triton {
namespace {

// The server's TRITONSERVER_Message, deleted with this object.
struct Message {
  TRITONSERVER_Message* message = nullptr;
  ~Message() {
    if (message != nullptr) TRITONSERVER_MessageDelete(message);
  }
};

nlohmann::json model_config_json(TRITONBACKEND_Model* model) {
  Message m;
  CHECK_TRITON(TRITONBACKEND_ModelConfig(model, 1, &m.message));
  const char* base = nullptr;
  size_t size = 0;
  CHECK_TRITON(TRITONSERVER_MessageSerializeToJson(m.message, &base, &size));
  return nlohmann::json::parse(base, base + size);
}

struct ModelState {
  std::string name;
  std::string package_path;
  ModelConfig config;
  LoadOptions load_options;
  std::mutex mutex;
  // Loaded by ModelInitialize to read the package; the first instance on
  // its device takes it instead of loading its own.
  std::optional<Model> spare;

  // A generation model (Note [Generation models]): its configuration, and
  // the Generator ModelInitialize loaded, for the first instance on its device.
  std::optional<GenerationModelConfig> generation;
  GeneratorOptions generator_options;
  std::optional<Generator> spare_generator;

  Generator generator_for(Device device) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (spare_generator && spare_generator->program().device() == device) {
        Generator g = std::move(*spare_generator);
        spare_generator.reset();
        return g;
      }
      spare_generator.reset();
    }
    GeneratorOptions options = generator_options;
    options.load.device_index = device.is_cuda() ? device.index : -1;
    return Generator::load(package_path, options);
  }

  Model model_for(Device device) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (spare && spare->device() == device) {
        Model m = std::move(*spare);
        spare.reset();
        return m;
      }
      spare.reset();  // not needed any more: instances load their own
    }
    LoadOptions options = load_options;
    options.device_index = device.is_cuda() ? device.index : -1;
    return Model::load(package_path, options);
  }
};

struct InstanceState {
  TRITONBACKEND_ModelInstance* instance = nullptr;
  ModelState* model_state = nullptr;
  std::string name;
  Device device;
  std::unique_ptr<CudaStream> stream;  // KIND_GPU only; outlives the model
  std::optional<Model> model;
  std::unique_ptr<GenerationServer> generation;  // a generation model's instead of `model`
};

// One request of an execution, until its response is sent and it is released.
struct Pending {
  TRITONBACKEND_Request* request = nullptr;
  TRITONBACKEND_Response* response = nullptr;
  std::vector<TRITONBACKEND_Input*> inputs;  // in the package's input order
  std::vector<std::vector<int64_t>> shapes;  // as the request gives them
  int64_t rows = 0;                          // its batch (dim 0) with max_batch_size > 0
  std::optional<Error> error;
  uint64_t compute_start_ns = 0, compute_end_ns = 0;
};

void fail(Pending& p, const Error& e) {
  if (!p.error) p.error = e;
}

// Reads and checks one request's inputs against the configuration.
void read_inputs(const ModelConfig& config, Pending& p) {
  const bool batched = config.max_batch_size > 0;
  for (const TensorConfig& in : config.inputs) {
    TRITONBACKEND_Input* input = nullptr;
    CHECK_TRITON(TRITONBACKEND_RequestInput(p.request, in.name.c_str(), &input));
    TRITONSERVER_DataType type = TRITONSERVER_TYPE_INVALID;
    const int64_t* shape = nullptr;
    uint32_t dims = 0;
    uint64_t byte_size = 0;
    CHECK_TRITON(TRITONBACKEND_InputProperties(input, nullptr, &type, &shape, &dims, &byte_size,
                                               nullptr));
    const std::vector<int64_t> sizes(shape, shape + dims);
    const std::string what = "model '" + config.name + "': input '" + in.name + "'";
    const std::optional<ScalarType> dtype = dtype_from_server(type);
    AOTRT_CHECK(dtype == in.dtype, kInvalidArgument, what, ": the request's data type (",
                static_cast<int>(type), ") is not the configured ", config_dtype_name(in.dtype));
    AOTRT_CHECK(sizes.size() == in.dims.size() + (batched ? 1 : 0), kInvalidArgument, what,
                ": shape ", shape_text(sizes), " has ", sizes.size(), " dims; expected ",
                in.dims.size(), batched ? " after the batch dim" : "");
    int64_t numel = 1;
    for (int64_t s : sizes) {
      AOTRT_CHECK(s >= 0, kInvalidArgument, what, ": shape ", shape_text(sizes), " is negative");
      numel = checked_mul(numel, s, what.c_str());
    }
    AOTRT_CHECK(byte_size == static_cast<uint64_t>(numel) * element_size(in.dtype),
                kInvalidArgument, what, ": ", byte_size, " bytes for shape ", shape_text(sizes),
                " of ", dtype_name(in.dtype));
    if (batched) {
      AOTRT_CHECK(sizes[0] >= 1 && sizes[0] <= config.max_batch_size, kInvalidArgument, what,
                  ": batch ", sizes[0], " outside 1..", config.max_batch_size);
      AOTRT_CHECK(p.inputs.empty() || sizes[0] == p.rows, kInvalidArgument, what, ": batch ",
                  sizes[0], " but input '", config.inputs.front().name, "' has ", p.rows);
      p.rows = sizes[0];
    }
    p.inputs.push_back(input);
    p.shapes.push_back(sizes);
  }
}

// Row `row` onwards of `t` along dim 0, `rows` of them: a view of the same memory.
Tensor rows_of(const Tensor& t, int64_t row, int64_t rows) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  const std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  sizes[0] = rows;
  return Tensor::from_blob(t.data_ptr(), sizes, strides, t.dtype(), t.device(), row * strides[0]);
}

// The responses' outputs of one run: request `p` gets rows [row, row + p.rows).
void write_outputs(const InstanceState& inst, const std::vector<Tensor>& outputs, Pending& p,
                   int64_t row, int64_t run_rows) {
  const ModelConfig& config = inst.model_state->config;
  const bool batched = config.max_batch_size > 0;
  uint32_t requested = 0;
  CHECK_TRITON(TRITONBACKEND_RequestOutputCount(p.request, &requested));
  for (uint32_t k = 0; k < requested; ++k) {
    const char* name = nullptr;
    CHECK_TRITON(TRITONBACKEND_RequestOutputName(p.request, k, &name));
    auto cfg = std::find_if(config.outputs.begin(), config.outputs.end(),
                            [&](const TensorConfig& o) { return o.name == name; });
    AOTRT_CHECK(cfg != config.outputs.end(), kInvalidArgument, "model '", config.name,
                "': output '", name, "' is not configured");
    const std::string what = "model '" + config.name + "': output '" + cfg->name + "'";
    const Tensor& out = outputs.at(cfg->package_index);
    AOTRT_CHECK(out.defined(), kUnsupported, what, ": the model returned None there");
    AOTRT_CHECK(out.dtype() == cfg->dtype, kInvalidArgument, what, ": the model returned ",
                dtype_name(out.dtype()), " but config.pbtxt says ", config_dtype_name(cfg->dtype));
    AOTRT_CHECK(out.dim() == static_cast<int64_t>(cfg->dims.size() + (batched ? 1 : 0)),
                kInvalidArgument, what, ": the model returned ", out.dim(), " dims ",
                shape_text(out.sizes()), "; config.pbtxt gives ", cfg->dims.size(),
                batched ? " after the batch dim" : "");
    Tensor mine = out;
    if (batched) {
      AOTRT_CHECK(out.sizes()[0] == run_rows, kInvalidArgument, what, ": dim 0 is ",
                  out.sizes()[0], ", not the batch of ", run_rows, " rows the model ran");
      mine = rows_of(out, row, p.rows);
    }
    const std::vector<int64_t> shape(mine.sizes().begin(), mine.sizes().end());
    TRITONBACKEND_Output* output = nullptr;
    CHECK_TRITON(TRITONBACKEND_ResponseOutput(p.response, &output, cfg->name.c_str(),
                                              server_dtype(cfg->dtype), shape.data(),
                                              static_cast<uint32_t>(shape.size())));
    const uint64_t nbytes = static_cast<uint64_t>(mine.numel()) * element_size(mine.dtype());
    void* buffer = nullptr;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    CHECK_TRITON(TRITONBACKEND_OutputBuffer(output, &buffer, nbytes, &type, &type_id));
    if (nbytes == 0) continue;
    const Device where = type == TRITONSERVER_MEMORY_GPU
                             ? Device{DeviceType::CUDA, static_cast<int32_t>(type_id)}
                             : cpu_device();
    std::vector<int64_t> dense(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) dense[d - 1] = dense[d] * std::max<int64_t>(shape[d], 1);
    Tensor dst = Tensor::from_blob(buffer, shape, dense, mine.dtype(), where);
    dst.copy_(mine);
  }
  if (config.report_instance) {
    CHECK_TRITON(TRITONBACKEND_ResponseSetStringParameter(p.response, "aotrt_instance",
                                                          inst.name.c_str()));
    CHECK_TRITON(TRITONBACKEND_ResponseSetIntParameter(p.response, "aotrt_batch", run_rows));
    CHECK_TRITON(TRITONBACKEND_ResponseSetIntParameter(
        p.response, "aotrt_compute_start_ns", static_cast<int64_t>(p.compute_start_ns)));
    CHECK_TRITON(TRITONBACKEND_ResponseSetIntParameter(
        p.response, "aotrt_compute_end_ns", static_cast<int64_t>(p.compute_end_ns)));
  }
}

bool autocomplete_enabled(TRITONBACKEND_Model* model) {
  bool complete = false;
  CHECK_TRITON(TRITONBACKEND_ModelAutoCompleteConfig(model, &complete));
  return complete;
}

// Gives the server the auto-completed `config`, and reads back what it kept.
void set_config(TRITONBACKEND_Model* model, nlohmann::json& config) {
  const std::string text = config.dump();
  Message m;
  CHECK_TRITON(TRITONSERVER_MessageNewFromSerializedJson(&m.message, text.data(), text.size()));
  CHECK_TRITON(TRITONBACKEND_ModelSetConfig(model, 1, m.message));
  config = model_config_json(model);
}

// ModelInitialize of a generation model (Note [Generation models]): the
// package is loaded as a Generator, so that what cannot be served fails the
// load, not the first request.
void initialize_generation(TRITONBACKEND_Model* model, ModelState& state, nlohmann::json& config,
                           uint64_t version) {
  if (autocomplete_enabled(model) && autocomplete_generation(config)) set_config(model, config);
  state.generation = read_generation_config(config);
  const GenerationModelConfig& g = *state.generation;
  state.generator_options.load.cuda_graph = g.cuda_graph;
  state.generator_options.max_cache_len = g.max_cache_len;
  state.generator_options.eos_token_ids = g.eos_token_ids;
  try {
    state.spare_generator.emplace(Generator::load(state.package_path, state.generator_options));
  } catch (const Error& e) {
    throw Error(e.kind(), "model '" + state.name + "' version " + std::to_string(version) +
                              ": cannot load " + state.package_path + " as a generation package: " +
                              e.what());
  }
  const GenerationConfig& c = state.spare_generator->config();
  std::string eos;
  for (int64_t t : c.eos_token_ids) eos += (eos.empty() ? "" : ",") + std::to_string(t);
  const Device device = state.spare_generator->program().device();
  log(TRITONSERVER_LOG_INFO,
      "aotrt: model '" + state.name + "' version " + std::to_string(version) + ": generation (" +
          (g.decoupled ? "decoupled, streaming" : "one response a request") + ") from " +
          state.package_path + " on " + device.str() + ": decode graph '" + c.decode_graph +
          "', prefill graph '" + c.prefill_graph + "', cache " + std::to_string(c.max_cache_len) +
          " positions, vocabulary " + std::to_string(c.vocab_size) + ", end tokens [" + eos +
          "], up to " + std::to_string(g.max_sessions) + " sessions");
}

// One run of the model for `group` (requests whose non-batch dims agree),
// their rows concatenated along dim 0 when batching.
void run_group(InstanceState& inst, std::vector<Pending*>& group, uint64_t exec_start_ns) {
  const ModelConfig& config = inst.model_state->config;
  Model& model = *inst.model;
  const bool batched = config.max_batch_size > 0;
  int64_t rows = 0;
  for (Pending* p : group) rows += p->rows;
  // One CUDA graph (kOn) replays one shape: every run takes max_batch_size
  // rows; else at least the rows the package takes.
  const bool one_graph = config.cuda_graph == CudaGraphMode::kOn;
  const int64_t run_rows = !batched   ? rows
                           : one_graph ? std::max(config.max_batch_size, config.min_batch)
                                       : std::max(rows, config.min_batch);

  std::vector<Tensor> host, inputs;  // host copies live until the run has read them
  for (size_t i = 0; i < config.inputs.size(); ++i) {
    std::vector<int64_t> sizes = group.front()->shapes[i];
    if (batched) sizes[0] = run_rows;
    Tensor t = Tensor::empty(sizes, config.inputs[i].dtype);
    auto* dst = static_cast<uint8_t*>(t.data_ptr());
    const uint64_t total = static_cast<uint64_t>(t.numel()) * element_size(t.dtype());
    uint64_t offset = 0;
    for (Pending* p : group) {
      int64_t numel = 1;
      for (int64_t s : p->shapes[i]) numel *= s;
      const uint64_t nbytes = static_cast<uint64_t>(numel) * element_size(t.dtype());
      copy_input_bytes(p->inputs[i], dst + offset, nbytes);
      offset += nbytes;
    }
    if (offset < total) std::memset(dst + offset, 0, total - offset);  // padding rows
    inputs.push_back(model.prepare_input(config.inputs[i].package_index, t));
    host.push_back(std::move(t));
  }
  const uint64_t compute_start = now_ns();
  std::vector<Tensor> outputs = model.run(inputs);
  synchronize(model.device());
  const uint64_t compute_end = now_ns();
  int64_t row = 0;
  for (Pending* p : group) {
    p->compute_start_ns = compute_start;
    p->compute_end_ns = compute_end;
    try {
      write_outputs(inst, outputs, *p, row, run_rows);
    } catch (const Error& e) {
      fail(*p, e);
    }
    row += p->rows;
  }
  synchronize(model.device());
  // The rows the server batched, padding aside: what its batch statistics count.
  TRITONSERVER_Error* stats = TRITONBACKEND_ModelInstanceReportBatchStatistics(
      inst.instance, batched ? static_cast<uint64_t>(rows) : 1, exec_start_ns, compute_start,
      compute_end, now_ns());
  if (stats != nullptr) {
    log(TRITONSERVER_LOG_ERROR, std::string("aotrt: batch statistics of '") + inst.name +
                                    "': " + TRITONSERVER_ErrorMessage(stats));
    TRITONSERVER_ErrorDelete(stats);
  }
}

void execute(InstanceState& inst, std::vector<Pending>& pending, uint64_t exec_start) {
  const ModelConfig& config = inst.model_state->config;
  std::optional<CurrentStream> current;
  if (inst.stream) current.emplace(*inst.stream);

  for (Pending& p : pending) {
    try {
      read_inputs(config, p);
    } catch (const Error& e) {
      fail(p, e);
    }
  }
  // Requests run together when batching and their non-batch dims agree;
  // otherwise one at a time.
  std::vector<std::vector<Pending*>> groups;
  for (Pending& p : pending) {
    if (p.error || p.response == nullptr) continue;
    auto fits = [&](const std::vector<Pending*>& g) {
      if (config.max_batch_size == 0) return false;
      int64_t rows = p.rows;
      for (const Pending* q : g) rows += q->rows;
      if (rows > config.max_batch_size) return false;
      for (size_t i = 0; i < p.shapes.size(); ++i) {
        if (!std::equal(p.shapes[i].begin() + 1, p.shapes[i].end(),
                        g.front()->shapes[i].begin() + 1, g.front()->shapes[i].end())) {
          return false;
        }
      }
      return true;
    };
    auto g = std::find_if(groups.begin(), groups.end(), fits);
    if (g == groups.end()) {
      groups.push_back({&p});
    } else {
      g->push_back(&p);
    }
  }
  for (std::vector<Pending*>& group : groups) {
    try {
      run_group(inst, group, exec_start);
    } catch (const Error& e) {
      for (Pending* p : group) fail(*p, e);
    } catch (const std::exception& e) {
      for (Pending* p : group) fail(*p, Error(ErrorKind::kInternal, e.what()));
    }
  }
}

// Sends each response (its error, if any), reports its statistics and
// hands the request back to the server.
void finish(InstanceState& inst, std::vector<Pending>& pending, uint64_t exec_start) {
  const uint64_t exec_end = now_ns();
  for (Pending& p : pending) {
    if (p.response != nullptr) {
      TRITONSERVER_Error* error =
          p.error ? TRITONSERVER_ErrorNew(server_code(p.error->kind()),
                                          (std::string("aotrt: ") + p.error->what()).c_str())
                  : nullptr;
      TRITONSERVER_Error* sent =
          TRITONBACKEND_ResponseSend(p.response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
      if (sent != nullptr) {
        log(TRITONSERVER_LOG_ERROR, std::string("aotrt: sending a response of '") + inst.name +
                                        "' failed: " + TRITONSERVER_ErrorMessage(sent));
        TRITONSERVER_ErrorDelete(sent);
      }
      if (error != nullptr) TRITONSERVER_ErrorDelete(error);
    }
    const bool ok = !p.error && p.response != nullptr;
    TRITONSERVER_Error* stats = TRITONBACKEND_ModelInstanceReportStatistics(
        inst.instance, p.request, ok, exec_start, ok ? p.compute_start_ns : exec_start,
        ok ? p.compute_end_ns : exec_start, exec_end);
    if (stats != nullptr) TRITONSERVER_ErrorDelete(stats);
    TRITONSERVER_Error* released =
        TRITONBACKEND_RequestRelease(p.request, TRITONSERVER_REQUEST_RELEASE_ALL);
    if (released != nullptr) {
      log(TRITONSERVER_LOG_ERROR, std::string("aotrt: releasing a request of '") + inst.name +
                                      "' failed: " + TRITONSERVER_ErrorMessage(released));
      TRITONSERVER_ErrorDelete(released);
    }
  }
}

// The state a ModelState / ModelInstanceState call wrote to *state (null when
// initialisation failed before setting one).
template <typename T>
T* state_of(TRITONSERVER_Error* err, void* const* state, const char* call) {
  check_server(err, call);
  return static_cast<T*>(*state);
}

}  // namespace
}  // namespace aotrt::triton

using namespace aotrt;
using namespace aotrt::triton;

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  return entry_boundary("TRITONBACKEND_Initialize", [&] {
    uint32_t major = 0, minor = 0;
    CHECK_TRITON(TRITONBACKEND_ApiVersion(&major, &minor));
    AOTRT_CHECK(major == kTritonBackendApiMajor && minor >= kTritonBackendApiMinor, kUnsupported,
                "TRITONBACKEND_Initialize: the server's backend API is ", major, ".", minor,
                "; this backend needs ", kTritonBackendApiMajor, ".", kTritonBackendApiMinor,
                " or a later minor (Triton 2.51 or newer)");
    log(TRITONSERVER_LOG_INFO, "aotrt backend: server backend API " + std::to_string(major) + "." +
                                   std::to_string(minor));
  });
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend*) { return nullptr; }

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  return entry_boundary("TRITONBACKEND_ModelInitialize", [&] {
    auto state = std::make_unique<ModelState>();
    const char* name = nullptr;
    uint64_t version = 0;
    TRITONBACKEND_ArtifactType artifact = TRITONBACKEND_ARTIFACT_FILESYSTEM;
    const char* location = nullptr;
    CHECK_TRITON(TRITONBACKEND_ModelName(model, &name));
    CHECK_TRITON(TRITONBACKEND_ModelVersion(model, &version));
    CHECK_TRITON(TRITONBACKEND_ModelRepository(model, &artifact, &location));
    state->name = name;
    AOTRT_CHECK(artifact == TRITONBACKEND_ARTIFACT_FILESYSTEM, kUnsupported, "model '", name,
                "': its repository is not on a file system");
    nlohmann::json config = model_config_json(model);
    state->package_path = std::string(location) + "/" + std::to_string(version) + "/" +
                          model_filename(config);
    if (is_generation_model(config)) {
      initialize_generation(model, *state, config, version);
    } else {
      state->load_options.cuda_graph = cuda_graph_parameter(config);
      try {
        state->spare.emplace(Model::load(state->package_path, state->load_options));
      } catch (const Error& e) {
        throw Error(e.kind(), "model '" + state->name + "' version " + std::to_string(version) +
                                  ": cannot load " + state->package_path + ": " + e.what());
      }
      ModelInfo info = state->spare->info();

      const bool complete = autocomplete_enabled(model);
      const auto listed = config.find("output");
      const bool outputs_listed = listed != config.end() && listed->is_array() && !listed->empty();
      const bool outputs_recorded =
          info.output_specs.size() == info.output_names.size() &&
          std::all_of(info.output_specs.begin(), info.output_specs.end(),
                      [](const auto& spec) { return spec.has_value(); });
      if (complete && !outputs_listed && !outputs_recorded) {
        // Note [Outputs of a package that records none]
        info.output_specs = output_specs_from_runs(*state->spare, "model '" + state->name + "'");
        // Its one graph (kOn) would have the runs' shapes: instances load their own.
        if (state->load_options.cuda_graph == CudaGraphMode::kOn) state->spare.reset();
      }
      if (complete && autocomplete(config, info)) set_config(model, config);
      state->config = read_config(config, info);
      std::string inputs, outputs;
      for (const TensorConfig& t : state->config.inputs) inputs += " " + t.name;
      for (const TensorConfig& t : state->config.outputs) outputs += " " + t.name;
      log(TRITONSERVER_LOG_INFO, "aotrt: model '" + state->name + "' version " +
                                     std::to_string(version) + ": " + state->package_path + " on " +
                                     info.device.str() + ", max_batch_size " +
                                     std::to_string(state->config.max_batch_size) + ", inputs" +
                                     inputs + ", outputs" + outputs +
                                     (info.device.is_cuda()
                                          ? std::string(", CUDA graphs ") +
                                                cuda_graph_mode_name(state->config.cuda_graph)
                                          : std::string()));
    }
    CHECK_TRITON(TRITONBACKEND_ModelSetState(model, state.get()));
    state.release();
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  return entry_boundary("TRITONBACKEND_ModelFinalize", [&] {
    void* state = nullptr;
    delete state_of<ModelState>(TRITONBACKEND_ModelState(model, &state), &state,
                                "TRITONBACKEND_ModelState");
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  return entry_boundary("TRITONBACKEND_ModelInstanceInitialize", [&] {
    TRITONBACKEND_Model* model = nullptr;
    CHECK_TRITON(TRITONBACKEND_ModelInstanceModel(instance, &model));
    void* model_state = nullptr;
    auto state = std::make_unique<InstanceState>();
    state->instance = instance;
    state->model_state = state_of<ModelState>(TRITONBACKEND_ModelState(model, &model_state),
                                              &model_state, "TRITONBACKEND_ModelState");
    AOTRT_CHECK(state->model_state != nullptr, kInternal, "model of instance has no state");
    const char* name = nullptr;
    TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
    int32_t device_id = 0;
    CHECK_TRITON(TRITONBACKEND_ModelInstanceName(instance, &name));
    CHECK_TRITON(TRITONBACKEND_ModelInstanceKind(instance, &kind));
    CHECK_TRITON(TRITONBACKEND_ModelInstanceDeviceId(instance, &device_id));
    state->name = name;
    AOTRT_CHECK(kind == TRITONSERVER_INSTANCEGROUPKIND_CPU ||
                    kind == TRITONSERVER_INSTANCEGROUPKIND_GPU,
                kUnsupported, "instance '", name, "': the aotrt backend serves KIND_CPU and "
                "KIND_GPU instance groups only");
    const bool gpu = kind == TRITONSERVER_INSTANCEGROUPKIND_GPU;
    state->device = gpu ? Device{DeviceType::CUDA, device_id} : cpu_device();
    Device loaded_on;
    if (ModelState& ms = *state->model_state; ms.generation) {
      // Each sequence has its own stream (Note [Serving generation]).
      Generator generator = ms.generator_for(state->device);
      loaded_on = generator.program().device();
      if (loaded_on == state->device) {
        state->generation = std::make_unique<GenerationServer>(*ms.generation, std::move(generator),
                                                               instance, state->name);
      }
    } else {
      if (gpu) state->stream = std::make_unique<CudaStream>(device_id);
      std::optional<CurrentStream> current;
      if (state->stream) current.emplace(*state->stream);
      state->model.emplace(ms.model_for(state->device));
      loaded_on = state->model->device();
    }
    AOTRT_CHECK(loaded_on == state->device, kInvalidArgument, "instance '", name, "' is ",
                gpu ? "KIND_GPU" : "KIND_CPU", " on ", state->device.str(), " but the package ",
                state->model_state->package_path, " runs on ", loaded_on.str(),
                "; set instance_group's kind to match the package");
    log(TRITONSERVER_LOG_INFO, "aotrt: instance '" + state->name + "' on " + state->device.str());
    CHECK_TRITON(TRITONBACKEND_ModelInstanceSetState(instance, state.get()));
    state.release();
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  return entry_boundary("TRITONBACKEND_ModelInstanceFinalize", [&] {
    void* state = nullptr;
    delete state_of<InstanceState>(TRITONBACKEND_ModelInstanceState(instance, &state), &state,
                                   "TRITONBACKEND_ModelInstanceState");
  });
}

// Once it returns success the requests are ours: every one gets a response
// (an error response when it cannot be served) and is released here, so the
// body never fails after taking them.
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  InstanceState* inst = nullptr;
  TRITONSERVER_Error* err = entry_boundary("TRITONBACKEND_ModelInstanceExecute", [&] {
    void* state = nullptr;
    inst = state_of<InstanceState>(TRITONBACKEND_ModelInstanceState(instance, &state), &state,
                                   "TRITONBACKEND_ModelInstanceState");
    AOTRT_CHECK(inst != nullptr, kInternal, "TRITONBACKEND_ModelInstanceExecute: the instance has no state");
  });
  if (err != nullptr) return err;  // the requests stay the server's
  if (inst->generation) {  // Note [Serving generation]: queued, answered by a slot
    for (uint32_t r = 0; r < request_count; ++r) inst->generation->submit(requests[r]);
    return nullptr;
  }

  const uint64_t exec_start = now_ns();
  std::vector<Pending> pending(request_count);
  for (uint32_t r = 0; r < request_count; ++r) {
    pending[r].request = requests[r];
    TRITONSERVER_Error* made = TRITONBACKEND_ResponseNew(&pending[r].response, requests[r]);
    if (made != nullptr) {
      log(TRITONSERVER_LOG_ERROR, std::string("aotrt: no response for a request of '") +
                                      inst->name + "': " + TRITONSERVER_ErrorMessage(made));
      TRITONSERVER_ErrorDelete(made);
      pending[r].response = nullptr;
    }
  }
  try {
    execute(*inst, pending, exec_start);
  } catch (const Error& e) {
    for (Pending& p : pending) fail(p, e);
  } catch (const std::exception& e) {
    for (Pending& p : pending) fail(p, Error(ErrorKind::kInternal, e.what()));
  }
  finish(*inst, pending, exec_start);
  return nullptr;
}

}  // extern "C"
