// Reading constants' and inputs' layouts from generated wrapper source
// (package/wrapper_source.h), on lines of the shape torch 2.13 writes.
#include <gtest/gtest.h>

#include "package/wrapper_source.h"

namespace {

constexpr const char* kSource = R"(
    constants_info_[0].name = "lin_weight";
    constants_info_[0].dtype = cached_torch_dtype_bfloat16;
    constants_info_[0].offset = 0;
    constants_info_[0].data_size = 64;
    constants_info_[0].shape = {4, 8};
    constants_info_[0].stride = {8, 1};
    constants_info_[0].original_fqn = "lin.weight";
    constants_info_[1].name = "_tensor_constant0";
    constants_info_[1].dtype = cached_torch_dtype_int64;
    constants_info_[1].shape = {};
    constants_info_[1].stride = {};
    constants_info_[2].name = "no_layout";
AOTI_NOINLINE static void check_input_0(
    int32_t arg0_1_expected_dtype = aoti_torch_dtype_float32();
    if (arg0_1_size[0] < 2) {
    if (arg0_1_size[0] > 64) {
    if (8 != arg0_1_size[1]) {
    if (8 != arg0_1_stride[0]) {
    if (1 != arg0_1_stride[1]) {
AOTI_NOINLINE static void check_input_1(
    int32_t arg1_1_expected_dtype = aoti_torch_dtype_bfloat16();
    if (3 != arg1_1_size[0]) {
    if (1 != arg1_1_stride[0]) {
static bool _check_aoti_runtime_check_inputs_env() {
    if (5 != other_size[0]) {
)";

TEST(WrapperSource, ReadsConstantLayouts) {
  const auto src = aotrt::package::parse_wrapper_source(kSource);
  ASSERT_EQ(src.constants.size(), 3u);
  EXPECT_EQ(src.constants[0].name, "lin_weight");
  EXPECT_EQ(src.constants[0].dtype, "bfloat16");
  EXPECT_TRUE(src.constants[0].has_layout);
  EXPECT_EQ(src.constants[0].sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(src.constants[0].strides, (std::vector<int64_t>{8, 1}));
  EXPECT_TRUE(src.constants[1].has_layout);  // 0-d
  EXPECT_TRUE(src.constants[1].sizes.empty());
  EXPECT_FALSE(src.constants[2].has_layout);
}

TEST(WrapperSource, ReadsInputChecks) {
  const auto src = aotrt::package::parse_wrapper_source(kSource);
  ASSERT_EQ(src.inputs.size(), 2u);
  EXPECT_EQ(src.inputs[0].dtype, "float32");
  ASSERT_EQ(src.inputs[0].sizes.size(), 2u);
  EXPECT_FALSE(src.inputs[0].sizes[0].has_value());  // dynamic: range checks only
  ASSERT_GE(src.inputs[0].min_sizes.size(), 1u);
  ASSERT_GE(src.inputs[0].max_sizes.size(), 1u);
  EXPECT_EQ(src.inputs[0].min_sizes[0], 2);  // "if (arg0_1_size[0] < 2)"
  EXPECT_EQ(src.inputs[0].max_sizes[0], 64);  // "if (arg0_1_size[0] > 64)"
  EXPECT_EQ(src.inputs[0].sizes[1], 8);
  EXPECT_TRUE(src.inputs[1].min_sizes.empty());  // static: no range
  ASSERT_EQ(src.inputs[0].strides.size(), 2u);
  EXPECT_EQ(src.inputs[0].strides[0], 8);
  EXPECT_EQ(src.inputs[1].dtype, "bfloat16");
  EXPECT_EQ(src.inputs[1].sizes.size(), 1u);  // the line after the checks is not read
  EXPECT_TRUE(aotrt::package::parse_wrapper_source("not C++ at all\n{").constants.empty());
}

}  // namespace
