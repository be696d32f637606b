#include "ops/attention.h"

#include <array>

#include "core/copy.h"
#include "core/error.h"
#include "ops/dispatch.h"
#include "ops/views.h"

namespace aotrt::ops {

AttentionOutputs attention(const AttentionArgs& a, double dropout_p, const char* fn) {
  AOTRT_CHECK(dropout_p == 0.0, kUnsupported, fn, ": dropout_p ", dropout_p,
              " is not served; aotrt runs inference, where attention dropout is 0");
  AOTRT_CHECK(a.causal_alignment == CausalAlignment::kTopLeft ||
                  a.flavor == AttentionFlavor::kEfficient,
              kInternal, fn, ": a bottom-right causal mask comes only with the efficient flavor");
  return kernel(&AttentionKernels::attention, a.query.device(), fn)(a, fn);
}

// Note [Efficient attention forward]
// aten::_efficient_attention_forward is the memory-efficient kernel that
// _scaled_dot_product_efficient_attention calls on its transposed views, so
// it is served by the same kernel: q, k and v are viewed from [B, M, H, K] as
// [B, H, M, K] (a permutation, nothing copied), the efficient flavor runs
// (its output is a [B, M, H, Kv] buffer viewed transposed: Note [Attention
// outputs]), and the output is viewed back as the contiguous [B, M, H, Kv]
// tensor ATen's meta function gives. The logsumexp is the efficient flavor's
// [B, H, ceil(M / 32) * 32] (padding rows +inf), or [B, H, 0] when not asked.
// custom_mask_type 1 is SDPA's is_causal (top-left); 2 aligns the diagonal to
// the bottom-right corner (key j masked from query i when j > i + N - M).
// The bias is [B, H, M, N] in ATen (not BMHK); aotrt also takes it
// broadcastable, as for SDPA. The returned max_seqlen_q is M and
// max_seqlen_k the argument when given, else N (ATen's values without
// cu_seqlens). Refused: dropout, varlen batches (cu_seqlens_q/k), seqlen_k
// and window_size (reading them needs the kernel to take device-side
// lengths), and any device but CUDA: ATen has no CPU kernel for this op, and
// inductor's CPU wrapper cannot call it (torch's c_shim_cpu.h declares no
// aoti_torch_cpu__efficient_attention_forward, so that package does not
// compile).
EfficientAttentionForwardOutputs efficient_attention_forward(
    const EfficientAttentionForwardArgs& a, const char* fn) {
  AOTRT_CHECK(a.dropout_p == 0.0, kUnsupported, fn, ": dropout_p ", a.dropout_p,
              " is not served; aotrt runs inference, where attention dropout is 0");
  AOTRT_CHECK(a.cu_seqlens_q == nullptr && a.cu_seqlens_k == nullptr, kUnsupported, fn,
              ": cu_seqlens_q/cu_seqlens_k (variable-length batches packed into one) are not "
              "served; pass [batch, seq, heads, dim] tensors");
  AOTRT_CHECK(a.seqlen_k == nullptr, kUnsupported, fn,
              ": seqlen_k (per-batch key counts) is not served");
  AOTRT_CHECK(!a.window_size.has_value(), kUnsupported, fn, ": window_size ",
              a.window_size.value_or(0), " (sliding-window attention) is not served");
  AOTRT_CHECK(a.custom_mask_type >= 0 && a.custom_mask_type <= 2, kInvalidArgument, fn,
              ": custom_mask_type ", a.custom_mask_type,
              " is none of 0 (no mask), 1 (causal from the top-left), 2 (causal from the "
              "bottom-right)");
  AOTRT_CHECK(a.query.dim() == 4 && a.key.dim() == 4 && a.value.dim() == 4, kInvalidArgument,
              fn, ": query, key and value must be 4-d [batch, seq, heads, dim], got ",
              a.query.dim(), "-d, ", a.key.dim(), "-d and ", a.value.dim(), "-d");
  const Device device = a.query.device();
  AOTRT_CHECK(device.is_cuda(), kUnsupported, fn, ": 'query' is on ", device.str(),
              "; _efficient_attention_forward is served on CUDA only (ATen has no CPU kernel "
              "for it)");

  static constexpr std::array<int64_t, 4> kSwapSeqHeads{0, 2, 1, 3};
  const auto q = permute(a.query, kSwapSeqHeads, fn);
  const auto k = permute(a.key, kSwapSeqHeads, fn);
  const auto v = permute(a.value, kSwapSeqHeads, fn);
  AttentionOutputs r = attention(
      {*q, *k, *v, a.bias, a.custom_mask_type != 0, a.scale, a.compute_log_sumexp,
       AttentionFlavor::kEfficient,
       a.custom_mask_type == 2 ? CausalAlignment::kBottomRight : CausalAlignment::kTopLeft},
      a.dropout_p, fn);
  EfficientAttentionForwardOutputs out;
  out.output = permute(*r.output, kSwapSeqHeads, fn);
  out.logsumexp = std::move(r.logsumexp);
  out.max_seqlen_q = a.query.sizes()[1];
  out.max_seqlen_k = a.max_seqlen_k.value_or(a.key.sizes()[1]);
  return out;
}

std::unique_ptr<TensorImpl> zero_philox_scalar(Device device, const char* fn) {
  auto t = empty_strided({}, {}, ScalarType::Int64, device, fn);
  zero_tensor(*t, fn);
  return t;
}

}  // namespace aotrt::ops
