// Entry points of the attention family (ops/attention.h): each device's own
// ATen ops. Handles are borrowed; ret* get new owning handles, dropped when
// null (Note [Unused op outputs]). See Note [Op rows].
#include "ops/attention.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

namespace {
// Tensor? on any device: null, a null handle or an undefined tensor mean None.
[[maybe_unused]] const TensorImpl* optional_any_device(
    AtenTensorHandle* h, const char* fn, const char* name) {
  if (h == nullptr || *h == nullptr) return nullptr;
  const TensorImpl& t = handle_get(*h, ArgName{fn, name});
  return t.defined() ? &t : nullptr;
}
}  // namespace

AOTRT_OP_CPU(_scaled_dot_product_flash_attention_for_cpu,
             (AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
              double dropout_p, int32_t is_causal, AtenTensorHandle* attn_mask, double* scale,
              AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             ops::AttentionOutputs r = ops::attention(
                 {args.tensor(query, "query"), args.tensor(key, "key"),
                  args.tensor(value, "value"), args.optional_tensor(attn_mask, "attn_mask"),
                  is_causal != 0, OpArgs::optional(scale), true,
                  ops::AttentionFlavor::kFlashForCpu},
                 dropout_p, fn);
             ShimResults results;
             results.give(ret0, std::move(r.output));
             results.give(ret1, std::move(r.logsumexp));
             results.commit())

// The philox seed and offset of attention without dropout: 0 (Note
// [Attention outputs] in cuda/attention.cu); on the CPU for the efficient op,
// as ATen returns them.
AOTRT_OP_CUDA(_scaled_dot_product_efficient_attention,
              (AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
               AtenTensorHandle* attn_bias, int32_t compute_log_sumexp, double dropout_p,
               int32_t is_causal, double* scale, AtenTensorHandle* ret0,
               AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3),
              ops::AttentionOutputs r = ops::attention(
                  {args.tensor(query, "query"), args.tensor(key, "key"),
                   args.tensor(value, "value"), args.optional_tensor(attn_bias, "attn_bias"),
                   is_causal != 0, OpArgs::optional(scale), compute_log_sumexp != 0,
                   ops::AttentionFlavor::kEfficient},
                  dropout_p, fn);
              ShimResults results;
              results.give(ret0, std::move(r.output));
              results.give(ret1, std::move(r.logsumexp));
              results.give(ret2, ops::zero_philox_scalar(cpu_device(), fn));
              results.give(ret3, ops::zero_philox_scalar(cpu_device(), fn));
              results.commit())

// BMHK views; the devices are checked by the op after what it refuses
// (Note [Efficient attention forward] in ops/attention.cpp). Seed and offset
// as for the efficient SDPA op above: 0-d int64 on the CPU, holding 0.
AOTRT_OP_CUDA(_efficient_attention_forward,
              (AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
               AtenTensorHandle* bias, AtenTensorHandle* cu_seqlens_q,
               AtenTensorHandle* cu_seqlens_k, int64_t* max_seqlen_q, int64_t* max_seqlen_k,
               double dropout_p, int64_t custom_mask_type, int32_t compute_log_sumexp,
               double* scale, AtenTensorHandle* seqlen_k, int64_t* window_size,
               AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
               AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5),
              ops::EfficientAttentionForwardOutputs r = ops::efficient_attention_forward(
                  {args.tensor_any_device(query, "query"), args.tensor_any_device(key, "key"),
                   args.tensor_any_device(value, "value"),
                   optional_any_device(bias, fn, "bias"),
                   optional_any_device(cu_seqlens_q, fn, "cu_seqlens_q"),
                   optional_any_device(cu_seqlens_k, fn, "cu_seqlens_k"),
                   OpArgs::optional(max_seqlen_q), OpArgs::optional(max_seqlen_k), dropout_p,
                   custom_mask_type, compute_log_sumexp != 0, OpArgs::optional(scale),
                   optional_any_device(seqlen_k, fn, "seqlen_k"), OpArgs::optional(window_size)},
                  fn);
              ShimResults results;
              results.give(ret0, std::move(r.output));
              results.give(ret1, std::move(r.logsumexp));
              results.give(ret2, ops::zero_philox_scalar(cpu_device(), fn));
              results.give(ret3, ops::zero_philox_scalar(cpu_device(), fn));
              results.give_value(ret4, r.max_seqlen_q);
              results.give_value(ret5, r.max_seqlen_k);
              results.commit())

AOTRT_OP_CUDA(_scaled_dot_product_cudnn_attention,
              (AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
               AtenTensorHandle* attn_bias, int32_t compute_log_sumexp, double dropout_p,
               int32_t is_causal, int32_t return_debug_mask, double* scale,
               AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
               AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6,
               AtenTensorHandle* ret7, AtenTensorHandle* ret8),
              AOTRT_CHECK(return_debug_mask == 0, kUnsupported, fn,
                          ": return_debug_mask is not served (cuDNN attention has no debug "
                          "mask)");
              const TensorImpl& q = args.tensor(query, "query");
              const TensorImpl& k = args.tensor(key, "key");
              ops::AttentionOutputs r = ops::attention(
                  {q, k, args.tensor(value, "value"),
                   args.optional_tensor(attn_bias, "attn_bias"), is_causal != 0,
                   OpArgs::optional(scale), compute_log_sumexp != 0,
                   ops::AttentionFlavor::kCudnn},
                  dropout_p, fn);
              ShimResults results;
              results.give(ret0, std::move(r.output));
              results.give(ret1, std::move(r.logsumexp));
              results.give(ret2, std::make_unique<TensorImpl>());  // cum_seq_q: undefined, as ATen
              results.give(ret3, std::make_unique<TensorImpl>());  // cum_seq_k
              results.give_value(ret4, q.sizes()[2]);
              results.give_value(ret5, k.sizes()[2]);
              results.give(ret6, ops::zero_philox_scalar(q.device(), fn));
              results.give(ret7, ops::zero_philox_scalar(q.device(), fn));
              results.give(ret8, std::make_unique<TensorImpl>());  // debug mask
              results.commit())

// --- Flash attention (Note [Flash attention] in ops/attention.cpp) ---------------------
// Tensors are decoded on any device, so that what the op refuses comes first
// (and shows without a GPU); the op then refuses any device but CUDA.

AOTRT_OP_CUDA(_scaled_dot_product_flash_attention,
              (AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
               double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
               AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
               AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6,
               AtenTensorHandle* ret7, AtenTensorHandle* ret8),
              ops::FlashAttentionOutputs r = ops::flash_attention(
                  {.layout = ops::FlashLayout::kBHLE,
                   .query = args.tensor_any_device(query, "query"),
                   .key = args.tensor_any_device(key, "key"),
                   .value = args.tensor_any_device(value, "value"),
                   .dropout_p = dropout_p,
                   .is_causal = is_causal != 0,
                   .return_debug_mask = return_debug_mask != 0,
                   .scale = OpArgs::optional(scale)},
                  fn);
              ShimResults results;
              results.give(ret0, std::move(r.output));
              results.give(ret1, std::move(r.logsumexp));
              results.give(ret2, std::make_unique<TensorImpl>());  // cum_seq_q: undefined, as ATen
              results.give(ret3, std::make_unique<TensorImpl>());  // cum_seq_k
              results.give_value(ret4, r.max_q);
              results.give_value(ret5, r.max_k);
              results.give(ret6, std::move(r.rng_state));
              results.give(ret7, std::move(r.unused));
              results.give(ret8, std::move(r.debug_mask));
              results.commit())

namespace {
// The arguments _flash_attention_forward and its _v2 and inplace forms share.
// max_q/max_k (read by ATen for variable-length batches only) and num_splits
// (a tuning of ATen's kernel) do not reach the op.
[[maybe_unused]] ops::FlashAttentionArgs forward_args(const OpArgs& args, AtenTensorHandle query,
                                     AtenTensorHandle key, AtenTensorHandle value,
                                     AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k,
                                     double dropout_p, int32_t is_causal,
                                     int32_t return_debug_mask, double* scale,
                                     int64_t* window_size_left, int64_t* window_size_right,
                                     AtenTensorHandle* seqused_k, AtenTensorHandle* alibi_slopes,
                                     AtenTensorHandle* block_table) {
  const char* fn = args.fn;
  return {.layout = ops::FlashLayout::kBLHE,
          .query = args.tensor_any_device(query, "query"),
          .key = args.tensor_any_device(key, "key"),
          .value = args.tensor_any_device(value, "value"),
          .dropout_p = dropout_p,
          .is_causal = is_causal != 0,
          .return_debug_mask = return_debug_mask != 0,
          .scale = OpArgs::optional(scale),
          .cum_seq_q = optional_any_device(cum_seq_q, fn, "cum_seq_q"),
          .cum_seq_k = optional_any_device(cum_seq_k, fn, "cum_seq_k"),
          .window_size_left = OpArgs::optional(window_size_left),
          .window_size_right = OpArgs::optional(window_size_right),
          .seqused_k = optional_any_device(seqused_k, fn, "seqused_k"),
          .alibi_slopes = optional_any_device(alibi_slopes, fn, "alibi_slopes"),
          .block_table = optional_any_device(block_table, fn, "block_table")};
}

// (output, logsumexp, rng_state, unused, debug_attn_mask).
[[maybe_unused]] void give_forward(ops::FlashAttentionOutputs r, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                  AtenTensorHandle* ret2, AtenTensorHandle* ret3, AtenTensorHandle* ret4) {
  ShimResults results;
  results.give(ret0, std::move(r.output));
  results.give(ret1, std::move(r.logsumexp));
  results.give(ret2, std::move(r.rng_state));
  results.give(ret3, std::move(r.unused));
  results.give(ret4, std::move(r.debug_mask));
  results.commit();
}
}  // namespace

AOTRT_OP_CUDA(_flash_attention_forward,
              (AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
               AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k, int64_t max_q,
               int64_t max_k, double dropout_p, int32_t is_causal, int32_t return_debug_mask,
               double* scale, int64_t* window_size_left, int64_t* window_size_right,
               AtenTensorHandle* seqused_k, AtenTensorHandle* alibi_slopes,
               AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
               AtenTensorHandle* ret3, AtenTensorHandle* ret4),
              (void)max_q; (void)max_k;
              give_forward(ops::flash_attention(
                               forward_args(args, query, key, value, cum_seq_q, cum_seq_k,
                                            dropout_p, is_causal, return_debug_mask, scale,
                                            window_size_left, window_size_right, seqused_k,
                                            alibi_slopes, nullptr),
                               fn),
                           ret0, ret1, ret2, ret3, ret4))

// torch 2.13's schema of the op, with block_table and num_splits.
AOTRT_OP_CUDA(_flash_attention_forward_v2,
              (AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
               AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k, int64_t max_q,
               int64_t max_k, double dropout_p, int32_t is_causal, int32_t return_debug_mask,
               double* scale, int64_t* window_size_left, int64_t* window_size_right,
               AtenTensorHandle* seqused_k, AtenTensorHandle* alibi_slopes,
               AtenTensorHandle* block_table, int64_t* num_splits, AtenTensorHandle* ret0,
               AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3,
               AtenTensorHandle* ret4),
              (void)max_q; (void)max_k; (void)num_splits;
              give_forward(ops::flash_attention(
                               forward_args(args, query, key, value, cum_seq_q, cum_seq_k,
                                            dropout_p, is_causal, return_debug_mask, scale,
                                            window_size_left, window_size_right, seqused_k,
                                            alibi_slopes, block_table),
                               fn),
                           ret0, ret1, ret2, ret3, ret4))

// `out` ([B, Lq, H, E]) is written in place; the logsumexp is the one result.
AOTRT_OP_CUDA(_flash_attention_forward_no_dropout_inplace,
              (AtenTensorHandle out, AtenTensorHandle query, AtenTensorHandle key,
               AtenTensorHandle value, AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k,
               int64_t max_q, int64_t max_k, double dropout_p, int32_t is_causal,
               int32_t return_debug_mask, double* scale, int64_t* window_size_left,
               int64_t* window_size_right, AtenTensorHandle* seqused_k,
               AtenTensorHandle* alibi_slopes, AtenTensorHandle* block_table,
               AtenTensorHandle* ret0),
              (void)max_q; (void)max_k;
              ops::FlashAttentionArgs a = forward_args(
                  args, query, key, value, cum_seq_q, cum_seq_k, dropout_p, is_causal,
                  return_debug_mask, scale, window_size_left, window_size_right, seqused_k,
                  alibi_slopes, block_table);
              a.out = &args.tensor_any_device(out, "out");
              give(ret0, ops::flash_attention(a, fn).logsumexp))

AOTRT_OP_CUDA(_flash_attention_forward_no_dropout_inplace_v2,
              (AtenTensorHandle out, AtenTensorHandle query, AtenTensorHandle key,
               AtenTensorHandle value, AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k,
               int64_t max_q, int64_t max_k, double dropout_p, int32_t is_causal,
               int32_t return_debug_mask, double* scale, int64_t* window_size_left,
               int64_t* window_size_right, AtenTensorHandle* seqused_k,
               AtenTensorHandle* alibi_slopes, AtenTensorHandle* block_table,
               int64_t* num_splits, AtenTensorHandle* ret0),
              (void)max_q; (void)max_k; (void)num_splits;
              ops::FlashAttentionArgs a = forward_args(
                  args, query, key, value, cum_seq_q, cum_seq_k, dropout_p, is_causal,
                  return_debug_mask, scale, window_size_left, window_size_right, seqused_k,
                  alibi_slopes, block_table);
              a.out = &args.tensor_any_device(out, "out");
              give(ret0, ops::flash_attention(a, fn).logsumexp))
