// The CUDA fast path of Model::run (no host wait, no cudaMalloc in steady
// state), CUDA graph mode (Note [CUDA graph mode]) and automatic graphs (Note
// [Automatic CUDA graphs]), on the stand-in CUDA model
// tests/unit/fixtures/test_cuda_model.cpp: y = x + x @ w, x [4, 8].
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "aotrt/aotrt.h"
#include "cuda/runtime.h"
#include "cuda_test_util.h"
#include "package/temp_dir.h"
#include "package_test_util.h"

using aotrt::Error;
using aotrt::ErrorKind;
using aotrt::LoadOptions;
using aotrt::Model;
using aotrt::ScalarType;
using aotrt::Tensor;
using aotrt::package::TempDir;
using namespace aotrt::cuda;
using namespace aotrt::cuda::test;
using namespace aotrt::testing;

namespace {

// w[i][j] = ((8 i + j) % 7 - 3) / 8: small, exact in float32.
std::vector<float> weights() {
  std::vector<float> w(64);
  for (int k = 0; k < 64; ++k) w[k] = static_cast<float>(k % 7 - 3) / 8.0f;
  return w;
}

// The layout is recorded ("aotrt.inputs") only when asked: without it
// Model::run does not check strides and graph mode's own check is what refuses.
std::string cuda_package(const TempDir& dir, bool with_spec = true) {
  const std::string path = dir.path() + "/cuda_model.pt2";
  const std::vector<float> w = weights();
  const std::string blob(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  const std::string metadata =
      with_spec ? R"({"AOTI_DEVICE_KEY": "cuda", "aotrt.inputs": "[{\"dtype\": \"float32\", \"sizes\": [4, 8], \"strides\": [8, 1]}]"})"
                : R"({"AOTI_DEVICE_KEY": "cuda"})";
  write_zip(path, package_items(read_file(AOTRT_TEST_CUDA_MODEL_SO), &blob, metadata));
  return path;
}

std::vector<float> random_x(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(32);
  for (float& v : x) v = normal(rng);
  return x;
}

// y = x + x @ w in double.
std::vector<double> reference(const std::vector<float>& x) {
  const std::vector<float> w = weights();
  std::vector<double> y(32);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) {
      double acc = x[i * 8 + j];
      for (int k = 0; k < 8; ++k) acc += static_cast<double>(x[i * 8 + k]) * w[k * 8 + j];
      y[i * 8 + j] = acc;
    }
  }
  return y;
}

Tensor device_input(std::vector<float>& host) {
  return Tensor::from_blob(host.data(), {4, 8}, {8, 1}, ScalarType::Float32).to(cuda0());
}

// "" when `out` (any device) holds reference(x) within fp32 rounding.
std::string check_output(const Tensor& out, const std::vector<float>& x) {
  if (!out.defined()) return "output is undefined";
  if (out.numel() != 32) return "output has " + std::to_string(out.numel()) + " elements";
  const Tensor host = out.dense_host_copy();
  const float* got = static_cast<const float*>(host.data_ptr());
  const std::vector<double> want = reference(x);
  for (int k = 0; k < 32; ++k) {
    if (!(std::fabs(got[k] - want[k]) <= 1e-5 + 1e-5 * std::fabs(want[k]))) {
      return "element " + std::to_string(k) + " is " + std::to_string(got[k]) + ", want " +
             std::to_string(want[k]);
    }
  }
  return "";
}

// graph: CudaGraphMode::kOn, else kOff (the plain fast path); the default,
// kAuto, is load_auto's.
Model load(const std::string& path, bool graph) {
  LoadOptions options;
  options.cuda_graph = graph ? aotrt::CudaGraphMode::kOn : aotrt::CudaGraphMode::kOff;
  return Model::load(path, options);
}

Model load_auto(const std::string& path) { return Model::load(path); }

// Sets AOTRT_TEST_CUDA_MODEL_MODE for its scope.
class ModelMode {
 public:
  explicit ModelMode(const char* mode) { ::setenv("AOTRT_TEST_CUDA_MODEL_MODE", mode, 1); }
  ~ModelMode() { ::unsetenv("AOTRT_TEST_CUDA_MODEL_MODE"); }
};

// Makes `stream` the calling thread's current stream of device 0 for its scope.
class CurrentStream {
 public:
  explicit CurrentStream(cudaStream_t stream) : previous_(current_cuda_stream(0)) {
    set_current_cuda_stream(0, stream);
  }
  ~CurrentStream() { set_current_cuda_stream(0, previous_); }

 private:
  cudaStream_t previous_;
};

std::string message_of(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Queues `runs` runs on a stream held back by a host function and checks that
// each run() returned while the stream was still held (no host wait) and
// made no cudaMalloc; then lets the stream go and checks every output.
void expect_runs_queue_ahead(Model& model, int runs) {
  TestStream stream;
  CurrentStream current(stream.get());
  std::vector<std::vector<float>> xs;
  std::vector<Tensor> inputs;
  for (int r = 0; r < runs; ++r) xs.push_back(random_x(100 + r));
  for (auto& x : xs) inputs.push_back(device_input(x));
  // Warm this stream's cache first (cudaMalloc may wait for the device),
  // holding as many outputs at once as the timed runs will: each held output
  // is a block the cache must already have.
  for (int round = 0; round < 2; ++round) {
    std::vector<std::vector<Tensor>> held;
    for (int r = 0; r < runs; ++r) held.push_back(model.run({&inputs[r], 1}));
  }
  CUDA_OK(cudaStreamSynchronize(stream.get()));
  CUDA_OK(cudaDeviceSynchronize());  // the inputs' uploads too

  const int64_t mallocs = allocator_counters(0).cuda_mallocs;
  std::vector<std::vector<Tensor>> outputs;
  StreamBlocker blocker;
  blocker.block(stream.get());
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r) outputs.push_back(model.run({&inputs[r], 1}));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The blocker gives up after 10 s: a run that waited for the device shows
  // as a stream that is no longer held, and as seconds spent.
  EXPECT_EQ(cudaStreamQuery(stream.get()), cudaErrorNotReady)
      << "the stream finished while run() was being called: a run waited for the device";
  (void)cudaGetLastError();
  EXPECT_LT(s, 5.0) << runs << " runs on a held stream took " << s << " s";
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs) << "cudaMalloc in a steady-state run";
  blocker.release();
  CUDA_OK(cudaStreamSynchronize(stream.get()));
  for (int r = 0; r < runs; ++r) {
    ASSERT_EQ(outputs[r].size(), 1u);
    EXPECT_EQ(check_output(outputs[r][0], xs[r]), "") << "run " << r;
  }
}

}  // namespace

TEST(CudaModelFastPath, RunIsCorrect) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), false);
  ASSERT_TRUE(model.device().is_cuda());
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::vector<float> x = random_x(seed);
    const Tensor in = device_input(x);
    const std::vector<Tensor> out = model.run({&in, 1});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].device().is_cuda());
    EXPECT_EQ(check_output(out[0], x), "") << "seed " << seed;
  }
}

TEST(CudaModelFastPath, RunReturnsWithoutWaitingForTheDevice) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), false);
  // The fixture's AOTInductorModelContainerRun waits for the previous run, as
  // torch's does: only RunSingleThreaded lets runs queue ahead.
  expect_runs_queue_ahead(model, 4);
}

TEST(CudaModelFastPath, SteadyStateMakesNoCudaMalloc) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), false);
  std::vector<float> x = random_x(7);
  const Tensor in = device_input(x);
  for (int r = 0; r < 5; ++r) model.run({&in, 1});
  synchronize(0);
  const CachingAllocatorCounters before = allocator_counters(0);
  const int64_t allocations = allocator(0).stats().total_allocations;
  std::vector<Tensor> last;
  for (int r = 0; r < 50; ++r) last = model.run({&in, 1});
  synchronize(0);
  const CachingAllocatorCounters after = allocator_counters(0);
  EXPECT_EQ(after.cuda_mallocs, before.cuda_mallocs);
  EXPECT_EQ(after.cuda_frees, before.cuda_frees);
  // t and y per run, every one from the cache (the cuBLAS call may add its own).
  EXPECT_GE(allocator(0).stats().total_allocations - allocations, 100);
  EXPECT_GE(after.cache_hits - before.cache_hits, 100);
  EXPECT_EQ(check_output(last[0], x), "");
}

TEST(CudaModelModules, UnloadedWithTheirModel) {
  require_device();
  TempDir dir;
  const std::string pkg = cuda_package(dir);
  const size_t before = aotrt::cuda::loaded_module_count();
  size_t free_before = 0, free_after = 0, total = 0;
  {
    Model warm = load(pkg, false);  // first-use allocations of the driver and the caches
    std::vector<float> x = random_x(3);
    const Tensor in = device_input(x);
    warm.run({&in, 1});
    EXPECT_EQ(aotrt::cuda::loaded_module_count(), before + 1) << "the model's kernel module";
  }
  EXPECT_EQ(aotrt::cuda::loaded_module_count(), before) << "unloaded with its model";
  synchronize(0);
  CUDA_OK(cudaMemGetInfo(&free_before, &total));
  for (int i = 0; i < 100; ++i) {
    Model m = load(pkg, false);
    std::vector<float> x = random_x(4);
    const Tensor in = device_input(x);
    const std::vector<Tensor> out = m.run({&in, 1});
    ASSERT_EQ(check_output(out[0], x), "");
  }
  synchronize(0);
  CUDA_OK(cudaMemGetInfo(&free_after, &total));
  EXPECT_EQ(aotrt::cuda::loaded_module_count(), before);
  // Without the unload every load kept a module's code on the device.
  EXPECT_LE(static_cast<int64_t>(free_before) - static_cast<int64_t>(free_after), int64_t{2} << 20)
      << "device memory went from " << free_before << " to " << free_after << " free bytes";
}

TEST(CudaModelFastPath, RunsFromTwoThreadsAreSerialisedAndCorrect) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), false);
  std::vector<std::string> failures(2);
  auto worker = [&](int id) {
    TestStream stream;
    CurrentStream current(stream.get());
    for (int r = 0; r < 20; ++r) {
      std::vector<float> x = random_x(1000 * id + r);
      const Tensor in = device_input(x);
      const std::vector<Tensor> out = model.run({&in, 1});
      const std::string bad = check_output(out[0], x);
      if (!bad.empty() && failures[id].empty()) failures[id] = "run " + std::to_string(r) + ": " + bad;
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

TEST(CudaGraphMode, ReplaysWithEachRunsInputs) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), true);
  std::vector<float> x1 = random_x(11), x2 = random_x(12);
  const Tensor in1 = device_input(x1), in2 = device_input(x2);
  const std::vector<Tensor> out1 = model.run({&in1, 1});  // captures
  ASSERT_EQ(out1.size(), 1u);
  EXPECT_EQ(check_output(out1[0], x1), "");
  const std::vector<Tensor> out2 = model.run({&in2, 1});
  EXPECT_EQ(check_output(out2[0], x2), "");
  // Outputs are copies: the second run did not overwrite the first's.
  EXPECT_EQ(check_output(out1[0], x1), "");
  EXPECT_NE(out1[0].data_ptr(), out2[0].data_ptr());
  // Running the caller's input again after another input.
  const std::vector<Tensor> out3 = model.run({&in1, 1});
  EXPECT_EQ(check_output(out3[0], x1), "");
}

TEST(CudaGraphMode, EmptyingTheCacheLeavesTheGraphsMemory) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), true);
  std::vector<float> x1 = random_x(81), x2 = random_x(82);
  const Tensor in1 = device_input(x1), in2 = device_input(x2);
  EXPECT_EQ(check_output(model.run({&in1, 1})[0], x1), "");
  synchronize(0);
  // The intermediate the graph writes is a cached block of its pool: freeing
  // it would let the next allocation land where the replay writes.
  empty_cache(0);
  std::vector<float> junk(1 << 16, 7.0f);
  const Tensor filler = Tensor::from_blob(junk.data(), {1 << 16}, {1}, ScalarType::Float32).to(cuda0());
  EXPECT_EQ(check_output(model.run({&in2, 1})[0], x2), "");
  EXPECT_EQ(check_output(model.run({&in1, 1})[0], x1), "");
}

TEST(CudaGraphMode, ReplayRunsNoModelCodeAndNoCudaMalloc) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), true);
  std::vector<float> x = random_x(21);
  const Tensor in = device_input(x);
  model.run({&in, 1});
  model.run({&in, 1});
  synchronize(0);
  const int64_t mallocs = allocator_counters(0).cuda_mallocs;
  const int64_t allocations = allocator(0).stats().total_allocations;
  std::vector<Tensor> out;
  for (int r = 0; r < 30; ++r) out = model.run({&in, 1});
  synchronize(0);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs);
  // A replay allocates only the copy of its one output; an eager run of the
  // model would also allocate its intermediate and its output.
  EXPECT_EQ(allocator(0).stats().total_allocations - allocations, 30);
  EXPECT_EQ(check_output(out[0], x), "");
}

TEST(CudaGraphMode, ReplaysQueueAheadOfTheDevice) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), true);
  // Captured on the legacy stream's inputs, replayed on another stream.
  std::vector<float> x = random_x(31);
  const Tensor in = device_input(x);
  EXPECT_EQ(check_output(model.run({&in, 1})[0], x), "");
  expect_runs_queue_ahead(model, 4);
}

TEST(CudaGraphMode, RefusesARunThatWaitsForTheDevice) {
  require_device();
  TempDir dir;
  std::vector<float> x = random_x(41);
  {
    ModelMode mode("sync");
    Model model = load(cuda_package(dir), true);
    const Tensor in = device_input(x);
    ErrorKind kind = ErrorKind::kInternal;
    const std::string first = message_of([&] { model.run({&in, 1}); }, &kind);
    EXPECT_EQ(kind, ErrorKind::kUnsupported) << first;
    EXPECT_TRUE(contains(first, "could not be captured into a CUDA graph")) << first;
    EXPECT_TRUE(contains(first, "aoti_torch_copy_")) << first;  // the failing shim call
    EXPECT_TRUE(contains(first, "captur")) << first;            // and the CUDA error saying why
    // The refusal is kept.
    EXPECT_EQ(message_of([&] { model.run({&in, 1}); }), first);
  }
  // Nothing was left broken: the same model runs eagerly, and in graph mode
  // without the hazard.
  const std::string path = cuda_package(dir);
  Model eager = load(path, false);
  const Tensor in = device_input(x);
  EXPECT_EQ(check_output(eager.run({&in, 1})[0], x), "");
  Model graph = load(path, true);
  EXPECT_EQ(check_output(graph.run({&in, 1})[0], x), "");
}

TEST(CudaGraphMode, RefusesAnAllocationThatMissesThePool) {
  require_device();
  TempDir dir;
  ModelMode mode("grow");
  Model model = load(cuda_package(dir), true);
  std::vector<float> x = random_x(51);
  const Tensor in = device_input(x);
  ErrorKind kind = ErrorKind::kInternal;
  const std::string message = message_of([&] { model.run({&in, 1}); }, &kind);
  EXPECT_EQ(kind, ErrorKind::kUnsupported) << message;
  EXPECT_TRUE(contains(message, "during CUDA graph capture found no cached block")) << message;
  EXPECT_TRUE(contains(message, "aoti_torch_empty_strided")) << message;
}

TEST(CudaGraphMode, RefusesInputsOfAnotherLayout) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir, /*with_spec=*/false), true);
  std::vector<float> x = random_x(61);
  const Tensor in = device_input(x);
  model.run({&in, 1});
  // The same 32 elements as [8, 4], and as a column-major [4, 8].
  const Tensor other = Tensor::from_blob(x.data(), {8, 4}, {4, 1}, ScalarType::Float32).to(cuda0());
  const Tensor column = Tensor::empty_strided({4, 8}, {1, 4}, ScalarType::Float32, cuda0());
  for (const Tensor* bad : {&other, &column}) {
    ErrorKind kind = ErrorKind::kInternal;
    const std::string message = message_of([&] { model.run({bad, 1}); }, &kind);
    EXPECT_EQ(kind, ErrorKind::kInvalidArgument) << message;
    EXPECT_TRUE(contains(message, "the CUDA graph was captured for float32 sizes [4, 8] strides [8, 1]"))
        << message;
  }
  // A refused input does not disturb the graph.
  EXPECT_EQ(check_output(model.run({&in, 1})[0], x), "");
}

TEST(CudaGraphMode, UnloadingFreesThePool) {
  require_device();
  TempDir dir;
  const std::string path = cuda_package(dir);
  std::vector<float> x = random_x(71);
  const Tensor in = device_input(x);
  synchronize(0);
  const int64_t live = allocator(0).stats().live_bytes;
  std::vector<Tensor> out;
  {
    Model model = load(path, true);
    out = model.run({&in, 1});
    out = model.run({&in, 1});
    synchronize(0);
  }
  // Only the output the caller kept is live; the output stays valid.
  EXPECT_EQ(check_output(out[0], x), "");
  out.clear();
  EXPECT_EQ(allocator(0).stats().live_bytes, live);
}

// --- Automatic graphs (the default; Note [Automatic CUDA graphs]) -------------------------

TEST(CudaGraphAuto, IsTheDefault) {
  EXPECT_EQ(LoadOptions{}.cuda_graph, aotrt::CudaGraphMode::kAuto);
}

TEST(CudaGraphAuto, CapturesALayoutSeenTwiceAndReplaysIt) {
  require_device();
  TempDir dir;
  Model model = load_auto(cuda_package(dir));
  std::vector<float> x1 = random_x(111), x2 = random_x(112);
  const Tensor in1 = device_input(x1), in2 = device_input(x2);
  EXPECT_EQ(check_output(model.run({&in1, 1})[0], x1), "");
  Model::CudaGraphStatus st = model.cuda_graph_status();
  EXPECT_EQ(st.mode, aotrt::CudaGraphMode::kAuto);
  EXPECT_EQ(st.graphs, 0) << "a layout seen once is not captured";
  EXPECT_EQ(st.plain_runs, 1);
  const std::vector<Tensor> out2 = model.run({&in2, 1});  // captures
  EXPECT_EQ(check_output(out2[0], x2), "");
  st = model.cuda_graph_status();
  EXPECT_EQ(st.graphs, 1);
  EXPECT_EQ(st.replays, 1);
  EXPECT_EQ(st.declined, "");
  synchronize(0);
  const int64_t mallocs = allocator_counters(0).cuda_mallocs;
  for (int r = 0; r < 10; ++r) {
    const Tensor& in = r % 2 ? in1 : in2;
    EXPECT_EQ(check_output(model.run({&in, 1})[0], r % 2 ? x1 : x2), "") << "run " << r;
  }
  synchronize(0);
  EXPECT_EQ(allocator_counters(0).cuda_mallocs, mallocs) << "cudaMalloc in a replay";
  EXPECT_EQ(model.cuda_graph_status().replays, 11);
  // Outputs are the caller's: a later replay did not overwrite an earlier output.
  EXPECT_EQ(check_output(out2[0], x2), "");
}

TEST(CudaGraphAuto, KeepsAGraphPerLayout) {
  require_device();
  TempDir dir;
  Model model = load_auto(cuda_package(dir, /*with_spec=*/false));
  std::vector<float> x = random_x(121);
  const Tensor rows = device_input(x);
  // The same values in a column-major [4, 8].
  Tensor cols = Tensor::empty_strided({4, 8}, {1, 4}, ScalarType::Float32, cuda0());
  cols.copy_(rows);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(check_output(model.run({&rows, 1})[0], x), "") << "row-major run " << r;
    EXPECT_EQ(check_output(model.run({&cols, 1})[0], x), "") << "column-major run " << r;
  }
  const Model::CudaGraphStatus st = model.cuda_graph_status();
  EXPECT_EQ(st.graphs, 2);
  EXPECT_EQ(st.plain_runs, 2);
  EXPECT_EQ(st.replays, 4);
}

TEST(CudaGraphAuto, RunsPlainlyAModelThatCannotBeCaptured) {
  require_device();
  TempDir dir;
  for (const char* hazard : {"sync", "grow"}) {
    ModelMode mode(hazard);
    Model model = load_auto(cuda_package(dir));
    for (int r = 0; r < 4; ++r) {
      std::vector<float> x = random_x(130 + r);
      const Tensor in = device_input(x);
      std::vector<Tensor> out;
      ASSERT_NO_THROW(out = model.run({&in, 1})) << hazard << " run " << r;
      EXPECT_EQ(check_output(out[0], x), "") << hazard << " run " << r;
    }
    const Model::CudaGraphStatus st = model.cuda_graph_status();
    EXPECT_EQ(st.graphs, 0) << hazard;
    EXPECT_EQ(st.replays, 0) << hazard;
    EXPECT_EQ(st.plain_runs, 4) << hazard;
    EXPECT_TRUE(contains(st.declined, "could not be captured into a CUDA graph")) << st.declined;
  }
}

TEST(CudaGraphAuto, RunsPlainlyAModelThatWritesItsInput) {
  require_device();
  TempDir dir;
  ModelMode mode("write_input");
  Model model = load_auto(cuda_package(dir));
  for (int r = 0; r < 4; ++r) {
    std::vector<float> x = random_x(140 + r);
    const Tensor in = device_input(x);
    EXPECT_EQ(check_output(model.run({&in, 1})[0], x), "") << "run " << r;
    // As in a plain run, the caller's input now holds y.
    EXPECT_EQ(check_output(in, x), "") << "the input after run " << r;
  }
  const Model::CudaGraphStatus st = model.cuda_graph_status();
  EXPECT_EQ(st.replays, 0);
  EXPECT_TRUE(contains(st.declined, "writes into its input 0 ('x')")) << st.declined;
}

TEST(CudaGraphAuto, RunsPlainlyAModelWhoseOutputIsAViewOfAnInput) {
  require_device();
  TempDir dir;
  ModelMode mode("view_of_input");
  Model model = load_auto(cuda_package(dir));
  std::vector<float> x = random_x(151);
  const Tensor in = device_input(x);
  for (int r = 0; r < 4; ++r) {
    const std::vector<Tensor> out = model.run({&in, 1});
    EXPECT_EQ(out[0].data_ptr(), in.data_ptr()) << "run " << r << ": the output is the input's memory";
  }
  const Model::CudaGraphStatus st = model.cuda_graph_status();
  EXPECT_EQ(st.replays, 0);
  EXPECT_TRUE(contains(st.declined, "output 0 is a view of its input 0 ('x')")) << st.declined;
}

TEST(CudaGraphMode, CopiesWhatTheModelWritesIntoItsInputsBack) {
  require_device();
  TempDir dir;
  ModelMode mode("write_input");
  Model model = load(cuda_package(dir), true);
  for (int r = 0; r < 3; ++r) {
    std::vector<float> x = random_x(160 + r);
    const Tensor in = device_input(x);
    EXPECT_EQ(check_output(model.run({&in, 1})[0], x), "") << "run " << r;
    EXPECT_EQ(check_output(in, x), "") << "the input after run " << r;
  }
}

TEST(CudaGraphAuto, OffRunsEveryRunPlainly) {
  require_device();
  TempDir dir;
  Model model = load(cuda_package(dir), false);
  std::vector<float> x = random_x(171);
  const Tensor in = device_input(x);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(check_output(model.run({&in, 1})[0], x), "");
  const Model::CudaGraphStatus st = model.cuda_graph_status();
  EXPECT_EQ(st.mode, aotrt::CudaGraphMode::kOff);
  EXPECT_EQ(st.graphs, 0);
}
