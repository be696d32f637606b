// The CPU's attention (cpu/sdpa.cpp) as the attention family's table (Note
// [Op dispatch]): the flavor of _scaled_dot_product_flash_attention_for_cpu.
#include "core/error.h"
#include "cpu/sdpa.h"
#include "ops/attention.h"
#include "ops/dispatch.h"

namespace aotrt::cpu {
namespace {
using ops::AttentionKernels;

ops::AttentionOutputs attention(const ops::AttentionArgs& a, const char* fn) {
  AOTRT_CHECK(a.flavor == ops::AttentionFlavor::kFlashForCpu, kInternal, fn,
              ": the CPU serves only the conventions of "
              "_scaled_dot_product_flash_attention_for_cpu");
  SdpaResult r =
      scaled_dot_product_attention(a.query, a.key, a.value, a.mask, a.is_causal, a.scale, fn);
  return {std::move(r.output), std::move(r.logsumexp)};
}

constexpr AttentionKernels kAttention{.attention = attention};
AOTRT_REGISTER_KERNELS(AttentionKernels, cpu, kAttention);

}  // namespace
}  // namespace aotrt::cpu
