// Note [Fused linears] (cpu/linear.cpp) on a real freezing=True package torch
// 2.13 exported, passed in by tests/e2e/test_cpu_freezing.py (which exports
// it); skipped without one:
//   AOTRT_FROZEN_LINEAR_DIR  model.pt2 (calls _linear_pointwise on _mkldnn
//                            constants), input_0.npy, expected_0.npy (eager's
//                            output 0)
// Tolerance: the e2e test's, 1e-4 absolute + 1e-4 relative (float32).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "cpu/ops.h"
#include "runtime/npy.h"

using aotrt::Model;
using aotrt::Tensor;

namespace {

double max_excess(const Tensor& got, const Tensor& want) {
  if (got.numel() != want.numel()) return INFINITY;
  const auto* g = static_cast<const float*>(got.data_ptr());
  const auto* w = static_cast<const float*>(want.data_ptr());
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double excess = std::fabs(g[i] - w[i]) - (1e-4 + 1e-4 * std::fabs(w[i]));
    if (!(excess <= 0)) worst = std::max(worst, std::isnan(excess) ? INFINITY : excess + 1e-4);
  }
  return worst;
}

// The model's linears run as fused primitives, on weights the shim marked
// constant (reordered on the first run); a second run fuses as many, makes
// no primitive and reorders nothing.
TEST(FusedLinearReal, LinearsRunFusedOnceReordered) {
  const char* d = std::getenv("AOTRT_FROZEN_LINEAR_DIR");
  if (d == nullptr || *d == 0) GTEST_SKIP() << "AOTRT_FROZEN_LINEAR_DIR is not set";
  const std::string dir = d;
  const Tensor input = aotrt::npy::read(dir + "/input_0.npy");
  const Tensor want = aotrt::npy::read(dir + "/expected_0.npy");
  Model m = Model::load(dir + "/model.pt2");
  auto run = [&] {
    const std::vector<Tensor> in{m.prepare_input(0, input)};
    std::vector<Tensor> out = m.run(in);
    EXPECT_EQ(max_excess(out.at(0).dense_host_copy(), want), 0);
  };
  const aotrt::cpu::LinearCacheStats s0 = aotrt::cpu::linear_cache_stats();
  run();
  const aotrt::cpu::LinearCacheStats s1 = aotrt::cpu::linear_cache_stats();
  const int64_t fused = s1.fused_calls - s0.fused_calls;
  EXPECT_GT(fused, 0) << "no linear took the fused primitive";
  EXPECT_GT(s1.weights_cached - s0.weights_cached, 0) << "no constant weight was reordered";
  run();
  const aotrt::cpu::LinearCacheStats s2 = aotrt::cpu::linear_cache_stats();
  EXPECT_EQ(s2.fused_calls - s1.fused_calls, fused);
  EXPECT_EQ(s2.misses, s1.misses);
  EXPECT_EQ(s2.weights_cached, s1.weights_cached);
}

}  // namespace
