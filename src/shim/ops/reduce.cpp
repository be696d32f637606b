// Entry points of the reduce family (ops/reduce.h): hash_tensor has no C shim,
// so the proxy executor serves it (Note [Proxy executor]), on the CPU.
#include "ops/reduce.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

// hash_tensor(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0)
// -> Tensor. torch 2.13's JSON leaves mode=0 out, its wrapper passes it as
// the last int (implicit_ints).
AOTRT_PROXY_OP("aten::hash_tensor", {"self", "dim", "keepdim", "mode"}, runtime::kProxyCpu,
               [](runtime::ProxyCall& c) {
                 c.set_output(0, ops::hash_tensor(c.tensor("self"), c.ints("dim", {{}}),
                                                  c.bool_arg("keepdim", false),
                                                  c.int_arg("mode", 0), c.what()));
               },
               {"mode"});
