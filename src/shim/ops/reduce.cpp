// Entry points of the reduce family (ops/reduce.h): c_shim_aten.h's amax.
// Handles are borrowed; ret0 gets a new owning handle. See Note [Op rows].
#include "ops/reduce.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP_ATEN(amax,
              (AtenTensorHandle self, const int64_t* dim, int64_t dim_len_, int32_t keepdim,
               AtenTensorHandle* ret0),
              give(ret0, ops::amax(args.tensor(self, "self"), args.ints(dim, dim_len_, "dim"),
                                   keepdim != 0, fn)))
