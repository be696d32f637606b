// `aotrt bench` (src/cli/bench.h): its statistics and process measurements,
// and the command itself, run as a process on the test model .so (see
// tests/unit/fixtures/test_model.cpp: x float32[4] -> y, views of y and w).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "aotrt/aotrt.h"
#include "cli/bench.h"
#include "core/handles.h"
#include "package/temp_dir.h"
#include "package_test_util.h"
#include "runtime/npy.h"

using aotrt::package::TempDir;
using namespace aotrt::cli;
using namespace aotrt::testing;

namespace {

// The aotrt CLI built beside this test binary.
std::string cli_path() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "aotrt").string();
}

struct Result {
  int status = -1;
  std::string out, err;
};

// Runs `args` through /bin/sh with stdout and stderr captured in files.
//
// Under scripts/sanitize.sh the CLI is built with AddressSanitizer, whose leak
// check at exit stops every thread with a tracer; that tracer itself now and
// then dies on a signal ("Tracer caught signal 11" then "LeakSanitizer has
// encountered a fatal error", google/sanitizers#1353), after the command has
// done its work and with no leak found. Only that signature, never a leak
// report (which reads "ERROR: LeakSanitizer: detected memory leaks") or any
// other failure, is run once more, and the retry is said on stderr.
Result run_cli(const TempDir& dir, const std::string& args, const std::string& env = "") {
  const std::string out = dir.path() + "/stdout", err = dir.path() + "/stderr";
  const std::string cmd = env + " '" + cli_path() + "' " + args + " >'" + out + "' 2>'" + err + "'";
  Result r;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int raw = std::system(cmd.c_str());
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    const bool tracer_died = r.err.find("LeakSanitizer has encountered a fatal error") != std::string::npos &&
                             r.err.find("detected memory leaks") == std::string::npos;
    if (!tracer_died) break;
    std::fprintf(stderr, "run_cli: LeakSanitizer's tracer died at exit (not a leak); running once more: %s\n",
                 args.c_str());
  }
  return r;
}

constexpr const char* kMetadataWithInputs =
    R"({"AOTI_DEVICE_KEY": "cpu", "aotrt.inputs": "[{\"dtype\": \"float32\", \"sizes\": [4], \"strides\": [1]}]"})";

std::string test_package(const TempDir& dir, bool with_specs) {
  const std::string path = dir.path() + (with_specs ? "/with_specs.pt2" : "/no_specs.pt2");
  const std::string blob = test_model_blob();
  write_zip(path, package_items(read_file(AOTRT_TEST_MODEL_SO), &blob,
                                with_specs ? kMetadataWithInputs : kMetadataCpu));
  return path;
}

int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

TEST(BenchStats, PercentilesInterpolateLikeNumpy) {
  // numpy.percentile(range(1, 101), [50, 90, 99]) = 50.5, 90.1, 99.01.
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  const LatencyStats s = summarize(v);
  EXPECT_EQ(s.count, 100u);
  EXPECT_NEAR(s.p50, 50.5, 1e-9);
  EXPECT_NEAR(s.p90, 90.1, 1e-9);
  EXPECT_NEAR(s.p99, 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  // One sample is every percentile; none gives zeros.
  const LatencyStats one = summarize({7.0});
  EXPECT_EQ(one.p50, 7.0);
  EXPECT_EQ(one.p99, 7.0);
  EXPECT_EQ(summarize({}).count, 0u);
  // [1, 2, 3, 4]: p90 at rank 2.7 -> 3.7.
  EXPECT_NEAR(percentile({1, 2, 3, 4}, 0.9), 3.7, 1e-12);
}

TEST(BenchStats, ReadsKilobyteLinesOfProcStatus) {
  const std::string status = "Name:\taotrt\nVmPeak:\t  123456 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1000 kB\n";
  EXPECT_EQ(status_bytes(status, "VmHWM"), 2048 * 1024);
  EXPECT_EQ(status_bytes(status, "VmRSS"), 1000 * 1024);
  EXPECT_EQ(status_bytes(status, "VmSwap"), -1);
  EXPECT_EQ(status_bytes("VmHWM: lots\n", "VmHWM"), -1);
  // This process has touched memory: its peak is real and at least its RSS now.
  const int64_t peak = peak_host_bytes();
  EXPECT_GT(peak, 1 << 20);
}

TEST(BenchStats, ProcessStartFromTheCallerOrTheKernel) {
  const auto now = std::chrono::steady_clock::now();
  // A caller-given start half a second ago is taken as it is.
  ::setenv("AOTRT_BENCH_T0_NS", std::to_string(monotonic_ns() - 500000000).c_str(), 1);
  std::string source;
  const auto given = process_start_time(&source);
  EXPECT_EQ(source, "AOTRT_BENCH_T0_NS");
  const double ago = std::chrono::duration<double>(now - given).count();
  EXPECT_GT(ago, 0.45);
  EXPECT_LT(ago, 0.6);
  // Garbage and a start in the future are ignored: the kernel's start time.
  for (const char* bad : {"soon", "-5", "99999999999999999999"}) {
    ::setenv("AOTRT_BENCH_T0_NS", bad, 1);
    const auto start = process_start_time(&source);
    EXPECT_NE(source.find("/proc/self/stat"), std::string::npos) << bad << ": " << source;
    EXPECT_LE(start, std::chrono::steady_clock::now());
  }
  ::unsetenv("AOTRT_BENCH_T0_NS");
  const auto start = process_start_time(&source);
  // This test process started before this test, and not days ago.
  EXPECT_LT(start, now);
  EXPECT_LT(std::chrono::duration<double>(now - start).count(), 24 * 3600.0);
}

TEST(BenchCommand, ReportsOneJsonObjectWithRandomInputs) {
  TempDir dir;
  const std::string pkg = test_package(dir, true);
  // The caller's clock: time to first output is measured from just before the shell.
  const std::string t0 = "AOTRT_BENCH_T0_NS=" + std::to_string(monotonic_ns());
  const Result r = run_cli(dir, "bench '" + pkg + "' --iters 25 --warmup 3 --json", t0);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not one JSON object: " << r.out;
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["iters"], 25);
  EXPECT_EQ(j["warmup"], 3);
  EXPECT_EQ(j["batch"], 4);  // the first dim of x
  EXPECT_EQ(j["inputs"][0]["source"], "random");
  EXPECT_EQ(j["inputs"][0]["sizes"], (std::vector<int64_t>{4}));
  const auto& lat = j["latency_us"];
  EXPECT_EQ(lat["count"], 25);
  EXPECT_GT(lat["p50"].get<double>(), 0);
  EXPECT_LE(lat["min"].get<double>(), lat["p50"].get<double>());
  EXPECT_LE(lat["p50"].get<double>(), lat["p90"].get<double>());
  EXPECT_LE(lat["p90"].get<double>(), lat["p99"].get<double>());
  EXPECT_LE(lat["p99"].get<double>(), lat["max"].get<double>());
  EXPECT_NEAR(j["samples_per_s"].get<double>(), 4 * j["runs_per_s"].get<double>(), 1e-6);
  EXPECT_EQ(j["process_start"], "AOTRT_BENCH_T0_NS");
  const double ttfo = j["time_to_first_output_s"].get<double>();
  EXPECT_GT(ttfo, j["load_s"].get<double>());
  EXPECT_LT(ttfo, 60.0);
  EXPECT_GT(j["peak_host_bytes"].get<int64_t>(), 1 << 20);
  EXPECT_GT(j["peak_allocator_bytes"].get<int64_t>(), 0);  // y at least
  EXPECT_FALSE(j.contains("enqueue_us"));  // CUDA only
}

TEST(BenchCommand, TakesInputFilesAndPrintsAReport) {
  TempDir dir;
  const std::string pkg = test_package(dir, false);
  std::vector<float> x = {1, 2, 3, 4};
  aotrt::npy::write(dir.path() + "/x.npy",
                    aotrt::Tensor::from_blob(x.data(), {4}, {1}, aotrt::ScalarType::Float32));
  const Result r = run_cli(dir, "bench '" + pkg + "' --input '" + dir.path() + "/x.npy' --iters 5");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* part : {"latency: p50", "throughput:", "time to first output:", "peak memory:",
                           "x.npy"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " missing from:\n" << r.out;
  }
}

TEST(BenchCommand, ProfileCountsTheShimsOfTheTimedRunsOnly) {
  // Each run of the test model makes these shim calls (test_model.cpp, a
  // finite x); the first run and the warm-up are not profiled.
  const std::vector<std::pair<std::string, int64_t>> per_run = {
      {"aoti_torch_get_numel", 1},        {"aoti_torch_get_dtype", 1},
      {"aoti_torch_get_data_ptr", 2},     {"aoti_torch_get_stride", 1},
      {"aoti_torch_empty_strided", 1},    {"aoti_torch_delete_tensor_object", 1},
      {"aoti_torch__reinterpret_tensor", 2}};
  constexpr int kIters = 7;
  TempDir dir;
  const std::string pkg = test_package(dir, true);
  Result r = run_cli(dir, "bench '" + pkg + "' --iters 7 --warmup 3 --profile --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not one JSON object: " << r.out;
  ASSERT_TRUE(j.contains("shim_profile")) << r.out;
  const auto& p = j["shim_profile"];
  EXPECT_EQ(p["runs"], kIters);
  ASSERT_EQ(p["functions"].size(), per_run.size()) << p.dump(1);
  int64_t calls = 0;
  double us = 0;
  for (const auto& [function, n] : per_run) {
    const auto it = std::find_if(p["functions"].begin(), p["functions"].end(),
                                 [&](const auto& e) { return e["function"] == function; });
    ASSERT_NE(it, p["functions"].end()) << function << " missing from " << p.dump(1);
    EXPECT_EQ((*it)["calls"], n * kIters) << function;
    EXPECT_DOUBLE_EQ((*it)["calls_per_run"].get<double>(), static_cast<double>(n)) << function;
    EXPECT_GT((*it)["max_ns"].get<int64_t>(), 0) << function;
    EXPECT_GE((*it)["total_ns"].get<int64_t>(), (*it)["max_ns"].get<int64_t>()) << function;
    EXPECT_NEAR((*it)["us_per_run"].get<double>(), (*it)["total_ns"].get<double>() / 1e3 / kIters,
                1e-9);
    calls += n * kIters;
    us += (*it)["total_ns"].get<double>() / 1e3 / kIters;
  }
  EXPECT_DOUBLE_EQ(p["calls_per_run"].get<double>(), static_cast<double>(calls) / kIters);
  EXPECT_NEAR(p["shim_us_per_run"].get<double>(), us, 1e-6);
  // run()'s own time: on the CPU the latency, less one clock read.
  EXPECT_GT(p["run_mean_us"].get<double>(), 0);
  EXPECT_LE(p["run_mean_us"].get<double>(), j["latency_us"]["mean"].get<double>());
  EXPECT_NEAR(p["outside_shims_us_per_run"].get<double>(),
              p["run_mean_us"].get<double>() - p["shim_us_per_run"].get<double>(), 1e-6);
  // The shims run inside run(): their time is part of it.
  EXPECT_LT(p["shim_us_per_run"].get<double>(), p["run_mean_us"].get<double>());

  // Without --profile there is no profile; the report prints the table.
  r = run_cli(dir, "bench '" + pkg + "' --iters 3 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("shim_profile"));
  r = run_cli(dir, "bench '" + pkg + "' --iters 3 --profile");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* part : {"shim profile", "calls/run", "aoti_torch__reinterpret_tensor",
                           "all shims", "outside them"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " missing from:\n" << r.out;
  }
}

TEST(BenchCommand, RefusesWithoutLayoutsOrWithBadArguments) {
  TempDir dir;
  const std::string pkg = test_package(dir, false);
  Result r = run_cli(dir, "bench '" + pkg + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("give every input with --input"), std::string::npos) << r.err;
  r = run_cli(dir, "bench '" + test_package(dir, true) + "' --iters 0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--iters must be at least 1"), std::string::npos) << r.err;
  // A CPU model has no CUDA graph mode.
  r = run_cli(dir, "bench '" + test_package(dir, true) + "' --cuda-graph");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cuda_graph is for CUDA models"), std::string::npos) << r.err;
}

TEST(ModelFastPath, ManyRunsKeepOutputAliasingAndFreeEverything) {
  // Model::run's bookkeeping without hash maps: the repeated output handle,
  // the view of y and the copy of the constant's view stay as they were.
  TempDir dir;
  aotrt::Model model = aotrt::Model::load(test_package(dir, true));
  std::vector<float> x = {1, 2, 3, 4};
  const aotrt::Tensor in = aotrt::Tensor::from_blob(x.data(), {4}, {1}, aotrt::ScalarType::Float32);
  const int64_t live = aotrt::handle_live_count();
  for (int r = 0; r < 200; ++r) {
    x[0] = static_cast<float>(r);
    const std::vector<aotrt::Tensor> out = model.run({&in, 1});
    ASSERT_EQ(out.size(), 4u);
    const float* y = static_cast<const float*>(out[0].data_ptr());
    ASSERT_EQ(y[0], 2.0f * r + 1);
    ASSERT_EQ(out[2].data_ptr(), out[0].data_ptr());     // the same handle twice: one view
    ASSERT_NE(out[2].handle(), out[0].handle());
    ASSERT_EQ(out[1].data_ptr(), static_cast<const float*>(out[0].data_ptr()) + 1);
    ASSERT_EQ(static_cast<const float*>(out[3].data_ptr())[0], 1.5f);  // w[1], copied out
  }
  EXPECT_EQ(aotrt::handle_live_count(), live);
  EXPECT_NO_THROW(aotrt::synchronize(aotrt::cpu_device()));
}
