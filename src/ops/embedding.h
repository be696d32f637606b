// Embedding bags: _embedding_bag and _embedding_bag_forward_only (the
// forward of nn.EmbeddingBag / F.embedding_bag; inductor calls the
// forward-only op when the weight needs no gradient).
//
// Note [Embedding bag semantics]
// ATen's CPU rules, checked against torch 2.13 eager (gen_ops_reference.py's
// embedding cases):
// - weight [num_weights, D] (float16/bfloat16/float32/float64); indices 1-d
//   int32/int64, offsets 1-d int32/int64 (the auxiliary outputs take their
//   promoted dtype). offsets[0] must be 0 and offsets[-1] at most
//   indices.numel(); every index in [0, num_weights). mode 0 sum, 1 mean,
//   2 max; per_sample_weights (weight's dtype, indices' sizes) only with sum.
// - Bags: B = offsets.numel() (include_last_offset: one fewer); bag b holds
//   indices [offsets[b], offsets[b+1]), the last one up to indices.numel().
//   With include_last_offset, ATen's fast path (below) ends the last bag's
//   sum or mean at offsets[B] instead, its other paths (max, float64,
//   padding, strided weight) do not. Indices equal to padding_idx are left
//   out (padding_idx is only compared: -1 or any value no index takes means
//   none). ATen's CPU kernel reads indices and offsets as if contiguous (a
//   strided view gives it garbage); aotrt reads the view.
// - output [B, D] contiguous, weight's dtype: the sum (times the per-sample
//   weight), the mean (sum / bag_size; 0 for a bag with no element), or the
//   max (the first element starts it, a later one replaces it only when
//   greater, so NaN wins only in first place; empty bag 0).
// - offset2bag: the bag of each index, [indices.numel()]; empty ([0]) in
//   sum mode on ATen's fast path: weight float32/float16/bfloat16 with unit
//   column stride, per_sample_weights absent or of unit stride, padding_idx
//   < 0.
// - bag_size [B]: 0 in sum mode; else each bag's count of indices that are not
//   padding, the last bag counted up to indices.numel() even when
//   include_last_offset ends it earlier (as ATen: offset2bag puts those
//   indices in the last bag). The mean divides by it. _embedding_bag_forward_only
//   in sum mode with include_last_offset gives offsets.numel() zeros instead.
// - max_indices: mode max, [B, D], the weight row of each maximum (0 for an
//   empty bag); other modes, a copy of bag_size.
// Sums accumulate in float for float16/bfloat16/float32 (ATen's fbgemm path)
// and in double for float64, rounded once at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "core/tensor.h"

namespace aotrt::ops {

enum class EmbeddingBagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

struct EmbeddingBagArgs {
  StridedView weight, indices, offsets;
  std::optional<StridedView> per_sample_weights;
  StridedView output, offset2bag, bag_size, max_indices;  // offset2bag may be empty
  EmbeddingBagMode mode = EmbeddingBagMode::kSum;
  // The last bag's elements run to indices' end (else to offsets[bags]).
  bool last_bag_to_end = true;
  int64_t padding_idx = -1;
};

// See Note [Op dispatch] in ops/dispatch.h. The kernel reads offsets and
// indices (refusing those ATen refuses) and writes all four outputs.
struct EmbeddingKernels {
  void (*embedding_bag)(const EmbeddingBagArgs& a, const char* fn);
};

struct EmbeddingBagResult {
  std::unique_ptr<TensorImpl> output, offset2bag, bag_size, max_indices;
};

// forward_only: _embedding_bag_forward_only's bag_size rule (Note above).
EmbeddingBagResult embedding_bag(const TensorImpl& weight, const TensorImpl& indices,
                                 const TensorImpl& offsets, int64_t mode,
                                 const TensorImpl* per_sample_weights, bool include_last_offset,
                                 int64_t padding_idx, bool forward_only, const char* fn);

}  // namespace aotrt::ops
