// Entry points of the reduce family (ops/reduce.h): c_shim_aten.h's amax, and
// hash_tensor, which has no C shim, served by the proxy executor (Note [Proxy
// executor]), both devices. Handles are borrowed; ret0 gets a new owning handle.
// See Note [Op rows].
#include "ops/reduce.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP_ATEN(amax,
              (AtenTensorHandle self, const int64_t* dim, int64_t dim_len_, int32_t keepdim,
               AtenTensorHandle* ret0),
              give(ret0, ops::amax(args.tensor(self, "self"), args.ints(dim, dim_len_, "dim"),
                                   keepdim != 0, fn)))

// hash_tensor(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0)
// -> Tensor. torch 2.13's JSON leaves mode=0 out, its wrapper passes it as
// an int at its schema place (run_time_defaults).
AOTRT_PROXY_OP("aten::hash_tensor", {"self", "dim", "keepdim", "mode"},
               runtime::kProxyCpu | runtime::kProxyCuda,
               [](runtime::ProxyCall& c) {
                 c.set_output(0, ops::hash_tensor(c.tensor("self"), c.ints("dim", std::vector<int64_t>{}),
                                                  c.bool_arg("keepdim", false),
                                                  c.int_arg("mode", 0), c.what()));
               },
               {{"mode", 1}});
