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
#include <string>

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
// out (float32) = self @ mat2 for float16 or bfloat16 operands (2-D), in
// float32 (Note [Matmul with an output dtype] in ops/matmul.h).
void mm_widening_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                     const char* fn);
// out[b] = self[b] @ mat2[b] (3-D).
void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
             const char* fn);
// out[b] = beta * self[b] + alpha * (batch1[b] @ batch2[b]).
void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn);

// The integer products of the four above (uint8, int8, int16, int32, int64;
// Note [Integer matmul on CUDA] in ops/int_matmul.cu): out [batch,] m x n =
// beta * self + alpha * (x @ y), self broadcast to out's sizes or null.
void integer_matmul(const StridedView& out, const StridedView* self, const StridedView& x,
                    const StridedView& y, double beta, double alpha, const char* fn);
// _int_mm's int8 x int8 -> int32 product on cuBLASLt's integer GEMM (Note
// [Int8 matmul on CUDA] in ops/int_matmul.cu): out [m, n] int32, self [m, k]
// and mat2 [k, n] int8, each read or written in place where cuBLAS addresses
// it. False, having queued nothing, where it does not (a layout, or no
// cuBLASLt algorithm for the configuration: the plan remembers that).
bool int8_mm_lt(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                const char* fn);
// _scaled_mm past ops/matmul.cpp's checks (Note [Scaled matmul]): the float8
// GEMM on cuBLASLt, written into out [M, N] (any strides); `rowwise` picks
// cuBLASLt's outer-vector scales over its scalar ones.
void scaled_mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                   const TensorImpl& scale_a, const TensorImpl& scale_b, const TensorImpl* bias,
                   const TensorImpl* scale_result, bool rowwise, bool use_fast_accum,
                   const char* fn);

// _scaled_grouped_mm past ops/matmul.cpp's checks (Note [Scaled grouped
// matmul]; grouped_mm.cu): out bfloat16 (zeroed), offs dense int32 on the
// device (null for 3d x 3d), read there.
void scaled_grouped_mm(const TensorImpl& out, const TensorImpl& mat_a, const TensorImpl& mat_b,
                       const TensorImpl& scale_a, const TensorImpl& scale_b,
                       const TensorImpl* offs, const char* fn);
// _grouped_mm past ops/matmul.cpp's checks (Note [Grouped matmul]; grouped_mm.cu, the
// same kernel without scales): out of the operands' dtype (bfloat16, float16 or
// float32; zeroed), offs dense int32 on the device (null for 3d x 3d), read there.
void grouped_mm(const TensorImpl& out, const TensorImpl& mat_a, const TensorImpl& mat_b,
                const TensorImpl* offs, const char* fn);

// The GEMM behind them, on views, for conv.cpp's 1x1 convolutions: out
// [M, N] = x [M, K] @ y [K, N] (+ bias [N] on every row), each read in place
// when cuBLAS can address it (cublas_addressable, Note [Matmul layouts]).
// `tf32`: whether fp32 inputs may be rounded to TF32 (Note [TF32]).
bool cublas_addressable(const StridedView& matrix);
void linear_views(const StridedView& out, const StridedView& x, const StridedView& y,
                  const StridedView* bias, bool tf32, const char* fn);

// Test hooks for Note [GEMM plans] (matmul.cpp), all for the calling thread.
struct GemmPlanStats {
  uint64_t plans_built = 0;     // plans made: one cuBLASLt heuristic query each
  uint64_t lt_calls = 0;        // GEMMs run by cublasLtMatmul
  uint64_t fallback_calls = 0;  // GEMMs run by cublasGemmEx / cublasGemmStridedBatchedEx
  size_t plans_cached = 0;      // plans held now
  size_t plan_capacity = 0;     // the most held before the table starts over
};
GemmPlanStats gemm_plan_stats();
// While on, every plan built on the calling thread is refused as cuBLASLt
// refuses a configuration it cannot serve, so tests reach the fallback.
// Switching drops the thread's plans.
void set_gemm_lt_refusal_for_testing(bool refuse);

// --- ops/int4_tinygemm.cu ----------------------------------------------------------------
// CUDA's _weight_int4pack_mm past ops/int_matmul.cpp's checks (Note [Int4
// tinygemm layout]): out [M, N] bfloat16 <- a [M, K] bfloat16 @ the weight
// packed in b, all dense; the kernel chosen by M (Note [Int4 matmul kernels]).
void int4_tinygemm_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b,
                      int64_t group, const TensorImpl& scale_zeros, const char* fn);
// For tests and benchmarks: one kernel of int4_tinygemm_mm, and its split
// over K (blocks of a cluster, at most 8) and its tile (decode, M <= 64: n
// tiles a warp, 1, 2 or 4; gemm: rows a block, 64 or 128); 0 picks as
// int4_tinygemm_mm does. False, with nothing queued, when that kernel does not
// serve the call (an alignment, a device before sm_80, M past 64 for decode,
// M past kInt4GemvMaxRows for gemv).
enum class Int4Kernel { kAuto, kExact, kGemv, kDecode, kGemm };
inline constexpr int64_t kInt4GemvMaxRows = 32;  // M the gemv kernel serves
inline constexpr int64_t kInt4GemvAutoRows = 24;  // M auto gives it (Note [Int4 matmul kernels])
struct Int4KernelChoice {
  Int4Kernel kernel = Int4Kernel::kAuto;
  int splits = 0;
  int tiles = 0;
};
bool int4_tinygemm_mm_with(const Int4KernelChoice& choice, const TensorImpl& out,
                           const TensorImpl& a, const TensorImpl& b, int64_t group,
                           const TensorImpl& scale_zeros, const char* fn);
// Note [Early start] (cuda/ops/launch.cuh): whether the decode GEMV kernels (int4 gemv here,
// decode_gemv below) are launched to start while the kernel before them finishes
// (AOTRT_EARLY_START=1; off by default). Tests and benchmarks set it for the process.
bool early_start_enabled();
void set_early_start_enabled(bool enabled);

// --- conv.cpp ---------------------------------------------------------------------------
using aotrt::ConvParams;  // core/conv_params.h
// aten::convolution: a new output tensor, channels-last when ATen's cuDNN
// path would make it so (see Note [Convolution output layout]).
std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params,
                                        const char* fn);

// Autotuning (Note [Convolution autotuning]). Test-only: what a new process
// would see - tuning on or off in place of AOTRT_CUDNN_BENCHMARK (read once),
// the shared table emptied and pointed at `tuning_file` ("" keeps it in
// memory; the file is read again on the next lookup), and the calling
// thread's plans dropped (other threads keep theirs).
void reset_conv_tuning_for_testing(bool benchmark, const std::string& tuning_file);
// Configurations since the process started, by how their engine was chosen.
struct ConvTuningCounters {
  int64_t tuned = 0;             // by timing candidates (or the only one)
  int64_t candidates_timed = 0;  // plans timed for those
  int64_t loaded = 0;            // rebuilt from the table: nothing timed
  int64_t heuristic = 0;         // the heuristic's first (tuning off, or capturing)
};
ConvTuningCounters conv_tuning_counters();

// --- attention.cu -----------------------------------------------------------------------
// Which ATen op's output conventions to follow (layout of the output, shape
// of the logsumexp): see Note [Attention outputs].
enum class AttentionFlavor { kEfficient, kCudnn, kFlash };

struct AttentionOutputs {
  std::unique_ptr<TensorImpl> output;     // [B, H, Lq, Ev], query's dtype; null when out is given
  std::unique_ptr<TensorImpl> logsumexp;  // float32, shape per flavor; may be undefined
};

// softmax(q @ k^T * scale + attn_bias, causal mask) @ v for q [B, H, Lq, E],
// k [B, Hk, Lk, E], v [B, Hk, Lk, Ev] (Hk divides H), any strides. The causal
// mask hides key j from query i when j > i, or with causal_bottom_right when
// j > i + Lk - Lq. `out` (may be null): a [B, H, Lq, Ev] tensor of the
// query's dtype and device, any strides, written instead of a new output.
AttentionOutputs attention(const TensorImpl& query, const TensorImpl& key,
                           const TensorImpl& value, const TensorImpl* attn_bias,
                           bool is_causal, bool causal_bottom_right,
                           std::optional<double> scale, bool compute_log_sumexp,
                           AttentionFlavor flavor, const TensorImpl* out, const char* fn);

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

// Attention of a few query rows against a long key/value cache
// (attention_decode.cu, Note [Decode attention]): q [B, H, Lq, E], k and v
// [B, Hk, Lk, E], the bias broadcast to [B, H, Lq, Lk] through its strides
// (0 where it broadcasts; data null: none), out [B, H, Lq, E] and lse
// (null: not written; [B, H, lse_rows] through lse_strides, rows past Lq
// +inf) as attention() laid them out. The causal mask hides key j from
// query i when j > i + causal_offset. Returns false, having queued nothing,
// when the call is not one it serves.
struct DecodeAttentionCall {
  ScalarType dtype;
  const void* q;
  const void* k;
  const void* v;
  const void* bias;
  void* out;
  float* lse;
  int64_t sizes[7];  // B, H, Hk, Lq, Lk, E, Ev
  int64_t q_strides[4], k_strides[4], v_strides[4], bias_strides[4], out_strides[4];
  int64_t lse_strides[3];
  int64_t lse_rows;
  bool causal;
  int64_t causal_offset;
  float scale;
  float masked_row_lse;
  int64_t splits_for_testing = 0;  // > 0: the key splits to use (tests)
};
bool decode_attention(const DecodeAttentionCall& call, int device, cudaStream_t stream,
                      const char* fn);
// Whether attention() offers `call` to cuDNN before the decode path (Note
// [Decode attention or cuDNN]): true in the auto mode for the calls cuDNN
// runs faster; the decode path then serves it only if cuDNN does not.
bool decode_attention_prefers_cudnn(const DecodeAttentionCall& call);
// The decode path's mode for the process, in place of AOTRT_DECODE_ATTENTION
// ("0": off, "1": on for every call it serves, unset: auto), for tests and
// benchmarks; and the calls it served.
enum class DecodeAttentionMode { kOff, kOn, kAuto };
void set_decode_attention_mode(DecodeAttentionMode mode);
int64_t decode_attention_calls();

// The matmul of a decode step (gemv_decode.cu, Note [Decode GEMV]): out[m, n] =
// alpha * sum_k x[m, k] w[n, k] (+ bias[n]) for M <= kMaxDecodeGemvRows rows; x's rows
// and w's rows (the mm's [K, N] operand seen transposed) have unit stride. Returns
// false, having queued nothing, when the call is not one it serves.
constexpr int64_t kMaxDecodeGemvRows = 8;
struct DecodeGemvCall {
  ScalarType dtype;
  int64_t M, N, K;
  const void* x;
  int64_t ldx;  // x[m, k] at x + m * ldx + k
  const void* w;
  int64_t ldw;  // w[n, k] at w + n * ldw + k
  const void* bias;  // [N], unit stride; null: none
  void* out;
  int64_t out_row_stride, out_col_stride;
  float alpha;
};
bool decode_gemv(const DecodeGemvCall& call, int device, cudaStream_t stream);
// Tests and benchmarks: turns the path on or off for the process (in place of
// AOTRT_DECODE_GEMV), and counts the calls it served.
void set_decode_gemv_enabled(bool enabled);
int64_t decode_gemv_calls();

}  // namespace aotrt::cuda
