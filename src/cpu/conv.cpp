// aten.convolution on the CPU through oneDNN: 1-, 2- and 3-d, grouped,
// strided, padded, dilated, plain or transposed; float64 and integer ones
// through a direct loop (Note [Direct convolution]).
//
// Note [Convolution output layout]
// Inductor compiles against the strides eager ATen gives a convolution's
// output, so aotrt returns the same (measured with torch 2.13 CPU):
// - an empty batch: contiguous (ATen's "empty" backend);
// - 2-d (4-d tensors): channels-last when the input or the weight suggests
//   channels-last (c10's is_channels_last_strides_2d), else contiguous; every
//   CPU 2-d backend (mkldnn, slow, dilated, transposed) follows this;
// - 1-d (3-d tensors): ATen makes the input contiguous and runs it as 2-d
//   with a unit height (both operands unsqueezed at dim 2), so the weight, or
//   an input that was contiguous already with a stride-1 size-1 channel dim
//   (contiguous() keeps its strides: tests/e2e/test_diff_ops.py drew x [1, 1, 2]
//   with strides (2, 1, 1)), can make the output channels-last: [L*C, 1, C];
// - 3-d (5-d tensors): channels-last-3d only when ATen picks its mkldnn
//   backend and the input or weight suggests channels-last-3d; its other 3-d
//   backends return contiguous. The mkldnn choice is ATen's use_mkldnn
//   heuristic, taken with more than one intra-op thread; for float16 it
//   assumes a CPU without avx512-fp16 (the compiling machine decides).
//
// Note [oneDNN layouts]
// oneDNN's fast kernels want particular layouts: "gemm:jit" reads plain
// NCHW with plain weights; "brgconv" reads dense NHWC but wants its own
// blocked weights; for a non-dense view (a chunk along C of a channels-last
// buffer) no fast kernel reads the memory as it is. Whatever it is given,
// oneDNN also has a reference kernel ("ref:any"), 1000x slower, that would be
// picked silently. So a primitive is built in the first of these modes whose
// kernel is not the reference one:
//   1. user:    src, weights and dst in the tensors' own strides (no copies);
//   2. weights: src and dst as they are, weights reordered to oneDNN's choice;
//   3. any:     src, weights and dst in oneDNN's choice, reordered from and to
//               the tensors' strides (a reorder reads any strided view).
// Measured with one thread on the development machine (avx512_core, shared
// with other jobs; a second run repeated the ratios), us per call including
// reorders, for modes 1/2/3:
//   resnet18 3x3 64ch 56x56 NCHW b1:   1405 / 1403 / 1002
//   resnet18 3x3 64ch 56x56 NHWC b1:   ref  /  893 /  897
//   resnet18 3x3 512ch 7x7  NCHW b1:   1140 / 1947 / 1438
//   1x1 32ch 80x80 on a channels-last chunk: ref / ref / 72 (ref: 25461)
// For dense NHWC, which Inductor's CPU layout optimisation produces, mode 2
// runs the same kernel as mode 3 in the same time with no activation copies.
// For NCHW, mode 1 copies nothing and wins where weights are large (26%);
// mode 3's blocked layout wins by 30% on large images, but paying its weight
// reorder on every call makes it the worse default for a weight that may
// change; a weight known to be constant is reordered once and chooses its
// mode by other measurements (Note [Constant weights]). Primitives are cached (see PrimitiveCache) keyed on every
// dim, stride and parameter, so only the first call of a shape pays for
// creation; through the shim a call costs what the bare primitive costs.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/derived_cache.h"
#include "core/error.h"
#include "core/inline_vector.h"
#include "core/view.h"
#include "cpu/cpu.h"
#include "cpu/elements.h"
#include "cpu/onednn.h"
#include "cpu/ops.h"
#include "ops/conv.h"

namespace aotrt::cpu {
namespace {

constexpr const char* kFn = "aoti_torch_cpu_convolution";

using onednn::binary_of;
using onednn::Dims;
using onednn::eltwise_of;
using onednn::Eltwise;
using onednn::engine;
using onednn::float_bits;
using onednn::is_reference;
using onednn::Key;
using onednn::make_reorder;
using onednn::PrimitiveCache;
using onednn::Reorder;
using onednn::scratch_buffer;
using onednn::thread_stream;
using onednn::user_scratchpad_attr;
using onednn::WeightUser;

std::string dims_str(std::span<const int64_t> s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// --- The problem, checked as ATen checks it -------------------------------------

// Note [Per-call allocations]
// A convolution is described anew on every call (a model's run calls each
// of its convolutions once), and the description used to live in
// std::vectors: about 40 mallocs a call (a 16->8 1x1 fused convolution took
// 1.5 us through the shim on one thread, of which oneDNN's work was 0.4;
// malloc and free were the largest part of the rest, and mobilenet_v3_small
// makes 52 such calls a run). Its dims and parameters are inline
// (InlineVector: 3 spatial dims, 6 dims for a grouped 3-d weight), and the
// cache keys are built in per-thread buffers that a lookup reuses
// (onednn::key_buffer); only a miss copies one. 15 mallocs a call remain
// (the result, the shim's parameter lists, oneDNN's own in execute);
// mobilenet_v3_small went from 904 to 864 us a run (aotrt bench, alternated).
using Spatial = InlineVector<int64_t, 3>;
using TensorDims = InlineVector<int64_t, 6>;

struct Conv {
  int k = 0;  // spatial dims
  bool transposed = false;
  int64_t groups = 1;
  int64_t n = 0, c_in = 0, c_out = 0;
  // Inline (Note [Per-call allocations]): at most 3 spatial dims.
  Spatial kernel, stride, padding, dilation, output_padding;
  InlineVector<int64_t, 5> out_sizes;  // N, C_out, spatial...
  // oneDNN's right padding, and the trailing output cells per spatial dim
  // that oneDNN does not compute (see Note [Transposed output padding]).
  Spatial pad_r, crop;
};

// Note [Transposed output padding]
// A transposed conv's output_padding extends the output's right edge; ATen's
// mkldnn path passes oneDNN a right padding of padding - output_padding,
// which may be negative. oneDNN refuses one of -stride or less (possible
// when output_padding is below the dilation but not the stride). The cells
// past the last one any input reaches then hold only the bias, so aotrt has
// oneDNN compute the output without the last `crop` of them (right padding
// raised to 1 - stride) into a window of the output, and fills the rest
// with the bias first.

Spatial expand_param(const std::vector<int64_t>& v, int k, const char* name) {
  if (v.size() == 1) return Spatial(k, v[0]);
  AOTRT_CHECK(static_cast<int>(v.size()) == k, kInvalidArgument, kFn, ": '", name, "' has ",
              v.size(), " entries; expected ", k, " (one per spatial dim) or 1");
  return Spatial(v.begin(), v.end());
}

Conv resolve(const TensorImpl& input, const TensorImpl& weight, const TensorImpl* bias,
             const ConvParams& p) {
  AOTRT_CHECK(input.device().is_cpu(), kInvalidArgument, kFn, ": argument 'input' is on ",
              input.device().str(), "; expected cpu");
  AOTRT_CHECK(weight.device().is_cpu(), kInvalidArgument, kFn, ": argument 'weight' is on ",
              weight.device().str(), "; expected cpu");
  const int64_t dim = input.dim();
  AOTRT_CHECK(dim >= 3 && dim <= 5, kUnsupported, kFn, ": argument 'input' has ", dim,
              " dims; 1-, 2- and 3-d convolutions (3 to 5 dims, batched) are served");
  AOTRT_CHECK(weight.dim() == dim, kInvalidArgument, kFn, ": argument 'weight' has ",
              weight.dim(), " dims but 'input' has ", dim);
  AOTRT_CHECK(weight.dtype() == input.dtype(), kInvalidArgument, kFn, ": 'input' is ",
              dtype_name(input.dtype()), " but 'weight' is ", dtype_name(weight.dtype()),
              "; they must match");
  Conv c;
  c.k = static_cast<int>(dim - 2);
  c.transposed = p.transposed;
  c.groups = p.groups;
  c.stride = expand_param(p.stride, c.k, "stride");
  c.padding = expand_param(p.padding, c.k, "padding");
  c.dilation = expand_param(p.dilation, c.k, "dilation");
  c.output_padding = p.transposed ? expand_param(p.output_padding, c.k, "output_padding")
                                  : Spatial(c.k, 0);
  AOTRT_CHECK(c.groups > 0, kInvalidArgument, kFn, ": groups ", c.groups, " must be positive");
  for (int i = 0; i < c.k; ++i) {
    AOTRT_CHECK(c.stride[i] > 0, kInvalidArgument, kFn, ": stride ", dims_str(c.stride),
                " must be positive");
    AOTRT_CHECK(c.dilation[i] > 0, kInvalidArgument, kFn, ": dilation ", dims_str(c.dilation),
                " must be positive");
    AOTRT_CHECK(c.padding[i] >= 0, kInvalidArgument, kFn, ": padding ", dims_str(c.padding),
                " must not be negative");
    AOTRT_CHECK(c.output_padding[i] >= 0, kInvalidArgument, kFn, ": output_padding ",
                dims_str(c.output_padding), " must not be negative");
    AOTRT_CHECK(!p.transposed || c.output_padding[i] < c.stride[i] ||
                    c.output_padding[i] < c.dilation[i],
                kInvalidArgument, kFn, ": output_padding ", dims_str(c.output_padding),
                " must be smaller than either stride ", dims_str(c.stride), " or dilation ",
                dims_str(c.dilation));
  }
  const auto in = input.sizes(), w = weight.sizes();
  c.n = in[0];
  c.c_in = in[1];
  c.kernel.assign(w.begin() + 2, w.end());
  if (!p.transposed) {
    AOTRT_CHECK(w[0] >= c.groups && w[0] % c.groups == 0, kInvalidArgument, kFn,
                ": 'weight' ", dims_str(w), " must have a multiple of groups (", c.groups,
                ") output channels");
    AOTRT_CHECK(c.c_in == w[1] * c.groups, kInvalidArgument, kFn, ": 'input' ", dims_str(in),
                " has ", c.c_in, " channels; 'weight' ", dims_str(w), " with groups ",
                c.groups, " expects ", w[1] * c.groups);
    c.c_out = w[0];
  } else {
    AOTRT_CHECK(c.c_in == w[0], kInvalidArgument, kFn, ": transposed 'weight' ", dims_str(w),
                " expects ", w[0], " input channels; 'input' ", dims_str(in), " has ", c.c_in);
    AOTRT_CHECK(c.c_in % c.groups == 0, kInvalidArgument, kFn, ": ", c.c_in,
                " input channels are not a multiple of groups ", c.groups);
    c.c_out = checked_mul(w[1], c.groups, kFn);
  }
  AOTRT_CHECK(c.c_in > 0 && c.c_out > 0, kUnsupported, kFn, ": 'input' ", dims_str(in),
              " and 'weight' ", dims_str(w), ": convolutions with no channels are not served");
  if (bias != nullptr) {
    AOTRT_CHECK(bias->device().is_cpu(), kInvalidArgument, kFn, ": argument 'bias' is on ",
                bias->device().str(), "; expected cpu");
    AOTRT_CHECK(bias->dim() == 1 && bias->sizes()[0] == c.c_out, kInvalidArgument, kFn,
                ": 'bias' ", dims_str(bias->sizes()), " must be [", c.c_out, "]");
    AOTRT_CHECK(bias->dtype() == input.dtype(), kInvalidArgument, kFn, ": 'bias' is ",
                dtype_name(bias->dtype()), " but 'input' is ", dtype_name(input.dtype()));
  }
  c.out_sizes = {c.n, c.c_out};
  for (int i = 0; i < c.k; ++i) {
    const int64_t size = in[i + 2];
    AOTRT_CHECK(size > 0, kUnsupported, kFn, ": 'input' ", dims_str(in),
                " has an empty spatial dim; only the batch may be empty");
    AOTRT_CHECK(c.kernel[i] > 0, kInvalidArgument, kFn,
                ": kernel size should be greater than zero, but got 'weight' ", dims_str(w));
    // Checked: sizes past int64 are no convolution (the op_shims fuzzer gave a padding
    // of INT64_MAX).
    const int64_t extent = checked_add(checked_mul(c.dilation[i], c.kernel[i] - 1, kFn), 1, kFn);
    const int64_t pad2 = checked_mul(2, c.padding[i], kFn);
    int64_t out;
    if (!p.transposed) {
      const int64_t padded = checked_add(size, pad2, kFn);
      AOTRT_CHECK(padded >= extent, kInvalidArgument, kFn, ": padded input size ", padded,
                  " at spatial dim ", i, " is smaller than the dilated kernel (", extent, ")");
      out = (padded - extent) / c.stride[i] + 1;
    } else {
      out = checked_add(checked_add(checked_mul(size - 1, c.stride[i], kFn), -pad2, kFn),
                        checked_add(extent, c.output_padding[i], kFn), kFn);
      // An empty output dim is served (an empty result), as ATen serves it with an empty
      // batch, or with output padding (its slow transposed kernel); below 0 is an error.
      AOTRT_CHECK(out >= 0, kInvalidArgument, kFn, ": transposed output size ", out,
                  " at spatial dim ", i, " is negative");
    }
    c.out_sizes.push_back(out);
    const int64_t pad_r = c.padding[i] - c.output_padding[i];
    c.pad_r.push_back(std::max(pad_r, 1 - c.stride[i]));
    c.crop.push_back(c.pad_r.back() - pad_r);
  }
  return c;
}

// --- Output layout (Note [Convolution output layout]) -----------------------------

bool is_channels_last_strides_3d(std::span<const int64_t> sizes,
                                 std::span<const int64_t> strides) {
  if (sizes.size() != 5 || strides[1] == 0) return false;
  int64_t min = 0;
  for (int d : {1, 4, 3, 2, 0}) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

// ATen's ConvParams::use_mkldnn for a 3-d convolution on the CPU.
bool aten_uses_mkldnn_3d(const Conv& c, const TensorImpl& input) {
  for (int i = 0; i < c.k; ++i) {
    if (c.transposed && c.output_padding[i] >= c.stride[i]) return false;
  }
  if (input.dtype() == ScalarType::BFloat16) return true;
  if (input.dtype() != ScalarType::Float32) return false;
  const auto in = input.sizes();
  return c.groups > 1 || (c.kernel[c.k - 1] > 3 && c.kernel[c.k - 2] > 3) || in[0] > 1 ||
         in[0] * in[1] * in[2] * in[3] > 20480;
}

std::vector<int64_t> output_strides(const Conv& c, const TensorImpl& input,
                                    const TensorImpl& weight) {
  bool channels_last = false;
  if (c.n > 0) {
    if (c.k == 2) {
      channels_last = is_channels_last_strides_2d(input.sizes(), input.strides()) ||
                      is_channels_last_strides_2d(weight.sizes(), weight.strides());
    } else if (c.k == 1) {
      // Both as ATen runs them: input.contiguous() (which keeps the strides of an input
      // that is contiguous already, a size-1 dim's among them), then unsqueeze(2).
      auto suggests_channels_last = [](std::span<const int64_t> t, std::span<const int64_t> ts) {
        const int64_t t4[] = {t[0], t[1], 1, t[2]};
        const int64_t ts4[] = {ts[0], ts[1], t[2] * ts[2], ts[2]};  // at::unsqueeze(2)
        return is_channels_last_strides_2d(t4, ts4);
      };
      const std::vector<int64_t> in_strides =
          input.is_contiguous() ? std::vector<int64_t>(input.strides().begin(), input.strides().end())
                                : contiguous_strides(input.sizes());
      channels_last = suggests_channels_last(input.sizes(), in_strides) ||
                      suggests_channels_last(weight.sizes(), weight.strides());
    } else {
      channels_last = aten_uses_mkldnn_3d(c, input) &&
                      (is_channels_last_strides_3d(input.sizes(), input.strides()) ||
                       is_channels_last_strides_3d(weight.sizes(), weight.strides()));
    }
  }
  return channels_last ? channels_last_strides(c.out_sizes) : contiguous_strides(c.out_sizes);
}

// --- oneDNN primitives and their cache ----------------------------------------------

// A tensor as oneDNN sees it: float32 data with dims and strides in elements.
struct DnnlTensor {
  void* data = nullptr;
  TensorDims dims, strides;  // inline (Note [Per-call allocations])
};

dnnl::memory::desc desc_of(const DnnlTensor& t) {
  return dnnl::memory::desc(Dims(t.dims.begin(), t.dims.end()), dnnl::memory::data_type::f32,
                            Dims(t.strides.begin(), t.strides.end()));
}
dnnl::memory::desc any_desc(const DnnlTensor& t) {
  return dnnl::memory::desc(Dims(t.dims.begin(), t.dims.end()), dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::any);
}

// Note [Fused convolutions]
// The fused oneDNN ops of freezing=True packages (Note [Fused oneDNN ops] in
// ops/linear.h) compute unary(binary(conv(x, W) + bias, other)). Run as a
// convolution followed by separate passes, every element of the result is
// written, read back and written again once per post-op; oneDNN applies
// post-ops to each block of the result while it is still in registers, as
// ATen's own mkldnn ops do. So the fused entry point (convolution_fused)
// builds the primitive with post-ops: the activation as oneDNN eltwise
// post-ops (hardsigmoid, which oneDNN 2.6 lacks, as linear then clip), the
// binary as a binary post-op reading `other` in place when it has the
// result's layout (oneDNN 2.6's jit kernels read it with dst's strides
// whatever its descriptor says: tests/unit/test_cpu_conv.cpp found a plain
// `other` beside a channels-last result misread), or, where the result
// is written into `other` itself (the in-place _binary_ op's add), as a sum
// post-op. The result must be written where the caller wants it (fresh
// channels-last memory, or `other`): only modes that keep dst as it is are
// tried, with the weight and, failing that, the source reordered; where each
// of them gets the reference kernel, or a dtype, a transposed convolution or
// an operand oneDNN cannot take is involved, convolution_fused returns null
// and the caller runs the unfused path, which gives the same values.
struct Fusion {
  bool sum = false;  // dst += conv (dst holds `other` already)
  std::optional<dnnl::algorithm> binary;  // binary post-op with src1 = other
  DnnlTensor other;                       // its view (binary only)
  std::vector<Eltwise> eltwise;           // after the sum or binary
  bool empty() const { return !sum && !binary && eltwise.empty(); }
};

// The key, built in k (cleared first).
void make_key(Key& k, const Conv& c, const DnnlTensor& src, const DnnlTensor& wei, bool has_bias,
              const DnnlTensor& dst, bool constant_weights, const Fusion* fusion) {
  k.clear();
  k.insert(k.end(), {c.transposed, c.groups, has_bias, constant_weights});
  auto add = [&k](std::span<const int64_t> d) {
    k.push_back(static_cast<int64_t>(d.size()));
    k.insert(k.end(), d.begin(), d.end());
  };
  for (const DnnlTensor* t : {&src, &wei, &dst}) {
    add(t->dims);
    add(t->strides);
  }
  for (const auto* v : {&c.stride, &c.padding, &c.dilation, &c.output_padding}) add(*v);
  if (fusion != nullptr && !fusion->empty()) {
    k.push_back(-1);  // a marker: keys without fusion never have it here
    k.push_back(fusion->sum);
    k.push_back(fusion->binary ? static_cast<int64_t>(*fusion->binary) : -1);
    if (fusion->binary) {
      add(fusion->other.dims);
      add(fusion->other.strides);
    }
    for (const Eltwise& e : fusion->eltwise) {
      k.insert(k.end(), {static_cast<int64_t>(e.alg), float_bits(e.alpha), float_bits(e.beta)});
    }
  }
}

// A convolution primitive (or an inner product: Note [Convolutions as inner
// products]) with the reorders that feed it, made once per key.
struct ConvPrimitive {
  dnnl::primitive conv;
  dnnl::memory::desc user_src, user_wei, user_dst;   // the tensors as they are
  dnnl::memory::desc conv_src, conv_wei, conv_dst;   // what the kernel reads and writes
  dnnl::memory::desc conv_bias;                      // zero desc: no bias
  dnnl::memory::desc conv_scratch;
  std::optional<Reorder> src_reorder, wei_reorder, dst_reorder;
  size_t scratch_bytes = 0;  // largest scratchpad of the primitives above
  dnnl::memory::desc other;  // a binary post-op's src1 (Note [Fused convolutions]), or zero
  // Note [Bound arguments]: the convolution's arguments, reused by one call at a time.
  struct Bound {
    dnnl::memory src, wei, dst, bias, other, scratch;
    std::unordered_map<int, dnnl::memory> args;
  };
  mutable std::mutex bound_mu;
  mutable std::unique_ptr<Bound> bound;
};

// `other`: the binary post-op's operand as the primitive sees it (the
// fusion's own view when empty).
dnnl::primitive_attr user_scratchpad(const Fusion* fusion = nullptr,
                                     const dnnl::memory::desc& other = {}) {
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (fusion != nullptr && !fusion->empty()) {
    // Note [Fused convolutions]: the binary (or sum) first, then the activation.
    dnnl::post_ops ops;
    if (fusion->sum) ops.append_sum(1.f);
    if (fusion->binary) {
      ops.append_binary(*fusion->binary,
                        other ? other
                              : desc_of(fusion->other));
    }
    for (const Eltwise& e : fusion->eltwise) ops.append_eltwise(1.f, e.alg, e.alpha, e.beta);
    attr.set_post_ops(ops);
  }
  return attr;
}

// Note [Depthwise kernels]
// For a depthwise convolution (one input and one output channel per group)
// on dense NHWC, oneDNN 2.6 lists its brgemm kernel ("brdgmm_dw") before its
// direct one ("jit_dw"), and the direct one is faster on the shapes a CNN
// has. Measured one primitive at a time on this 2-core avx512 machine, us per
// call, two threads, brdgmm_dw / jit_dw, with a hardswish post-op (mobilenet_v3_small's
// nine shapes, 3x3 and 5x5, strides 1 and 2): c16 112x112 3x3 s2 11.5 / 9.3,
// c72 56 3x3 s2 13.6 / 15.3, c88 28 3x3 14.1 / 9.5, c96 28 5x5 s2 6.4 / 5.3,
// c240 14 5x5 11.9 / 9.0, c120 14 7.7 / 5.8, c144 14 10.7 / 5.2,
// c288 14 s2 4.8 / 4.9, c576 7 7.0 / 7.1 (one thread: 9-52% faster on all
// but the last two, 6% slower there). So a depthwise primitive takes the
// first jit_dw implementation oneDNN offers for it, else its first one.
bool is_depthwise(const Conv& c) {
  return !c.transposed && c.groups > 1 && c.groups == c.c_in && c.groups == c.c_out;
}

// The primitive descriptor for one mode, or an empty one if none exists.
dnnl::primitive_desc describe(const Conv& c, const dnnl::memory::desc& src,
                              const dnnl::memory::desc& wei, const dnnl::memory::desc& bias,
                              const dnnl::memory::desc& dst, const Fusion* fusion = nullptr) {
  Dims strides(c.stride.begin(), c.stride.end()), pad_l(c.padding.begin(), c.padding.end());
  Dims dilates, pad_r(c.pad_r.begin(), c.pad_r.end());
  for (int i = 0; i < c.k; ++i) dilates.push_back(c.dilation[i] - 1);  // oneDNN counts gaps
  const auto attr = user_scratchpad(fusion);
  const auto kind = dnnl::prop_kind::forward_inference;
  if (!c.transposed) {
    dnnl::convolution_forward::desc d(kind, dnnl::algorithm::convolution_direct, src, wei, bias,
                                      dst, strides, dilates, pad_l, pad_r);
    if (is_depthwise(c)) {  // Note [Depthwise kernels]
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine(), true);
      if (!pd) return pd;
      do {
        if (std::string(pd.impl_info_str()).rfind("jit_dw:", 0) == 0) return pd;
      } while (pd.next_impl());
    }
    return dnnl::convolution_forward::primitive_desc(d, attr, engine(), true);
  }
  dnnl::deconvolution_forward::desc d(kind, dnnl::algorithm::deconvolution_direct, src, wei,
                                      bias, dst, strides, dilates, pad_l, pad_r);
  return dnnl::deconvolution_forward::primitive_desc(d, attr, engine(), true);
}

bool is_gemm(const dnnl::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
}

// Note [oneDNN layouts]: the primitive descriptor for a weight that is a
// constant (Note [Constant weights]), whose reorder is paid once.
dnnl::primitive_desc describe_for_constant_weights(const Conv& c, const dnnl::memory::desc& src,
                                                   const dnnl::memory::desc& wei,
                                                   const dnnl::memory::desc& bias,
                                                   const dnnl::memory::desc& dst,
                                                   const dnnl::memory::desc& any_src,
                                                   const dnnl::memory::desc& any_wei,
                                                   const dnnl::memory::desc& any_dst) {
  const bool pointwise =
      std::all_of(c.kernel.begin(), c.kernel.end(), [](int64_t k) { return k == 1; });
  dnnl::primitive_desc user = describe(c, src, wei, bias, dst);
  if (user && !is_reference(user) && pointwise) return user;  // gemm on plain NCHW
  dnnl::primitive_desc weights = describe(c, src, any_wei, bias, dst);
  if (weights && !is_reference(weights) && !is_gemm(weights)) return weights;  // dense NHWC
  dnnl::primitive_desc blocked = describe(c, any_src, any_wei, bias, any_dst);
  if (blocked && !is_reference(blocked)) return blocked;
  if (user && !is_reference(user)) return user;
  return weights;
}

// Note [Fused convolutions]: the first mode that writes dst as it is and
// whose kernel is not the reference one; an empty descriptor if none.
dnnl::primitive_desc describe_fused(const Conv& c, const dnnl::memory::desc& src,
                                   const dnnl::memory::desc& wei, const dnnl::memory::desc& bias,
                                   const dnnl::memory::desc& dst,
                                   const dnnl::memory::desc& any_src,
                                   const dnnl::memory::desc& any_wei, bool constant_weights,
                                   const Fusion& fusion) {
  auto usable = [](const dnnl::primitive_desc& pd) { return pd && !is_reference(pd); };
  const bool pointwise =
      std::all_of(c.kernel.begin(), c.kernel.end(), [](int64_t k) { return k == 1; });
  // As describe_for_constant_weights orders them, less the modes that move dst.
  dnnl::primitive_desc user;
  if (!constant_weights || pointwise) {
    user = describe(c, src, wei, bias, dst, &fusion);
    if (usable(user) && (!constant_weights || is_gemm(user))) return user;
  }
  dnnl::primitive_desc weights = describe(c, src, any_wei, bias, dst, &fusion);
  if (usable(weights)) return weights;
  if (usable(user)) return user;
  dnnl::primitive_desc source = describe(c, any_src, any_wei, bias, dst, &fusion);
  if (usable(source)) return source;
  return {};
}

// Note [Convolutions as inner products]
// A convolution whose kernel covers its whole unpadded input (1x1 on 1x1: the
// squeeze-and-excitation blocks of mobilenet_v3 after their global pooling)
// is an inner product, [N, C_in] x [C_in, C_out]. oneDNN 2.6 runs such a
// convolution with its gemm kernel ("gemm:jit") on plain weights; its inner
// product primitive runs a brgemm kernel on weights in its own blocked
// layout, which a constant weight pays for once. Measured one call at a time
// on this 2-core avx512 machine, two threads, us per call, gemm convolution
// vs inner product, with the bias and a relu: 16->8 1.24 / 0.26,
// 96->24 1.40 / 0.45, 64->240 2.58 / 0.75, 576->144 3.54 / 2.83,
// 144->576 3.90 / 2.37 (mobilenet_v3_small's 18 such convolutions: 38 us
// per run, 19 as inner products). Taken for a constant weight only (another
// would be reordered on every call); the operands are read in place as
// matrices: src [N, C_in], weights [C_out, C_in], dst and a binary operand
// [N, C_out], each with its view's strides.
bool is_inner_product(const Conv& c, const DnnlTensor& src) {
  if (c.transposed || c.groups != 1) return false;
  for (int i = 0; i < c.k; ++i) {
    if (c.kernel[i] != 1 || c.padding[i] != 0 || c.pad_r[i] != 0 || src.dims[i + 2] != 1) {
      return false;
    }
  }
  return true;
}

// The rest of a primitive once its descriptor is chosen (a convolution's or
// an inner product's): the layouts it computes in, the reorders into and out
// of them, its scratchpad.
std::shared_ptr<ConvPrimitive> finish_primitive(std::shared_ptr<ConvPrimitive> p,
                                                const dnnl::primitive_desc& pd) {
  p->conv_src = pd.src_desc();
  p->conv_wei = pd.weights_desc();
  p->conv_dst = pd.dst_desc();
  p->conv_scratch = pd.scratchpad_desc();
  p->scratch_bytes = p->conv_scratch.get_size();
  p->src_reorder = make_reorder(p->user_src, p->conv_src, p->scratch_bytes);
  p->wei_reorder = make_reorder(p->user_wei, p->conv_wei, p->scratch_bytes);
  p->dst_reorder = make_reorder(p->conv_dst, p->user_dst, p->scratch_bytes);
  p->conv = dnnl::primitive(pd);
  return p;
}

// Note [Convolutions as inner products]: the primitive, or null where only
// oneDNN's reference kernel serves it (the caller then tries a convolution).
std::shared_ptr<ConvPrimitive> create_inner_product(const DnnlTensor& src, const DnnlTensor& wei,
                                                    bool has_bias, const DnnlTensor& dst,
                                                    const Fusion* fusion) {
  using dt = dnnl::memory::data_type;
  auto matrix = [](const DnnlTensor& t) {
    return dnnl::memory::desc({t.dims[0], t.dims[1]}, dt::f32, {t.strides[0], t.strides[1]});
  };
  auto p = std::make_shared<ConvPrimitive>();
  p->user_src = matrix(src);
  p->user_wei = matrix(wei);
  p->user_dst = matrix(dst);
  if (has_bias) p->conv_bias = dnnl::memory::desc({dst.dims[1]}, dt::f32, dnnl::memory::format_tag::a);
  if (fusion != nullptr && fusion->binary) p->other = matrix(fusion->other);
  const dnnl::memory::desc any_wei({wei.dims[0], wei.dims[1]}, dt::f32, dnnl::memory::format_tag::any);
  dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, p->user_src, any_wei,
                                      p->conv_bias, p->user_dst);
  dnnl::inner_product_forward::primitive_desc pd(d, user_scratchpad(fusion, p->other), engine(),
                                                 true);
  if (!pd || is_reference(pd)) return nullptr;
  return finish_primitive(std::move(p), pd);
}

std::shared_ptr<const ConvPrimitive> create_primitive(const Conv& c, const DnnlTensor& src,
                                                      const DnnlTensor& wei, bool has_bias,
                                                      const DnnlTensor& dst,
                                                      bool constant_weights,
                                                      const Fusion* fusion) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  if (constant_weights && is_inner_product(c, src)) {
    try {
      if (auto ip = create_inner_product(src, wei, has_bias, dst, fusion)) return ip;
    } catch (const dnnl::error&) {
      // oneDNN refused the matrices or the post-ops: a convolution below
    }
  }
  auto p = std::make_shared<ConvPrimitive>();
  p->user_src = desc_of(src);
  p->user_wei = desc_of(wei);
  p->user_dst = desc_of(dst);
  if (has_bias) p->conv_bias = dnnl::memory::desc({c.c_out}, dt::f32, tag::a);
  const dnnl::memory::desc any_src = any_desc(src), any_wei = any_desc(wei), any_dst = any_desc(dst);

  dnnl::primitive_desc pd;
  if (fusion != nullptr) {
    pd = describe_fused(c, p->user_src, p->user_wei, p->conv_bias, p->user_dst, any_src, any_wei,
                        constant_weights, *fusion);
    if (!pd) return nullptr;  // the caller runs the unfused path
  } else {
    // Note [oneDNN layouts]: the first mode whose kernel is not the reference one.
    if (constant_weights) {
      pd = describe_for_constant_weights(c, p->user_src, p->user_wei, p->conv_bias, p->user_dst,
                                         any_src, any_wei, any_dst);
    }
    if (!pd || is_reference(pd)) pd = describe(c, p->user_src, p->user_wei, p->conv_bias, p->user_dst);
    if (!pd || is_reference(pd)) pd = describe(c, p->user_src, any_wei, p->conv_bias, p->user_dst);
    if (!pd || is_reference(pd)) pd = describe(c, any_src, any_wei, p->conv_bias, any_dst);
    AOTRT_CHECK(pd, kUnsupported, kFn, ": oneDNN has no kernel for this convolution");
  }

  if (fusion != nullptr && fusion->binary) {
    p->other = desc_of(fusion->other);
  }
  return finish_primitive(std::move(p), pd);
}

PrimitiveCache<ConvPrimitive>& cache() {
  static PrimitiveCache<ConvPrimitive> c;
  return c;
}

// A fused primitive (fusion non-null) is null where no mode fuses
// (Note [Fused convolutions]); that answer is cached too.
std::shared_ptr<const ConvPrimitive> get_primitive(const Conv& c, const DnnlTensor& src,
                                                   const DnnlTensor& wei, bool has_bias,
                                                   const DnnlTensor& dst, bool constant_weights,
                                                   const Key** key_out,
                                                   const Fusion* fusion = nullptr) {
  Key& key = onednn::key_buffer(0);  // Note [Per-call allocations]
  make_key(key, c, src, wei, has_bias, dst, constant_weights, fusion);
  auto p = cache().find_or_make(key, [&] {
    return create_primitive(c, src, wei, has_bias, dst, constant_weights, fusion);
  });
  *key_out = &key;
  return p;
}

// Note [Constant weights]
// A weight whose storage is marked constant (Note [Constant storages] in
// core/derived_cache.h) is reordered to the primitive's layout once, on its
// first use, into memory kept in that storage's DerivedCache; later calls
// (any thread, any Model sharing the storage) read that copy and skip the
// reorder, and the copy is freed with the storage (with its Model, or when a
// swap drops the old constants). The entry's key is the primitive's Key
// (every dim, stride and parameter, so the layout oneDNN chose) and the
// view's byte offset in the storage; the primitive's weights descriptor is
// kept beside the bytes and compared on every hit. Knowing the reorder is
// free changes the best mode (describe_for_constant_weights), measured with
// bench/conv_modes.cpp, one thread, on this 2-core avx2 machine (shared with
// other jobs: the minimum over 3 rounds of the median of 20 calls), us per
// call for modes 1 / 2 paying the weight reorder / 2 cached / 3 paying it /
// 3 cached:
//   resnet18 3x3 64ch 56x56 NHWC:    ref / 2476 / 2473 / 2529 / 2519
//   resnet18 3x3 512ch 7x7 NHWC:     ref / 3627 / 2980 / 3469 / 2696
//   resnet50 1x1 512->2048 7x7 NHWC: ref / 1277 / 1056 / 1327 / 1114
//   resnet18 3x3 64ch 56x56 NCHW:   3802 / 3807 / 3797 / 2499 / 2494
//   resnet18 3x3 512ch 7x7 NCHW:    3323 / 3317 / 3330 / 3187 / 2647
//   resnet50 1x1 64->256 56x56 NCHW:1166 / 1160 / 1156 / 1279 / 1274
//   mobilenet dw 5x5 240ch 14x14 NCHW: 1004 / 1005 / 1003 / 58 / 56
// (dense NHWC is what inductor's CPU layout optimisation gives the packages
// bench/compare.py exports). So a constant weight takes: mode 1 for a 1x1
// kernel that gemm reads as it is; else mode 2 where a direct kernel reads
// the activations as they are (dense NHWC); else mode 3 (NCHW: the blocked
// kernel wins by 4-95% once its weight is free). A weight not known to be
// constant keeps the choice of Note [oneDNN layouts]. Where it pays: inductor's
// CPU layout optimisation (on by default) copies every conv weight into a
// channels-last temporary in generated code on each run, so those convolutions
// never see the constant; packages exported with layout_optimization=False
// do (resnet18, 1 thread: 70 ms vs 88 ms uncached; bench/results/
// cpu-ort-2026-12-02.md), and freezing=True packages keep their folded
// weights as Buffer-typed constants, which are not marked.
std::atomic<int64_t> weights_cached{0};  // ConvCacheStats::weights_cached
std::atomic<int64_t> fused_calls{0};     // ConvCacheStats::fused_calls

// Note [Bound arguments]
// A call that reorders nothing (the steady state of a model's constant-weight
// convolutions) runs the primitive on its operands as they are. Making its
// oneDNN memory objects, argument map and scratchpad anew on every call cost
// more than the smallest convolutions themselves (a 16->16 1x1 at 1x1: 5 us a
// call, mostly malloc and free; mobilenet_v3_small has 52 convolutions), so
// each primitive keeps one set, bound to the call's pointers with
// set_data_handle (the scratchpad stays a block of the allocator's per call).
// One call at a time uses it (try_lock); a concurrent call on the same
// primitive makes its own, as every call did before.
bool execute_bound(const ConvPrimitive& p, const DnnlTensor& src, const void* ready_wei,
                   void* bias, const DnnlTensor& dst, const void* other) {
  std::unique_lock<std::mutex> lock(p.bound_mu, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  const dnnl::engine& eng = engine();
  // The scratchpad is the allocator's for the call (a cached block), never
  // kept: a primitive outlives no allocation it could free.
  std::unique_ptr<TensorImpl> scratch;
  if (p.conv_scratch.get_size() > 0) scratch = scratch_buffer(p.conv_scratch.get_size(), kFn);
  if (!p.bound) {
    auto b = std::make_unique<ConvPrimitive::Bound>();
    b->src = dnnl::memory(p.conv_src, eng, src.data);
    b->wei = dnnl::memory(p.conv_wei, eng, const_cast<void*>(ready_wei));
    b->dst = dnnl::memory(p.conv_dst, eng, dst.data);
    b->args = {{DNNL_ARG_SRC, b->src}, {DNNL_ARG_WEIGHTS, b->wei}, {DNNL_ARG_DST, b->dst}};
    if (scratch) {
      b->scratch = dnnl::memory(p.conv_scratch, eng, scratch->data_ptr());
      b->args.emplace(DNNL_ARG_SCRATCHPAD, b->scratch);
    }
    if (bias != nullptr) {
      b->bias = dnnl::memory(p.conv_bias, eng, bias);
      b->args.emplace(DNNL_ARG_BIAS, b->bias);
    }
    if (other != nullptr) {
      b->other = dnnl::memory(p.other, eng, const_cast<void*>(other));
      b->args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, b->other);
    }
    p.bound = std::move(b);
  } else {
    ConvPrimitive::Bound& b = *p.bound;
    b.src.set_data_handle(src.data);
    b.wei.set_data_handle(const_cast<void*>(ready_wei));
    b.dst.set_data_handle(dst.data);
    if (scratch) b.scratch.set_data_handle(scratch->data_ptr());
    if (bias != nullptr) b.bias.set_data_handle(bias);
    if (other != nullptr) b.other.set_data_handle(const_cast<void*>(other));
  }
  dnnl::stream& s = thread_stream();
  p.conv.execute(s, p.bound->args);
  s.wait();
  return true;
}

// other: a binary post-op's operand (null when the primitive has none).
void execute(const ConvPrimitive& p, const DnnlTensor& src, const DnnlTensor& wei,
             void* bias, const DnnlTensor& dst, const void* reordered_wei,
             const void* other = nullptr) {
  if (!p.src_reorder && !p.dst_reorder && (reordered_wei != nullptr || !p.wei_reorder)) {
    // A key names whether there is a bias and an other, so a bound set
    // always has the same arguments.
    const void* ready = reordered_wei != nullptr ? reordered_wei : wei.data;
    if (execute_bound(p, src, ready, bias, dst, other)) return;
  }
  const dnnl::engine& eng = engine();
  dnnl::stream& s = thread_stream();
  auto scratch = scratch_buffer(p.scratch_bytes, kFn);
  // An operand in the kernel's layout: the user's memory, or a reordered copy.
  std::vector<std::unique_ptr<TensorImpl>> temps;
  auto staged = [&](const dnnl::memory::desc& md, void* user) {
    if (user != nullptr) return dnnl::memory(md, eng, user);
    temps.push_back(scratch_buffer(md.get_size(), kFn));
    return dnnl::memory(md, eng, temps.back()->data_ptr());
  };
  dnnl::memory user_src(p.user_src, eng, src.data), user_wei(p.user_wei, eng, wei.data),
      user_dst(p.user_dst, eng, dst.data);
  dnnl::memory conv_src = staged(p.conv_src, p.src_reorder ? nullptr : src.data);
  void* ready_wei = reordered_wei != nullptr ? const_cast<void*>(reordered_wei)
                  : p.wei_reorder ? nullptr
                                  : wei.data;
  dnnl::memory conv_wei = staged(p.conv_wei, ready_wei);
  dnnl::memory conv_dst = staged(p.conv_dst, p.dst_reorder ? nullptr : dst.data);
  // Every primitive runs alone, so they share one scratchpad.
  auto with_scratch = [&](std::unordered_map<int, dnnl::memory> args,
                          const dnnl::memory::desc& md) {
    if (md.get_size() > 0) {
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(md, eng, scratch->data_ptr()));
    }
    return args;
  };
  auto run_reorder = [&](const Reorder& r, dnnl::memory& from, dnnl::memory& to) {
    r.prim.execute(s, with_scratch({{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, r.scratch));
  };
  if (p.src_reorder) run_reorder(*p.src_reorder, user_src, conv_src);
  if (p.wei_reorder && reordered_wei == nullptr) run_reorder(*p.wei_reorder, user_wei, conv_wei);
  auto args = with_scratch(
      {{DNNL_ARG_SRC, conv_src}, {DNNL_ARG_WEIGHTS, conv_wei}, {DNNL_ARG_DST, conv_dst}},
      p.conv_scratch);
  if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, dnnl::memory(p.conv_bias, eng, bias));
  if (other != nullptr) {
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                 dnnl::memory(p.other, eng, const_cast<void*>(other)));
  }
  p.conv.execute(s, args);
  if (p.dst_reorder) run_reorder(*p.dst_reorder, conv_dst, user_dst);
  s.wait();
}

// Note [Constant weights]: the weight in the primitive's layout, from the
// storage's cache or made into it now; null where the kernel reads the
// weight as it is.
const void* constant_weight(const Conv& c, const ConvPrimitive& p, const Key& key,
                            const TensorImpl& weight, const DnnlTensor& wei,
                            DerivedCache& derived) {
  if (!p.wei_reorder) return nullptr;  // the kernel reads the weight as it is
  // A transposed convolution's user weight swaps torch's first two dims.
  const auto axes = c.transposed ? onednn::BlockedAxes::kNone : onednn::BlockedAxes::kSame;
  return onednn::constant_weight(WeightUser::kConvolution, key, weight, wei.data, axes,
                                 p.user_wei, p.conv_wei, *p.wei_reorder, derived, weights_cached,
                                 kFn);
}

// --- From tensors to oneDNN's view of them ----------------------------------------------

DnnlTensor as_dnnl(const TensorImpl& t) {
  return {t.data_ptr(), TensorDims(t.sizes().begin(), t.sizes().end()),
          TensorDims(t.strides().begin(), t.strides().end())};
}

// The weight as oneDNN wants it, with no copy: grouped convolutions get a
// leading groups dim; a transposed conv's weight [in, out/g, k...] has its
// first two dims swapped, which strides express.
DnnlTensor weights_as_dnnl(const Conv& c, const TensorImpl& w) {
  const auto sz = w.sizes(), st = w.strides();
  const int64_t g = c.groups;
  // Null while a deferred _mkldnn constant is not made (constant_weight).
  DnnlTensor t{const_cast<void*>(onednn::data_unless_deferred(w)), {}, {}};
  if (!c.transposed) {
    const int64_t og = sz[0] / g;  // [O, I/g, k...]
    if (g > 1) t.dims = {g, og, sz[1]}, t.strides = {og * st[0], st[0], st[1]};
    else t.dims = {sz[0], sz[1]}, t.strides = {st[0], st[1]};
  } else {
    const int64_t ig = sz[0] / g;  // [I, O/g, k...]
    if (g > 1) t.dims = {g, sz[1], ig}, t.strides = {ig * st[0], st[1], st[0]};
    else t.dims = {sz[1], sz[0]}, t.strides = {st[1], st[0]};
  }
  for (size_t d = 2; d < sz.size(); ++d) {
    t.dims.push_back(sz[d]);
    t.strides.push_back(st[d]);
  }
  return t;
}

// Note [Strides of size-1 dims]
// A dim of size 1 never moves an address, so its stride is arbitrary, and
// generated code passes 0 for a batch of one. oneDNN, though, matches layouts
// by their strides: a dense NHWC tensor whose N stride is 0 gets its
// reference kernel. A view that is dense in the plain or the channels-last
// order (channels innermost) is therefore described to oneDNN with that
// layout's own strides, which differ from the view's only on size-1 dims.
void canonicalize_strides(DnnlTensor& t, size_t channel_dim) {
  onednn::canonicalize_strides(t.dims, t.strides, channel_dim);
}

// src and dst: channels at dim 1; weights: the input-channel dim.
void canonicalize_all(const Conv& c, DnnlTensor& src, DnnlTensor& wei, DnnlTensor& dst) {
  canonicalize_strides(src, 1);
  canonicalize_strides(wei, c.groups > 1 ? 2 : 1);
  canonicalize_strides(dst, 1);
}

// A float32 copy of t in a dense layout that keeps its dim order.
std::unique_ptr<TensorImpl> dense_f32(const TensorImpl& t) {
  auto copy = empty_strided(t.sizes(), preserve_format_strides(t.sizes(), t.strides()),
                            ScalarType::Float32, cpu_device(), kFn);
  copy_strided(strided_view(*copy), strided_view(t));
  return copy;
}

bool has_stride_zero(const TensorImpl& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return true;
  }
  return false;
}

// Writes bias[c] (dense float32; null: zero) to every element of channel c.
void fill_with_bias(const TensorImpl& out, const void* bias) {
  const StridedView v = strided_view(out);
  if (bias == nullptr) {
    fill_zero(v);
    return;
  }
  std::vector<int64_t> strides(v.sizes.size(), 0);
  strides[1] = 1;
  copy_strided(v, StridedView{static_cast<char*>(const_cast<void*>(bias)), v.sizes, strides,
                              ScalarType::Float32, cpu_device()});
}

// --- Direct convolution (float64 and integers) -------------------------------------

// Note [Direct convolution]
// oneDNN has no float64 and no integer convolution; ATen serves them with its
// slow kernels (im2col + its own gemm): float64 (plain and transposed),
// int64 (plain and transposed), uint8/int8/int16/int32 (plain only: its
// slow transposed kernels refuse them). aotrt serves the same with one
// gather loop: every output element sums input * weight over the taps that
// reach it, so output planes are independent and run in parallel (OpenMP).
// Operands are read from dense row-major copies in the compute type (the
// tensors themselves when already so); 1- and 2-d problems are 3-d ones with
// unit leading spatial dims. Integers are computed in uint64 (wrap-around
// without signed overflow); the low bits of a sum of products modulo 2^64
// are those of ATen's sums in the narrower type, and the copy into out
// truncates. The float64 sum order differs from ATen's gemm (rounding only).
struct Direct {
  int64_t in[3], out[3], kernel[3], stride[3], padding[3], dilation[3];
};

Direct direct_of(const Conv& c, const TensorImpl& input) {
  Direct d{};
  for (int i = 0; i < 3; ++i) {
    const int j = i - (3 - c.k);  // the problem's spatial dim, < 0 for a unit one
    d.in[i] = j < 0 ? 1 : input.sizes()[j + 2];
    d.out[i] = j < 0 ? 1 : c.out_sizes[j + 2];
    d.kernel[i] = j < 0 ? 1 : c.kernel[j];
    d.stride[i] = j < 0 ? 1 : c.stride[j];
    d.padding[i] = j < 0 ? 0 : c.padding[j];
    d.dilation[i] = j < 0 ? 1 : c.dilation[j];
  }
  return d;
}

// The input index a tap reads for output index o, or -1 when it reads padding
// (plain) or no input element lands there (transposed).
inline int64_t tap_source(const Direct& d, int i, int64_t o, int64_t k, bool transposed) {
  if (!transposed) {
    const int64_t x = o * d.stride[i] - d.padding[i] + k * d.dilation[i];
    return x >= 0 && x < d.in[i] ? x : -1;
  }
  const int64_t x = o + d.padding[i] - k * d.dilation[i];
  if (x < 0 || x % d.stride[i] != 0 || x / d.stride[i] >= d.in[i]) return -1;
  return x / d.stride[i];
}

// tap_source of every (output index, tap) of spatial dim i, row o * kernel + k:
// worked out once per call, not once per input channel.
std::vector<int64_t> tap_table(const Direct& d, int i, bool transposed) {
  std::vector<int64_t> t(static_cast<size_t>(d.out[i] * d.kernel[i]));
  for (int64_t o = 0; o < d.out[i]; ++o)
    for (int64_t k = 0; k < d.kernel[i]; ++k)
      t[o * d.kernel[i] + k] = tap_source(d, i, o, k, transposed);
  return t;
}

// T: double, or uint64_t for integers. in [N, C_in, S...], w as ATen lays it
// out ([C_out, C_in/g, K...] or transposed [C_in, C_out/g, K...]), out
// [N, C_out, S_out...], all dense row-major; bias [C_out] or null.
template <typename T>
void direct_convolution(const Conv& c, const Direct& d, const T* in, const T* w, const T* bias,
                        T* out) {
  const int64_t cin_g = c.c_in / c.groups, cout_g = c.c_out / c.groups;
  const int64_t in_plane = d.in[0] * d.in[1] * d.in[2];
  const int64_t out_plane = d.out[0] * d.out[1] * d.out[2];
  const int64_t taps = d.kernel[0] * d.kernel[1] * d.kernel[2];
  const int64_t planes = c.n * c.c_out;
  const std::vector<int64_t> tz = tap_table(d, 0, c.transposed), ty = tap_table(d, 1, c.transposed),
                             tx = tap_table(d, 2, c.transposed);
  const int64_t kz_n = d.kernel[0], ky_n = d.kernel[1], kx_n = d.kernel[2];
#pragma omp parallel for schedule(static) if (planes > 1 && planes * out_plane * cin_g * taps >= 32768)
  for (int64_t plane = 0; plane < planes; ++plane) {
    const int64_t n = plane / c.c_out, co = plane % c.c_out, g = co / cout_g;
    T* o = out + plane * out_plane;
    for (int64_t z = 0; z < d.out[0]; ++z)
      for (int64_t y = 0; y < d.out[1]; ++y)
        for (int64_t x = 0; x < d.out[2]; ++x) {
          const int64_t* sz = tz.data() + z * kz_n;
          const int64_t* sy = ty.data() + y * ky_n;
          const int64_t* sx = tx.data() + x * kx_n;
          T acc = bias != nullptr ? bias[co] : T(0);
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const int64_t cin = g * cin_g + ci;
            const T* ip = in + (n * c.c_in + cin) * in_plane;
            const T* wp = w + (c.transposed ? cin * cout_g + co % cout_g : co * cin_g + ci) * taps;
            for (int64_t kz = 0; kz < kz_n; ++kz) {
              if (sz[kz] < 0) continue;
              for (int64_t ky = 0; ky < ky_n; ++ky) {
                if (sy[ky] < 0) continue;
                const T* irow = ip + (sz[kz] * d.in[1] + sy[ky]) * d.in[2];
                const T* wrow = wp + (kz * ky_n + ky) * kx_n;
                for (int64_t kx = 0; kx < kx_n; ++kx) {
                  if (sx[kx] >= 0) acc += irow[sx[kx]] * wrow[kx];
                }
              }
            }
          }
          o[(z * d.out[1] + y) * d.out[2] + x] = acc;
        }
  }
}

// t itself when dense row-major in `dtype`, else such a copy held by `owner`.
const void* dense_in(const TensorImpl& t, ScalarType dtype, std::unique_ptr<TensorImpl>& owner) {
  if (t.dtype() == dtype && t.is_contiguous()) return t.data_ptr();
  owner = empty_strided(t.sizes(), contiguous_strides(t.sizes()), dtype, cpu_device(), kFn);
  copy_strided(strided_view(*owner), strided_view(t));
  return owner->data_ptr();
}

// Note [Direct convolution]: out has ATen's layout already.
void convolve_direct(const Conv& c, const TensorImpl& input, const TensorImpl& weight,
                     const TensorImpl* bias, const TensorImpl& out) {
  const ScalarType dtype = input.dtype();
  AOTRT_CHECK(!c.transposed || dtype == ScalarType::Float64 || dtype == ScalarType::Int64,
              kUnsupported, kFn, ": a transposed convolution of dtype ", dtype_name(dtype),
              " is not served: ATen's CPU transposed kernels refuse it too (float64 and int64 "
              "are served)");
  const ScalarType ct = dtype == ScalarType::Float64 ? dtype : ScalarType::Int64;
  std::unique_ptr<TensorImpl> in_tmp, w_tmp, b_tmp, out_tmp;
  const void* in = dense_in(input, ct, in_tmp);
  const void* w = dense_in(weight, ct, w_tmp);
  const void* b = bias != nullptr ? dense_in(*bias, ct, b_tmp) : nullptr;
  void* result = out.data_ptr();
  if (out.dtype() != ct || !out.is_contiguous()) {
    out_tmp = empty_strided(out.sizes(), contiguous_strides(out.sizes()), ct, cpu_device(), kFn);
    result = out_tmp->data_ptr();
  }
  const Direct d = direct_of(c, input);
  if (ct == ScalarType::Float64) {
    direct_convolution(c, d, static_cast<const double*>(in), static_cast<const double*>(w),
                       static_cast<const double*>(b), static_cast<double*>(result));
  } else {
    direct_convolution(c, d, static_cast<const uint64_t*>(in), static_cast<const uint64_t*>(w),
                       static_cast<const uint64_t*>(b), static_cast<uint64_t*>(result));
  }
  if (out_tmp) copy_strided(strided_view(out), strided_view(*out_tmp));
}

}  // namespace

ConvCacheStats conv_cache_stats() {
  ConvCacheStats s = cache().stats();
  s.weights_cached = weights_cached.load(std::memory_order_relaxed);
  s.fused_calls = fused_calls.load(std::memory_order_relaxed);
  return s;
}

namespace {

bool shares_storage(const TensorImpl& a, const TensorImpl* b) {
  return b != nullptr && a.storage().get() == b->storage().get();
}

}  // namespace

std::unique_ptr<TensorImpl> convolution_fused(const TensorImpl& input, const TensorImpl& weight,
                                              const TensorImpl* bias, const ConvParams& params,
                                              const ops::ConvFusion& fusion) {
  const Conv c = resolve(input, weight, bias, params);
  const auto f32 = [](const TensorImpl* t) {
    return t == nullptr || (t->dtype() == ScalarType::Float32 && !has_stride_zero(*t));
  };
  if (c.transposed || c.n == 0 || !f32(&input) || !f32(&weight) || !f32(bias)) return nullptr;
  if (bias != nullptr && bias->strides()[0] != 1 && bias->sizes()[0] != 1) return nullptr;
  const TensorImpl* other = fusion.other;
  if (other != nullptr) {
    if (!f32(other) || !other->device().is_cpu() ||
        !std::equal(other->sizes().begin(), other->sizes().end(), c.out_sizes.begin(),
                    c.out_sizes.end())) {
      return nullptr;  // the unfused path refuses or broadcasts as ATen's does
    }
  }
  // The in-place op's add is a sum into `other`, which must not be read as
  // an operand while it is written.
  const bool into_other = fusion.into_other && other != nullptr &&
                          fusion.binary == ops::BinaryPost::kAdd &&
                          !shares_storage(*other, &input) && !shares_storage(*other, &weight) &&
                          !shares_storage(*other, bias);
  if (fusion.into_other && !into_other) return nullptr;

  Fusion f;
  f.sum = into_other;
  if (fusion.unary && !eltwise_of(*fusion.unary, f.eltwise)) return nullptr;
  DnnlTensor src = as_dnnl(input), wei = weights_as_dnnl(c, weight);
  const std::vector<int64_t> out_strides = channels_last_strides(c.out_sizes);
  DnnlTensor dst = into_other ? as_dnnl(*other)
                              : DnnlTensor{nullptr, TensorDims(c.out_sizes.begin(), c.out_sizes.end()),
                                           TensorDims(out_strides.begin(), out_strides.end())};
  canonicalize_all(c, src, wei, dst);
  if (other != nullptr && !into_other) {
    f.binary = binary_of(fusion.binary);
    f.other = as_dnnl(*other);
    canonicalize_strides(f.other, 1);
    // oneDNN 2.6's jit kernels read a full-size binary operand as if it had
    // dst's layout (a plain one beside a channels-last dst gave wrong values).
    if (f.other.strides != dst.strides) return nullptr;
  }
  DerivedCache* derived = weight.storage()->derived();
  std::shared_ptr<const ConvPrimitive> prim;
  const Key* key = nullptr;  // the primitive's, in onednn::key_buffer(0)
  try {
    prim = get_primitive(c, src, wei, bias != nullptr, dst, derived != nullptr, &key, &f);
  } catch (const dnnl::error&) {
    return nullptr;  // oneDNN refused the views or the post-ops: the unfused path
  }
  if (prim == nullptr) return nullptr;
  std::unique_ptr<TensorImpl> out =
      into_other ? make_tensor(other->storage(), other->sizes(), other->strides(),
                               other->storage_offset(), other->dtype(), kFn)
                 : empty_strided(c.out_sizes, out_strides, ScalarType::Float32, cpu_device(), kFn);
  dst.data = out->data_ptr();
  const void* reordered_wei = nullptr;
  if (derived != nullptr) {
    reordered_wei = AOTRT_CHECK_DNNL(kFn, constant_weight(c, *prim, *key, weight, wei, *derived));
  }
  // The kernel reads the weight as it is: a deferred one's plain bytes are made now.
  if (reordered_wei == nullptr && wei.data == nullptr) wei.data = weight.data_ptr();
  AOTRT_CHECK_DNNL(kFn, (execute(*prim, src, wei, bias != nullptr ? bias->data_ptr() : nullptr, dst,
                            reordered_wei, f.binary ? other->data_ptr() : nullptr),
                    0));
  fused_calls.fetch_add(1, std::memory_order_relaxed);
  return out;
}

std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params) {
  const Conv c = resolve(input, weight, bias, params);
  const ScalarType dtype = input.dtype();
  const bool direct = dtype == ScalarType::Float64 || is_aten_integral(dtype);
  AOTRT_CHECK(direct || dtype == ScalarType::Float32 || dtype == ScalarType::BFloat16 ||
                  dtype == ScalarType::Float16,
              kUnsupported, kFn, ": dtype ", dtype_name(dtype),
              " is not served; oneDNN convolves float32 (bfloat16 and float16 are computed "
              "in float32), a direct loop float64 and the integer types");
  auto out = empty_strided(c.out_sizes, output_strides(c, input, weight), dtype, cpu_device(),
                           kFn);
  if (out->numel() == 0) return out;
  if (direct) {
    convolve_direct(c, input, weight, bias, *out);
    return out;
  }

  // Half types are computed in float32 temporaries and rounded once into out.
  // A stride-0 (expanded) view is packed too: no fast oneDNN kernel reads it
  // in place, and a reorder from it would make the same copy.
  const bool f32 = dtype == ScalarType::Float32;
  std::unique_ptr<TensorImpl> in_tmp, w_tmp, b_tmp, out_tmp;
  const TensorImpl* in = &input;
  const TensorImpl* w = &weight;
  if (!f32 || has_stride_zero(input)) in = (in_tmp = dense_f32(input)).get();
  if (!f32 || has_stride_zero(weight)) w = (w_tmp = dense_f32(weight)).get();
  void* bias_data = nullptr;
  if (bias != nullptr) {
    const bool dense = bias->strides()[0] == 1 || bias->sizes()[0] == 1;
    bias_data = f32 && dense ? bias->data_ptr() : (b_tmp = dense_f32(*bias))->data_ptr();
  }
  const TensorImpl* result = out.get();
  if (!f32) {
    out_tmp = empty_strided(out->sizes(), out->strides(), ScalarType::Float32, cpu_device(), kFn);
    result = out_tmp.get();
  }

  DnnlTensor src = as_dnnl(*in), wei = weights_as_dnnl(c, *w), dst = as_dnnl(*result);
  canonicalize_all(c, src, wei, dst);
  if (std::any_of(c.crop.begin(), c.crop.end(), [](int64_t v) { return v > 0; })) {
    // See Note [Transposed output padding]: bias everywhere, then the window.
    fill_with_bias(*result, bias_data);
    for (int i = 0; i < c.k; ++i) dst.dims[i + 2] -= c.crop[i];
  }
  // Note [Constant weights]: only the constant's own memory, read as it is.
  DerivedCache* derived = w == &weight ? weight.storage()->derived() : nullptr;
  std::shared_ptr<const ConvPrimitive> prim;
  const Key* key = nullptr;  // the primitive's, in onednn::key_buffer(0)
  try {
    prim = get_primitive(c, src, wei, bias != nullptr, dst, derived != nullptr, &key);
  } catch (const dnnl::error&) {
    derived = nullptr;
    // oneDNN refused the views' strides: read packed copies instead.
    in_tmp = dense_f32(*in);
    in = in_tmp.get();
    w_tmp = dense_f32(*w);
    w = w_tmp.get();
    src = as_dnnl(*in);
    wei = weights_as_dnnl(c, *w);
    canonicalize_all(c, src, wei, dst);
    prim = AOTRT_CHECK_DNNL(kFn, get_primitive(c, src, wei, bias != nullptr, dst, false, &key));
  }
  const void* reordered_wei = nullptr;
  if (derived != nullptr) {
    reordered_wei = AOTRT_CHECK_DNNL(kFn, constant_weight(c, *prim, *key, weight, wei, *derived));
  }
  // The kernel reads the weight as it is: a deferred one's plain bytes are made now.
  if (reordered_wei == nullptr && wei.data == nullptr) wei.data = w->data_ptr();
  AOTRT_CHECK_DNNL(kFn, (execute(*prim, src, wei, bias_data, dst, reordered_wei), 0));
  if (!f32) copy_strided(strided_view(*out), strided_view(*out_tmp));
  return out;
}

}  // namespace aotrt::cpu
