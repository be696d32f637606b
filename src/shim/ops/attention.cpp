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
