#include "cpu/onednn.h"
#include "core/view.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "core/onednn_md.h"
#include "core/storage.h"
#include "cpu/cpu.h"

namespace aotrt::cpu::onednn {

namespace {
constexpr const char* kFn = "aotrt oneDNN";
}  // namespace

const dnnl::engine& engine() {
  static const dnnl::engine e = AOTRT_CHECK_DNNL(kFn, dnnl::engine(dnnl::engine::kind::cpu, 0));
  return e;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream s = AOTRT_CHECK_DNNL(kFn, dnnl::stream(engine()));
  return s;
}

// Note [oneDNN's ISA]
// oneDNN picks its kernels for the host's vector ISA, and two differences
// change what aotrt may hand it:
// - int8: without VNNI (AVX-512 VNNI, AVX-VNNI) or AMX, oneDNN 2.6's int8
//   kernels multiply u8 by s8 with vpmaddubsw, which saturates the sum of two
//   products to int16 (255 * 127 * 2 > 32767) and says nothing: measured on an
//   AMD EPYC with AVX2, up to 1 in 10 elements off by up to 30% against the
//   float32 path. There the int8 primitives serve no call and the quantized
//   ops run the float32 path (exact, slower).
// - AVX-512: oneDNN 2.6 has bfloat16 matmuls only from AVX-512 (avx512_core)
//   on, and on AVX2 serves a few convolutions (3 input channels NCHW, a 1x1
//   inner product of 8 outputs) only with gemm on the plain weight; the
//   callers then take their unfused path, which is the same gemm.
// The effective ISA is oneDNN's own (it honours ONEDNN_MAX_CPU_ISA); its
// values are nested bit masks (dnnl_types.h).
bool isa_has(dnnl::cpu_isa want) {
  const auto have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bits = static_cast<unsigned>(want);
  return (have & bits) == bits;
}

bool is_reference(const dnnl::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

std::unique_ptr<TensorImpl> scratch_buffer(size_t bytes, const char* fn) {
  const int64_t sizes[] = {static_cast<int64_t>(bytes)}, strides[] = {1};
  return empty_strided(sizes, strides, ScalarType::UInt8, cpu_device(), fn);
}

bool gemm_on_calling_thread(double macs, double operand_bytes) {
  return macs < kThreadedGemmMacs && operand_bytes < kStreamedGemmBytes;
}

OneOmpThread::OneOmpThread(bool active) : saved_(active ? omp_get_max_threads() : 0) {
  if (active) omp_set_num_threads(1);
}
OneOmpThread::~OneOmpThread() {
  if (saved_ > 0) omp_set_num_threads(saved_);
}

bool eltwise_of(const ops::PostOp& op, std::vector<Eltwise>& out) {
  using A = ops::Activation;
  using alg = dnnl::algorithm;
  const float a = static_cast<float>(op.a), b = static_cast<float>(op.b);
  switch (op.act) {
    case A::kRelu: out.push_back({alg::eltwise_relu}); return true;
    case A::kLeakyRelu: out.push_back({alg::eltwise_relu, a}); return true;
    case A::kHardtanh:
      if (!(a <= b)) return false;  // clamp's max wins there; oneDNN's clip differs
      out.push_back({alg::eltwise_clip, a, b});
      return true;
    case A::kGelu: out.push_back({alg::eltwise_gelu_erf}); return true;
    case A::kGeluTanh: out.push_back({alg::eltwise_gelu_tanh}); return true;
    case A::kSilu: out.push_back({alg::eltwise_swish, 1.f}); return true;
    case A::kHardswish: out.push_back({alg::eltwise_hardswish}); return true;
    case A::kHardsigmoid:  // relu6(x + 3) / 6
      out.push_back({alg::eltwise_linear, 1.f / 6, 0.5f});
      out.push_back({alg::eltwise_clip, 0.f, 1.f});
      return true;
    case A::kSigmoid: out.push_back({alg::eltwise_logistic}); return true;
    case A::kTanh: out.push_back({alg::eltwise_tanh}); return true;
  }
  return false;
}

dnnl::algorithm binary_of(ops::BinaryPost op) {
  switch (op) {
    case ops::BinaryPost::kAdd: return dnnl::algorithm::binary_add;
    case ops::BinaryPost::kSub: return dnnl::algorithm::binary_sub;
    case ops::BinaryPost::kMul: return dnnl::algorithm::binary_mul;
    case ops::BinaryPost::kDiv: break;
  }
  return dnnl::algorithm::binary_div;
}

int64_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<int64_t>(u);
}

void canonicalize_strides(std::span<const int64_t> dims, std::span<int64_t> strides,
                          size_t channel_dim) {
  const size_t n = dims.size();
  AOTRT_CHECK(n <= DNNL_MAX_NDIMS && strides.size() == n, kInternal, kFn, ": ", n,
              " dims to canonicalize");
  // The dims from innermost out: the plain order, then channel_dim innermost.
  size_t plain[DNNL_MAX_NDIMS], channels_last[DNNL_MAX_NDIMS];
  for (size_t i = 0, c = 1; i < n; ++i) {
    const size_t d = n - 1 - i;
    plain[i] = d;
    if (d != channel_dim) channels_last[c++] = d;
  }
  channels_last[0] = channel_dim;
  for (const size_t* order : {plain, channels_last}) {
    int64_t dense[DNNL_MAX_NDIMS];
    int64_t step = 1;
    for (size_t i = 0; i < n; ++i) {
      dense[order[i]] = step;
      step = checked_mul(step, dims[order[i]], "oneDNN strides");
    }
    bool same = true;
    for (size_t d = 0; d < n; ++d) same = same && (dims[d] == 1 || dense[d] == strides[d]);
    if (same) {
      std::copy(dense, dense + n, strides.begin());
      return;
    }
  }
}

std::optional<Reorder> make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                                    size_t& scratch) {
  if (from == to) return std::nullopt;
  dnnl::reorder::primitive_desc pd(engine(), from, engine(), to, user_scratchpad_attr());
  scratch = std::max(scratch, pd.scratchpad_desc().get_size());
  return Reorder{dnnl::reorder(pd), pd.scratchpad_desc()};
}

bool append_layout(Key& k, const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return false;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  k.insert(k.end(), {d.ndims, static_cast<int64_t>(d.data_type), d.offset0, b.inner_nblks});
  k.insert(k.end(), {static_cast<int64_t>(d.extra.flags), d.extra.compensation_mask,
                     float_bits(d.extra.scale_adjust), d.extra.asymm_compensation_mask});
  for (int i = 0; i < d.ndims; ++i) {
    k.insert(k.end(), {d.dims[i], d.padded_dims[i], d.padded_offsets[i], b.strides[i]});
  }
  for (int i = 0; i < b.inner_nblks; ++i) k.insert(k.end(), {b.inner_blks[i], b.inner_idxs[i]});
  return true;
}

namespace {

struct CachedWeight {
  dnnl::memory::desc md;
  std::unique_ptr<TensorImpl> bytes;  // null: the weight is read in place
  const void* ptr = nullptr;          // bytes' data, or the source's bytes
};

// Note [Opaque weights in place]
// A _mkldnn constant whose storage is not made yet (Note [Deferred storages]
// in core/storage.h) is described to oneDNN 2.6 as its own blocked layout:
// the decoded descriptor (Note [Serialized oneDNN descriptors] in
// core/onednn_md.h) written into a dnnl_memory_desc_t, with the dims of the
// primitive's user descriptor of the weight (`axes` says how they map to
// torch's: the same for a convolution, whose grouped weight is [g, O/g, I/g,
// k...] in both; reversed for a linear, which reads W [N, K] as [K, N]). When
// that equals the layout the primitive wants, which it does where oneDNN 2.6
// makes the choice torch's oneDNN made at export (the same machine), the
// primitive reads the model's bytes as they are; else they are reordered
// from it into the cache. Either way the plain copy is never made: a frozen
// resnet50 held its weights three times (the model's blocked bytes, the
// plain copy, the reordered one) and made two copies at load and first run.
// Empty where it cannot be described (another oneDNN major, dims that do
// not match, a data type other than the weight's).
dnnl::memory::desc blocked_md(const OnednnBlockedSource& source, const dnnl::memory::desc& user,
                              BlockedAxes axes) {
#if DNNL_VERSION_MAJOR == 2
  const OnednnBlockedDesc& d = source.desc();
  const size_t nd = d.dims.size();
  if (axes == BlockedAxes::kNone || nd == 0 || nd > DNNL_MAX_NDIMS ||
      d.data_type != static_cast<int32_t>(user.data.data_type)) {
    return {};
  }
  dnnl_memory_desc_t md{};
  md.ndims = static_cast<int>(nd);
  md.data_type = user.data.data_type;
  md.offset0 = d.offset0;
  md.format_kind = dnnl_blocked;
  for (size_t i = 0; i < nd; ++i) {
    md.dims[i] = d.dims[i];
    md.padded_dims[i] = d.padded_dims[i];
    md.format_desc.blocking.strides[i] = d.strides[i];
  }
  md.format_desc.blocking.inner_nblks = static_cast<int>(d.inner_blks.size());
  for (size_t j = 0; j < d.inner_blks.size(); ++j) {
    md.format_desc.blocking.inner_blks[j] = d.inner_blks[j];
    md.format_desc.blocking.inner_idxs[j] = d.inner_idxs[j];
  }
  dnnl::memory::desc out(md);
  if (axes == BlockedAxes::kReversed2d) {
    if (nd != 2) return {};
    out = out.permute_axes({1, 0});
  }
  if (out.dims() != user.dims()) return {};
  return out;
#else
  (void)source, (void)user, (void)axes;
  return {};
#endif
}

// The source of `weight`'s storage while it is not made, if the view is the
// whole plain tensor it describes.
const OnednnBlockedSource* pending_blocked(const TensorImpl& weight) {
  const auto* source = dynamic_cast<const OnednnBlockedSource*>(weight.storage()->pending_source());
  if (source == nullptr || weight.storage_offset() != 0 || weight.dtype() != source->dtype() ||
      !std::equal(weight.sizes().begin(), weight.sizes().end(), source->sizes().begin(),
                  source->sizes().end()) ||
      !std::equal(weight.strides().begin(), weight.strides().end(), source->strides().begin(),
                  source->strides().end())) {
    return nullptr;
  }
  return source;
}

void run_reorder(const dnnl::reorder& prim, const dnnl::memory::desc& scratch_md,
                 const dnnl::memory::desc& from, const void* data, const dnnl::memory::desc& to,
                 void* out, const char* fn) {
  const dnnl::engine& eng = engine();
  auto scratch = scratch_buffer(scratch_md.get_size(), fn);
  dnnl::memory src(from, eng, const_cast<void*>(data)), dst(to, eng, out);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  if (scratch_md.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_md, eng, scratch->data_ptr()));
  }
  dnnl::stream& s = thread_stream();
  prim.execute(s, args);
  s.wait();
}

}  // namespace

Key& key_buffer(int slot) {
  thread_local std::array<Key, 2> buffers;
  return buffers.at(static_cast<size_t>(slot));
}

const void* data_unless_deferred(const TensorImpl& t) {
  return t.storage()->pending_source() != nullptr ? nullptr : t.data_ptr();
}

const void* constant_weight(WeightUser user, const Key& primitive_key, const TensorImpl& weight,
                            const void* data, BlockedAxes axes, const dnnl::memory::desc& from,
                            const dnnl::memory::desc& to, const Reorder& reorder,
                            DerivedCache& derived, std::atomic<int64_t>& made, const char* fn) {
  Key& key = key_buffer(1);
  key.clear();
  key.push_back(static_cast<int64_t>(user));
  key.insert(key.end(), primitive_key.begin(), primitive_key.end());
  key.push_back(weight.storage_offset() * static_cast<int64_t>(weight.itemsize()));
  if (auto hit = std::static_pointer_cast<const CachedWeight>(derived.find(key))) {
    if (hit->md == to) return hit->ptr;
    return nullptr;  // not expected: a key names one layout
  }
  auto entry = std::make_shared<CachedWeight>();
  entry->md = to;
  dnnl::memory::desc blocked;
  const OnednnBlockedSource* source = pending_blocked(weight);
  if (source != nullptr) blocked = blocked_md(*source, from, axes);
  if (blocked && blocked == to) {
    entry->ptr = source->data();  // Note [Opaque weights in place]
  } else {
    entry->bytes = scratch_buffer(to.get_size(), fn);
    entry->ptr = entry->bytes->data_ptr();
    if (blocked) {
      const dnnl::reorder::primitive_desc pd(engine(), blocked, engine(), to);
      run_reorder(dnnl::reorder(pd), pd.scratchpad_desc(), blocked, source->data(), to,
                  entry->bytes->data_ptr(), fn);
    } else {
      // The storage's bytes, made now if it was deferred.
      run_reorder(reorder.prim, reorder.scratch, from, data != nullptr ? data : weight.data_ptr(),
                  to, entry->bytes->data_ptr(), fn);
    }
  }
  auto kept = std::static_pointer_cast<const CachedWeight>(derived.insert(key, entry));
  if (kept == entry) made.fetch_add(1, std::memory_order_relaxed);
  return kept->ptr;
}

void BoundArgs::run(const dnnl::primitive& prim, const ArgDescs& d, void* src, const void* wei,
                    const void* bias, void* dst, const void* other, void* scratch) const {
  const dnnl::engine& eng = engine();
  auto bind = [&](Set& b) {
    b.src = dnnl::memory(d.src, eng, src);
    b.wei = dnnl::memory(d.wei, eng, const_cast<void*>(wei));
    b.dst = dnnl::memory(d.dst, eng, dst);
    b.args = {{DNNL_ARG_SRC, b.src}, {DNNL_ARG_WEIGHTS, b.wei}, {DNNL_ARG_DST, b.dst}};
    if (scratch != nullptr) {
      b.scratch = dnnl::memory(d.scratch, eng, scratch);
      b.args.emplace(DNNL_ARG_SCRATCHPAD, b.scratch);
    }
    if (bias != nullptr) {
      b.bias = dnnl::memory(d.bias, eng, const_cast<void*>(bias));
      b.args.emplace(DNNL_ARG_BIAS, b.bias);
    }
    if (other != nullptr) {
      b.other = dnnl::memory(d.other, eng, const_cast<void*>(other));
      b.args.emplace(d.other_arg, b.other);
    }
  };
  dnnl::stream& s = thread_stream();
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) {  // another thread runs the bound set: a set of our own
    Set mine;
    bind(mine);
    prim.execute(s, mine.args);
    s.wait();
    return;
  }
  if (!set_) {
    set_ = std::make_unique<Set>();
    bind(*set_);
  } else {
    Set& b = *set_;
    b.src.set_data_handle(src);
    b.wei.set_data_handle(const_cast<void*>(wei));
    b.dst.set_data_handle(dst);
    if (scratch != nullptr) b.scratch.set_data_handle(scratch);
    if (bias != nullptr) b.bias.set_data_handle(const_cast<void*>(bias));
    if (other != nullptr) b.other.set_data_handle(const_cast<void*>(other));
  }
  prim.execute(s, set_->args);
  s.wait();
}

}  // namespace aotrt::cpu::onednn

namespace aotrt::cpu {

bool onednn_int8_exact() {
  static const bool exact = onednn::isa_has(dnnl::cpu_isa::avx512_core_vnni) ||
                            onednn::isa_has(dnnl::cpu_isa::avx2_vnni);
  return exact;
}

bool onednn_avx512() {
  static const bool avx512 = onednn::isa_has(dnnl::cpu_isa::avx512_core);
  return avx512;
}

}  // namespace aotrt::cpu
