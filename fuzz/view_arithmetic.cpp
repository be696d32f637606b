// libFuzzer target: the view arithmetic of the C ABI. The input is a program
// of shim calls on a pool of handles: aoti_torch_empty_strided,
// _reinterpret_tensor, _alloc_from_pool, as_strided, new_tensor_handle,
// copy_, clone, clone_preserve_strides and delete_tensor_object, with
// sizes, strides and offsets that are mostly small and sometimes anything an
// int64 holds.
//
// Invariants checked after every call, beyond "no crash, no sanitizer
// report":
//   - a call either succeeds or returns AOTI_TORCH_FAILURE with a message
//     (aotrt_last_error);
//   - every view a call returns lies inside its storage (computed here in
//     128-bit arithmetic, independently of src/core/view.cpp), shares its
//     parent's storage, and every element it addresses can be read;
//   - after a successful copy_ between different storages, each element of
//     dst holds the value of the (broadcast) source element, converted;
//   - when the program ends and its handles are deleted, the live handle
//     count is what it was before.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "aotrt/shim.h"
#include "core/allocator.h"
#include "core/handles.h"
#include "shim/boundary.h"

namespace {

constexpr int kMaxRank = 4;
constexpr int64_t kMaxTouch = 1 << 12;  // elements read per view, at most

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "invariant violated: %s (last error: %s)\n", what,
               aotrt::last_error().c_str());
  std::abort();
}

struct View {
  int64_t dim = 0;
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;
  int64_t offset = 0;
  int32_t dtype = 0;
  char* data = nullptr;
  int64_t storage_bytes = 0;
  size_t item = 0;
  // The storage's first byte, as this view's data pointer and offset say.
  char* storage_start() const { return data - offset * static_cast<int64_t>(item); }
};

View describe(AtenTensorHandle h) {
  View v;
  void* data = nullptr;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
  if (aoti_torch_get_dim(h, &v.dim) != 0 || aoti_torch_get_sizes(h, &sizes) != 0 ||
      aoti_torch_get_strides(h, &strides) != 0 || aoti_torch_get_storage_offset(h, &v.offset) != 0 ||
      aoti_torch_get_dtype(h, &v.dtype) != 0 || aoti_torch_get_data_ptr(h, &data) != 0 ||
      aoti_torch_get_storage_size(h, &v.storage_bytes) != 0) {
    violated("a getter failed on a live handle");
  }
  v.sizes = sizes;
  v.strides = strides;
  v.data = static_cast<char*>(data);
  v.item = v.dtype == aoti_torch_dtype_float64() ? 8 : 4;
  return v;
}

// Elements the view addresses, saturated at INT64_MAX (an empty view may
// have huge sizes in its other dims: ATen accepts those, and so does aotrt).
int64_t numel(const View& v) {
  for (int64_t d = 0; d < v.dim; ++d) {
    if (v.sizes[d] == 0) return 0;
  }
  __int128 n = 1;
  for (int64_t d = 0; d < v.dim; ++d) {
    n *= v.sizes[d];
    if (n > INT64_MAX) return INT64_MAX;
  }
  return static_cast<int64_t>(n);
}

// The view lies inside its storage (Note [View span], computed again here).
void check_in_bounds(const View& v) {
  if (v.offset < 0) violated("negative storage offset");
  for (int64_t d = 0; d < v.dim; ++d) {
    if (v.sizes[d] < 0 || v.strides[d] < 0) violated("negative size or stride");
  }
  // Summed only while it could still fit a storage: each term is below
  // 2^126, so the 128-bit sum cannot overflow before it passes INT64_MAX.
  __int128 last = v.offset;
  const bool empty = numel(v) == 0;
  for (int64_t d = 0; d < v.dim && !empty && last <= INT64_MAX; ++d) {
    last += static_cast<__int128>(v.sizes[d] - 1) * v.strides[d];
  }
  const __int128 end = empty ? static_cast<__int128>(v.offset) * v.item
                             : (last + 1) * static_cast<__int128>(v.item);
  if (end > v.storage_bytes) violated("a view reaches past its storage");
}

// Element `linear` (row-major over the sizes) of a view: its address.
char* element(const View& v, int64_t linear) {
  int64_t off = v.offset;
  for (int64_t d = v.dim - 1; d >= 0; --d) {
    off += (linear % v.sizes[d]) * v.strides[d];
    linear /= v.sizes[d];
  }
  return v.storage_start() + off * static_cast<int64_t>(v.item);
}

double value_at(const View& v, int64_t linear) {
  const char* p = element(v, linear);
  if (v.item == 8) {
    double x;
    std::memcpy(&x, p, 8);
    return x;
  }
  float x;
  std::memcpy(&x, p, 4);
  return x;
}

// Reads every element (so ASan sees any out-of-bounds address).
void touch(const View& v) {
  const int64_t n = numel(v);
  if (n > kMaxTouch) return;
  volatile double sink = 0;
  for (int64_t i = 0; i < n; ++i) sink = sink + value_at(v, i);
}

int64_t small_or_any(FuzzedDataProvider& in, int64_t lo, int64_t hi) {
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) return in.ConsumeIntegral<int64_t>();
  return in.ConsumeIntegralInRange<int64_t>(lo, hi);
}

std::vector<int64_t> dims(FuzzedDataProvider& in, int64_t rank, int64_t lo, int64_t hi) {
  std::vector<int64_t> v(static_cast<size_t>(rank));
  for (auto& x : v) x = small_or_any(in, lo, hi);
  return v;
}

void expect_result(AOTITorchError rc, AtenTensorHandle out, std::vector<AtenTensorHandle>& pool) {
  if (rc != 0) {
    if (aotrt::last_error().empty()) violated("a failure without a message");
    return;
  }
  if (out == nullptr) violated("success without a handle");
  const View v = describe(out);
  check_in_bounds(v);
  touch(v);
  pool.push_back(out);
}

// Writes distinct small integers into every byte-aligned element of the storage.
void fill(const View& v) {
  const int64_t n = v.storage_bytes / static_cast<int64_t>(v.item);
  for (int64_t i = 0; i < n; ++i) {
    char* p = v.storage_start() + i * static_cast<int64_t>(v.item);
    if (v.item == 8) {
      const double x = static_cast<double>(i % 1000);
      std::memcpy(p, &x, 8);
    } else {
      const float x = static_cast<float>(i % 1000);
      std::memcpy(p, &x, 4);
    }
  }
}

bool verbose() {
  static const bool v = std::getenv("AOTRT_FUZZ_VERBOSE") != nullptr;
  return v;
}

void print(const char* what, const View& v) {
  if (!verbose()) return;
  std::fprintf(stderr, "%s: %s sizes [", what, v.item == 8 ? "f64" : "f32");
  for (int64_t d = 0; d < v.dim; ++d) std::fprintf(stderr, "%s%ld", d ? ", " : "", (long)v.sizes[d]);
  std::fprintf(stderr, "] strides [");
  for (int64_t d = 0; d < v.dim; ++d) std::fprintf(stderr, "%s%ld", d ? ", " : "", (long)v.strides[d]);
  std::fprintf(stderr, "] offset %ld storage %ld bytes at %p\n", (long)v.offset, (long)v.storage_bytes,
               static_cast<void*>(numel(v) > 0 ? v.storage_start() : nullptr));
}

void copy_and_check(AtenTensorHandle dst, AtenTensorHandle src) {
  const View d = describe(dst), s = describe(src);
  print("copy_ dst", d);
  print("copy_ src", s);
  const bool separate = numel(d) > 0 && numel(s) > 0 && d.storage_start() != s.storage_start();
  // The expected values, read before the copy: src broadcast to dst's sizes.
  std::vector<double> want;
  bool broadcastable = s.dim <= d.dim;
  for (int64_t k = 1; broadcastable && k <= s.dim; ++k) {
    const int64_t ss = s.sizes[s.dim - k], ds = d.sizes[d.dim - k];
    broadcastable = ss == ds || ss == 1;
  }
  const int64_t n = numel(d);
  // ATen refuses a destination with a stride-0 dim of size > 1; with other
  // self-overlap it writes in an unspecified order, so values are checked
  // only where every element of dst has its own address.
  bool zero_stride = false;
  for (int64_t k = 0; k < d.dim; ++k) zero_stride = zero_stride || (d.sizes[k] > 1 && d.strides[k] == 0);
  bool distinct = n <= kMaxTouch;
  if (separate && broadcastable && distinct) {
    std::vector<const char*> addresses;
    for (int64_t i = 0; i < n; ++i) addresses.push_back(element(d, i));
    std::sort(addresses.begin(), addresses.end());
    distinct = std::adjacent_find(addresses.begin(), addresses.end()) == addresses.end();
  }
  if (separate && broadcastable && distinct) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i, src_off = s.offset;
      for (int64_t k = 1; k <= d.dim; ++k) {
        const int64_t index = rest % d.sizes[d.dim - k];
        rest /= d.sizes[d.dim - k];
        if (k <= s.dim && s.sizes[s.dim - k] != 1) src_off += index * s.strides[s.dim - k];
      }
      const char* p = s.storage_start() + src_off * static_cast<int64_t>(s.item);
      double x;
      if (s.item == 8) {
        std::memcpy(&x, p, 8);
      } else {
        float f;
        std::memcpy(&f, p, 4);
        x = f;
      }
      want.push_back(d.item == 8 ? x : static_cast<double>(static_cast<float>(x)));
    }
  }
  const AOTITorchError rc = aoti_torch_copy_(dst, src, 0);
  if (rc != 0) {
    if (aotrt::last_error().empty()) violated("copy_ failed without a message");
    return;
  }
  if (!broadcastable) violated("copy_ accepted a source that does not broadcast");
  if (zero_stride && n > 1) violated("copy_ wrote into a destination with a stride-0 dim");
  for (size_t i = 0; i < want.size(); ++i) {
    if (value_at(d, static_cast<int64_t>(i)) != want[i]) {
      if (verbose()) {
        std::fprintf(stderr, "element %zu: %g, want %g\n", i, value_at(d, static_cast<int64_t>(i)), want[i]);
      }
      violated("copy_ wrote a wrong value");
    }
  }
}

}  // namespace

// Sizes near 2^63 are part of the input space: the allocator's cap turns
// every request over 64 MiB into aotrt's out-of-memory error before malloc
// sees it (ASan would abort on, or libFuzzer report, a huge malloc).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  aotrt::allocator_for(aotrt::cpu_device()).set_limit(int64_t{64} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int64_t handles_before = aotrt::handle_live_count();
  std::vector<AtenTensorHandle> pool;
  const int steps = in.ConsumeIntegralInRange<int>(1, 16);
  for (int step = 0; step < steps && in.remaining_bytes() > 0; ++step) {
    const int op = in.ConsumeIntegralInRange<int>(0, 8);
    AtenTensorHandle self = pool.empty() ? nullptr
                                         : pool[in.ConsumeIntegralInRange<size_t>(0, pool.size() - 1)];
    AtenTensorHandle out = nullptr;
    aotrt::clear_last_error();
    switch (op) {
      case 0: {  // a new tensor
        const int64_t rank = in.ConsumeIntegralInRange<int64_t>(0, kMaxRank);
        const auto sizes = dims(in, rank, 0, 6), strides = dims(in, rank, 0, 40);
        const int32_t dtype = in.ConsumeBool() ? aoti_torch_dtype_float32() : aoti_torch_dtype_float64();
        const AOTITorchError rc = aoti_torch_empty_strided(rank, sizes.data(), strides.data(), dtype,
                                                           aoti_torch_device_type_cpu(), 0, &out);
        expect_result(rc, out, pool);
        if (rc == 0) fill(describe(out));
        break;
      }
      case 1:  // _reinterpret_tensor: any rank, offset added to self's
      case 2: {  // as_strided: self's rank and offset
        if (self == nullptr) break;
        const View parent = describe(self);
        const int64_t rank = op == 1 ? in.ConsumeIntegralInRange<int64_t>(0, kMaxRank) : parent.dim;
        const auto sizes = dims(in, rank, 0, 6), strides = dims(in, rank, 0, 40);
        const AOTITorchError rc =
            op == 1 ? aoti_torch__reinterpret_tensor(self, rank, sizes.data(), strides.data(),
                                                     small_or_any(in, 0, 30), &out)
                    : aoti_torch_as_strided(self, sizes.data(), strides.data(), &out);
        expect_result(rc, out, pool);
        if (rc == 0) {
          const View v = describe(out);
          if (v.storage_bytes != parent.storage_bytes) violated("a view has another storage size");
          // (An empty tensor's data pointer is null, as in c10: nothing to compare.)
          if (numel(v) > 0 && numel(parent) > 0 && v.storage_start() != parent.storage_start()) {
            violated("a view does not share its parent's storage");
          }
        }
        break;
      }
      case 3: {  // copy_ between two pool handles
        if (self == nullptr) break;
        AtenTensorHandle src = pool[in.ConsumeIntegralInRange<size_t>(0, pool.size() - 1)];
        copy_and_check(self, src);
        break;
      }
      case 4:
      case 5: {  // clone, clone_preserve_strides: new storage, same values
        if (self == nullptr) break;
        const AOTITorchError rc = op == 4 ? aoti_torch_clone(self, &out)
                                          : aoti_torch_clone_preserve_strides(self, &out);
        expect_result(rc, out, pool);
        if (rc == 0) {
          const View a = describe(self), b = describe(out);
          if (numel(a) != numel(b)) violated("a clone has another numel");
          for (int64_t i = 0; i < numel(a) && i < kMaxTouch; ++i) {
            if (value_at(a, i) != value_at(b, i) &&
                !(value_at(a, i) != value_at(a, i) && value_at(b, i) != value_at(b, i))) {
              violated("a clone holds other values");
            }
          }
        }
        break;
      }
      case 7: {  // _alloc_from_pool: a byte offset from the storage start, another dtype
        if (self == nullptr) break;
        const View pool_view = describe(self);
        const int64_t rank = in.ConsumeIntegralInRange<int64_t>(0, kMaxRank);
        const auto sizes = dims(in, rank, 0, 6), strides = dims(in, rank, 0, 40);
        const int32_t dtype = in.ConsumeBool() ? aoti_torch_dtype_float32() : aoti_torch_dtype_float64();
        const AOTITorchError rc = aoti_torch__alloc_from_pool(
            self, small_or_any(in, 0, 64), dtype, rank, sizes.data(), strides.data(), &out);
        expect_result(rc, out, pool);
        if (rc == 0) {
          const View v = describe(out);
          if (pool_view.offset != 0) violated("_alloc_from_pool accepted a pool at an offset");
          if (v.storage_bytes != pool_view.storage_bytes) violated("a pool view has another storage size");
          if (numel(v) > 0 && numel(pool_view) > 0 && v.storage_start() != pool_view.storage_start()) {
            violated("a pool view does not share the pool's storage");
          }
        }
        break;
      }
      case 8: {  // another handle to the same view
        if (self == nullptr) break;
        const View a = describe(self);
        const AOTITorchError rc = aoti_torch_new_tensor_handle(self, &out);
        expect_result(rc, out, pool);
        if (rc == 0) {
          const View b = describe(out);
          if (b.offset != a.offset || b.dim != a.dim || b.data != a.data) violated("an alias differs");
        }
        break;
      }
      case 6: {  // delete one
        if (self == nullptr) break;
        if (aoti_torch_delete_tensor_object(self) != 0) violated("deleting a live handle failed");
        pool.erase(std::find(pool.begin(), pool.end(), self));
        break;
      }
    }
  }
  for (AtenTensorHandle h : pool) {
    if (aoti_torch_delete_tensor_object(h) != 0) violated("deleting a live handle failed");
  }
  if (aotrt::handle_live_count() != handles_before) violated("handles leaked");
  return 0;
}
