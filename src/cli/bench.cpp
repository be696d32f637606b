// `aotrt bench`: see Note [What aotrt bench measures] in cli/bench.h.
#include "cli/bench.h"

#include <time.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include "aotrt/aotrt.h"
#include "core/allocator.h"
#include "cuda/cuda.h"
#include "cli/input_arg.h"
#include "runtime/npy.h"

namespace aotrt::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::string list_text(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Random values of `dtype` into n elements at p: normal floats; small
// non-negative integers (valid indices for an embedding, say); 0/1 booleans.
void fill_random(std::mt19937_64& rng, ScalarType dtype, void* p, int64_t n) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 9);
  char* out = static_cast<char*>(p);
  const size_t isz = element_size(dtype);
  for (int64_t i = 0; i < n; ++i, out += isz) {
    switch (dtype) {
      case ScalarType::Float32: {
        const float v = normal(rng);
        std::memcpy(out, &v, 4);
        break;
      }
      case ScalarType::Float64: {
        const double v = normal(rng);
        std::memcpy(out, &v, 8);
        break;
      }
      case ScalarType::Float16:
      case ScalarType::BFloat16: {
        const float f = normal(rng);
        const uint16_t v = dtype == ScalarType::Float16 ? float_to_half(f) : float_to_bfloat16(f);
        std::memcpy(out, &v, 2);
        break;
      }
      case ScalarType::Bool: *out = static_cast<char>(small(rng) & 1); break;
      case ScalarType::UInt8: case ScalarType::Int8: case ScalarType::Int16:
      case ScalarType::Int32: case ScalarType::Int64: {
        const int64_t v = small(rng);
        std::memcpy(out, &v, isz);  // little-endian: the low bytes
        break;
      }
      default:
        throw Error(ErrorKind::kUnsupported, std::string("aotrt bench: no random values for ") +
                                                 dtype_name(dtype) + " inputs; give --input files");
    }
  }
}

struct BenchInputs {
  std::vector<Tensor> tensors;
  std::vector<std::string> sources;  // "random" or the file
};

BenchInputs make_inputs(const Model& model, const BenchOptions& o) {
  const ModelInfo& info = model.info();
  const size_t n = model.num_inputs();
  BenchInputs in;
  if (!o.inputs.empty()) {
    if (o.inputs.size() != n) {
      throw Error(ErrorKind::kInvalidArgument,
                  "aotrt bench: model '" + info.model_name + "' takes " + std::to_string(n) +
                      " input(s) but " + std::to_string(o.inputs.size()) +
                      " --input file(s) were given");
    }
    for (size_t i = 0; i < n; ++i) {
      const InputArg arg = parse_input_arg(o.inputs[i]);
      in.tensors.push_back(read_input(model, i, arg));
      in.sources.push_back(arg.path);
    }
    return in;
  }
  std::mt19937_64 rng(o.seed);
  for (size_t i = 0; i < n; ++i) {
    const bool known = i < info.input_specs.size() && info.input_specs[i].has_value();
    if (!known) {
      throw Error(ErrorKind::kInvalidArgument,
                  "aotrt bench: input " + std::to_string(i) + " ('" + info.input_names[i] +
                      "') of " + info.package_path +
                      " has no fixed dtype, sizes and strides in the package (a dynamic shape, "
                      "or neither an aotrt.inputs record nor the generated source), so no "
                      "random input can be made for it: give every input with --input FILE.npy");
    }
    const TensorSpec& spec = *info.input_specs[i];
    Tensor host = Tensor::empty_strided(spec.sizes, spec.strides, spec.dtype);
    int64_t span = 1;  // elements from the first to the last one addressed
    for (size_t d = 0; d < spec.sizes.size(); ++d) {
      if (spec.sizes[d] == 0) span = 0;
    }
    for (size_t d = 0; span > 0 && d < spec.sizes.size(); ++d) {
      span += (spec.sizes[d] - 1) * spec.strides[d];
    }
    if (span > 0) fill_random(rng, spec.dtype, host.data_ptr(), span);
    if (model.device().is_cpu()) {
      in.tensors.push_back(std::move(host));
    } else {
      Tensor dev = Tensor::empty_strided(spec.sizes, spec.strides, spec.dtype, model.device());
      dev.copy_(host);
      in.tensors.push_back(std::move(dev));
    }
    in.sources.push_back("random");
  }
  return in;
}

// A line on stderr about once a second while a loop runs.
class Progress {
 public:
  Progress(const char* phase, int total) : phase_(phase), total_(total), next_(Clock::now() + kEvery) {}
  void tick(int done) {
    const auto now = Clock::now();
    if (now < next_) return;
    next_ = now + kEvery;
    std::fprintf(stderr, "aotrt bench: %s %d/%d runs\n", phase_, done, total_);
    std::fflush(stderr);
  }

 private:
  static constexpr auto kEvery = std::chrono::seconds(1);
  const char* phase_;
  int total_;
  Clock::time_point next_;
};

nlohmann::json stats_json(const LatencyStats& s) {
  return {{"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"mean", s.mean},
          {"min", s.min}, {"max", s.max}, {"count", s.count}};
}

// Shim profiling on for its lifetime (the timed loop), from a clean table.
class ShimProfiling {
 public:
  ShimProfiling() {
    reset_shim_profile();
    set_shim_profiling(true);
  }
  ~ShimProfiling() { set_shim_profiling(false); }
  ShimProfiling(const ShimProfiling&) = delete;
  ShimProfiling& operator=(const ShimProfiling&) = delete;
};

// The shim profile of the timed loop, per run. See Note [aotrt bench --profile].
struct ShimReport {
  std::vector<ShimTiming> rows;  // most total time first
  double runs = 0;
  double calls_per_run = 0;
  double shim_us_per_run = 0;  // outermost shim calls only, so nothing twice
  double run_us = 0;           // mean time for run() to return
  double outside_us = 0;       // run_us - shim_us_per_run
};

ShimReport shim_report(int iters, double run_mean_us) {
  ShimReport r;
  r.rows = shim_profile();
  r.runs = static_cast<double>(iters);
  int64_t calls = 0, ns = 0;
  for (const ShimTiming& t : r.rows) {
    if (t.inside_shim) continue;  // counted in its shim
    calls += t.calls;
    ns += t.total_ns;
  }
  r.calls_per_run = static_cast<double>(calls) / r.runs;
  r.shim_us_per_run = static_cast<double>(ns) / 1e3 / r.runs;
  r.run_us = run_mean_us;
  r.outside_us = run_mean_us - r.shim_us_per_run;
  return r;
}

nlohmann::json shim_report_json(const ShimReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ShimTiming& t : r.rows) {
    rows.push_back({{"function", t.function},
                    {"calls", t.calls},
                    {"total_ns", t.total_ns},
                    {"max_ns", t.max_ns},
                    {"calls_per_run", static_cast<double>(t.calls) / r.runs},
                    {"us_per_run", static_cast<double>(t.total_ns) / 1e3 / r.runs},
                    {"mean_us_per_call", static_cast<double>(t.total_ns) / 1e3 /
                                             static_cast<double>(std::max<int64_t>(t.calls, 1))},
                    {"max_us", static_cast<double>(t.max_ns) / 1e3},
                    {"inside_shim", t.inside_shim}});
  }
  return {{"runs", static_cast<int64_t>(r.runs)},
          {"functions", rows},
          {"calls_per_run", r.calls_per_run},
          {"shim_us_per_run", r.shim_us_per_run},
          {"run_mean_us", r.run_us},
          {"outside_shims_us_per_run", r.outside_us}};
}

void print_shim_report(const ShimReport& r) {
  std::printf("  shim profile (host time in aoti_* calls, timed runs only; profiling slows each "
              "call a little):\n");
  if (r.rows.empty()) {
    std::printf("    no shim calls in the timed runs\n");
  } else {
    int width = static_cast<int>(std::strlen("function"));
    for (const ShimTiming& t : r.rows) {
      width = std::max(width, static_cast<int>(t.function.size()) + (t.inside_shim ? 4 : 0));
    }
    std::printf("    %-*s %10s %10s %10s %10s\n", width, "function", "calls/run", "us/run",
                "us/call", "max us");
    for (const ShimTiming& t : r.rows) {
      const double us = static_cast<double>(t.total_ns) / 1e3;
      const std::string label = (t.inside_shim ? "  > " : "") + t.function;
      std::printf("    %-*s %10.1f %10.1f %10.2f %10.1f\n", width, label.c_str(),
                  static_cast<double>(t.calls) / r.runs, us / r.runs,
                  us / static_cast<double>(std::max<int64_t>(t.calls, 1)),
                  static_cast<double>(t.max_ns) / 1e3);
    }
    std::printf("    %-*s %10.1f %10.1f\n", width, "all shims", r.calls_per_run, r.shim_us_per_run);
    std::printf("    (rows marked > are library calls timed inside a shim: part of its time)\n");
  }
  std::printf("  run() mean %.1f us per run = %.1f us in shims + %.1f us outside them (the "
              "generated code between shim calls, and Model::run's own work)\n",
              r.run_us, r.shim_us_per_run, r.outside_us);
}

}  // namespace

int bench_command(const BenchOptions& o) {
  if (o.iters < 1 || o.warmup < 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "aotrt bench: --iters must be at least 1 and --warmup at least 0");
  }
  const auto t_load = Clock::now();
  LoadOptions options;
  options.model_name = o.model_name;
  options.device_index = o.device_index;
  options.cuda_graph =
      o.profile && o.cuda_graph == CudaGraphMode::kAuto ? CudaGraphMode::kOff : o.cuda_graph;
  options.weights = weights_arg(o.weights, o.weights_allow_unused);
  options.report_export_advice = false;  // printed beside the figures
  Model model = Model::load(o.package, options);
  const auto t_loaded = Clock::now();
  const Device device = model.device();
  const bool is_cuda = device.is_cuda();
  BenchInputs inputs = make_inputs(model, o);

  // The first run, to its outputs being ready.
  const auto t_first = Clock::now();
  { std::vector<Tensor> out = model.run(inputs.tensors); synchronize(device); }
  const auto t_first_output = Clock::now();

  {
    Progress progress("warm-up", o.warmup);
    for (int i = 0; i < o.warmup; ++i) {
      std::vector<Tensor> out = model.run(inputs.tensors);
      if (is_cuda) synchronize(device);
      progress.tick(i + 1);
    }
  }

  // The timed loop: every run waited for.
  const int64_t mallocs_before = is_cuda ? cuda::driver_allocations(device.index) : 0;
  std::vector<double> latency, enqueue;
  latency.reserve(static_cast<size_t>(o.iters));
  enqueue.reserve(static_cast<size_t>(o.iters));
  std::optional<ShimProfiling> profiling;
  if (o.profile) profiling.emplace();
  if (o.profiler_range && is_cuda) cuda::profiler_range(true);
  const auto t_loop = Clock::now();
  {
    Progress progress("timed", o.iters);
    for (int i = 0; i < o.iters; ++i) {
      const auto a = Clock::now();
      std::vector<Tensor> out = model.run(inputs.tensors);
      const auto b = Clock::now();
      if (is_cuda) synchronize(device);
      const auto c = Clock::now();
      enqueue.push_back(micros(b - a));
      latency.push_back(micros(c - a));
      progress.tick(i + 1);
    }
  }
  const double loop_s = seconds(Clock::now() - t_loop);
  if (o.profiler_range && is_cuda) cuda::profiler_range(false);
  profiling.reset();
  const int64_t steady_mallocs = is_cuda ? cuda::driver_allocations(device.index) - mallocs_before : 0;

  // CUDA: the same number of runs queued back to back, one wait at the end.
  double pipelined_s = 0;
  if (is_cuda) {
    Progress progress("pipelined", o.iters);
    const auto p0 = Clock::now();
    for (int i = 0; i < o.iters; ++i) {
      std::vector<Tensor> out = model.run(inputs.tensors);
      progress.tick(i + 1);
    }
    synchronize(device);
    pipelined_s = seconds(Clock::now() - p0);
  }

  const LatencyStats lat = summarize(latency), enq = summarize(enqueue);
  const ShimReport shims = o.profile ? shim_report(o.iters, enq.mean) : ShimReport{};
  int64_t batch = o.batch;
  if (batch <= 0) {
    batch = !inputs.tensors.empty() && inputs.tensors[0].dim() > 0 ? inputs.tensors[0].sizes()[0] : 1;
  }
  const double runs_per_s = static_cast<double>(o.iters) / loop_s;
  const AllocatorStats mem = allocator_for(device).stats();
  int64_t constants_bytes = 0;
  for (const ConstantInfo& c : model.info().constants) constants_bytes += static_cast<int64_t>(c.nbytes);
  const double ttfo = seconds(t_first_output - o.process_start);
  const int64_t host_peak = peak_host_bytes();

  if (o.json) {
    nlohmann::json j;
    j["package"] = o.package;
    j["model"] = model.info().model_name;
    j["device"] = device.is_cpu() ? "cpu" : device.str();
    j["cuda_graph"] = cuda_graph_mode_name(options.cuda_graph);
    if (is_cuda) {
      const Model::CudaGraphStatus g = model.cuda_graph_status();
      j["cuda_graph_status"] = {{"mode", cuda_graph_mode_name(g.mode)},
                                {"graphs", g.graphs},
                                {"replays", g.replays},
                                {"plain_runs", g.plain_runs},
                                {"declined", g.declined}};
    }
    j["warmup"] = o.warmup;
    j["iters"] = o.iters;
    j["batch"] = batch;
    nlohmann::json ins = nlohmann::json::array();
    for (size_t i = 0; i < inputs.tensors.size(); ++i) {
      const Tensor& t = inputs.tensors[i];
      ins.push_back({{"name", model.info().input_names[i]},
                     {"dtype", dtype_name(t.dtype())},
                     {"sizes", std::vector<int64_t>(t.sizes().begin(), t.sizes().end())},
                     {"strides", std::vector<int64_t>(t.strides().begin(), t.strides().end())},
                     {"source", inputs.sources[i]}});
    }
    j["inputs"] = ins;
    j["latency_us"] = stats_json(lat);
    if (is_cuda) {
      j["enqueue_us"] = stats_json(enq);
      j["pipelined_runs_per_s"] = static_cast<double>(o.iters) / pipelined_s;
      j["steady_state_cuda_mallocs"] = steady_mallocs;
    }
    j["runs_per_s"] = runs_per_s;
    j["samples_per_s"] = runs_per_s * static_cast<double>(batch);
    j["time_to_first_output_s"] = ttfo;
    j["process_start"] = o.process_start_source;
    j["exec_to_main_s"] = seconds(o.main_entry - o.process_start);
    j["load_s"] = seconds(t_loaded - t_load);
    j["first_run_s"] = seconds(t_first_output - t_first);
    j["peak_allocator_bytes"] = mem.peak_bytes;
    j["constants_bytes"] = constants_bytes;
    j["peak_host_bytes"] = host_peak;
    if (o.profile) j["shim_profile"] = shim_report_json(shims);
    j["export_advice"] = model.info().export_advice;
    std::cout << j.dump() << std::endl;
    return 0;
  }

  std::string graph_text;
  if (is_cuda) {
    const Model::CudaGraphStatus g = model.cuda_graph_status();
    graph_text = std::string(", CUDA graphs ") + cuda_graph_mode_name(g.mode) + ": " +
                 std::to_string(g.graphs) + " captured, " + std::to_string(g.replays) +
                 " replays, " + std::to_string(g.plain_runs) + " plain runs" +
                 (g.declined.empty() ? "" : "; declined: " + g.declined);
  }
  std::printf("aotrt bench: %s (model '%s' on %s%s): %d timed runs after %d warm-up\n",
              o.package.c_str(), model.info().model_name.c_str(),
              device.is_cpu() ? "cpu" : device.str().c_str(), graph_text.c_str(),
              o.iters, o.warmup);
  for (size_t i = 0; i < inputs.tensors.size(); ++i) {
    const Tensor& t = inputs.tensors[i];
    std::printf("  input %zu '%s': %s %s strides %s (%s)\n", i, model.info().input_names[i].c_str(),
                dtype_name(t.dtype()), list_text(t.sizes()).c_str(), list_text(t.strides()).c_str(),
                inputs.sources[i].c_str());
  }
  std::printf("  latency%s: p50 %.1f us  p90 %.1f us  p99 %.1f us  (mean %.1f, min %.1f, max %.1f)\n",
              is_cuda ? " (run + stream sync)" : "", lat.p50, lat.p90, lat.p99, lat.mean, lat.min,
              lat.max);
  if (is_cuda) {
    std::printf("  enqueue (run() returning): p50 %.1f us  p90 %.1f us  p99 %.1f us\n", enq.p50,
                enq.p90, enq.p99);
  }
  std::printf("  throughput: %.1f runs/s, %.1f samples/s (batch %lld)\n", runs_per_s,
              runs_per_s * static_cast<double>(batch), static_cast<long long>(batch));
  if (is_cuda) {
    std::printf("  pipelined (no per-run sync): %.1f runs/s; cudaMalloc calls in the timed loop: %lld\n",
                static_cast<double>(o.iters) / pipelined_s, static_cast<long long>(steady_mallocs));
  }
  std::printf("  time to first output: %.3f s from process start [%s] (exec to main %.3f s, load "
              "%.3f s, first run %.3f s)\n",
              ttfo, o.process_start_source.c_str(), seconds(o.main_entry - o.process_start),
              seconds(t_loaded - t_load), seconds(t_first_output - t_first));
  std::printf("  peak memory: %s from the %s allocator%s, %s host resident (VmHWM)\n",
              mib(mem.peak_bytes).c_str(), device.is_cpu() ? "cpu" : "device",
              is_cuda ? (", plus " + mib(constants_bytes) + " of constants").c_str() : "",
              mib(host_peak).c_str());
  if (o.profile) print_shim_report(shims);
  // What the export left slow, beside the figures it explains (Note [CPU
  // export advice] in runtime/preflight.cpp).
  for (const std::string& advice : model.info().export_advice) {
    std::printf("  export advice: %s\n", advice.c_str());
  }
  return 0;
}

}  // namespace aotrt::cli
