// The proxy executor: see Note [Proxy executor] in proxy_executor.h.
#include "runtime/proxy_executor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "cuda/cuda.h"
#include "core/handles.h"

namespace aotrt::runtime {
namespace {

using nlohmann::json;

std::map<std::string, ProxyOp, std::less<>>& registry() {
  static std::map<std::string, ProxyOp, std::less<>> ops;
  return ops;
}

// torch._export.serde.schema.ScalarType -> aotrt's codes (c10's numbering).
std::optional<ScalarType> serialized_dtype(int64_t code) {
  switch (code) {
    case 1: return ScalarType::UInt8;
    case 2: return ScalarType::Int8;
    case 3: return ScalarType::Int16;
    case 4: return ScalarType::Int32;
    case 5: return ScalarType::Int64;
    case 6: return ScalarType::Float16;
    case 7: return ScalarType::Float32;
    case 8: return ScalarType::Float64;
    case 9: return ScalarType::Complex32;
    case 10: return ScalarType::Complex64;
    case 11: return ScalarType::Complex128;
    case 12: return ScalarType::Bool;
    case 13: return ScalarType::BFloat16;
    case 28: return ScalarType::UInt16;
    case 29: return ScalarType::Float8_e4m3fn;
    case 30: return ScalarType::Float8_e5m2;
    case 31: return ScalarType::Float8_e4m3fnuz;
    case 32: return ScalarType::Float8_e5m2fnuz;
    case 34: return ScalarType::UInt32;
    case 35: return ScalarType::UInt64;
    default: return std::nullopt;
  }
}

// Note [Non-finite floats in the extern-node JSON]
// AOTInductor writes the JSON with Python's json.dumps, which spells the
// floats inf, -inf and nan as the bare tokens Infinity, -Infinity and NaN
// (not JSON; e.g. clamp(x, max=inf) or nan_to_num's defaults). Before
// parsing, such tokens outside strings become the strings "Infinity",
// "-Infinity" and "NaN", which a float argument reads back as the value.
std::string quote_nonfinite_tokens(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (const char* token : {"-Infinity", "Infinity", "NaN"}) {
      const size_t n = std::char_traits<char>::length(token);
      if (text.compare(i, n, token) == 0) {
        out += '"';
        out += token;
        out += '"';
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

bool is_json_float(const json& v) {
  if (v.is_number()) return true;
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  return s == "Infinity" || s == "-Infinity" || s == "NaN";
}

double json_float(const json& v) {
  if (v.is_number()) return v.get<double>();
  const auto& s = v.get_ref<const std::string&>();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  return s == "Infinity" ? std::numeric_limits<double>::infinity()
                         : -std::numeric_limits<double>::infinity();
}

// The one key of a serialised Argument ({"as_tensor": {...}}).
std::pair<std::string, const json*> union_member(const json& arg, const std::string& what) {
  AOTRT_CHECK(arg.is_object() && arg.size() == 1, kPackage, what,
              ": an argument is not a one-key object: ", arg.dump());
  return {arg.begin().key(), &arg.begin().value()};
}

ProxyArg parse_input(const json& named, int& tensors, int& ints, std::string& unsupported,
                     const std::string& what) {
  AOTRT_CHECK(named.is_object() && named.contains("name") && named["name"].is_string() &&
                  named.contains("arg"),
              kPackage, what, ": an input is not {\"name\", \"arg\"}: ", named.dump());
  ProxyArg a;
  a.name = named["name"].get<std::string>();
  const auto [kind, value] = union_member(named["arg"], what + " input '" + a.name + "'");
  const json& v = *value;
  a.kind = kind;
  a.tensor_begin = tensors;
  a.int_begin = ints;
  if (kind == "as_tensor") {
    a.tensor_count = 1;
  } else if (kind == "as_tensors") {
    AOTRT_CHECK(v.is_array(), kPackage, what, ": as_tensors of '", a.name, "' is not a list");
    a.tensor_count = static_cast<int>(v.size());
  } else if (kind == "as_optional_tensors") {
    AOTRT_CHECK(v.is_array(), kPackage, what, ": as_optional_tensors of '", a.name,
                "' is not a list");
    for (const json& item : v) {
      const bool present = union_member(item, what).first == "as_tensor";
      a.present.push_back(present);
      a.tensor_count += present ? 1 : 0;
    }
  } else if (kind == "as_optional_tensor") {
    const bool present = union_member(v, what).first == "as_tensor";
    a.kind = present ? "as_tensor" : "as_none";
    a.tensor_count = present ? 1 : 0;
  } else if (kind == "as_int" || kind == "as_sym_int") {
    a.int_count = 1;
  } else if (kind == "as_ints" || kind == "as_sym_ints") {
    AOTRT_CHECK(v.is_array(), kPackage, what, ": ", kind, " of '", a.name, "' is not a list");
    a.int_count = static_cast<int>(v.size());
  } else if (kind == "as_float" && is_json_float(v)) {
    a.value = json_float(v);
  } else if (kind == "as_bool" && v.is_boolean()) {
    a.value = v.get<bool>();
  } else if (kind == "as_string" && v.is_string()) {
    a.value = v.get<std::string>();
  } else if ((kind == "as_scalar_type" || kind == "as_layout" || kind == "as_memory_format") &&
             v.is_number_integer()) {
    a.value = v.get<int64_t>();
  } else if (kind == "as_floats" && v.is_array() &&
             std::all_of(v.begin(), v.end(), [](const json& x) { return is_json_float(x); })) {
    std::vector<double> values;
    for (const json& x : v) values.push_back(json_float(x));
    a.value = std::move(values);
  } else if (kind == "as_bools" && v.is_array()) {
    a.value = v.get<std::vector<bool>>();
  } else if (kind == "as_device" && v.is_object() && v.contains("type")) {
    // "cpu", "cuda", or "cuda:N" when the JSON names the index.
    std::string device = v["type"].get<std::string>();
    if (v.contains("index") && v["index"].is_number_integer()) {
      device += ":" + std::to_string(v["index"].get<int64_t>());
    }
    a.value = std::move(device);
  } else if (kind == "as_none") {
  } else {
    // as_custom_obj, as_graph, symbolic floats and bools, ...: no op aotrt
    // serves takes them.
    unsupported = "argument '" + a.name + "' is passed as " + kind + ", which aotrt's proxy "
                  "executor does not take";
  }
  tensors += a.tensor_count;
  ints += a.int_count;
  return a;
}

}  // namespace

std::vector<ExternNode> parse_extern_nodes(const std::string& text, const std::string& what) {
  const json doc = json::parse(quote_nonfinite_tokens(text), nullptr, /*allow_exceptions=*/false);
  AOTRT_CHECK(!doc.is_discarded() && doc.is_object() && doc.contains("nodes") &&
                  doc["nodes"].is_array(),
              kPackage, what, ": not the extern-node JSON AOTInductor writes ({\"nodes\": [...]})");
  std::vector<ExternNode> nodes;
  for (const json& entry : doc["nodes"]) {
    AOTRT_CHECK(entry.is_object() && entry.contains("node") && entry["node"].is_object(),
                kPackage, what, ": extern node ", nodes.size(), " has no \"node\" object");
    const json& n = entry["node"];
    AOTRT_CHECK(n.contains("target") && n["target"].is_string() && n.contains("inputs") &&
                    n["inputs"].is_array() && n.contains("outputs") && n["outputs"].is_array(),
                kPackage, what, ": extern node ", nodes.size(),
                " lacks its target, inputs or outputs");
    ExternNode node;
    node.target = n["target"].get<std::string>();
    const std::string where = what + ": extern node " + std::to_string(nodes.size()) + " (" +
                              node.target + ")";
    int tensors = 0, ints = 0;
    for (const json& named : n["inputs"]) {
      node.inputs.push_back(parse_input(named, tensors, ints, node.unsupported, where));
    }
    for (const json& out : n["outputs"]) {
      const auto [kind, value] = union_member(out, where + " output");
      ExternNode::Output o;
      o.tensor_begin = tensors;
      if (kind == "as_tensor") {
        o.tensor_count = 1;
      } else if (kind == "as_tensors" && value->is_array()) {
        o.tensor_count = static_cast<int>(value->size());
      } else if (kind == "as_optional_tensor") {
        o.tensor_count = union_member(*value, where).first == "as_tensor" ? 1 : 0;
      } else if (kind == "as_none") {
      } else if (node.unsupported.empty()) {
        node.unsupported = "an output is returned as " + kind +
                           ", which aotrt's proxy executor does not hand out";
      }
      tensors += o.tensor_count;
      node.outputs.push_back(o);
    }
    node.num_tensors = tensors;
    node.num_ints = ints;
    nodes.push_back(std::move(node));
  }
  return nodes;
}

ProxyOpRegistrar::ProxyOpRegistrar(ProxyOp op) {
  const std::string target = op.target;
  registry().emplace(target, std::move(op));
}

const ProxyOp* find_proxy_op(std::string_view target) {
  auto& ops = registry();
  auto it = ops.find(target);
  // "aten::op.default" and "aten::op" name the same overload.
  if (it == ops.end() && target.ends_with(".default")) {
    it = ops.find(target.substr(0, target.size() - 8));
  }
  return it == ops.end() ? nullptr : &it->second;
}

std::vector<std::string> proxy_op_targets() {
  std::vector<std::string> names;
  for (const auto& [name, op] : registry()) names.push_back(name);
  return names;
}

std::string proxy_refusal(const ExternNode& node, const std::string& device) {
  if (!node.unsupported.empty()) return node.target + ": " + node.unsupported;
  const ProxyOp* op = find_proxy_op(node.target);
  if (op == nullptr) return node.target + " (no aotrt implementation of this op)";
  for (const ProxyArg& a : node.inputs) {
    if (std::find(op->arguments.begin(), op->arguments.end(), a.name) == op->arguments.end()) {
      return node.target + ": argument '" + a.name + "' is not one aotrt's " + node.target +
             " takes";
    }
  }
  const unsigned want = device == "cpu" ? kProxyCpu : kProxyCuda;
  if ((op->devices & want) == 0) {
    return node.target + " (aotrt has no " + device + " kernel for it)";
  }
  return {};
}

void bind_run_time_defaults(ExternNode& node, const ProxyOp& op) {
  bool inserted = false;
  for (const auto& entry : op.run_time_defaults) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
    const std::string_view name = entry.first;
    const int count = entry.second;
    const bool given = std::any_of(node.inputs.begin(), node.inputs.end(),
                                   [&](const ProxyArg& a) { return a.name == name; });
    if (given) continue;
    ProxyArg a;
    a.name = std::string(name);
    a.kind = count == 1 ? "as_int" : "as_ints";
    a.int_count = count;
    node.inputs.push_back(std::move(a));
    inserted = true;
  }
  if (!inserted) return;
  auto place = [&](const ProxyArg& a) {
    return std::find(op.arguments.begin(), op.arguments.end(), a.name) - op.arguments.begin();
  };
  std::stable_sort(node.inputs.begin(), node.inputs.end(),
                   [&](const ProxyArg& x, const ProxyArg& y) { return place(x) < place(y); });
  int ints = 0;
  for (ProxyArg& a : node.inputs) {
    a.int_begin = ints;
    ints += a.int_count;
  }
  node.num_ints = ints;
}

ProxyCall::ProxyCall(const ExternNode& node, int node_index, const int64_t* ints,
                     AtenTensorHandle* tensors)
    : node_(node), ints_(ints), tensors_(tensors),
      what_("proxy executor: " + node.target + " (extern node " + std::to_string(node_index) +
            ")") {}

const ProxyArg* ProxyCall::find(std::string_view name) const {
  for (const ProxyArg& a : node_.inputs) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const ProxyArg& ProxyCall::require(std::string_view name, const char* kind) const {
  const ProxyArg* a = find(name);
  AOTRT_CHECK(a != nullptr, kInvalidArgument, what_, ": argument '", name, "' (", kind,
              ") is missing from the package's extern-node JSON");
  return *a;
}

bool ProxyCall::has_value(std::string_view name) const {
  const ProxyArg* a = find(name);
  return a != nullptr && a->kind != "as_none";
}

const TensorImpl& ProxyCall::tensor(std::string_view name) const {
  const ProxyArg& a = require(name, "Tensor");
  AOTRT_CHECK(a.tensor_count == 1 && a.kind == "as_tensor", kInvalidArgument, what_,
              ": argument '", name, "' is ", a.kind, ", not a tensor");
  return handle_get_defined(tensors_[a.tensor_begin], what_.c_str());
}

const TensorImpl* ProxyCall::optional_tensor(std::string_view name) const {
  const ProxyArg* a = find(name);
  if (a == nullptr || a->kind == "as_none") return nullptr;
  return &tensor(name);
}

std::vector<const TensorImpl*> ProxyCall::tensors(std::string_view name) const {
  const ProxyArg& a = require(name, "Tensor[]");
  AOTRT_CHECK(a.kind == "as_tensors" || a.kind == "as_optional_tensors", kInvalidArgument,
              what_, ": argument '", name, "' is ", a.kind, ", not a tensor list");
  std::vector<const TensorImpl*> out;
  int next = a.tensor_begin;
  const size_t n = a.kind == "as_tensors" ? static_cast<size_t>(a.tensor_count) : a.present.size();
  for (size_t i = 0; i < n; ++i) {
    if (a.kind == "as_optional_tensors" && !a.present[i]) {
      out.push_back(nullptr);
    } else {
      out.push_back(&handle_get_defined(tensors_[next++], what_.c_str()));
    }
  }
  return out;
}

int64_t ProxyCall::int_arg(std::string_view name, std::optional<int64_t> dflt) const {
  const ProxyArg* a = find(name);
  if (a == nullptr && dflt) return *dflt;
  const ProxyArg& r = require(name, "int");
  AOTRT_CHECK(r.int_count == 1 && (r.kind == "as_int" || r.kind == "as_sym_int"),
              kInvalidArgument, what_, ": argument '", name, "' is ", r.kind, ", not an int");
  return ints_[r.int_begin];
}

std::optional<int64_t> ProxyCall::optional_int(std::string_view name) const {
  const ProxyArg* a = find(name);
  if (a == nullptr || a->kind == "as_none") return std::nullopt;
  return int_arg(name);
}

std::vector<int64_t> ProxyCall::ints(std::string_view name,
                                     std::optional<std::vector<int64_t>> dflt) const {
  const ProxyArg* a = find(name);
  if (a == nullptr && dflt) return *dflt;
  const ProxyArg& r = require(name, "int[]");
  if (r.kind == "as_int" || r.kind == "as_sym_int") return {ints_[r.int_begin]};  // int[1]
  AOTRT_CHECK(r.kind == "as_ints" || r.kind == "as_sym_ints", kInvalidArgument, what_,
              ": argument '", name, "' is ", r.kind, ", not an int list");
  return std::vector<int64_t>(ints_ + r.int_begin, ints_ + r.int_begin + r.int_count);
}

std::optional<std::vector<int64_t>> ProxyCall::optional_ints(std::string_view name) const {
  const ProxyArg* a = find(name);
  if (a == nullptr || a->kind == "as_none") return std::nullopt;
  return ints(name);
}

double ProxyCall::float_arg(std::string_view name, std::optional<double> dflt) const {
  const ProxyArg* a = find(name);
  if (a == nullptr && dflt) return *dflt;
  const ProxyArg& r = require(name, "float");
  if (r.kind == "as_int" || r.kind == "as_sym_int") return static_cast<double>(ints_[r.int_begin]);
  AOTRT_CHECK(std::holds_alternative<double>(r.value), kInvalidArgument, what_, ": argument '",
              name, "' is ", r.kind, ", not a float");
  return std::get<double>(r.value);
}

std::optional<double> ProxyCall::optional_float(std::string_view name) const {
  const ProxyArg* a = find(name);
  if (a == nullptr || a->kind == "as_none") return std::nullopt;
  return float_arg(name);
}

std::optional<std::vector<double>> ProxyCall::optional_floats(std::string_view name) const {
  const ProxyArg* a = find(name);
  if (a == nullptr || a->kind == "as_none") return std::nullopt;
  AOTRT_CHECK(std::holds_alternative<std::vector<double>>(a->value), kInvalidArgument, what_,
              ": argument '", name, "' is ", a->kind, ", not a list of floats");
  return std::get<std::vector<double>>(a->value);
}

bool ProxyCall::bool_arg(std::string_view name, std::optional<bool> dflt) const {
  const ProxyArg* a = find(name);
  if (a == nullptr && dflt) return *dflt;
  const ProxyArg& r = require(name, "bool");
  AOTRT_CHECK(std::holds_alternative<bool>(r.value), kInvalidArgument, what_, ": argument '",
              name, "' is ", r.kind, ", not a bool");
  return std::get<bool>(r.value);
}

Device ProxyCall::device_arg(std::string_view name, std::optional<Device> dflt) const {
  if (find(name) == nullptr && dflt) return *dflt;
  const std::string text = string_arg(name);
  if (text == "cpu") return cpu_device();
  if (text == "cuda") return Device{DeviceType::CUDA, cuda::current_device()};
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() < 12 &&
      text.find_first_not_of("0123456789", 5) == std::string::npos) {
    return Device{DeviceType::CUDA, std::stoi(text.substr(5))};
  }
  AOTRT_FAIL(kUnsupported, what_, ": argument '", name, "' is device '", text,
             "'; aotrt serves cpu and cuda");
}

std::string ProxyCall::string_arg(std::string_view name, std::optional<std::string> dflt) const {
  const ProxyArg* a = find(name);
  if (a == nullptr && dflt) return *dflt;
  const ProxyArg& r = require(name, "str");
  AOTRT_CHECK(std::holds_alternative<std::string>(r.value), kInvalidArgument, what_,
              ": argument '", name, "' is ", r.kind, ", not a string");
  return std::get<std::string>(r.value);
}

std::optional<std::string> ProxyCall::optional_string(std::string_view name) const {
  const ProxyArg* a = find(name);
  if (a == nullptr || a->kind == "as_none") return std::nullopt;
  return string_arg(name);
}

double ProxyCall::scalar_arg(std::string_view name, std::optional<double> dflt) const {
  const ProxyArg* a = find(name);
  if (a == nullptr && dflt) return *dflt;
  const ProxyArg& r = require(name, "Scalar");
  if (std::holds_alternative<bool>(r.value)) return std::get<bool>(r.value) ? 1.0 : 0.0;
  return float_arg(name);
}

std::optional<ScalarType> ProxyCall::optional_dtype(std::string_view name) const {
  const ProxyArg* a = find(name);
  if (a == nullptr || a->kind == "as_none") return std::nullopt;
  AOTRT_CHECK(a->kind == "as_scalar_type", kInvalidArgument, what_, ": argument '", name,
              "' is ", a->kind, ", not a dtype");
  const auto t = serialized_dtype(std::get<int64_t>(a->value));
  AOTRT_CHECK(t.has_value(), kUnsupported, what_, ": argument '", name,
              "' has serialised dtype code ", std::get<int64_t>(a->value),
              ", which aotrt does not know");
  return t;
}

ScalarType ProxyCall::dtype(std::string_view name) const {
  require(name, "ScalarType");
  const std::optional<ScalarType> t = optional_dtype(name);
  AOTRT_CHECK(t.has_value(), kInvalidArgument, what_, ": argument '", name,
              "' (ScalarType) is None");
  return *t;
}

std::optional<MemoryFormat> ProxyCall::optional_memory_format(
    std::string_view name) const {
  const ProxyArg* a = find(name);
  if (a == nullptr || a->kind == "as_none") return std::nullopt;
  AOTRT_CHECK(a->kind == "as_memory_format", kInvalidArgument, what_, ": argument '", name,
              "' is ", a->kind, ", not a memory format");
  switch (std::get<int64_t>(a->value)) {
    case 1: return MemoryFormat::Contiguous;
    case 2: return MemoryFormat::ChannelsLast;
    case 3: return MemoryFormat::ChannelsLast3d;
    case 4: return std::nullopt;  // preserve_format
    default:
      AOTRT_FAIL(kUnsupported, what_, ": argument '", name, "' has serialised memory format ",
                 std::get<int64_t>(a->value), ", which aotrt does not know");
  }
}

void ProxyCall::set_output(size_t index, std::unique_ptr<TensorImpl> t) {
  AOTRT_CHECK(index < node_.outputs.size(), kInternal, what_, ": output ", index, " of ",
              node_.outputs.size());
  const ExternNode::Output& o = node_.outputs[index];
  if (o.tensor_count == 0) return;  // the caller did not ask for it
  AOTRT_CHECK(o.tensor_count == 1, kInternal, what_, ": output ", index, " is a list");
  TensorImpl& slot = handle_get(tensors_[o.tensor_begin], what_.c_str());
  if (&slot != t.get()) slot.assign(*t);
}

void ProxyCall::set_output_list(size_t index, std::vector<std::unique_ptr<TensorImpl>> ts) {
  AOTRT_CHECK(index < node_.outputs.size(), kInternal, what_, ": output ", index, " of ",
              node_.outputs.size());
  const ExternNode::Output& o = node_.outputs[index];
  AOTRT_CHECK(static_cast<size_t>(o.tensor_count) == ts.size(), kInternal, what_, ": output ",
              index, " has ", ts.size(), " tensors, the package expects ", o.tensor_count);
  for (size_t i = 0; i < ts.size(); ++i) {
    handle_get(tensors_[o.tensor_begin + static_cast<int>(i)], what_.c_str()).assign(*ts[i]);
  }
}

ProxyExecutor::ProxyExecutor(std::vector<ExternNode> nodes, const std::string& device,
                             const std::string& what)
    : nodes_(std::move(nodes)), what_(what) {
  std::vector<std::string> refused;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::string why = proxy_refusal(nodes_[i], device);
    if (!why.empty()) refused.push_back(why);
    const ProxyOp* op = find_proxy_op(nodes_[i].target);
    if (why.empty()) bind_run_time_defaults(nodes_[i], *op);
    ops_.push_back(op);
  }
  if (!refused.empty()) {
    std::ostringstream msg;
    for (size_t i = 0; i < refused.size(); ++i) msg << (i ? "; " : "") << refused[i];
    AOTRT_FAIL(kPackage, what, ": the model calls ", refused.size(),
               " op(s) through the proxy executor that aotrt does not serve: ", msg.str());
  }
}

void ProxyExecutor::call(int node_index, int num_ints, const int64_t* ints, int num_tensors,
                         AtenTensorHandle* tensors) const {
  AOTRT_CHECK(node_index >= 0 && static_cast<size_t>(node_index) < nodes_.size(),
              kInvalidArgument, "aoti_torch_proxy_executor_call_function: extern node ",
              node_index, " of a model with ", nodes_.size(), " (", what_, ")");
  const ExternNode& node = nodes_[node_index];
  AOTRT_CHECK(num_ints == node.num_ints && num_tensors == node.num_tensors, kInvalidArgument,
              "aoti_torch_proxy_executor_call_function: ", node.target, " (extern node ",
              node_index, ") was called with ", num_ints, " ints and ", num_tensors,
              " tensors; its JSON describes ", node.num_ints, " and ", node.num_tensors);
  AOTRT_CHECK((num_ints == 0 || ints != nullptr) && (num_tensors == 0 || tensors != nullptr),
              kInvalidArgument, "aoti_torch_proxy_executor_call_function: null argument arrays");
  ProxyCall call(node, node_index, ints, tensors);
  ops_[node_index]->fn(call);
}

}  // namespace aotrt::runtime
