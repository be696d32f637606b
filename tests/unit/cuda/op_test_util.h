// What the CUDA op tests (test_cuda_ops.cpp, test_cuda_fft.cpp) share: the CUDA
// backend of the op-family helpers, a device check, a checked C-ABI call, and the
// capture of warm op calls into a CUDA graph (the proof that a kernel path makes
// no host sync, uses no other stream and calls no cudaMalloc once warm).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/cuda.h"
#include "ops/ops_testing.h"

namespace aotrt::test {

inline Backend cuda_backend() {
  for (const Backend& b : built_backends()) {
    if (!b.is_cpu()) return b;
  }
  ADD_FAILURE() << "a CUDA build without the CUDA backend";
  return built_backends()[0];
}

#define REQUIRE_CUDA_DEVICE()                                                    \
  do {                                                                           \
    int n_ = 0;                                                                  \
    ASSERT_TRUE(cudaGetDeviceCount(&n_) == cudaSuccess && n_ > 0)                \
        << "aotrt was built with CUDA but no CUDA device is visible";            \
  } while (0)

#define CALL_OK(call) ASSERT_EQ((call), AOTI_TORCH_SUCCESS) << #call << ": " << aotrt_last_error()

// Captures one call of `run` (false when a call failed; aotrt_last_error() says
// why) into `graph`, which must be on its private stream (Graph::OnPrivateStream)
// and warm: the caller ran the same calls before and freed their outputs. Fails
// the test when a call fails while capturing, when the capture fails (a host
// sync, work on another stream) or when the captured calls called cudaMalloc.
template <typename Run>
void capture_warm_calls(cuda::Graph& graph, Run&& run, const char* what) {
  const int64_t mallocs = cuda::driver_allocations(0);
  graph.begin_capture();
  if (!run()) {
    const std::string why = aotrt_last_error();
    graph.abandon_capture();
    FAIL() << "an op failed while capturing: " << why;
  }
  ASSERT_NO_THROW(graph.end_capture(what));
  EXPECT_EQ(cuda::driver_allocations(0), mallocs) << "cudaMalloc inside the captured calls";
}

}  // namespace aotrt::test
