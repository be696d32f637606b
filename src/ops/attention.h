// Scaled dot-product attention for inference: the CPU's
// _scaled_dot_product_flash_attention_for_cpu and CUDA's
// _scaled_dot_product_{efficient,cudnn}_attention and _efficient_attention_forward.
// Each ATen op has its own output conventions (layout of the output, shape
// of the logsumexp: Note [Attention outputs] in cuda/attention.cu, cpu/sdpa.h);
// the flavor names the op whose conventions to follow. Dropout is refused (it
// is 0 in inference); the checks of shapes and dtypes live in the backends.
#pragma once

#include <memory>
#include <optional>

#include "core/tensor.h"

namespace aotrt::ops {

enum class AttentionFlavor { kFlashForCpu, kEfficient, kCudnn };

// Where the causal mask's diagonal starts (ATen's custom_mask_type 1 and 2):
// query i sees key j when j <= i (top-left), or when j <= i + Lk - Lq
// (bottom-right: the last query sees every key).
enum class CausalAlignment { kTopLeft, kBottomRight };

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
  // Bottom-right only with the efficient flavor (CUDA); the CPU's op has none.
  CausalAlignment causal_alignment = CausalAlignment::kTopLeft;
};

// See Note [Op dispatch] in ops/dispatch.h.
struct AttentionKernels {
  AttentionOutputs (*attention)(const AttentionArgs& a, const char* fn);
};

// The device of `query` picks the kernel; dropout_p must be 0.
AttentionOutputs attention(const AttentionArgs& a, double dropout_p, const char* fn);

// aten::_efficient_attention_forward: the memory-efficient kernel itself, on
// [batch, seq, heads, dim] (BMHK) views; SDPA's efficient op is this with its
// views transposed. Note [Efficient attention forward] in ops/attention.cpp.
struct EfficientAttentionForwardArgs {
  const TensorImpl& query;  // [B, M, H, K]
  const TensorImpl& key;    // [B, N, Hk, K]
  const TensorImpl& value;  // [B, N, Hk, Kv]
  const TensorImpl* bias;   // additive [B, H, M, N] (broadcastable); may be null
  const TensorImpl* cu_seqlens_q;  // varlen (1MHK) batches: refused when given
  const TensorImpl* cu_seqlens_k;
  std::optional<int64_t> max_seqlen_q, max_seqlen_k;
  double dropout_p;           // must be 0
  int64_t custom_mask_type;   // 0 none, 1 causal top-left, 2 causal bottom-right
  bool compute_log_sumexp;
  std::optional<double> scale;
  const TensorImpl* seqlen_k;  // per-batch key counts: refused when given
  std::optional<int64_t> window_size;  // sliding window: refused when given
};

struct EfficientAttentionForwardOutputs {
  std::unique_ptr<TensorImpl> output;     // [B, M, H, Kv] contiguous, query's dtype
  std::unique_ptr<TensorImpl> logsumexp;  // float32 [B, H, ceil(M / 32) * 32], or [B, H, 0]
  int64_t max_seqlen_q = 0;               // M
  int64_t max_seqlen_k = 0;               // max_seqlen_k when given, else N
};

// Refuses what it does not serve (in that order: dropout, varlen, seqlen_k,
// window_size, an unknown mask type, a device other than CUDA) before it
// reads a tensor's data.
EfficientAttentionForwardOutputs efficient_attention_forward(
    const EfficientAttentionForwardArgs& a, const char* fn);

// A 0-d int64 tensor holding 0 on `device`: the philox seed and offset that
// attention without dropout returns.
std::unique_ptr<TensorImpl> zero_philox_scalar(Device device, const char* fn);

}  // namespace aotrt::ops
