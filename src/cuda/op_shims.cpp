// The aoti_torch_cuda_* fallback-op shims of aotrt/shim_cuda.h: argument
// handling at the C boundary, then the ops of cuda/library_ops.h. Handles in
// are borrowed; ret* get new owning handles, made only once the op succeeded
// (so a failure leaves nothing to delete).
#include <optional>
#include <span>

#include "aotrt/shim_cuda.h"
#include "core/handles.h"
#include "cuda/library_ops.h"
#include "cuda/runtime.h"
#include "shim/args.h"
#include "shim/boundary.h"
#include "shim/results.h"

using namespace aotrt;

namespace {

// "fn: argument 'name'", the `what` of handle lookups; fn and name are literals.
#define AOTRT_ARG(fn, name) fn ": argument '" name "'"



// A 0-d int64 tensor holding 0 (the philox seed and offset of attention
// without dropout; see Note [Attention outputs] in cuda/attention.cu).
std::unique_ptr<TensorImpl> zero_scalar_int64(Device device, const char* fn) {
  auto t = empty_strided({}, {}, ScalarType::Int64, device, fn);
  if (device.is_cuda()) {
    cuda::fill_zero(strided_view(*t));
  } else {
    *static_cast<int64_t*>(t->data_ptr()) = 0;
  }
  return t;
}


}  // namespace

extern "C" {

AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                      AtenTensorHandle mat2) {
#define FN "aoti_torch_cuda_mm_out"
  return shim_boundary(__func__, [&] {
    cuda::mm_out(handle_get_defined(out, AOTRT_ARG(FN, "out")),
                 handle_get_defined(self, AOTRT_ARG(FN, "self")),
                 handle_get_defined(mat2, AOTRT_ARG(FN, "mat2")), FN);
  });
#undef FN
}

AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                         AtenTensorHandle mat1, AtenTensorHandle mat2,
                                         double beta, double alpha) {
#define FN "aoti_torch_cuda_addmm_out"
  return shim_boundary(__func__, [&] {
    cuda::addmm_out(handle_get_defined(out, AOTRT_ARG(FN, "out")),
                    handle_get_defined(self, AOTRT_ARG(FN, "self")),
                    handle_get_defined(mat1, AOTRT_ARG(FN, "mat1")),
                    handle_get_defined(mat2, AOTRT_ARG(FN, "mat2")), beta, alpha, FN);
  });
#undef FN
}

AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                       AtenTensorHandle mat2) {
#define FN "aoti_torch_cuda_bmm_out"
  return shim_boundary(__func__, [&] {
    cuda::bmm_out(handle_get_defined(out, AOTRT_ARG(FN, "out")),
                  handle_get_defined(self, AOTRT_ARG(FN, "self")),
                  handle_get_defined(mat2, AOTRT_ARG(FN, "mat2")), FN);
  });
#undef FN
}

AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                           AtenTensorHandle batch1, AtenTensorHandle batch2,
                                           double beta, double alpha) {
#define FN "aoti_torch_cuda_baddbmm_out"
  return shim_boundary(__func__, [&] {
    cuda::baddbmm_out(handle_get_defined(out, AOTRT_ARG(FN, "out")),
                      handle_get_defined(self, AOTRT_ARG(FN, "self")),
                      handle_get_defined(batch1, AOTRT_ARG(FN, "batch1")),
                      handle_get_defined(batch2, AOTRT_ARG(FN, "batch2")), beta, alpha, FN);
  });
#undef FN
}

AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
    const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_,
    const int64_t* dilation, int64_t dilation_len_, int32_t transposed,
    const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0) {
#define FN "aoti_torch_cuda_convolution"
  return shim_boundary(__func__, [&] {
    AOTRT_CHECK_OUT(ret0, FN);
    const ConvParams params = conv_params(stride, stride_len_, padding, padding_len_, dilation,
                                          dilation_len_, transposed, output_padding,
                                          output_padding_len_, groups, FN);
    auto out = cuda::convolution(handle_get_defined(input, AOTRT_ARG(FN, "input")),
                                 handle_get_defined(weight, AOTRT_ARG(FN, "weight")),
                                 optional_tensor(bias, AOTRT_ARG(FN, "bias")), params, FN);
    *ret0 = handle_register(std::move(out));
  });
#undef FN
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* attn_bias, int32_t compute_log_sumexp, double dropout_p,
    int32_t is_causal, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
    AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
#define FN "aoti_torch_cuda__scaled_dot_product_efficient_attention"
  return shim_boundary(__func__, [&] {
    check_no_dropout(dropout_p, FN);
    auto r = cuda::attention(handle_get_defined(query, AOTRT_ARG(FN, "query")),
                             handle_get_defined(key, AOTRT_ARG(FN, "key")),
                             handle_get_defined(value, AOTRT_ARG(FN, "value")),
                             optional_tensor(attn_bias, AOTRT_ARG(FN, "attn_bias")),
                             is_causal != 0,
                             scale ? std::optional<double>(*scale) : std::nullopt,
                             compute_log_sumexp != 0, cuda::AttentionFlavor::kEfficient, FN);
    auto seed = zero_scalar_int64(cpu_device(), FN);
    auto offset = zero_scalar_int64(cpu_device(), FN);
    ShimResults results;  // Note [Unused op outputs]
    results.give(ret0, std::move(r.output));
    results.give(ret1, std::move(r.logsumexp));
    results.give(ret2, std::move(seed));
    results.give(ret3, std::move(offset));
    results.commit();
  });
#undef FN
}

AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* attn_bias, int32_t compute_log_sumexp, double dropout_p,
    int32_t is_causal, int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
#define FN "aoti_torch_cuda__scaled_dot_product_cudnn_attention"
  return shim_boundary(__func__, [&] {
    check_no_dropout(dropout_p, FN);
    AOTRT_CHECK(return_debug_mask == 0, kUnsupported, FN,
                ": return_debug_mask is not served (cuDNN attention has no debug mask)");
    const TensorImpl& q = handle_get_defined(query, AOTRT_ARG(FN, "query"));
    const TensorImpl& k = handle_get_defined(key, AOTRT_ARG(FN, "key"));
    auto r = cuda::attention(q, k, handle_get_defined(value, AOTRT_ARG(FN, "value")),
                             optional_tensor(attn_bias, AOTRT_ARG(FN, "attn_bias")),
                             is_causal != 0,
                             scale ? std::optional<double>(*scale) : std::nullopt,
                             compute_log_sumexp != 0, cuda::AttentionFlavor::kCudnn, FN);
    auto seed = zero_scalar_int64(q.device(), FN);
    auto offset = zero_scalar_int64(q.device(), FN);
    ShimResults results;  // Note [Unused op outputs]
    results.give(ret0, std::move(r.output));
    results.give(ret1, std::move(r.logsumexp));
    results.give(ret2, std::make_unique<TensorImpl>());  // cum_seq_q: undefined, as ATen
    results.give(ret3, std::make_unique<TensorImpl>());  // cum_seq_k
    results.give_value(ret4, q.sizes()[2]);
    results.give_value(ret5, k.sizes()[2]);
    results.give(ret6, std::move(seed));
    results.give(ret7, std::move(offset));
    results.give(ret8, std::make_unique<TensorImpl>());  // debug mask
    results.commit();
  });
#undef FN
}

}  // extern "C"
