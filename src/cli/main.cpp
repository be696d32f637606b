// The aotrt command-line tool.
//
//   aotrt info MODEL.pt2                 what the package holds and whether it loads
//   aotrt run MODEL.pt2 --input a.npy[:DTYPE][:LAYOUT] [--input b.npy ...]
//             [--weights W.safetensors] --output-dir DIR
//                                        runs it; writes DIR/output_<i>.npy
//   aotrt generate MODEL.pt2 --prompt-ids 5,17,42 [--max-new-tokens N] [--temperature T]
//                [--top-k K] [--top-p P] [--seed S] [--eos ID[,ID]] [--json]
//                                        generates token ids (see cli/generate.h)
//   aotrt bench MODEL.pt2 [--input a.npy ...] [--weights W.safetensors]
//               [--warmup N] [--iters N]
//               [--cuda-graph] [--json] [--profile] [--profiler-range]
//                                        times it (see cli/bench.h)
//
// Every failure prints "aotrt: error: ..." and exits 1.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "cli/bench.h"
#include "cli/generate.h"
#include "cli/input_arg.h"
#include "runtime/npy.h"

namespace {

std::string shape_text(std::span<const int64_t> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// "[2..8, 3, 32, 32]": a dynamic dim as its range ("2.." when unbounded).
std::string spec_sizes_text(const aotrt::TensorSpec& spec) {
  std::string s = "[";
  for (size_t d = 0; d < spec.sizes.size(); ++d) {
    s += d ? ", " : "";
    const aotrt::DynamicDim* dyn = spec.dynamic(d);
    s += dyn == nullptr ? std::to_string(spec.sizes[d])
                        : std::to_string(dyn->min) + ".." + (dyn->max < 0 ? "" : std::to_string(dyn->max));
  }
  return s + "]";
}

int info_command(const std::string& path, const std::string& model_name,
                 const std::string& weights_path) {
  const aotrt::PackageInfo pkg = aotrt::inspect_package(path, model_name);
  std::cout << "package: " << pkg.package_path << "\n";
  std::cout << "model: " << pkg.model_name << " (" << pkg.so_name << ")\n";
  std::cout << "device: " << pkg.device_key << "\n";
  std::cout << "machine: " << pkg.machine << "\n";
  std::cout << "weights blob: " << (pkg.has_weights_blob ? "yes" : "no") << "\n";
  std::cout << "weights layout: " << pkg.weights_layout << ", " << pkg.weights_bytes << " bytes"
            << (pkg.weights_layout == "appended" ? " appended to the .so" : "")
            << (pkg.weights_in_place ? ", read in place from the package" : "") << "\n";
  std::cout << "needed libraries (" << pkg.needed_libraries.size() << "):\n";
  for (const std::string& lib : pkg.needed_libraries) std::cout << "  " << lib << "\n";
  std::cout << "files (" << pkg.files.size() << "):\n";
  for (const aotrt::PackageFile& f : pkg.files) {
    std::cout << "  " << f.name << "  " << f.size << " bytes\n";
  }

  // Names and constants come from the model's container, so only a package
  // that passes the checks is loaded to list them.
  int status = 0;
  if (pkg.problems.empty()) {
    try {
      aotrt::LoadOptions options;
      options.model_name = model_name;
      options.weights = aotrt::cli::weights_arg(weights_path, /*allow_unused=*/false);
      options.without_weights = true;  // names and layouts are all info needs
      options.report_export_advice = false;  // listed below
      const aotrt::Model model = aotrt::Model::load(path, options);
      const aotrt::ModelInfo& info = model.info();
      std::cout << "inputs (" << info.input_names.size() << "):\n";
      for (size_t i = 0; i < info.input_names.size(); ++i) {
        std::cout << "  " << i << ": " << info.input_names[i];
        if (i < info.input_specs.size() && info.input_specs[i]) {
          const aotrt::TensorSpec& spec = *info.input_specs[i];
          std::cout << "  " << aotrt::dtype_name(spec.dtype) << " " << spec_sizes_text(spec)
                    << " strides " << shape_text(spec.strides);
        } else if (i < info.input_dtypes.size() && info.input_dtypes[i]) {
          std::cout << "  " << aotrt::dtype_name(*info.input_dtypes[i]) << " (sizes not fixed)";
        }
        std::cout << "\n";
      }
      std::cout << "outputs (" << info.output_names.size() << "):\n";
      for (size_t i = 0; i < info.output_names.size(); ++i) {
        std::cout << "  " << i << ": " << info.output_names[i] << "\n";
      }
      std::cout << "weights: " << info.weights_source << "\n";
      std::cout << "constants (" << info.constants.size() << "):\n";
      for (const aotrt::ConstantInfo& c : info.constants) {
        std::cout << "  " << c.name << "  " << aotrt::dtype_name(c.dtype);
        if (c.layout_known) {
          std::cout << " " << shape_text(c.sizes) << " strides " << shape_text(c.strides);
        }
        std::cout << "  " << c.nbytes << " bytes";
        if (!c.original_fqn.empty() && c.original_fqn != c.name) {
          std::cout << "  (" << c.original_fqn << ")";
        }
        if (c.from_folded) std::cout << "  (folded)";
        std::cout << "\n";
      }
    } catch (const std::exception& e) {
      std::cout << "inputs: unknown (the model did not load)\n";
      std::cerr << "aotrt: error: " << e.what() << "\n";
      status = 1;
    }
  } else {
    std::cout << "inputs, outputs, constants: unknown (the model cannot be loaded)\n";
  }

  std::cout << "shim symbols (" << pkg.shim_symbols.size() << " needed, "
            << pkg.missing_symbol_count() << " missing, " << pkg.declined_symbol_count()
            << " not served):\n";
  for (const aotrt::ShimSymbol& s : pkg.shim_symbols) {
    std::cout << "  " << s.name << "  "
              << (s.provided ? "provided" : s.refusal.empty() ? "MISSING" : "NOT SERVED: " + s.refusal)
              << "\n";
  }
  if (!pkg.extern_ops.empty()) {
    std::cout << "proxy executor ops (" << pkg.extern_ops.size() << "):\n";
    for (const aotrt::ExternOp& op : pkg.extern_ops) {
      std::cout << "  " << op.target << "  " << (op.served ? "served" : "NOT SERVED: " + op.refusal)
                << "\n";
    }
  }
  std::cout << "export advice (" << pkg.export_advice.size() << "):\n";
  for (const std::string& a : pkg.export_advice) std::cout << "  " << a << "\n";
  std::cout << "problems (" << pkg.problems.size() << "):\n";
  for (const std::string& p : pkg.problems) std::cout << "  " << p << "\n";
  return status;
}

// numpy has no bfloat16, float8 or complex32: such outputs are written as
// float32 (complex64 for complex32), which holds every value exactly.
aotrt::ScalarType writable_dtype(aotrt::ScalarType t) {
  if (aotrt::npy::descr_of(t) != nullptr) return t;
  return t == aotrt::ScalarType::Complex32 ? aotrt::ScalarType::Complex64
                                           : aotrt::ScalarType::Float32;
}

int run_command(const std::string& path, const std::string& model_name,
                const std::vector<std::string>& input_paths, const std::string& output_dir,
                int device_index, bool keep_layout, const std::string& weights_path,
                bool weights_allow_unused) {
  aotrt::LoadOptions options;
  options.model_name = model_name;
  options.device_index = device_index;
  options.weights = aotrt::cli::weights_arg(weights_path, weights_allow_unused);
  aotrt::Model model = aotrt::Model::load(path, options);
  if (input_paths.size() != model.num_inputs()) {
    throw aotrt::Error(aotrt::ErrorKind::kInvalidArgument,
                       "model '" + model.info().model_name + "' takes " +
                           std::to_string(model.num_inputs()) + " input(s) but " +
                           std::to_string(input_paths.size()) + " --input file(s) were given");
  }

  // The compiled code indexes each input with the strides it was exported
  // with (row-major unless the package records others), so each array is
  // laid out that way, whatever order the .npy file stores it in, and
  // converted to the input's dtype (Model::prepare_input).
  std::vector<aotrt::Tensor> inputs;
  for (size_t i = 0; i < input_paths.size(); ++i) {
    const aotrt::cli::InputArg arg = aotrt::cli::parse_input_arg(input_paths[i]);
    aotrt::Tensor t;
    if (keep_layout) {
      t = aotrt::npy::read(arg.path);
      if (!model.device().is_cpu()) t = t.to(model.device());
    } else {
      t = aotrt::cli::read_input(model, i, arg);
    }
    inputs.push_back(std::move(t));
  }

  std::vector<aotrt::Tensor> outputs = model.run(inputs);

  std::error_code ec;
  std::filesystem::create_directories(output_dir, ec);
  if (ec) {
    throw aotrt::Error(aotrt::ErrorKind::kInvalidArgument,
                       "cannot create output folder " + output_dir + ": " + ec.message());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = "output_" + std::to_string(i);
    if (!outputs[i].defined()) {
      std::cerr << "aotrt: note: " << name << " is None; no file written\n";
      continue;
    }
    const aotrt::ScalarType dtype = outputs[i].dtype();
    const aotrt::ScalarType as = writable_dtype(dtype);
    if (as != dtype) {
      std::cerr << "aotrt: note: " << name << " is " << aotrt::dtype_name(dtype)
                << ", which numpy has no dtype for; written as " << aotrt::dtype_name(as) << "\n";
    }
    const std::string file = (std::filesystem::path(output_dir) / (name + ".npy")).string();
    aotrt::npy::write(file, outputs[i].dense_host_copy(as));
    std::cout << name << ": " << aotrt::dtype_name(as) << " " << shape_text(outputs[i].sizes())
              << " -> " << file << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  aotrt::cli::BenchOptions bench_options;
  bench_options.main_entry = std::chrono::steady_clock::now();
  bench_options.process_start = aotrt::cli::process_start_time(&bench_options.process_start_source);
  CLI::App app{"aotrt: runs AOTInductor .pt2 packages without libtorch"};
  app.require_subcommand(1);
  std::string model_name = "model";

  std::string info_path, weights_path;
  bool weights_allow_unused = false;
  const char* weights_help = "a safetensors file with the model's weights, by the constants' "
                             "original names (`aotrt info` lists them); instead of the package's";
  const char* allow_unused_help = "skip tensors of the --weights file the model has no constant "
                                  "for (refused by default)";
  CLI::App* info = app.add_subcommand("info", "Show what a package holds and whether it loads");
  info->add_option("package", info_path, "the .pt2 file")->required();
  info->add_option("--weights", weights_path, weights_help);
  CLI::Option* info_model_name = info->add_option(
      "--model-name", model_name,
      "model folder under data/aotinductor/ (default: 'model', else every graph of a package "
      "without one, such as a generation package's prefill and decode)");

  std::string run_path, output_dir;
  std::vector<std::string> inputs;
  int device_index = -1;
  bool keep_layout = false;
  CLI::App* run = app.add_subcommand("run", "Run a package on .npy inputs");
  run->add_option("package", run_path, "the .pt2 file")->required();
  run->add_option("--input,-i", inputs,
                  "an input FILE.npy[:DTYPE][:LAYOUT], in the model's input order; DTYPE "
                  "(e.g. bfloat16) and LAYOUT (contiguous, channels_last, channels_last_3d) say "
                  "what the package does not record");
  run->add_option("--weights", weights_path, weights_help);
  run->add_flag("--weights-allow-unused", weights_allow_unused, allow_unused_help);
  run->add_option("--output-dir,-o", output_dir, "where output_<i>.npy are written")->required();
  run->add_option("--model-name", model_name, "model folder under data/aotinductor/");
  run->add_option("--device-index", device_index, "CUDA packages: the device (default: current)");
  run->add_flag("--keep-input-layout", keep_layout,
                "pass each array with the layout its .npy file has (a Fortran-order one as a "
                "column-major view) instead of the layout the model was exported with");

  aotrt::cli::BenchOptions& b = bench_options;
  CLI::App* bench = app.add_subcommand("bench", "Time a package: latency, throughput, startup, memory");
  bench->add_option("package", b.package, "the .pt2 file")->required();
  bench->add_option("--input,-i", b.inputs,
                    "an input FILE.npy[:DTYPE][:LAYOUT], in the model's input order (default: "
                    "random inputs of the recorded dtype, sizes and strides)");
  bench->add_option("--weights", b.weights, weights_help);
  bench->add_flag("--weights-allow-unused", b.weights_allow_unused, allow_unused_help);
  bench->add_option("--warmup", b.warmup, "untimed runs after the first (default 10)");
  bench->add_option("--iters", b.iters, "timed runs (default 100)");
  bool graph_on = false, graph_off = false;
  bench->add_flag("--cuda-graph", graph_on,
                  "CUDA models: capture the first run into a CUDA graph and replay it every run "
                  "(default: automatic, graphs where they change nothing but the speed)");
  bench->add_flag("--no-cuda-graph", graph_off, "CUDA models: no CUDA graphs, every run plain")
      ->excludes(bench->get_option("--cuda-graph"));
  bench->add_flag("--json", b.json, "print one JSON object instead of the report");
  bench->add_flag("--profile", b.profile,
                  "also time each aoti_* shim call in the timed runs: calls, host us per run, "
                  "and run() time outside the shims (slows those runs a little)");
  bench->add_flag("--profiler-range", b.profiler_range,
                  "CUDA models: call cudaProfilerStart/Stop around the timed runs, for "
                  "ncu --profile-from-start off or nsys --capture-range=cudaProfilerApi");
  bench->add_option("--batch", b.batch, "samples per run (default: the first dim of input 0)");
  bench->add_option("--seed", b.seed, "seed of the random inputs");
  bench->add_option("--model-name", b.model_name, "model folder under data/aotinductor/");
  bench->add_option("--device-index", b.device_index, "CUDA packages: the device (default: current)");

  aotrt::cli::GenerateArgs ga;
  CLI::App* gen = app.add_subcommand("generate", "Generate token ids with a decoder package");
  gen->add_option("package", ga.package, "the .pt2 file")->required();
  gen->add_option("--prompt-ids", ga.prompt_ids, "the prompt's token ids, comma-separated")
      ->required();
  gen->add_option("--max-new-tokens", ga.max_new_tokens, "at most this many new tokens (default 64)");
  gen->add_option("--temperature", ga.sampling.temperature, "0 (default): greedy");
  gen->add_option("--top-k", ga.sampling.top_k, "keep the K most likely tokens (0: all)");
  gen->add_option("--top-p", ga.sampling.top_p, "keep the most likely tokens up to mass P (1: all)");
  gen->add_option("--seed", ga.sampling.seed, "seed of the draws (the same seed, the same tokens)");
  gen->add_option("--eos", ga.eos, "token ids that end the sequence (default: the package's)");
  gen->add_option("--max-cache-len", ga.max_cache_len,
                  "the cache length, for a package that does not record it");
  gen->add_option("--warmup", ga.warmup,
                  "generate this many times first, each in a sequence of its own, and report the "
                  "call after them: a warm process's TTFT (default 0)")
      ->check(CLI::NonNegativeNumber);
  gen->add_flag("--json", ga.json, "print one JSON object at the end instead of the tokens");
  gen->add_flag("--no-cuda-graph", ga.no_cuda_graph, "CUDA packages: no CUDA graphs");
  gen->add_option("--device-index", ga.device_index, "CUDA packages: the device (default: current)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "aotrt: error: " << e.what() << " (see aotrt --help)\n";
    return 1;
  }

  try {
    if (*info) {
      // A package of several graphs (aoti_compile_and_package of a dict) has no "model": each
      // graph is shown in turn, rather than an error naming them.
      std::vector<std::string> graphs;
      if (!info_model_name->count()) {
        try {
          graphs = aotrt::Program::graph_names(info_path);
        } catch (const std::exception&) {
          // not a readable package: info_command says what is wrong with it
        }
      }
      if (graphs.empty() || std::find(graphs.begin(), graphs.end(), model_name) != graphs.end()) {
        return info_command(info_path, model_name, weights_path);
      }
      int status = 0;
      for (size_t i = 0; i < graphs.size(); ++i) {
        std::cout << (i ? "\n" : "") << "== graph " << graphs[i] << " (" << (i + 1) << " of "
                  << graphs.size() << "; --model-name " << graphs[i] << " shows it alone)\n";
        status = std::max(status, info_command(info_path, graphs[i], weights_path));
      }
      return status;
    }
    if (*gen) return aotrt::cli::generate_command(ga);
    if (*bench) {
      if (graph_on) b.cuda_graph = aotrt::CudaGraphMode::kOn;
      if (graph_off) b.cuda_graph = aotrt::CudaGraphMode::kOff;
      return aotrt::cli::bench_command(bench_options);
    }
    return run_command(run_path, model_name, inputs, output_dir, device_index, keep_layout,
                       weights_path, weights_allow_unused);
  } catch (const std::exception& e) {
    std::cerr << "aotrt: error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "aotrt: error: unknown failure\n";
    return 1;
  }
}
