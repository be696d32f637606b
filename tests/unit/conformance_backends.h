// The backends the device-generic tests run on, and the helpers every shim
// test uses: RAII handles, tensors made and read back through the C ABI only,
// and the counters (live handles, allocator bytes) that show ownership.
//
// Reading a view back never relies on strided copies: the storage span the
// view covers is copied flat (one dense copy_ into a CPU tensor) and indexed
// on the host with the view's own sizes, strides and offset. Writing does the
// same in reverse, so bytes in the holes of a non-packed view are kept.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "aotrt/shim.h"
#include "core/allocator.h"
#include "core/dtype.h"
#include "core/handles.h"

#ifdef AOTRT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace aotrt::test {

// --- Backends ------------------------------------------------------------------

struct Backend {
  const char* name;
  int32_t device_type;   // the code generated code passes (0 cpu, 1 cuda)
  int32_t device_index;  // what aoti_torch_get_device_index reports
  const char* op_prefix; // "aoti_torch_cpu_" / "aoti_torch_cuda_": fallback ops
  int32_t large_dtype;   // dtype of the >2^32-element buffer (uint8 on CPU, f32 on CUDA)

  bool is_cpu() const { return device_type == 0; }
  Device device() const {
    return is_cpu() ? cpu_device() : Device{DeviceType::CUDA, device_index};
  }
};

inline std::vector<Backend> built_backends() {
  std::vector<Backend> b{{"cpu", 0, -1, "aoti_torch_cpu_", 0}};
#ifdef AOTRT_WITH_CUDA
  b.push_back({"cuda", 1, 0, "aoti_torch_cuda_", 6});
#endif
  return b;
}

inline void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param.name;
}

// Memory aotrt does not own (for from_blob), and raw byte access to device
// memory that bypasses aotrt entirely.
inline void* foreign_alloc(const Backend& b, size_t nbytes) {
#ifdef AOTRT_WITH_CUDA
  if (!b.is_cpu()) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, nbytes), cudaSuccess);
    return p;
  }
#endif
  return ::operator new(nbytes);
}
inline void foreign_free(const Backend& b, void* p) {
#ifdef AOTRT_WITH_CUDA
  if (!b.is_cpu()) {
    EXPECT_EQ(cudaFree(p), cudaSuccess);
    return;
  }
#endif
  ::operator delete(p);
}
inline void write_raw(const Backend& b, void* device_dst, const void* host_src, size_t n) {
#ifdef AOTRT_WITH_CUDA
  if (!b.is_cpu()) {
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(device_dst, host_src, n, cudaMemcpyHostToDevice), cudaSuccess);
    // A pageable copy may return before its DMA lands; aotrt's streams must see it.
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return;
  }
#endif
  std::memcpy(device_dst, host_src, n);
}
inline void read_raw(const Backend& b, void* host_dst, const void* device_src, size_t n) {
#ifdef AOTRT_WITH_CUDA
  if (!b.is_cpu()) {
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(host_dst, device_src, n, cudaMemcpyDeviceToHost), cudaSuccess);
    return;
  }
#endif
  std::memcpy(host_dst, device_src, n);
}

// --- Dtypes ----------------------------------------------------------------------

constexpr int32_t kU8 = 0, kI8 = 1, kI16 = 2, kI32 = 3, kI64 = 4, kF16 = 5, kF32 = 6,
                  kF64 = 7, kC64 = 9, kBool = 11, kBF16 = 15, kU16 = 27, kU32 = 28,
                  kU64 = 29;

template <typename T> constexpr int32_t dtype_of();
template <> constexpr int32_t dtype_of<uint8_t>() { return kU8; }
template <> constexpr int32_t dtype_of<int8_t>() { return kI8; }
template <> constexpr int32_t dtype_of<int16_t>() { return kI16; }
template <> constexpr int32_t dtype_of<int32_t>() { return kI32; }
template <> constexpr int32_t dtype_of<int64_t>() { return kI64; }
template <> constexpr int32_t dtype_of<float>() { return kF32; }
template <> constexpr int32_t dtype_of<double>() { return kF64; }
template <> constexpr int32_t dtype_of<bool>() { return kBool; }
template <> constexpr int32_t dtype_of<uint16_t>() { return kU16; }
template <> constexpr int32_t dtype_of<uint32_t>() { return kU32; }
template <> constexpr int32_t dtype_of<uint64_t>() { return kU64; }

// --- Handles -------------------------------------------------------------------------

// Owns one handle; deletes it on destruction (a failed delete fails the test).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(AtenTensorHandle h) : h_(h) {}
  Tensor(Tensor&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Tensor& operator=(Tensor&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ~Tensor() { reset(); }
  void reset() {
    if (h_ != nullptr) EXPECT_EQ(aoti_torch_delete_tensor_object(h_), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    h_ = nullptr;
  }
  AtenTensorHandle get() const { return h_; }
  AtenTensorHandle release() { return std::exchange(h_, nullptr); }
  AtenTensorHandle* out() {
    reset();
    return &h_;
  }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  AtenTensorHandle h_ = nullptr;
};

using Dims = std::vector<int64_t>;

inline Dims row_major(const Dims& sizes) {
  Dims s(sizes.size());
  int64_t run = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    s[i] = run;
    run *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return s;
}

inline int64_t numel_of(const Dims& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// A new tensor from empty_strided; fails the test (and returns an empty
// Tensor) if the call fails.
inline Tensor empty(const Backend& b, const Dims& sizes, const Dims& strides, int32_t dtype) {
  Tensor t;
  EXPECT_EQ(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(),
                                     strides.data(), dtype, b.device_type,
                                     b.is_cpu() ? 0 : b.device_index, t.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  return t;
}
inline Tensor empty(const Backend& b, const Dims& sizes, int32_t dtype) {
  return empty(b, sizes, row_major(sizes), dtype);
}

inline Tensor reinterpret(AtenTensorHandle self, const Dims& sizes, const Dims& strides,
                          int64_t offset_increment) {
  Tensor t;
  EXPECT_EQ(aoti_torch__reinterpret_tensor(self, static_cast<int64_t>(sizes.size()),
                                           sizes.data(), strides.data(), offset_increment,
                                           t.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  return t;
}

inline Tensor new_handle(AtenTensorHandle self) {
  Tensor t;
  EXPECT_EQ(aoti_torch_new_tensor_handle(self, t.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  return t;
}

// What a handle says about itself, through the getters.
struct Meta {
  Dims sizes, strides;
  int64_t offset = 0;
  int32_t dtype = 0, device_type = 0;
  size_t itemsize = 0;
};
inline Meta meta(AtenTensorHandle h) {
  Meta m;
  int64_t dim = 0, *sizes = nullptr, *strides = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(aoti_torch_get_sizes(h, &sizes), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_get_strides(h, &strides), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_get_storage_offset(h, &m.offset), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_get_dtype(h, &m.dtype), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_get_device_type(h, &m.device_type), AOTI_TORCH_SUCCESS);
  if (dim > 0 && sizes != nullptr && strides != nullptr) {
    m.sizes.assign(sizes, sizes + dim);
    m.strides.assign(strides, strides + dim);
  }
  m.itemsize = aoti_torch_dtype_element_size(m.dtype);
  return m;
}

// Row-major positions of a view's elements, relative to its first element,
// in elements.
inline std::vector<int64_t> element_positions(const Dims& sizes, const Dims& strides) {
  std::vector<int64_t> pos;
  const int64_t n = numel_of(sizes);
  if (n == 0) return pos;
  pos.reserve(static_cast<size_t>(n));
  Dims index(sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = 0;
    for (size_t d = 0; d < sizes.size(); ++d) p += index[d] * strides[d];
    pos.push_back(p);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return pos;
}

// Bytes of the storage span a view covers, from its first element to one
// past its last, copied flat to a CPU tensor; {} for an empty view.
inline std::vector<uint8_t> read_span(AtenTensorHandle h, int64_t* span_elems = nullptr) {
  const Meta m = meta(h);
  int64_t last = 0;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] == 0) return {};
    last += (m.sizes[d] - 1) * m.strides[d];
  }
  const Dims len{last + 1}, one{1};
  if (span_elems) *span_elems = last + 1;
  Tensor flat = reinterpret(h, len, one, 0);
  Tensor host;
  EXPECT_EQ(aoti_torch_empty_strided(1, len.data(), one.data(), m.dtype, 0, 0, host.out()),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_copy_(host.get(), flat.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  void* data = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(host.get(), &data), AOTI_TORCH_SUCCESS);
  std::vector<uint8_t> bytes(static_cast<size_t>(len[0]) * m.itemsize);
  if (data) std::memcpy(bytes.data(), data, bytes.size());
  return bytes;
}

inline void write_span(AtenTensorHandle h, const std::vector<uint8_t>& bytes) {
  const Meta m = meta(h);
  const Dims len{static_cast<int64_t>(bytes.size() / m.itemsize)}, one{1};
  if (len[0] == 0) return;
  Tensor flat = reinterpret(h, len, one, 0);
  Tensor host;
  ASSERT_EQ(aoti_torch_empty_strided(1, len.data(), one.data(), m.dtype, 0, 0, host.out()),
            AOTI_TORCH_SUCCESS);
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(host.get(), &data), AOTI_TORCH_SUCCESS);
  std::memcpy(data, bytes.data(), bytes.size());
  ASSERT_EQ(aoti_torch_copy_(flat.get(), host.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
}

// The view's elements in row-major order.
template <typename T>
std::vector<T> read(AtenTensorHandle h) {
  const Meta m = meta(h);
  EXPECT_EQ(m.itemsize, sizeof(T));
  const std::vector<uint8_t> span = read_span(h);
  std::vector<T> out;
  for (int64_t p : element_positions(m.sizes, m.strides)) {
    T v;
    std::memcpy(&v, span.data() + p * sizeof(T), sizeof(T));
    out.push_back(v);
  }
  return out;
}

// Writes values (row-major) into the view's elements; nothing else changes.
template <typename T>
void write(AtenTensorHandle h, const std::vector<T>& values) {
  const Meta m = meta(h);
  ASSERT_EQ(m.itemsize, sizeof(T));
  std::vector<uint8_t> span = read_span(h);
  const std::vector<int64_t> pos = element_positions(m.sizes, m.strides);
  ASSERT_EQ(pos.size(), values.size());
  for (size_t i = 0; i < pos.size(); ++i) {
    std::memcpy(span.data() + pos[i] * sizeof(T), &values[i], sizeof(T));
  }
  write_span(h, span);
}

// A host tensor holding values with the given sizes (row-major), made with
// from_blob over a buffer the returned object keeps alive.
template <typename T>
struct HostTensor {
  std::vector<T> data;
  Tensor t;
  HostTensor(std::vector<T> values, const Dims& sizes) : data(std::move(values)) {
    const Dims strides = row_major(sizes);
    EXPECT_EQ(aoti_torch_create_tensor_from_blob(data.data(), static_cast<int64_t>(sizes.size()),
                                                 sizes.data(), strides.data(), 0,
                                                 dtype_of<T>(), 0, 0, t.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
  }
  AtenTensorHandle get() const { return t.get(); }
};

// A tensor on backend b with these values (row-major), sizes and strides.
template <typename T>
Tensor filled(const Backend& b, const std::vector<T>& values, const Dims& sizes,
              const Dims& strides) {
  Tensor t = empty(b, sizes, strides, dtype_of<T>());
  write<T>(t.get(), values);
  return t;
}
template <typename T>
Tensor filled(const Backend& b, const std::vector<T>& values, const Dims& sizes) {
  return filled<T>(b, values, sizes, row_major(sizes));
}

// A view's elements read or written through its data pointer and strides
// alone, as a generated kernel does (raw memory access, no aotrt copy).
template <typename T>
std::vector<T> kernel_read(const Backend& b, AtenTensorHandle h) {
  const Meta m = meta(h);
  const std::vector<int64_t> pos = element_positions(m.sizes, m.strides);
  if (pos.empty()) return {};
  void* data = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &data), AOTI_TORCH_SUCCESS);
  const int64_t span = *std::max_element(pos.begin(), pos.end()) + 1;
  std::vector<T> host(static_cast<size_t>(span));
  read_raw(b, host.data(), data, host.size() * sizeof(T));
  std::vector<T> out;
  for (int64_t p : pos) out.push_back(host[static_cast<size_t>(p)]);
  return out;
}
template <typename T>
void kernel_write(const Backend& b, AtenTensorHandle h, const std::vector<T>& values) {
  const Meta m = meta(h);
  const std::vector<int64_t> pos = element_positions(m.sizes, m.strides);
  ASSERT_EQ(pos.size(), values.size());
  if (pos.empty()) return;
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(h, &data), AOTI_TORCH_SUCCESS);
  const int64_t span = *std::max_element(pos.begin(), pos.end()) + 1;
  std::vector<T> host(static_cast<size_t>(span));
  read_raw(b, host.data(), data, host.size() * sizeof(T));
  for (size_t i = 0; i < pos.size(); ++i) host[static_cast<size_t>(pos[i])] = values[i];
  write_raw(b, data, host.data(), host.size() * sizeof(T));
}

inline std::vector<float> iota(int64_t n, float start = 0.f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<float>(i);
  return v;
}

// --- Counters ----------------------------------------------------------------------

// What must not move when a call is refused, and what shows when memory is
// freed: live handles, and the backend allocator's live bytes and blocks.
struct Counters {
  int64_t handles = 0, live_bytes = 0, live_allocations = 0;
  bool operator==(const Counters&) const = default;
};
inline Counters counters(const Backend& b) {
  const AllocatorStats s = allocator_for(b.device()).stats();
  return {handle_live_count(), s.live_bytes, s.live_allocations};
}
inline std::ostream& operator<<(std::ostream& os, const Counters& c) {
  return os << "{handles " << c.handles << ", live bytes " << c.live_bytes
            << ", live allocations " << c.live_allocations << "}";
}

// Live bytes grew by exactly nbytes on the CPU, by at least nbytes on CUDA
// (its caching allocator counts whole rounded blocks).
inline ::testing::AssertionResult grew_by(const Backend& b, const Counters& before,
                                          const Counters& after, int64_t nbytes) {
  const int64_t grew = after.live_bytes - before.live_bytes;
  if (b.is_cpu() ? grew == nbytes : grew >= nbytes) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "live bytes grew by " << grew << ", expected "
                                       << (b.is_cpu() ? "" : "at least ") << nbytes;
}

// Checks that a refused call left a clear error naming every part in
// `mentions` (case-sensitive substrings).
inline ::testing::AssertionResult error_mentions(std::initializer_list<const char*> mentions) {
  const std::string e = aotrt_last_error();
  for (const char* m : mentions) {
    if (e.find(m) == std::string::npos) {
      return ::testing::AssertionFailure() << "last error \"" << e << "\" does not mention \""
                                           << m << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace aotrt::test
