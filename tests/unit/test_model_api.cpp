// The public C++ API: Tensor, and Model on the test model .so (see
// tests/unit/fixtures/test_model.cpp for what it computes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "aotrt/aotrt.h"
#include "core/handles.h"
#include "package/temp_dir.h"
#include "package_test_util.h"

using aotrt::Error;
using aotrt::Model;
using aotrt::ScalarType;
using aotrt::Tensor;
using aotrt::package::TempDir;
using namespace aotrt::testing;

namespace {

std::vector<int64_t> vec(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

float at(const Tensor& t, std::vector<int64_t> index) {
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) off += index[d] * t.strides()[d];
  return static_cast<const float*>(t.data_ptr())[off];
}

// A package around the test model .so, written into `dir`.
std::string test_package(const TempDir& dir, bool with_blob = true,
                         const std::string& blob = test_model_blob()) {
  const std::string path = dir.path() + "/test_model.pt2";
  const std::string so = read_file(AOTRT_TEST_MODEL_SO);
  write_zip(path, package_items(so, with_blob ? &blob : nullptr));
  return path;
}

}  // namespace

TEST(TensorApi, FromBlobBorrowsCallerMemory) {
  std::vector<float> mem = {1, 2, 3, 4, 5, 6};
  {
    Tensor t = Tensor::from_blob(mem.data(), {2, 2}, {1, 2}, ScalarType::Float32,
                                 aotrt::cpu_device(), 1);
    EXPECT_TRUE(t.defined());
    EXPECT_EQ(t.dim(), 2);
    EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(t.storage_offset(), 1);
    EXPECT_EQ(t.data_ptr(), mem.data() + 1);
    EXPECT_EQ(t.device(), aotrt::cpu_device());
    EXPECT_FALSE(t.is_contiguous());
    // A copy is a new handle to the same memory.
    Tensor alias = t;
    EXPECT_NE(alias.handle(), t.handle());
    EXPECT_EQ(alias.data_ptr(), t.data_ptr());
    mem[1] = 42;
    EXPECT_EQ(at(alias, {0, 0}), 42);
    // dense_host_copy is row-major with the view's values: [[2,4],[3,5]] -> 42 4 3 5.
    Tensor d = t.dense_host_copy();
    EXPECT_EQ(vec(d.strides()), (std::vector<int64_t>{2, 1}));
    const float* dv = static_cast<const float*>(d.data_ptr());
    EXPECT_EQ(dv[0], 42);
    EXPECT_EQ(dv[1], 4);
    EXPECT_EQ(dv[2], 3);
    EXPECT_EQ(dv[3], 5);
    Tensor h = t.dense_host_copy(ScalarType::Float64);
    EXPECT_EQ(static_cast<const double*>(h.data_ptr())[3], 5.0);
  }
  EXPECT_EQ(mem[5], 6);  // never freed or written by aotrt
}

TEST(TensorApi, RefusesBadViewsAndEmptyUse) {
  std::vector<float> mem(4);
  EXPECT_THROW(Tensor::from_blob(mem.data(), {2}, {1, 1}, ScalarType::Float32), Error);
  EXPECT_THROW(Tensor::from_blob(mem.data(), {2}, {-1}, ScalarType::Float32), Error);
  EXPECT_THROW(Tensor::from_blob(nullptr, {2}, {1}, ScalarType::Float32), Error);
  EXPECT_THROW(Tensor::from_blob(mem.data(), {2}, {1}, static_cast<ScalarType>(99)), Error);
#ifndef AOTRT_WITH_CUDA
  EXPECT_THROW(Tensor::empty({2}, ScalarType::Float32, aotrt::Device{aotrt::DeviceType::CUDA, 0}),
               Error);  // a build without CUDA refuses CUDA tensors
#endif
  Tensor none;
  EXPECT_FALSE(none.defined());
  EXPECT_EQ(none.handle(), nullptr);
  EXPECT_THROW(none.sizes(), Error);
  EXPECT_THROW(none.dense_host_copy(), Error);
}

TEST(TensorApi, HandlesAreReleasedExactlyOnce) {
  const int64_t live = aotrt::handle_live_count();
  {
    Tensor a = Tensor::empty({3}, ScalarType::Int64);
    Tensor b = a;
    Tensor c = std::move(b);
    EXPECT_EQ(b.handle(), nullptr);
    a = c;  // replaces a's handle
    EXPECT_EQ(aotrt::handle_live_count(), live + 2);
    AtenTensorHandle raw = c.release();
    EXPECT_EQ(c.handle(), nullptr);
    Tensor back = Tensor::adopt(raw);
    EXPECT_EQ(aotrt::handle_live_count(), live + 2);
  }
  EXPECT_EQ(aotrt::handle_live_count(), live);
  EXPECT_THROW(Tensor::adopt(nullptr), Error);
}

TEST(ModelApi, LoadsAndReportsInfo) {
  TempDir dir;
  const std::string pkg = test_package(dir);
  const Model model = Model::load(pkg);
  const aotrt::ModelInfo& info = model.info();
  EXPECT_EQ(info.package_path, pkg);
  EXPECT_EQ(info.model_name, "model");
  EXPECT_EQ(info.so_name, "pkg/data/aotinductor/model/abc.wrapper.so");
  EXPECT_EQ(info.device, aotrt::cpu_device());
  EXPECT_EQ(info.input_names, (std::vector<std::string>{"x"}));
  EXPECT_EQ(info.output_names, (std::vector<std::string>{"y", "y_view", "y_again", "w_view"}));
  ASSERT_EQ(info.constants.size(), 1u);
  EXPECT_EQ(info.constants[0].name, "w");
  EXPECT_EQ(info.constants[0].original_fqn, "layer.w");
  EXPECT_EQ(info.constants[0].dtype, ScalarType::Float32);
  EXPECT_EQ(info.constants[0].nbytes, 64u);
  EXPECT_EQ(info.metadata.at("AOTI_DEVICE_KEY"), "cpu");
  EXPECT_EQ(model.num_inputs(), 1u);
  EXPECT_EQ(model.num_outputs(), 4u);
}

TEST(ModelApi, RunKeepsViewsAliasesAndOutlivesTheModel) {
  TempDir dir;
  const int64_t live = aotrt::handle_live_count();
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<Tensor> out;
  {
    Tensor in = Tensor::from_blob(x.data(), {4}, {1}, ScalarType::Float32);
    Model model = Model::load(test_package(dir));
    out = model.run({&in, 1});
    // The caller's input is untouched, and its handle is still theirs.
    EXPECT_TRUE(in.defined());
    EXPECT_EQ(in.data_ptr(), x.data());
    // A second run gives fresh outputs.
    std::vector<Tensor> again = model.run({&in, 1});
    EXPECT_NE(again[0].data_ptr(), out[0].data_ptr());
  }  // the model is unloaded here; the outputs must not care
  ASSERT_EQ(out.size(), 4u);
  // y = [[2x+1], [w[0:4]]] with w[i] = i + 0.5.
  EXPECT_EQ(vec(out[0].sizes()), (std::vector<int64_t>{2, 4}));
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(at(out[0], {0, j}), 2 * x[j] + 1);
    EXPECT_EQ(at(out[0], {1, j}), j + 0.5f);
  }
  // The view keeps its strides and offset, in y's memory.
  EXPECT_EQ(vec(out[1].sizes()), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(vec(out[1].strides()), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(out[1].storage_offset(), 1);
  EXPECT_EQ(out[1].data_ptr(), static_cast<float*>(out[0].data_ptr()) + 1);
  EXPECT_EQ(at(out[1], {0, 0}), 5.0f);   // y[0,1] = 2*2+1
  EXPECT_EQ(at(out[1], {1, 1}), 3.5f);   // y[1,3] = w[3]
  // The repeated slot is its own handle to the same view.
  EXPECT_NE(out[2].handle(), out[0].handle());
  EXPECT_EQ(out[2].data_ptr(), out[0].data_ptr());
  // The view of the constant was copied out of the model, strides kept.
  EXPECT_EQ(vec(out[3].sizes()), (std::vector<int64_t>{3}));
  EXPECT_EQ(vec(out[3].strides()), (std::vector<int64_t>{5}));
  EXPECT_EQ(out[3].storage_offset(), 1);
  EXPECT_EQ(at(out[3], {0}), 1.5f);
  EXPECT_EQ(at(out[3], {1}), 6.5f);
  EXPECT_EQ(at(out[3], {2}), 11.5f);
  out.clear();
  EXPECT_EQ(aotrt::handle_live_count(), live);
}

TEST(ModelApi, RunTakesStridedInputViews) {
  TempDir dir;
  Model model = Model::load(test_package(dir));
  std::vector<float> mem = {9, 1, 9, 2, 9, 3, 9, 4};
  Tensor in = Tensor::from_blob(mem.data(), {4}, {2}, ScalarType::Float32, aotrt::cpu_device(), 1);
  const auto out = model.run({&in, 1});
  for (int j = 0; j < 4; ++j) EXPECT_EQ(at(out[0], {0, j}), 2 * (j + 1) + 1);
}

TEST(ModelApi, RunFailuresAreErrorsAndLeakNothing) {
  TempDir dir;
  Model model = Model::load(test_package(dir));
  std::vector<float> five(5, 1.f);
  Tensor bad = Tensor::from_blob(five.data(), {5}, {1}, ScalarType::Float32);
  std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN(), 0, 0, 0};
  Tensor in = Tensor::from_blob(nan.data(), {4}, {1}, ScalarType::Float32);
  Tensor empty;
  const int64_t live = aotrt::handle_live_count();
  try {
    model.run({&bad, 1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), aotrt::ErrorKind::kBackend);
    EXPECT_NE(std::string(e.what()).find("x must be float32[4]"), std::string::npos) << e.what();
  }
  // The model refused before stealing: the fresh handle was deleted by aotrt.
  EXPECT_EQ(aotrt::handle_live_count(), live);

  // A shim failure inside the model: both messages are reported.
  try {
    model.run({&in, 1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("AOTInductorModelContainerRun failed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aoti_torch_empty_strided API call failed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("last aotrt shim failure"), std::string::npos) << msg;
    EXPECT_NE(msg.find("999"), std::string::npos) << msg;  // the bad dtype, from the shim
  }
  EXPECT_EQ(aotrt::handle_live_count(), live);

  // Wrong input count and empty inputs are refused before the model runs.
  EXPECT_THROW(model.run({}), Error);
  EXPECT_THROW(model.run({&empty, 1}), Error);
  EXPECT_EQ(aotrt::handle_live_count(), live);
}

TEST(ModelApi, TwoModelsAreIndependent) {
  TempDir dir;
  const std::string pkg = test_package(dir);
  std::vector<float> x = {1, 1, 1, 1};
  Tensor in = Tensor::from_blob(x.data(), {4}, {1}, ScalarType::Float32);
  auto a = std::make_unique<Model>(Model::load(pkg));
  Model b = Model::load(pkg);
  const auto out_a = a->run({&in, 1});
  a.reset();  // unloading one leaves the other working
  const auto out_b = b.run({&in, 1});
  EXPECT_EQ(at(out_a[0], {0, 0}), 3.0f);
  EXPECT_EQ(at(out_b[0], {1, 2}), 2.5f);
  // Moved-from models refuse to be used.
  Model c = std::move(b);
  EXPECT_THROW(b.info(), Error);
  EXPECT_EQ(c.num_outputs(), 4u);
}

TEST(ModelApi, PrepareInputUsesTheExportedLayout) {
  TempDir dir;
  // aotrt_tools.export records the example inputs' layout as a JSON string.
  const std::string metadata =
      R"({"AOTI_DEVICE_KEY": "cpu", "aotrt.inputs": "[{\"dtype\": \"float32\", \"sizes\": [2, 3, 4, 5], \"strides\": [60, 1, 15, 3], \"storage_offset\": 0}]"})";
  const std::string path = dir.path() + "/specs.pt2";
  const std::string blob = test_model_blob();
  write_zip(path, package_items(read_file(AOTRT_TEST_MODEL_SO), &blob, metadata));
  const Model model = Model::load(path);
  ASSERT_EQ(model.info().input_specs.size(), 1u);
  ASSERT_TRUE(model.info().input_specs[0].has_value());
  EXPECT_EQ(model.info().input_specs[0]->dtype, ScalarType::Float32);
  EXPECT_EQ(model.info().input_specs[0]->strides, (std::vector<int64_t>{60, 1, 15, 3}));

  // A row-major array becomes channels-last, values kept.
  Tensor dense = Tensor::empty({2, 3, 4, 5}, ScalarType::Float32);
  float* d = static_cast<float*>(dense.data_ptr());
  for (int i = 0; i < 120; ++i) d[i] = static_cast<float>(i);
  const Tensor cl = model.prepare_input(0, dense);
  EXPECT_EQ(vec(cl.strides()), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_EQ(at(cl, {1, 2, 3, 4}), at(dense, {1, 2, 3, 4}));
  EXPECT_EQ(at(cl, {0, 1, 0, 2}), 22.0f);
  // Already laid out: the same memory, a new handle.
  const Tensor again = model.prepare_input(0, cl);
  EXPECT_EQ(again.data_ptr(), cl.data_ptr());
  // Another batch size (a dynamic dim): the same dim order, dense.
  const Tensor one = model.prepare_input(0, Tensor::empty({1, 3, 4, 5}, ScalarType::Float32));
  EXPECT_EQ(vec(one.strides()), (std::vector<int64_t>{60, 1, 15, 3}));
  const Tensor wide = model.prepare_input(0, Tensor::empty({2, 3, 2, 7}, ScalarType::Float32));
  EXPECT_EQ(vec(wide.strides()), (std::vector<int64_t>{42, 1, 21, 3}));
  // Another rank: row-major.
  const Tensor flat = model.prepare_input(0, Tensor::empty({4, 6}, ScalarType::Float32));
  EXPECT_EQ(vec(flat.strides()), (std::vector<int64_t>{6, 1}));
  EXPECT_THROW(model.prepare_input(1, dense), Error);
  // Another dtype: refused, naming the input and the dtype expected, unless asked for.
  try {
    model.prepare_input(0, Tensor::empty({4, 6}, ScalarType::Int32));
    ADD_FAILURE() << "an int32 value for a float32 input was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is int32 but the model expects float32"), std::string::npos)
        << e.what();
  }
  const Tensor asked = model.prepare_input(0, Tensor::empty({4, 6}, ScalarType::Int32),
                                           {ScalarType::Float32, std::nullopt});
  EXPECT_EQ(asked.dtype(), ScalarType::Float32);
  EXPECT_THROW(model.prepare_input(0, dense, {ScalarType::Float16, std::nullopt}), Error);
  // A layout that contradicts the record is refused.
  EXPECT_THROW(model.prepare_input(0, dense, {std::nullopt, aotrt::MemoryFormat::Contiguous}), Error);
}

TEST(ModelApi, PrepareInputWithoutRecordIsRowMajor) {
  TempDir dir;
  const Model model = Model::load(test_package(dir));
  EXPECT_TRUE(model.info().input_specs.empty());
  std::vector<float> mem = {0, 1, 2, 3, 4, 5};
  // A column-major (Fortran-order) view of a 2x3 array.
  Tensor f = Tensor::from_blob(mem.data(), {2, 3}, {1, 2}, ScalarType::Float32);
  Tensor c = model.prepare_input(0, f);
  EXPECT_EQ(vec(c.strides()), (std::vector<int64_t>{3, 1}));
  const float* cv = static_cast<const float*>(c.data_ptr());
  EXPECT_EQ(cv[1], 2.0f);  // f[0][1] = mem[2]
  EXPECT_EQ(cv[3], 1.0f);  // f[1][0] = mem[1]
  // copy_ broadcasts and converts.
  Tensor d = Tensor::empty({2, 3}, ScalarType::Float64);
  Tensor row = Tensor::from_blob(mem.data(), {3}, {1}, ScalarType::Float32);
  d.copy_(row);
  EXPECT_EQ(static_cast<const double*>(d.data_ptr())[4], 1.0);
  // Nothing recorded: the hint says the dtype and the layout.
  const Tensor bf = model.prepare_input(0, f, {ScalarType::BFloat16, std::nullopt});
  EXPECT_EQ(bf.dtype(), ScalarType::BFloat16);
  EXPECT_EQ(vec(bf.strides()), (std::vector<int64_t>{3, 1}));
  const Tensor cl = model.prepare_input(0, Tensor::empty({2, 3, 4, 5}, ScalarType::Float32),
                                        {std::nullopt, aotrt::MemoryFormat::ChannelsLast});
  EXPECT_EQ(vec(cl.strides()), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_THROW(model.prepare_input(0, f, {std::nullopt, aotrt::MemoryFormat::ChannelsLast}), Error);
}
