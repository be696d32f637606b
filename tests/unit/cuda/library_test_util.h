// Helpers for the CUDA library-op tests (test_cuda_matmul, _conv, _attention):
// device tensors as views into a storage whose every element the test knows
// (so writes outside a view are caught), host references in double
// precision, and comparisons that say where they failed.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "aotrt/shim.h"
#include "aotrt/shim_cuda.h"
#include "core/dtype.h"

namespace aotrt::cuda_test {

constexpr int32_t kF32 = 6, kF64 = 7, kF16 = 5, kBF16 = 15, kI64 = 4;
constexpr int32_t kCPU = 0, kCUDA = 1;

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define AOTRT_REQUIRE_GPU()                                          \
  do {                                                               \
    if (!::aotrt::cuda_test::have_gpu()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

// Fails the test with the runtime's message when a shim call fails.
#define AOTRT_OK(call) ASSERT_EQ((call), AOTI_TORCH_SUCCESS) << #call << ": " << aotrt_last_error()

inline size_t itemsize(int32_t dtype) {
  return dtype == kF32 ? 4 : (dtype == kI64 || dtype == kF64 ? 8 : 2);
}

// The value a double becomes when stored in dtype (what the device sees).
inline double round_to(int32_t dtype, double v) {
  if (dtype == kF64) return v;
  const float f = static_cast<float>(v);
  if (dtype == kF16) return half_to_float(float_to_half(f));
  if (dtype == kBF16) return bfloat16_to_float(float_to_bfloat16(f));
  return f;
}

inline void store(int32_t dtype, void* dst, double v) {
  if (dtype == kF64) {
    std::memcpy(dst, &v, 8);
    return;
  }
  const float f = static_cast<float>(v);
  if (dtype == kF32) {
    std::memcpy(dst, &f, 4);
  } else {
    const uint16_t bits = dtype == kF16 ? float_to_half(f) : float_to_bfloat16(f);
    std::memcpy(dst, &bits, 2);
  }
}

inline double load(int32_t dtype, const void* src) {
  if (dtype == kF64) {
    double d;
    std::memcpy(&d, src, 8);
    return d;
  }
  if (dtype == kF32) {
    float f;
    std::memcpy(&f, src, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, src, 2);
  return dtype == kF16 ? half_to_float(bits) : bfloat16_to_float(bits);
}

// Deterministic values in [-1, 1).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 6364136223846793005ull + 1442695040888963407ull) {}
  double next() {
    s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>((s_ >> 11) & ((1ull << 53) - 1)) / static_cast<double>(1ull << 52) -
           1.0;
  }

 private:
  uint64_t s_;
};

// An owned handle.
class Handle {
 public:
  Handle() = default;
  explicit Handle(AtenTensorHandle h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Handle& operator=(Handle&& o) noexcept {
    reset();
    h_ = o.h_;
    o.h_ = nullptr;
    return *this;
  }
  ~Handle() { reset(); }
  void reset() {
    if (h_) EXPECT_EQ(aoti_torch_delete_tensor_object(h_), AOTI_TORCH_SUCCESS);
    h_ = nullptr;
  }
  AtenTensorHandle get() const { return h_; }
  AtenTensorHandle* out() {
    reset();
    return &h_;
  }

 private:
  AtenTensorHandle h_ = nullptr;
};

// Reads any view of a CUDA (or CPU) tensor handle into row-major doubles.
inline std::vector<double> read(AtenTensorHandle h) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int64_t dim = 0, *sizes = nullptr, *strides = nullptr;
  int32_t dtype = 0, device_type = 0;
  void* data = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), 0);
  EXPECT_EQ(aoti_torch_get_sizes(h, &sizes), 0);
  EXPECT_EQ(aoti_torch_get_strides(h, &strides), 0);
  EXPECT_EQ(aoti_torch_get_dtype(h, &dtype), 0);
  EXPECT_EQ(aoti_torch_get_device_type(h, &device_type), 0);
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &data), 0);
  int64_t numel = 1, span = 1;
  for (int64_t d = 0; d < dim; ++d) {
    numel *= sizes[d];
    span += (sizes[d] - 1) * strides[d];
  }
  std::vector<double> out(static_cast<size_t>(numel));
  if (numel == 0) return out;
  const size_t isz = itemsize(dtype);
  std::vector<char> bytes(static_cast<size_t>(span) * isz);
  if (device_type == kCUDA) {
    EXPECT_EQ(cudaMemcpy(bytes.data(), data, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  } else {
    std::memcpy(bytes.data(), data, bytes.size());
  }
  std::vector<int64_t> idx(static_cast<size_t>(dim), 0);
  for (int64_t n = 0; n < numel; ++n) {
    int64_t off = 0;
    for (int64_t d = 0; d < dim; ++d) off += idx[static_cast<size_t>(d)] * strides[d];
    out[static_cast<size_t>(n)] = load(dtype, bytes.data() + off * static_cast<int64_t>(isz));
    for (int64_t d = dim - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < sizes[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

inline std::vector<int64_t> sizes_of(AtenTensorHandle h) {
  int64_t dim = 0, *p = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), 0);
  EXPECT_EQ(aoti_torch_get_sizes(h, &p), 0);
  return {p, p + dim};
}

inline std::vector<int64_t> strides_of(AtenTensorHandle h) {
  int64_t dim = 0, *p = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), 0);
  EXPECT_EQ(aoti_torch_get_strides(h, &p), 0);
  return {p, p + dim};
}

// A view (sizes, strides, offset) into a CUDA storage of storage_numel
// elements, every element of which starts as `fill` or a random value. The
// host mirror `storage` holds what the device holds (rounded to the dtype).
struct ViewSpec {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

class DeviceView {
 public:
  DeviceView(int32_t dtype, const ViewSpec& spec, int64_t storage_numel, Rng& rng,
             double scale = 1.0)
      : dtype_(dtype), spec_(spec), storage_(static_cast<size_t>(storage_numel)) {
    for (auto& v : storage_) v = round_to(dtype, scale * rng.next());
    create();
  }
  // Storage filled with one value (a sentinel or NaN).
  DeviceView(int32_t dtype, const ViewSpec& spec, int64_t storage_numel, double fill)
      : dtype_(dtype), spec_(spec), storage_(static_cast<size_t>(storage_numel), round_to(dtype, fill)) {
    create();
  }
  // Storage holding the given values (rounded to the dtype).
  DeviceView(int32_t dtype, const ViewSpec& spec, std::vector<double> storage)
      : dtype_(dtype), spec_(spec), storage_(std::move(storage)) {
    for (auto& v : storage_) v = round_to(dtype, v);
    create();
  }
  AtenTensorHandle get() const { return view_.get(); }
  const std::vector<double>& storage() const { return storage_; }
  // Element at a multi-index of the view, from the host mirror.
  double at(std::initializer_list<int64_t> idx) const {
    int64_t off = spec_.offset, d = 0;
    for (int64_t i : idx) off += i * spec_.strides[static_cast<size_t>(d++)];
    return storage_[static_cast<size_t>(off)];
  }
  double at(const std::vector<int64_t>& idx) const {
    int64_t off = spec_.offset;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * spec_.strides[d];
    return storage_[static_cast<size_t>(off)];
  }
  // The whole storage as it is on the device now.
  std::vector<double> device_storage() const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<char> bytes(storage_.size() * itemsize(dtype_));
    void* p = nullptr;
    EXPECT_EQ(aoti_torch_get_data_ptr(base_.get(), &p), 0);
    EXPECT_EQ(cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<double> out(storage_.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = load(dtype_, bytes.data() + i * itemsize(dtype_));
    return out;
  }
  // Storage offsets the view addresses.
  std::vector<int64_t> offsets() const {
    std::vector<int64_t> out;
    std::vector<int64_t> idx(spec_.sizes.size(), 0);
    int64_t numel = 1;
    for (int64_t s : spec_.sizes) numel *= s;
    for (int64_t n = 0; n < numel; ++n) {
      int64_t off = spec_.offset;
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * spec_.strides[d];
      out.push_back(off);
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < spec_.sizes[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }

 private:
  void create() {
    const int64_t n = static_cast<int64_t>(storage_.size());
    const int64_t one = 1;
    ASSERT_EQ(aoti_torch_empty_strided(1, &n, &one, dtype_, kCUDA, 0, base_.out()), 0)
        << aotrt_last_error();
    std::vector<char> bytes(storage_.size() * itemsize(dtype_));
    for (size_t i = 0; i < storage_.size(); ++i) store(dtype_, bytes.data() + i * itemsize(dtype_), storage_[i]);
    void* p = nullptr;
    ASSERT_EQ(aoti_torch_get_data_ptr(base_.get(), &p), 0);
    ASSERT_EQ(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(aoti_torch__reinterpret_tensor(base_.get(), static_cast<int64_t>(spec_.sizes.size()),
                                             spec_.sizes.data(), spec_.strides.data(),
                                             spec_.offset, view_.out()),
              0)
        << aotrt_last_error();
  }

  int32_t dtype_;
  ViewSpec spec_;
  std::vector<double> storage_;
  Handle base_;
  Handle view_;
};

// Row-major strides of sizes.
inline std::vector<int64_t> contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t r = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    s[i] = r;
    r *= std::max<int64_t>(sizes[i], 1);
  }
  return s;
}

// Elements one past the last a view touches (from offset 0).
inline int64_t extent(const ViewSpec& v) {
  for (int64_t s : v.sizes) {
    if (s == 0) return v.offset + 1;
  }
  int64_t e = v.offset + 1;
  for (size_t d = 0; d < v.sizes.size(); ++d) e += (v.sizes[d] - 1) * v.strides[d];
  return e;
}

// Compares got with want elementwise: |got - want| <= tol[i] (an infinite
// want must be met exactly); reports the first few failures.
inline void expect_within(const std::vector<double>& got, const std::vector<double>& want,
                          const std::vector<double>& tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(tol.size(), want.size()) << what;
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    const bool ok = std::isinf(want[i]) ? got[i] == want[i] : err <= tol[i];
    if (!std::isinf(want[i])) worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    if (!ok && bad++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i]
                    << " (tolerance " << tol[i] << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size()
                    << " elements out of tolerance; largest error " << worst;
}

// Compares got with want elementwise: |got - want| <= atol + rtol * scale[i]
// (scale defaults to |want|); reports the first few failures.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                         double atol, double rtol, const std::string& what,
                         const std::vector<double>* scale = nullptr) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double s = scale ? (*scale)[i] : std::fabs(want[i]);
    const double err = std::fabs(got[i] - want[i]);
    const bool ok = (std::isinf(want[i]) && got[i] == want[i]) || err <= atol + rtol * s;
    worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    if (!ok && bad++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i]
                    << " (tolerance " << atol + rtol * s << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size()
                    << " elements out of tolerance; largest error " << worst;
}

}  // namespace aotrt::cuda_test
