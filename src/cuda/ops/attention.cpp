// The CUDA attention kernel (cuda/attention.cu) as the attention family's
// table (Note [Op dispatch]), in the efficient, cuDNN and flash flavors.
#include "core/error.h"
#include "cuda/library_ops.h"
#include "ops/attention.h"
#include "ops/dispatch.h"

namespace aotrt::cuda {
namespace {
using ops::AttentionKernels;

ops::AttentionOutputs attention_kernel(const ops::AttentionArgs& a, const char* fn) {
  AOTRT_CHECK(a.flavor != ops::AttentionFlavor::kFlashForCpu, kInternal, fn,
              ": CUDA attention has no _for_cpu flavor");
  const AttentionFlavor flavor = a.flavor == ops::AttentionFlavor::kEfficient ? AttentionFlavor::kEfficient
                                 : a.flavor == ops::AttentionFlavor::kFlash   ? AttentionFlavor::kFlash
                                                                              : AttentionFlavor::kCudnn;
  AttentionOutputs r = attention(
      a.query, a.key, a.value, a.mask, a.is_causal,
      a.causal_alignment == ops::CausalAlignment::kBottomRight, a.scale, a.compute_log_sumexp,
      flavor, a.out, fn);
  return {std::move(r.output), std::move(r.logsumexp)};
}

constexpr AttentionKernels kAttention{.attention = attention_kernel};
AOTRT_REGISTER_KERNELS(AttentionKernels, cuda, kAttention);

}  // namespace
}  // namespace aotrt::cuda
