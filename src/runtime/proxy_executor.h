// aotrt's proxy executor: ops that have no C shim, called by name.
//
// Note [Proxy executor]
// AOTInductor compiles an op with no C-shim function into
//   aoti_torch_proxy_executor_call_function(executor, extern_node_index,
//       num_ints, flatten_int_args, num_tensors, flatten_tensor_args)
// and writes the op's name and arguments, as torch.export serialises a node
// (torch/_export/serde/schema.py: Node, NamedArgument, Argument), into
// <h>.wrapper.json beside the .so: {"nodes": [{"name", "node": {"target":
// "aten::linalg_inv_ex", "inputs": [{"name", "arg": {"as_tensor": ...}}],
// "outputs": [...]}}]}; extern_node_index is the position in "nodes".
// The flat arrays carry what is known only at run time, in the order of
// "inputs" then "outputs" (torch's cpp_wrapper_cpu.py,
// generate_extern_kernel_args_decl_if_needed):
// - tensors: one per as_tensor, one per element of as_tensors, one per
//   present element of as_optional_tensors; none for as_none; then one
//   handle per tensor output, made by the caller with
//   aoti_torch_new_uninitialized_tensor, which the executor makes an alias
//   of the op's result (as libtorch's does with `*tensor = result`).
// - ints: one per as_int / as_sym_int (an int, SymInt or int Scalar), one
//   per element of as_ints / as_sym_ints; floats, bools, strings, dtypes,
//   layouts, memory formats and devices are static and read from the JSON.
// A keyword-only argument at its schema default is left out of "inputs"
// (torch.export's serialize_inputs), and an op reads it with its default
// (the schema's, a fact of the op). The flat arrays still carry it when it
// is of a run-time kind: the wrapper fills every schema argument, defaults
// included (index_add's `Scalar alpha=1` takes an int slot). An op names
// such arguments (run_time_defaults), and binding inserts them where the
// schema has them, so the slots of the arguments after them line up.
//
// aotrt reads the JSON when it opens the package, binds every node to an op
// it registered under the node's target (AOTRT_PROXY_OP, beside the op's C
// shims in its family's shim file), and refuses the package before loading
// it when a node names an op aotrt does not serve, an argument that op does
// not take, or a device it has no kernel for.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "aotrt/shim.h"
#include "aotrt/aotrt.h"  // MemoryFormat
#include "core/tensor.h"

namespace aotrt::runtime {

// One input of an extern node, as serialised.
struct ProxyArg {
  std::string name;
  std::string kind;  // the Argument key: "as_tensor", "as_int", "as_none", ...
  // Static value (as_float, as_bool, as_string, as_scalar_type, as_layout,
  // as_memory_format, as_floats, as_bools, as_device as "cpu", "cuda" or "cuda:N").
  std::variant<std::monostate, double, bool, int64_t, std::string, std::vector<double>,
               std::vector<bool>>
      value;
  int tensor_begin = 0, tensor_count = 0;  // in the flat tensor array
  int int_begin = 0, int_count = 0;        // in the flat int array
  std::vector<bool> present;               // as_optional_tensors: which items are tensors
};

struct ExternNode {
  std::string target;  // "aten::linalg_inv_ex", "aten::foo.overload"
  std::vector<ProxyArg> inputs;
  // Per serialised output: the index in the flat tensor array of its
  // handle(s), or none (as_none). List outputs take several.
  struct Output {
    int tensor_begin = 0, tensor_count = 0;
  };
  std::vector<Output> outputs;
  int num_tensors = 0, num_ints = 0;
  std::string unsupported;  // why this node cannot be run at all, if it cannot
};

// Parses <h>.wrapper.json; throws kPackage naming `what` when it is not the
// extern-node JSON described in Note [Proxy executor].
std::vector<ExternNode> parse_extern_nodes(const std::string& text, const std::string& what);

class ProxyCall;
using ProxyOpFn = void (*)(ProxyCall&);

enum ProxyDevices : unsigned { kProxyCpu = 1u, kProxyCuda = 2u };

// An op served through the proxy executor: the target it answers to, every
// argument name its schema has, in the schema's order (others are refused at
// load time), the devices it has kernels for, the function, and the
// arguments whose schema default takes run-time ints (name, how many; see
// Note [Proxy executor]).
struct ProxyOp {
  const char* target;
  std::vector<std::string_view> arguments;
  unsigned devices;
  ProxyOpFn fn;
  std::vector<std::pair<std::string_view, int>> run_time_defaults = {};
};

// Registers at static-initialisation time; use AOTRT_PROXY_OP.
struct ProxyOpRegistrar {
  explicit ProxyOpRegistrar(ProxyOp op);
};
#define AOTRT_PROXY_CONCAT2(a, b) a##b
#define AOTRT_PROXY_CONCAT(a, b) AOTRT_PROXY_CONCAT2(a, b)
#define AOTRT_PROXY_OP(...)                                                            \
  static const ::aotrt::runtime::ProxyOpRegistrar AOTRT_PROXY_CONCAT(proxy_op_, __LINE__){ \
      ::aotrt::runtime::ProxyOp{__VA_ARGS__}}

const ProxyOp* find_proxy_op(std::string_view target);
std::vector<std::string> proxy_op_targets();  // sorted

// Why node cannot be served on `device` ("cpu"/"cuda"), or empty when it can.
std::string proxy_refusal(const ExternNode& node, const std::string& device);

// Inserts op's run-time defaults that node leaves out, at their schema
// places, and lays its int slots out again (Note [Proxy executor]).
void bind_run_time_defaults(ExternNode& node, const ProxyOp& op);

// One call of an op: typed access to its arguments and its outputs.
// Argument accessors take the schema's default for arguments that may be
// left out; a missing argument without one is refused naming the op.
class ProxyCall {
 public:
  ProxyCall(const ExternNode& node, int node_index, const int64_t* ints,
            AtenTensorHandle* tensors);

  const std::string& op() const { return node_.target; }
  const char* what() const { return what_.c_str(); }  // "proxy executor: aten::x (extern node 3)"

  // Whether the argument was passed and is not None.
  bool has_value(std::string_view name) const;
  const TensorImpl& tensor(std::string_view name) const;
  const TensorImpl* optional_tensor(std::string_view name) const;
  std::vector<const TensorImpl*> tensors(std::string_view name) const;
  int64_t int_arg(std::string_view name, std::optional<int64_t> dflt = std::nullopt) const;
  std::optional<int64_t> optional_int(std::string_view name) const;
  std::vector<int64_t> ints(std::string_view name,
                            std::optional<std::vector<int64_t>> dflt = std::nullopt) const;
  std::optional<std::vector<int64_t>> optional_ints(std::string_view name) const;
  double float_arg(std::string_view name, std::optional<double> dflt = std::nullopt) const;
  std::optional<double> optional_float(std::string_view name) const;
  // float[]? (static: as_floats); nullopt when None or left out.
  std::optional<std::vector<double>> optional_floats(std::string_view name) const;
  bool bool_arg(std::string_view name, std::optional<bool> dflt = std::nullopt) const;
  std::string string_arg(std::string_view name,
                         std::optional<std::string> dflt = std::nullopt) const;
  // A Device argument ("cpu", "cuda" or "cuda:N"; "cuda" is the current
  // CUDA device). dflt: the device when the argument is left out.
  Device device_arg(std::string_view name, std::optional<Device> dflt = std::nullopt) const;
  std::optional<std::string> optional_string(std::string_view name) const;
  // A Scalar: an int Scalar is passed at run time, a float or bool statically.
  double scalar_arg(std::string_view name, std::optional<double> dflt = std::nullopt) const;
  // ScalarType? in aotrt's codes; nullopt when None or left out.
  std::optional<ScalarType> optional_dtype(std::string_view name) const;
  // A ScalarType argument that must be given.
  ScalarType dtype(std::string_view name) const;
  // MemoryFormat?: nullopt when None, left out or torch.preserve_format;
  // torch.export's serialised codes (schema.py: contiguous 1, channels_last
  // 2, channels_last_3d 3, preserve 4); Unknown (0) and others are refused.
  std::optional<MemoryFormat> optional_memory_format(std::string_view name) const;

  size_t num_outputs() const { return node_.outputs.size(); }
  // Makes output `index`'s handle an alias of t (an op result).
  void set_output(size_t index, std::unique_ptr<TensorImpl> t);
  void set_output_list(size_t index, std::vector<std::unique_ptr<TensorImpl>> ts);

 private:
  const ProxyArg* find(std::string_view name) const;
  const ProxyArg& require(std::string_view name, const char* kind) const;

  const ExternNode& node_;
  const int64_t* ints_;
  AtenTensorHandle* tensors_;
  std::string what_;
};

// The executor one loaded model hands its container: its extern nodes, each
// bound to its op when the model was loaded.
class ProxyExecutor {
 public:
  // Throws kPackage naming every node that cannot be served on device.
  ProxyExecutor(std::vector<ExternNode> nodes, const std::string& device,
                const std::string& what);
  AOTIProxyExecutorHandle handle() { return reinterpret_cast<AOTIProxyExecutorHandle>(this); }
  void call(int node_index, int num_ints, const int64_t* ints, int num_tensors,
            AtenTensorHandle* tensors) const;

 private:
  std::vector<ExternNode> nodes_;
  std::vector<const ProxyOp*> ops_;
  std::string what_;
};

}  // namespace aotrt::runtime
