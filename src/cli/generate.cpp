#include "cli/generate.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/bench.h"

namespace aotrt::cli {

std::vector<int64_t> parse_id_list(const std::string& text, const char* what) {
  std::vector<int64_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    char* end = nullptr;
    errno = 0;
    const long long v = item.empty() ? 0 : std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || end == nullptr || *end != '\0' || errno == ERANGE) {
      throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": '" + text +
                                                   "' is not a comma-separated list of token "
                                                   "ids (bad item '" + item + "')");
    }
    ids.push_back(v);
    pos = comma + 1;
  }
  return ids;
}

int generate_command(const GenerateArgs& args) {
  GeneratorOptions options;
  options.load.device_index = args.device_index;
  if (args.no_cuda_graph) options.load.cuda_graph = CudaGraphMode::kOff;
  if (args.max_cache_len > 0) options.max_cache_len = args.max_cache_len;
  const std::vector<int64_t> prompt = parse_id_list(args.prompt_ids, "--prompt-ids");
  Generator gen = Generator::load(args.package, options);

  GenerateOptions g;
  g.max_new_tokens = args.max_new_tokens;
  g.sampling = args.sampling;
  if (!args.eos.empty()) g.eos_token_ids = parse_id_list(args.eos, "--eos");
  if (!args.json) {
    g.on_token = [](int64_t token) {
      std::printf("%lld ", static_cast<long long>(token));
      std::fflush(stdout);
      return true;
    };
  }
  // Note [Warm TTFT]
  // The first generate of a process pays once for what a server pays once: CUDA's lazy loading
  // of every kernel the graphs launch, cuBLAS/cuDNN handles and plans, the capture of the
  // prompt length's CUDA graph. A bench that starts a process per round and reads that call's
  // TTFT measures start-up, not the time a user waits for a first token; --warmup N runs N
  // calls first (each in its own sequence, so the caches start empty) and reports the call
  // after them, with the first call's TTFT beside it (first_call_ttft_ms).
  GenerateOptions quiet = g;
  quiet.on_token = nullptr;
  double first_ttft_ms = -1;
  for (int64_t i = 0; i < args.warmup; ++i) {
    const GenerateResult w = gen.generate(prompt, quiet);
    if (i == 0) first_ttft_ms = w.ttft_ms;
  }
  const GenerateResult r = gen.generate(prompt, g);
  const LatencyStats itl = summarize(r.inter_token_ms);
  if (args.json) {
    nlohmann::json out;
    out["tokens"] = r.tokens;
    out["stop_reason"] = r.stop_reason;
    out["prompt_tokens"] = prompt.size();
    out["ttft_ms"] = r.ttft_ms;
    out["warmup"] = args.warmup;
    if (args.warmup > 0) out["first_call_ttft_ms"] = first_ttft_ms;
    out["total_ms"] = r.total_ms;
    out["tokens_per_s"] = r.tokens_per_s;
    out["inter_token_ms"] = {{"p50", itl.p50}, {"p90", itl.p90}, {"p99", itl.p99},
                             {"mean", itl.mean}, {"min", itl.min}, {"max", itl.max}};
    out["device"] = gen.program().device().str();
    out["config_source"] = gen.config().source;
    std::cout << out.dump() << "\n";
  } else {
    std::printf("\n");
    std::fprintf(stderr,
                 "aotrt: %zu new tokens (%s), first after %.2f ms, %.1f tokens/s, inter-token "
                 "p50 %.3f ms p99 %.3f ms\n",
                 r.tokens.size(), r.stop_reason.c_str(), r.ttft_ms, r.tokens_per_s, itl.p50,
                 itl.p99);
  }
  return 0;
}

}  // namespace aotrt::cli
