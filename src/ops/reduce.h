// Reductions with no home in another family: hash_tensor.
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

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. self's first `kept` dims are
// out's (a dense uint64 tensor of those sizes, row-major); the others are
// reduced. Any strides.
struct ReduceKernels {
  void (*xor_sum)(const StridedView& self, int64_t kept, const StridedView& out, const char* fn);
};

std::unique_ptr<TensorImpl> hash_tensor(const TensorImpl& self, std::span<const int64_t> dim,
                                        bool keepdim, int64_t mode, const char* fn);

}  // namespace aotrt::ops
