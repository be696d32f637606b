// Entry points of the attention family (ops/attention.h): each device's own
// ATen ops. Handles are borrowed; ret* get new owning handles, dropped when
// null (Note [Unused op outputs]). See Note [Op rows].
#include "ops/attention.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

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
