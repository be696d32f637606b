// Note [Int8 primitives] (cpu/quantized.cpp) on a real X86InductorQuantizer package torch 2.13
// exported, passed in by tests/e2e/test_cpu_int8.py (which exports it and checks its values
// against torch); skipped without one:
//   AOTRT_INT8_MODEL_DIR  model.pt2 (calls the int8 oneDNN ops on _mkldnn constants),
//                         input_0.npy
// Every quantized op runs on oneDNN's int8 primitives (where the CPU has VNNI; else every one
// takes the float32 path, Note [oneDNN's ISA]); the first run reorders the constant
// weights; a second run makes no primitive, reorders nothing and gives the same bytes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "cpu/ops.h"
#include "runtime/npy.h"

using aotrt::Model;
using aotrt::Tensor;

namespace {

TEST(QuantizedReal, OpsRunInInt8OnWeightsReorderedOnce) {
  const char* d = std::getenv("AOTRT_INT8_MODEL_DIR");
  if (d == nullptr || *d == 0) GTEST_SKIP() << "AOTRT_INT8_MODEL_DIR is not set";
  const std::string dir = d;
  const Tensor input = aotrt::npy::read(dir + "/input_0.npy");
  Model m = Model::load(dir + "/model.pt2");
  auto run = [&] {
    const std::vector<Tensor> in{m.prepare_input(0, input)};
    return m.run(in).at(0).dense_host_copy();
  };
  const aotrt::cpu::QuantizedCacheStats s0 = aotrt::cpu::quantized_cache_stats();
  const Tensor first = run();
  const aotrt::cpu::QuantizedCacheStats s1 = aotrt::cpu::quantized_cache_stats();
  const int64_t int8 = s1.fused_calls - s0.fused_calls;
  if (aotrt::cpu::onednn_int8_exact()) {
    EXPECT_GT(int8, 0) << "no quantized op ran on the int8 primitives";
    EXPECT_EQ(s1.float32_calls, s0.float32_calls) << "a quantized op took the float32 path";
    EXPECT_GT(s1.weights_cached - s0.weights_cached, 0) << "no constant weight was reordered";
    EXPECT_LE(s1.weights_cached - s0.weights_cached, int8) << "a weight reordered twice";
  } else {
    // No VNNI: every quantized op takes the float32 path (Note [oneDNN's ISA]).
    EXPECT_EQ(int8, 0);
    EXPECT_GT(s1.float32_calls, s0.float32_calls) << "no quantized op ran";
  }
  const Tensor second = run();
  const aotrt::cpu::QuantizedCacheStats s2 = aotrt::cpu::quantized_cache_stats();
  EXPECT_EQ(s2.fused_calls - s1.fused_calls, int8);
  EXPECT_EQ(s2.float32_calls - s1.float32_calls, s1.float32_calls - s0.float32_calls);
  EXPECT_EQ(s2.misses, s1.misses) << "a primitive made in the steady state";
  EXPECT_EQ(s2.weights_cached, s1.weights_cached) << "a weight reordered in the steady state";
  ASSERT_EQ(first.numel(), second.numel());
  EXPECT_EQ(std::memcmp(first.data_ptr(), second.data_ptr(),
                        static_cast<size_t>(first.numel()) * aotrt::element_size(first.dtype())),
            0);
}

}  // namespace
