// Scaled dot-product attention for inference: the CPU's
// _scaled_dot_product_flash_attention_for_cpu and CUDA's
// _scaled_dot_product_{efficient,cudnn}_attention. Each ATen op has its own
// output conventions (layout of the output, shape of the logsumexp: Note
// [Attention outputs] in cuda/attention.cu, cpu/sdpa.h); the flavor names
// the op whose conventions to follow. Dropout is refused (it is 0 in
// inference); the checks of shapes and dtypes live in the backends.
#pragma once

#include <memory>
#include <optional>

#include "core/tensor.h"

namespace aotrt::ops {

enum class AttentionFlavor { kFlashForCpu, kEfficient, kCudnn };

struct AttentionOutputs {
  std::unique_ptr<TensorImpl> output;     // [B, H, Lq, Ev], query's dtype
  std::unique_ptr<TensorImpl> logsumexp;  // float32, shape per flavor; may be undefined
};

struct AttentionArgs {
  const TensorImpl& query;  // [B, H, Lq, E]
  const TensorImpl& key;    // [B, Hk, Lk, E]
  const TensorImpl& value;  // [B, Hk, Lk, Ev]
  const TensorImpl* mask;   // additive, broadcastable to [B, H, Lq, Lk]; may be null
  bool is_causal;
  std::optional<double> scale;  // default 1/sqrt(E)
  bool compute_log_sumexp;
  AttentionFlavor flavor;
};

// See Note [Op dispatch] in ops/dispatch.h.
struct AttentionKernels {
  AttentionOutputs (*attention)(const AttentionArgs& a, const char* fn);
};

// The device of `query` picks the kernel; dropout_p must be 0.
AttentionOutputs attention(const AttentionArgs& a, double dropout_p, const char* fn);

// A 0-d int64 tensor holding 0 on `device`: the philox seed and offset that
// attention without dropout returns.
std::unique_ptr<TensorImpl> zero_philox_scalar(Device device, const char* fn);

}  // namespace aotrt::ops
