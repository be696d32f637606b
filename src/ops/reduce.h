// Reductions inductor calls as fallbacks: c_shim_aten.h's amax (inductor
// generates its own reduction loops otherwise).
//
// Note [Reduce semantics]
// ATen's amax, checked against torch 2.13 eager (gen_ops_reference.py's
// reduce cases): the maximum over the dims listed (every dim when the list
// is empty), NaN propagating; self's dtype (bool: any), complex refused as
// ATen refuses it ("max_values_cpu" not implemented); dims wrap, a dim listed
// twice is refused, and every reduced dim must be non-empty ("Expected
// reduction dim d to have non-zero size"); a 0-d self takes dim 0 or -1. The
// result is a new contiguous tensor (keepdim keeps the reduced dims as size
// 1). Several dims are reduced one after another, which the maximum allows
// exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. out[line] = max of in's line
// along dim; out has in's sizes with stride 0 at dim; one dtype, not complex.
struct ReduceKernels {
  void (*amax)(const StridedView& in, int64_t dim, const StridedView& out, const char* fn);
};

std::unique_ptr<TensorImpl> amax(const TensorImpl& self, std::span<const int64_t> dim,
                                 bool keepdim, const char* fn);

}  // namespace aotrt::ops
