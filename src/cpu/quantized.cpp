// The int8 oneDNN ops (ops/quantized.h) as oneDNN's own int8 convolution and
// matmul primitives.
//
// Note [Int8 primitives]
// Note [Quantized oneDNN ops] (ops/quantized.h) gives the semantics. oneDNN
// 2.6 computes, for u8 or s8 x with a zero point and s8 weights w, the exact
// int32 sum acc[c] = sum (x - x_zp) * w[c], then (measured on this libdnnl:
// the bias comes before the output scale in oneDNN 2.x, after it in 3.x)
//   y = os[c] * (acc[c] + bias'[c]),  os[c] = x_scale * w_scale[c],
// then the post-ops in order, then its dst zero point, then rounds half to
// even and saturates into dst's type. So aotrt passes bias'[c] = bias[c] /
// os[c] (made per call in a thread's buffer) and appends:
// - "sum" (result written into `other`): sum(scale a, zero point z), a =
//   alpha * other_scale and z = other_zero_point for a quantized other
//   (a = alpha, z = 0 for a float one): y + a * (other - z), in place;
// - "add" of alpha * other (a float32, bfloat16, u8 or s8 other with scale
//   1 and zero point 0 when quantized): a binary add reading `other`, copied
//   into the result's layout where it has another (oneDNN 2.6 reads src1
//   with dst's strides, Note [Fused convolutions] in cpu/conv.cpp);
// - the activation as eltwise post-ops (onednn::eltwise_of);
// - a uint8/int8 output: linear(1 / output_scale) and round (half to even),
//   then output_zero_point as dst's zero point: clamp(nearbyint(y /
//   output_scale) + zp) as ATen's quantize (oneDNN's own rounding of y /
//   scale + zp differs at ties for an odd zp).
// The convolution is x channels-last (a view that is not is copied into
// that layout first), the weight in oneDNN's blocked layout with its
// compensation for x's zero point, the result new channels-last memory or
// `other`; the linear is one matmul of x [M, K] (rows of one stride, else a
// contiguous copy) by w [K, N] into [M, N] row-major, on the calling thread
// when small (Note [BLAS threads] in cpu/matmul.cpp). Scales and zero
// points are part of a primitive's key (oneDNN 2.6's convolutions take no
// runtime output scales, and its matmul with them runs gemm:jit, not
// brgemm), so a model's call site has one primitive; primitives are cached
// (onednn::PrimitiveCache) with their bound arguments (Note [Bound
// arguments] in cpu/conv.cpp), and a constant weight is reordered once into
// its storage's DerivedCache (Note [Constant weights] in cpu/conv.cpp;
// another weight, once per call). A steady-state call allocates the result
// and, where the kernel wants one, its scratchpad, nothing else.
// Not served here, so the float32 path runs (the rule is int8_plan's and
// serve_*'s; the reason goes back to the family, which prints it once per
// shim under AOTRT_VERBOSE): a nonzero weight zero point (oneDNN 2.6's int8
// convolutions take none); a zero point beyond int32 (output and other's
// beyond 2^24); a scale product x_scale * w_scale that is zero, subnormal or
// not finite; an activation oneDNN's eltwise differs on (eltwise_of); two
// eltwise post-ops of one algorithm, i.e. hardsigmoid (linear, clip) into a
// quantized output (measured: oneDNN 2.6's int8 brgemm kernels apply the
// first linear's factors to both); an `other` of another dtype (float16,
// ...) or sizes, or an "add" of alpha * (other - zero point) other than
// other; a bias other than float32 or bfloat16 [C]; empty or malformed
// problems (the float32 path reports them as ATen does); a transposed or
// non-1..3-d convolution; problems oneDNN serves only with its reference
// kernel (measured: some grouped convolutions of 4 to 12 channels per
// group); any call on a CPU without VNNI (Note [oneDNN's ISA] in
// cpu/onednn.cpp); and any call while set_quantized_int8(false).
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/copy.h"
#include "core/derived_cache.h"
#include "core/error.h"
#include "core/storage.h"
#include "core/view.h"
#include "cpu/elements.h"
#include "cpu/onednn.h"
#include "cpu/ops.h"
#include "ops/quantized.h"

namespace aotrt::cpu {
namespace {

using onednn::Dims;
using onednn::Key;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

std::atomic<int64_t> weights_cached{0};  // QuantizedCacheStats::weights_cached
std::atomic<int64_t> int8_calls{0};      // QuantizedCacheStats::fused_calls
std::atomic<int64_t> float32_calls{0};   // QuantizedCacheStats::float32_calls
std::atomic<bool> int8_enabled{true};    // set_quantized_int8

bool is_quantized(ScalarType t) { return t == ScalarType::UInt8 || t == ScalarType::Int8; }

std::optional<dt> dnnl_type(ScalarType t) {
  switch (t) {
    case ScalarType::UInt8: return dt::u8;
    case ScalarType::Int8: return dt::s8;
    case ScalarType::Float32: return dt::f32;
    case ScalarType::BFloat16: return dt::bf16;
    default: return std::nullopt;
  }
}

// One post-op, in oneDNN's order.
struct Post {
  enum Kind : int64_t { kSum, kAdd, kEltwise } kind = kEltwise;
  dnnl::algorithm alg = dnnl::algorithm::undef;  // eltwise
  float alpha = 0, beta = 0;                     // eltwise's; a sum's scale in alpha
  int32_t zero_point = 0;                        // a sum's
  dt type = dt::undef;                           // an add's src1
};

// Everything a primitive depends on: two calls with equal keys share one.
struct Problem {
  bool conv = true;  // else a matmul
  dt src_type = dt::u8, dst_type = dt::f32;
  Dims src_dims, src_strides, wei_dims, wei_strides, dst_dims, dst_strides;
  Dims stride, dilates, pad_l, pad_r;  // a convolution's
  bool has_bias = false;
  bool constant_weights = false;
  int threads = 1;
  int32_t src_zero_point = 0, dst_zero_point = 0;
  std::vector<float> scales;  // one, or one per output channel
  std::vector<Post> posts;
};

Key make_key(const Problem& p) {
  Key k{p.conv,
        static_cast<int64_t>(p.src_type),
        static_cast<int64_t>(p.dst_type),
        p.has_bias,
        p.constant_weights,
        p.threads,
        p.src_zero_point,
        p.dst_zero_point};
  auto add = [&k](const Dims& d) {
    k.push_back(static_cast<int64_t>(d.size()));
    k.insert(k.end(), d.begin(), d.end());
  };
  for (const Dims* d : {&p.src_dims, &p.src_strides, &p.wei_dims, &p.wei_strides, &p.dst_dims,
                        &p.dst_strides, &p.stride, &p.dilates, &p.pad_l, &p.pad_r}) {
    add(*d);
  }
  k.push_back(static_cast<int64_t>(p.scales.size()));
  for (float s : p.scales) k.push_back(onednn::float_bits(s));
  for (const Post& o : p.posts) {
    k.insert(k.end(), {o.kind, static_cast<int64_t>(o.alg), onednn::float_bits(o.alpha),
                       onednn::float_bits(o.beta), o.zero_point, static_cast<int64_t>(o.type)});
  }
  return k;
}

struct Int8Primitive {
  dnnl::primitive prim;
  onednn::ArgDescs d;                          // other_arg: the add's post-op source
  dnnl::memory::desc user_wei;
  std::optional<onednn::Reorder> wei_reorder;  // user_wei -> d.wei
  onednn::BoundArgs bound;
};

dnnl::primitive_attr attr_of(const Problem& p, const dnnl::memory::desc& other) {
  dnnl::primitive_attr attr = onednn::user_scratchpad_attr();
  // Output channels are dim 1 of a convolution's and a matmul's dst.
  attr.set_output_scales(p.scales.size() > 1 ? 1 << 1 : 0, p.scales);
  if (p.src_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {p.src_zero_point});
  if (p.dst_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {p.dst_zero_point});
  dnnl::post_ops ops;
  for (const Post& o : p.posts) {
    switch (o.kind) {
      case Post::kSum: ops.append_sum(o.alpha, o.zero_point); break;
      case Post::kAdd: ops.append_binary(dnnl::algorithm::binary_add, other); break;
      case Post::kEltwise: ops.append_eltwise(1.f, o.alg, o.alpha, o.beta); break;
    }
  }
  attr.set_post_ops(ops);
  return attr;
}

// The primitive, or null where oneDNN has only its reference kernel for it.
std::shared_ptr<const Int8Primitive> create_primitive(const Problem& p) {
  auto ip = std::make_shared<Int8Primitive>();
  ip->d.src = dnnl::memory::desc(p.src_dims, p.src_type, p.src_strides);
  ip->user_wei = dnnl::memory::desc(p.wei_dims, dt::s8, p.wei_strides);
  ip->d.dst = dnnl::memory::desc(p.dst_dims, p.dst_type, p.dst_strides);
  const int64_t channels = p.dst_dims[1];
  if (p.has_bias) {
    ip->d.bias = p.conv ? dnnl::memory::desc({channels}, dt::f32, tag::a)
                      : dnnl::memory::desc({1, channels}, dt::f32, Dims{channels, 1});
  }
  for (size_t i = 0; i < p.posts.size(); ++i) {
    if (p.posts[i].kind != Post::kAdd) continue;
    ip->d.other = dnnl::memory::desc(p.dst_dims, p.posts[i].type, p.dst_strides);
    ip->d.other_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1;
  }
  // Int8 kernels read weights only in oneDNN's own layout (with the
  // compensation for x's zero point): always reordered.
  const dnnl::memory::desc any_wei(p.wei_dims, dt::s8, tag::any);
  const dnnl::primitive_attr attr = attr_of(p, ip->d.other);
  dnnl::primitive_desc pd;
  if (p.conv) {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::convolution_direct, ip->d.src, any_wei,
                                      ip->d.bias, ip->d.dst, p.stride, p.dilates, p.pad_l, p.pad_r);
    pd = dnnl::convolution_forward::primitive_desc(d, attr, onednn::engine(), true);
  } else {
    dnnl::matmul::desc d(ip->d.src, any_wei, ip->d.bias, ip->d.dst);
    pd = dnnl::matmul::primitive_desc(d, attr, onednn::engine(), true);
  }
  if (!pd || onednn::is_reference(pd)) return nullptr;
  ip->d.wei = pd.weights_desc();
  ip->d.scratch = pd.scratchpad_desc();
  size_t reorder_scratch = 0;
  ip->wei_reorder = onednn::make_reorder(ip->user_wei, ip->d.wei, reorder_scratch);
  ip->prim = dnnl::primitive(pd);
  return ip;
}

onednn::PrimitiveCache<Int8Primitive>& cache() {
  static onednn::PrimitiveCache<Int8Primitive> c;
  return c;
}

std::shared_ptr<const Int8Primitive> get_primitive(const Problem& p) {
  return cache().find_or_make(make_key(p), [&]() -> std::shared_ptr<const Int8Primitive> {
    try {
      return create_primitive(p);
    } catch (const dnnl::error&) {
      return nullptr;  // descriptors oneDNN refuses: the float32 path
    }
  });
}

// The weight in the primitive's layout: a constant's from its storage's
// cache (reordered there on first use), another's reordered into `temp`.
const void* ready_weight(const Int8Primitive& ip, const Problem& p, const TensorImpl& weight,
                         std::unique_ptr<TensorImpl>& temp, const char* fn) {
  const void* data = weight.data_ptr();
  if (!ip.wei_reorder) return data;
  if (p.constant_weights) {
    Key key;
    for (const Dims* d : {&p.wei_dims, &p.wei_strides}) key.insert(key.end(), d->begin(), d->end());
    if (onednn::append_layout(key, ip.d.wei)) {
      if (const void* w = onednn::constant_weight(
              onednn::WeightUser::kQuantized, std::move(key), weight, data,
              onednn::BlockedAxes::kNone, ip.user_wei, ip.d.wei,
              *ip.wei_reorder, *weight.storage()->derived(), weights_cached, fn)) {
        return w;
      }
    }
  }
  temp = onednn::scratch_buffer(ip.d.wei.get_size(), fn);
  auto scratch = onednn::scratch_buffer(ip.wei_reorder->scratch.get_size(), fn);
  const dnnl::engine& eng = onednn::engine();
  dnnl::memory from(ip.user_wei, eng, const_cast<void*>(data)), to(ip.d.wei, eng, temp->data_ptr());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  if (ip.wei_reorder->scratch.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 dnnl::memory(ip.wei_reorder->scratch, eng, scratch->data_ptr()));
  }
  dnnl::stream& s = onednn::thread_stream();
  AOTRT_CHECK_DNNL(fn, (ip.wei_reorder->prim.execute(s, args), s.wait(), 0));
  return temp->data_ptr();
}

// Runs ip; bias and other null when its key has none.
void execute(const Int8Primitive& ip, void* src, const void* wei, const void* bias, void* dst,
             const void* other, const char* fn) {
  std::unique_ptr<TensorImpl> scratch;
  if (ip.d.scratch.get_size() > 0) scratch = onednn::scratch_buffer(ip.d.scratch.get_size(), fn);
  AOTRT_CHECK_DNNL(fn, (ip.bound.run(ip.prim, ip.d, src, wei, bias, dst, other,
                                     scratch ? scratch->data_ptr() : nullptr),
                        0));
}

// --- What both ops share ---------------------------------------------------------------------

// Whether a view with these sizes and strides is the dense layout `want`
// (a dim of size 1 may have any stride).
bool has_layout(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                std::span<const int64_t> want) {
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && strides[d] != want[d]) return false;
  }
  return true;
}

// t as it is when it has the layout `strides`, else a copy in that layout.
const TensorImpl& in_layout(const TensorImpl& t, std::span<const int64_t> strides,
                            std::unique_ptr<TensorImpl>& copy, const char* fn) {
  if (has_layout(t.sizes(), t.strides(), strides)) return t;
  copy = empty_strided(t.sizes(), strides, t.dtype(), cpu_device(), fn);
  copy_tensor(*copy, t, fn);
  return *copy;
}

bool fits_int32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

// Fills in what a call's primitive is made of besides the operands' layouts
// (types, zero points, scales, post-ops); null when served, else why not
// (Note [Int8 primitives]).
const char* int8_plan(const TensorImpl& qx, const TensorImpl& qw, const TensorImpl* bias,
                      const ops::QuantArgs& q, const ops::QuantScalars& s, ScalarType out_dtype,
                      std::span<const int64_t> out_sizes, Problem& p) {
  if (!qx.device().is_cpu() || !qw.device().is_cpu()) return "x or the weight is not on the CPU";
  if (!onednn_int8_exact()) {
    return "this CPU has no VNNI: oneDNN's int8 kernels would saturate (Note [oneDNN's ISA])";
  }
  for (int64_t z : s.w_zero_points) {
    if (z != 0) return "a nonzero weight zero point (oneDNN's int8 kernels take symmetric weights)";
  }
  if (!fits_int32(s.x_zero_point)) return "x_zero_point is beyond int32";
  p.src_zero_point = static_cast<int32_t>(s.x_zero_point);
  p.src_type = *dnnl_type(qx.dtype());
  p.dst_type = *dnnl_type(out_dtype);
  const size_t channels = s.w_scales.size();
  bool uniform = true;
  p.scales.resize(channels);
  for (size_t c = 0; c < channels; ++c) {
    p.scales[c] = s.x_scale * s.w_scales[c];
    if (!std::isnormal(p.scales[c])) {
      return "a scale x_scale * w_scale that is zero, subnormal or not finite";
    }
    uniform = uniform && p.scales[c] == p.scales[0];
  }
  if (uniform && channels > 1) p.scales.resize(1);
  if (bias != nullptr) {
    if (bias->dim() != 1 || static_cast<size_t>(bias->sizes()[0]) != channels ||
        !bias->device().is_cpu() ||
        (bias->dtype() != ScalarType::Float32 && bias->dtype() != ScalarType::BFloat16)) {
      return "a bias other than float32 or bfloat16 [C] on the CPU";
    }
  }
  if (q.binary != ops::QuantBinary::kNone) {
    const TensorImpl& o = *q.other;
    if (!o.device().is_cpu() || !dnnl_type(o.dtype()) ||
        !std::equal(o.sizes().begin(), o.sizes().end(), out_sizes.begin(), out_sizes.end())) {
      return "other is not a float32, bfloat16, uint8 or int8 tensor of the result's sizes";
    }
    const bool quantized = is_quantized(o.dtype());
    const double a = q.alpha * (quantized ? q.other_scale : 1.0);
    const int64_t z = quantized ? q.other_zero_point : 0;
    if (!std::isnormal(static_cast<float>(a)) || !fits_int32(z) ||
        std::abs(z) > (int64_t{1} << 24)) {
      return "alpha * other_scale is zero or not finite, or other's zero point is beyond 2^24";
    }
    if (q.binary == ops::QuantBinary::kSum) {
      p.posts.push_back({Post::kSum, dnnl::algorithm::undef, static_cast<float>(a), 0,
                         static_cast<int32_t>(z)});
    } else if (a == 1.0 && z == 0) {
      p.posts.push_back({Post::kAdd, dnnl::algorithm::undef, 0, 0, 0, *dnnl_type(o.dtype())});
    } else {
      return "an add of alpha * (other - zero point) other than 1 * other";
    }
  }
  if (q.unary) {
    std::vector<onednn::Eltwise> eltwise;
    if (!onednn::eltwise_of(*q.unary, eltwise)) {
      return "an activation oneDNN's eltwise computes otherwise than ATen (hardtanh min > max)";
    }
    for (const onednn::Eltwise& e : eltwise) {
      p.posts.push_back({Post::kEltwise, e.alg, e.alpha, e.beta});
    }
  }
  if (is_quantized(out_dtype)) {
    const float inv = 1.f / static_cast<float>(q.output_scale);
    const int64_t zp = q.output_zero_point;
    if (!std::isnormal(inv) || zp < -(int64_t{1} << 24) || zp > (int64_t{1} << 24)) {
      return "1 / output_scale is not a normal float, or the output zero point is beyond 2^24";
    }
    // nearbyint(y / scale) + zp: rounded before the zero point is added
    // (oneDNN rounds once, after its dst zero point).
    p.posts.push_back({Post::kEltwise, dnnl::algorithm::eltwise_linear, inv, 0.f});
    p.posts.push_back({Post::kEltwise, dnnl::algorithm::eltwise_round});
    p.dst_zero_point = static_cast<int32_t>(zp);
  }
  // oneDNN 2.6's int8 brgemm kernels apply the first of two eltwise post-ops
  // of one algorithm with both's factors (measured: linear(0.5, 1) then
  // linear(2, 3) gives linear(0.5, 1) twice).
  for (size_t i = 0; i < p.posts.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (p.posts[i].kind == Post::kEltwise && p.posts[j].kind == Post::kEltwise &&
          p.posts[i].alg == p.posts[j].alg) {
        return "two eltwise post-ops of one algorithm (hardsigmoid into a quantized output), "
               "which oneDNN 2.6's int8 kernels compute wrongly";
      }
    }
  }
  return nullptr;
}

// bias[c] / scale[c] (Note [Int8 primitives]) in this thread's buffer, or null.
const float* scaled_bias(const TensorImpl* bias, const std::vector<float>& scales) {
  if (bias == nullptr) return nullptr;
  thread_local std::vector<float> buffer;
  const int64_t n = bias->sizes()[0], stride = bias->strides()[0];
  buffer.resize(static_cast<size_t>(n));
  const char* data = static_cast<const char*>(bias->data_ptr());
  for (int64_t c = 0; c < n; ++c) {
    const float b = bias->dtype() == ScalarType::Float32
                        ? read_elem<float>(data, c * stride)
                        : load(read_elem<BFloat16>(data, c * stride));
    buffer[static_cast<size_t>(c)] = b / scales[scales.size() == 1 ? 0 : static_cast<size_t>(c)];
  }
  return buffer.data();
}

// Runs the problem: the result in `out` (new memory, or other's for a sum),
// other's data for an add. Null where oneDNN has only its reference kernel.
bool run(const Problem& p, const TensorImpl& src, const TensorImpl& weight, const TensorImpl* bias,
         void* dst, const void* other, const char* fn) {
  const auto ip = get_primitive(p);
  if (ip == nullptr) return false;
  std::unique_ptr<TensorImpl> temp_weight;
  const void* wei = ready_weight(*ip, p, weight, temp_weight, fn);
  execute(*ip, src.data_ptr(), wei, scaled_bias(bias, p.scales), dst, other, fn);
  int8_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Where the result goes: `out` (new memory with dst's layout), or for a sum
// `other` itself, or a copy of it in dst's layout copied back after the run.
struct Destination {
  std::unique_ptr<TensorImpl> out, other_copy;
  const TensorImpl* dst = nullptr;   // what oneDNN writes
  const TensorImpl* add = nullptr;   // an add's operand in dst's layout
};

Destination destination(std::span<const int64_t> out_sizes, std::span<const int64_t> strides,
                        ScalarType dtype, const ops::QuantArgs& q, const char* fn) {
  Destination d;
  if (q.binary == ops::QuantBinary::kSum) {
    d.dst = &in_layout(*q.other, strides, d.other_copy, fn);
    return d;
  }
  d.out = empty_strided(out_sizes, strides, dtype, cpu_device(), fn);
  d.dst = d.out.get();
  if (q.binary == ops::QuantBinary::kAdd) d.add = &in_layout(*q.other, strides, d.other_copy, fn);
  return d;
}

// The op's result: the new tensor, or a view of other (a sum).
std::unique_ptr<TensorImpl> result(Destination& d, const ops::QuantArgs& q, const char* fn) {
  if (q.binary != ops::QuantBinary::kSum) return std::move(d.out);
  const TensorImpl& o = *q.other;
  if (d.other_copy) copy_tensor(o, *d.other_copy, fn);
  return make_tensor(o.storage(), o.sizes(), o.strides(), o.storage_offset(), o.dtype(), fn);
}

// A conv or matmul's list of dims with the weight's strides, dense where a
// size-1 dim's stride is arbitrary; false for a broadcast (stride 0) weight.
bool weight_strides(const Dims& dims, Dims& strides, size_t channel_dim) {
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] > 1 && strides[d] <= 0) return false;
  }
  onednn::canonicalize_strides(dims, strides, channel_dim);
  return true;
}

// --- The convolution -------------------------------------------------------------------------

std::unique_ptr<TensorImpl> serve_qconv(const TensorImpl& qx, const TensorImpl& qw,
                                        const TensorImpl* bias, const ConvParams& params,
                                        const ops::QuantArgs& q, const ops::QuantScalars& s,
                                        ScalarType out_dtype, const char** why_not,
                                        const char* fn) {
  const int64_t nd = qx.dim();
  if (nd < 3 || nd > 5 || qw.dim() != nd || params.transposed) {
    *why_not = "not a 1-, 2- or 3-d convolution with a weight of x's rank";
    return nullptr;
  }
  const size_t k = static_cast<size_t>(nd - 2);
  auto per_dim = [](const std::vector<int64_t>& v, size_t i) {
    return v.size() == 1 ? v[0] : v[i];
  };
  auto listed = [k](const std::vector<int64_t>& v) { return v.size() == 1 || v.size() == k; };
  const int64_t g = params.groups, n = qx.sizes()[0], c_in = qx.sizes()[1], c_out = qw.sizes()[0];
  bool ok = listed(params.stride) && listed(params.padding) && listed(params.dilation) && g >= 1 &&
            n > 0 && c_out > 0 && c_in > 0 && c_out % g == 0 && qw.sizes()[1] * g == c_in;
  std::vector<int64_t> out_sizes{n, c_out};
  Problem p;
  p.conv = true;
  for (size_t i = 0; ok && i < k; ++i) {
    const int64_t st = per_dim(params.stride, i), pad = per_dim(params.padding, i),
                  dil = per_dim(params.dilation, i), in = qx.sizes()[2 + i],
                  ker = qw.sizes()[2 + i];
    ok = st >= 1 && pad >= 0 && dil >= 1 && ker >= 1 && in >= 1 && pad < (int64_t{1} << 30) &&
         dil < (int64_t{1} << 30) && ker < (int64_t{1} << 30);
    const int64_t span = dil * (ker - 1) + 1, o = ok ? (in + 2 * pad - span) / st + 1 : 0;
    ok = ok && in + 2 * pad >= span && o >= 1;
    out_sizes.push_back(o);
    p.stride.push_back(st);
    p.dilates.push_back(dil - 1);  // oneDNN counts the gaps
    p.pad_l.push_back(pad);
    p.pad_r.push_back(pad);  // oneDNN's output size rounds down as ATen's
  }
  if (!ok) {
    *why_not = "an empty or malformed convolution (the float32 path checks it)";
    return nullptr;
  }
  *why_not = int8_plan(qx, qw, bias, q, s, out_dtype, out_sizes, p);
  if (*why_not != nullptr) return nullptr;
  // Weight [O, I/g, k...], grouped [g, O/g, I/g, k...].
  const auto ws = qw.sizes(), wt = qw.strides();
  if (g > 1) {
    p.wei_dims = {g, c_out / g, ws[1]};
    p.wei_strides = {c_out / g * wt[0], wt[0], wt[1]};
  } else {
    p.wei_dims = {ws[0], ws[1]};
    p.wei_strides = {wt[0], wt[1]};
  }
  for (int64_t d = 2; d < nd; ++d) {
    p.wei_dims.push_back(ws[d]);
    p.wei_strides.push_back(wt[d]);
  }
  if (!weight_strides(p.wei_dims, p.wei_strides, g > 1 ? 2 : 1)) {
    *why_not = "a weight with a stride 0 or negative";
    return nullptr;
  }
  const std::vector<int64_t> x_layout = channels_last_strides(qx.sizes()),
                             out_layout = channels_last_strides(out_sizes);
  std::unique_ptr<TensorImpl> x_copy;
  const TensorImpl& x = in_layout(qx, x_layout, x_copy, fn);
  Destination d = destination(out_sizes, out_layout, out_dtype, q, fn);
  p.src_dims = Dims(qx.sizes().begin(), qx.sizes().end());
  p.src_strides = Dims(x_layout.begin(), x_layout.end());
  p.dst_dims = Dims(out_sizes.begin(), out_sizes.end());
  p.dst_strides = Dims(out_layout.begin(), out_layout.end());
  p.has_bias = bias != nullptr;
  p.constant_weights = qw.storage()->derived() != nullptr;
  p.threads = omp_get_max_threads();
  if (!run(p, x, qw, bias, d.dst->data_ptr(), d.add ? d.add->data_ptr() : nullptr, fn)) {
    *why_not = "oneDNN has only its reference kernel for this convolution";
    return nullptr;
  }
  return result(d, q, fn);
}

// --- The linear --------------------------------------------------------------------------------

std::unique_ptr<TensorImpl> serve_qlinear(const TensorImpl& qx, const TensorImpl& qw,
                                          const TensorImpl* bias, const ops::QuantArgs& q,
                                          const ops::QuantScalars& s, ScalarType out_dtype,
                                          const char** why_not, const char* fn) {
  const int64_t kk = qw.sizes()[0], nn = qw.sizes()[1];
  if (qx.dim() < 1 || qx.sizes().back() != kk || kk == 0 || nn == 0) {
    *why_not = "an empty or malformed linear (the float32 path checks it)";
    return nullptr;
  }
  int64_t m = 1;
  for (int64_t d = 0; d + 1 < qx.dim(); ++d) m *= qx.sizes()[d];
  if (m == 0) {
    *why_not = "an empty or malformed linear (the float32 path checks it)";
    return nullptr;
  }
  std::vector<int64_t> out_sizes(qx.sizes().begin(), qx.sizes().end());
  out_sizes.back() = nn;
  Problem p;
  p.conv = false;
  *why_not = int8_plan(qx, qw, bias, q, s, out_dtype, out_sizes, p);
  if (*why_not != nullptr) return nullptr;
  p.wei_dims = {kk, nn};
  p.wei_strides = {qw.strides()[0], qw.strides()[1]};
  if (!weight_strides(p.wei_dims, p.wei_strides, 0)) {
    *why_not = "a weight with a stride 0 or negative";
    return nullptr;
  }
  // x [..., K] as [M, K]: rows of one stride when its leading dims collapse
  // (a column slice reads in place), else a contiguous copy.
  std::unique_ptr<TensorImpl> x_copy;
  const TensorImpl* x = &qx;
  int64_t row_stride = kk;
  {
    bool rows_ok = kk == 1 || qx.strides().back() == 1;
    bool have = false;
    int64_t next = 0;
    for (int64_t d = qx.dim() - 2; rows_ok && d >= 0; --d) {
      const int64_t sz = qx.sizes()[d], st = qx.strides()[d];
      if (sz == 1) continue;
      if (!have) {
        row_stride = st;
        have = true;
        rows_ok = st >= kk;
      } else {
        rows_ok = st == next;
      }
      next = st * sz;
    }
    if (!rows_ok) {
      x = &in_layout(qx, contiguous_strides(qx.sizes()), x_copy, fn);
      row_stride = kk;
    }
  }
  const std::vector<int64_t> out_layout = contiguous_strides(out_sizes);
  Destination d = destination(out_sizes, out_layout, out_dtype, q, fn);
  p.src_dims = {m, kk};
  p.src_strides = {m == 1 ? kk : row_stride, 1};
  p.dst_dims = {m, nn};
  p.dst_strides = {nn, 1};
  p.has_bias = bias != nullptr;
  p.constant_weights = qw.storage()->derived() != nullptr;
  // Note [BLAS threads] (cpu/matmul.cpp), as the fused float linear.
  const double macs = static_cast<double>(m) * static_cast<double>(kk) * static_cast<double>(nn);
  const double bytes = static_cast<double>(m) * static_cast<double>(kk) +
                       static_cast<double>(kk) * static_cast<double>(nn);
  const onednn::OneOmpThread one_thread(onednn::gemm_on_calling_thread(macs, bytes));
  p.threads = omp_get_max_threads();
  if (!run(p, *x, qw, bias, d.dst->data_ptr(), d.add ? d.add->data_ptr() : nullptr, fn)) {
    *why_not = "oneDNN has only its reference kernel for this linear";
    return nullptr;
  }
  return result(d, q, fn);
}

// Counts a call the float32 path takes.
std::unique_ptr<TensorImpl> counted(std::unique_ptr<TensorImpl> y) {
  if (y == nullptr) float32_calls.fetch_add(1, std::memory_order_relaxed);
  return y;
}

constexpr const char* kSwitchedOff = "int8 primitives switched off (cpu::set_quantized_int8)";

}  // namespace

std::unique_ptr<TensorImpl> qconv_int8(const TensorImpl& qx, const TensorImpl& qw,
                                       const TensorImpl* bias, const ConvParams& params,
                                       const ops::QuantArgs& q, const ops::QuantScalars& s,
                                       ScalarType out_dtype, const char** why_not,
                                       const char* fn) {
  if (!int8_enabled.load(std::memory_order_relaxed)) {
    *why_not = kSwitchedOff;
    return counted(nullptr);
  }
  return counted(serve_qconv(qx, qw, bias, params, q, s, out_dtype, why_not, fn));
}

std::unique_ptr<TensorImpl> qlinear_int8(const TensorImpl& qx, const TensorImpl& qw,
                                         const TensorImpl* bias, const ops::QuantArgs& q,
                                         const ops::QuantScalars& s, ScalarType out_dtype,
                                         const char** why_not, const char* fn) {
  if (!int8_enabled.load(std::memory_order_relaxed)) {
    *why_not = kSwitchedOff;
    return counted(nullptr);
  }
  return counted(serve_qlinear(qx, qw, bias, q, s, out_dtype, why_not, fn));
}

QuantizedCacheStats quantized_cache_stats() {
  QuantizedCacheStats s;
  static_cast<PrimitiveCacheStats&>(s) = cache().stats();
  s.weights_cached = weights_cached.load(std::memory_order_relaxed);
  s.fused_calls = int8_calls.load(std::memory_order_relaxed);
  s.float32_calls = float32_calls.load(std::memory_order_relaxed);
  return s;
}

void set_quantized_int8(bool enabled) { int8_enabled.store(enabled, std::memory_order_relaxed); }

}  // namespace aotrt::cpu
