// The fused oneDNN linears of freezing=True packages (_linear_pointwise and
// its _binary, Note [Fused oneDNN ops] in ops/linear.h) as one oneDNN matmul
// primitive.
//
// Note [Fused linears]
// out[M, N] = unary(binary(x[M, K] @ W^T + bias, other)) run as a gemm and
// then one pass per post-op writes and rereads the whole result once per
// pass, and on an LLM decoder's small linears (32x64 @ 64x64) the passes and
// dnnl_sgemm's own per-call packing cost as much as the products. So, as the
// fused convolutions do (Note [Fused convolutions] in cpu/conv.cpp), the
// linear is one matmul primitive with the bias, then the binary (reading
// `other` in place), then the activation's eltwise post-ops (eltwise_of:
// where oneDNN's values differ from ATen's, no fusion). Operands:
// - x [..., K] as [M, K] in its own strides where its leading dims collapse
//   into one (row-major, a column slice, a transposed view);
// - W [N, K] read in place as [K, N] with strides (W.stride(1), W.stride(0)),
//   or, where its storage is constant (a freezing package's weights are),
//   in the layout oneDNN picks for it ("any"), reordered once into the
//   storage's DerivedCache (Note [Constant weights] in cpu/conv.cpp). The
//   copy is keyed on that layout and the view, not on the primitive, so a
//   model run at many M keeps one copy per layout, not one per M;
// - the result new row-major [..., N]; bias [N] dense; `other` only with
//   the result's strides (the fused convolutions found oneDNN 2.6 reading a
//   binary operand with dst's strides whatever its descriptor said).
// float32, and bfloat16 as ATen's mkldnn linear computes it (bf16 operands,
// f32 accumulation and post-ops, one rounding of the result). Anything else,
// a view oneDNN reads only with its reference kernel ("ref", never run:
// Note [oneDNN layouts]), an empty problem or a oneDNN failure returns null,
// and ops::linear_pointwise runs the gemm and the post-ops apart.
// Threads follow the float32 gemm's rule (Note [BLAS threads] in
// cpu/matmul.cpp): a small product runs on the calling thread; the thread
// count is part of a primitive's key, since oneDNN plans its work for the
// threads it sees when it makes the primitive. Primitives are cached per key
// (PrimitiveCache) with their bound arguments (Note [Bound arguments]), so a
// steady-state call allocates the result and, when the kernel wants one, its
// scratchpad (a cached block of the CPU allocator), and nothing else.
// Measured on this 2-core avx512 machine, one thread, us per call (the bare
// primitive; a second run repeated the ratios): 32x64x64 dnnl_sgemm 4.6-6.8,
// matmul with W in place ~3.1, with W in oneDNN's layout ~2.7; 32x128x64:
// 9.6 / 5-7 / 2.4-5.6.
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "core/derived_cache.h"
#include "core/error.h"
#include "core/storage.h"
#include "core/view.h"
#include "cpu/cpu.h"
#include "cpu/onednn.h"
#include "cpu/ops.h"

namespace aotrt::cpu {
namespace {

constexpr const char* kFn = "aoti_torch_cpu__linear_pointwise";

using onednn::Dims;
using onednn::Key;
using dt = dnnl::memory::data_type;

std::atomic<int64_t> weights_cached{0};  // LinearCacheStats::weights_cached
std::atomic<int64_t> fused_calls{0};     // LinearCacheStats::fused_calls

// A matrix as oneDNN sees it: dims and strides in elements.
struct Matrix {
  void* data = nullptr;
  std::array<int64_t, 2> dims{}, strides{};
};

// t [..., C] as a [R, C] matrix with one row stride, where its leading dims
// collapse into one; nullopt otherwise.
std::optional<Matrix> as_matrix(const TensorImpl& t) {
  const auto sizes = t.sizes(), strides = t.strides();
  const size_t last = sizes.size() - 1;
  int64_t rows = 1, row_stride = 0;
  bool have = false;  // row_stride is that of the innermost leading dim of size > 1
  int64_t next_extent = 0;
  for (size_t d = last; d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (!have) {
      row_stride = strides[d];
      have = true;
    } else if (strides[d] != next_extent) {
      return std::nullopt;
    }
    next_extent = strides[d] * sizes[d];
    rows *= sizes[d];
  }
  const int64_t cols = sizes[last];
  Matrix m{t.data_ptr(), {rows, cols}, {have ? row_stride : cols, strides[last]}};
  // A dim of size > 1 with stride 0 is a broadcast no fast kernel reads.
  if ((rows > 1 && m.strides[0] == 0) || (cols > 1 && m.strides[1] == 0)) return std::nullopt;
  onednn::canonicalize_strides(m.dims, m.strides, 0);  // row- or column-major
  return m;
}

std::optional<dt> dnnl_type(ScalarType t) {
  if (t == ScalarType::Float32) return dt::f32;
  if (t == ScalarType::BFloat16) return dt::bf16;
  return std::nullopt;
}

// The post-ops of one fused linear.
struct Fusion {
  std::optional<dnnl::algorithm> binary;  // src1 = other, with dst's strides
  std::vector<onednn::Eltwise> eltwise;   // after the binary
};

struct Problem {
  dt type = dt::f32;
  Matrix src, wei, dst;
  bool has_bias = false;
  bool constant_weights = false;
  int threads = 1;
  Fusion fusion;
};

// The key, built in k (cleared first).
void make_key(Key& k, const Problem& p) {
  k.clear();
  k.insert(k.end(), {static_cast<int64_t>(p.type), p.has_bias, p.constant_weights, p.threads});
  for (const Matrix* m : {&p.src, &p.wei, &p.dst}) {
    k.insert(k.end(), m->dims.begin(), m->dims.end());
    k.insert(k.end(), m->strides.begin(), m->strides.end());
  }
  k.push_back(p.fusion.binary ? static_cast<int64_t>(*p.fusion.binary) : -1);
  for (const onednn::Eltwise& e : p.fusion.eltwise) {
    k.insert(k.end(), {static_cast<int64_t>(e.alg), onednn::float_bits(e.alpha),
                       onednn::float_bits(e.beta)});
  }
}

// One fused linear's primitive, made once per key.
struct LinearPrimitive {
  dnnl::primitive matmul;
  onednn::ArgDescs d;                  // other_arg: the one binary post-op's source
  dnnl::memory::desc user_wei;
  std::optional<onednn::Reorder> wei_reorder;  // user_wei -> d.wei (constant weights only)
  onednn::BoundArgs bound;
};

dnnl::primitive_desc describe(const Problem& p, const dnnl::memory::desc& src,
                              const dnnl::memory::desc& wei, const dnnl::memory::desc& bias,
                              const dnnl::memory::desc& dst, const dnnl::memory::desc& other) {
  dnnl::primitive_attr attr = onednn::user_scratchpad_attr();
  dnnl::post_ops ops;
  if (p.fusion.binary) ops.append_binary(*p.fusion.binary, other);
  for (const onednn::Eltwise& e : p.fusion.eltwise) ops.append_eltwise(1.f, e.alg, e.alpha, e.beta);
  attr.set_post_ops(ops);
  dnnl::matmul::desc d(src, wei, bias, dst);
  return dnnl::matmul::primitive_desc(d, attr, onednn::engine(), true);
}

// The primitive, or null where only the reference kernel serves it.
std::shared_ptr<const LinearPrimitive> create_primitive(const Problem& p) {
  auto lp = std::make_shared<LinearPrimitive>();
  auto desc = [&](const Matrix& m) {
    return dnnl::memory::desc(Dims(m.dims.begin(), m.dims.end()), p.type,
                              Dims(m.strides.begin(), m.strides.end()));
  };
  lp->d.src = desc(p.src);
  lp->user_wei = desc(p.wei);
  lp->d.dst = desc(p.dst);
  if (p.has_bias) lp->d.bias = dnnl::memory::desc({1, p.dst.dims[1]}, p.type, Dims{p.dst.dims[1], 1});
  if (p.fusion.binary) lp->d.other = lp->d.dst;
  lp->d.other_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
  auto usable = [](const dnnl::primitive_desc& pd) { return pd && !onednn::is_reference(pd); };
  dnnl::primitive_desc pd;
  if (p.constant_weights) {
    const dnnl::memory::desc any(Dims(p.wei.dims.begin(), p.wei.dims.end()), p.type,
                                 dnnl::memory::format_tag::any);
    pd = describe(p, lp->d.src, any, lp->d.bias, lp->d.dst, lp->d.other);
  }
  if (!usable(pd)) pd = describe(p, lp->d.src, lp->user_wei, lp->d.bias, lp->d.dst, lp->d.other);
  if (!usable(pd)) return nullptr;
  lp->d.wei = pd.weights_desc();
  lp->d.scratch = pd.scratchpad_desc();
  size_t reorder_scratch = 0;
  lp->wei_reorder = onednn::make_reorder(lp->user_wei, lp->d.wei, reorder_scratch);
  lp->matmul = dnnl::primitive(pd);
  return lp;
}

onednn::PrimitiveCache<LinearPrimitive>& cache() {
  static onednn::PrimitiveCache<LinearPrimitive> c;
  return c;
}

std::shared_ptr<const LinearPrimitive> get_primitive(const Problem& p) {
  Key& key = onednn::key_buffer(0);  // Note [Per-call allocations] in cpu/conv.cpp
  make_key(key, p);
  return cache().find_or_make(key, [&] { return create_primitive(p); });
}

// Note [Constant weights]: W in the primitive's layout, kept in its
// storage's cache under that layout and W's view.
const void* constant_weight(const LinearPrimitive& lp, const TensorImpl& weight,
                            const Matrix& wei, DerivedCache& derived) {
  Key& key = onednn::key_buffer(0);  // the primitive's key is no longer needed
  key.assign({wei.dims[0], wei.dims[1], wei.strides[0], wei.strides[1]});
  if (!onednn::append_layout(key, lp.d.wei)) return nullptr;
  return onednn::constant_weight(onednn::WeightUser::kLinear, key, weight, wei.data,
                                 onednn::BlockedAxes::kReversed2d, lp.user_wei, lp.d.wei, *lp.wei_reorder, derived, weights_cached,
                                 kFn);
}

// Runs lp; wei is in lp.d.wei's layout, bias and other null when the key has none.
void execute(const LinearPrimitive& lp, void* src, const void* wei, const void* bias, void* dst,
             const void* other) {
  std::unique_ptr<TensorImpl> scratch;
  if (lp.d.scratch.get_size() > 0) scratch = onednn::scratch_buffer(lp.d.scratch.get_size(), kFn);
  lp.bound.run(lp.matmul, lp.d, src, wei, bias, dst, other, scratch ? scratch->data_ptr() : nullptr);
}

std::unique_ptr<TensorImpl> fuse(const TensorImpl& x, const TensorImpl& weight,
                                 const TensorImpl* bias, const ops::LinearFusion& fusion) {
  const auto type = dnnl_type(x.dtype());
  if (!type || !x.device().is_cpu() || !weight.device().is_cpu()) return nullptr;
  const int64_t k = x.sizes().back(), n = weight.sizes()[0];
  std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = n;
  const int64_t m = std::accumulate(x.sizes().begin(), x.sizes().end() - 1, int64_t{1},
                                    std::multiplies<>());
  if (m == 0 || k == 0 || n == 0) return nullptr;  // nothing for oneDNN to do

  Problem p;
  p.type = *type;
  const auto src = as_matrix(x);
  if (!src) return nullptr;
  p.src = *src;
  // W [N, K] read as [K, N]; null while W is a deferred _mkldnn constant.
  p.wei = Matrix{const_cast<void*>(onednn::data_unless_deferred(weight)), {k, n},
                 {weight.strides()[1], weight.strides()[0]}};
  if ((k > 1 && p.wei.strides[0] == 0) || (n > 1 && p.wei.strides[1] == 0)) return nullptr;
  onednn::canonicalize_strides(p.wei.dims, p.wei.strides, 0);
  p.dst = Matrix{nullptr, {m, n}, {n, 1}};
  onednn::canonicalize_strides(p.dst.dims, p.dst.strides, 0);
  if (bias != nullptr) {
    if (!bias->device().is_cpu() || (n > 1 && bias->strides()[0] != 1)) return nullptr;
    p.has_bias = true;
  }
  const TensorImpl* other = fusion.other;
  if (other != nullptr) {
    if (other->dtype() != x.dtype() || !other->device().is_cpu() ||
        !std::equal(other->sizes().begin(), other->sizes().end(), out_sizes.begin(),
                    out_sizes.end())) {
      return nullptr;  // the unfused path refuses or converts as ATen's does
    }
    const auto o = as_matrix(*other);
    if (!o || o->strides != p.dst.strides) return nullptr;  // Note [Fused linears]
    p.fusion.binary = onednn::binary_of(fusion.binary);
  }
  if (fusion.unary && !onednn::eltwise_of(*fusion.unary, p.fusion.eltwise)) return nullptr;
  DerivedCache* derived = weight.storage()->derived();
  p.constant_weights = derived != nullptr;

  const double macs = static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  const double bytes = static_cast<double>(element_size(x.dtype())) *
                       (static_cast<double>(m) * static_cast<double>(k) +
                        static_cast<double>(k) * static_cast<double>(n));
  const onednn::OneOmpThread one_thread(onednn::gemm_on_calling_thread(macs, bytes));
  p.threads = omp_get_max_threads();
  const auto lp = get_primitive(p);
  if (lp == nullptr) return nullptr;
  const void* wei = p.wei.data;
  if (lp->wei_reorder) {
    // Only a constant weight is built with oneDNN's layout (create_primitive).
    wei = constant_weight(*lp, weight, p.wei, *derived);
    if (wei == nullptr) return nullptr;
  } else if (wei == nullptr) {
    wei = weight.data_ptr();  // read as it is: a deferred constant's plain bytes are made now
  }
  auto out = empty_strided(out_sizes, contiguous_strides(out_sizes), x.dtype(), cpu_device(), kFn);
  execute(*lp, p.src.data, wei, bias != nullptr ? bias->data_ptr() : nullptr, out->data_ptr(),
          other != nullptr ? other->data_ptr() : nullptr);
  fused_calls.fetch_add(1, std::memory_order_relaxed);
  return out;
}

}  // namespace

std::unique_ptr<TensorImpl> linear_fused(const TensorImpl& x, const TensorImpl& weight,
                                         const TensorImpl* bias, const ops::LinearFusion& fusion) {
  try {
    return fuse(x, weight, bias, fusion);
  } catch (const dnnl::error&) {
    return nullptr;  // oneDNN refused the views or the post-ops: the unfused path
  }
}

LinearCacheStats linear_cache_stats() {
  LinearCacheStats s = cache().stats();
  s.weights_cached = weights_cached.load(std::memory_order_relaxed);
  s.fused_calls = fused_calls.load(std::memory_order_relaxed);
  return s;
}

}  // namespace aotrt::cpu
