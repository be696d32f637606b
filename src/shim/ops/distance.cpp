// Entry points of the distance family (ops/distance.h), both devices. Handles are
// borrowed; ret0 gets a new owning handle. See Note [Op rows].
#include "ops/distance.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP(_cdist_forward,
         (AtenTensorHandle x1, AtenTensorHandle x2, double p, int64_t* compute_mode,
          AtenTensorHandle* ret0),
         give(ret0, ops::cdist(args.tensor(x1, "x1"), args.tensor(x2, "x2"), p,
                               OpArgs::optional(compute_mode), fn)))

AOTRT_OP(_pdist_forward, (AtenTensorHandle self, double p, AtenTensorHandle* ret0),
         give(ret0, ops::pdist(args.tensor(self, "self"), p, fn)))
