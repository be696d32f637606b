// Entry points of segment_reduce (ops/segment.h), both devices. Handles are
// borrowed; ret0 gets a new owning handle. See Note [Op rows].
#include "ops/segment.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP(segment_reduce,
         (AtenTensorHandle data, const char* reduce, AtenTensorHandle* lengths,
          AtenTensorHandle* indices, AtenTensorHandle* offsets, int64_t axis, int32_t unsafe,
          double* initial, AtenTensorHandle* ret0),
         AOTRT_CHECK(reduce != nullptr, kInvalidArgument, ArgName{fn, "reduce"},
                     " is a null string");
         give(ret0, ops::segment_reduce(args.tensor(data, "data"), reduce,
                                        args.optional_tensor(lengths, "lengths"),
                                        args.optional_tensor(indices, "indices"),
                                        args.optional_tensor(offsets, "offsets"), axis,
                                        unsafe != 0, OpArgs::optional(initial), fn)))
