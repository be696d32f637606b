// The factory family's C shims called directly (inductor lowers
// torch.hann_window and _efficientzerotensor itself, so no package of torch's
// reaches them): hann_window against torch 2.13's values, printed with
// `torch.hann_window(n, dtype=...)`, and _efficientzerotensor's zeros.
// Tolerances: 1 ulp of float32 (ATen rounds each step in float32), 1e-15 in
// float64. See Note [Window and zero factories].
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "aotrt/shim.h"
#include "ops_testing.h"

namespace {

// The entry points, by name from the loaded libaotrt.so (their C signatures
// are torch's c_shim_cpu.h's).
using HannFn = AOTITorchError (*)(int64_t, int32_t*, int32_t*, int32_t*, int32_t, int32_t*,
                                  AtenTensorHandle*);
using ZerosFn = AOTITorchError (*)(const int64_t*, int64_t, int32_t*, int32_t*, int32_t*, int32_t,
                                   int32_t*, AtenTensorHandle*);
template <class Fn>
Fn op(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

struct Owned {
  AtenTensorHandle h = nullptr;
  ~Owned() {
    if (h != nullptr) aoti_torch_delete_tensor_object(h);
  }
};

template <class T>
std::vector<T> values(AtenTensorHandle h) {
  int64_t n = 0;
  void* p = nullptr;
  aoti_torch_get_numel(h, &n);
  aoti_torch_get_data_ptr(h, &p);
  std::vector<T> v(static_cast<size_t>(n));
  if (n > 0) std::memcpy(v.data(), p, v.size() * sizeof(T));
  return v;
}

TEST(OpsFactory, HannWindowMatchesTorch) {
  const std::vector<double> want16 = {
      0.0, 0.03806024789810181, 0.1464466154575348, 0.30865830183029175, 0.5,
      0.691341757774353, 0.8535534143447876, 0.961939811706543, 1.0, 0.9619397521018982,
      0.853553295135498, 0.6913415789604187, 0.5, 0.3086581826210022, 0.14644649624824524,
      0.03806021809577942};
  const auto aoti_torch_cpu_hann_window = op<HannFn>("aoti_torch_cpu_hann_window");
  ASSERT_NE(aoti_torch_cpu_hann_window, nullptr);
  Owned w;
  ASSERT_EQ(aoti_torch_cpu_hann_window(16, nullptr, nullptr, nullptr, 0, nullptr, &w.h),
            AOTI_TORCH_SUCCESS);
  int32_t dtype = -1;
  aoti_torch_get_dtype(w.h, &dtype);
  EXPECT_EQ(dtype, 6);  // float32
  const std::vector<float> got = values<float>(w.h);
  ASSERT_EQ(got.size(), want16.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want16[i], 1.2e-7) << i;

  const std::vector<double> want7 = {0.0, 0.1882550990706332, 0.6112604669781572,
                                     0.9504844339512095, 0.9504844339512095,
                                     0.6112604669781573, 0.1882550990706333};
  Owned w64;
  int32_t f64 = 7;
  ASSERT_EQ(aoti_torch_cpu_hann_window(7, &f64, nullptr, nullptr, 0, nullptr, &w64.h),
            AOTI_TORCH_SUCCESS);
  const std::vector<double> got64 = values<double>(w64.h);
  ASSERT_EQ(got64.size(), want7.size());
  for (size_t i = 0; i < got64.size(); ++i) EXPECT_NEAR(got64[i], want7[i], 1e-15) << i;

  Owned one, none;
  ASSERT_EQ(aoti_torch_cpu_hann_window(1, nullptr, nullptr, nullptr, 0, nullptr, &one.h),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(values<float>(one.h), std::vector<float>{1.0f});
  ASSERT_EQ(aoti_torch_cpu_hann_window(0, nullptr, nullptr, nullptr, 0, nullptr, &none.h),
            AOTI_TORCH_SUCCESS);
  EXPECT_TRUE(values<float>(none.h).empty());
  Owned bad;
  int32_t i64 = 4;
  EXPECT_EQ(aoti_torch_cpu_hann_window(4, &i64, nullptr, nullptr, 0, nullptr, &bad.h),
            AOTI_TORCH_FAILURE);
}

TEST(OpsFactory, EfficientZeroTensorIsContiguousZeros) {
  const auto aoti_torch_cpu__efficientzerotensor =
      op<ZerosFn>("aoti_torch_cpu__efficientzerotensor");
  ASSERT_NE(aoti_torch_cpu__efficientzerotensor, nullptr);
  const int64_t size[] = {3, 4};
  int32_t f64 = 7;
  Owned z;
  ASSERT_EQ(
      aoti_torch_cpu__efficientzerotensor(size, 2, &f64, nullptr, nullptr, 0, nullptr, &z.h),
      AOTI_TORCH_SUCCESS);
  int64_t* strides = nullptr;
  aoti_torch_get_strides(z.h, &strides);
  EXPECT_EQ(strides[0], 4);
  EXPECT_EQ(strides[1], 1);
  EXPECT_EQ(values<double>(z.h), std::vector<double>(12, 0.0));
}

}  // namespace

namespace aotrt::test {
namespace {

// The CUDA entry point (built with CUDA only): the device's cos is within 2 ulp of the
// CPU's, so float32 gets 2 ulp of 1; float64 torch's values, as above.
TEST(OpsFactoryCuda, HannWindowMatchesTorch) {
  AOTRT_SKIP_WITHOUT_CUDA();
  for (const Backend& b : built_backends()) {
    if (b.is_cpu()) continue;
    const auto hann = find_op<HannFn>(b, "hann_window");
    ASSERT_NE(hann, nullptr);
    // 0.5 - 0.5 cos(2 pi n / 8), exactly; float32 rounds within 2.4e-7 of it.
    const std::vector<double> want8 = {0.0, 0.14644660940672624, 0.5, 0.8535533905932737, 1.0,
                                       0.8535533905932737, 0.5, 0.14644660940672624};
    Tensor w;
    ASSERT_EQ(hann(8, nullptr, nullptr, nullptr, b.device_index, nullptr, w.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(meta(w.get()).dtype, kF32);
    EXPECT_TRUE(close_values(values_of(w.get()), want8, 0, 2.4e-7));
    const std::vector<double> want7 = {0.0, 0.1882550990706332, 0.6112604669781572,
                                       0.9504844339512095, 0.9504844339512095,
                                       0.6112604669781573, 0.1882550990706333};
    int32_t f64 = kF64;
    Tensor w64;
    ASSERT_EQ(hann(7, &f64, nullptr, nullptr, b.device_index, nullptr, w64.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_TRUE(close_values(values_of(w64.get()), want7, 0, 1e-15));
    int32_t bf16 = kBF16;
    Tensor one, half;
    ASSERT_EQ(hann(1, nullptr, nullptr, nullptr, b.device_index, nullptr, one.out()),
              AOTI_TORCH_SUCCESS);
    EXPECT_EQ(values_of(one.get()), std::vector<double>{1.0});
    ASSERT_EQ(hann(4, &bf16, nullptr, nullptr, b.device_index, nullptr, half.out()),
              AOTI_TORCH_SUCCESS);
    EXPECT_EQ(values_of(half.get()), (std::vector<double>{0.0, 0.5, 1.0, 0.5}));
  }
}

}  // namespace
}  // namespace aotrt::test
