// Decoding of shim arguments shared by the fallback-op shims of every device:
// int lists passed as (pointer, length), optional tensors passed as
// AtenTensorHandle*, convolution parameters, and inference-only checks.
#pragma once

#include <span>

#include "core/conv_params.h"
#include "core/error.h"
#include "core/handles.h"

namespace aotrt {

// An int list passed as (pointer, length); null only when the length is 0.
inline std::span<const int64_t> int_list(const int64_t* ptr, int64_t len, const char* fn,
                                         const char* name) {
  AOTRT_CHECK(len >= 0 && (ptr != nullptr || len == 0), kInvalidArgument, fn, ": '", name,
              "' has length ", len, ptr == nullptr ? " and is null" : "");
  return {ptr, static_cast<size_t>(len)};
}

// An optional tensor (Tensor? in the op schema): a null pointer, a pointer to
// a null handle, or a handle to an undefined tensor all mean None.
inline const TensorImpl* optional_tensor(AtenTensorHandle* h, const char* what) {
  if (h == nullptr || *h == nullptr) return nullptr;
  const TensorImpl& t = handle_get(*h, what);
  return t.defined() ? &t : nullptr;
}

inline ConvParams conv_params(const int64_t* stride, int64_t stride_len,
                              const int64_t* padding, int64_t padding_len,
                              const int64_t* dilation, int64_t dilation_len, int32_t transposed,
                              const int64_t* output_padding, int64_t output_padding_len,
                              int64_t groups, const char* fn) {
  auto list = [&](const int64_t* p, int64_t n, const char* name) {
    auto s = int_list(p, n, fn, name);
    return std::vector<int64_t>(s.begin(), s.end());
  };
  ConvParams params;
  params.stride = list(stride, stride_len, "stride");
  params.padding = list(padding, padding_len, "padding");
  params.dilation = list(dilation, dilation_len, "dilation");
  params.transposed = transposed != 0;
  params.output_padding = list(output_padding, output_padding_len, "output_padding");
  params.groups = groups;
  return params;
}

// aotrt runs inference: attention dropout must be 0.
inline void check_no_dropout(double dropout_p, const char* fn) {
  AOTRT_CHECK(dropout_p == 0.0, kUnsupported, fn, ": dropout_p ", dropout_p,
              " is not served; aotrt runs inference, where attention dropout is 0");
}

}  // namespace aotrt
