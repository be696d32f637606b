// Robustness cases on a real package exported by torch, passed in by
// tests/e2e/test_robust_real.py (which exports it); skipped without one:
//   AOTRT_ROBUST_PACKAGE         the .pt2 (CPU or CUDA)
//   AOTRT_ROBUST_INPUTS          its inputs, .npy files joined with ','
//   AOTRT_ROBUST_EXPECTED        eager's outputs, .npy files joined with ','
//   AOTRT_ROBUST_ATOL, _RTOL     the tolerance for those (default 1e-5)
//   AOTRT_ROBUST_NOSPEC_PACKAGE  the same package without its "aotrt.inputs"
//                                record, so only the model's own checks apply
//   AOTRT_ROBUST_LOADS           load/unload cycles (default 1000)
//   AOTRT_ROBUST_LABEL           names the package in the recorded cases
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "aotrt/aotrt.h"
#include "core/allocator.h"
#include "core/handles.h"
#include "robust_cases.h"
#include "runtime/model_tls.h"
#include "runtime/npy.h"

#ifdef AOTRT_WITH_CUDA
#include <cuda_runtime_api.h>

#include "aotrt/shim_cuda.h"
#endif

extern char** environ;

using aotrt::ErrorKind;
using aotrt::Model;
using aotrt::ScalarType;
using aotrt::Tensor;
using namespace aotrt::testing;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::string label() {
  const std::string l = env("AOTRT_ROBUST_LABEL");
  return l.empty() ? "real package" : l;
}

std::string device_name(const Model& m) { return m.device().is_cpu() ? "CPU" : "CUDA"; }

// Every value of every output, densely, as doubles (on the host).
std::vector<double> flatten(const std::vector<Tensor>& outputs) {
  std::vector<double> all;
  for (const Tensor& t : outputs) {
    if (!t.defined()) continue;
    const Tensor d = t.dense_host_copy(ScalarType::Float64);
    const double* p = static_cast<const double*>(d.data_ptr());
    all.insert(all.end(), p, p + d.numel());
  }
  return all;
}

class RobustReal : public ::testing::Test {
 protected:
  void SetUp() override {
    package_ = env("AOTRT_ROBUST_PACKAGE");
    if (package_.empty()) GTEST_SKIP() << "AOTRT_ROBUST_PACKAGE is not set (tests/e2e/test_robust_real.py sets it)";
    for (const std::string& p : split(env("AOTRT_ROBUST_INPUTS"))) host_inputs_.push_back(aotrt::npy::read(p));
    for (const std::string& p : split(env("AOTRT_ROBUST_EXPECTED"))) {
      const auto v = flatten({aotrt::npy::read(p)});
      expected_.insert(expected_.end(), v.begin(), v.end());
    }
    if (!env("AOTRT_ROBUST_ATOL").empty()) atol_ = std::stod(env("AOTRT_ROBUST_ATOL"));
    if (!env("AOTRT_ROBUST_RTOL").empty()) rtol_ = std::stod(env("AOTRT_ROBUST_RTOL"));
  }

  std::vector<Tensor> inputs_for(const Model& m) const {
    std::vector<Tensor> in;
    for (size_t i = 0; i < host_inputs_.size(); ++i) in.push_back(m.prepare_input(i, host_inputs_[i]));
    return in;
  }

  // Whether `got` is eager's output within the tolerance; says where not.
  ::testing::AssertionResult matches(const std::vector<double>& got) const {
    if (got.size() != expected_.size()) {
      return ::testing::AssertionFailure() << got.size() << " values, eager has " << expected_.size();
    }
    for (size_t i = 0; i < got.size(); ++i) {
      if (!(std::abs(got[i] - expected_[i]) <= atol_ + rtol_ * std::abs(expected_[i]))) {
        return ::testing::AssertionFailure() << "value " << i << ": " << got[i] << ", eager "
                                             << expected_[i];
      }
    }
    return ::testing::AssertionSuccess();
  }

  std::string package_;
  std::vector<Tensor> host_inputs_;
  std::vector<double> expected_;
  double atol_ = 1e-5, rtol_ = 1e-5;
};

#ifdef AOTRT_WITH_CUDA
int64_t cuda_used_bytes() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
  return static_cast<int64_t>(total - free);
}
#endif

}  // namespace

TEST_F(RobustReal, MatchesEager) {
  Model m = Model::load(package_);
  EXPECT_TRUE(matches(flatten(m.run(inputs_for(m)))));
}

TEST_F(RobustReal, LoadUnloadLeavesNothing) {
  const int n = env("AOTRT_ROBUST_LOADS").empty() ? 1000 : std::stoi(env("AOTRT_ROBUST_LOADS"));
  FreshTmpdir tmp;
  bool cuda = false;
  aotrt::Device device = aotrt::cpu_device();
  auto cycle = [&] {
    Model m = Model::load(package_);
    cuda = m.device().is_cuda();
    device = m.device();
    ASSERT_TRUE(matches(flatten(m.run(inputs_for(m)))));
  };
  for (int i = 0; i < 10; ++i) cycle();  // warm-up: oneDNN, OpenMP and CUDA pools start
  {
    const Model loaded = Model::load(package_);
    ASSERT_GT(process_counts(tmp.path()).model_mappings, 0) << "the measure sees no loaded model";
  }
  aotrt::Allocator& alloc = aotrt::allocator_for(device);
  const ProcessCounts before = process_counts(tmp.path());
  const int64_t live = alloc.stats().live_bytes, handles = aotrt::handle_live_count();
#ifdef AOTRT_WITH_CUDA
  const int64_t device_before = cuda ? cuda_used_bytes() : 0;
#endif
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) cycle();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ProcessCounts after = process_counts(tmp.path());
  expect_process_flat(before, after, /*rss_slack_kb=*/4096, n);
  EXPECT_EQ(alloc.stats().live_bytes, live);
  EXPECT_EQ(aotrt::handle_live_count(), handles);
  EXPECT_EQ(aotrt::runtime::pending_model_thread_destructors(), 0u);
  EXPECT_EQ(tmp.listing(), "");
  std::string detail = "before: " + describe(before) + "; after: " + describe(after);
#ifdef AOTRT_WITH_CUDA
  if (cuda) {
    const int64_t device_after = cuda_used_bytes();
    // The caching allocator may keep blocks; what the driver reports used
    // beyond that must not grow (kernels' modules are unloaded, constants freed).
    EXPECT_LE(device_after - device_before, 4 << 20) << "device memory grew";
    detail += "; device bytes used " + std::to_string(device_before) + " -> " + std::to_string(device_after);
  }
#endif
  record_case("lifecycle", std::to_string(n) + " loads + runs + unloads of " + label() + " (" +
                               (cuda ? "CUDA" : "CPU") + ")",
              "flat", detail + "; " + std::to_string(static_cast<int>(seconds * 1e6 / n)) +
                          " us per cycle");
}

TEST_F(RobustReal, TwoModelsAndOutputsOutliveTheirModel) {
  auto a = std::make_unique<Model>(Model::load(package_));
  Model b = Model::load(package_);
  std::vector<Tensor> kept = a->run(inputs_for(*a));
  a.reset();
  EXPECT_TRUE(matches(flatten(b.run(inputs_for(b)))));
  EXPECT_TRUE(matches(flatten(kept)));
  record_case("lifecycle", "two models of " + label() + ", one unloaded (" + device_name(b) + ")",
              "the other runs; the unloaded one's outputs stay valid", "");
}

TEST_F(RobustReal, EightThreadsMatchSerialRuns) {
  Model m = Model::load(package_);
  const std::vector<Tensor> in = inputs_for(m);
  const std::vector<double> serial = flatten(m.run(in));
  ASSERT_TRUE(matches(serial));
  const int threads = 8, runs = env("AOTRT_ROBUST_RUNS").empty() ? 20 : std::stoi(env("AOTRT_ROBUST_RUNS"));
  std::atomic<int> differ{0}, wrong{0}, failed{0};
  std::atomic<bool> go{false};
  std::string first_error;
  std::mutex mu;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
#ifdef AOTRT_WITH_CUDA
      // Each thread its own stream, made current as generated code's callers do.
      cudaStream_t stream = nullptr;
      CUDAStreamGuardHandle guard = nullptr;
      if (m.device().is_cuda()) {
        EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
        EXPECT_EQ(aoti_torch_create_cuda_stream_guard(stream, m.device().index, &guard), 0);
      }
#endif
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < runs; ++i) {
        try {
          // dense_host_copy waits for the thread's stream on CUDA.
          const std::vector<double> got = flatten(m.run(in));
          if (got != serial) ++differ;
          if (!matches(got)) ++wrong;
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          if (failed++ == 0) first_error = e.what();
        }
      }
#ifdef AOTRT_WITH_CUDA
      if (guard != nullptr) aoti_torch_delete_cuda_stream_guard(guard);
      if (stream != nullptr) {
        cudaStreamSynchronize(stream);
        aotrt::forget_cuda_stream(m.device(), stream);
        cudaStreamDestroy(stream);
      }
#endif
    });
  }
  go = true;
  for (auto& th : pool) th.join();
  EXPECT_EQ(failed.load(), 0) << first_error;
  EXPECT_EQ(wrong.load(), 0) << "runs on 8 threads differ from eager beyond the tolerance";
  // The CPU kernels and oneDNN are deterministic: bitwise. cuBLAS/cuDNN may
  // choose other algorithms per stream, so CUDA is held to eager's tolerance.
  if (m.device().is_cpu()) EXPECT_EQ(differ.load(), 0) << "runs on 8 threads differ from the serial run";
  const std::string outcome = failed != 0 || wrong != 0 ? "MISMATCH"
                              : differ == 0 ? "bitwise equal to the serial run"
                                            : "equal to eager within its tolerance (not bitwise)";
  record_case("concurrency", label() + ", 8 threads x " + std::to_string(runs) + " runs (" +
                                 device_name(m) + (m.device().is_cuda() ? ", a stream per thread" : "") + ")",
              outcome, std::to_string(threads * runs) + " runs");
}

TEST_F(RobustReal, BadInputsAreRefusedBeforeTheModelRuns) {
  Model m = Model::load(package_);
  ASSERT_FALSE(m.info().input_specs.empty()) << "the package has no aotrt.inputs record";
  const aotrt::TensorSpec& spec = m.info().input_specs[0].value();
  const std::string name = m.info().input_names[0];
  const std::vector<Tensor> good = inputs_for(m);
  const std::string area = "bad inputs";
  const std::string head = "input 0 ('" + name + "'): expected " + std::string(aotrt::dtype_name(spec.dtype));
  auto with_first = [&](Tensor t) {
    std::vector<Tensor> in = good;
    in[0] = std::move(t);
    return in;
  };
  const auto dev = device_name(m);
  const ScalarType other = spec.dtype == ScalarType::Float64 ? ScalarType::Float32 : ScalarType::Float64;
  const Tensor cast = Tensor::empty_strided(spec.sizes, spec.strides, other, m.device());
  std::vector<int64_t> bigger = spec.sizes;
  bigger.back() += 1;
  const Tensor big = Tensor::empty(bigger, spec.dtype, m.device());
  // Row-major when the model was compiled for another layout (else column-major).
  Tensor row_major = Tensor::empty(spec.sizes, spec.dtype, m.device());
  if (std::vector<int64_t>(row_major.strides().begin(), row_major.strides().end()) == spec.strides) {
    std::vector<int64_t> col(spec.sizes.size());
    int64_t step = 1;
    for (size_t d = 0; d < col.size(); ++d) {
      col[d] = step;
      step *= std::max<int64_t>(spec.sizes[d], 1);
    }
    row_major = Tensor::empty_strided(spec.sizes, col, spec.dtype, m.device());
  }
  const int64_t handles = aotrt::handle_live_count();
  expect_refused(area, label() + ": wrong count (" + dev + ")", ErrorKind::kInvalidArgument,
                 {"takes " + std::to_string(good.size()) + " input(s), got " + std::to_string(good.size() + 1)},
                 [&] { auto in = good; in.push_back(good[0]); m.run(in); });
  expect_refused(area, label() + ": wrong dtype (" + dev + ")", ErrorKind::kInvalidArgument,
                 {head, std::string("got ") + aotrt::dtype_name(other)}, [&] { m.run(with_first(cast)); });
  expect_refused(area, label() + ": wrong shape (" + dev + ")", ErrorKind::kInvalidArgument,
                 {head, "compiled for these sizes only"}, [&] { m.run(with_first(big)); });
  const int64_t numel = row_major.numel();
  if (numel > 1) {
    expect_refused(area, label() + ": wrong strides (" + dev + ")", ErrorKind::kInvalidArgument,
                   {head, "Model::prepare_input"}, [&] { m.run(with_first(row_major)); });
  }
  if (!m.device().is_cpu()) {
    expect_refused(area, label() + ": input on the CPU for a CUDA model", ErrorKind::kInvalidArgument,
                   {"input 0 ('" + name + "') is on cpu but the model runs on " + m.device().str()},
                   [&] { m.run(with_first(host_inputs_[0])); });
  }
  EXPECT_EQ(aotrt::handle_live_count(), handles);
}

TEST_F(RobustReal, AcceptedLayoutsGiveTheSameResult) {
  Model m = Model::load(package_);
  ASSERT_FALSE(m.info().input_specs.empty());
  const aotrt::TensorSpec& spec = m.info().input_specs[0].value();
  const std::vector<Tensor> good = inputs_for(m);
  const auto dev = device_name(m);
  const size_t item = aotrt::element_size(spec.dtype);
  // The same values at a data pointer that is not 16-byte aligned: CPU
  // kernels load unaligned; CUDA models copy such an input to aligned memory
  // themselves (torch's generated code, see docs/robustness.md).
  std::vector<Tensor> in = good;
  {
    // A view at storage offset 1 of a buffer one element longer, with the spec's strides.
    const Tensor& g = good[0];
    int64_t span = 1;
    for (size_t d = 0; d < spec.sizes.size(); ++d) span += (spec.sizes[d] - 1) * spec.strides[d];
    Tensor buffer = Tensor::empty({span + 1}, spec.dtype, m.device());
    AtenTensorHandle view = nullptr;
    ASSERT_EQ(aoti_torch__reinterpret_tensor(buffer.handle(), static_cast<int64_t>(spec.sizes.size()),
                                             spec.sizes.data(), spec.strides.data(), 1, &view), 0);
    Tensor shifted = Tensor::adopt(view);
    shifted.copy_(g);
    ASSERT_NE(reinterpret_cast<uintptr_t>(shifted.data_ptr()) % 16, 0u) << "itemsize " << item;
    in[0] = shifted;
    EXPECT_TRUE(matches(flatten(m.run(in)))) << "unaligned input";
    record_case("bad inputs", label() + ": data pointer not 16-byte aligned (" + dev + ")",
                "runs, same result", "");
  }
  // Another stride on each size-1 dim (ATen's rule: it addresses nothing).
  bool any = false;
  std::vector<int64_t> strides = spec.strides;
  for (size_t d = 0; d < spec.sizes.size(); ++d) {
    if (spec.sizes[d] == 1) {
      strides[d] += 12345;
      any = true;
    }
  }
  if (any) {
    Tensor odd = Tensor::empty_strided(spec.sizes, strides, spec.dtype, m.device());
    odd.copy_(good[0]);
    in = good;
    in[0] = odd;
    EXPECT_TRUE(matches(flatten(m.run(in)))) << "size-1 dims with other strides";
    record_case("bad inputs", label() + ": other strides on size-1 dims (" + dev + ")",
                "runs, same result (the model gets the recorded strides, so its own exact stride "
                "checks pass)", "");
  }
}

TEST_F(RobustReal, ModelOwnChecksNameTheInput) {
  const std::string nospec = env("AOTRT_ROBUST_NOSPEC_PACKAGE");
  if (nospec.empty()) GTEST_SKIP() << "AOTRT_ROBUST_NOSPEC_PACKAGE is not set";
  Model m = Model::load(nospec);
  ASSERT_TRUE(m.info().input_specs.empty()) << "the record was not removed";
  Model with_spec = Model::load(package_);
  const aotrt::TensorSpec& spec = with_spec.info().input_specs.at(0).value();
  const std::string name = m.info().input_names[0];
  const std::vector<Tensor> good = inputs_for(with_spec);
  EXPECT_TRUE(matches(flatten(m.run(good))));
  auto with_first = [&](Tensor t) {
    std::vector<Tensor> in = good;
    in[0] = std::move(t);
    return in;
  };
  const std::string named = "input_handles[0] (input 0, '" + name + "')";
  const auto dev = device_name(m);
  // torch 2.13's generated code keeps its check's message for aotrt to read;
  // older code (torch 2.11) only prints it on stderr, as "Error: ...", and
  // aotrt can only say where it went. Both refuse before running.
  auto refused = [&](const std::string& what, const std::string& check,
                     const std::function<void()>& fn) {
    const std::string name_of_case = label() + " without aotrt.inputs: " + what + " (" + dev + ")";
    testing::internal::CaptureStderr();
    std::string msg;
    ErrorKind kind = ErrorKind::kInternal;
    bool threw = false;
    try {
      fn();
    } catch (const aotrt::Error& e) {
      threw = true;
      msg = e.what();
      kind = e.kind();
    }
    const std::string err = testing::internal::GetCapturedStderr();
    ASSERT_TRUE(threw) << name_of_case << ": was not refused";
    if (msg.find("only on stderr") == std::string::npos) {
      EXPECT_EQ(kind, ErrorKind::kInvalidArgument) << msg;
      for (const std::string& needle : {named, check, std::string("model's own input checks")}) {
        EXPECT_NE(msg.find(needle), std::string::npos) << name_of_case << ": " << msg;
      }
      record_case("bad inputs", name_of_case, "refused (invalid argument)", msg);
      return;
    }
    EXPECT_EQ(kind, ErrorKind::kBackend) << msg;
    const size_t at = err.find("Error: input_handles[0]");
    ASSERT_NE(at, std::string::npos) << name_of_case << ": stderr has no check message:\n" << err;
    const std::string line = err.substr(at, err.find('\n', at) - at);
    EXPECT_NE(line.find(check), std::string::npos) << line;
    record_case("bad inputs", name_of_case,
                "refused (backend error; the model printed its check on stderr)",
                msg + " | stderr: " + line);
  };
  const ScalarType other = spec.dtype == ScalarType::Float64 ? ScalarType::Float32 : ScalarType::Float64;
  refused("wrong dtype", "unmatched dtype",
          [&] { m.run(with_first(Tensor::empty_strided(spec.sizes, spec.strides, other, m.device()))); });
  std::vector<int64_t> bigger = spec.sizes;
  bigger.back() += 1;
  refused("wrong shape", "unmatched dim value",
          [&] { m.run(with_first(Tensor::empty(bigger, spec.dtype, m.device()))); });
  Tensor row_major = Tensor::empty(spec.sizes, spec.dtype, m.device());
  if (std::vector<int64_t>(row_major.strides().begin(), row_major.strides().end()) != spec.strides) {
    refused("wrong strides", "unmatched stride value", [&] { m.run(with_first(row_major)); });
  }
}

// Note [Model input checks]: the model's own checks refuse a bad input with
// no AOTI_RUNTIME_CHECK_INPUTS in the environment, and the environment is the
// same, entry for entry, after loading, running and unloading.
TEST_F(RobustReal, EnvironmentIsLeftAlone) {
  const std::string nospec = env("AOTRT_ROBUST_NOSPEC_PACKAGE");
  if (nospec.empty()) GTEST_SKIP() << "AOTRT_ROBUST_NOSPEC_PACKAGE is not set";
  if (std::getenv("AOTI_RUNTIME_CHECK_INPUTS") != nullptr) {
    GTEST_SKIP() << "the process sets AOTI_RUNTIME_CHECK_INPUTS itself (tests/e2e/test_robust_real.py does not)";
  }
  auto environment = [] {
    std::vector<std::string> all;
    for (char** e = environ; *e != nullptr; ++e) all.emplace_back(*e);
    return all;
  };
  char** const table = environ;
  const std::vector<std::string> before = environment();
  std::string msg, dev;
  {
    Model m = Model::load(nospec);
    dev = device_name(m);
    Model with_spec = Model::load(package_);
    std::vector<Tensor> in = inputs_for(with_spec);
    EXPECT_TRUE(matches(flatten(m.run(in))));
    const aotrt::TensorSpec& spec = with_spec.info().input_specs.at(0).value();
    std::vector<int64_t> bigger = spec.sizes;
    bigger.back() += 1;
    in[0] = Tensor::empty(bigger, spec.dtype, m.device());
    testing::internal::CaptureStderr();
    try {
      m.run(in);
    } catch (const aotrt::Error& e) {
      msg = e.what();
    }
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(msg.empty()) << "a wrongly shaped input was not refused: the model's checks are off";
    EXPECT_TRUE(msg.find("unmatched dim value") != std::string::npos ||
                err.find("unmatched dim value") != std::string::npos)
        << msg << "\n" << err;
  }
  EXPECT_EQ(environ, table);
  EXPECT_EQ(environment(), before);
  EXPECT_EQ(std::getenv("AOTI_RUNTIME_CHECK_INPUTS"), nullptr);
  record_case("environment", label() + " without aotrt.inputs: loaded, run, a bad input refused, unloaded (" +
                                 dev + ")",
              "the model's own checks ran with no AOTI_RUNTIME_CHECK_INPUTS set; environ identical",
              std::to_string(before.size()) + " entries before and after; " + msg);
}

TEST_F(RobustReal, AllocationFailureNamesTheSizeAndRecovers) {
  Model m = Model::load(package_);
  const std::vector<Tensor> in = inputs_for(m);
  EXPECT_TRUE(matches(flatten(m.run(in))));
  aotrt::Allocator& alloc = aotrt::allocator_for(m.device());
  const int64_t live = alloc.stats().live_bytes, handles = aotrt::handle_live_count();
  alloc.set_limit(live + 1);
  std::string msg;
  try {
    m.run(in);
    ADD_FAILURE() << "the run succeeded under a 1-byte cap";
  } catch (const aotrt::Error& e) {
    msg = e.what();
  }
  alloc.set_limit(0);
  EXPECT_NE(msg.find("cannot allocate"), std::string::npos) << msg;
  EXPECT_NE(msg.find(" bytes"), std::string::npos) << msg;
  record_case("allocation failure", label() + ": allocator capped during a run (" + device_name(m) + ")",
              "refused, naming the size", msg);
  EXPECT_EQ(alloc.stats().live_bytes, live);
  EXPECT_EQ(aotrt::handle_live_count(), handles);
  EXPECT_TRUE(matches(flatten(m.run(in))));
  record_case("allocation failure", label() + ": the same run with the cap lifted (" + device_name(m) + ")",
              "runs, same result; nothing leaked", "");
}

// Note [Out of memory in the middle of a run]
// A cap between the first allocation of a run and its peak makes an
// allocation fail after others of the same run succeeded: the model's
// intermediate buffers are live when it unwinds. The caps tried are
// fractions of one run's peak; the case counts only when at least one
// allocation of the run succeeded before the refused one.
TEST_F(RobustReal, AllocationFailsInTheMiddleOfARun) {
  Model m = Model::load(package_);
  const std::vector<Tensor> in = inputs_for(m);
  ASSERT_TRUE(matches(flatten(m.run(in))));  // warm: workspaces, pools, kernels loaded
  aotrt::Allocator& alloc = aotrt::allocator_for(m.device());
  const aotrt::AllocatorStats before = alloc.stats();
  const int64_t handles = aotrt::handle_live_count();
#ifdef AOTRT_WITH_CUDA
  const bool cuda = m.device().is_cuda();
  if (cuda) ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const int64_t device_before = cuda ? cuda_used_bytes() : 0;
#endif
  alloc.reset_peak();
  int64_t per_run = 0, peak = 0;
  {
    const std::vector<Tensor> out = m.run(in);
    per_run = alloc.stats().total_allocations - before.total_allocations;
    peak = alloc.stats().peak_bytes - before.live_bytes;
  }
  ASSERT_GE(per_run, 2) << "one run makes " << per_run << " allocation(s): none to fail in the middle";
  std::string msg;
  int64_t succeeded = 0, cap = 0;
  for (const double f : {0.5, 0.75, 0.9, 0.97, 0.99, 0.3, 0.1}) {
    cap = before.live_bytes + std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(peak) * f));
    const aotrt::AllocatorStats s0 = alloc.stats();
    alloc.set_limit(cap);
    msg.clear();
    try {
      m.run(in);
    } catch (const aotrt::Error& e) {
      msg = e.what();
    }
    alloc.set_limit(0);
    const aotrt::AllocatorStats s1 = alloc.stats();
    succeeded = s1.total_allocations - s0.total_allocations;
    EXPECT_EQ(s1.live_bytes, before.live_bytes) << "cap " << cap << ": live bytes after the refused run";
    EXPECT_EQ(aotrt::handle_live_count(), handles) << "cap " << cap;
    if (!msg.empty() && succeeded > 0 && s1.failed_allocations > s0.failed_allocations) break;
    msg.clear();
  }
  ASSERT_FALSE(msg.empty()) << "no cap below the run's peak (" << peak << " bytes over " << per_run
                            << " allocations) made an allocation fail after another succeeded";
  // The shim that allocated (empty_strided, or an op's own output or scratch) and the
  // tensor it was making (torch 2.13's code also quotes its failing call; 2.11's prints it).
  for (const char* needle : {"the last aotrt shim failure on this thread: aoti_torch_",
                             "tensor of sizes [", "cannot allocate", " bytes"}) {
    EXPECT_NE(msg.find(needle), std::string::npos) << needle << " not in: " << msg;
  }
  record_case("allocation failure",
              label() + ": allocator capped below a run's peak, an allocation in the middle refused (" +
                  device_name(m) + ")",
              "refused, naming the shim, the tensor and its bytes; live bytes and handles as before",
              "allocation " + std::to_string(succeeded + 1) + " of " + std::to_string(per_run) + ", cap " +
                  std::to_string(cap - before.live_bytes) + " of the run's " + std::to_string(peak) +
                  " peak bytes: " + msg);
  // The next run, uncapped, gives eager's result; nothing of the refused run is left.
  EXPECT_TRUE(matches(flatten(m.run(in))));
  EXPECT_EQ(alloc.stats().live_bytes, before.live_bytes);
  EXPECT_EQ(alloc.stats().live_allocations, before.live_allocations);
  EXPECT_EQ(aotrt::handle_live_count(), handles);
  std::string detail = "live bytes " + std::to_string(before.live_bytes) + " -> " +
                       std::to_string(alloc.stats().live_bytes) + ", handles " + std::to_string(handles) +
                       " -> " + std::to_string(aotrt::handle_live_count());
#ifdef AOTRT_WITH_CUDA
  if (cuda) {
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const int64_t device_after = cuda_used_bytes();
    const int64_t cached_growth = alloc.stats().cached_bytes - before.cached_bytes;
    // Blocks the refused run freed may stay cached for reuse; beyond those, the driver's
    // count of used bytes must not grow.
    EXPECT_LE(device_after - device_before, std::max<int64_t>(cached_growth, 0) + (4 << 20));
    detail += "; device bytes used " + std::to_string(device_before) + " -> " + std::to_string(device_after) +
              " (cached +" + std::to_string(cached_growth) + ")";
  }
#endif
  record_case("allocation failure", label() + ": the next run after the mid-run refusal (" + device_name(m) + ")",
              "runs, eager's result; nothing leaked", detail);
}

TEST_F(RobustReal, EmptyInputWithNullData) {
  Model m = Model::load(package_);
  ASSERT_FALSE(m.info().input_specs.empty());
  const aotrt::TensorSpec& spec = m.info().input_specs[0].value();
  int64_t numel = 1;
  for (int64_t s : spec.sizes) numel *= s;
  if (numel != 0) GTEST_SKIP() << "input 0 of this package is not empty";
  // No memory at all, and strides that are neither the recorded nor row-major.
  std::vector<int64_t> strides(spec.sizes.size(), 7);
  std::vector<Tensor> in = inputs_for(m);
  in[0] = Tensor::from_blob(nullptr, spec.sizes, strides, spec.dtype, m.device());
  EXPECT_TRUE(matches(flatten(m.run(in))));
  record_case("bad inputs", label() + ": empty input, null data, other strides (" + device_name(m) + ")",
              "runs, same result as torch", "");
}
