// Randomized model check of the view and ownership contract, on the CPU.
//
// Note [Random model]
// Every step makes one random call through the C ABI (a buffer from
// empty_strided or from_blob of a test-owned array, a reinterpret that is
// valid or not, as_strided, _alloc_from_pool, new_tensor_handle,
// assign_tensors[_out], delete, copy_ between random strided views of random
// buffers and dtypes, zero_, clone, clone_preserve_strides, and mm through
// aoti_torch_cpu_mm_out when libaotrt has it) and applies the same operation
// to a reference model written independently of aotrt:
//  - each buffer's memory as a shadow vector of element values;
//  - each storage's start in that memory, its size and its handle count;
//  - each handle's storage, sizes, strides and offset.
// The model predicts which calls succeed (ATen's rules for broadcasting and
// overlap, aotrt's bounds rules), and after EVERY step all of these must
// match exactly: every element of every live buffer, every storage's handle
// count (Storage::use_count, and the allocator's live bytes and blocks,
// which say when owned memory is freed), and aotrt::handle_live_count().
// A refused call must change nothing and leave its output untouched.
//
// Element values stay exact in every dtype used (float32, float64, int32,
// float16): buffers are filled with multiples of 1/4 in [-256, 256), and mm
// only reads views whose values are all such, so its sums are exact too.
//
// A failure prints the seed and the step. Replay with AOTRT_RANDOM_SEED=<seed>
// (default 20240611); AOTRT_RANDOM_STEPS sets the number of steps (default
// 100000, which CI runs).
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "conformance_backends.h"
#include "core/handles.h"
#include "core/tensor.h"
#include "robust_cases.h"

namespace aotrt::test {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressesAreQuarantined = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressesAreQuarantined = true;
#else
constexpr bool kAddressesAreQuarantined = false;
#endif
#else
constexpr bool kAddressesAreQuarantined = false;
#endif

using i128 = __int128;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
const Backend kCpu = built_backends()[0];

// --- The reference model's own element semantics --------------------------------

size_t itemsize_of(int32_t dt) { return dt == kF64 ? 8 : dt == kF16 ? 2 : 4; }

double load(int32_t dt, const char* p) {
  switch (dt) {
    case kF32: { float v; std::memcpy(&v, p, 4); return v; }
    case kF64: { double v; std::memcpy(&v, p, 8); return v; }
    case kI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    default: { _Float16 v; std::memcpy(&v, p, 2); return static_cast<float>(v); }
  }
}

void store(int32_t dt, char* p, double x) {
  switch (dt) {
    case kF32: { const float v = static_cast<float>(x); std::memcpy(p, &v, 4); return; }
    case kF64: std::memcpy(p, &x, 8); return;
    case kI32: { const int32_t v = static_cast<int32_t>(x); std::memcpy(p, &v, 4); return; }
    default: { const _Float16 v = static_cast<_Float16>(static_cast<float>(x)); std::memcpy(p, &v, 2); return; }
  }
}

// A value (exact in its source dtype) converted to dtype `to` as ATen does on
// x86-64: integers truncate, NaN or out of int32 range give INT32_MIN; float16
// goes through float32.
double convert(int32_t to, double v) {
  switch (to) {
    case kF32: return static_cast<float>(v);
    case kF64: return v;
    case kI32: {
      if (!(v > -2147483649.0 && v < 2147483648.0)) return -2147483648.0;
      return std::trunc(v);
    }
    default: return static_cast<float>(static_cast<_Float16>(static_cast<float>(v)));
  }
}

bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// ATen's is_non_overlapping_and_dense (an empty tensor counts as dense).
bool dense(const Dims& sizes, const Dims& strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims of size >= 2
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return true;
    if (sizes[d] >= 2) dims.push_back({strides[d], sizes[d]});
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t want = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != want) return false;
    want *= size;
  }
  return true;
}

// torch's clone() strides (empty_like, preserve_format): kept when dense,
// else dense strides in the same order of dims (checked against torch 2.13
// on 20000 random views while writing this test).
Dims clone_strides(const Dims& sizes, const Dims& strides) {
  if (dense(sizes, strides)) return strides;
  const size_t n = sizes.size();
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (size_t i = 1; i < n; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      const int64_t s0 = strides[perm[d0]], s1 = strides[perm[d1]];
      int cmp = 0;
      if (s0 != 0 && s1 != 0) cmp = s0 < s1 ? -1 : s0 > s1 ? 1 : (sizes[perm[d0]] > sizes[perm[d1]] ? 1 : 0);
      if (cmp < 0) break;
      if (cmp > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      }
    }
  }
  Dims out(n);
  int64_t run = 1;
  for (size_t i = 0; i < n; ++i) {
    out[perm[i]] = run;
    if (sizes[perm[i]] > 1) run *= sizes[perm[i]];
  }
  return out;
}

// --- Model state ----------------------------------------------------------------

struct Memory {
  int32_t dtype = kF32;
  bool owned = false;    // aotrt's allocator, else a test-owned array
  bool alive = true;
  int64_t nbytes = 0;
  char* base = nullptr;  // element 0; null when there are no bytes
  std::vector<double> shadow;
  std::vector<uint8_t> array;  // the bytes of a test-owned array
};

struct StorageM {
  int memory = -1;
  int64_t begin = 0;  // first element, in the memory
  int64_t numel = 0;  // elements of storage
  int refs = 0;
};

struct HandleM {
  AtenTensorHandle h = nullptr;
  bool defined = true;
  int storage = -1;
  Dims sizes, strides;
  int64_t offset = 0;
};

int64_t numel_of_dims(const Dims& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

class RandomModel {
 public:
  RandomModel(uint64_t seed, int64_t steps) : rng_(seed), seed_(seed), steps_(steps) {
    mm_ = reinterpret_cast<decltype(&aoti_torch_cpu_mm_out)>(dlsym(RTLD_DEFAULT, "aoti_torch_cpu_mm_out"));
  }

  void run() {
    base_ = counters(kCpu);
    // Test-owned arrays for from_blob: they outlive every handle.
    for (int32_t dt : {kF32, kF32, kI32, kF16}) {
      Memory m;
      m.dtype = dt;
      m.owned = false;
      m.shadow.resize(1024);
      m.array.resize(1024 * itemsize_of(dt));
      m.base = reinterpret_cast<char*>(m.array.data());
      for (size_t i = 0; i < m.shadow.size(); ++i) {
        m.shadow[i] = convert(dt, small_value());
        store(dt, m.base + i * itemsize_of(dt), m.shadow[i]);
      }
      arrays_.push_back(static_cast<int>(mem_.size()));
      live_mem_.insert(static_cast<int>(mem_.size()));
      mem_.push_back(std::move(m));
    }
    const auto start = std::chrono::steady_clock::now();
    for (step_ = 0; step_ < steps_ && !failed_; ++step_) {
      one_step();
      if (!failed_) check_all();
    }
    while (!failed_ && !hs_.empty()) {  // tear down in a random order, still checking
      delete_handle(pick(0, static_cast<int64_t>(hs_.size()) - 1));
      if (!failed_) check_all();
    }
    if (!failed_ && counters(kCpu) != base_) fail("counters did not return to where they started");
    // AddressSanitizer quarantines freed memory, so a TensorImpl's address
    // never comes back there: under ASan only the slot can be reused, and the
    // address case is left to the uninstrumented runs (ctest runs this test too).
    if (!failed_ && op_counts_["stale after reuse"] > 20 &&
        (op_counts_["stale after reuse (slot reused)"] == 0 ||
         (!kAddressesAreQuarantined && op_counts_["stale after reuse (address reused)"] == 0))) {
      fail("no deleted handle's slot and address were both ever reused: the stale-handle case tested nothing");
    }
    if (!failed_) {
      aotrt::testing::record_case("stale handles", "random model: a deleted handle used after a new handle took its slot and its "
                  "TensorImpl's address (get_numel, delete, copy_ both ways, new_tensor_handle)",
                  "refused every time, nothing changed",
                  std::to_string(op_counts_["stale after reuse"]) + " deletions, slot reused in " +
                      std::to_string(op_counts_["stale after reuse (slot reused)"]) + ", address in " +
                      std::to_string(op_counts_["stale after reuse (address reused)"]) + " (seed " +
                      std::to_string(seed_) + ")");
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[random model] seed %llu: %lld steps in %.1f s; %lld calls refused as predicted; mm %s\n",
                static_cast<unsigned long long>(seed_), static_cast<long long>(step_), secs,
                static_cast<long long>(refusals_), mm_ ? "exercised" : "NOT in libaotrt (skipped)");
    for (const auto& [name, n] : op_counts_) std::printf("[random model]   %-30s %lld\n", name.c_str(), static_cast<long long>(n));
  }

 private:
  // --- Randomness ---
  int64_t pick(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return static_cast<double>(rng_() >> 11) * 0x1.0p-53 < p; }
  double small_value() { return static_cast<double>(pick(-1024, 1023)) / 4.0; }
  static bool is_small(double v) { return std::fabs(v) <= 256 && v * 4 == std::trunc(v * 4); }

  // --- Failure ---
  void fail(const std::string& what) {
    if (failed_) return;
    failed_ = true;
    ADD_FAILURE() << "random model mismatch at seed " << seed_ << " step " << step_ << " (op "
                  << op_ << "): " << what << "\n  replay: AOTRT_RANDOM_SEED=" << seed_
                  << " AOTRT_RANDOM_STEPS=" << step_ + 1 << " aotrt_unit_tests --gtest_filter=RandomModel.*";
  }

  // --- Model helpers ---
  const StorageM& storage_of(const HandleM& h) const { return st_[h.storage]; }
  const Memory& memory_of(const HandleM& h) const { return mem_[st_[h.storage].memory]; }
  int32_t dtype_of_handle(const HandleM& h) const { return memory_of(h).dtype; }

  // Element positions (in the memory) of a view of storage s.
  std::vector<int64_t> positions(int s, const Dims& sizes, const Dims& strides, int64_t offset) const {
    std::vector<int64_t> pos = element_positions(sizes, strides);
    for (int64_t& p : pos) p += st_[s].begin + offset;
    return pos;
  }
  std::vector<int64_t> positions(const HandleM& h) const {
    return positions(h.storage, h.sizes, h.strides, h.offset);
  }

  // Whether a view fits storage s by aotrt's rules (Note [View span]).
  bool view_valid(int s, const Dims& sizes, const Dims& strides, i128 offset) const {
    if (offset < 0 || offset > kInt64Max) return false;
    i128 numel = 1, extent = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0 || strides[d] < 0) return false;
      numel *= sizes[d];
    }
    if (numel > kInt64Max) return false;
    const i128 item = static_cast<i128>(itemsize_of(mem_[st_[s].memory].dtype));
    if (numel == 0) return offset * item <= static_cast<i128>(st_[s].numel) * item;
    for (size_t d = 0; d < sizes.size(); ++d) extent += static_cast<i128>(sizes[d] - 1) * strides[d];
    const i128 end = offset + extent + 1;
    if (end > kInt64Max || end * item > kInt64Max) return false;
    return end <= st_[s].numel;
  }

  // Random sizes for a view: up to 4 dims of 0..4 (0 rarely).
  Dims random_sizes() {
    Dims s(static_cast<size_t>(pick(0, 4)));
    for (int64_t& v : s) v = chance(0.04) ? 0 : pick(1, 4);
    return s;
  }
  // Random strides for sizes: contiguous, permuted, gapped or arbitrary.
  Dims random_strides(const Dims& sizes) {
    const int kind = static_cast<int>(pick(0, 3));
    Dims st = row_major(sizes);
    if (kind == 1 && sizes.size() >= 2) {  // a permutation of contiguous strides
      std::shuffle(st.begin(), st.end(), rng_);
    } else if (kind == 2) {
      for (int64_t& v : st) v *= pick(1, 3);
    } else if (kind == 3) {
      for (int64_t& v : st) v = pick(0, 9);
    }
    return st;
  }
  // A random valid offset for a view of storage s, or -1 if it cannot fit.
  int64_t random_offset(int s, const Dims& sizes, const Dims& strides) {
    int64_t extent = 0;
    bool empty = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0) empty = true;
      else extent += (sizes[d] - 1) * strides[d];
    }
    const int64_t room = empty ? st_[s].numel : st_[s].numel - extent - 1;
    return room < 0 ? -1 : pick(0, room);
  }

  // The index of a random live handle, defined or any.
  int random_handle(bool defined_only) {
    std::vector<int> c;
    for (size_t i = 0; i < hs_.size(); ++i)
      if (!defined_only || hs_[i].defined) c.push_back(static_cast<int>(i));
    if (c.empty()) return -1;
    return c[static_cast<size_t>(pick(0, static_cast<int64_t>(c.size()) - 1))];
  }

  // Expected view of a new handle, checked through the getters.
  void check_new_handle(const HandleM& m) {
    if (!m.defined) return;
    const Meta got = meta(m.h);
    if (got.sizes != m.sizes || got.strides != m.strides || got.offset != m.offset ||
        got.dtype != dtype_of_handle(m)) {
      std::ostringstream os;
      os << "new handle reports sizes " << ::testing::PrintToString(got.sizes) << " strides "
         << ::testing::PrintToString(got.strides) << " offset " << got.offset << " dtype " << got.dtype
         << ", model has " << ::testing::PrintToString(m.sizes) << " "
         << ::testing::PrintToString(m.strides) << " " << m.offset;
      fail(os.str());
      return;
    }
    void* data = nullptr;
    aoti_torch_get_data_ptr(m.h, &data);
    const Memory& mem = memory_of(m);
    void* want = numel_of_dims(m.sizes) == 0
                     ? nullptr
                     : mem.base + (storage_of(m).begin + m.offset) * static_cast<int64_t>(itemsize_of(mem.dtype));
    if (data != want) fail("data_ptr of a new handle is not where the model puts its first element");
  }

  void add_handle(HandleM m) {
    if (m.defined) ++st_[m.storage].refs;
    check_new_handle(m);
    hs_.push_back(std::move(m));
  }

  // Drops one reference of storage s; frees owned memory with the last one.
  void release_storage(int s) {
    if (--st_[s].refs == 0) {
      Memory& mem = mem_[st_[s].memory];
      if (mem.owned) {
        live_mem_.erase(st_[s].memory);
        mem.alive = false;
        mem.base = nullptr;
        mem.shadow.clear();
      }
    }
  }

  // A new owned memory of nbytes, with its single storage; returns the storage.
  int new_owned(int32_t dt, int64_t numel, char* base) {
    Memory m;
    m.dtype = dt;
    m.owned = true;
    m.nbytes = numel * static_cast<int64_t>(itemsize_of(dt));
    m.base = base;
    m.shadow.assign(static_cast<size_t>(numel), 0.0);
    live_mem_.insert(static_cast<int>(mem_.size()));
    mem_.push_back(std::move(m));
    StorageM s;
    s.memory = static_cast<int>(mem_.size()) - 1;
    s.begin = 0;
    s.numel = numel;
    st_.push_back(s);
    return static_cast<int>(st_.size()) - 1;
  }

  // A call that must be refused: rc, a message naming fn, and no change.
  void expect_refusal(AOTITorchError rc, const char* fn, const Counters& before,
                      AtenTensorHandle out = nullptr, AtenTensorHandle sentinel = nullptr) {
    if (rc != AOTI_TORCH_FAILURE) {
      fail(std::string(fn) + " succeeded where the model predicts a refusal");
      return;
    }
    ++refusals_;
    if (std::string(aotrt_last_error()).find(fn) == std::string::npos)
      fail(std::string("refusal message does not name ") + fn + ": " + aotrt_last_error());
    if (counters(kCpu) != before) fail(std::string(fn) + " was refused but changed the counters");
    if (out != sentinel) fail(std::string(fn) + " was refused but wrote its output");
  }

  // --- Operations ---
  void one_step() {
    if (hs_.empty()) {
      make_buffer();
      return;
    }
    const int64_t r = pick(0, 999);
    const bool full = hs_.size() >= 48;
    if (full && r < 300) return delete_handle(pick(0, static_cast<int64_t>(hs_.size()) - 1));
    if (r < 80) return full ? delete_random() : make_buffer();
    if (r < 140) return full ? delete_random() : make_from_blob();
    if (r < 320) return reinterpret_op();
    if (r < 360) return as_strided_op();
    if (r < 390) return alloc_from_pool_op();
    if (r < 440) return new_handle_op();
    if (r < 460) return assign_out_op();
    if (r < 490) return assign_op();
    if (r < 495) return uninitialized_op();
    if (r < 510) return stale_after_reuse_op();
    if (r < 640) return delete_random();
    if (r < 840) return copy_op();
    if (r < 880) return zero_op();
    if (r < 920) return clone_op(false);
    if (r < 940) return clone_op(true);
    return mm_op();
  }

  void count(const char* name) {
    op_ = name;
    ++op_counts_[name];
  }

  void make_buffer() {
    count("empty_strided");
    const int32_t dt = chance(0.7) ? kF32 : std::vector<int32_t>{kF64, kI32, kF16}[pick(0, 2)];
    const Dims sizes = random_sizes();
    const Dims strides = random_strides(sizes);
    int64_t span = 0;  // elements the storage needs
    if (numel_of_dims(sizes) > 0) {
      span = 1;
      for (size_t d = 0; d < sizes.size(); ++d) span += (sizes[d] - 1) * strides[d];
    }
    Tensor t;
    if (aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), dt, 0, 0,
                                 t.out()) != AOTI_TORCH_SUCCESS) {
      return fail(std::string("empty_strided failed: ") + aotrt_last_error());
    }
    void* data = nullptr;
    aoti_torch_get_data_ptr(t.get(), &data);
    const int s = new_owned(dt, span, static_cast<char*>(data));
    // Fill the whole storage through the data pointer, as a kernel would.
    Memory& m = mem_[st_[s].memory];
    for (int64_t i = 0; i < span; ++i) {
      m.shadow[static_cast<size_t>(i)] = convert(dt, small_value());
      store(dt, m.base + i * static_cast<int64_t>(itemsize_of(dt)), m.shadow[static_cast<size_t>(i)]);
    }
    add_handle({t.release(), true, s, sizes, strides, 0});
  }

  void make_from_blob() {
    count("from_blob");
    const int a = arrays_[static_cast<size_t>(pick(0, static_cast<int64_t>(arrays_.size()) - 1))];
    Memory& m = mem_[a];
    const Dims sizes = random_sizes();
    const Dims strides = random_strides(sizes);
    int64_t extent = 0;
    const bool empty = numel_of_dims(sizes) == 0;
    for (size_t d = 0; d < sizes.size(); ++d)
      if (!empty) extent += (sizes[d] - 1) * strides[d];
    const int64_t len = static_cast<int64_t>(m.shadow.size());
    if (extent + 1 > len) return;
    const int64_t start = pick(0, len - extent - 1);
    const int64_t offset = pick(0, len - extent - 1 - start);
    Tensor t;
    if (aoti_torch_create_tensor_from_blob(m.base + start * static_cast<int64_t>(itemsize_of(m.dtype)),
                                           static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(),
                                           offset, m.dtype, 0, 0, t.out()) != AOTI_TORCH_SUCCESS) {
      return fail(std::string("from_blob failed: ") + aotrt_last_error());
    }
    StorageM s;
    s.memory = a;
    s.begin = start;
    s.numel = empty ? offset : offset + extent + 1;  // ATen's for_blob: offset plus span
    st_.push_back(s);
    add_handle({t.release(), true, static_cast<int>(st_.size()) - 1, sizes, strides, offset});
  }

  void reinterpret_op() {
    count("reinterpret");
    const int i = random_handle(false);
    const HandleM self = hs_[static_cast<size_t>(i)];
    Dims sizes = random_sizes(), strides = random_strides(sizes);
    int64_t increment = 0;
    if (self.defined) {
      const int64_t off = random_offset(self.storage, sizes, strides);
      increment = (off < 0 ? 0 : off) - self.offset;
    }
    // A quarter of them are broken on purpose.
    if (chance(0.25)) {
      switch (pick(0, 5)) {
        case 0: if (!strides.empty()) strides[0] = -pick(1, 3); break;
        case 1: if (!sizes.empty()) sizes[0] = -1; break;
        case 2: increment += pick(1, 64); break;  // likely past the end
        case 3: if (!strides.empty()) { strides.back() = kInt64Max / 2; sizes.back() = 3; } break;
        case 4: increment = kInt64Max - pick(0, 3); break;
        case 5: increment = -self.offset - pick(1, 3); break;  // negative offset
      }
    }
    bool valid = self.defined;
    i128 abs_offset = static_cast<i128>(self.offset) + increment;
    if (valid) valid = view_valid(self.storage, sizes, strides, abs_offset);
    const Counters before = counters(kCpu);
    AtenTensorHandle sentinel = reinterpret_cast<AtenTensorHandle>(uintptr_t{0x5e});
    AtenTensorHandle out = sentinel;
    const AOTITorchError rc = aoti_torch__reinterpret_tensor(
        self.h, static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), increment, &out);
    if (!valid) return expect_refusal(rc, "aoti_torch__reinterpret_tensor", before, out, sentinel);
    if (rc != AOTI_TORCH_SUCCESS) return fail(std::string("reinterpret refused a valid view: ") + aotrt_last_error());
    add_handle({out, true, self.storage, sizes, strides, static_cast<int64_t>(abs_offset)});
  }

  void as_strided_op() {
    count("as_strided");
    const int i = random_handle(true);
    if (i < 0) return;
    const HandleM self = hs_[static_cast<size_t>(i)];
    Dims sizes(self.sizes.size());
    for (int64_t& v : sizes) v = chance(0.04) ? 0 : pick(1, 4);
    Dims strides = random_strides(sizes);
    if (chance(0.15) && !strides.empty()) strides[0] = -1;
    const bool valid = view_valid(self.storage, sizes, strides, self.offset);
    const Counters before = counters(kCpu);
    AtenTensorHandle out = nullptr;
    const AOTITorchError rc = aoti_torch_as_strided(self.h, sizes.data(), strides.data(), &out);
    if (!valid) return expect_refusal(rc, "aoti_torch_as_strided", before, out, nullptr);
    if (rc != AOTI_TORCH_SUCCESS) return fail(std::string("as_strided refused a valid view: ") + aotrt_last_error());
    add_handle({out, true, self.storage, sizes, strides, self.offset});
  }

  void alloc_from_pool_op() {
    count("alloc_from_pool");
    const int i = random_handle(true);
    if (i < 0) return;
    const HandleM self = hs_[static_cast<size_t>(i)];
    const Dims sizes = random_sizes(), strides = random_strides(sizes);
    const int32_t dt = dtype_of_handle(self);
    const int64_t item = static_cast<int64_t>(itemsize_of(dt));
    int64_t off = random_offset(self.storage, sizes, strides);
    if (off < 0) off = 0;
    int64_t offset_bytes = off * item;
    if (chance(0.1)) offset_bytes += 1;  // not a whole element
    const bool valid = self.offset == 0 && offset_bytes % item == 0 &&
                       view_valid(self.storage, sizes, strides, offset_bytes / item);
    const Counters before = counters(kCpu);
    AtenTensorHandle out = nullptr;
    const AOTITorchError rc = aoti_torch__alloc_from_pool(self.h, offset_bytes, dt,
                                                          static_cast<int64_t>(sizes.size()),
                                                          sizes.data(), strides.data(), &out);
    if (!valid) return expect_refusal(rc, "aoti_torch__alloc_from_pool", before, out, nullptr);
    if (rc != AOTI_TORCH_SUCCESS) return fail(std::string("alloc_from_pool refused: ") + aotrt_last_error());
    add_handle({out, true, self.storage, sizes, strides, offset_bytes / item});
  }

  void new_handle_op() {
    count("new_tensor_handle");
    const HandleM self = hs_[static_cast<size_t>(random_handle(false))];
    AtenTensorHandle out = nullptr;
    if (aoti_torch_new_tensor_handle(self.h, &out) != AOTI_TORCH_SUCCESS)
      return fail(std::string("new_tensor_handle failed: ") + aotrt_last_error());
    HandleM copy = self;
    copy.h = out;
    add_handle(copy);
  }

  void assign_out_op() {
    count("assign_tensors_out");
    const HandleM self = hs_[static_cast<size_t>(random_handle(false))];
    AtenTensorHandle out = nullptr;
    if (aoti_torch_assign_tensors_out(self.h, &out) != AOTI_TORCH_SUCCESS)
      return fail(std::string("assign_tensors_out failed: ") + aotrt_last_error());
    HandleM copy = self;
    copy.h = out;
    add_handle(copy);
  }

  void assign_op() {
    count("assign_tensors");
    const size_t src = static_cast<size_t>(random_handle(false));
    const size_t dst = static_cast<size_t>(random_handle(false));
    if (aoti_torch_assign_tensors(hs_[src].h, hs_[dst].h) != AOTI_TORCH_SUCCESS)
      return fail(std::string("assign_tensors failed: ") + aotrt_last_error());
    HandleM next = hs_[src];
    next.h = hs_[dst].h;
    if (next.defined) ++st_[next.storage].refs;  // take before dropping: dst may be src
    if (hs_[dst].defined) release_storage(hs_[dst].storage);
    hs_[dst] = next;
    check_new_handle(next);
  }

  void uninitialized_op() {
    count("new_uninitialized");
    AtenTensorHandle out = nullptr;
    if (aoti_torch_new_uninitialized_tensor(&out) != AOTI_TORCH_SUCCESS)
      return fail("new_uninitialized_tensor failed");
    HandleM m;
    m.h = out;
    m.defined = false;
    add_handle(m);
  }

  void delete_random() { delete_handle(pick(0, static_cast<int64_t>(hs_.size()) - 1)); }

  // A deleted handle, once a new handle holds its registry slot and (often)
  // its TensorImpl's address, must still be refused everywhere, changing
  // nothing (Note [Handle values]).
  void stale_after_reuse_op() {
    const int64_t i = pick(0, static_cast<int64_t>(hs_.size()) - 1);
    const AtenTensorHandle stale = hs_[static_cast<size_t>(i)].h;
    const void* impl = &handle_get(stale, "random model");
    const uint32_t slot = handle_slot(stale);
    delete_handle(i);
    count("stale after reuse");
    bool slot_again = false, address_again = false;
    for (int n = 0; n < 64 && !failed_ && !(slot_again && address_again); ++n) {
      if (chance(0.5) || random_handle(true) < 0) {
        uninitialized_op();
      } else {
        new_handle_op();
      }
      if (failed_) return;
      op_ = "stale after reuse";
      const AtenTensorHandle fresh = hs_.back().h;
      if (fresh == stale) return fail("a new handle has the value of a deleted one");
      slot_again = slot_again || handle_slot(fresh) == slot;
      address_again = address_again || &handle_get(fresh, "random model") == impl;
    }
    if (slot_again) ++op_counts_["stale after reuse (slot reused)"];
    if (address_again) ++op_counts_["stale after reuse (address reused)"];
    const Counters before = counters(kCpu);
    int64_t n = 0;
    expect_refusal(aoti_torch_get_numel(stale, &n), "aoti_torch_get_numel", before);
    expect_refusal(aoti_torch_delete_tensor_object(stale), "aoti_torch_delete_tensor_object", before);
    const int live = random_handle(true);
    if (live >= 0 && !failed_) {
      const AtenTensorHandle other = hs_[static_cast<size_t>(live)].h;
      expect_refusal(aoti_torch_copy_(other, stale, 0), "aoti_torch_copy_", before);
      expect_refusal(aoti_torch_copy_(stale, other, 0), "aoti_torch_copy_", before);
      AtenTensorHandle sentinel = reinterpret_cast<AtenTensorHandle>(uintptr_t{0x5e});
      AtenTensorHandle out = sentinel;
      expect_refusal(aoti_torch_new_tensor_handle(stale, &out), "aoti_torch_new_tensor_handle", before,
                     out, sentinel);
    }
  }

  void delete_handle(int64_t i) {
    count("delete");
    HandleM m = hs_[static_cast<size_t>(i)];
    hs_[static_cast<size_t>(i)] = hs_.back();
    hs_.pop_back();
    if (aoti_torch_delete_tensor_object(m.h) != AOTI_TORCH_SUCCESS)
      return fail(std::string("delete failed: ") + aotrt_last_error());
    if (m.defined) release_storage(m.storage);
    if (chance(0.05)) {  // at once, before any new handle could take its address
      count("delete twice");
      const Counters before = counters(kCpu);
      expect_refusal(aoti_torch_delete_tensor_object(m.h), "aoti_torch_delete_tensor_object", before);
      int64_t n = 0;
      expect_refusal(aoti_torch_get_numel(m.h, &n), "aoti_torch_get_numel", before);
    }
  }

  // A temporary view (its own handle, dropped after use) of a random storage
  // of dtype dt (any dtype if dt < 0) with these sizes.
  struct Temp {
    AtenTensorHandle h = nullptr;
    HandleM m;
  };
  // With `near` set, the view is of the same storage as that handle.
  bool temp_view(int32_t dt, const Dims& sizes, Temp* out, bool small_only = false,
                 int near = -1) {
    std::vector<int> c;
    for (size_t i = 0; i < hs_.size(); ++i) {
      if (!hs_[i].defined) continue;
      if (dt >= 0 && dtype_of_handle(hs_[i]) != dt) continue;
      if (near >= 0 && hs_[i].storage != hs_[static_cast<size_t>(near)].storage) continue;
      c.push_back(static_cast<int>(i));
    }
    for (int attempt = 0; attempt < 4 && !c.empty(); ++attempt) {
      const HandleM& base = hs_[static_cast<size_t>(c[static_cast<size_t>(pick(0, static_cast<int64_t>(c.size()) - 1))])];
      const Dims strides = attempt < 3 ? random_strides(sizes) : row_major(sizes);
      const int64_t off = random_offset(base.storage, sizes, strides);
      if (off < 0) continue;
      if (small_only) {
        bool ok = true;
        const Memory& mem = memory_of(base);
        for (int64_t p : positions(base.storage, sizes, strides, off))
          ok = ok && is_small(mem.shadow[static_cast<size_t>(p)]);
        if (!ok) continue;
      }
      AtenTensorHandle h = nullptr;
      if (aoti_torch__reinterpret_tensor(base.h, static_cast<int64_t>(sizes.size()), sizes.data(),
                                         strides.data(), off - base.offset, &h) != AOTI_TORCH_SUCCESS) {
        fail(std::string("temporary view refused: ") + aotrt_last_error());
        return false;
      }
      out->h = h;
      out->m = {h, true, base.storage, sizes, strides, off};
      ++st_[base.storage].refs;
      check_new_handle(out->m);
      return true;
    }
    return false;
  }
  void drop_temp(Temp& t) {
    if (aoti_torch_delete_tensor_object(t.h) != AOTI_TORCH_SUCCESS) fail("deleting a temporary view failed");
    release_storage(t.m.storage);
  }

  // Byte range [begin, end) of a non-empty view, from a global address base
  // per memory (memories never share addresses).
  std::pair<i128, i128> byte_range(const HandleM& h) const {
    const std::vector<int64_t> pos = positions(h);
    const i128 item = static_cast<i128>(itemsize_of(dtype_of_handle(h)));
    const i128 base = static_cast<i128>(reinterpret_cast<uintptr_t>(memory_of(h).base));
    const int64_t lo = *std::min_element(pos.begin(), pos.end()), hi = *std::max_element(pos.begin(), pos.end());
    return {base + lo * item, base + (hi + 1) * item};
  }

  void copy_op() {
    count("copy_");
    const int di = random_handle(true);
    if (di < 0) return;
    HandleM dst = hs_[static_cast<size_t>(di)];
    Temp temp;
    HandleM src;
    if (chance(0.6)) {  // a source of dst's shape, or broadcastable to it
      Dims sizes = dst.sizes;
      if (chance(0.3) && !sizes.empty()) {
        sizes.erase(sizes.begin(), sizes.begin() + pick(0, static_cast<int64_t>(sizes.size())));
        for (int64_t& v : sizes) if (chance(0.3)) v = 1;
      }
      const int32_t dt = chance(0.8) ? dtype_of_handle(dst) : -1;
      // A third of them from dst's own storage, where they may overlap it.
      if (!temp_view(dt, sizes, &temp, false, chance(0.33) ? di : -1)) return;
      src = temp.m;
    } else {
      const int si = random_handle(true);
      src = hs_[static_cast<size_t>(si)];
    }
    const int32_t ddt = dtype_of_handle(dst), sdt = dtype_of_handle(src);

    // What ATen (and so aotrt) does, predicted by the model.
    bool refuse = false;
    std::vector<int64_t> src_strides(dst.sizes.size(), 0);
    if (src.sizes.size() > dst.sizes.size()) refuse = true;
    for (size_t k = 0; !refuse && k < src.sizes.size(); ++k) {
      const size_t sd = src.sizes.size() - 1 - k, dd = dst.sizes.size() - 1 - k;
      if (src.sizes[sd] == dst.sizes[dd]) src_strides[dd] = src.strides[sd];
      else if (src.sizes[sd] == 1) src_strides[dd] = 0;
      else refuse = true;
    }
    const int64_t n = numel_of_dims(dst.sizes);
    bool noop = false;
    if (!refuse && n > 0) {
      for (size_t d = 0; d < dst.sizes.size(); ++d)
        if (dst.strides[d] == 0 && dst.sizes[d] > 1) refuse = true;
      if (!refuse && st_[dst.storage].memory == st_[src.storage].memory) {
        const auto a = byte_range(dst), b = byte_range(src);
        if (a.first < b.second && b.first < a.second) {
          // aotrt's (and ATen's) no-op: the very same view.
          const bool identical = a.first == b.first && ddt == sdt && dst.sizes == src.sizes &&
                                 dst.strides == src.strides;
          const bool full = a == b && dst.strides == src.strides;
          if (identical) noop = true;
          else if (dense(dst.sizes, dst.strides) && dense(src.sizes, src.strides) && !full) refuse = true;
          ++op_counts_[identical ? "copy_ (overlap: same view)" : refuse ? "copy_ (overlap: refused)" : "copy_ (overlap: allowed)"];
        }
      }
    }
    const Counters before = counters(kCpu);
    const AOTITorchError rc = aoti_torch_copy_(dst.h, src.h, 0);
    if (refuse) {
      expect_refusal(rc, "aoti_torch_copy_", before);
    } else if (rc != AOTI_TORCH_SUCCESS) {
      fail(std::string("copy_ refused where the model expects success: ") + aotrt_last_error());
    } else if (!noop && n > 0) {
      // Read every source element first, then write (Note [Copy overlap]).
      const Memory& smem = memory_of(src);
      const std::vector<int64_t> spos = positions(src.storage, dst.sizes, src_strides, src.offset);
      const std::vector<int64_t> dpos = positions(dst);
      std::vector<double> vals(spos.size());
      for (size_t k = 0; k < spos.size(); ++k) vals[k] = convert(ddt, smem.shadow[static_cast<size_t>(spos[k])]);
      Memory& dmem = mem_[st_[dst.storage].memory];
      std::map<int64_t, std::set<double>> written;
      for (size_t k = 0; k < dpos.size(); ++k) written[dpos[k]].insert(vals[k]);
      for (const auto& [p, candidates] : written) {
        if (candidates.size() == 1) {
          dmem.shadow[static_cast<size_t>(p)] = *candidates.begin();
        } else {  // elements of dst that alias each other: any written value may win
          const double got = load(ddt, dmem.base + p * static_cast<int64_t>(itemsize_of(ddt)));
          if (!candidates.count(got)) return fail("an aliased destination element holds a value never written to it");
          dmem.shadow[static_cast<size_t>(p)] = got;
        }
      }
      ++op_counts_["copy_ (wrote)"];
      if (sdt != ddt) ++op_counts_["copy_ (wrote, dtypes differ)"];
      if (!dense(dst.sizes, dst.strides) || !dense(src.sizes, src.strides)) ++op_counts_["copy_ (wrote, not dense)"];
    }
    if (temp.h) drop_temp(temp);
  }

  void zero_op() {
    count("zero_");
    const int i = random_handle(true);
    if (i < 0) return;
    const HandleM h = hs_[static_cast<size_t>(i)];
    if (aoti_torch_zero_(h.h) != AOTI_TORCH_SUCCESS) return fail(std::string("zero_ failed: ") + aotrt_last_error());
    Memory& mem = mem_[st_[h.storage].memory];
    for (int64_t p : positions(h)) mem.shadow[static_cast<size_t>(p)] = 0.0;
  }

  void clone_op(bool preserve_strides) {
    count(preserve_strides ? "clone_preserve_strides" : "clone");
    const int i = random_handle(true);
    if (i < 0) return;
    const HandleM src = hs_[static_cast<size_t>(i)];
    AtenTensorHandle out = nullptr;
    const AOTITorchError rc = preserve_strides ? aoti_torch_clone_preserve_strides(src.h, &out)
                                               : aoti_torch_clone(src.h, &out);
    if (rc != AOTI_TORCH_SUCCESS) return fail(std::string("clone failed: ") + aotrt_last_error());
    const int32_t dt = dtype_of_handle(src);
    const int64_t n = numel_of_dims(src.sizes);
    const std::vector<int64_t> spos = positions(src);
    Dims strides;
    int64_t numel = 0;  // elements of the new storage
    if (!preserve_strides || dense(src.sizes, src.strides)) {
      strides = clone_strides(src.sizes, src.strides);
      numel = n;
    } else {
      strides = src.strides;
      numel = n == 0 ? 0 : *std::max_element(spos.begin(), spos.end()) - spos.front() + 1;
    }
    void* data = nullptr;
    aoti_torch_get_data_ptr(out, &data);
    const int s = new_owned(dt, numel, static_cast<char*>(data));
    Memory& mem = mem_[st_[s].memory];
    const Memory& smem = memory_of(src);
    if (preserve_strides && !dense(src.sizes, src.strides)) {
      for (int64_t k = 0; k < numel; ++k)  // the whole span, holes included
        mem.shadow[static_cast<size_t>(k)] = smem.shadow[static_cast<size_t>(spos.front() + k)];
    } else {
      const std::vector<int64_t> dpos = element_positions(src.sizes, strides);
      for (size_t k = 0; k < dpos.size(); ++k)
        mem.shadow[static_cast<size_t>(dpos[k])] = smem.shadow[static_cast<size_t>(spos[k])];
    }
    add_handle({out, true, s, src.sizes, strides, 0});
  }

  void mm_op() {
    count("mm");
    if (mm_ == nullptr) return;
    const int64_t M = pick(1, 5), K = chance(0.05) ? 0 : pick(1, 5), N = pick(1, 5);
    Temp a, b, o;
    if (!temp_view(kF32, {M, K}, &a, true)) return;
    if (!temp_view(kF32, {K, N}, &b, true)) return drop_temp(a);
    // The output: float32, no two elements at one address, apart from the inputs.
    bool ok = temp_view(kF32, {M, N}, &o);
    if (ok) {
      std::set<int64_t> seen;
      for (int64_t p : positions(o.m)) ok = ok && seen.insert(p).second;
      for (const Temp* in : {&a, &b}) {
        if (!ok || numel_of_dims(in->m.sizes) == 0) continue;
        if (st_[in->m.storage].memory != st_[o.m.storage].memory) continue;
        const auto r1 = byte_range(o.m), r2 = byte_range(in->m);
        if (r1.first < r2.second && r2.first < r1.second) ok = false;
      }
    }
    if (ok) {
      if (mm_(o.h, a.h, b.h) != AOTI_TORCH_SUCCESS) {
        std::ostringstream os;
        os << "aoti_torch_cpu_mm_out failed: " << aotrt_last_error() << "; out "
           << ::testing::PrintToString(o.m.strides) << " self " << ::testing::PrintToString(a.m.sizes)
           << ::testing::PrintToString(a.m.strides) << " mat2 " << ::testing::PrintToString(b.m.sizes)
           << ::testing::PrintToString(b.m.strides);
        fail(os.str());
      } else {
        ++op_counts_["mm (ran)"];
        const Memory& am = memory_of(a.m);
        const Memory& bm = memory_of(b.m);
        Memory& om = mem_[st_[o.m.storage].memory];
        const auto ap = positions(a.m), bp = positions(b.m), op = positions(o.m);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double s = 0;  // exact: see Note [Random model]
            for (int64_t k = 0; k < K; ++k)
              s += am.shadow[static_cast<size_t>(ap[i * K + k])] * bm.shadow[static_cast<size_t>(bp[k * N + j])];
            om.shadow[static_cast<size_t>(op[i * N + j])] = s;
          }
      }
    }
    if (o.h) drop_temp(o);
    drop_temp(b);
    drop_temp(a);
  }

  // --- The check after every step ---
  void check_all() {
    const Counters now = counters(kCpu);
    int64_t live_bytes = 0, live_blocks = 0;
    for (int mi : live_mem_) {
      const Memory& m = mem_[static_cast<size_t>(mi)];
      if (m.owned && m.nbytes > 0) {
        live_bytes += m.nbytes;
        ++live_blocks;
      }
    }
    if (now.handles != base_.handles + static_cast<int64_t>(hs_.size())) {
      return fail("handle_live_count " + std::to_string(now.handles - base_.handles) + ", model has " +
                  std::to_string(hs_.size()));
    }
    if (now.live_bytes != base_.live_bytes + live_bytes || now.live_allocations != base_.live_allocations + live_blocks) {
      return fail("allocator has " + std::to_string(now.live_bytes - base_.live_bytes) + " live bytes in " +
                  std::to_string(now.live_allocations - base_.live_allocations) + " blocks, model " +
                  std::to_string(live_bytes) + " in " + std::to_string(live_blocks));
    }
    for (const HandleM& h : hs_) {
      if (!h.defined) continue;
      const int64_t uses = handle_get(h.h, "random model").storage()->use_count();
      if (uses != st_[h.storage].refs) {
        return fail("a storage has " + std::to_string(uses) + " references, model " + std::to_string(st_[h.storage].refs));
      }
    }
    for (int mi : live_mem_) {
      const Memory& m = mem_[static_cast<size_t>(mi)];
      if (m.base == nullptr) continue;
      const size_t item = itemsize_of(m.dtype);
      for (size_t k = 0; k < m.shadow.size(); ++k) {
        const double got = load(m.dtype, m.base + k * item);
        if (!same_value(got, m.shadow[k])) {
          std::ostringstream os;
          os << "memory " << mi << (m.owned ? " (owned" : " (test-owned") << ", dtype " << m.dtype
             << ") element " << k << " is " << got << ", model " << m.shadow[k];
          return fail(os.str());
        }
      }
    }
  }

  std::mt19937_64 rng_;
  uint64_t seed_;
  int64_t steps_, step_ = 0, refusals_ = 0;
  decltype(&aoti_torch_cpu_mm_out) mm_ = nullptr;
  std::vector<Memory> mem_;
  std::set<int> live_mem_;  // memories that may still hold data
  std::vector<int> arrays_;
  std::vector<StorageM> st_;
  std::vector<HandleM> hs_;
  Counters base_;
  bool failed_ = false;
  std::string op_ = "start";
  std::map<std::string, int64_t> op_counts_;
};

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

TEST(RandomModel, ViewsCopiesAndOwnershipMatchTheReference) {
  const uint64_t seed = static_cast<uint64_t>(env_int("AOTRT_RANDOM_SEED", 20240611));
  const int64_t steps = env_int("AOTRT_RANDOM_STEPS", 100000);
  RandomModel model(seed, steps);
  model.run();
}

}  // namespace
}  // namespace aotrt::test
