// aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu: the attention
// fallback inductor emits for CPU models (nn.TransformerEncoderLayer and
// F.scaled_dot_product_attention).
#include <optional>

#include "core/handles.h"
#include "cpu/sdpa.h"
#include "shim/args.h"
#include "shim/boundary.h"
#include "shim/results.h"

using namespace aotrt;

extern "C" AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p,
    int32_t is_causal, AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu";
    check_no_dropout(dropout_p, fn);
    const TensorImpl* mask = optional_tensor(
        attn_mask, "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu: argument 'attn_mask'");
    std::optional<double> s;
    if (scale != nullptr) s = *scale;
    cpu::SdpaResult r = cpu::scaled_dot_product_attention(
        handle_get_defined(query, "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu: argument 'query'"),
        handle_get_defined(key, "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu: argument 'key'"),
        handle_get_defined(value, "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu: argument 'value'"), mask,
        is_causal != 0, s, fn);
    ShimResults results;  // Note [Unused op outputs]
    results.give(ret0, std::move(r.output));
    results.give(ret1, std::move(r.logsumexp));
    results.commit();
  });
}
