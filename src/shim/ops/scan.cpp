// Entry points of the scan family (ops/scan.h), both devices. Handles are
// borrowed; ret* get new owning handles, dropped when null (Note [Unused op
// outputs]). See Note [Op rows].
#include "ops/scan.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP(cumsum, (AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0),
         give(ret0, ops::cumsum(args.tensor(self, "self"), dim,
                                args.optional_dtype(dtype, "dtype"), fn)))

AOTRT_OP(cumprod, (AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0),
         give(ret0, ops::cumprod(args.tensor(self, "self"), dim,
                                 args.optional_dtype(dtype, "dtype"), fn)))

AOTRT_OP(logcumsumexp, (AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0),
         give(ret0, ops::logcumsumexp(args.tensor(self, "self"), dim, fn)))

AOTRT_OP(cummax,
         (AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0, AtenTensorHandle* ret1),
         ops::ValuesIndices r = ops::cummax(args.tensor(self, "self"), dim, fn);
         give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(cummin,
         (AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0, AtenTensorHandle* ret1),
         ops::ValuesIndices r = ops::cummin(args.tensor(self, "self"), dim, fn);
         give(ret0, ret1, std::move(r.values), std::move(r.indices)))
