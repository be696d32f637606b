// Note [Constant weights] (cpu/conv.cpp) and Note [Constant marking]
// (runtime/model.cpp) on a real package torch 2.13 exported, passed in by
// tests/e2e/test_conv_constants.py (which exports it); skipped without one:
//   AOTRT_CONV_CONSTANTS_DIR  net.pt2 (its own weights: a conv on a Parameter
//                             and a conv on a Buffer the model scales in place
//                             every run), input_0.npy, expected_run<r>_<k>.npy
//                             (eager's outputs of runs r = 0, 1, 2),
//                             b.safetensors with expected_b_run<r>_<k>.npy
//                             (the same after loading set B), and
//                             expected_c_0.npy (output 0 with set C's conv)
// Tolerance: 1e-5 absolute + 1e-5 relative (float32, sums reassociated).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "cpu/ops.h"
#include "runtime/npy.h"

using aotrt::Model;
using aotrt::Tensor;
using aotrt::Weights;

namespace {

class ConvConstantsReal : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* d = std::getenv("AOTRT_CONV_CONSTANTS_DIR");
    if (d == nullptr || *d == 0) GTEST_SKIP() << "AOTRT_CONV_CONSTANTS_DIR is not set";
    dir_ = d;
    input_ = aotrt::npy::read(dir_ + "/input_0.npy");
  }
  Tensor npy(const std::string& name) const { return aotrt::npy::read(dir_ + "/" + name + ".npy"); }

  std::vector<Tensor> run(Model& m) {
    const std::vector<Tensor> in{m.prepare_input(0, input_)};
    std::vector<Tensor> out = m.run(in);
    for (Tensor& t : out) t = t.dense_host_copy();
    return out;
  }
  static double max_diff(const Tensor& got, const Tensor& want) {
    if (got.numel() != want.numel()) return INFINITY;
    const auto* g = static_cast<const float*>(got.data_ptr());
    const auto* w = static_cast<const float*>(want.data_ptr());
    double worst = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double excess = std::fabs(g[i] - w[i]) - (1e-5 + 1e-5 * std::fabs(w[i]));
      if (!(excess <= 0)) worst = std::max(worst, std::isnan(excess) ? INFINITY : excess + 1e-5);
    }
    return worst;
  }
  void expect_run(const std::vector<Tensor>& out, const std::string& stem) const {
    ASSERT_EQ(out.size(), 2u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(max_diff(out[k], npy(stem + "_" + std::to_string(k))), 0)
          << stem << " output " << k;
    }
  }
  // Set B as the caller's tensors one element into their memory: not where
  // the model keeps its constants (offset 0), so aotrt copies them into its
  // own memory, which it marks.
  Weights b_copied() {
    Weights file = Weights::from_safetensors(dir_ + "/b.safetensors");
    std::map<std::string, Tensor> copies;
    for (const auto& [name, t] : file.tensors) {
      const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
      std::vector<int64_t> strides(sizes.size());
      int64_t step = 1;
      for (size_t d = sizes.size(); d-- > 0;) strides[d] = step, step *= sizes[d];
      backing_.push_back(Tensor::empty({t.numel() + 1}, t.dtype()));
      Tensor c = Tensor::from_blob(backing_.back().data_ptr(), sizes, strides, t.dtype(),
                                   aotrt::cpu_device(), /*storage_offset=*/1);
      c.copy_(t);
      copies.emplace(name, c);
    }
    return Weights::from_tensors(copies);
  }

  std::string dir_;
  Tensor input_;
  std::vector<Tensor> backing_;
};

// The Parameter's conv keeps one reordered weight; the Buffer's conv reads the
// buffer every run (the model scales it in place: a cached copy would go stale).
TEST_F(ConvConstantsReal, ParameterIsCachedOnceBufferIsReadEveryRun) {
  const int64_t before = aotrt::cpu::conv_cache_stats().weights_cached;
  Model m = Model::load(dir_ + "/net.pt2");
  for (int r = 0; r < 3; ++r) expect_run(run(m), "expected_run" + std::to_string(r));
  EXPECT_EQ(aotrt::cpu::conv_cache_stats().weights_cached - before, 1);
}

// Swapped-in weights (aotrt's copies, marked) are seen by the next run, and
// get their own cache entry; the old constants' entry goes with them.
TEST_F(ConvConstantsReal, SwappedWeightsAreSeen) {
  Model m = Model::load(dir_ + "/net.pt2");
  expect_run(run(m), "expected_run0");
  const int64_t before = aotrt::cpu::conv_cache_stats().weights_cached;
  m.swap_weights(b_copied());
  for (int r = 0; r < 3; ++r) expect_run(run(m), "expected_b_run" + std::to_string(r));
  EXPECT_EQ(aotrt::cpu::conv_cache_stats().weights_cached - before, 1);
}

// The caller's memory given in place is never marked: writing new values
// into it is seen by the next run.
TEST_F(ConvConstantsReal, CallersMemoryInPlaceIsReadEveryRun) {
  Model m = Model::load(dir_ + "/net.pt2");
  Weights b = Weights::from_safetensors(dir_ + "/b.safetensors");
  std::map<std::string, Tensor> mine;
  for (const auto& [name, t] : b.tensors) mine.emplace(name, t.dense_host_copy());
  const int64_t before = aotrt::cpu::conv_cache_stats().weights_cached;
  m.swap_weights(Weights::from_tensors(mine));
  expect_run(run(m), "expected_b_run0");
  Weights c = Weights::from_safetensors(dir_ + "/c.safetensors");
  for (const char* name : {"conv.weight", "conv.bias"}) mine.at(name).copy_(c.tensors.at(name));
  const std::vector<Tensor> out = run(m);
  EXPECT_EQ(max_diff(out[0], npy("expected_c_0")), 0) << "output 0 after writing set C's conv";
  EXPECT_EQ(aotrt::cpu::conv_cache_stats().weights_cached - before, 0);
}

}  // namespace
