// libFuzzer target: every op shim aotrt serves, through the C ABI. The ops
// come from a table generated from torch's own C shim headers, the generated
// c_shim_cpu.h and c_shim_aten.h and the hand-written c/shim_cpu.h (the fused
// oneDNN convolutions and linears, _mkl_linear, int4 matmul)
// (fuzz/gen_op_table.py: one row per `aoti_torch_cpu_<op>` / `aoti_torch_aten_<op>`
// declaration, with a thunk that calls the op through its exact C type); at
// start each name is resolved in libaotrt.so, and the ones it exports are
// fuzzed, so op families that land later are covered with no change here.
// The input is a program over a pool of tensors: new tensors (random dtype,
// sizes, strides, values with NaN and inf), views of them at any offset,
// deletions that keep the stale value in the pool, and op calls whose
// arguments are drawn by kind: tensors (live, deleted or null), optional
// tensors, lists, scalars (small, or the extremes of their type), optional
// scalars, lists of optional scalars, strings. The fused oneDNN ops get plain
// tensors like every other op: a package's oneDNN-blocked (_mkldnn) weights
// reach them as plain copies made at load (Note [Opaque constants] in
// shim/tensor_shims.cpp; fuzz_onednn_md fuzzes that decoder), channels-last
// for a convolution's, which the pool's either-order dense strides include.
//
// Invariants checked after every op call, beyond "no crash, no sanitizer
// report, no leak":
//   - the call returns AOTI_TORCH_SUCCESS or AOTI_TORCH_FAILURE;
//   - a refusal leaves a message that names the op, and writes no result;
//   - a call given a deleted or null handle where a tensor is required is refused;
//   - every tensor a call returns is a live handle whose elements can all be
//     read (AddressSanitizer sees a view that reaches past its memory);
//   - when the program ends and its handles are deleted, the live handle
//     count is what it was before.
#include <dlfcn.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <vector>

#include "aotrt/shim.h"
#include "core/allocator.h"
#include "core/handles.h"
#include "core/tensor.h"
#include "shim/boundary.h"

namespace {

[[noreturn]] void violated(const char* op, const char* what) {
  std::fprintf(stderr, "invariant violated by %s: %s (last error: %s)\n", op, what,
               aotrt::last_error().c_str());
  std::abort();
}

constexpr int64_t kPoolElements = 1024;

// A value that no handle has: what a result pointer holds before the call.
AtenTensorHandle sentinel() { return reinterpret_cast<AtenTensorHandle>(uintptr_t{0x5e5e5e0}); }

struct Pool {
  std::vector<AtenTensorHandle> live;
  std::vector<AtenTensorHandle> dead;  // deleted: every use must be refused
};

template <typename T>
struct Value {
  T v;
  T get() const { return v; }
};
template <typename T>
struct Pointer {
  T* p;
  T* get() const { return p; }
};
template <typename T>
struct ListOf {
  T* p;
  size_t n;
  T* data() const { return p; }
  int64_t size() const { return static_cast<int64_t>(n); }
};
template <typename T>
struct OptionalListOf {
  const T** p;  // null: None
  size_t n;
  const T** data() const { return p; }
  int64_t size() const { return static_cast<int64_t>(n); }
};

// Draws one op call's arguments from the input. Everything a call points at
// lives here, at stable addresses, until the call's checks are done.
class Draw {
 public:
  Draw(FuzzedDataProvider& in, Pool& pool) : in_(in), pool_(pool) {}

  Value<AtenTensorHandle> tensor() { return {pick_tensor(/*required=*/true)}; }
  Pointer<AtenTensorHandle> opt_tensor() {
    if (in_.ConsumeBool()) return {nullptr};
    return {&handles_.emplace_back(pick_tensor(/*required=*/false))};
  }
  ListOf<AtenTensorHandle> tensor_list() {
    std::vector<AtenTensorHandle>& v = tensor_lists_.emplace_back();
    for (size_t i = 0, n = in_.ConsumeIntegralInRange<size_t>(0, 4); i < n; ++i) {
      v.push_back(pick_tensor(/*required=*/true));
    }
    return {v.data(), v.size()};
  }
  ListOf<const AtenTensorHandle*> opt_tensor_list() {
    std::vector<const AtenTensorHandle*>& v = opt_tensor_lists_.emplace_back();
    for (size_t i = 0, n = in_.ConsumeIntegralInRange<size_t>(0, 4); i < n; ++i) {
      v.push_back(in_.ConsumeBool() ? nullptr : &handles_.emplace_back(pick_tensor(false)));
    }
    return {v.data(), v.size()};
  }
  Pointer<AtenTensorHandle> ret_tensor() { return {&rets_.emplace_back(sentinel())}; }
  Pointer<int64_t> ret_int64() { return {&ints_.emplace_back(0)}; }
  Pointer<int32_t> ret_int32() { return {&int32s_.emplace_back(0)}; }
  Pointer<double> ret_real() { return {&reals_.emplace_back(0)}; }
  Value<AtenGeneratorHandle*> generator() { return {nullptr}; }  // None: the default generator

  Value<int64_t> int64() { return {draw_int64()}; }
  Value<int32_t> int32() {
    switch (in_.ConsumeIntegralInRange<int>(0, 9)) {
      case 0: return {std::numeric_limits<int32_t>::min()};
      case 1: return {std::numeric_limits<int32_t>::max()};
      default: return {in_.ConsumeIntegralInRange<int32_t>(-2, 8)};
    }
  }
  Value<double> real() { return {draw_real()}; }
  Pointer<int64_t> opt_int64() { return in_.ConsumeBool() ? Pointer<int64_t>{nullptr} : ret_value(ints_, draw_int64()); }
  Pointer<int32_t> opt_int32() { return in_.ConsumeBool() ? Pointer<int32_t>{nullptr} : ret_value(int32s_, int32().v); }
  Pointer<double> opt_real() { return in_.ConsumeBool() ? Pointer<double>{nullptr} : ret_value(reals_, draw_real()); }
  ListOf<int64_t> int64_list() {
    std::vector<int64_t>& v = int_lists_.emplace_back();
    for (size_t i = 0, n = in_.ConsumeIntegralInRange<size_t>(0, 5); i < n; ++i) v.push_back(draw_int64());
    return {v.data(), v.size()};
  }
  ListOf<int32_t> int32_list() {
    std::vector<int32_t>& v = int32_lists_.emplace_back();
    for (size_t i = 0, n = in_.ConsumeIntegralInRange<size_t>(0, 5); i < n; ++i) v.push_back(int32().v);
    return {v.data(), v.size()};
  }
  ListOf<double> real_list() {
    std::vector<double>& v = real_lists_.emplace_back();
    for (size_t i = 0, n = in_.ConsumeIntegralInRange<size_t>(0, 5); i < n; ++i) v.push_back(draw_real());
    return {v.data(), v.size()};
  }
  OptionalListOf<int64_t> opt_int64_list() {
    const ListOf<int64_t> l = int64_list();
    if (in_.ConsumeBool()) return {nullptr, 0};
    return {&int_ptrs_.emplace_back(l.p), l.n};
  }
  // Scalar?[] (the hand-written shim_cpu.h's fused ops): each entry a pointer
  // to a value, or null for None.
  ListOf<const double*> opt_scalar_list() {
    std::vector<const double*>& v = scalar_lists_.emplace_back();
    for (size_t i = 0, n = in_.ConsumeIntegralInRange<size_t>(0, 3); i < n; ++i) {
      v.push_back(in_.ConsumeBool() ? nullptr : &reals_.emplace_back(draw_real()));
    }
    return {v.data(), v.size()};
  }
  OptionalListOf<double> opt_real_list() {
    const ListOf<double> l = real_list();
    if (in_.ConsumeBool()) return {nullptr, 0};
    return {&real_ptrs_.emplace_back(l.p), l.n};
  }
  Value<const char*> string() { return {draw_string()}; }
  Pointer<const char*> opt_string() {
    if (in_.ConsumeBool()) return {nullptr};
    return {&strings_.emplace_back(draw_string())};
  }

  // Whether a required tensor argument was a deleted or null handle.
  bool gave_bad_handle() const { return bad_handle_; }
  std::deque<AtenTensorHandle>& results() { return rets_; }

 private:
  AtenTensorHandle pick_tensor(bool required) {
    const int r = in_.ConsumeIntegralInRange<int>(0, 31);
    AtenTensorHandle h = nullptr;
    if (r == 0 || pool_.live.empty()) {
      h = nullptr;
      if (required) bad_handle_ = true;
    } else if (r <= 2 && !pool_.dead.empty()) {
      h = pool_.dead[in_.ConsumeIntegralInRange<size_t>(0, pool_.dead.size() - 1)];
      bad_handle_ = true;  // a deleted handle is refused, optional or not
    } else {
      h = pool_.live[in_.ConsumeIntegralInRange<size_t>(0, pool_.live.size() - 1)];
    }
    return h;
  }
  int64_t draw_int64() {
    switch (in_.ConsumeIntegralInRange<int>(0, 15)) {
      case 0: return std::numeric_limits<int64_t>::min();
      case 1: return std::numeric_limits<int64_t>::max();
      case 2: return int64_t{1} << in_.ConsumeIntegralInRange<int>(20, 62);
      case 3: return in_.ConsumeIntegral<int64_t>();
      default: return in_.ConsumeIntegralInRange<int64_t>(-3, 8);
    }
  }
  double draw_real() {
    switch (in_.ConsumeIntegralInRange<int>(0, 11)) {
      case 0: return std::numeric_limits<double>::quiet_NaN();
      case 1: return std::numeric_limits<double>::infinity();
      case 2: return -std::numeric_limits<double>::infinity();
      case 3: return std::numeric_limits<double>::max();
      case 4: return -0.0;
      case 5: return std::numeric_limits<double>::denorm_min();
      default: return static_cast<double>(in_.ConsumeIntegralInRange<int>(-8, 8)) / 2;
    }
  }
  const char* draw_string() {
    // Reductions, rounding and padding modes of the generated ops; the fused
    // oneDNN ops' unary and binary post-op names.
    static const char* kStrings[] = {"none",      "tanh",     "mean",       "sum",         "floor",
                                     "trunc",     "",         "bogus",      "reflect",     "relu",
                                     "gelu",      "sigmoid",  "hardswish",  "hardsigmoid", "swish",
                                     "silu",      "leaky_relu", "hardtanh", "add",         "sub",
                                     "mul",       "div"};
    return kStrings[in_.ConsumeIntegralInRange<size_t>(0, std::size(kStrings) - 1)];
  }
  template <typename T>
  Pointer<T> ret_value(std::deque<T>& where, T v) {
    return {&where.emplace_back(v)};
  }

  FuzzedDataProvider& in_;
  Pool& pool_;
  bool bad_handle_ = false;
  std::deque<AtenTensorHandle> handles_, rets_;
  std::deque<int64_t> ints_;
  std::deque<int32_t> int32s_;
  std::deque<double> reals_;
  std::deque<const char*> strings_;
  std::deque<const int64_t*> int_ptrs_;
  std::deque<const double*> real_ptrs_;
  std::deque<std::vector<int64_t>> int_lists_;
  std::deque<std::vector<int32_t>> int32_lists_;
  std::deque<std::vector<double>> real_lists_;
  std::deque<std::vector<AtenTensorHandle>> tensor_lists_;
  std::deque<std::vector<const AtenTensorHandle*>> opt_tensor_lists_;
  std::deque<std::vector<const double*>> scalar_lists_;
};

struct OpRow {
  const char* name;
  AOTITorchError (*call)(void* fn, Draw& f);
};

const OpRow kOps[] = {
#include "op_table.inc"
};

struct ServedOp {
  const char* name;
  void* fn;
  AOTITorchError (*call)(void*, Draw&);
};

std::vector<ServedOp>& served() {
  static std::vector<ServedOp> ops;
  return ops;
}

// Reads every byte a view addresses (bounded), so that AddressSanitizer sees
// a result that reaches past its memory.
void touch(const aotrt::TensorImpl& t) {
  if (!t.defined() || t.numel() == 0) return;
  const auto* base = static_cast<const unsigned char*>(t.data_ptr());
  const size_t item = t.itemsize();
  std::vector<int64_t> index(static_cast<size_t>(t.dim()), 0);
  volatile unsigned char sink = 0;
  for (int64_t n = 0; n < std::min<int64_t>(t.numel(), 1 << 14); ++n) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += index[static_cast<size_t>(d)] * t.strides()[static_cast<size_t>(d)];
    for (size_t b = 0; b < item; ++b) sink = sink ^ base[off * static_cast<int64_t>(item) + static_cast<int64_t>(b)];
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < t.sizes()[static_cast<size_t>(d)]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
}

int32_t draw_dtype(FuzzedDataProvider& in) {
  static int32_t (*const kDtypes[])() = {
      aoti_torch_dtype_float32, aoti_torch_dtype_float32, aoti_torch_dtype_float64,
      aoti_torch_dtype_float16, aoti_torch_dtype_bfloat16, aoti_torch_dtype_int64,
      aoti_torch_dtype_int32,   aoti_torch_dtype_int8,     aoti_torch_dtype_uint8,
      aoti_torch_dtype_bool,    aoti_torch_dtype_int16,    aoti_torch_dtype_complex64};
  return kDtypes[in.ConsumeIntegralInRange<size_t>(0, std::size(kDtypes) - 1)]();
}

// Fills a new tensor's memory: any bytes for numbers (NaN and inf among
// them), 0 or 1 for bool.
void fill(FuzzedDataProvider& in, AtenTensorHandle h) {
  const aotrt::TensorImpl& t = aotrt::handle_get(h, "fuzz");
  if (!t.defined() || t.storage()->nbytes() == 0) return;
  auto* p = static_cast<unsigned char*>(t.storage()->data());
  const size_t n = t.storage()->nbytes();
  const bool is_bool = t.dtype() == static_cast<aotrt::ScalarType>(aoti_torch_dtype_bool());
  const uint8_t seed = in.ConsumeIntegral<uint8_t>();
  for (size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned char>((i * 131 + seed) * 2654435761u >> 13);
    p[i] = is_bool ? (b & 1) : (seed & 1) ? b : static_cast<unsigned char>(i % 7 == 0 ? 0 : b & 0x3f);
  }
}

std::vector<int64_t> dims(FuzzedDataProvider& in, int64_t rank, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t d = 0; d < rank; ++d) v.push_back(in.ConsumeIntegralInRange<int64_t>(0, hi));
  return v;
}

void make_tensor(FuzzedDataProvider& in, Pool& pool) {
  const int64_t rank = in.ConsumeIntegralInRange<int64_t>(0, 4);
  std::vector<int64_t> sizes = dims(in, rank, 5);
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  int64_t step = 1;
  const bool reversed = in.ConsumeBool();
  for (int64_t k = 0; k < rank; ++k) {  // dense, in either dim order, with gaps and broadcasts
    const auto d = static_cast<size_t>(reversed ? k : rank - 1 - k);
    const int kind = in.ConsumeIntegralInRange<int>(0, 7);
    strides[d] = kind == 0 ? 0 : step * (kind == 1 ? 2 : 1);
    step = strides[d] == 0 ? step : strides[d] * std::max<int64_t>(sizes[d], 1);
  }
  AtenTensorHandle out = nullptr;
  if (aoti_torch_empty_strided(rank, sizes.data(), strides.data(), draw_dtype(in),
                               aoti_torch_device_type_cpu(), 0, &out) != AOTI_TORCH_SUCCESS) {
    return;
  }
  fill(in, out);
  pool.live.push_back(out);
}

void make_view(FuzzedDataProvider& in, Pool& pool) {
  if (pool.live.empty()) return;
  AtenTensorHandle self = pool.live[in.ConsumeIntegralInRange<size_t>(0, pool.live.size() - 1)];
  const int64_t rank = in.ConsumeIntegralInRange<int64_t>(0, 4);
  const auto sizes = dims(in, rank, 4), strides = dims(in, rank, 6);
  AtenTensorHandle out = nullptr;
  if (aoti_torch__reinterpret_tensor(self, rank, sizes.data(), strides.data(),
                                     in.ConsumeIntegralInRange<int64_t>(0, 8), &out) == AOTI_TORCH_SUCCESS) {
    pool.live.push_back(out);
  }
}

void remove(FuzzedDataProvider& in, Pool& pool) {
  if (pool.live.empty()) return;
  const size_t i = in.ConsumeIntegralInRange<size_t>(0, pool.live.size() - 1);
  if (aoti_torch_delete_tensor_object(pool.live[i]) != AOTI_TORCH_SUCCESS) violated("delete", "deleting a live handle failed");
  pool.dead.push_back(pool.live[i]);
  pool.live.erase(pool.live.begin() + static_cast<std::ptrdiff_t>(i));
}

void call_op(FuzzedDataProvider& in, Pool& pool) {
  const std::vector<ServedOp>& ops = served();
  if (ops.empty()) return;
  const ServedOp& op = ops[in.ConsumeIntegralInRange<size_t>(0, ops.size() - 1)];
  Draw f(in, pool);
  aotrt::clear_last_error();
  const AOTITorchError rc = op.call(op.fn, f);
  if (rc != AOTI_TORCH_SUCCESS && rc != AOTI_TORCH_FAILURE) violated(op.name, "returned neither success nor failure");
  if (rc == AOTI_TORCH_FAILURE) {
    if (aotrt::last_error().find(op.name) == std::string::npos) violated(op.name, "refused without a message naming it");
    for (AtenTensorHandle r : f.results()) {
      if (r != sentinel()) violated(op.name, "was refused but wrote a result");
    }
    return;
  }
  if (f.gave_bad_handle()) violated(op.name, "accepted a deleted or null tensor handle");
  for (AtenTensorHandle r : f.results()) {
    if (r == sentinel()) violated(op.name, "succeeded without writing a result");
    if (r == nullptr) continue;  // an undefined optional result
    if (!aotrt::handle_is_live(r)) violated(op.name, "returned a handle that is not live");
    const aotrt::TensorImpl& t = aotrt::handle_get(r, op.name);
    touch(t);
    // Only a result of at most kPoolElements elements is kept for later calls
    // (as large as make_tensor's): the memory limit bounds what a program
    // allocates, this bounds its work (index_put of a 32768-element randint
    // result into another walked 8^9 positions, 90 s under ASan).
    if (pool.live.size() < 12 && in.ConsumeBool() && t.numel() <= kPoolElements) {
      pool.live.push_back(r);
    } else if (aoti_torch_delete_tensor_object(r) != AOTI_TORCH_SUCCESS) {
      violated(op.name, "its result could not be deleted");
    }
  }
  // The in-place resize_ and set_ change a pool tensor itself: one grown past
  // kPoolElements leaves the pool, as a result that large would.
  for (size_t i = 0; i < pool.live.size();) {
    const aotrt::TensorImpl& t = aotrt::handle_get(pool.live[i], op.name);
    if (t.numel() <= kPoolElements) {
      touch(t);  // a resized tensor's elements all lie in its storage
      ++i;
      continue;
    }
    if (aoti_torch_delete_tensor_object(pool.live[i]) != AOTI_TORCH_SUCCESS) violated(op.name, "a grown pool tensor could not be deleted");
    pool.dead.push_back(pool.live[i]);
    pool.live.erase(pool.live.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  aotrt::allocator_for(aotrt::cpu_device()).set_limit(int64_t{64} << 20);
  for (const OpRow& row : kOps) {
    if (void* fn = ::dlsym(RTLD_DEFAULT, row.name)) served().push_back({row.name, fn, row.call});
  }
  std::fprintf(stderr, "fuzz_op_shims: %zu of the %zu ops in torch's C shim headers are served:",
               served().size(), std::size(kOps));
  for (const ServedOp& op : served()) std::fprintf(stderr, " %s", op.name);
  std::fprintf(stderr, "\n");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int64_t handles_before = aotrt::handle_live_count();
  Pool pool;
  const int steps = in.ConsumeIntegralInRange<int>(1, 24);
  for (int step = 0; step < steps && in.remaining_bytes() > 0; ++step) {
    switch (in.ConsumeIntegralInRange<int>(0, 9)) {
      case 0: case 1: make_tensor(in, pool); break;
      case 2: make_view(in, pool); break;
      case 3: remove(in, pool); break;
      default: call_op(in, pool); break;
    }
  }
  for (AtenTensorHandle h : pool.live) {
    if (aoti_torch_delete_tensor_object(h) != AOTI_TORCH_SUCCESS) violated("teardown", "deleting a pool handle failed");
  }
  if (aotrt::handle_live_count() != handles_before) violated("teardown", "live handle count did not return");
  return 0;
}
