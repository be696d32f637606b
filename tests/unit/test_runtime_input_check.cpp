// The input layout rule with dynamic dims (Note [Input layout rule],
// Note [Dynamic batch export] in python/aotrt_tools/export.py).
#include <gtest/gtest.h>

#include "aotrt/aotrt.h"
#include "core/handles.h"
#include "runtime/input_check.h"

namespace aotrt {
namespace {

// A channels-last [2, 3, 4, 5] input whose dim 0 takes 2..8.
TensorSpec batch_spec() {
  TensorSpec spec;
  spec.sizes = {2, 3, 4, 5};
  spec.strides = {60, 1, 15, 3};
  spec.dynamic_dims = {DynamicDim{0, 2, 8}};
  return spec;
}

std::vector<int64_t> check(const TensorSpec& spec, const Tensor& t) {
  return runtime::check_input_layout(spec, handle_get_defined(t.handle(), "test"), 0, "x", "test");
}

TEST(InputCheck, SpecStridesKeepTheExportedDimOrderForOtherBatches) {
  const TensorSpec spec = batch_spec();
  const std::vector<int64_t> same = {2, 3, 4, 5}, bigger = {7, 3, 4, 5};
  EXPECT_EQ(runtime::spec_strides(spec, same, "test"), spec.strides);
  EXPECT_EQ(runtime::spec_strides(spec, bigger, "test"), (std::vector<int64_t>{60, 1, 15, 3}));
  ASSERT_NE(spec.dynamic(0), nullptr);
  EXPECT_EQ(spec.dynamic(1), nullptr);
}

TEST(InputCheck, DynamicDimTakesSizesInItsRangeOnly) {
  const TensorSpec spec = batch_spec();
  const Tensor five = Tensor::empty_strided({5, 3, 4, 5}, {60, 1, 15, 3}, ScalarType::Float32);
  EXPECT_EQ(check(spec, five), (std::vector<int64_t>{60, 1, 15, 3}));
  const Tensor one = Tensor::empty_strided({1, 3, 4, 5}, {60, 1, 15, 3}, ScalarType::Float32);
  const Tensor nine = Tensor::empty_strided({9, 3, 4, 5}, {60, 1, 15, 3}, ScalarType::Float32);
  for (const Tensor* t : {&one, &nine}) {
    try {
      check(spec, *t);
      ADD_FAILURE() << "a batch outside 2..8 was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dim 0 from 2 to 8"), std::string::npos) << e.what();
    }
  }
  // A static dim keeps its size; the layout must be the exported order's.
  const Tensor other = Tensor::empty_strided({5, 3, 4, 6}, {72, 1, 18, 3}, ScalarType::Float32);
  EXPECT_THROW(check(spec, other), Error);
  const Tensor row_major = Tensor::empty({5, 3, 4, 5}, ScalarType::Float32);
  try {
    check(spec, row_major);
    ADD_FAILURE() << "a row-major input was accepted for a channels-last model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prepare_input"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace aotrt
