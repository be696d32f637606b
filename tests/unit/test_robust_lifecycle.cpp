// Lifecycle with the stand-in model: 1,000 loads and unloads leave memory,
// mappings, file descriptors, threads and temporary files flat; two models
// are independent; outputs outlive their model; the thread-local destructors
// of a model (Note [Thread-local destructors and dlclose]) run at thread
// exit or unload; an allocation failure is reported with its size and the
// runtime works afterwards. The same with a real package: test_robust_real.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <cstdlib>
#include <thread>

#include "aotrt/aotrt.h"
#include "core/allocator.h"
#include "core/handles.h"
#include "package/temp_dir.h"
#include "package_test_util.h"
#include "robust_cases.h"
#include "runtime/model_tls.h"

using aotrt::ErrorKind;
using aotrt::Model;
using aotrt::ScalarType;
using aotrt::Tensor;
using aotrt::package::TempDir;
using namespace aotrt::testing;

namespace {

constexpr const char* kArea = "lifecycle";

std::string stand_in_package(const TempDir& dir, const char* so = AOTRT_TEST_MODEL_SO) {
  const std::string path = dir.path() + "/stand_in.pt2";
  const std::string blob = test_model_blob();
  write_zip(path, package_items(read_file(so), &blob));
  return path;
}

// The stand-in built as usual, and with libstdc++ linked statically: it then
// defines __cxa_thread_atexit itself and calls glibc's
// __cxa_thread_atexit_impl (Note [Thread-local destructors and dlclose]).
struct StandIn {
  const char* name;
  const char* so;
};
const StandIn kStandIns[] = {{"SharedLibstdcxx", AOTRT_TEST_MODEL_SO},
                             {"StaticLibstdcxx", AOTRT_TEST_MODEL_STATIC_SO}};

class RobustLifecycleModels : public ::testing::TestWithParam<StandIn> {};

std::string stand_in_label(const StandIn& s) {
  return std::string(s.so == kStandIns[0].so ? "the stand-in model"
                                              : "the stand-in model (libstdc++ linked in)");
}

float y0(const std::vector<Tensor>& out, int j) {
  return static_cast<const float*>(out.at(0).data_ptr())[j];
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::atoi(v) : fallback;
}

}  // namespace

TEST_P(RobustLifecycleModels, ThousandLoadsLeaveNothing) {
  TempDir work;
  const std::string pkg = stand_in_package(work, GetParam().so);
  const int n = env_int("AOTRT_ROBUST_LOADS", 1000);
  FreshTmpdir tmp;
  aotrt::Allocator& cpu = aotrt::allocator_for(aotrt::cpu_device());
  std::vector<float> x = {1, 2, 3, 4};
  Tensor in = Tensor::from_blob(x.data(), {4}, {1}, ScalarType::Float32);
  auto cycle = [&] {
    Model m = Model::load(pkg);
    const auto out = m.run({&in, 1});
    ASSERT_EQ(y0(out, 3), 9.0f);
  };
  for (int i = 0; i < 20; ++i) cycle();  // warm-up: first-use allocations of libc, libzip, ...
  {
    const Model loaded = Model::load(pkg);
    ASSERT_GT(process_counts(tmp.path()).model_mappings, 0) << "the measure sees no loaded model";
  }
  const ProcessCounts before = process_counts(tmp.path());
  const int64_t live = cpu.stats().live_bytes, handles = aotrt::handle_live_count();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) cycle();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ProcessCounts after = process_counts(tmp.path());
  expect_process_flat(before, after, /*rss_slack_kb=*/1024, n);
  EXPECT_EQ(cpu.stats().live_bytes, live);
  EXPECT_EQ(aotrt::handle_live_count(), handles);
  EXPECT_EQ(aotrt::runtime::pending_model_thread_destructors(), 0u);
  EXPECT_EQ(tmp.listing(), "");
  record_case(kArea, std::to_string(n) + " loads + runs + unloads of " + stand_in_label(GetParam()), "flat",
              "before: " + describe(before) + "; after: " + describe(after) + "; " +
                  std::to_string(static_cast<int>(seconds * 1e6 / n)) + " us per cycle");
}

TEST(RobustLifecycle, TwoModelsUnloadOneAndOutputsOutlive) {
  TempDir work;
  const std::string pkg = stand_in_package(work);
  std::vector<float> x = {1, 1, 1, 1};
  Tensor in = Tensor::from_blob(x.data(), {4}, {1}, ScalarType::Float32);
  auto a = std::make_unique<Model>(Model::load(pkg));
  Model b = Model::load(pkg);
  std::vector<Tensor> kept;
  for (int i = 0; i < 10; ++i) {
    kept = a->run({&in, 1});
    b.run({&in, 1});
  }
  a.reset();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(y0(b.run({&in, 1}), 0), 3.0f);
  // a's outputs, including the copy of its constant's view (output 3), are intact.
  EXPECT_EQ(y0(kept, 0), 3.0f);
  EXPECT_EQ(static_cast<const float*>(kept[3].data_ptr())[0], 1.5f);
  record_case(kArea, "two models loaded, one unloaded", "the other keeps running", "");
  record_case(kArea, "outputs used after their model is unloaded", "valid (views of a constant are copied out)", "");
}

TEST_P(RobustLifecycleModels, ModelThreadLocalsRunAtThreadExitAndUnload) {
  TempDir work;
  const std::string pkg = stand_in_package(work, GetParam().so);
  ASSERT_EQ(aotrt::runtime::pending_model_thread_destructors(), 0u);
  std::vector<float> nan = {std::nanf(""), 0, 0, 0};
  Tensor bad = Tensor::from_blob(nan.data(), {4}, {1}, ScalarType::Float32);
  {
    Model m = Model::load(pkg);
    // The stand-in's thread_local error string is set by a failing run.
    EXPECT_THROW(m.run({&bad, 1}), aotrt::Error);
    EXPECT_EQ(aotrt::runtime::pending_model_thread_destructors(), 1u);
    // Another thread's registration runs when that thread exits.
    std::thread([&] { EXPECT_THROW(m.run({&bad, 1}), aotrt::Error); }).join();
    EXPECT_EQ(aotrt::runtime::pending_model_thread_destructors(), 1u);
    // A thread still alive when the model is unloaded.
    std::mutex mu;
    std::condition_variable cv;
    bool ran = false, release = false;
    std::thread alive([&] {
      EXPECT_THROW(m.run({&bad, 1}), aotrt::Error);
      std::unique_lock<std::mutex> lock(mu);
      ran = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    });
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return ran; });
    }
    EXPECT_EQ(aotrt::runtime::pending_model_thread_destructors(), 2u);
    m = Model::load(pkg);  // unloads the first: both registrations run now
    EXPECT_EQ(aotrt::runtime::pending_model_thread_destructors(), 0u);
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
    alive.join();  // its exit finds nothing left to run
    EXPECT_EQ(aotrt::runtime::pending_model_thread_destructors(), 0u);
  }
  record_case(kArea, "thread_local destructors of " + stand_in_label(GetParam()) +
                        " (thread exits, model unloaded first)",
              "run once each, before dlclose at the latest", "");
}

INSTANTIATE_TEST_SUITE_P(StandIns, RobustLifecycleModels, ::testing::ValuesIn(kStandIns),
                         [](const ::testing::TestParamInfo<StandIn>& info) {
                           return std::string(info.param.name);
                         });

TEST(RobustAllocation, FailureNamesTheSizeAndTheRuntimeRecovers) {
  TempDir work;
  Model m = Model::load(stand_in_package(work));
  std::vector<float> x = {1, 2, 3, 4};
  Tensor in = Tensor::from_blob(x.data(), {4}, {1}, ScalarType::Float32);
  aotrt::Allocator& cpu = aotrt::allocator_for(aotrt::cpu_device());
  const int64_t live = cpu.stats().live_bytes, handles = aotrt::handle_live_count();
  cpu.set_limit(live + 16);  // less than the 32-byte output
  const std::string msg = expect_refused(
      "allocation failure", "CPU allocator capped below what a run needs",
      ErrorKind::kBackend, {"AOTInductorModelContainerRun failed", "32 bytes"},
      [&] { m.run({&in, 1}); });
  cpu.set_limit(0);
  EXPECT_EQ(cpu.stats().live_bytes, live);
  EXPECT_EQ(aotrt::handle_live_count(), handles);
  const auto out = m.run({&in, 1});
  EXPECT_EQ(y0(out, 3), 9.0f);
  record_case("allocation failure", "the same run with the cap lifted", "runs; nothing leaked", "");
}
