// Reductions inductor calls as fallbacks: c_shim_aten.h's amax (inductor
// generates its own reduction loops otherwise) and hash_tensor, which has no
// home in another family.
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
//
// Note [Hash tensor semantics]
// ATen's CPU rules (torch 2.13, aten::hash_tensor; checked against eager in
// gen_ops_reference.py's reduce cases):
// - mode 0 (the only one): the XOR of every reduced element's 64-bit pattern,
//   where a floating element (float16, bfloat16, float32, float64) is first
//   converted to double and its bits taken (so float32 1.0 gives
//   0x3ff0000000000000, and -0.0 and each NaN pattern count as they are),
//   and an integer or bool element is converted to int64 and read as uint64
//   (so int8 -1 gives 0xffffffffffffffff). ATen has no kernel for complex,
//   uint16, uint32 or uint64; aotrt refuses them too.
// - dim [] reduces every dim (refused for an empty self, as ATen refuses it);
//   otherwise each listed dim once, each non-empty. The result is uint64,
//   self's sizes without (keepdim: with size 1) the reduced dims, contiguous;
//   XOR over no element is 0.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h.
struct ReduceKernels {
  // out[line] = max of in's line along dim; out has in's sizes with stride 0
  // at dim; one dtype, not complex.
  void (*amax)(const StridedView& in, int64_t dim, const StridedView& out, const char* fn);
  // self's first `kept` dims are out's (a dense uint64 tensor of those sizes,
  // row-major); the others are reduced. Any strides.
  void (*xor_sum)(const StridedView& self, int64_t kept, const StridedView& out, const char* fn);
};

// ATen's reduction dim list: which of self's dims `dim` names (every dim when
// it is empty), each wrapped; a dim listed twice, or a reduced dim of size 0
// ("Expected reduction dim d to have non-zero size"), is refused. A 0-d self
// takes dim 0 or -1 and reduces nothing.
std::vector<bool> reduced_dims(const TensorImpl& self, std::span<const int64_t> dim,
                               const char* fn);

std::unique_ptr<TensorImpl> amax(const TensorImpl& self, std::span<const int64_t> dim,
                                 bool keepdim, const char* fn);
std::unique_ptr<TensorImpl> hash_tensor(const TensorImpl& self, std::span<const int64_t> dim,
                                        bool keepdim, int64_t mode, const char* fn);

}  // namespace aotrt::ops
