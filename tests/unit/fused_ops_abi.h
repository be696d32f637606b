// The fused oneDNN ops of torch's aoti_torch/c/shim_cpu.h (served in
// src/shim/ops/conv.cpp and src/shim/ops/linear.cpp; aotrt's public shim.h
// does not declare them), as generated code declares and calls them.
#pragma once

#include <cstdint>

#include "aotrt/shim.h"

extern "C" {
AOTITorchError aoti_torch_cpu_mkldnn__convolution_pointwise(
    AtenTensorHandle X, AtenTensorHandle W, AtenTensorHandle* B, const int64_t* padding,
    int64_t padding_len_, const int64_t* stride, int64_t stride_len_, const int64_t* dilation,
    int64_t dilation_len_, int64_t groups, const char* attr, const double** scalars,
    int64_t scalars_len_, const char** algorithm, AtenTensorHandle* ret0);
AOTITorchError aoti_torch_cpu_mkldnn__convolution_pointwise_binary(
    AtenTensorHandle X, AtenTensorHandle other, AtenTensorHandle W, AtenTensorHandle* B,
    const int64_t* padding, int64_t padding_len_, const int64_t* stride, int64_t stride_len_,
    const int64_t* dilation, int64_t dilation_len_, int64_t groups, const char* binary_attr,
    double* alpha, const char** unary_attr, const double** unary_scalars,
    int64_t unary_scalars_len_, const char** unary_algorithm, AtenTensorHandle* ret0);
AOTITorchError aoti_torch_cpu_mkldnn__convolution_pointwise_binary_(
    AtenTensorHandle other, AtenTensorHandle X, AtenTensorHandle W, AtenTensorHandle* B,
    const int64_t* padding, int64_t padding_len_, const int64_t* stride, int64_t stride_len_,
    const int64_t* dilation, int64_t dilation_len_, int64_t groups, const char* binary_attr,
    double* alpha, const char** unary_attr, const double** unary_scalars,
    int64_t unary_scalars_len_, const char** unary_algorithm, AtenTensorHandle* ret0);
AOTITorchError aoti_torch_cpu__linear_pointwise(AtenTensorHandle X, AtenTensorHandle W,
                                                AtenTensorHandle* B, const char* attr,
                                                const double** scalars, int64_t scalars_len_,
                                                const char** algorithm, AtenTensorHandle* ret0);
AOTITorchError aoti_torch_cpu__linear_pointwise_binary(AtenTensorHandle X, AtenTensorHandle other,
                                                       AtenTensorHandle W, AtenTensorHandle* B,
                                                       const char* attr, AtenTensorHandle* ret0);
}
