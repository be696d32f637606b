// aotrt generate: token ids in, new token ids out as they come (Note [The
// decode loop] in src/generate/generator.cpp).
//
//   aotrt generate MODEL.pt2 --prompt-ids 5,17,42 --max-new-tokens 64
//         [--temperature T --top-k K --top-p P --seed S --eos ID[,ID]]
//         [--max-cache-len N] [--warmup N] [--json] [--no-cuda-graph] [--device-index I]
//
// Prints each new token id as soon as it is known, space-separated, then a
// summary line on stderr; with --json, only one JSON object at the end:
// {"tokens", "stop_reason", "prompt_tokens", "ttft_ms", "total_ms",
//  "tokens_per_s", "inter_token_ms": {"p50", "p90", "p99", "mean", "min", "max"},
//  "warmup", "first_call_ttft_ms" (with --warmup N > 0: Note [Warm TTFT])}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aotrt/generate.h"

namespace aotrt::cli {

struct GenerateArgs {
  std::string package;
  std::string prompt_ids;  // "5,17,42"
  int64_t max_new_tokens = 64;
  SamplingConfig sampling;
  std::string eos;  // "2" or "2,32000"; empty: the package's
  int64_t max_cache_len = 0;  // 0: the package's
  int64_t warmup = 0;  // generate calls before the reported one (same prompt, new sequences)
  bool json = false;
  bool no_cuda_graph = false;
  int device_index = -1;
};

// Parses "5, 17,42" into ids; throws kInvalidArgument naming `what` for
// anything else.
std::vector<int64_t> parse_id_list(const std::string& text, const char* what);

int generate_command(const GenerateArgs& args);

}  // namespace aotrt::cli
