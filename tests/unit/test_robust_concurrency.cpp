// One model run from 8 threads at once gives what serial runs give; the
// stand-in model here (every run allocates, makes views of its output and of
// its constant, and is copied out of the model), a real package in
// test_robust_real.cpp. scripts/tsan.sh runs these under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "aotrt/aotrt.h"
#include "core/allocator.h"
#include "core/handles.h"
#include "package/temp_dir.h"
#include "package_test_util.h"
#include "robust_cases.h"

using aotrt::Model;
using aotrt::ScalarType;
using aotrt::Tensor;
using aotrt::package::TempDir;
using namespace aotrt::testing;

namespace {

constexpr int kThreads = 8;

// Every value of every output, densely, as floats.
std::vector<float> flatten(const std::vector<Tensor>& outputs) {
  std::vector<float> all;
  for (const Tensor& t : outputs) {
    const Tensor d = t.dense_host_copy(ScalarType::Float32);
    const float* p = static_cast<const float*>(d.data_ptr());
    all.insert(all.end(), p, p + d.numel());
  }
  return all;
}

}  // namespace

TEST(RobustConcurrency, EightThreadsMatchSerialRuns) {
  TempDir work;
  const std::string pkg = work.path() + "/stand_in.pt2";
  const std::string blob = test_model_blob();
  write_zip(pkg, package_items(read_file(AOTRT_TEST_MODEL_SO), &blob));
  Model model = Model::load(pkg);
  const int runs = 300;
  // Per thread, its own input values; the serial results first.
  std::vector<std::vector<float>> xs(kThreads), want(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (int j = 0; j < 4; ++j) xs[t].push_back(static_cast<float>(10 * t + j));
    Tensor in = Tensor::from_blob(xs[t].data(), {4}, {1}, ScalarType::Float32);
    want[t] = flatten(model.run({&in, 1}));
  }
  const int64_t handles = aotrt::handle_live_count();
  const int64_t live = aotrt::allocator_for(aotrt::cpu_device()).stats().live_bytes;
  std::atomic<int> mismatches{0}, failures{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      Tensor in = Tensor::from_blob(xs[t].data(), {4}, {1}, ScalarType::Float32);
      for (int i = 0; i < runs; ++i) {
        try {
          if (flatten(model.run({&in, 1})) != want[t]) ++mismatches;
        } catch (const std::exception& e) {
          ++failures;
        }
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(aotrt::handle_live_count(), handles);
  EXPECT_EQ(aotrt::allocator_for(aotrt::cpu_device()).stats().live_bytes, live);
  record_case("concurrency", "stand-in model, 8 threads x " + std::to_string(runs) + " runs (CPU)",
              "same results as serial runs; no handle or byte leaked", "");
}

TEST(RobustConcurrency, LoadAndRunFromManyThreads) {
  // Loads and unloads on several threads at once: the loader's temporary
  // folders, the dlopen/dlclose of private copies, the thread-local registry.
  TempDir work;
  const std::string pkg = work.path() + "/stand_in.pt2";
  const std::string blob = test_model_blob();
  write_zip(pkg, package_items(read_file(AOTRT_TEST_MODEL_SO), &blob));
  FreshTmpdir tmp;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> x = {1, 2, 3, static_cast<float>(t)};
      Tensor in = Tensor::from_blob(x.data(), {4}, {1}, ScalarType::Float32);
      for (int i = 0; i < 20; ++i) {
        try {
          Model m = Model::load(pkg);
          const auto out = m.run({&in, 1});
          if (static_cast<const float*>(out[0].data_ptr())[3] != 2.0f * t + 1) ++failures;
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(tmp.listing(), "");
  record_case("concurrency", "8 threads each loading, running, unloading the stand-in 20 times",
              "all succeed; no temporary file left", "");
}
