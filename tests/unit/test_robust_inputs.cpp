// Bad inputs are refused by Model::run before the model runs, naming the
// input and what was expected (runtime/input_check.h). The stand-in model
// (tests/unit/fixtures/test_model.cpp) takes x: float32[4]; its package here
// records x as float32 [4, 1] with strides [1, 1], as aotrt_tools.export
// records the example input. Real packages: test_robust_real.cpp.
#include <gtest/gtest.h>

#include <cstring>

#include "aotrt/aotrt.h"
#include "core/allocator.h"
#include "core/handles.h"
#include "package/temp_dir.h"
#include "package_test_util.h"
#include "robust_cases.h"
#include "runtime/input_check.h"

using aotrt::ErrorKind;
using aotrt::Model;
using aotrt::ScalarType;
using aotrt::Tensor;
using aotrt::package::TempDir;
using namespace aotrt::testing;

namespace {

constexpr const char* kArea = "bad inputs";

const char* kSpecMetadata =
    R"({"AOTI_DEVICE_KEY": "cpu", "aotrt.inputs": "[{\"dtype\": \"float32\", \"sizes\": [4, 1], \"strides\": [1, 1], \"storage_offset\": 0}]"})";

class RobustInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string blob = test_model_blob();
    const std::string path = dir_.path() + "/spec.pt2";
    write_zip(path, package_items(read_file(AOTRT_TEST_MODEL_SO), &blob, kSpecMetadata));
    model_ = std::make_unique<Model>(Model::load(path));
    ASSERT_TRUE(model_->info().input_specs.at(0).has_value());
  }

  // Runs with `inputs`, which must be refused before the model runs: no
  // allocation, no handle left, the message names input 0 'x'.
  std::string refuse(const std::string& name, std::vector<Tensor> inputs,
                     const std::vector<std::string>& needles) {
    aotrt::Allocator& cpu = aotrt::allocator_for(aotrt::cpu_device());
    const int64_t allocations = cpu.stats().total_allocations;
    const int64_t live = aotrt::handle_live_count();
    const std::string msg = expect_refused(kArea, name, ErrorKind::kInvalidArgument, needles,
                                           [&] { model_->run(inputs); });
    EXPECT_EQ(cpu.stats().total_allocations, allocations) << name << ": the model ran";
    EXPECT_EQ(aotrt::handle_live_count(), live) << name;
    return msg;
  }

  // y[0] = 2 x + 1: what the stand-in computes from an accepted input.
  static void expect_result(const std::vector<Tensor>& out, const std::vector<float>& x) {
    ASSERT_EQ(out.size(), 4u);
    const float* y = static_cast<const float*>(out[0].data_ptr());
    for (int j = 0; j < 4; ++j) EXPECT_EQ(y[j], 2 * x[j] + 1) << j;
  }

  TempDir dir_;
  std::unique_ptr<Model> model_;
  std::vector<float> x_ = {1, 2, 3, 4};
  std::vector<double> xd_ = {1, 2, 3, 4};
};

}  // namespace

TEST_F(RobustInputs, WrongCount) {
  Tensor x = Tensor::from_blob(x_.data(), {4, 1}, {1, 1}, ScalarType::Float32);
  refuse("no inputs for a model of 1", {}, {"takes 1 input(s), got 0"});
  refuse("two inputs for a model of 1", {x, x}, {"takes 1 input(s), got 2"});
  refuse("an empty Tensor (no handle)", {Tensor()}, {"input 0 ('x') is an empty Tensor"});
}

TEST_F(RobustInputs, WrongDtypeShapeStrides) {
  const std::string expected = "input 0 ('x'): expected float32 [4, 1] with strides [1, 1], got ";
  refuse("wrong dtype (float64 for float32)",
         {Tensor::from_blob(xd_.data(), {4, 1}, {1, 1}, ScalarType::Float64)},
         {expected + "float64 [4, 1] with strides [1, 1]", "convert it"});
  refuse("wrong dtype (int32 for float32)",
         {Tensor::from_blob(x_.data(), {4, 1}, {1, 1}, ScalarType::Int32)},
         {expected + "int32 [4, 1]"});
  std::vector<float> eight(8, 0.f);
  refuse("wrong size", {Tensor::from_blob(eight.data(), {5, 1}, {1, 1}, ScalarType::Float32)},
         {expected + "float32 [5, 1] with strides [1, 1]", "compiled for these sizes only"});
  refuse("wrong rank", {Tensor::from_blob(x_.data(), {4}, {1}, ScalarType::Float32)},
         {expected + "float32 [4] with strides [1]"});
  refuse("same numel, other shape",
         {Tensor::from_blob(x_.data(), {2, 2}, {2, 1}, ScalarType::Float32)},
         {expected + "float32 [2, 2]"});
  const std::string msg =
      refuse("wrong strides", {Tensor::from_blob(eight.data(), {4, 1}, {2, 1}, ScalarType::Float32)},
             {expected + "float32 [4, 1] with strides [2, 1]", "Model::prepare_input"});
  // What the message suggests works.
  std::vector<float> spaced = {1, 9, 2, 9, 3, 9, 4, 9};
  Tensor strided = Tensor::from_blob(spaced.data(), {4, 1}, {2, 1}, ScalarType::Float32);
  expect_result(model_->run(std::vector<Tensor>{model_->prepare_input(0, strided)}), x_);
  record_case(kArea, "wrong strides, laid out with Model::prepare_input", "runs", "");
}

TEST_F(RobustInputs, AcceptedLayouts) {
  // ATen's rule: a size-1 dim's stride addresses nothing.
  expect_result(model_->run(std::vector<Tensor>{
                    Tensor::from_blob(x_.data(), {4, 1}, {1, 977}, ScalarType::Float32)}),
                x_);
  record_case(kArea, "other stride on a size-1 dim", "runs (the model gets the recorded strides)", "");
  // A storage offset, and a data pointer that is not 16-byte aligned.
  std::vector<float> mem = {7, 1, 2, 3, 4};
  ASSERT_NE(reinterpret_cast<uintptr_t>(mem.data() + 1) % 16, 0u);
  expect_result(model_->run(std::vector<Tensor>{Tensor::from_blob(mem.data(), {4, 1}, {1, 1}, ScalarType::Float32,
                                               aotrt::cpu_device(), 1)}),
                x_);
  record_case(kArea, "storage offset, data not 16-byte aligned (stand-in)", "runs", "");
}

#ifdef AOTRT_WITH_CUDA
TEST_F(RobustInputs, WrongDevice) {
  Tensor host = Tensor::from_blob(x_.data(), {4, 1}, {1, 1}, ScalarType::Float32);
  refuse("CUDA input for a CPU model", {host.to(aotrt::Device{aotrt::DeviceType::CUDA, 0})},
         {"input 0 ('x') is on cuda:0 but the model runs on cpu", "Tensor::to()"});
}
#endif

TEST(RobustInputMessages, ModelCheckMessagesNameTheInput) {
  using aotrt::runtime::name_inputs_in_model_message;
  const std::vector<std::string> names = {"x", "mask"};
  EXPECT_EQ(name_inputs_in_model_message(
                "input_handles[1]: unmatched dtype, expected: 11(at::kBool), but got: 6", names),
            "input_handles[1] (input 1, 'mask'): unmatched dtype, expected: 11(at::kBool), but got: 6");
  EXPECT_EQ(name_inputs_in_model_message("input_handles[7]: x", names), "input_handles[7] (input 7): x");
  EXPECT_EQ(name_inputs_in_model_message("no inputs named here", names), "no inputs named here");
  EXPECT_EQ(name_inputs_in_model_message("input_handles[", names), "input_handles[");
  EXPECT_EQ(name_inputs_in_model_message("input_handles[x]", names), "input_handles[x]");
  EXPECT_EQ(name_inputs_in_model_message("input_handles[99999999999999999999]", names),
            "input_handles[99999999999999999999]");
}

TEST(RobustInputMessages, DescribeLayout) {
  const int64_t sizes[] = {1, 64, 40, 40}, strides[] = {102400, 1, 2560, 64};
  EXPECT_EQ(aotrt::runtime::describe_layout(ScalarType::Float32, sizes, strides),
            "float32 [1, 64, 40, 40] with strides [102400, 1, 2560, 64]");
}
