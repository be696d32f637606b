// Token sampling on CUDA beyond the device-generic tests (ops/test_ops_sampling.cpp): one
// call captured into a CUDA graph draws fresh tokens at every replay and follows parameters
// rewritten in device memory, with no cudaMalloc; batches larger than one cooperative launch
// holds; and the benchmark (DISABLED_: run it by name) timing greedy, top-k and top-p.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda.h"
#include "cuda/runtime.h"
#include "op_test_util.h"
#include "ops/sampling_testing.h"

namespace aotrt::test {
namespace {
using namespace sampling;

Device cuda0() { return Device{DeviceType::CUDA, 0}; }

void sample_once(Call& c) {
  TensorImpl* outs[] = {c.tokens.get()};
  ops::sample_tokens(*c.logits, *c.params, *c.step, outs);
}

// Captures `calls` warm calls of c on the graph's private stream; false (and a test failure)
// when the capture breaks or a call allocates from the driver.
bool capture(cuda::Graph& graph, Call& c, int calls) {
  cuda::Graph::OnPrivateStream on(graph);
  sample_once(c);  // warm: the scratch block enters the private pool's cache
  sample_once(c);
  const int64_t mallocs = cuda::driver_allocations(0);
  graph.begin_capture();
  try {
    for (int i = 0; i < calls; ++i) sample_once(c);
  } catch (const Error& e) {
    graph.abandon_capture();
    ADD_FAILURE() << "sample_tokens failed while capturing: " << e.what();
    return false;
  }
  try {
    graph.end_capture("test_cuda_sampling");
  } catch (const Error& e) {
    ADD_FAILURE() << "the capture broke (a host wait or another stream?): " << e.what();
    return false;
  }
  EXPECT_EQ(cuda::driver_allocations(0), mallocs) << "cudaMalloc inside the captured call";
  return true;
}

TEST(CudaSampling, GraphReplaysDrawFreshTokensAndFollowNewParameters) {
  REQUIRE_CUDA_DEVICE();
  const int64_t rows = 4, vocab = 32000;
  const std::vector<float> v = normal_logits(rows * vocab, 2.f, 123);
  std::vector<SamplingParams> ps{params(0.f, 0, 1.f, 1), params(1.f, 0, 1.f, 2),
                                 params(0.8f, 50, 0.9f, 3), params(0.7f, 0, 0.8f, 4)};
  Call call(cuda0(), rows, vocab, ScalarType::BFloat16, v, ps, 10);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cuda::Graph graph(0);
  if (!capture(graph, call, 1)) return;
  const uint64_t first = 12;  // 10, then two warm calls; the capture ran nothing
  // The warm calls ran on the graph's private stream, which is non-blocking: the legacy
  // stream that read_back copies on must wait for them, or it reads a kernel mid-flight.
  graph.prepare(nullptr);
  EXPECT_EQ(read_back<uint64_t>(*call.step), std::vector<uint64_t>(rows, first));
  const std::vector<int64_t> warm = read_back<int64_t>(*call.tokens);
  for (int64_t r = 0; r < rows; ++r) {
    const Expected e = expected_token(call.row(r), vocab, ps[r], first - 1, r);
    if (!e.near) EXPECT_EQ(warm[r], e.token) << "second warm call, row " << r;
  }

  const int64_t mallocs = cuda::driver_allocations(0);
  std::vector<std::set<int64_t>> seen(rows);
  const int replays = 40;
  for (int j = 0; j < replays; ++j) {
    graph.prepare(nullptr);
    graph.replay(nullptr);
    const std::vector<int64_t> got = read_back<int64_t>(*call.tokens);
    for (int64_t r = 0; r < rows; ++r) {
      seen[r].insert(got[r]);
      const Expected e = expected_token(call.row(r), vocab, ps[r], first + j, r);
      if (!e.near) EXPECT_EQ(got[r], e.token) << "replay " << j << " row " << r;
    }
  }
  EXPECT_EQ(cuda::driver_allocations(0), mallocs) << "a replay allocated";
  EXPECT_EQ(read_back<uint64_t>(*call.step), std::vector<uint64_t>(rows, first + replays));
  EXPECT_EQ(seen[0].size(), 1u) << "the greedy row changed its token";
  for (int64_t r = 1; r < rows; ++r) EXPECT_GT(seen[r].size(), 3u) << "row " << r;

  // New parameters written into the same device bytes: the graph reads them at replay.
  const std::vector<SamplingParams> next{params(1.f, 5, 1.f, 9), params(0.f, 0, 1.f, 9),
                                         params(1.f, 1, 1.f, 9), params(2.f, 0, 0.99f, 9)};
  TensorPtr host = host_tensor({rows * 32}, ScalarType::UInt8, next.data());
  copy_tensor(*call.params, *host, "test");
  for (int j = 0; j < 5; ++j) {
    graph.prepare(nullptr);
    graph.replay(nullptr);
    const std::vector<int64_t> got = read_back<int64_t>(*call.tokens);
    for (int64_t r = 0; r < rows; ++r) {
      const Expected e = expected_token(call.row(r), vocab, next[r], first + replays + j, r);
      if (!e.near) EXPECT_EQ(got[r], e.token) << "new parameters, replay " << j << " row " << r;
    }
    EXPECT_EQ(got[1], ref_argmax(call.row(1), vocab)) << "row 1 is greedy now";
    EXPECT_EQ(call.row(2)[got[2]], call.row(2)[ref_argmax(call.row(2), vocab)])
        << "row 2 keeps its top value only";
  }
}

// More rows than one cooperative launch holds (a few hundred blocks on an H100): launches
// of as many rows as fit, one after another.
TEST(CudaSampling, BatchesLargerThanOneLaunch) {
  REQUIRE_CUDA_DEVICE();
  for (const auto& [rows, vocab] : {std::pair<int64_t, int64_t>{1500, 64}, {64, 128256}}) {
    const std::vector<float> v = normal_logits(rows * vocab, 2.f, rows);
    std::vector<SamplingParams> ps;
    for (int64_t r = 0; r < rows; ++r) {
      ps.push_back(r % 4 == 0 ? params(0.f, 0, 1.f, r) : params(0.9f, r % 3 ? 50 : 0, 0.9f, r));
    }
    Call call(cuda0(), rows, vocab, ScalarType::BFloat16, v, ps, 0);
    const std::vector<int64_t> got = call.sample();
    int64_t compared = 0;
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_TRUE(got[r] >= 0 && got[r] < vocab) << "B " << rows << " V " << vocab << " row "
                                                 << r << " has no token: " << got[r];
      const Expected e = expected_token(call.row(r), vocab, ps[r], 0, r);
      if (e.near) continue;
      ++compared;
      EXPECT_EQ(got[r], e.token) << "B " << rows << " V " << vocab << " row " << r;
    }
    // Greedy and top-k 50 rows (3/4 of them) are almost never near; top-p-only rows of a
    // 128k vocabulary often are (tokens of probability ~1e-6 around the cut), so at most 1/4.
    EXPECT_GE(compared, rows / 2) << "B " << rows << " V " << vocab << ": too few decisive rows";
    EXPECT_EQ(read_back<uint64_t>(*call.step), std::vector<uint64_t>(rows, 1));
  }
}

// Microseconds per call of sample_tokens on the device, by CUDA events: "plain" queues 200
// calls back to back on a stream (bounded by the host's launch cost where that is the
// larger), "graph" replays a graph of 20 captured calls 20 times (device time with a graph's
// gaps between kernels, as a decode step's graph runs it). Run:
//   build-cuda/aotrt_unit_tests --gtest_also_run_disabled_tests \
//     --gtest_filter='CudaSamplingBench.*'
TEST(CudaSamplingBench, DISABLED_MicrosecondsPerCall) {
  REQUIRE_CUDA_DEVICE();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  std::printf("sample_tokens on %s (microseconds per call)\n", prop.name);
  std::printf("%-8s %-3s %-9s %-22s %9s %9s\n", "V", "B", "dtype", "mode", "plain", "graph");
  struct Mode {
    const char* name;
    SamplingParams p;
  };
  const Mode modes[] = {{"greedy", params(0.f, 0, 1.f, 1)},
                        {"temperature 0.8", params(0.8f, 0, 1.f, 1)},
                        {"top-k 50", params(0.8f, 50, 1.f, 1)},
                        {"top-p 0.9", params(0.8f, 0, 0.9f, 1)},
                        {"top-k 50 + top-p 0.9", params(0.8f, 50, 0.9f, 1)}};
  for (const int64_t vocab : {int64_t{32000}, int64_t{128256}, int64_t{262144}}) {
    for (const int64_t rows : {int64_t{1}, int64_t{8}}) {
      const std::vector<float> v = normal_logits(rows * vocab, 3.f, vocab + rows);
      for (const ScalarType dtype : {ScalarType::Float32, ScalarType::BFloat16}) {
        for (const Mode& m : modes) {
          Call call(cuda0(), rows, vocab, dtype, v, std::vector<SamplingParams>(rows, m.p), 0);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          cuda::Graph graph(0);
          constexpr int kPerGraph = 20, kReplays = 20, kPlain = 200;
          if (!capture(graph, call, kPerGraph)) return;
          const auto stream = static_cast<cudaStream_t>(graph.stream());
          cudaEvent_t start, stop;
          ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
          ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
          float plain_ms = 0, graph_ms = 0;
          {
            cuda::Graph::OnPrivateStream on(graph);
            ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
            ASSERT_EQ(cudaEventRecord(start, stream), cudaSuccess);
            for (int i = 0; i < kPlain; ++i) sample_once(call);
            ASSERT_EQ(cudaEventRecord(stop, stream), cudaSuccess);
            ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
            ASSERT_EQ(cudaEventElapsedTime(&plain_ms, start, stop), cudaSuccess);
          }
          graph.prepare(stream);
          graph.replay(stream);  // warm
          ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
          ASSERT_EQ(cudaEventRecord(start, stream), cudaSuccess);
          for (int i = 0; i < kReplays; ++i) graph.replay(stream);
          ASSERT_EQ(cudaEventRecord(stop, stream), cudaSuccess);
          ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
          ASSERT_EQ(cudaEventElapsedTime(&graph_ms, start, stop), cudaSuccess);
          cudaEventDestroy(start);
          cudaEventDestroy(stop);
          std::printf("%-8lld %-3lld %-9s %-22s %9.1f %9.1f\n", static_cast<long long>(vocab),
                      static_cast<long long>(rows), dtype_name(dtype), m.name,
                      1000.0 * plain_ms / kPlain, 1000.0 * graph_ms / (kPerGraph * kReplays));
        }
      }
    }
  }
}

}  // namespace
}  // namespace aotrt::test
