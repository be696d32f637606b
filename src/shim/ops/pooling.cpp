// Entry points of the pooling family (ops/pooling.h), on both devices (an
// out-of-range max_unpool index: Note [Max unpool on CUDA] in
// src/cuda/ops/pooling.cu). Handles are borrowed; ret* get new owning handles, dropped when null (Note [Unused op
// outputs]). See Note [Op rows]. The names are torch 2.13's and 2.11's alike,
// except grid_sampler_3d, which torch 2.11 has no C shim for: its packages call it
// through the proxy executor (the AOTRT_PROXY_OP row at the end).
#include "ops/pooling.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using runtime::kProxyCpu;
using runtime::kProxyCuda;
using runtime::ProxyCall;

#define AOTRT_POOL_INTS(name) args.ints(name, name##_len_, #name)

AOTRT_OP(_adaptive_avg_pool2d,
             (AtenTensorHandle self, const int64_t* output_size, int64_t output_size_len_,
              AtenTensorHandle* ret0),
             give(ret0, ops::adaptive_avg_pool(args.tensor(self, "self"), 2,
                                               AOTRT_POOL_INTS(output_size), fn)))

AOTRT_OP(_adaptive_avg_pool3d,
             (AtenTensorHandle self, const int64_t* output_size, int64_t output_size_len_,
              AtenTensorHandle* ret0),
             give(ret0, ops::adaptive_avg_pool(args.tensor(self, "self"), 3,
                                               AOTRT_POOL_INTS(output_size), fn)))

AOTRT_OP(adaptive_max_pool2d,
             (AtenTensorHandle self, const int64_t* output_size, int64_t output_size_len_,
              AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             ops::PoolWithIndices r = ops::adaptive_max_pool(args.tensor(self, "self"), 2,
                                                             AOTRT_POOL_INTS(output_size), fn);
             give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(adaptive_max_pool3d,
             (AtenTensorHandle self, const int64_t* output_size, int64_t output_size_len_,
              AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             ops::PoolWithIndices r = ops::adaptive_max_pool(args.tensor(self, "self"), 3,
                                                             AOTRT_POOL_INTS(output_size), fn);
             give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(avg_pool2d,
             (AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_,
              const int64_t* stride, int64_t stride_len_, const int64_t* padding,
              int64_t padding_len_, int32_t ceil_mode, int32_t count_include_pad,
              int64_t* divisor_override, AtenTensorHandle* ret0),
             give(ret0, ops::avg_pool(args.tensor(self, "self"), 2, AOTRT_POOL_INTS(kernel_size),
                                      AOTRT_POOL_INTS(stride), AOTRT_POOL_INTS(padding),
                                      ceil_mode != 0, count_include_pad != 0,
                                      OpArgs::optional(divisor_override), fn)))

AOTRT_OP(avg_pool3d,
             (AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_,
              const int64_t* stride, int64_t stride_len_, const int64_t* padding,
              int64_t padding_len_, int32_t ceil_mode, int32_t count_include_pad,
              int64_t* divisor_override, AtenTensorHandle* ret0),
             give(ret0, ops::avg_pool(args.tensor(self, "self"), 3, AOTRT_POOL_INTS(kernel_size),
                                      AOTRT_POOL_INTS(stride), AOTRT_POOL_INTS(padding),
                                      ceil_mode != 0, count_include_pad != 0,
                                      OpArgs::optional(divisor_override), fn)))

AOTRT_OP(max_pool2d_with_indices,
             (AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_,
              const int64_t* stride, int64_t stride_len_, const int64_t* padding,
              int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
              int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             ops::PoolWithIndices r = ops::max_pool_with_indices(
                 args.tensor(self, "self"), 2, AOTRT_POOL_INTS(kernel_size),
                 AOTRT_POOL_INTS(stride), AOTRT_POOL_INTS(padding), AOTRT_POOL_INTS(dilation),
                 ceil_mode != 0, fn);
             give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(max_pool3d_with_indices,
             (AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_,
              const int64_t* stride, int64_t stride_len_, const int64_t* padding,
              int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
              int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             ops::PoolWithIndices r = ops::max_pool_with_indices(
                 args.tensor(self, "self"), 3, AOTRT_POOL_INTS(kernel_size),
                 AOTRT_POOL_INTS(stride), AOTRT_POOL_INTS(padding), AOTRT_POOL_INTS(dilation),
                 ceil_mode != 0, fn);
             give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(fractional_max_pool2d,
             (AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_,
              const int64_t* output_size, int64_t output_size_len_,
              AtenTensorHandle random_samples, AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             ops::PoolWithIndices r = ops::fractional_max_pool(
                 args.tensor(self, "self"), 2, AOTRT_POOL_INTS(kernel_size),
                 AOTRT_POOL_INTS(output_size), args.tensor(random_samples, "random_samples"), fn);
             give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(fractional_max_pool3d,
             (AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_,
              const int64_t* output_size, int64_t output_size_len_,
              AtenTensorHandle random_samples, AtenTensorHandle* ret0, AtenTensorHandle* ret1),
             ops::PoolWithIndices r = ops::fractional_max_pool(
                 args.tensor(self, "self"), 3, AOTRT_POOL_INTS(kernel_size),
                 AOTRT_POOL_INTS(output_size), args.tensor(random_samples, "random_samples"), fn);
             give(ret0, ret1, std::move(r.values), std::move(r.indices)))

AOTRT_OP(max_unpool2d,
             (AtenTensorHandle self, AtenTensorHandle indices, const int64_t* output_size,
              int64_t output_size_len_, AtenTensorHandle* ret0),
             give(ret0, ops::max_unpool(args.tensor(self, "self"), args.tensor(indices, "indices"),
                                        2, AOTRT_POOL_INTS(output_size), {}, {}, fn)))

AOTRT_OP(max_unpool3d,
             (AtenTensorHandle self, AtenTensorHandle indices, const int64_t* output_size,
              int64_t output_size_len_, const int64_t* stride, int64_t stride_len_,
              const int64_t* padding, int64_t padding_len_, AtenTensorHandle* ret0),
             give(ret0, ops::max_unpool(args.tensor(self, "self"), args.tensor(indices, "indices"),
                                        3, AOTRT_POOL_INTS(output_size), AOTRT_POOL_INTS(stride),
                                        AOTRT_POOL_INTS(padding), fn)))

AOTRT_OP(grid_sampler_3d,
             (AtenTensorHandle input, AtenTensorHandle grid, int64_t interpolation_mode,
              int64_t padding_mode, int32_t align_corners, AtenTensorHandle* ret0),
             give(ret0, ops::grid_sampler_3d(args.tensor(input, "input"),
                                             args.tensor(grid, "grid"), interpolation_mode,
                                             padding_mode, align_corners != 0, fn)))

// Argument names from ATen's schema (native_functions.yaml): grid_sampler_3d(Tensor
// input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners).
AOTRT_PROXY_OP("aten::grid_sampler_3d",
               {"input", "grid", "interpolation_mode", "padding_mode", "align_corners"},
               kProxyCpu | kProxyCuda, [](ProxyCall& c) {
                 c.set_output(0, ops::grid_sampler_3d(
                                     c.tensor("input"), c.tensor("grid"),
                                     c.int_arg("interpolation_mode"), c.int_arg("padding_mode"),
                                     c.bool_arg("align_corners"), c.what()));
               });

// cudnn_grid_sampler(Tensor self, Tensor grid) -> Tensor output: Note [cuDNN grid sampler].
AOTRT_PROXY_OP("aten::cudnn_grid_sampler", {"self", "grid"}, kProxyCpu | kProxyCuda,
               [](ProxyCall& c) {
                 c.set_output(0, ops::cudnn_grid_sampler(c.tensor("self"), c.tensor("grid"),
                                                         c.what()));
               });

// _upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners,
// float? scales_h=None, float? scales_w=None) -> Tensor: what interpolate(...,
// mode="bilinear", antialias=True) lowers to.
AOTRT_PROXY_OP("aten::_upsample_bilinear2d_aa",
               {"self", "output_size", "align_corners", "scales_h", "scales_w"},
               kProxyCpu | kProxyCuda,
               [](ProxyCall& c) {
                 c.set_output(0, ops::upsample_bilinear2d_aa(
                                     c.tensor("self"), c.ints("output_size"),
                                     c.bool_arg("align_corners"), c.optional_float("scales_h"),
                                     c.optional_float("scales_w"), c.what()));
               });
