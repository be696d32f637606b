// External weights on a real package torch 2.13 exported with
// aot_inductor.package_constants_in_so=False (it holds no weights), passed in
// by tests/e2e/test_weights.py (which exports it); skipped without one:
//   AOTRT_WEIGHTS_PACKAGE     the .pt2 (CPU or CUDA)
//   AOTRT_WEIGHTS_DIR         a.safetensors, b.safetensors (two weight sets),
//                             input_<k>.npy, expected_{a,b}_<k>.npy (eager's
//                             outputs with each set)
//   AOTRT_WEIGHTS_ATOL, _RTOL the tolerance (default 1e-5)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "aotrt/aotrt.h"
#include "core/handles.h"
#include "runtime/npy.h"

using aotrt::ErrorKind;
using aotrt::Model;
using aotrt::Tensor;
using aotrt::Weights;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

double env_double(const char* name, double fallback) {
  const std::string v = env(name);
  return v.empty() ? fallback : std::stod(v);
}

class WeightsReal : public ::testing::Test {
 protected:
  void SetUp() override {
    package_ = env("AOTRT_WEIGHTS_PACKAGE");
    dir_ = env("AOTRT_WEIGHTS_DIR");
    if (package_.empty() || dir_.empty()) GTEST_SKIP() << "AOTRT_WEIGHTS_PACKAGE/_DIR are not set";
    atol_ = env_double("AOTRT_WEIGHTS_ATOL", 1e-5);
    rtol_ = env_double("AOTRT_WEIGHTS_RTOL", 1e-5);
    for (int k = 0; k < 2; ++k) {
      inputs_.push_back(aotrt::npy::read(dir_ + "/input_" + std::to_string(k) + ".npy"));
      expected_a_.push_back(aotrt::npy::read(dir_ + "/expected_a_" + std::to_string(k) + ".npy"));
      expected_b_.push_back(aotrt::npy::read(dir_ + "/expected_b_" + std::to_string(k) + ".npy"));
    }
  }

  std::vector<Tensor> run(Model& m) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < inputs_.size(); ++i) in.push_back(m.prepare_input(i, inputs_[i]));
    std::vector<Tensor> out = m.run(in);
    for (Tensor& t : out) t = t.dense_host_copy();
    return out;
  }

  bool close(const Tensor& got, const Tensor& want) const {
    if (got.numel() != want.numel()) return false;
    const auto* g = static_cast<const float*>(got.data_ptr());
    const auto* w = static_cast<const float*>(want.data_ptr());
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (!(std::fabs(g[i] - w[i]) <= atol_ + rtol_ * std::fabs(w[i]))) return false;
    }
    return true;
  }
  bool matches(const std::vector<Tensor>& out, const std::vector<Tensor>& want) const {
    return out.size() == want.size() && close(out[0], want[0]) && close(out[1], want[1]);
  }

  Weights set(const char* name) const { return Weights::from_safetensors(dir_ + "/" + name + ".safetensors"); }
  Model load(const char* name) const {
    aotrt::LoadOptions options;
    options.weights = set(name);
    return Model::load(package_, options);
  }

  std::string package_, dir_;
  double atol_ = 0, rtol_ = 0;
  std::vector<Tensor> inputs_, expected_a_, expected_b_;
};

TEST_F(WeightsReal, LoadSwapAndUpdateMatchEager) {
  const int64_t live = aotrt::handle_live_count();
  {
    Model m = load("a");
    EXPECT_EQ(m.info().weights_source, dir_ + "/a.safetensors");
    EXPECT_TRUE(matches(run(m), expected_a_)) << "set A";
    m.swap_weights(set("b"));
    EXPECT_TRUE(matches(run(m), expected_b_)) << "after swapping in set B";
    m.swap_weights(set("a"));
    EXPECT_TRUE(matches(run(m), expected_a_)) << "after swapping back to set A";
    // Only the conv's weights from set B: output 1 is B's, output 0 stays A's.
    Weights b = set("b");
    std::map<std::string, Tensor> conv;
    for (const char* name : {"conv.weight", "conv.bias"}) conv.emplace(name, b.tensors.at(name));
    Weights part = Weights::from_tensors(conv);
    m.update_weights(part);
    const std::vector<Tensor> out = run(m);
    EXPECT_TRUE(close(out[0], expected_a_[0]));
    EXPECT_TRUE(close(out[1], expected_b_[1]));
    for (int i = 0; i < 5; ++i) m.swap_weights(set(i % 2 ? "a" : "b"));
    EXPECT_TRUE(matches(run(m), expected_b_));
  }
  // Every handle the container made (torch 2.13 never deletes the ones of
  // user-managed constants) is gone with the model.
  EXPECT_EQ(aotrt::handle_live_count(), live);
}

TEST_F(WeightsReal, RefusedSwapKeepsServing) {
  Model m = load("a");
  Weights bad = set("b");
  bad.tensors.erase("scale");
  bad.tensors.at("lin.weight") = Tensor::empty({3, 3}, aotrt::ScalarType::Float32);
  try {
    m.swap_weights(bad);
    FAIL() << "a swap with a missing and a misshapen constant was taken";
  } catch (const aotrt::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("2 problems"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'scale'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'lin.weight' has sizes [3, 3]"), std::string::npos) << msg;
  }
  EXPECT_TRUE(matches(run(m), expected_a_));
}

// Threads run without pause while the main thread swaps A and B: every run
// gives one set's outputs, never a mix, and runs after a swap see it.
TEST_F(WeightsReal, RunsAcrossSwapsFinishOnOneSet) {
  Model m = load("a");
  const Weights a = set("a"), b = set("b");
  std::atomic<bool> stop{false};
  std::atomic<int> runs{0}, saw_a{0}, saw_b{0}, mixed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        const std::vector<Tensor> out = run(m);
        const bool is_a = matches(out, expected_a_), is_b = matches(out, expected_b_);
        (is_a ? saw_a : is_b ? saw_b : mixed)++;
        runs++;
      }
    });
  }
  for (int i = 0; i < 40; ++i) {
    const int before = runs.load();
    m.swap_weights(i % 2 ? a : b);
    const std::vector<Tensor> out = run(m);  // after the swap returned
    EXPECT_TRUE(matches(out, i % 2 ? expected_a_ : expected_b_)) << "swap " << i;
    // Let the threads finish a run on this set before the next swap (a loaded
    // machine may not schedule them at all otherwise); bounded in time.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (runs.load() == before && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mixed.load(), 0) << "runs whose outputs were neither set's";
  EXPECT_GT(saw_a.load(), 0);
  EXPECT_GT(saw_b.load(), 0);
  std::printf("[ info ] %d runs on 4 threads across 40 swaps: %d on set A, %d on set B\n",
              runs.load(), saw_a.load(), saw_b.load());
}

// Tensors of the expected layout on the model's device are used in place:
// writing new values into them changes what the model computes.
TEST_F(WeightsReal, BorrowedTensorsAreUsedInPlace) {
  const Weights a = set("a"), b = set("b");
  Model probe = load("a");
  const aotrt::Device device = probe.device();
  std::vector<std::vector<uint8_t>> host;  // the caller's arrays (CPU models)
  std::map<std::string, Tensor> mine;
  for (const auto& [name, t] : a.tensors) {
    const Tensor dense = t.dense_host_copy();
    const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
    Tensor own;
    if (device.is_cpu()) {
      host.emplace_back(static_cast<size_t>(dense.numel()) * aotrt::element_size(t.dtype()));
      std::memcpy(host.back().data(), dense.data_ptr(), host.back().size());
      own = Tensor::from_blob(host.back().data(), sizes, std::vector<int64_t>(t.strides().begin(), t.strides().end()),
                              t.dtype());
    } else {
      own = Tensor::empty(sizes, t.dtype(), device);
      own.copy_(dense);
    }
    mine.emplace(name, own);
  }
  aotrt::LoadOptions options;
  options.weights = Weights::from_tensors(mine);
  Model m = Model::load(package_, options);
  EXPECT_TRUE(matches(run(m), expected_a_));
  for (const char* name : {"conv.weight", "conv.bias"}) mine.at(name).copy_(b.tensors.at(name));
  aotrt::synchronize(device);
  const std::vector<Tensor> out = run(m);
  EXPECT_TRUE(close(out[0], expected_a_[0]));
  EXPECT_TRUE(close(out[1], expected_b_[1])) << "the model did not read the caller's memory";
}

}  // namespace
