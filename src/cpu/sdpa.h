// Scaled dot-product attention on the CPU (the math of ATen's
// _scaled_dot_product_flash_attention_for_cpu), for inference.
#pragma once

#include <memory>
#include <optional>

#include "core/tensor.h"

namespace aotrt::cpu {

struct SdpaResult {
  std::unique_ptr<TensorImpl> output;     // [B,H,Lq,Ev], dense in query's stride order
  std::unique_ptr<TensorImpl> logsumexp;  // [B,H,Lq] float32, memory order [B,Lq,H]
};

// q [B,H,Lq,E], k [B,Hk,Lk,E], v [B,Hk,Lk,Ev] with Hk dividing H (query head
// h reads key/value head h / (H / Hk)), any strides; mask (optional)
// additive, of q's dtype, broadcastable to [B,H,Lq,Lk]; is_causal masks
// j > i (upper-left aligned); scale defaults to 1/sqrt(E).
SdpaResult scaled_dot_product_attention(const TensorImpl& q, const TensorImpl& k,
                                        const TensorImpl& v, const TensorImpl* mask,
                                        bool is_causal, std::optional<double> scale,
                                        const char* what);

}  // namespace aotrt::cpu
