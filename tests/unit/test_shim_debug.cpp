// Debug and profiler hooks: check_inf_and_nan, print_tensor_handle,
// record_function_start/end.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "conformance_backends.h"

using namespace aotrt::test;

namespace {

const Backend kCpu = built_backends()[0];
const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(ShimCheckInfAndNaN, FiniteTensorsPass) {
  Tensor t = filled<float>(kCpu, {1.f, -2.f, 3e38f}, {3});
  EXPECT_EQ(aoti_torch_check_inf_and_nan("t", t.get()), AOTI_TORCH_SUCCESS);
  Tensor i = filled<int32_t>(kCpu, {1, 2}, {2});
  EXPECT_EQ(aoti_torch_check_inf_and_nan("i", i.get()), AOTI_TORCH_SUCCESS);
}

TEST(ShimCheckInfAndNaN, NamesTheTensorAndTheFlatIndex) {
  Tensor t = filled<float>(kCpu, {1.f, kNaN, 3.f}, {3});
  EXPECT_EQ(aoti_torch_check_inf_and_nan("buf7", t.get()), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_check_inf_and_nan", "nan", "buf7", "index 1"}));
  Tensor h = filled<uint16_t>(kCpu, {0x3c00, 0x7c00}, {2});
  Tensor half;
  const Dims s{2}, st{1};
  ASSERT_EQ(aoti_torch__alloc_from_pool(h.get(), 0, kF16, 1, s.data(), st.data(), half.out()),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_check_inf_and_nan("h", half.get()), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"inf", "'h'"}));
}

TEST(ShimCheckInfAndNaN, LooksOnlyAtTheViewsElements) {
  Tensor t = filled<float>(kCpu, {1.f, kNaN, 3.f, kNaN, 5.f}, {5});
  Tensor v = reinterpret(t.get(), {3}, {2}, 0);  // 1, 3, 5: the NaNs are in the holes
  EXPECT_EQ(aoti_torch_check_inf_and_nan("v", v.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
}

TEST(ShimPrintTensorHandle, PrintsMetadataAndSurvivesBadHandles) {
  Tensor base = empty(kCpu, {10}, kF32);
  Tensor v = reinterpret(base.get(), {2, 2}, {1, 3}, 4);
  testing::internal::CaptureStderr();
  aoti_torch_print_tensor_handle(v.get(), "my view");
  Tensor u;
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(u.out()), AOTI_TORCH_SUCCESS);
  aoti_torch_print_tensor_handle(u.get(), nullptr);
  aoti_torch_print_tensor_handle(nullptr, "null");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("my view"), std::string::npos) << err;
  EXPECT_NE(err.find("float32"), std::string::npos) << err;
  EXPECT_NE(err.find("strides=[1,3,]"), std::string::npos) << err;
  EXPECT_NE(err.find("offset=4"), std::string::npos) << err;
  EXPECT_NE(err.find("undefined"), std::string::npos) << err;
}

TEST(ShimRecordFunction, IsANoOpThatSucceeds) {
  void* guard = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(aoti_record_function_start("op", nullptr, nullptr, 0, &guard), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(guard, nullptr);
  EXPECT_EQ(aoti_record_function_end(guard), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_record_function_start("op", nullptr, nullptr, 0, nullptr), AOTI_TORCH_SUCCESS);
}

}  // namespace
