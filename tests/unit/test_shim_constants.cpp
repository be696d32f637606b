// Constant getters, grad mode, checks and warnings (shim/constant_shims.cpp).
// Every code is checked against the value torch 2.13's libtorch_cpu.so
// returns from the same function (read with ctypes).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "aotrt/shim.h"

namespace {

TEST(ShimConstants, DeviceTypesAreC10Codes) {
  EXPECT_EQ(aoti_torch_device_type_cpu(), 0);
  EXPECT_EQ(aoti_torch_device_type_cuda(), 1);
  EXPECT_EQ(aoti_torch_device_type_xpu(), 12);
  EXPECT_EQ(aoti_torch_device_type_mps(), 13);
  EXPECT_EQ(aoti_torch_device_type_meta(), 14);
  EXPECT_EQ(aoti_torch_device_type_privateuse1(), 20);
}

TEST(ShimConstants, DtypesAreC10ScalarTypeCodes) {
  EXPECT_EQ(aoti_torch_dtype_uint8(), 0);
  EXPECT_EQ(aoti_torch_dtype_int8(), 1);
  EXPECT_EQ(aoti_torch_dtype_int16(), 2);
  EXPECT_EQ(aoti_torch_dtype_int32(), 3);
  EXPECT_EQ(aoti_torch_dtype_int64(), 4);
  EXPECT_EQ(aoti_torch_dtype_float16(), 5);
  EXPECT_EQ(aoti_torch_dtype_float32(), 6);
  EXPECT_EQ(aoti_torch_dtype_float64(), 7);
  EXPECT_EQ(aoti_torch_dtype_complex32(), 8);
  EXPECT_EQ(aoti_torch_dtype_complex64(), 9);
  EXPECT_EQ(aoti_torch_dtype_complex128(), 10);
  EXPECT_EQ(aoti_torch_dtype_bool(), 11);
  EXPECT_EQ(aoti_torch_dtype_bfloat16(), 15);
  EXPECT_EQ(aoti_torch_dtype_float8_e5m2(), 23);
  EXPECT_EQ(aoti_torch_dtype_float8_e4m3fn(), 24);
  EXPECT_EQ(aoti_torch_dtype_float8_e5m2fnuz(), 25);
  EXPECT_EQ(aoti_torch_dtype_float8_e4m3fnuz(), 26);
  EXPECT_EQ(aoti_torch_dtype_uint16(), 27);
  EXPECT_EQ(aoti_torch_dtype_uint32(), 28);
  EXPECT_EQ(aoti_torch_dtype_uint64(), 29);
}

TEST(ShimConstants, ElementSizes) {
  struct Case {
    int32_t code;
    size_t size;
  };
  // torch 2.13: aoti_torch_dtype_element_size for every dtype getter.
  const Case cases[] = {{0, 1},  {1, 1},  {2, 2},  {3, 4},  {4, 8},  {5, 2},  {6, 4},
                        {7, 8},  {8, 4},  {9, 8},  {10, 16}, {11, 1}, {15, 2}, {23, 1},
                        {24, 1}, {25, 1}, {26, 1}, {27, 2}, {28, 4}, {29, 8}};
  for (const Case& c : cases) {
    EXPECT_EQ(aoti_torch_dtype_element_size(c.code), c.size) << "dtype " << c.code;
  }
  // Quantized and bit-packed codes (12-14, 16-22) are not served: 0.
  for (int32_t code : {-1, 12, 13, 14, 16, 17, 18, 19, 20, 21, 22, 30, 44, 1000}) {
    EXPECT_EQ(aoti_torch_dtype_element_size(code), 0u) << "code " << code;
  }
}

TEST(ShimConstants, LayoutsFollowC10LayoutOrder) {
  // Strided, Sparse, SparseCsr, Mkldnn, SparseCsc, SparseBsr, SparseBsc, Jagged.
  EXPECT_EQ(aoti_torch_layout_strided(), 0);
  EXPECT_EQ(aoti_torch_layout_sparse_coo(), 1);
  EXPECT_EQ(aoti_torch_layout_sparse_csr(), 2);
  EXPECT_EQ(aoti_torch_layout__mkldnn(), 3);
  EXPECT_EQ(aoti_torch_layout_sparse_csc(), 4);
  EXPECT_EQ(aoti_torch_layout_sparse_bsr(), 5);
  EXPECT_EQ(aoti_torch_layout_sparse_bsc(), 6);
  EXPECT_EQ(aoti_torch_layout_jagged(), 7);
}

TEST(ShimConstants, MemoryFormats) {
  EXPECT_EQ(aoti_torch_memory_format_contiguous_format(), 0);
  EXPECT_EQ(aoti_torch_memory_format_preserve_format(), 1);
  EXPECT_EQ(aoti_torch_memory_format_channels_last(), 2);
  EXPECT_EQ(aoti_torch_memory_format_channels_last_3d(), 3);
}

TEST(ShimConstants, AbiVersionIsTorch2_13) {
  // torch 2.13 returns 0x020d000000000000 (major << 56 | minor << 48).
  EXPECT_EQ(aoti_torch_abi_version(), 0x020d000000000000ull);
}

TEST(ShimGradMode, OffByDefaultAndPerThread) {
  EXPECT_FALSE(aoti_torch_grad_mode_is_enabled());
  aoti_torch_grad_mode_set_enabled(true);
  EXPECT_TRUE(aoti_torch_grad_mode_is_enabled());
  bool other_thread = true;
  std::thread([&] { other_thread = aoti_torch_grad_mode_is_enabled(); }).join();
  EXPECT_FALSE(other_thread);
  aoti_torch_grad_mode_set_enabled(false);
  EXPECT_FALSE(aoti_torch_grad_mode_is_enabled());
}

TEST(ShimCheck, PassingCheckDoesNothing) {
  EXPECT_NO_THROW(aoti_torch_check(true, "f", "file.cpp", 12, "never shown"));
}

TEST(ShimCheck, FailingCheckThrowsIntoGeneratedCodeAndKeepsTheMessage) {
  // See Note [aoti_torch_check throws].
  try {
    aoti_torch_check(false, "kernel_fn", "model.cpp", 42, "index out of bounds");
    FAIL() << "aoti_torch_check(false) returned";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("index out of bounds"), std::string::npos) << what;
    EXPECT_NE(what.find("kernel_fn"), std::string::npos) << what;
    EXPECT_NE(what.find("model.cpp:42"), std::string::npos) << what;
  }
  EXPECT_NE(std::string(aotrt_last_error()).find("index out of bounds"), std::string::npos);
}

TEST(ShimCheck, NullStringsAreTolerated) {
  EXPECT_THROW(aoti_torch_check(false, nullptr, nullptr, 0, nullptr), std::runtime_error);
  testing::internal::CaptureStderr();
  aoti_torch_warn(nullptr, nullptr, 0, nullptr);
  aoti_torch_warn("f", "file.cpp", 3, "careful");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("careful"), std::string::npos) << err;
}

}  // namespace
