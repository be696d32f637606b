// The CUDA fallback ops the aoti_torch_cuda_* shims (op_shims.cpp) call:
// matmuls on cuBLAS (matmul.cpp), convolution on cuDNN (conv.cpp) and
// attention on aotrt's own kernel (attention.cu). Each takes tensors as they
// come - any strides, any storage offset - reads views in place where the
// library can address them, and copies only what it cannot (pack_count()).
// `fn` names the calling shim in error messages.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "core/conv_params.h"
#include "core/tensor.h"

namespace aotrt::cuda {

// --- matmul.cpp -------------------------------------------------------------------------
// out = self @ mat2 (2-D); out is written in place, whatever its strides.
void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
            const char* fn);
// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to out's shape
// and is not read when beta == 0.
void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha, const char* fn);
// out[b] = self[b] @ mat2[b] (3-D).
void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
             const char* fn);
// out[b] = beta * self[b] + alpha * (batch1[b] @ batch2[b]).
void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn);

// The GEMM behind them, on views, for conv.cpp's 1x1 convolutions: out
// [M, N] = x [M, K] @ y [K, N] (+ bias [N] on every row), each read in place
// when cuBLAS can address it (cublas_addressable, Note [Matmul layouts]).
// `tf32`: whether fp32 inputs may be rounded to TF32 (Note [TF32]).
bool cublas_addressable(const StridedView& matrix);
void linear_views(const StridedView& out, const StridedView& x, const StridedView& y,
                  const StridedView* bias, bool tf32, const char* fn);

// --- conv.cpp ---------------------------------------------------------------------------
using aotrt::ConvParams;  // core/conv_params.h
// aten::convolution: a new output tensor, channels-last when ATen's cuDNN
// path would make it so (see Note [Convolution output layout]).
std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params,
                                        const char* fn);

// --- attention.cu -----------------------------------------------------------------------
// Which ATen op's output conventions to follow (layout of the output, shape
// of the logsumexp): see Note [Attention outputs].
enum class AttentionFlavor { kEfficient, kCudnn };

struct AttentionOutputs {
  std::unique_ptr<TensorImpl> output;     // [B, H, Lq, Ev], query's dtype
  std::unique_ptr<TensorImpl> logsumexp;  // float32, shape per flavor; may be undefined
};

// softmax(q @ k^T * scale + attn_bias, causal mask) @ v for q [B, H, Lq, E],
// k [B, Hk, Lk, E], v [B, Hk, Lk, Ev] (Hk divides H), any strides. The causal
// mask hides key j from query i when j > i, or with causal_bottom_right when
// j > i + Lk - Lq.
AttentionOutputs attention(const TensorImpl& query, const TensorImpl& key,
                           const TensorImpl& value, const TensorImpl* attn_bias,
                           bool is_causal, bool causal_bottom_right,
                           std::optional<double> scale, bool compute_log_sumexp,
                           AttentionFlavor flavor, const char* fn);

// The fp16/bf16 attention of attention() on cuDNN's fused kernels
// (attention_cudnn.cpp, Note [cuDNN attention]). Every view is 4-d; the bias
// has dims of size 1 where it broadcasts (data null: no bias); lse (null: not
// wanted) is fp32 [B, H, Lq, 1] with lse_strides for its first three dims.
// Returns false, having done nothing, when cuDNN does not serve the call.
struct CudnnAttentionCall {
  ScalarType dtype;
  StridedView q, k, v, bias, out;
  float* lse;
  const int64_t* lse_strides;
  bool causal;
  bool causal_bottom_right;  // with causal: the diagonal ends at the bottom-right corner
  float scale;
};
bool cudnn_attention(const CudnnAttentionCall& call, int device, cudaStream_t stream,
                     const char* fn);

}  // namespace aotrt::cuda
