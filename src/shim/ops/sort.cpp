// Entry points of the sort family (ops/sort.h), both devices. Handles are
// borrowed; ret* get new owning handles, dropped when null (Note [Unused op
// outputs]). See Note [Op rows].
#include "ops/sort.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

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
