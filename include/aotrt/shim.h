// The aoti_torch_* C ABI that AOTInductor-generated code calls, as aotrt
// provides it. Signatures follow torch's aoti_torch/c/shim.h and
// generated/c_shim_{cpu,cuda}.h (torch 2.11-2.13); this is our own
// declaration of them, so nothing here includes a torch header.
//
// Conventions, the same for every function:
// - Returns AOTI_TORCH_SUCCESS (0) or AOTI_TORCH_FAILURE (1). Nothing throws
//   and nothing aborts; on failure the message (function, argument, what was
//   wrong) is kept per thread and read with aotrt_last_error().
// - ret_* arguments receive new owning handles; every other handle argument
//   is borrowed. Pointers returned by getters (sizes, strides, data) are
//   borrowed and live as long as the handle they came from.
// - A handle that was deleted, or never made, is refused with an error.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AOTRT_EXPORT __attribute__((__visibility__("default")))

struct AtenTensorOpaque;
typedef struct AtenTensorOpaque* AtenTensorHandle;
struct AtenGeneratorOpaque;
typedef struct AtenGeneratorOpaque* AtenGeneratorHandle;
struct AOTIProxyExecutorOpaque;
typedef struct AOTIProxyExecutorOpaque* AOTIProxyExecutorHandle;
struct DeviceGuardOpaque;
typedef struct DeviceGuardOpaque* DeviceGuardHandle;
struct StreamOpaque;
typedef struct StreamOpaque* StreamHandle;
struct CUDAGuardOpaque;
typedef struct CUDAGuardOpaque* CUDAGuardHandle;
struct CUDAStreamGuardOpaque;
typedef struct CUDAStreamGuardOpaque* CUDAStreamGuardHandle;

typedef int32_t AOTITorchError;
#define AOTI_TORCH_SUCCESS 0
#define AOTI_TORCH_FAILURE 1

// The last failure message of the calling thread ("" if none).
AOTRT_EXPORT const char* aotrt_last_error(void);

// --- Constants (values equal c10's enums) ---------------------------------
AOTRT_EXPORT int32_t aoti_torch_device_type_cpu(void);
AOTRT_EXPORT int32_t aoti_torch_device_type_cuda(void);
AOTRT_EXPORT int32_t aoti_torch_device_type_meta(void);
AOTRT_EXPORT int32_t aoti_torch_device_type_xpu(void);
AOTRT_EXPORT int32_t aoti_torch_device_type_mps(void);
AOTRT_EXPORT int32_t aoti_torch_device_type_privateuse1(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_float8_e5m2(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_float8_e4m3fn(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_float8_e5m2fnuz(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_float8_e4m3fnuz(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_bfloat16(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_float16(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_float32(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_float64(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_uint8(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_uint16(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_uint32(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_uint64(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_int8(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_int16(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_int32(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_int64(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_bool(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_complex32(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_complex64(void);
AOTRT_EXPORT int32_t aoti_torch_dtype_complex128(void);
// 0 for a code that is not a dtype.
AOTRT_EXPORT size_t aoti_torch_dtype_element_size(int32_t dtype);
AOTRT_EXPORT int32_t aoti_torch_layout_strided(void);
AOTRT_EXPORT int32_t aoti_torch_layout_sparse_coo(void);
AOTRT_EXPORT int32_t aoti_torch_layout_sparse_csr(void);
AOTRT_EXPORT int32_t aoti_torch_layout_sparse_csc(void);
AOTRT_EXPORT int32_t aoti_torch_layout_sparse_bsr(void);
AOTRT_EXPORT int32_t aoti_torch_layout_sparse_bsc(void);
AOTRT_EXPORT int32_t aoti_torch_layout__mkldnn(void);
AOTRT_EXPORT int32_t aoti_torch_layout_jagged(void);
AOTRT_EXPORT int32_t aoti_torch_memory_format_contiguous_format(void);
AOTRT_EXPORT int32_t aoti_torch_memory_format_channels_last(void);
AOTRT_EXPORT int32_t aoti_torch_memory_format_channels_last_3d(void);
AOTRT_EXPORT int32_t aoti_torch_memory_format_preserve_format(void);
AOTRT_EXPORT uint64_t aoti_torch_abi_version(void);

// --- Grad mode, checks, warnings -------------------------------------------
AOTRT_EXPORT bool aoti_torch_grad_mode_is_enabled(void);
AOTRT_EXPORT void aoti_torch_grad_mode_set_enabled(bool enabled);
// A failed check inside generated code: recorded as the thread's last error
// and reported; never aborts. (Generated code throws on its side.)
AOTRT_EXPORT void aoti_torch_check(bool cond, const char* func, const char* file,
                                   uint32_t line, const char* msg);
AOTRT_EXPORT void aoti_torch_warn(const char* func, const char* file, uint32_t line,
                                  const char* msg);

// --- Tensor lifetime and creation -------------------------------------------
AOTRT_EXPORT AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor);
AOTRT_EXPORT AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle,
                                                         AtenTensorHandle* new_handle);
AOTRT_EXPORT AOTITorchError aoti_torch_new_uninitialized_tensor(AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr,
                                                     const int64_t* strides_ptr, int32_t dtype,
                                                     int32_t device_type, int32_t device_index,
                                                     AtenTensorHandle* ret_new_tensor);
AOTRT_EXPORT AOTITorchError aoti_torch_empty_strided_pinned(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int32_t dtype,
    int32_t device_type, int32_t device_index, AtenTensorHandle* ret_new_tensor);
AOTRT_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
    AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
    AtenTensorHandle* ret, int32_t layout, const uint8_t* opaque_metadata,
    int64_t opaque_metadata_size);
// storage_offset is added to self's own offset (ATen's offset_increment).
AOTRT_EXPORT AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                                           const int64_t* sizes_ptr,
                                                           const int64_t* strides_ptr,
                                                           int64_t storage_offset,
                                                           AtenTensorHandle* ret_new_tensor);
AOTRT_EXPORT AOTITorchError aoti_torch__alloc_from_pool(AtenTensorHandle self,
                                                        int64_t offset_bytes, int32_t dtype,
                                                        int64_t ndim, const int64_t* sizes_ptr,
                                                        const int64_t* strides_ptr,
                                                        AtenTensorHandle* ret_new_tensor);
AOTRT_EXPORT AOTITorchError aoti_torch_as_strided(AtenTensorHandle self,
                                                  const int64_t* sizes_ptr,
                                                  const int64_t* strides_ptr,
                                                  AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self,
                                                              AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src,
                                             int32_t non_blocking);
AOTRT_EXPORT AOTITorchError aoti_torch_tensor_copy_(AtenTensorHandle src, AtenTensorHandle dst);
AOTRT_EXPORT AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src,
                                                      AtenTensorHandle dst);
AOTRT_EXPORT AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src,
                                                          AtenTensorHandle* ret_dst);
AOTRT_EXPORT AOTITorchError aoti_torch_zero_(AtenTensorHandle self);

// --- Getters -----------------------------------------------------------------
AOTRT_EXPORT AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr);
AOTRT_EXPORT AOTITorchError aoti_torch_get_mutable_data_ptr(AtenTensorHandle tensor,
                                                            void** ret_data_ptr);
AOTRT_EXPORT AOTITorchError aoti_torch_get_const_data_ptr(AtenTensorHandle tensor,
                                                          const void** ret_data_ptr);
AOTRT_EXPORT AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor,
                                                        int64_t* ret_size);
AOTRT_EXPORT AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor,
                                                         int64_t* ret_numel);
AOTRT_EXPORT AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim);
AOTRT_EXPORT AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel);
AOTRT_EXPORT AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes);
AOTRT_EXPORT AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d,
                                                int64_t* ret_size);
AOTRT_EXPORT AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor,
                                                   int64_t** ret_strides);
AOTRT_EXPORT AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d,
                                                  int64_t* ret_stride);
AOTRT_EXPORT AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype);
AOTRT_EXPORT AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor,
                                                       int32_t* ret_device_type);
AOTRT_EXPORT AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor,
                                                        int32_t* ret_device_index);
AOTRT_EXPORT AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout);
AOTRT_EXPORT AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor,
                                                          int64_t* ret_storage_offset);
AOTRT_EXPORT AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor,
                                                     bool* ret_is_contiguous);
AOTRT_EXPORT AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret_is_defined);

// --- Items and scalars (half and bfloat16 travel as their 16 bits; complex64
// as two floats) ----------------------------------------------------------------
AOTRT_EXPORT AOTITorchError aoti_torch_item_float16(AtenTensorHandle tensor, uint16_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_bfloat16(AtenTensorHandle tensor, uint16_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_float32(AtenTensorHandle tensor, float* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_float64(AtenTensorHandle tensor, double* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_uint8(AtenTensorHandle tensor, uint8_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_uint16(AtenTensorHandle tensor, uint16_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_uint32(AtenTensorHandle tensor, uint32_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_uint64(AtenTensorHandle tensor, uint64_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_int8(AtenTensorHandle tensor, int8_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_int16(AtenTensorHandle tensor, int16_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_int32(AtenTensorHandle tensor, int32_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_int64(AtenTensorHandle tensor, int64_t* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_item_complex64(AtenTensorHandle tensor, float* ret_value);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float32(float value,
                                                                AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float64(double value,
                                                                AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t value,
                                                              AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint16(uint16_t value,
                                                               AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint32(uint32_t value,
                                                               AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint64(uint64_t value,
                                                               AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t value,
                                                             AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t value,
                                                              AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t value,
                                                              AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t value,
                                                              AtenTensorHandle* ret);
AOTRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_bool(bool value, AtenTensorHandle* ret);

// --- Debugging and profiling hooks ---------------------------------------------
AOTRT_EXPORT AOTITorchError aoti_torch_check_inf_and_nan(const char* tensor_name,
                                                         AtenTensorHandle tensor);
AOTRT_EXPORT void aoti_torch_print_tensor_handle(AtenTensorHandle self, const char* msg);
AOTRT_EXPORT AOTITorchError aoti_record_function_start(const char* name, void* kwargs,
                                                       const void* inputs, uint64_t n_inputs,
                                                       void** guard);
AOTRT_EXPORT AOTITorchError aoti_record_function_end(void* guard);

// --- CPU fallback ops (generated/c_shim_cpu.h) ------------------------------------
AOTRT_EXPORT AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                  AtenTensorHandle mat2);
AOTRT_EXPORT AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                     AtenTensorHandle mat1,
                                                     AtenTensorHandle mat2, double beta,
                                                     double alpha);
AOTRT_EXPORT AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                   AtenTensorHandle mat2);
AOTRT_EXPORT AOTITorchError aoti_torch_cpu_baddbmm_out(AtenTensorHandle out,
                                                       AtenTensorHandle self,
                                                       AtenTensorHandle batch1,
                                                       AtenTensorHandle batch2, double beta,
                                                       double alpha);
// _scaled_mm (fp8): bias and scale_result are null for None, out_dtype null for
// None; _scaled_mm_out writes into out ([M, N], any strides, never resized).
AOTRT_EXPORT AOTITorchError aoti_torch_cpu__scaled_mm(
    AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,
    AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result,
    int32_t* out_dtype, int32_t use_fast_accum, AtenTensorHandle* ret0);
AOTRT_EXPORT AOTITorchError aoti_torch_cpu__scaled_mm_out(
    AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,
    AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result,
    int32_t* out_dtype, int32_t use_fast_accum);
// _dyn_quant_pack_4bit_weight / _dyn_quant_matmul_4bit: int4 weights, activations
// quantized to int8 per row at run time (Note [Dynamic int4 matmul] in ops/int_matmul.h).
AOTRT_EXPORT AOTITorchError aoti_torch_cpu__dyn_quant_pack_4bit_weight(
    AtenTensorHandle weights, AtenTensorHandle scales_zeros, AtenTensorHandle* bias,
    int64_t block_size, int64_t in_features, int64_t out_features, AtenTensorHandle* ret0);
AOTRT_EXPORT AOTITorchError aoti_torch_cpu__dyn_quant_matmul_4bit(
    AtenTensorHandle inp, AtenTensorHandle packed_weights, int64_t block_size,
    int64_t in_features, int64_t out_features, AtenTensorHandle* ret0);
AOTRT_EXPORT AOTITorchError aoti_torch_cpu_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
    const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_,
    const int64_t* dilation, int64_t dilation_len_, int32_t transposed,
    const int64_t* output_padding, int64_t output_padding_len_, int64_t groups,
    AtenTensorHandle* ret0);
AOTRT_EXPORT AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p,
    int32_t is_causal, AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1);

// Ops with no C shim (aotrt's proxy executor). The ints and tensors are the
// op's run-time arguments flattened in its schema order, then a handle per
// tensor output, which is made an alias of that result; every handle is
// borrowed.
AOTRT_EXPORT AOTITorchError aoti_torch_proxy_executor_call_function(
    AOTIProxyExecutorHandle proxy_executor, int extern_node_index, int num_ints,
    int64_t* flatten_int_args, int num_tensors, AtenTensorHandle* flatten_tensor_args);

#ifdef __cplusplus
}  // extern "C"
#endif
