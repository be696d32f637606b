#include "triton/config.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <sstream>

namespace aotrt::triton {
namespace {

struct TypeName {
  ScalarType dtype;
  const char* config;
  TRITONSERVER_DataType server;
};

constexpr std::array<TypeName, 13> kTypes = {{
    {ScalarType::Bool, "TYPE_BOOL", TRITONSERVER_TYPE_BOOL},
    {ScalarType::UInt8, "TYPE_UINT8", TRITONSERVER_TYPE_UINT8},
    {ScalarType::UInt16, "TYPE_UINT16", TRITONSERVER_TYPE_UINT16},
    {ScalarType::UInt32, "TYPE_UINT32", TRITONSERVER_TYPE_UINT32},
    {ScalarType::UInt64, "TYPE_UINT64", TRITONSERVER_TYPE_UINT64},
    {ScalarType::Int8, "TYPE_INT8", TRITONSERVER_TYPE_INT8},
    {ScalarType::Int16, "TYPE_INT16", TRITONSERVER_TYPE_INT16},
    {ScalarType::Int32, "TYPE_INT32", TRITONSERVER_TYPE_INT32},
    {ScalarType::Int64, "TYPE_INT64", TRITONSERVER_TYPE_INT64},
    {ScalarType::Float16, "TYPE_FP16", TRITONSERVER_TYPE_FP16},
    {ScalarType::Float32, "TYPE_FP32", TRITONSERVER_TYPE_FP32},
    {ScalarType::Float64, "TYPE_FP64", TRITONSERVER_TYPE_FP64},
    {ScalarType::BFloat16, "TYPE_BF16", TRITONSERVER_TYPE_BF16},
}};

const TypeName* find_type(ScalarType dtype) {
  for (const TypeName& t : kTypes) {
    if (t.dtype == dtype) return &t;
  }
  return nullptr;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < dims.size(); ++i) out << (i ? ", " : "") << dims[i];
  return out.str() + ']';
}

// An int64 of the config JSON: the server writes them as strings ("8").
int64_t json_int(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    AOTRT_CHECK(used == s.size() && !s.empty(), kInvalidArgument, what, ": '", s,
                "' is not an integer");
    return value;
  }
  AOTRT_FAIL(kInvalidArgument, what, ": expected an integer, got ", v.dump());
}

const nlohmann::json& list_of(const nlohmann::json& config, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  auto it = config.find(key);
  return it != config.end() && it->is_array() ? *it : empty;
}

// Whether every input (and every output the package describes) has a
// dynamic dim 0, and the largest batch they all take (-1: not recorded).
struct BatchSupport {
  bool batchable = false;
  int64_t max = -1;
};

BatchSupport batch_support(const ModelInfo& info) {
  BatchSupport b{!info.input_specs.empty(), -1};
  for (const auto& spec : info.input_specs) {
    const DynamicDim* d = spec && !spec->sizes.empty() ? spec->dynamic(0) : nullptr;
    if (d == nullptr) return {};
    if (d->max >= 0) b.max = b.max < 0 ? d->max : std::min(b.max, d->max);
  }
  for (const auto& spec : info.output_specs) {
    if (spec && (spec->sizes.empty() || spec->dynamic(0) == nullptr)) return {};
  }
  return b;
}

nlohmann::json tensor_entry(const std::string& name, const TensorSpec& spec, bool batched) {
  nlohmann::json dims = nlohmann::json::array();
  for (size_t d = batched ? 1 : 0; d < spec.sizes.size(); ++d) {
    dims.push_back(spec.dynamic(d) != nullptr ? int64_t{-1} : spec.sizes[d]);
  }
  return {{"name", name}, {"data_type", config_dtype_name(spec.dtype)}, {"dims", dims}};
}

int64_t max_batch_size(const nlohmann::json& config, const std::string& where) {
  return config.contains("max_batch_size") ? json_int(config["max_batch_size"], where + " max_batch_size")
                                           : 0;
}

// config.pbtxt's entries for every input (or output) of the package.
nlohmann::json tensor_entries(const std::vector<std::string>& names,
                              const std::vector<std::optional<TensorSpec>>& specs, bool batched,
                              const std::string& where, const char* kind, const char* recorded) {
  nlohmann::json entries = nlohmann::json::array();
  for (size_t i = 0; i < names.size(); ++i) {
    AOTRT_CHECK(i < specs.size() && specs[i].has_value(), kInvalidArgument, where,
                ": the package records no ", recorded, " for ", kind, " '", names[i],
                "' (export it with aotrt_tools.export), so config.pbtxt must list the ", kind, "s");
    entries.push_back(tensor_entry(names[i], *specs[i], batched));
  }
  return entries;
}

size_t index_of(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out.empty() ? "none" : out;
}

// One configured input or output, checked against the package's spec.
TensorConfig read_tensor(const nlohmann::json& entry, const std::string& where,
                         const std::vector<std::string>& names,
                         const std::vector<std::optional<TensorSpec>>& specs, int64_t max_batch,
                         bool is_input) {
  const char* kind = is_input ? "input" : "output";
  AOTRT_CHECK(entry.is_object() && entry.contains("name") && entry["name"].is_string(),
              kInvalidArgument, where, ": an ", kind, " without a name");
  TensorConfig t;
  t.name = entry["name"].get<std::string>();
  const std::string what = where + ": " + kind + " '" + t.name + "'";
  t.package_index = index_of(names, t.name);
  AOTRT_CHECK(t.package_index < names.size(), kInvalidArgument, what, " is not an ", kind,
              " of the package (its ", kind, "s: ", joined(names), ")");
  const std::string type = entry.value("data_type", std::string("TYPE_INVALID"));
  const std::optional<ScalarType> dtype = dtype_from_config(type);
  AOTRT_CHECK(dtype.has_value(), kInvalidArgument, what, ": data_type ", type,
              " has no aotrt dtype (numeric and bool types only)");
  t.dtype = *dtype;
  AOTRT_CHECK(!entry.contains("reshape"), kInvalidArgument, what,
              ": reshape is not supported by the aotrt backend");
  for (const auto& d : list_of(entry, "dims")) {
    t.dims.push_back(json_int(d, what + " dims"));
    AOTRT_CHECK(t.dims.back() >= -1, kInvalidArgument, what, ": dims ", dims_text(t.dims),
                " has a negative size other than -1");
  }

  const std::optional<TensorSpec>& spec = t.package_index < specs.size() ? specs[t.package_index]
                                                                           : std::nullopt;
  if (!spec) return t;
  AOTRT_CHECK(spec->dtype == t.dtype, kInvalidArgument, what, " is ", type,
              " but the package's is ", dtype_name(spec->dtype), " (", config_dtype_name(spec->dtype),
              ")");
  const size_t batch_dims = max_batch > 0 ? 1 : 0;
  if (max_batch > 0) {
    const DynamicDim* d = spec->sizes.empty() ? nullptr : spec->dynamic(0);
    AOTRT_CHECK(d != nullptr, kInvalidArgument, what, ": max_batch_size ", max_batch,
                " needs a package whose dim 0 is a dynamic batch, but its dims are fixed at ",
                dims_text(spec->sizes), " (export it with aotrt_tools.export --dynamic-batch N, or "
                "set max_batch_size: 0 and give the full shape in dims)");
    AOTRT_CHECK(!is_input || d->max < 0 || d->max >= max_batch, kInvalidArgument, what,
                ": max_batch_size ", max_batch, " but the package takes batches of at most ",
                d->max);
  }
  AOTRT_CHECK(spec->sizes.size() == t.dims.size() + batch_dims, kInvalidArgument, what, ": dims ",
              dims_text(t.dims), (batch_dims ? " (after the batch dim)" : ""), " but the package's ",
              kind, " has ", spec->sizes.size(), " dims ", dims_text(spec->sizes));
  for (size_t i = 0; i < t.dims.size(); ++i) {
    const size_t d = i + batch_dims;
    const DynamicDim* dyn = spec->dynamic(d);
    const bool fits = t.dims[i] == -1 || t.dims[i] == spec->sizes[d] ||
                      (dyn != nullptr && t.dims[i] >= dyn->min &&
                       (dyn->max < 0 || t.dims[i] <= dyn->max));
    AOTRT_CHECK(fits, kInvalidArgument, what, ": dims ", dims_text(t.dims),
                (batch_dims ? " (after the batch dim)" : ""), " do not fit the package's ",
                dims_text(spec->sizes), " at dim ", d);
  }
  return t;
}


// Note [Generation models]: the tensors a generation model may configure.
struct GenerationTensor {
  const char* name;
  std::initializer_list<ScalarType> dtypes;  // the first is auto-complete's
  int dims;        // 1: [-1] or [n] (input_ids), [1] (scalars); 2: [-1, -1]
  bool required;
  bool scalar;     // dims [1]
};

constexpr ScalarType kI32 = ScalarType::Int32, kI64 = ScalarType::Int64;
const GenerationTensor kGenerationInputs[] = {
    {"input_ids", {kI32, kI64}, 1, true, false},
    {"input_lengths", {kI32, kI64}, 1, false, true},
    {"request_output_len", {kI32, kI64}, 1, true, true},
    {"end_id", {kI32, kI64}, 1, false, true},
    {"streaming", {ScalarType::Bool}, 1, false, true},
    {"temperature", {ScalarType::Float32, ScalarType::Float64}, 1, false, true},
    {"runtime_top_k", {kI32, kI64}, 1, false, true},
    {"runtime_top_p", {ScalarType::Float32, ScalarType::Float64}, 1, false, true},
    {"random_seed", {ScalarType::UInt64, kI64, kI32}, 1, false, true},
    {"beam_width", {kI32, kI64}, 1, false, true},
    {"exclude_input_in_output", {ScalarType::Bool}, 1, false, true},
};
const GenerationTensor kGenerationOutputs[] = {
    {"output_ids", {kI32, kI64}, 2, true, false},
    {"sequence_length", {kI32, kI64}, 1, false, false},
};

template <size_t N>
const GenerationTensor* find_tensor(const GenerationTensor (&table)[N], const std::string& name) {
  for (const GenerationTensor& t : table) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

template <size_t N>
std::string tensor_names(const GenerationTensor (&table)[N]) {
  std::string out;
  for (const GenerationTensor& t : table) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

// A parameter's string_value; nullopt when absent.
std::optional<std::string> parameter_string(const nlohmann::json& config, const char* key) {
  auto params = config.find("parameters");
  if (params == config.end() || !params->is_object() || !params->contains(key)) return std::nullopt;
  const nlohmann::json& p = (*params)[key];
  return p.is_object() ? p.value("string_value", std::string()) : std::string();
}

// The generation tensors configured under `key` ("input" / "output"), checked.
template <size_t N>
std::map<std::string, ScalarType> read_generation_tensors(const nlohmann::json& config,
                                                          const char* key,
                                                          const GenerationTensor (&table)[N],
                                                          const std::string& where) {
  std::map<std::string, ScalarType> out;
  for (const auto& entry : list_of(config, key)) {
    AOTRT_CHECK(entry.is_object() && entry.contains("name") && entry["name"].is_string(),
                kInvalidArgument, where, ": an ", key, " without a name");
    const std::string name = entry["name"].get<std::string>();
    const std::string what = where + ": " + key + " '" + name + "'";
    const GenerationTensor* t = find_tensor(table, name);
    AOTRT_CHECK(t != nullptr, kInvalidArgument, what, " is not one a generation model serves (its ",
                key, "s: ", tensor_names(table), "; Note [Generation models])");
    AOTRT_CHECK(!out.contains(name), kInvalidArgument, what, " is listed twice");
    const std::string type = entry.value("data_type", std::string("TYPE_INVALID"));
    const std::optional<ScalarType> dtype = dtype_from_config(type);
    std::string allowed;
    for (ScalarType d : t->dtypes) allowed += (allowed.empty() ? "" : " or ") + std::string(config_dtype_name(d));
    AOTRT_CHECK(dtype && std::find(t->dtypes.begin(), t->dtypes.end(), *dtype) != t->dtypes.end(),
                kInvalidArgument, what, " is ", type, "; a generation model takes ", allowed);
    std::vector<int64_t> dims;
    for (const auto& d : list_of(entry, "dims")) dims.push_back(json_int(d, what + " dims"));
    const bool fits = static_cast<int>(dims.size()) == t->dims &&
                      std::all_of(dims.begin(), dims.end(), [&](int64_t d) {
                        return t->scalar ? d == 1 : (d == -1 || d >= 1);
                      });
    AOTRT_CHECK(fits, kInvalidArgument, what, ": dims ", dims_text(dims), "; expected ",
                t->scalar ? "[1]" : t->dims == 2 ? "[-1, -1]" : "[-1]",
                config.contains("max_batch_size") && json_int(config["max_batch_size"], what) > 0
                    ? " after the batch dim"
                    : "");
    AOTRT_CHECK(!entry.contains("reshape"), kInvalidArgument, what,
                ": reshape is not supported by the aotrt backend");
    out[name] = *dtype;
  }
  for (const GenerationTensor& t : table) {
    AOTRT_CHECK(!t.required || out.contains(t.name), kInvalidArgument, where, ": a generation "
                "model needs the ", key, " '", t.name, "' in config.pbtxt (or none listed, for "
                "auto-complete to list them all)");
  }
  return out;
}

template <size_t N>
nlohmann::json generation_entries(const GenerationTensor (&table)[N], bool inputs) {
  nlohmann::json entries = nlohmann::json::array();
  for (const GenerationTensor& t : table) {
    nlohmann::json dims = t.scalar ? nlohmann::json::array({1})
                          : t.dims == 2 ? nlohmann::json::array({-1, -1})
                                        : nlohmann::json::array({-1});
    nlohmann::json e = {{"name", t.name}, {"data_type", config_dtype_name(*t.dtypes.begin())},
                        {"dims", dims}};
    if (inputs && !t.required) e["optional"] = true;
    entries.push_back(std::move(e));
  }
  return entries;
}

// A positive integer parameter; nullopt when absent.
std::optional<int64_t> positive_parameter(const nlohmann::json& config, const char* key,
                                          const std::string& where) {
  const std::optional<std::string> v = parameter_string(config, key);
  if (!v) return std::nullopt;
  const int64_t n = json_int(*v, where + ": parameter " + key);
  AOTRT_CHECK(n >= 1, kInvalidArgument, where, ": parameter ", key, " is ", n,
              "; expected a positive integer");
  return n;
}

}  // namespace

std::optional<ScalarType> dtype_from_config(const std::string& name) {
  for (const TypeName& t : kTypes) {
    if (name == t.config) return t.dtype;
  }
  return std::nullopt;
}

std::optional<ScalarType> dtype_from_server(TRITONSERVER_DataType type) {
  for (const TypeName& t : kTypes) {
    if (type == t.server) return t.dtype;
  }
  return std::nullopt;
}

const char* config_dtype_name(ScalarType dtype) {
  const TypeName* t = find_type(dtype);
  AOTRT_CHECK(t != nullptr, kUnsupported, "Triton has no data type for ", dtype_name(dtype));
  return t->config;
}

TRITONSERVER_DataType server_dtype(ScalarType dtype) {
  const TypeName* t = find_type(dtype);
  AOTRT_CHECK(t != nullptr, kUnsupported, "Triton has no data type for ", dtype_name(dtype));
  return t->server;
}

bool parameter_flag(const nlohmann::json& config, const char* key) {
  const std::string where = "model '" + config.value("name", std::string()) + "'";
  auto params = config.find("parameters");
  if (params == config.end() || !params->is_object() || !params->contains(key)) return false;
  const nlohmann::json& p = (*params)[key];
  const std::string v = p.is_object() ? p.value("string_value", std::string()) : std::string();
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  AOTRT_FAIL(kInvalidArgument, where, ": parameter ", key, " is '", v,
             "'; expected true or false");
}

CudaGraphMode cuda_graph_parameter(const nlohmann::json& config) {
  auto params = config.find("parameters");
  if (params == config.end() || !params->is_object() || !params->contains("cuda_graph")) {
    return CudaGraphMode::kAuto;
  }
  return parameter_flag(config, "cuda_graph") ? CudaGraphMode::kOn : CudaGraphMode::kOff;
}

std::string model_filename(const nlohmann::json& config) {
  const std::string name = config.value("default_model_filename", std::string());
  return name.empty() ? "model.pt2" : name;
}

std::vector<std::optional<TensorSpec>> output_specs_from_runs(Model& model,
                                                              const std::string& where) {
  const ModelInfo& info = model.info();
  // Zeros for every input, each dynamic dim `grow` past its example size.
  auto inputs_grown_by = [&](int64_t grow) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < info.input_names.size(); ++i) {
      const bool known = i < info.input_specs.size() && info.input_specs[i].has_value();
      AOTRT_CHECK(known, kInvalidArgument, where, ": the package records no layout for input '",
                  info.input_names[i], "', so its outputs cannot be found by a run and "
                  "config.pbtxt must list the outputs");
      const TensorSpec& spec = *info.input_specs[i];
      std::vector<int64_t> sizes = spec.sizes;
      for (const DynamicDim& d : spec.dynamic_dims) sizes[d.dim] += grow;
      Tensor zeros = Tensor::empty(sizes, spec.dtype);
      std::memset(zeros.data_ptr(), 0, static_cast<size_t>(zeros.numel()) * element_size(spec.dtype));
      inputs.push_back(model.prepare_input(i, zeros));
    }
    return inputs;
  };
  auto run = [&](int64_t grow) {
    std::vector<Tensor> outputs;
    try {
      outputs = model.run(inputs_grown_by(grow));
      synchronize(model.device());
    } catch (const Error& e) {
      AOTRT_FAIL(kInvalidArgument, where, ": the package records no outputs and a run on zeros "
                 "to find them failed (", e.what(), "); list the outputs in config.pbtxt");
    }
    return outputs;
  };
  // A second run only where every dynamic dim can grow by one.
  bool dynamic = false, can_grow = true;
  for (const auto& spec : info.input_specs) {
    for (const DynamicDim& d : spec ? spec->dynamic_dims : std::vector<DynamicDim>{}) {
      dynamic = true;
      can_grow = can_grow && (d.max < 0 || spec->sizes[d.dim] + 1 <= d.max);
    }
  }
  const std::vector<Tensor> first = run(0);
  const std::vector<Tensor> second = dynamic && can_grow ? run(1) : std::vector<Tensor>{};
  std::vector<std::optional<TensorSpec>> specs;
  for (size_t k = 0; k < first.size(); ++k) {
    const std::string name = k < info.output_names.size() ? info.output_names[k] : std::to_string(k);
    AOTRT_CHECK(first[k].defined(), kInvalidArgument, where, ": output '", name,
                "' is None, which Triton cannot serve");
    TensorSpec spec;
    spec.dtype = first[k].dtype();
    spec.sizes.assign(first[k].sizes().begin(), first[k].sizes().end());
    if (k < second.size() && second[k].defined() && second[k].dim() == first[k].dim()) {
      for (size_t d = 0; d < spec.sizes.size(); ++d) {
        if (second[k].sizes()[d] != spec.sizes[d]) {
          spec.dynamic_dims.push_back({static_cast<int64_t>(d), 0, -1});
        }
      }
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

bool autocomplete(nlohmann::json& config, const ModelInfo& info) {
  const std::string where = "model '" + config.value("name", std::string()) + "'";
  bool changed = false;
  if (list_of(config, "input").empty()) {
    const BatchSupport batch = batch_support(info);
    if (max_batch_size(config, where) == 0 && batch.batchable && batch.max > 0) {
      config["max_batch_size"] = batch.max;
    }
    config["input"] = tensor_entries(info.input_names, info.input_specs,
                                     max_batch_size(config, where) > 0, where, "input", "layout");
    changed = true;
  }
  if (list_of(config, "output").empty()) {
    config["output"] = tensor_entries(info.output_names, info.output_specs,
                                      max_batch_size(config, where) > 0, where, "output", "dtype");
    changed = true;
  }
  return changed;
}

ModelConfig read_config(const nlohmann::json& config, const ModelInfo& info) {
  ModelConfig m;
  m.name = config.value("name", std::string());
  const std::string where = "model '" + m.name + "'";
  m.max_batch_size = max_batch_size(config, where);
  AOTRT_CHECK(m.max_batch_size >= 0, kInvalidArgument, where, ": max_batch_size ",
              m.max_batch_size, " is negative");
  m.model_filename = model_filename(config);
  m.cuda_graph = cuda_graph_parameter(config);
  m.report_instance = parameter_flag(config, "report_instance");

  std::vector<bool> fed(info.input_names.size(), false);
  for (const auto& entry : list_of(config, "input")) {
    TensorConfig t = read_tensor(entry, where, info.input_names, info.input_specs,
                                 m.max_batch_size, /*is_input=*/true);
    AOTRT_CHECK(!fed[t.package_index], kInvalidArgument, where, ": input '", t.name,
                "' is listed twice");
    fed[t.package_index] = true;
    m.inputs.push_back(std::move(t));
  }
  for (size_t i = 0; i < fed.size(); ++i) {
    AOTRT_CHECK(fed[i], kInvalidArgument, where, ": the package's input '", info.input_names[i],
                "' is not in config.pbtxt (the model needs every input)");
  }
  std::sort(m.inputs.begin(), m.inputs.end(), [](const TensorConfig& a, const TensorConfig& b) {
    return a.package_index < b.package_index;
  });
  if (m.max_batch_size > 0) {
    for (const auto& spec : info.input_specs) {
      const DynamicDim* d = spec && !spec->sizes.empty() ? spec->dynamic(0) : nullptr;
      if (d != nullptr) m.min_batch = std::max(m.min_batch, d->min);
    }
  }
  for (const auto& entry : list_of(config, "output")) {
    m.outputs.push_back(read_tensor(entry, where, info.output_names, info.output_specs,
                                    m.max_batch_size, /*is_input=*/false));
  }
  AOTRT_CHECK(!m.outputs.empty(), kInvalidArgument, where, ": config.pbtxt lists no outputs");
  return m;
}

bool is_generation_model(const nlohmann::json& config) {
  const std::string where = "model '" + config.value("name", std::string()) + "'";
  bool decoupled = false;
  auto policy = config.find("model_transaction_policy");
  if (policy != config.end() && policy->is_object()) {
    decoupled = policy->value("decoupled", false);
  }
  const std::optional<std::string> flag = parameter_string(config, "generation");
  if (!flag) return decoupled;
  const bool generation = parameter_flag(config, "generation");
  AOTRT_CHECK(generation || !decoupled, kInvalidArgument, where, ": a decoupled model of the aotrt "
              "backend serves generation (parameter generation is 'false'; Note [Generation models])");
  return generation;
}

bool autocomplete_generation(nlohmann::json& config) {
  bool changed = false;
  if (list_of(config, "input").empty()) {
    config["input"] = generation_entries(kGenerationInputs, /*inputs=*/true);
    changed = true;
  }
  if (list_of(config, "output").empty()) {
    config["output"] = generation_entries(kGenerationOutputs, /*inputs=*/false);
    changed = true;
  }
  return changed;
}

GenerationModelConfig read_generation_config(const nlohmann::json& config) {
  GenerationModelConfig g;
  g.name = config.value("name", std::string());
  const std::string where = "model '" + g.name + "'";
  auto policy = config.find("model_transaction_policy");
  g.decoupled = policy != config.end() && policy->is_object() && policy->value("decoupled", false);
  g.max_batch_size = max_batch_size(config, where);
  AOTRT_CHECK(g.max_batch_size >= 0, kInvalidArgument, where, ": max_batch_size ",
              g.max_batch_size, " is negative");
  g.model_filename = model_filename(config);
  g.cuda_graph = cuda_graph_parameter(config);
  if (auto n = positive_parameter(config, "max_sessions", where)) g.max_sessions = *n;
  AOTRT_CHECK(g.max_sessions <= 4096, kInvalidArgument, where, ": parameter max_sessions is ",
              g.max_sessions, "; at most 4096 (each session is a thread and a cache)");
  g.max_cache_len = positive_parameter(config, "max_cache_len", where);
  if (auto eos = parameter_string(config, "eos_token_ids"); eos && !eos->empty()) {
    std::stringstream in(*eos);
    std::string item;
    while (std::getline(in, item, ',')) {
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      g.eos_token_ids.push_back(json_int(item, where + ": parameter eos_token_ids"));
    }
  }
  g.inputs = read_generation_tensors(config, "input", kGenerationInputs, where);
  g.outputs = read_generation_tensors(config, "output", kGenerationOutputs, where);
  return g;
}

}  // namespace aotrt::triton
