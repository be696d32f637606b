// Entry points of the embedding family (ops/embedding.h), both devices. Handles are
// borrowed; ret* get new owning handles, dropped when null (Note [Unused op
// outputs]). See Note [Op rows].
#include "ops/embedding.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

namespace {
// Both rows: the four results of ops::embedding_bag, all handed out or none.
// scale_grad_by_freq and sparse only shape the gradient.
void embedding_bag_row(const OpArgs& args, AtenTensorHandle weight, AtenTensorHandle indices,
                       AtenTensorHandle offsets, int64_t mode,
                       AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
                       int64_t padding_idx, bool forward_only, AtenTensorHandle* ret0,
                       AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  ops::EmbeddingBagResult r = ops::embedding_bag(
      args.tensor(weight, "weight"), args.tensor(indices, "indices"),
      args.tensor(offsets, "offsets"), mode,
      args.optional_tensor(per_sample_weights, "per_sample_weights"), include_last_offset != 0,
      padding_idx, forward_only, args.fn);
  ShimResults results;
  results.give(ret0, std::move(r.output));
  results.give(ret1, std::move(r.offset2bag));
  results.give(ret2, std::move(r.bag_size));
  results.give(ret3, std::move(r.max_indices));
  results.commit();
}
}  // namespace

AOTRT_OP(_embedding_bag,
         (AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets,
          int32_t scale_grad_by_freq, int64_t mode, int32_t sparse,
          AtenTensorHandle* per_sample_weights, int32_t include_last_offset, int64_t padding_idx,
          AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
          AtenTensorHandle* ret3),
         (void)scale_grad_by_freq;
         (void)sparse;
         embedding_bag_row(args, weight, indices, offsets, mode, per_sample_weights,
                           include_last_offset, padding_idx, /*forward_only=*/false, ret0, ret1,
                           ret2, ret3))

AOTRT_OP(_embedding_bag_forward_only,
         (AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets,
          int32_t scale_grad_by_freq, int64_t mode, int32_t sparse,
          AtenTensorHandle* per_sample_weights, int32_t include_last_offset, int64_t padding_idx,
          AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
          AtenTensorHandle* ret3),
         (void)scale_grad_by_freq;
         (void)sparse;
         embedding_bag_row(args, weight, indices, offsets, mode, per_sample_weights,
                           include_last_offset, padding_idx, /*forward_only=*/true, ret0, ret1,
                           ret2, ret3))
