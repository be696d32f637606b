// Runs one extern node through aotrt's proxy executor as a package's wrapper calls it
// (Note [Proxy executor] in runtime/proxy_executor.h), for the op-family tests of ops that
// have no C shim: the node's target and its "inputs" as torch serialises them, the flat
// run-time ints and input tensors, and one fresh uninitialized handle per output.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "ops_testing.h"
#include "runtime/proxy_executor.h"

namespace aotrt::test {

// The cases of a family's table whose op is served through the proxy executor
// (proxied(c) true) when `proxy`, else the others (the C-shim rows).
template <typename Pred>
std::vector<OpCase> cases_where(const std::vector<OpCase>& all, Pred proxied, bool proxy) {
  std::vector<OpCase> out;
  for (const OpCase& c : all) {
    if (proxied(c) == proxy) out.push_back(c);
  }
  return out;
}

struct ProxyResult {
  AOTITorchError rc = AOTI_TORCH_FAILURE;
  std::vector<Tensor> outputs;
};

// The package device a proxy executor of backend b's packages is made for.
inline const char* proxy_device(const Backend& b) { return b.is_cpu() ? "cpu" : "cuda"; }

// `inputs_json`: the node's "inputs" array; `ints` and `tensors`: what the wrapper passes at
// run time for them (as_int / as_ints values and as_tensor inputs, in order). The outputs are
// num_outputs tensors, or one list of them (Tensor[]) when `list_output`. `device`: the
// package's device (proxy_device), whose served ops the executor checks at load.
inline ProxyResult run_proxy(const std::string& target, const std::string& inputs_json,
                             std::vector<int64_t> ints, const std::vector<AtenTensorHandle>& tensors,
                             int num_outputs, bool list_output = false,
                             const std::string& device = "cpu") {
  std::string outs;
  for (int i = 0; i < num_outputs; ++i) {
    const std::string name = R"({"name": "out)" + std::to_string(i) + "\"}";
    outs += (i ? ", " : "") + (list_output ? name : R"({"as_tensor": )" + name + "}");
  }
  if (list_output) outs = R"({"as_tensors": [)" + outs + "]}";
  const std::string json = R"({"nodes": [{"name": "buf0", "node": {"target": ")" + target +
                           R"(", "inputs": )" + inputs_json + R"(, "outputs": [)" + outs + "]}}]}";
  ProxyResult r;
  std::unique_ptr<runtime::ProxyExecutor> ex;
  try {
    ex = std::make_unique<runtime::ProxyExecutor>(runtime::parse_extern_nodes(json, "test"), device,
                                                  "test");
  } catch (const Error& e) {
    ADD_FAILURE() << "the proxy executor refused " << target << ": " << e.what();
    return r;
  }
  std::vector<AtenTensorHandle> flat = tensors;
  r.outputs.resize(static_cast<size_t>(num_outputs));
  for (Tensor& t : r.outputs) {
    EXPECT_EQ(aoti_torch_new_uninitialized_tensor(t.out()), AOTI_TORCH_SUCCESS);
    flat.push_back(t.get());
  }
  r.rc = aoti_torch_proxy_executor_call_function(ex->handle(), 0, static_cast<int>(ints.size()),
                                                 ints.data(), static_cast<int>(flat.size()),
                                                 flat.data());
  return r;
}

}  // namespace aotrt::test
