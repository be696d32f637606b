// `aotrt bench MODEL.pt2`: times a model the way a deployment runs it.
//
// Note [What aotrt bench measures]
//  - time to first output: from the process start to the first run's
//    outputs being ready (the device synchronised), so it holds exec, the
//    dynamic loader, Model::load and the first run. The start is
//    AOTRT_BENCH_T0_NS (CLOCK_MONOTONIC nanoseconds, what
//    std::chrono::steady_clock and Python's time.monotonic_ns() read) when a
//    caller sets it just before starting the process, which is exact; else
//    the kernel's start time from /proc/self/stat (10 ms clock ticks).
//  - latency: per timed run, the wall time of run() plus, for a CUDA model,
//    a synchronisation of the stream, so the run's device work is in it; the
//    sync is the benchmark's, the runtime itself never waits. For CUDA the
//    time for run() alone to return ("enqueue") is reported too, and a
//    second loop without per-run syncs gives the pipelined throughput.
//  - throughput: timed runs over the timed loop's wall time; samples/s
//    multiplies by the batch (the first dim of the first input, or --batch).
//  - peak memory: the device allocator's peak bytes (aotrt's caching
//    allocator: activations, outputs, workspaces; a CUDA model's weights are
//    allocated by the model itself and reported apart as constants_bytes),
//    and the process's peak resident set (VmHWM in /proc/self/status).
//  - with --profile, the host time of each aoti_* shim in the timed loop
//    (see Note [aotrt bench --profile]).
//  - after the figures, what the package's export left slow and the option
//    that fixes it (ModelInfo::export_advice; Note [CPU export advice]).
// Inputs come from --input .npy files (laid out as the model expects, see
// Model::prepare_input) or are random with the dtype, sizes and strides the
// package recorded (ModelInfo::input_specs); without either the command
// refuses and asks for --input.
//
// Note [aotrt bench --profile]
// Shim profiling (aotrt::set_shim_profiling, Note [Shim profiling] in
// shim/profile.h) is on for the timed loop only, reset after the warm-up.
// Per function: calls per run, host us per run, mean us per call, longest
// call. Then run()'s mean time to return (the "enqueue" time; on the CPU the
// whole run) split into the time inside shims and the rest: the generated
// code between shim calls (its kernel launches on CUDA, its kernels on the
// CPU), the constant getters that are not timed, and Model::run's own work
// (input handles, adopting outputs). Only outermost shims are summed, so
// nothing is counted twice. Profiling reads the clock twice and takes an
// uncontended lock per shim call, which slows the profiled runs a little;
// without --profile it stays off and the other figures are unchanged.
#pragma once

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"

namespace aotrt::cli {

struct BenchOptions {
  std::string package;
  std::string model_name = "model";
  std::vector<std::string> inputs;  // FILE.npy[:DTYPE][:LAYOUT], in the model's input order
  std::string weights;              // a safetensors file (--weights), or ""
  bool weights_allow_unused = false;
  int warmup = 10;
  int iters = 100;
  // CUDA models: LoadOptions::cuda_graph (--cuda-graph: kOn, --no-cuda-graph:
  // kOff). With --profile, kAuto becomes kOff: a replay calls no shim to time.
  aotrt::CudaGraphMode cuda_graph = aotrt::CudaGraphMode::kAuto;
  bool json = false;
  bool profile = false;  // time each shim in the timed loop
  bool profiler_range = false;  // CUDA: cudaProfilerStart/Stop around the timed loop
  int device_index = -1;
  int64_t batch = 0;  // 0: the first dim of the first input
  uint64_t seed = 0;  // for random inputs
  // When the process started on the steady clock, and when main() began.
  std::chrono::steady_clock::time_point process_start;
  std::chrono::steady_clock::time_point main_entry;
  std::string process_start_source;  // how process_start was found
};

// Runs the benchmark and prints its report (or one JSON object with --json)
// on stdout; progress goes to stderr. Returns the exit status; throws
// aotrt::Error for a model that fails to load or run.
int bench_command(const BenchOptions& options);

namespace detail {
inline int64_t clock_ns(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline std::string read_text(const char* path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace detail

// The process start on the steady clock (see Note [What aotrt bench
// measures]); `source` says which way it was found.
inline std::chrono::steady_clock::time_point process_start_time(std::string* source) {
  using Clock = std::chrono::steady_clock;
  const auto now_steady = Clock::now();
  const int64_t now_mono = detail::clock_ns(CLOCK_MONOTONIC);
  if (const char* t0 = std::getenv("AOTRT_BENCH_T0_NS"); t0 != nullptr && *t0 != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(t0, &end, 10);
    if (end != nullptr && *end == '\0' && v > 0 && v <= now_mono) {
      if (source) *source = "AOTRT_BENCH_T0_NS";
      return now_steady - std::chrono::nanoseconds(now_mono - v);
    }
  }
  // Field 22 of /proc/self/stat, after the parenthesised command name
  // (which may hold spaces): clock ticks since boot, on CLOCK_BOOTTIME.
  const std::string stat = detail::read_text("/proc/self/stat");
  const size_t paren = stat.rfind(')');
  if (paren != std::string::npos) {
    std::istringstream rest(stat.substr(paren + 1));
    std::string field;
    unsigned long long ticks = 0;
    bool ok = true;
    for (int k = 3; k <= 22 && ok; ++k) ok = static_cast<bool>(rest >> field);  // fields 3..22
    if (ok) {
      ticks = std::strtoull(field.c_str(), nullptr, 10);
      const long hz = ::sysconf(_SC_CLK_TCK);
      const int64_t start_boot = static_cast<int64_t>(ticks) * (1000000000 / (hz > 0 ? hz : 100));
      const int64_t since = detail::clock_ns(CLOCK_BOOTTIME) - start_boot;
      if (since >= 0) {
        if (source) *source = "/proc/self/stat (10 ms ticks)";
        return now_steady - std::chrono::nanoseconds(since);
      }
    }
  }
  if (source) *source = "main() (exec and the dynamic loader not counted)";
  return now_steady;
}

// Bytes for a "Key:   N kB" line of /proc/self/status text (VmHWM, VmRSS);
// -1 when the key is absent.
inline int64_t status_bytes(const std::string& status_text, const std::string& key) {
  std::istringstream in(status_text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    int64_t kb = -1;
    std::string unit;
    if (fields >> kb >> unit && unit == "kB") return kb * 1024;
    return -1;
  }
  return -1;
}

// VmHWM of this process in bytes (-1 when /proc is unreadable).
inline int64_t peak_host_bytes() { return status_bytes(detail::read_text("/proc/self/status"), "VmHWM"); }

struct LatencyStats {
  size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, min = 0, max = 0;
};

// The q-quantile (0 <= q <= 1) of sorted samples, interpolating linearly
// between the two nearest ranks (numpy's default); 0 for no samples.
inline double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

inline LatencyStats summarize(std::vector<double> samples) {
  LatencyStats s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.p50 = percentile(samples, 0.50);
  s.p90 = percentile(samples, 0.90);
  s.p99 = percentile(samples, 0.99);
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / static_cast<double>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

}  // namespace aotrt::cli
