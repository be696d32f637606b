// aoti_torch_proxy_executor_call_function: ops without a C shim, served by
// aotrt's proxy executor (Note [Proxy executor] in runtime/proxy_executor.h).
// The handle is the ProxyExecutor the model's Model passed to its run; the
// tensor handles are borrowed, and the output ones are made aliases of the
// op's results.
#include "runtime/proxy_executor.h"
#include "shim/boundary.h"

extern "C" AOTRT_EXPORT AOTITorchError aoti_torch_proxy_executor_call_function(
    AOTIProxyExecutorHandle proxy_executor, int extern_node_index, int num_ints,
    int64_t* flatten_int_args, int num_tensors, AtenTensorHandle* flatten_tensor_args) {
  return aotrt::shim_boundary(__func__, [&] {
    AOTRT_CHECK(proxy_executor != nullptr, kInvalidArgument, __func__,
                ": the model was run without a proxy executor (a package without "
                "extern-node JSON?)");
    reinterpret_cast<const aotrt::runtime::ProxyExecutor*>(proxy_executor)
        ->call(extern_node_index, num_ints, flatten_int_args, num_tensors, flatten_tensor_args);
  });
}
