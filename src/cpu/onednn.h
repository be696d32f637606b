// What the CPU's oneDNN primitives share (cpu/conv.cpp's convolutions,
// cpu/linear.cpp's fused linears): the engine and per-thread streams, the
// check that quotes a failing call, fused post-ops as oneDNN spells them, a
// cache of primitives, and constant weights reordered once (Note [Constant
// weights]). Everything here throws aotrt::Error or dnnl::error; the
// callers decide which of them means "take the unfused path".
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/derived_cache.h"
#include "core/error.h"
#include "core/tensor.h"
#include "cpu/ops.h"
#include "ops/linear.h"

namespace aotrt::cpu::onednn {

using Dims = dnnl::memory::dims;

// Rethrows a oneDNN failure as aotrt::Error naming `fn` and quoting the
// call, file and line.
template <typename F>
auto call(const char* fn, const char* what, const char* file, int line, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    AOTRT_FAIL(kBackend, fn, ": oneDNN call `", what, "` failed at ", file, ":", line, ": ",
               e.what(), " (status ", static_cast<int>(e.status), ")");
  }
}
#define AOTRT_CHECK_DNNL(fn, expr) \
  ::aotrt::cpu::onednn::call(fn, #expr, __FILE__, __LINE__, [&] { return expr; })

// One engine for the process; streams are per thread (a stream is not
// thread-safe, an engine and a primitive are).
const dnnl::engine& engine();
dnnl::stream& thread_stream();

// Whether oneDNN's effective ISA holds all of `want` (Note [oneDNN's ISA]).
bool isa_has(dnnl::cpu_isa want);

// Note [oneDNN layouts] (cpu/conv.cpp): oneDNN's reference kernels
// ("ref:any", 1000x slower) are never run.
bool is_reference(const dnnl::primitive_desc& pd);

// A primitive attribute with a user scratchpad (a per-call scratchpad keeps
// primitives safe to run from several threads).
dnnl::primitive_attr user_scratchpad_attr();

// Scratch bytes from the CPU allocator, counted like any tensor.
std::unique_ptr<TensorImpl> scratch_buffer(size_t bytes, const char* fn);

// Note [Bound arguments] (cpu/conv.cpp) for a primitive of src, weights and dst
// with an optional bias, binary post-op source (`other`) and user scratchpad:
// the dnnl::memory objects and argument map are made on the first call and
// re-pointed at later calls' data; a call that finds them in use by another
// thread makes a set of its own. Used by the fused linear and the int8 ops.
struct ArgDescs {
  dnnl::memory::desc src, wei, bias, dst, other, scratch;  // bias, other: zero if none
  int other_arg = 0;                                       // other's DNNL_ARG_* key
};
class BoundArgs {
 public:
  // Runs prim on these pointers and waits; bias and other null when it has none.
  // oneDNN's errors come out as dnnl::error.
  void run(const dnnl::primitive& prim, const ArgDescs& d, void* src, const void* wei,
           const void* bias, void* dst, const void* other, void* scratch) const;

 private:
  struct Set {
    dnnl::memory src, wei, bias, dst, other, scratch;
    std::unordered_map<int, dnnl::memory> args;
  };
  mutable std::mutex mu_;
  mutable std::unique_ptr<Set> set_;
};

// Note [BLAS threads] (cpu/matmul.cpp).
inline constexpr double kThreadedGemmMacs = 4194304;   // 2^22: about 100 us on one core
inline constexpr double kStreamedGemmBytes = 1048576;  // one core's L2
// Whether a float32 gemm of `macs`
// multiply-adds reading `operand_bytes` runs on the calling thread.
bool gemm_on_calling_thread(double macs, double operand_bytes);

// One OpenMP thread for this thread's calls while it lives (when active):
// oneDNN takes its thread count from the calling thread's OpenMP one.
class OneOmpThread {
 public:
  explicit OneOmpThread(bool active);
  ~OneOmpThread();
  OneOmpThread(const OneOmpThread&) = delete;
  OneOmpThread& operator=(const OneOmpThread&) = delete;

 private:
  int saved_;
};

// --- Post-ops of the fused ops (Note [Fused oneDNN ops] in ops/linear.h) ---------------

struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};
// The activation as oneDNN eltwise post-ops appended to `out`, or false where
// oneDNN's would not give ATen's values.
bool eltwise_of(const ops::PostOp& op, std::vector<Eltwise>& out);
dnnl::algorithm binary_of(ops::BinaryPost op);
// A float's bits, for a key.
int64_t float_bits(float f);

// Note [Strides of size-1 dims] (cpu/conv.cpp): a view dense in the plain
// order or in the order with `channel_dim` innermost is described with that
// layout's own strides. At most DNNL_MAX_NDIMS dims; allocates nothing.
void canonicalize_strides(std::span<const int64_t> dims, std::span<int64_t> strides,
                          size_t channel_dim);

// --- The primitive cache -----------------------------------------------------------------

// Everything a primitive depends on; two problems with equal keys share one.
using Key = std::vector<int64_t>;
// This thread's key buffer `slot` (0 or 1), for building a key that is only
// looked up (Note [Per-call allocations] in cpu/conv.cpp): it keeps the
// capacity of earlier keys, so a steady-state lookup allocates nothing.
Key& key_buffer(int slot);
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// A small thread-safe LRU of primitives. Entries are shared, so one evicted
// while another thread runs it stays alive until that run ends.
template <class Primitive>
class PrimitiveCache {
 public:
  PrimitiveCache() { engine(); }  // made first, so it is destroyed after the primitives it made

  // The primitive for key, made by make() on a miss. make() may return null
  // (a problem oneDNN serves only with its reference kernel, or not at all):
  // that answer is cached too, so the next call asks oneDNN nothing.
  template <typename Make>
  std::shared_ptr<const Primitive> find_or_make(const Key& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        ++hits_;
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
      ++misses_;
    }
    std::shared_ptr<const Primitive> p = make();  // outside the lock: oneDNN takes its time
    insert(key, p);
    return p;
  }
  PrimitiveCacheStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {hits_, misses_, static_cast<int64_t>(lru_.size())};
  }

 private:
  void insert(const Key& key, std::shared_ptr<const Primitive> p) {
    std::lock_guard<std::mutex> lock(mu_);
    if (index_.count(key)) return;  // another thread made it first
    lru_.emplace_front(key, std::move(p));
    index_[key] = lru_.begin();
    if (lru_.size() > kCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  static constexpr size_t kCapacity = 256;
  using Entry = std::pair<Key, std::shared_ptr<const Primitive>>;
  std::mutex mu_;
  std::list<Entry> lru_;
  std::unordered_map<Key, typename std::list<Entry>::iterator, KeyHash> index_;
  int64_t hits_ = 0, misses_ = 0;
};

// Appends what identifies md's layout (dims, data type, blocking, and the
// extra data an int8 weight carries: compensation, scale adjustment) to k;
// false (k unchanged) for a layout that is not a blocked one.
bool append_layout(Key& k, const dnnl::memory::desc& md);

// --- Reorders and constant weights ---------------------------------------------------------

struct Reorder {
  dnnl::reorder prim;
  dnnl::memory::desc scratch;
};
// The reorder from one layout to another, none when they are equal; raises
// `scratch` to its scratchpad's size.
std::optional<Reorder> make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                                    size_t& scratch);

// Which primitives a DerivedCache entry belongs to: a conv key and a linear
// key never name the same entry.
enum class WeightUser : int64_t { kConvolution = 1, kLinear = 2, kQuantized = 3 };

// How a weight's user descriptor orders the dims of a _mkldnn constant's
// blocked layout (Note [Opaque weights in place] in cpu/onednn.cpp): as
// torch's (a convolution), reversed (a linear reading W [N, K] as [K, N]), or
// not to be read from it (the plain bytes are made instead).
enum class BlockedAxes { kSame, kReversed2d, kNone };

// Note [Constant weights] (cpu/conv.cpp): the constant weight `data` (whose
// layout is `from`, inside `weight`'s storage) in layout `to`, from the
// storage's DerivedCache or made into it now: reordered by `reorder`, or,
// for a _mkldnn constant not made yet, from its blocked bytes, which are used
// in place where they are in layout `to` already. `data` is null while
// weight's storage is deferred (data_unless_deferred). key names the
// primitive; the view's byte offset is added to it (in key_buffer(1)).
// `made` counts the entries kept. Null where the cache holds another layout
// under key (not expected).
const void* constant_weight(WeightUser user, const Key& key, const TensorImpl& weight,
                            const void* data, BlockedAxes axes, const dnnl::memory::desc& from,
                            const dnnl::memory::desc& to, const Reorder& reorder,
                            DerivedCache& derived, std::atomic<int64_t>& made, const char* fn);

// t's data, or null while its storage is deferred (Note [Deferred storages]
// in core/storage.h): what the oneDNN ops read a weight through, so that a
// _mkldnn constant is made plain only if a primitive reads it as it is.
const void* data_unless_deferred(const TensorImpl& t);

}  // namespace aotrt::cpu::onednn
