// Helpers for the CPU library-op tests (test_cpu_matmul.cpp, test_cpu_conv.cpp,
// test_cpu_linear.cpp): host buffers the test owns, viewed through the C ABI
// exactly as generated code views memory (from_blob, then
// aoti_torch__reinterpret_tensor), and element access by sizes, strides and
// offset so references read views independently of aotrt.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aotrt/shim.h"

namespace aotrt::test {

// An owning tensor handle, deleted (and the deletion checked) at scope end.
class Handle {
 public:
  Handle() = default;
  explicit Handle(AtenTensorHandle h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Handle() {
    if (h_ != nullptr) EXPECT_EQ(aoti_torch_delete_tensor_object(h_), AOTI_TORCH_SUCCESS);
  }
  AtenTensorHandle get() const { return h_; }
  AtenTensorHandle* out() { return &h_; }

 private:
  AtenTensorHandle h_ = nullptr;
};

// Sizes, strides and offset of a view, in elements.
struct Layout {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
  // Offset of the element at a multi-index.
  int64_t at(const std::vector<int64_t>& idx) const {
    int64_t o = offset;
    for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
    return o;
  }
  // One past the last element it can touch.
  int64_t extent() const {
    int64_t e = offset;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0) return offset;
      e += (sizes[d] - 1) * strides[d];
    }
    return e + 1;
  }
};

inline std::vector<int64_t> contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t step = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    s[d] = step;
    step *= std::max<int64_t>(sizes[d], 1);
  }
  return s;
}
inline Layout dense(const std::vector<int64_t>& sizes) { return {sizes, contiguous(sizes), 0}; }

// Calls f(index) for every multi-index of sizes, row-major.
template <typename F>
void for_each_index(const std::vector<int64_t>& sizes, F&& f) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> idx(sizes.size(), 0);
  while (true) {
    f(idx);
    size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (sizes.empty()) return;
  }
}

// Memory the test owns, as one flat tensor of `dtype`; views of it come from
// aoti_torch__reinterpret_tensor. T is the element's storage type (uint16_t
// for bfloat16 and float16).
template <typename T>
class HostBuffer {
 public:
  HostBuffer(int64_t n, T fill, int32_t dtype) : data_(static_cast<size_t>(n), fill) {
    const int64_t sizes[] = {n}, strides[] = {1};
    EXPECT_EQ(aoti_torch_create_tensor_from_blob(data_.data(), 1, sizes, strides, 0, dtype,
                                                 aoti_torch_device_type_cpu(), 0, base_.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
  }
  Handle view(const Layout& l) const {
    Handle h;
    EXPECT_EQ(aoti_torch__reinterpret_tensor(base_.get(), static_cast<int64_t>(l.sizes.size()),
                                             l.sizes.data(), l.strides.data(), l.offset,
                                             h.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    return h;
  }
  T& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
  const T& operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }
  std::vector<T>& data() { return data_; }

 private:
  std::vector<T> data_;
  Handle base_;
};

// Small integers in [-5, 5], so products and short sums are exact in float32.
inline float small_int(int64_t i) { return static_cast<float>((i * 7 + 3) % 11) - 5.f; }
// Pseudo-random values in [-1, 1) that differ in every bit.
inline float noise(int64_t i) {
  uint32_t x = static_cast<uint32_t>(i) * 2654435761u + 12345u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return static_cast<float>(x & 0xffffff) / 8388608.f - 1.f;
}

// Strides of a tensor handle, read through the ABI.
inline std::vector<int64_t> strides_of(AtenTensorHandle h) {
  int64_t dim = 0;
  int64_t* strides = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_get_strides(h, &strides), AOTI_TORCH_SUCCESS);
  return std::vector<int64_t>(strides, strides + dim);
}
inline std::vector<int64_t> sizes_of(AtenTensorHandle h) {
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(h, &dim), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_get_sizes(h, &sizes), AOTI_TORCH_SUCCESS);
  return std::vector<int64_t>(sizes, sizes + dim);
}

// --- The fused oneDNN ops' epilogues (Note [Fused oneDNN ops] in ops/linear.h) ----------

// A fused op's activation by its definition (ATen's), in double.
struct Unary {
  std::string attr;
  std::vector<double> scalars;
  std::string algorithm;  // gelu's "none" / "tanh"; "" for none given
};

inline double activate(const Unary& u, double x) {
  const double kPi = 3.14159265358979323846;
  if (u.attr == "none") return x;
  if (u.attr == "relu") return x > 0 ? x : 0;
  if (u.attr == "leaky_relu") return x > 0 ? x : x * u.scalars[0];
  if (u.attr == "hardtanh") return std::min(std::max(x, u.scalars[0]), u.scalars[1]);
  if (u.attr == "sigmoid") return 1 / (1 + std::exp(-x));
  if (u.attr == "tanh") return std::tanh(x);
  if (u.attr == "swish") return x / (1 + std::exp(-x));
  if (u.attr == "hardswish") return x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
  if (u.attr == "hardsigmoid") return std::min(std::max(x + 3, 0.0), 6.0) / 6;
  if (u.attr == "gelu" && u.algorithm == "tanh") {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
  }
  if (u.attr == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  ADD_FAILURE() << "no reference for attr " << u.attr;
  return 0;
}

inline double combine(const std::string& binary, double a, double b) {
  if (binary == "add") return a + b;
  if (binary == "sub") return a - b;
  if (binary == "mul") return a * b;
  return a / b;
}

// The fused op's scalars and algorithm as the C ABI takes them.
struct UnaryArgs {
  std::vector<double> values;
  std::vector<const double*> ptrs;
  const char* alg = nullptr;
  explicit UnaryArgs(const Unary& u) : values(u.scalars) {
    for (const double& v : values) ptrs.push_back(&v);
    if (!u.algorithm.empty()) alg = u.algorithm.c_str();
  }
  const double** scalars() { return ptrs.empty() ? nullptr : ptrs.data(); }
  int64_t len() const { return static_cast<int64_t>(ptrs.size()); }
  const char** algorithm() { return alg != nullptr ? &alg : nullptr; }
};

inline std::vector<Unary> every_unary() {
  return {{"none", {}, ""},        {"relu", {}, ""},         {"leaky_relu", {0.2}, ""},
          {"hardtanh", {-0.3, 0.4}, ""}, {"sigmoid", {}, ""}, {"tanh", {}, ""},
          {"swish", {}, ""},       {"hardswish", {}, ""},    {"hardsigmoid", {}, ""},
          {"gelu", {}, "none"},    {"gelu", {}, "tanh"}};
}

}  // namespace aotrt::test
