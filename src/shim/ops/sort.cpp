// Entry points of the sort family (ops/sort.h), both devices. Handles are
// borrowed; ret* get new owning handles, dropped when null (Note [Unused op
// outputs]). See Note [Op rows]. Ops with no C shim (nanmedian.dim, the
// unique ops) are served through the proxy executor, on the CPU (the rows at
// the end; Note [Proxy executor]).
#include "ops/sort.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using runtime::kProxyCpu;
using runtime::kProxyCuda;
using runtime::ProxyCall;

AOTRT_OP(sort,
         (AtenTensorHandle self, int64_t dim, int32_t descending, AtenTensorHandle* ret0,
          AtenTensorHandle* ret1),
         ops::ValuesIndices r = ops::sort(args.tensor(self, "self"), dim, descending != 0, fn);
         give(ret0, ret1, std::move(r.values), std::move(r.indices)))

// stable=None or false may order ties any way; aotrt's sort is always stable.
AOTRT_OP(sort_stable,
         (AtenTensorHandle self, int32_t* stable, int64_t dim, int32_t descending,
          AtenTensorHandle* ret0, AtenTensorHandle* ret1),
         ops::ValuesIndices r = ops::sort(args.tensor(self, "self"), dim, descending != 0, fn);
         give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(topk,
         (AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest, int32_t sorted,
          AtenTensorHandle* ret0, AtenTensorHandle* ret1),
         ops::ValuesIndices r =
             ops::topk(args.tensor(self, "self"), k, dim, largest != 0, sorted != 0, fn);
         give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(kthvalue,
         (AtenTensorHandle self, int64_t k, int64_t dim, int32_t keepdim, AtenTensorHandle* ret0,
          AtenTensorHandle* ret1),
         ops::ValuesIndices r =
             ops::kthvalue(args.tensor(self, "self"), k, dim, keepdim != 0, fn);
         give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(mode,
         (AtenTensorHandle self, int64_t dim, int32_t keepdim, AtenTensorHandle* ret0,
          AtenTensorHandle* ret1),
         ops::ValuesIndices r = ops::mode(args.tensor(self, "self"), dim, keepdim != 0, fn);
         give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(median, (AtenTensorHandle self, AtenTensorHandle* ret0),
         give(ret0, ops::median(args.tensor(self, "self"), false, fn)))

AOTRT_OP(nanmedian, (AtenTensorHandle self, AtenTensorHandle* ret0),
         give(ret0, ops::median(args.tensor(self, "self"), true, fn)))

// median.dim / nanmedian.dim(Tensor self, int dim, bool keepdim=False)
// -> (Tensor values, Tensor indices)
AOTRT_PROXY_OP("aten::median.dim", {"self", "dim", "keepdim"}, kProxyCpu | kProxyCuda,
               [](ProxyCall& c) {
                 ops::ValuesIndices r = ops::median_dim(c.tensor("self"), c.int_arg("dim"),
                                                        c.bool_arg("keepdim", false), false,
                                                        c.what());
                 c.set_output(0, std::move(r.values));
                 c.set_output(1, std::move(r.indices));
               });
AOTRT_PROXY_OP("aten::nanmedian.dim", {"self", "dim", "keepdim"}, kProxyCpu | kProxyCuda,
               [](ProxyCall& c) {
                 ops::ValuesIndices r = ops::median_dim(c.tensor("self"), c.int_arg("dim"),
                                                        c.bool_arg("keepdim", false), true,
                                                        c.what());
                 c.set_output(0, std::move(r.values));
                 c.set_output(1, std::move(r.indices));
               });

namespace {
void give_unique(ProxyCall& c, ops::UniqueResult r) {
  c.set_output(0, std::move(r.values));
  c.set_output(1, std::move(r.inverse));
  c.set_output(2, std::move(r.counts));
}
}  // namespace

// _unique2(Tensor self, bool sorted=True, bool return_inverse=False,
// bool return_counts=False) -> (Tensor, Tensor, Tensor); sorted or not, the
// CPU result is sorted (Note [Unique]).
AOTRT_PROXY_OP("aten::_unique2", {"self", "sorted", "return_inverse", "return_counts"},
               kProxyCpu | kProxyCuda,
               [](ProxyCall& c) {
                 give_unique(c, ops::unique(c.tensor("self"), std::nullopt, false,
                                            c.bool_arg("return_inverse", false),
                                            c.bool_arg("return_counts", false), c.what()));
               });
// unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False,
// bool return_counts=False) -> (Tensor, Tensor, Tensor)
AOTRT_PROXY_OP("aten::unique_dim",
               {"self", "dim", "sorted", "return_inverse", "return_counts"},
               kProxyCpu | kProxyCuda,
               [](ProxyCall& c) {
                 give_unique(c, ops::unique(c.tensor("self"), c.int_arg("dim"), false,
                                            c.bool_arg("return_inverse", false),
                                            c.bool_arg("return_counts", false), c.what()));
               });
// unique_consecutive(Tensor self, bool return_inverse=False,
// bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)
AOTRT_PROXY_OP("aten::unique_consecutive", {"self", "return_inverse", "return_counts", "dim"},
               kProxyCpu | kProxyCuda, [](ProxyCall& c) {
                 give_unique(c, ops::unique(c.tensor("self"), c.optional_int("dim"), true,
                                            c.bool_arg("return_inverse", false),
                                            c.bool_arg("return_counts", false), c.what()));
               });
