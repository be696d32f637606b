// Scaled dot-product attention for inference: the CPU's
// _scaled_dot_product_flash_attention_for_cpu and CUDA's
// _scaled_dot_product_{efficient,cudnn,flash}_attention, _efficient_attention_forward
// and _flash_attention_forward (with its _v2 and _no_dropout_inplace forms).
// Each ATen op has its own output conventions (layout of the output, shape
// of the logsumexp: Note [Attention outputs] in cuda/attention.cu, cpu/sdpa.h);
// the flavor names the op whose conventions to follow. Dropout is refused (it
// is 0 in inference); the checks of shapes and dtypes live in the backends
// (the flash ops check their shapes here too: their output layouts follow).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace aotrt::ops {

enum class AttentionFlavor { kFlashForCpu, kEfficient, kCudnn, kFlash };

// Where the causal mask's diagonal starts (ATen's custom_mask_type 1 and 2):
// query i sees key j when j <= i (top-left), or when j <= i + Lk - Lq
// (bottom-right: the last query sees every key).
enum class CausalAlignment { kTopLeft, kBottomRight };

struct AttentionOutputs {
  std::unique_ptr<TensorImpl> output;     // [B, H, Lq, Ev], query's dtype; null when `out` was given
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
  // Bottom-right only with the efficient and flash flavors (CUDA); the CPU's op has none.
  CausalAlignment causal_alignment = CausalAlignment::kTopLeft;
  // [B, H, Lq, Ev] of the query's dtype and device, any strides: written in
  // place of a new output (the flash ops lay out their own output).
  const TensorImpl* out = nullptr;
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

// aten::_scaled_dot_product_flash_attention and aten::_flash_attention_forward
// (its _v2 and _no_dropout_inplace forms too): FlashAttention-2's semantics
// on aotrt's attention, the flash flavor. Note [Flash attention] in
// ops/attention.cpp.
enum class FlashLayout {
  kBHLE,  // _scaled_dot_product_flash_attention: query [B, H, Lq, E]
  kBLHE,  // _flash_attention_forward: query [B, Lq, H, E]
};

struct FlashAttentionArgs {
  FlashLayout layout;
  const TensorImpl& query;  // [B, H, Lq, E] or [B, Lq, H, E] as `layout` says
  const TensorImpl& key;    // [B, Hk, Lk, E] or [B, Lk, Hk, E]; Hk divides H
  const TensorImpl& value;  // as key
  double dropout_p = 0.0;   // must be 0
  bool is_causal = false;   // bottom-right aligned: key j hidden from query i when j > i + Lk - Lq
  bool return_debug_mask = false;  // must be false
  std::optional<double> scale{};   // default 1/sqrt(E)
  // _flash_attention_forward's alone; each refused when given (a window: when
  // it limits anything, see the Note).
  const TensorImpl* cum_seq_q = nullptr;
  const TensorImpl* cum_seq_k = nullptr;
  std::optional<int64_t> window_size_left{}, window_size_right{};
  const TensorImpl* seqused_k = nullptr;
  const TensorImpl* alibi_slopes = nullptr;
  const TensorImpl* block_table = nullptr;  // _v2 and inplace forms
  // _flash_attention_forward_no_dropout_inplace: the output, written in
  // place ([B, Lq, H, E], query's dtype and device, any strides).
  const TensorImpl* out = nullptr;
};

// The layout of a tensor the op makes.
struct OutputLayout {
  std::vector<int64_t> sizes, strides;
  ScalarType dtype = ScalarType::Float32;
  Device device;
};

// What ATen's meta functions give (torch 2.13 and 2.11 alike): output
// empty_like(query) in the op's own layout; logsumexp float32 [B, H, Lq]
// contiguous; rng_state uint64 [2] and unused uint64 [] (on the query's
// device, as ATen's CUDA kernel makes them); debug mask [0] of the query's
// dtype; max_q = Lq and max_k = Lk (the SDPA op returns them).
struct FlashAttentionLayouts {
  OutputLayout output, logsumexp, rng_state, unused, debug_mask;
  int64_t max_q = 0, max_k = 0;
};

// Checks `a` and gives the outputs' layouts: refuses, in this order, dropout,
// the debug mask, varlen batches, seqused_k, alibi_slopes, block_table, then
// (with the shapes known) a window that limits anything; invalid shapes and a
// bad `out` are kInvalidArgument. Reads no tensor's data and serves every
// device (tests check the layouts on the host); the op below is CUDA only.
FlashAttentionLayouts flash_attention_layouts(const FlashAttentionArgs& a, const char* fn);

struct FlashAttentionOutputs {
  std::unique_ptr<TensorImpl> output;  // null when a.out was given (it holds the output)
  std::unique_ptr<TensorImpl> logsumexp, rng_state, unused, debug_mask;
  int64_t max_q = 0, max_k = 0;
};

// Refuses what flash_attention_layouts refuses, then any device but CUDA.
FlashAttentionOutputs flash_attention(const FlashAttentionArgs& a, const char* fn);

// A 0-d int64 tensor holding 0 on `device`: the philox seed and offset that
// attention without dropout returns.
std::unique_ptr<TensorImpl> zero_philox_scalar(Device device, const char* fn);

}  // namespace aotrt::ops
