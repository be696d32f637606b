// Decoding of shim arguments shared by the fallback-op shims of every device:
// int lists passed as (pointer, length), optional tensors passed as
// AtenTensorHandle*, convolution parameters.
// OpArgs (below) is what every op row of src/shim/ops/ decodes with.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "core/conv_params.h"
#include "core/error.h"
#include "core/dtype.h"
#include "core/handles.h"
#include "core/view.h"
#include "core/tensor.h"

namespace aotrt {

// An argument of a shim, "fn: argument 'name'" in messages; the text is
// composed only when a check fails, so decoding arguments allocates nothing.
struct ArgName {
  const char* fn;
  const char* name;
  friend std::ostream& operator<<(std::ostream& os, const ArgName& a) {
    return os << a.fn << ": argument '" << a.name << "'";
  }
  std::string str() const { return detail::concat(*this); }
};

// handle_get / handle_get_defined (core/handles.h) for an ArgName.
inline TensorImpl& handle_get(AtenTensorHandle h, const ArgName& what) {
  if (TensorImpl* t = handle_lookup(h)) return *t;  // a handle is no TensorImpl* (Note [Handle values])
  return handle_get(h, what.str().c_str());  // throws, naming the argument
}
inline TensorImpl& handle_get_defined(AtenTensorHandle h, const ArgName& what) {
  TensorImpl& t = handle_get(h, what);
  AOTRT_CHECK(t.defined(), kInvalidArgument, what, " is an undefined tensor");
  return t;
}

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

// The decoder of one fallback-op entry point (see Note [Op rows] in
// shim/ops/op_row.h): `fn` is the entry's full name and `device` the device
// it serves (none for the device-generic aoti_torch_aten_* entries). Each getter takes the parameter as the C signature of torch's
// generated headers passes it, and its name for messages ("fn: argument
// 'name' ..."). Tensors come back borrowed from their handles.
struct OpArgs {
  const char* fn;
  std::optional<DeviceType> device;

  // A defined tensor on this entry's device (ATen's kernels of one device
  // refuse another's tensors too).
  const TensorImpl& tensor(AtenTensorHandle h, const char* name) const {
    const TensorImpl& t = handle_get_defined(h, ArgName{fn, name});
    check_device(t, name);
    return t;
  }
  // The same, for the in-place ops that change the tensor behind the handle
  // (resize_, set_), not only its values.
  TensorImpl& mutable_tensor(AtenTensorHandle h, const char* name) const {
    TensorImpl& t = handle_get_defined(h, ArgName{fn, name});
    check_device(t, name);
    return t;
  }
  // A defined tensor on any device (a CPU 0-d tensor that CUDA ops accept).
  const TensorImpl& tensor_any_device(AtenTensorHandle h, const char* name) const {
    return handle_get_defined(h, ArgName{fn, name});
  }
  // Tensor?: null, a null handle or an undefined tensor mean None.
  const TensorImpl* optional_tensor(AtenTensorHandle* h, const char* name) const {
    if (h == nullptr || *h == nullptr) return nullptr;
    const TensorImpl& t = handle_get(*h, ArgName{fn, name});
    if (!t.defined()) return nullptr;
    check_device(t, name);
    return &t;
  }
  // Tensor[] as (array of handles, length).
  std::vector<const TensorImpl*> tensor_list(const AtenTensorHandle* hs, int64_t len,
                                             const char* name) const {
    AOTRT_CHECK(len >= 0 && (hs != nullptr || len == 0), kInvalidArgument, ArgName{fn, name},
                " has length ", len, hs == nullptr ? " and is null" : "");
    std::vector<const TensorImpl*> out;
    out.reserve(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) out.push_back(&tensor(hs[i], name));
    return out;
  }
  // Tensor?[] as (array of AtenTensorHandle*, length): entries may be None.
  std::vector<const TensorImpl*> optional_tensor_list(const AtenTensorHandle** hs, int64_t len,
                                                      const char* name) const {
    AOTRT_CHECK(len >= 0 && (hs != nullptr || len == 0), kInvalidArgument, ArgName{fn, name},
                " has length ", len, hs == nullptr ? " and is null" : "");
    std::vector<const TensorImpl*> out;
    out.reserve(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) {
      out.push_back(optional_tensor(const_cast<AtenTensorHandle*>(hs[i]), name));
    }
    return out;
  }
  std::span<const int64_t> ints(const int64_t* ptr, int64_t len, const char* name) const {
    AOTRT_CHECK(len >= 0 && (ptr != nullptr || len == 0), kInvalidArgument, ArgName{fn, name},
                " has length ", len, ptr == nullptr ? " and is null" : "");
    return {ptr, static_cast<size_t>(len)};
  }
  // float[]? as (const double**, length): a null pointer means None, else
  // *p holds `len` values.
  std::optional<std::span<const double>> optional_floats(const double** p, int64_t len,
                                                         const char* name) const {
    if (p == nullptr) return std::nullopt;
    AOTRT_CHECK(len >= 0 && (*p != nullptr || len == 0), kInvalidArgument, ArgName{fn, name},
                " has length ", len, *p == nullptr ? " and is null" : "");
    return std::span<const double>(*p, static_cast<size_t>(len));
  }
  // Scalar?[] as (const double**, length): p[i] null means None for entry i
  // (the fused oneDNN ops' scalars).
  std::vector<std::optional<double>> optional_scalar_list(const double** p, int64_t len,
                                                          const char* name) const {
    AOTRT_CHECK(len >= 0 && (p != nullptr || len == 0), kInvalidArgument, ArgName{fn, name},
                " has length ", len, p == nullptr ? " and is null" : "");
    std::vector<std::optional<double>> out(static_cast<size_t>(len));
    for (size_t i = 0; i < out.size(); ++i) {
      if (p[i] != nullptr) out[i] = *p[i];
    }
    return out;
  }
  // ScalarType? as int32_t*: null means None.
  std::optional<ScalarType> optional_dtype(const int32_t* code, const char* name) const {
    if (code == nullptr) return std::nullopt;
    AOTRT_CHECK(is_valid_dtype(*code), kInvalidArgument, ArgName{fn, name}, " is dtype code ",
                *code, ", which is no dtype");
    return static_cast<ScalarType>(*code);
  }
  // MemoryFormat? as a pointer to c10's value: null means None.
  std::optional<MemoryFormatArg> optional_memory_format(const int32_t* code,
                                                        const char* name) const {
    if (code == nullptr) return std::nullopt;
    AOTRT_CHECK(*code >= 0 && *code <= static_cast<int32_t>(MemoryFormatArg::kChannelsLast3d),
                kInvalidArgument, ArgName{fn, name}, " is memory format ", *code,
                ", which is no memory format");
    return static_cast<MemoryFormatArg>(*code);
  }
  // int? / float? / bool? as a pointer: null means None.
  template <typename T>
  static std::optional<T> optional(const T* p) {
    return p == nullptr ? std::nullopt : std::optional<T>(*p);
  }
  // The device a factory (rand, hann_window, ...) makes its tensor on: this
  // entry's own, at device_index on CUDA; layout must be None or strided (0).
  Device factory_device(const int32_t* layout, int32_t device_index) const {
    AOTRT_CHECK(layout == nullptr || *layout == 0, kUnsupported, ArgName{fn, "layout"}, " is ",
                layout == nullptr ? 0 : *layout, "; only torch.strided (0) is served");
    if (device == DeviceType::CUDA) return Device{DeviceType::CUDA, device_index >= 0 ? device_index : 0};
    return cpu_device();
  }
  // str? as const char**: null means None.
  std::optional<std::string_view> optional_string(const char** p, const char* name) const {
    if (p == nullptr) return std::nullopt;
    AOTRT_CHECK(*p != nullptr, kInvalidArgument, ArgName{fn, name}, " points at a null string");
    return std::string_view(*p);
  }

 private:
  void check_device(const TensorImpl& t, const char* name) const {
    if (!device) return;
    AOTRT_CHECK(t.device().type == *device, kInvalidArgument, ArgName{fn, name}, " is on ",
                t.device().str(),
                device == DeviceType::CPU ? ", not on the CPU" : ", not on a CUDA device");
  }
};

}  // namespace aotrt
