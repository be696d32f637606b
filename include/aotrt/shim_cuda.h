// The CUDA part of the aoti_torch_* C ABI: device and stream guards, the
// current stream, and raw memory from the caching allocator. Signatures follow
// torch's aoti_torch/c/shim.h under USE_CUDA (torch 2.11-2.13). Provided only
// by an aotrt built with CUDA.
//
// Conventions are those of aotrt/shim.h. Guards restore, when deleted, the
// device (and for a stream guard, that device's current stream) that was
// current on the calling thread when they were created; delete them on the
// thread that created them, innermost first. A device index of -1 means the
// current device.
#pragma once

#include "aotrt/shim.h"

#ifdef __cplusplus
extern "C" {
#endif

// Makes device_index the current device until the guard is deleted.
AOTRT_EXPORT AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index,
                                                         CUDAGuardHandle* ret_guard);
AOTRT_EXPORT AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard);
// Switches the guarded thread to another device (the original is still what
// the delete restores).
AOTRT_EXPORT AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard,
                                                            int32_t device_index);

// Makes `stream` (a cudaStream_t; null: the legacy default stream) the current
// stream of device_index, and that device the current device, until the guard
// is deleted. The stream is borrowed: the caller keeps it alive.
AOTRT_EXPORT AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream,
                                                                int32_t device_index,
                                                                CUDAStreamGuardHandle* ret_guard);
AOTRT_EXPORT AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard);

// The calling thread's current stream of a device, as a cudaStream_t.
AOTRT_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index,
                                                               void** ret_stream);

// nbytes of memory of the current device from its caching allocator, ordered
// on the current stream (null for 0 bytes). Give it back with raw_delete.
AOTRT_EXPORT AOTITorchError aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t nbytes,
                                                                        void** ret_ptr);
// Frees memory from raw_alloc (null is ignored).
AOTRT_EXPORT AOTITorchError aoti_torch_cuda_caching_allocator_raw_delete(void* ptr);

#ifdef __cplusplus
}  // extern "C"
#endif

// --- CUDA fallback ops (generated/c_shim_cuda.h) -----------------------------------
// Library ops on cuBLAS and cuDNN, and attention on aotrt's own kernel. Every
// tensor argument may be any strided view; out= tensors are written in place
// (never resized), ret* receive new owning handles. Float32, float16 and
// bfloat16 are served; anything else is refused with an error.
#ifdef __cplusplus
extern "C" {
#endif

AOTRT_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                   AtenTensorHandle mat2);
AOTRT_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out,
                                                      AtenTensorHandle self,
                                                      AtenTensorHandle mat1,
                                                      AtenTensorHandle mat2, double beta,
                                                      double alpha);
AOTRT_EXPORT AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                    AtenTensorHandle mat2);
AOTRT_EXPORT AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out,
                                                        AtenTensorHandle self,
                                                        AtenTensorHandle batch1,
                                                        AtenTensorHandle batch2, double beta,
                                                        double alpha);
// _scaled_mm (fp8 on cuBLASLt, sm89 and later): self row-major, mat2 column-major.
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__scaled_mm(
    AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,
    AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result,
    int32_t* out_dtype, int32_t use_fast_accum, AtenTensorHandle* ret0);
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__scaled_mm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,
    AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result,
    int32_t* out_dtype, int32_t use_fast_accum);
// bias, like every AtenTensorHandle* input, is null for None.
AOTRT_EXPORT AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
    const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_,
    const int64_t* dilation, int64_t dilation_len_, int32_t transposed,
    const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0);
// Returns (output, logsumexp, philox_seed, philox_offset). dropout_p must be 0.
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* attn_bias, int32_t compute_log_sumexp, double dropout_p,
    int32_t is_causal, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
    AtenTensorHandle* ret2, AtenTensorHandle* ret3);
// Returns (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed,
// philox_offset, debug_attn_mask); cum_seq_q/k and the debug mask are
// undefined tensors. dropout_p must be 0 and return_debug_mask false.
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* attn_bias, int32_t compute_log_sumexp, double dropout_p,
    int32_t is_causal, int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8);

// Returns (output, logsumexp, philox_seed, philox_offset, max_seqlen_q,
// max_seqlen_k) for [batch, seq, heads, dim] query/key/value. dropout_p must be
// 0; cu_seqlens_q/k, seqlen_k and window_size must be None; custom_mask_type
// is 0 (none), 1 (causal, top-left) or 2 (causal, bottom-right).
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__efficient_attention_forward(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* bias,
    AtenTensorHandle* cu_seqlens_q, AtenTensorHandle* cu_seqlens_k, int64_t* max_seqlen_q,
    int64_t* max_seqlen_k, double dropout_p, int64_t custom_mask_type, int32_t compute_log_sumexp,
    double* scale, AtenTensorHandle* seqlen_k, int64_t* window_size, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5);

// FlashAttention's ops. The causal mask is aligned to the bottom-right corner
// (key j hidden from query i when j > i + Lk - Lq); key/value may have fewer
// heads than the query. dropout_p must be 0 and return_debug_mask false.
// Returns (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, rng_state,
// unused, debug_attn_mask) for [batch, heads, seq, dim] query/key/value:
// cum_seq_q/k undefined, rng_state uint64 [2] and unused uint64 [] holding 0,
// the debug mask empty.
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p,
    int32_t is_causal, int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8);
// Returns (output, logsumexp, rng_state, unused, debug_attn_mask) for
// [batch, seq, heads, dim] query/key/value. cum_seq_q/k, seqused_k,
// alibi_slopes and block_table must be None; window_size_left/right None or
// limiting nothing (negative, or at least the key count); max_q, max_k and
// num_splits are not read.
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__flash_attention_forward(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k, int64_t max_q, int64_t max_k,
    double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    int64_t* window_size_left, int64_t* window_size_right, AtenTensorHandle* seqused_k,
    AtenTensorHandle* alibi_slopes, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
    AtenTensorHandle* ret2, AtenTensorHandle* ret3, AtenTensorHandle* ret4);
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__flash_attention_forward_v2(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k, int64_t max_q, int64_t max_k,
    double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    int64_t* window_size_left, int64_t* window_size_right, AtenTensorHandle* seqused_k,
    AtenTensorHandle* alibi_slopes, AtenTensorHandle* block_table, int64_t* num_splits,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, AtenTensorHandle* ret4);
// Writes the output into `out` ([batch, seq, heads, dim], borrowed) and returns
// the logsumexp.
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__flash_attention_forward_no_dropout_inplace(
    AtenTensorHandle out, AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k, int64_t max_q, int64_t max_k,
    double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    int64_t* window_size_left, int64_t* window_size_right, AtenTensorHandle* seqused_k,
    AtenTensorHandle* alibi_slopes, AtenTensorHandle* block_table, AtenTensorHandle* ret0);
AOTRT_EXPORT AOTITorchError aoti_torch_cuda__flash_attention_forward_no_dropout_inplace_v2(
    AtenTensorHandle out, AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* cum_seq_q, AtenTensorHandle* cum_seq_k, int64_t max_q, int64_t max_k,
    double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    int64_t* window_size_left, int64_t* window_size_right, AtenTensorHandle* seqused_k,
    AtenTensorHandle* alibi_slopes, AtenTensorHandle* block_table, int64_t* num_splits,
    AtenTensorHandle* ret0);

#ifdef __cplusplus
}  // extern "C"
#endif
