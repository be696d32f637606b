#include "ops/quantized.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/copy.h"
#include "core/derived_cache.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/conv.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/pointwise.h"

namespace aotrt::ops {
namespace {

using TensorPtr = std::unique_ptr<TensorImpl>;

bool is_quantized_dtype(ScalarType t) { return t == ScalarType::UInt8 || t == ScalarType::Int8; }

// Every element of a small tensor (scales, zero points), as T: one copy into
// host memory (float64 or int64), so a call reads C values without C tensors.
template <typename T>
std::vector<T> host_values(const TensorImpl& t, const char* name, const char* fn) {
  AOTRT_CHECK(t.dim() <= 1, kInvalidArgument, fn, ": ", name, " must be 0-d or 1-d, got sizes ",
              sizes_text(t.sizes()));
  using Wide = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  const ScalarType as = std::is_floating_point_v<T> ? ScalarType::Float64 : ScalarType::Int64;
  std::vector<T> out(static_cast<size_t>(t.numel()));
  if (out.empty()) return out;
  if (t.numel() == 1) {
    Wide v = 0;
    read_item(t, as, &v, fn);
    out[0] = static_cast<T>(v);
    return out;
  }
  const int64_t n[] = {t.numel()}, one[] = {1};
  auto host = empty_strided(n, one, as, cpu_device(), fn);
  copy_tensor(*host, t, fn);
  const auto* v = static_cast<const Wide*>(host->data_ptr());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(v[i]);
  return out;
}

// (t - zp) * scale as a new float32 tensor laid out as t (Note [Preserve-format strides]).
TensorPtr dequantize(const TensorImpl& t, std::span<const float> scales,
                     std::span<const int64_t> zero_points, int64_t channel_dim, const char* fn) {
  auto out = empty_strided(t.sizes(), preserve_format_strides(t.sizes(), t.strides()),
                           ScalarType::Float32, t.device(), fn);
  if (out->numel() > 0) {
    kernel(&QuantizedKernels::dequantize, t.device(), fn)(strided_view(t), scales, zero_points,
                                                           channel_dim, strided_view(*out), fn);
  }
  return out;
}

// The weight dequantized per output channel (dim channel_dim), made once per
// constant weight and kept with it; the result is marked constant too, so
// the float32 convolution and linear keep their own derived data with it.
std::shared_ptr<const TensorImpl> dequantized_weight(const TensorImpl& qw,
                                                     std::span<const float> scales,
                                                     std::span<const int64_t> zero_points,
                                                     int64_t channel_dim, const char* fn) {
  DerivedCache* cache = qw.storage()->derived();
  DerivedCache::Key key;
  if (cache != nullptr) {
    key = {0x71D0, qw.storage_offset(), channel_dim};
    key.insert(key.end(), qw.sizes().begin(), qw.sizes().end());
    key.insert(key.end(), qw.strides().begin(), qw.strides().end());
    for (size_t c = 0; c < scales.size(); ++c) {
      uint32_t bits;
      std::memcpy(&bits, &scales[c], sizeof bits);
      key.push_back(bits);
      key.push_back(zero_points[c]);
    }
    if (auto found = cache->find(key)) return std::static_pointer_cast<const TensorImpl>(found);
  }
  std::shared_ptr<const TensorImpl> w = dequantize(qw, scales, zero_points, channel_dim, fn);
  if (cache == nullptr) return w;
  w->storage()->mark_constant();
  return std::static_pointer_cast<const TensorImpl>(cache->insert(std::move(key), w));
}

// The call's scales and zero points, read on the host.
QuantScalars read_scalars(const QuantArgs& q, const char* fn) {
  const auto x_scale = host_values<float>(*q.x_scale, "x_scale", fn);
  const auto x_zp = host_values<int64_t>(*q.x_zero_point, "x_zero_point", fn);
  AOTRT_CHECK(x_scale.size() == 1 && x_zp.size() == 1, kInvalidArgument, fn,
              ": x_scale and x_zero_point must hold one value each");
  return {x_scale[0], x_zp[0], host_values<float>(*q.w_scales, "w_scale", fn),
          host_values<int64_t>(*q.w_zero_points, "w_zero_point", fn)};
}

// x dequantized per tensor and the weight per output channel (dim channel_dim).
std::pair<TensorPtr, std::shared_ptr<const TensorImpl>> dequantized_operands(
    const TensorImpl& qx, const TensorImpl& qw, const QuantScalars& s, int64_t channel_dim,
    const char* fn) {
  const float x_scale[] = {s.x_scale};
  const int64_t x_zp[] = {s.x_zero_point};
  return {dequantize(qx, x_scale, x_zp, -1, fn),
          dequantized_weight(qw, s.w_scales, s.w_zero_points, channel_dim, fn)};
}

// Note [Quantized oneDNN ops]: why a call took the float32 path, said once
// per shim and reason on stderr under AOTRT_VERBOSE.
void note_float32_path(const char* fn, const char* why) {
  static const bool verbose = std::getenv("AOTRT_VERBOSE") != nullptr;
  if (!verbose) return;
  static std::mutex mu;
  static std::set<std::pair<std::string, std::string>> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.emplace(fn, why != nullptr ? why : "").second) {
    std::fprintf(stderr, "aotrt: %s: float32 path (not oneDNN int8): %s\n", fn,
                 why != nullptr ? why : "no int8 kernel on this device");
  }
}

// The backend's int8 kernel `member`, or null where the device has none.
template <class Fn>
Fn int8_kernel(Fn QuantizedKernels::*member, const TensorImpl& qx) {
  const QuantizedKernels* table = qx.device().is_cpu() ? KernelRegistry<QuantizedKernels>::cpu
                                                        : KernelRegistry<QuantizedKernels>::cuda;
  return table == nullptr ? nullptr : table->*member;
}

// y (float32) as the op's result: converted (float output) or quantized.
TensorPtr to_output(TensorPtr y, ScalarType dtype, const QuantArgs& q, const char* fn) {
  if (dtype == ScalarType::Float32) return y;
  auto out = empty_strided(y->sizes(), y->strides(), dtype, y->device(), fn);
  if (is_quantized_dtype(dtype)) {
    if (out->numel() > 0) {
      kernel(&QuantizedKernels::quantize, y->device(), fn)(
          strided_view(*y), static_cast<float>(q.output_scale), q.output_zero_point,
          strided_view(*out), fn);
    }
  } else {
    copy_tensor(*out, *y, fn);
  }
  return out;
}

// The checks both ops share; the output dtype.
ScalarType check_common(const TensorImpl& qx, const TensorImpl& qw, const QuantArgs& q,
                        int64_t channels, const char* fn) {
  AOTRT_CHECK(is_quantized_dtype(qx.dtype()), kUnsupported, fn, ": x is ", dtype_name(qx.dtype()),
              "; aotrt serves uint8 and int8 activations");
  AOTRT_CHECK(qw.dtype() == ScalarType::Int8, kInvalidArgument, fn,
              ": the packed weight is ", dtype_name(qw.dtype()), ", not int8");
  AOTRT_CHECK(q.w_scales->numel() == channels && q.w_zero_points->numel() == channels,
              kInvalidArgument, fn, ": weight scales and zero points must have one entry per "
              "output channel (", channels, "), got ", q.w_scales->numel(), " and ",
              q.w_zero_points->numel());
  const ScalarType dtype = q.output_dtype.value_or(qx.dtype());
  AOTRT_CHECK(dtype == ScalarType::Float32 || dtype == ScalarType::BFloat16 ||
                  is_quantized_dtype(dtype),
              kUnsupported, fn, ": output_dtype ", dtype_name(dtype),
              " is not served (float32, bfloat16, uint8, int8)");
  if (!is_quantized_dtype(dtype)) {
    AOTRT_CHECK(q.output_scale == 1.0 && q.output_zero_point == 0, kInvalidArgument, fn,
                ": a ", dtype_name(dtype), " output needs output_scale 1 and zero point 0, got ",
                q.output_scale, " and ", q.output_zero_point);
  } else {
    AOTRT_CHECK(q.output_scale > 0, kInvalidArgument, fn, ": output_scale must be positive, got ",
                q.output_scale);
  }
  if (q.binary == QuantBinary::kSum) {
    AOTRT_CHECK(q.other != nullptr && q.other->dtype() == dtype, kInvalidArgument, fn,
                ": a sum into other needs other of the output dtype ", dtype_name(dtype),
                q.other == nullptr ? ", and other is None" : "");
  }
  return dtype;
}

// `other` as the float32 summand: as it is, or dequantized; times alpha.
TensorPtr other_summand(const QuantArgs& q, const char* fn) {
  const TensorImpl& o = *q.other;
  TensorPtr f;
  if (is_quantized_dtype(o.dtype())) {
    const float s[] = {static_cast<float>(q.other_scale)};
    const int64_t z[] = {q.other_zero_point};
    f = dequantize(o, s, z, -1, fn);
  } else {
    f = empty_strided(o.sizes(), preserve_format_strides(o.sizes(), o.strides()),
                      ScalarType::Float32, o.device(), fn);
    copy_tensor(*f, o, fn);
  }
  if (q.alpha != 1.0) f = mul(*f, q.alpha, fn);
  return f;
}

// Where the result goes: new memory, or (sum) into other, returned as its view.
TensorPtr finish(TensorPtr y, ScalarType dtype, const QuantArgs& q, const char* fn) {
  if (q.binary != QuantBinary::kSum) return to_output(std::move(y), dtype, q, fn);
  const TensorImpl& o = *q.other;
  if (is_quantized_dtype(dtype)) {
    if (o.numel() > 0) {
      kernel(&QuantizedKernels::quantize, o.device(), fn)(
          strided_view(*y), static_cast<float>(q.output_scale), q.output_zero_point,
          strided_view(o), fn);
    }
  } else {
    copy_tensor(o, *y, fn);
  }
  return make_tensor(o.storage(), o.sizes(), o.strides(), o.storage_offset(), o.dtype(), fn);
}

TensorPtr float_bias(const TensorImpl* bias, const char* fn) {
  if (bias == nullptr || bias->dtype() == ScalarType::Float32) return nullptr;
  auto b = empty_strided(bias->sizes(), contiguous_strides(bias->sizes()), ScalarType::Float32,
                         bias->device(), fn);
  copy_tensor(*b, *bias, fn);
  return b;
}

}  // namespace

QuantBinary parse_quant_binary(std::string_view attr, const char* fn) {
  if (attr == "none") return QuantBinary::kNone;
  if (attr == "sum") return QuantBinary::kSum;
  if (attr == "add") return QuantBinary::kAdd;
  AOTRT_FAIL(kUnsupported, fn, ": binary post op '", attr,
             "' is not served (none, sum, add)");
}

TensorPtr qconv_pointwise(const TensorImpl& qx, const TensorImpl& qw, const TensorImpl* bias,
                          const ConvParams& params, const QuantArgs& q, const char* fn) {
  AOTRT_CHECK(qw.dim() >= 3, kInvalidArgument, fn, ": the packed weight must be [O, I/g, k...], "
              "got sizes ", sizes_text(qw.sizes()));
  const ScalarType dtype = check_common(qx, qw, q, qw.sizes()[0], fn);
  if (q.binary != QuantBinary::kNone) {
    AOTRT_CHECK(q.other != nullptr, kInvalidArgument, fn, ": a binary post op without other");
  }
  const QuantScalars s = read_scalars(q, fn);
  const char* why_not = nullptr;
  if (auto int8 = int8_kernel(&QuantizedKernels::qconv_int8, qx)) {
    if (auto y = int8(qx, qw, bias, params, q, s, dtype, &why_not, fn)) return y;
  }
  note_float32_path(fn, why_not);
  auto [x, w] = dequantized_operands(qx, qw, s, 0, fn);
  auto b32 = float_bias(bias, fn);
  const TensorImpl* b = b32 ? b32.get() : bias;
  if (q.binary == QuantBinary::kNone) {
    return finish(convolution_pointwise(*x, *w, b, params, nullptr, BinaryPost::kAdd, q.unary, fn),
                  dtype, q, fn);
  }
  if (q.binary == QuantBinary::kSum && dtype == ScalarType::Float32 && q.alpha == 1.0) {
    return convolution_pointwise_(*q.other, *x, *w, b, params, BinaryPost::kAdd, q.unary, fn);
  }
  auto other = other_summand(q, fn);
  return finish(convolution_pointwise(*x, *w, b, params, other.get(), BinaryPost::kAdd, q.unary,
                                      fn),
                dtype, q, fn);
}

TensorPtr qlinear_pointwise(const TensorImpl& qx, const TensorImpl& qw, const TensorImpl* bias,
                            const QuantArgs& q, const char* fn) {
  AOTRT_CHECK(qw.dim() == 2, kInvalidArgument, fn, ": the packed weight must be [K, N], got sizes ",
              sizes_text(qw.sizes()));
  const ScalarType dtype = check_common(qx, qw, q, qw.sizes()[1], fn);
  if (q.binary != QuantBinary::kNone) {
    AOTRT_CHECK(q.other != nullptr, kInvalidArgument, fn, ": a binary post op without other");
  }
  const QuantScalars s = read_scalars(q, fn);
  const char* why_not = nullptr;
  if (auto int8 = int8_kernel(&QuantizedKernels::qlinear_int8, qx)) {
    if (auto y = int8(qx, qw, bias, q, s, dtype, &why_not, fn)) return y;
  }
  note_float32_path(fn, why_not);
  auto [x, w] = dequantized_operands(qx, qw, s, 1, fn);
  // linear_pointwise takes the weight as [N, K]: the [K, N] one transposed.
  const int64_t nk[] = {w->sizes()[1], w->sizes()[0]}, nk_strides[] = {w->strides()[1],
                                                                         w->strides()[0]};
  auto wt = make_tensor(w->storage(), nk, nk_strides, w->storage_offset(), w->dtype(), fn);
  auto b32 = float_bias(bias, fn);
  const TensorImpl* b = b32 ? b32.get() : bias;
  TensorPtr other;
  if (q.binary != QuantBinary::kNone) other = other_summand(q, fn);
  return finish(linear_pointwise(*x, *wt, b, other.get(), BinaryPost::kAdd, q.unary, fn), dtype,
                q, fn);
}

}  // namespace aotrt::ops
