// Conformance: a view spanning more than 2^32 elements is addressed in 64
// bits everywhere (reinterpret, copy_ both ways, clone, zero_). The buffer is
// uint8 on the CPU (8 GiB, of which only a few pages are touched) and
// float32 on CUDA (32 GiB). See the table in test_conformance.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "conformance_backends.h"

namespace aotrt::test {
namespace {

class ConformanceLarge : public ::testing::TestWithParam<Backend> {};

constexpr int64_t kStride = (int64_t{1} << 31) + 3;
constexpr int64_t kOffset = (int64_t{1} << 32) + 5;
constexpr int64_t kLast = kOffset + 2 * kStride;  // 2^33 + 11
constexpr int64_t kNumel = kLast + 2;              // one element past the last, for a canary

// One element of the buffer as raw bytes, read or written through the
// buffer's data pointer (no aotrt copy).
struct Raw {
  const Backend& b;
  char* base;
  size_t itemsize;
  std::vector<uint8_t> get(int64_t i) const {
    std::vector<uint8_t> v(itemsize);
    read_raw(b, v.data(), base + i * static_cast<int64_t>(itemsize), itemsize);
    return v;
  }
  void set(int64_t i, const std::vector<uint8_t>& v) const {
    write_raw(b, base + i * static_cast<int64_t>(itemsize), v.data(), itemsize);
  }
};

// The bytes of value k in the buffer's dtype (uint8 k, or float32 k).
std::vector<uint8_t> value(int32_t dtype, int k) {
  if (dtype == kU8) return {static_cast<uint8_t>(k)};
  const float f = static_cast<float>(k);
  std::vector<uint8_t> v(4);
  std::memcpy(v.data(), &f, 4);
  return v;
}

TEST_P(ConformanceLarge, ViewSpanningMoreThan2To32Elements) {
  const Backend& b = GetParam();
  const int32_t dt = b.large_dtype;
  const size_t itemsize = aoti_torch_dtype_element_size(dt);
  Tensor buf = empty(b, {kNumel}, {1}, dt);
  ASSERT_TRUE(buf) << "could not allocate the " << kNumel * static_cast<int64_t>(itemsize)
                   << "-byte buffer";
  void* base = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(buf.get(), &base), AOTI_TORCH_SUCCESS);
  const Raw raw{b, static_cast<char*>(base), itemsize};
  const int64_t pos[3] = {kOffset, kOffset + kStride, kLast};
  for (int k = 0; k < 3; ++k) {
    raw.set(pos[k], value(dt, 11 * (k + 1)));
    raw.set(pos[k] - 1, value(dt, 200));  // canaries either side
    raw.set(pos[k] + 1, value(dt, 201));
    raw.set(pos[k] % (int64_t{1} << 32), value(dt, 99));  // where a 32-bit index would land
  }

  Tensor v = reinterpret(buf.get(), {3}, {kStride}, kOffset);
  const Meta m = meta(v.get());
  EXPECT_EQ(m.offset, kOffset);
  EXPECT_EQ(m.strides, Dims{kStride});
  void* vdata = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(v.get(), &vdata), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(static_cast<char*>(vdata) - static_cast<char*>(base),
            kOffset * static_cast<int64_t>(itemsize));

  // View -> dense on the same device, and -> host.
  auto expect_elements = [&](AtenTensorHandle dense, int a, int bb, int c) {
    const std::vector<uint8_t> got = read_span(dense);
    std::vector<uint8_t> want;
    for (int k : {a, bb, c}) {
      const auto e = value(dt, k);
      want.insert(want.end(), e.begin(), e.end());
    }
    EXPECT_EQ(got, want);
  };
  Tensor dense = empty(b, {3}, dt);
  ASSERT_EQ(aoti_torch_copy_(dense.get(), v.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_elements(dense.get(), 11, 22, 33);
  Tensor host = empty(built_backends()[0], {3}, dt);
  ASSERT_EQ(aoti_torch_copy_(host.get(), v.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_elements(host.get(), 11, 22, 33);
  Tensor cl;
  ASSERT_EQ(aoti_torch_clone(v.get(), cl.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_elements(cl.get(), 11, 22, 33);

  // Dense -> view: exactly the three elements change.
  std::vector<uint8_t> next;
  for (int k : {44, 55, 66}) {
    const auto e = value(dt, k);
    next.insert(next.end(), e.begin(), e.end());
  }
  write_span(dense.get(), next);
  ASSERT_EQ(aoti_torch_copy_(v.get(), dense.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(raw.get(pos[k]), value(dt, 44 + 11 * k)) << "element " << k;
    EXPECT_EQ(raw.get(pos[k] - 1), value(dt, 200)) << "element " << k;
    EXPECT_EQ(raw.get(pos[k] + 1), value(dt, 201)) << "element " << k;
    EXPECT_EQ(raw.get(pos[k] % (int64_t{1} << 32)), value(dt, 99)) << "element " << k;
  }
  // Host -> view across devices, then zero_ through the view.
  ASSERT_EQ(aoti_torch_copy_(v.get(), host.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (int k = 0; k < 3; ++k) EXPECT_EQ(raw.get(pos[k]), value(dt, 11 * (k + 1)));
  ASSERT_EQ(aoti_torch_zero_(v.get()), AOTI_TORCH_SUCCESS);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(raw.get(pos[k]), value(dt, 0));
    EXPECT_EQ(raw.get(pos[k] + 1), value(dt, 201));
  }
  // A dense view past 2^32 and a 0-d view at the very end.
  Tensor tail = reinterpret(buf.get(), {2}, {1}, kLast);
  raw.set(kLast, value(dt, 7));
  Tensor tail_host = empty(built_backends()[0], {2}, dt);
  ASSERT_EQ(aoti_torch_copy_(tail_host.get(), tail.get(), 0), AOTI_TORCH_SUCCESS);
  {
    std::vector<uint8_t> want = value(dt, 7);
    const auto e = value(dt, 201);
    want.insert(want.end(), e.begin(), e.end());
    EXPECT_EQ(read_span(tail_host.get()), want);
  }
  Tensor end = reinterpret(buf.get(), {}, {}, kNumel - 1);
  EXPECT_EQ(read_span(end.get()), value(dt, 201));
}

INSTANTIATE_TEST_SUITE_P(Backends, ConformanceLarge, ::testing::ValuesIn(built_backends()),
                         backend_name);

}  // namespace
}  // namespace aotrt::test
