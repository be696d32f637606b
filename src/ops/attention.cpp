#include "ops/attention.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/views.h"

namespace aotrt::ops {

AttentionOutputs attention(const AttentionArgs& a, double dropout_p, const char* fn) {
  AOTRT_CHECK(dropout_p == 0.0, kUnsupported, fn, ": dropout_p ", dropout_p,
              " is not served; aotrt runs inference, where attention dropout is 0");
  AOTRT_CHECK(a.causal_alignment == CausalAlignment::kTopLeft ||
                  a.flavor == AttentionFlavor::kEfficient || a.flavor == AttentionFlavor::kFlash,
              kInternal, fn,
              ": a bottom-right causal mask comes only with the efficient and flash flavors");
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

// Note [Flash attention]
// _scaled_dot_product_flash_attention is ATen's _flash_attention_forward
// (FlashAttention-2) on its query, key and value transposed to [B, L, H, E];
// both run here on aotrt's attention in the flash flavor (cuDNN's fused
// kernel for fp16/bf16 where it serves the call, aotrt's own otherwise:
// Note [cuDNN attention]), through views: nothing is copied. FlashAttention's
// semantics:
// - the causal mask is aligned to the bottom-right corner: key j is hidden
//   from query i when j > i + Lk - Lq (top-left when Lq == Lk, the only case
//   SDPA picks flash for with is_causal). A query that sees no key (the first
//   Lq - Lk with Lq > Lk, or every one when Lk == 0) gets output 0 and
//   logsumexp +inf, as FlashAttention writes them.
// - key and value may have fewer heads than the query (GQA: Hk divides H);
//   query, key and value share one head dim (ATen refuses another, and the
//   output is laid out like the query).
// - the outputs are laid out as ATen's meta functions say (the generated code
//   was compiled against them; FlashAttentionLayouts): the output is
//   empty_like(query) in the op's own layout (the query's strides when it is
//   dense), [B, H, Lq, E] for the SDPA op and [B, Lq, H, E] for the forward;
//   since torch 2.7 (2.11 and 2.13 alike) the philox state is one uint64 [2]
//   rng_state plus an unused uint64 [] on the query's device (ATen leaves them
//   unwritten without dropout; aotrt writes zeros).
// - float32 is served too (ATen's kernel takes fp16 and bf16 only).
// Refused: dropout, return_debug_mask, variable-length batches (cum_seq_q/k),
// seqused_k, alibi_slopes, a paged key/value cache (block_table), and a
// sliding window: window_size_left/right are served when None or when they
// limit nothing (negative, or at least Lk, which ATen turns into none).
// max_q and max_k are read by ATen only for variable-length batches and
// num_splits (_v2) only tunes how its kernel splits the keys: both are
// ignored. _flash_attention_forward_no_dropout_inplace writes its output into
// `out` ([B, Lq, H, E], any strides) and returns only the logsumexp.
namespace {

constexpr std::array<int64_t, 4> kSwapSeqHeads{0, 2, 1, 3};
constexpr std::array<int64_t, 4> kSameDims{0, 1, 2, 3};

// A flash op's tensor as [B, H, L, E]: itself, or its [B, L, H, E] transposed.
std::unique_ptr<TensorImpl> bhle_view(const TensorImpl& t, FlashLayout layout, const char* fn) {
  return permute(t, layout == FlashLayout::kBLHE ? kSwapSeqHeads : kSameDims, fn);
}

// ATen's flash kernel turns a window side of at least Lk into none (-1), and
// a negative side is unlimited.
bool limits_nothing(std::optional<int64_t> window, int64_t Lk) {
  return !window.has_value() || *window < 0 || *window >= Lk;
}
std::string window_text(std::optional<int64_t> window) {
  return window.has_value() ? std::to_string(*window) : "None";
}

OutputLayout layout_of(std::vector<int64_t> sizes, ScalarType dtype, Device device) {
  std::vector<int64_t> strides = contiguous_strides(sizes);
  return {std::move(sizes), std::move(strides), dtype, device};
}

std::unique_ptr<TensorImpl> empty_as(const OutputLayout& l, const char* fn) {
  return empty_strided(l.sizes, l.strides, l.dtype, l.device, fn);
}

}  // namespace

FlashAttentionLayouts flash_attention_layouts(const FlashAttentionArgs& a, const char* fn) {
  AOTRT_CHECK(a.dropout_p == 0.0, kUnsupported, fn, ": dropout_p ", a.dropout_p,
              " is not served; aotrt runs inference, where attention dropout is 0");
  AOTRT_CHECK(!a.return_debug_mask, kUnsupported, fn,
              ": return_debug_mask is not served (the debug mask records FlashAttention's "
              "dropout, which aotrt does not run)");
  AOTRT_CHECK(a.cum_seq_q == nullptr && a.cum_seq_k == nullptr, kUnsupported, fn,
              ": cum_seq_q/cum_seq_k (variable-length batches packed into one) are not served; "
              "pass [batch, seq, heads, dim] tensors");
  AOTRT_CHECK(a.seqused_k == nullptr, kUnsupported, fn,
              ": seqused_k (per-batch key counts) is not served");
  AOTRT_CHECK(a.alibi_slopes == nullptr, kUnsupported, fn,
              ": alibi_slopes (ALiBi position biases) is not served");
  AOTRT_CHECK(a.block_table == nullptr, kUnsupported, fn,
              ": block_table (a paged key/value cache) is not served");
  const bool blhe = a.layout == FlashLayout::kBLHE;
  const TensorImpl &q = a.query, &k = a.key, &v = a.value;
  AOTRT_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, kInvalidArgument, fn,
              ": query, key and value must be 4-d ",
              blhe ? "[batch, seq, heads, dim]" : "[batch, heads, seq, dim]", ", got ", q.dim(),
              "-d, ", k.dim(), "-d and ", v.dim(), "-d");
  const size_t seq = blhe ? 1 : 2, heads = blhe ? 2 : 1;
  const auto qz = q.sizes(), kz = k.sizes(), vz = v.sizes();
  const int64_t B = qz[0], Lq = qz[seq], H = qz[heads], E = qz[3];
  const int64_t Lk = kz[seq], Hk = kz[heads];
  AOTRT_CHECK(kz[0] == B && vz[0] == B && vz[seq] == Lk && vz[heads] == Hk && kz[3] == E &&
                  vz[3] == E && Hk > 0 && H % Hk == 0,
              kInvalidArgument, fn,
              ": shapes do not fit flash attention (key and value alike, their heads dividing "
              "the query's, one head dim for all three): query ",
              sizes_text(qz), ", key ", sizes_text(kz), ", value ", sizes_text(vz));
  AOTRT_CHECK(limits_nothing(a.window_size_left, Lk) && limits_nothing(a.window_size_right, Lk),
              kUnsupported, fn, ": window_size_left ", window_text(a.window_size_left),
              ", window_size_right ", window_text(a.window_size_right),
              " (sliding-window attention) is not served; only a window that limits nothing "
              "is (None, negative, or at least the ",
              Lk, " keys)");
  if (a.out != nullptr) {
    const TensorImpl& o = *a.out;
    AOTRT_CHECK(std::equal(o.sizes().begin(), o.sizes().end(), qz.begin(), qz.end()),
                kInvalidArgument, fn, ": out ", sizes_text(o.sizes()),
                " must have the query's shape ", sizes_text(qz));
    AOTRT_CHECK(o.dtype() == q.dtype() && o.device() == q.device(), kInvalidArgument, fn,
                ": out is ", dtype_name(o.dtype()), " on ", o.device().str(),
                "; it must be the query's ", dtype_name(q.dtype()), " on ", q.device().str());
    for (int64_t d = 0; d < o.dim(); ++d) {
      AOTRT_CHECK(o.strides()[d] != 0 || o.sizes()[d] <= 1, kInvalidArgument, fn,
                  ": out has more than one element at one address (dim ", d,
                  " has stride 0); it is written in place");
    }
  }

  FlashAttentionLayouts l;
  l.output = {std::vector<int64_t>(qz.begin(), qz.end()), preserve_format_strides(qz, q.strides()),
              q.dtype(), q.device()};
  l.logsumexp = layout_of({B, H, Lq}, ScalarType::Float32, q.device());
  l.rng_state = layout_of({2}, ScalarType::UInt64, q.device());
  l.unused = layout_of({}, ScalarType::UInt64, q.device());
  l.debug_mask = layout_of({0}, q.dtype(), q.device());
  l.max_q = Lq;
  l.max_k = Lk;
  return l;
}

FlashAttentionOutputs flash_attention(const FlashAttentionArgs& a, const char* fn) {
  FlashAttentionLayouts l = flash_attention_layouts(a, fn);
  const Device device = a.query.device();
  AOTRT_CHECK(device.is_cuda(), kUnsupported, fn, ": 'query' is on ", device.str(),
              "; flash attention is served on CUDA only (ATen has no CPU kernel for it; the "
              "CPU's SDPA is _scaled_dot_product_flash_attention_for_cpu)");
  FlashAttentionOutputs out;
  if (a.out == nullptr) out.output = empty_as(l.output, fn);
  const TensorImpl& output = a.out != nullptr ? *a.out : *out.output;
  const auto q = bhle_view(a.query, a.layout, fn);
  const auto k = bhle_view(a.key, a.layout, fn);
  const auto v = bhle_view(a.value, a.layout, fn);
  const auto o = bhle_view(output, a.layout, fn);
  AttentionArgs args{*q, *k, *v, nullptr, a.is_causal, a.scale, true, AttentionFlavor::kFlash,
                     CausalAlignment::kBottomRight};
  args.out = o.get();
  AttentionOutputs r = attention(args, a.dropout_p, fn);
  const TensorImpl& lse = *r.logsumexp;
  AOTRT_CHECK(lse.defined() && lse.dtype() == l.logsumexp.dtype &&
                  std::equal(lse.sizes().begin(), lse.sizes().end(), l.logsumexp.sizes.begin(),
                             l.logsumexp.sizes.end()) &&
                  std::equal(lse.strides().begin(), lse.strides().end(),
                             l.logsumexp.strides.begin(), l.logsumexp.strides.end()),
              kInternal, fn, ": the kernel's logsumexp ", sizes_text(lse.sizes()),
              " is not laid out as ", sizes_text(l.logsumexp.sizes), " contiguous");
  out.logsumexp = std::move(r.logsumexp);
  // rng_state and unused: views of one zeroed uint64 [3], one fill for both.
  static constexpr int64_t kThree[] = {3}, kOne[] = {1};
  const auto philox = empty_strided(kThree, kOne, ScalarType::UInt64, device, fn);
  zero_tensor(*philox, fn);
  out.rng_state = narrow(*philox, 0, 0, 2, fn);
  out.unused = squeeze_dim(*narrow(*philox, 0, 2, 1, fn), 0, fn);
  out.debug_mask = empty_as(l.debug_mask, fn);
  out.max_q = l.max_q;
  out.max_k = l.max_k;
  return out;
}

std::unique_ptr<TensorImpl> zero_philox_scalar(Device device, const char* fn) {
  auto t = empty_strided({}, {}, ScalarType::Int64, device, fn);
  zero_tensor(*t, fn);
  return t;
}

}  // namespace aotrt::ops
