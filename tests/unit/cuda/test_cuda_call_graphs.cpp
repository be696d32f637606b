// Note [Library call graphs] (cuda/call_graphs.h): a cuBLASLt GEMM or cuDNN
// convolution seen twice with one key is captured and replayed as a graph,
// and every replay gives what the direct call gives, reading the memory as
// it is at the time of the call; a call with any other address or scalar is
// not served by an old graph; nothing is captured or counted while the
// caller's stream is itself being captured, nor while the switch is off.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "aotrt/shim.h"
#include "aotrt/shim_cuda.h"
#include "cuda/call_graphs.h"
#include "cuda/runtime.h"
#include "library_test_util.h"

namespace aotrt::cuda_test {
namespace {

using aotrt::cuda::call_graph_stats;
using aotrt::cuda::CallGraphStats;
using aotrt::cuda::set_library_call_graphs;

// A dense float32 CUDA tensor holding `values`.
Handle device_tensor(std::vector<int64_t> sizes, const std::vector<float>& values) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  Handle h;
  EXPECT_EQ(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), kF32,
                                     kCUDA, 0, h.out()),
            AOTI_TORCH_SUCCESS);
  void* data = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h.get(), &data), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(cudaMemcpy(data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  return h;
}

std::vector<float> random_values(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.next());
  return v;
}

void overwrite(const Handle& h, const std::vector<float>& values) {
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(h.get(), &data), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(cudaMemcpy(data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
}

// Calls that ran as a graph, and graphs made, since `before`.
struct Delta {
  uint64_t launched, captured;
};
Delta since(const CallGraphStats& before) {
  const CallGraphStats now = call_graph_stats();
  return {now.launched - before.launched, now.captured - before.captured};
}

// Turns the switch on for a test and back to its default after.
class CudaCallGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    set_library_call_graphs(true);
    aotrt::cuda::clear_call_graphs();
  }
  void TearDown() override { set_library_call_graphs(true); }

  // out = a @ b with the switch off: the library's own answer.
  static std::vector<double> direct_mm(const Handle& out, const Handle& a, const Handle& b) {
    set_library_call_graphs(false);
    EXPECT_EQ(aoti_torch_cuda_mm_out(out.get(), a.get(), b.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    set_library_call_graphs(true);
    return read(out.get());
  }
};

TEST_F(CudaCallGraphs, RepeatedGemmIsReplayedAndReadsCurrentMemory) {
  Handle a = device_tensor({64, 32}, random_values(64 * 32, 1));
  Handle b = device_tensor({32, 48}, random_values(32 * 48, 2));
  Handle out = device_tensor({64, 48}, std::vector<float>(64 * 48, 0.0f));
  const std::vector<double> expected = direct_mm(out, a, b);

  const CallGraphStats before = call_graph_stats();
  for (int call = 0; call < 4; ++call) {
    overwrite(out, std::vector<float>(64 * 48, 7.0f));
    AOTRT_OK(aoti_torch_cuda_mm_out(out.get(), a.get(), b.get()));
    EXPECT_EQ(read(out.get()), expected) << "call " << call;  // the same kernel: the same bits
  }
  const Delta d = since(before);
  EXPECT_EQ(d.captured, 1u);  // at the second sighting
  EXPECT_EQ(d.launched, 3u);  // the second, third and fourth calls

  // New values at the same addresses: the graph reads them when it runs.
  overwrite(a, random_values(64 * 32, 3));
  const std::vector<double> expected_new = direct_mm(out, a, b);
  ASSERT_NE(expected_new, expected);
  const CallGraphStats again = call_graph_stats();
  AOTRT_OK(aoti_torch_cuda_mm_out(out.get(), a.get(), b.get()));
  EXPECT_EQ(read(out.get()), expected_new);
  EXPECT_EQ(since(again).launched, 1u);
}

TEST_F(CudaCallGraphs, AnotherAddressOrScalarIsNotServedByAnOldGraph) {
  Handle a = device_tensor({16, 24}, random_values(16 * 24, 4));
  Handle b = device_tensor({24, 8}, random_values(24 * 8, 5));
  Handle self = device_tensor({16, 8}, random_values(16 * 8, 6));
  Handle out = device_tensor({16, 8}, std::vector<float>(16 * 8, 0.0f));
  for (int call = 0; call < 3; ++call) {  // captured and replayed with beta 1, alpha 1
    AOTRT_OK(aoti_torch_cuda_addmm_out(out.get(), self.get(), a.get(), b.get(), 1.0, 1.0));
  }
  const std::vector<double> beta1 = read(out.get());

  // beta 0.5: another key, so a direct call with the right answer.
  set_library_call_graphs(false);
  AOTRT_OK(aoti_torch_cuda_addmm_out(out.get(), self.get(), a.get(), b.get(), 0.5, 1.0));
  const std::vector<double> expected_half = read(out.get());
  set_library_call_graphs(true);
  ASSERT_NE(expected_half, beta1);
  CallGraphStats before = call_graph_stats();
  AOTRT_OK(aoti_torch_cuda_addmm_out(out.get(), self.get(), a.get(), b.get(), 0.5, 1.0));
  EXPECT_EQ(read(out.get()), expected_half);
  EXPECT_EQ(since(before).launched, 0u);

  // Another output buffer: another key.
  Handle out2 = device_tensor({16, 8}, std::vector<float>(16 * 8, 0.0f));
  before = call_graph_stats();
  AOTRT_OK(aoti_torch_cuda_addmm_out(out2.get(), self.get(), a.get(), b.get(), 1.0, 1.0));
  EXPECT_EQ(read(out2.get()), beta1);
  EXPECT_EQ(since(before).launched, 0u);
}

TEST_F(CudaCallGraphs, RepeatedConvolutionIsReplayed) {
  // 3x3: cuDNN (a 1x1 would be a GEMM, Note [1x1 convolutions as GEMMs]).
  Handle x = device_tensor({2, 8, 13, 11}, random_values(2 * 8 * 13 * 11, 7));
  Handle w = device_tensor({6, 8, 3, 3}, random_values(6 * 8 * 9, 8));
  const int64_t stride[] = {1, 1}, padding[] = {1, 1}, dilation[] = {1, 1}, output_padding[] = {0, 0};
  auto conv = [&] {
    Handle y;
    EXPECT_EQ(aoti_torch_cuda_convolution(x.get(), w.get(), nullptr, stride, 2, padding, 2, dilation, 2, 0,
                                          output_padding, 2, 1, y.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    return read(y.get());  // freed here: the next call's output gets the same block
  };
  set_library_call_graphs(false);
  const std::vector<double> expected = conv();
  set_library_call_graphs(true);
  const CallGraphStats before = call_graph_stats();
  for (int call = 0; call < 4; ++call) EXPECT_EQ(conv(), expected) << "call " << call;
  const Delta d = since(before);
  EXPECT_EQ(d.captured, 1u);
  EXPECT_EQ(d.launched, 3u);
}

TEST_F(CudaCallGraphs, NothingIsCapturedInsideTheCallersCaptureOrWhenOff) {
  Handle a = device_tensor({32, 32}, random_values(32 * 32, 9));
  Handle b = device_tensor({32, 32}, random_values(32 * 32, 10));
  Handle out = device_tensor({32, 32}, std::vector<float>(32 * 32, 0.0f));
  const std::vector<double> expected = direct_mm(out, a, b);

  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  aotrt::cuda::set_current_cuda_stream(0, s);
  // Once outside the capture: the stream's cuBLASLt workspace is made now.
  AOTRT_OK(aoti_torch_cuda_mm_out(out.get(), a.get(), b.get()));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const CallGraphStats before = call_graph_stats();
  const size_t entries = aotrt::cuda::call_graph_entries();
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  for (int call = 0; call < 3; ++call) {
    EXPECT_EQ(aoti_torch_cuda_mm_out(out.get(), a.get(), b.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  }
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  aotrt::cuda::set_current_cuda_stream(0, nullptr);
  EXPECT_EQ(since(before).captured, 0u);
  EXPECT_EQ(since(before).launched, 0u);
  EXPECT_EQ(aotrt::cuda::call_graph_entries(), entries);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  overwrite(out, std::vector<float>(32 * 32, 7.0f));
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(read(out.get()), expected);
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
  aotrt::cuda::forget_stream(0, s);  // its GEMM kept a cuBLASLt workspace (Note [A stream that goes away])
  (void)cudaStreamDestroy(s);

  set_library_call_graphs(false);
  const CallGraphStats off = call_graph_stats();
  for (int call = 0; call < 3; ++call) AOTRT_OK(aoti_torch_cuda_mm_out(out.get(), a.get(), b.get()));
  EXPECT_EQ(read(out.get()), expected);
  EXPECT_EQ(since(off).captured, 0u);
  EXPECT_EQ(since(off).launched, 0u);
}

}  // namespace
}  // namespace aotrt::cuda_test
