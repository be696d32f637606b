// Generation: token-by-token decoding of a language model (or a speech model's
// decoder) exported with a static KV cache, over a Program's sessions.
//
//   aotrt::Generator gen = aotrt::Generator::load("llm.pt2");
//   aotrt::GenerateOptions opt;
//   opt.max_new_tokens = 64;
//   opt.on_token = [](int64_t t) { std::printf("%lld ", (long long)t); return true; };
//   aotrt::GenerateResult r = gen.generate(std::vector<int64_t>{1, 15043, 29892}, opt);
//
// What a package is, for generation (GenerationConfig): the metadata
// "aotrt.generation" that aotrt_tools.llm writes into each graph, or, for a
// package made by torch's own flow (a single graph taking token ids [B, T]
// and cache positions [T], returning logits [B, T, V]), what its inputs,
// outputs and state say (Note [Generation packages] in src/generate/config.cpp).
//
// Note [The decode loop] (src/generate/generator.cpp): the prompt goes through
// the prefill graph in chunks when the package has one, else token by token
// through the decode graph; each new token is sampled on the model's device
// (greedy, temperature, top-k, top-p, reproducible for a seed) straight into
// the next step's input, and on CUDA the next step is queued before the host
// reads the token: the one wait per token is for that token's 8 bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "aotrt/session.h"

namespace aotrt {

// How the next token is drawn from the logits, as Hugging Face's generate
// does with do_sample (temperature, then top-k, then top-p, then a draw).
struct SamplingConfig {
  float temperature = 0.f;  // 0: greedy (the first largest logit); < 0 refused
  int64_t top_k = 0;        // 0: no top-k
  float top_p = 1.f;        // >= 1: no top-p
  uint64_t seed = 0;        // the same seed gives the same tokens on a device
};

// What the package is, for generation.
struct GenerationConfig {
  std::string kind;             // "decoder" or "encoder_decoder"
  std::string decode_graph;     // one token per step
  std::string prefill_graph;    // many tokens per step; "" when there is none
  std::string encoder_graph;    // encoder-decoder only
  int64_t max_cache_len = 0;    // positions the cache holds
  int64_t max_prefill_len = 0;  // tokens per prefill step (0: no prefill graph)
  int64_t vocab_size = 0;
  std::vector<int64_t> eos_token_ids;
  std::vector<int64_t> decoder_start_token_ids;  // encoder-decoder: the forced prefix
  // Per graph, the position of each role among its inputs.
  int decode_ids_input = 0, decode_pos_input = 1, decode_encoder_input = -1;
  int prefill_ids_input = 0, prefill_pos_input = 1;
  // "package" (aotrt.generation metadata) or "inferred" (Note [Generation packages]).
  std::string source;
};

struct GeneratorOptions {
  LoadOptions load;  // model_name is ignored: every graph is loaded
  // For packages that do not record them: the cache length, and the tokens
  // that end a sequence.
  std::optional<int64_t> max_cache_len;
  std::vector<int64_t> eos_token_ids;
};

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  SamplingConfig sampling;
  // Tokens that end the sequence (included in the result); unset: the
  // package's. An empty list: none.
  std::optional<std::vector<int64_t>> eos_token_ids;
  // Called with each new token as soon as it is known (on the calling
  // thread); returning false stops the generation after that token.
  std::function<bool(int64_t token)> on_token;
};

struct GenerateResult {
  std::vector<int64_t> tokens;  // the new tokens, the prompt excluded
  // "eos", "max_new_tokens", "stopped" (on_token returned false), or
  // "cache_full" (the cache has no position left).
  std::string stop_reason;
  double ttft_ms = 0;        // from the call to the first new token on the host
  double total_ms = 0;
  double tokens_per_s = 0;   // new tokens after the first, per second of decoding
  std::vector<double> inter_token_ms;  // between consecutive new tokens
};

// A sequence being generated: a session of the program and the positions
// of its cache that hold tokens. Made by Generator::new_sequence.
class Sequence {
 public:
  Sequence(Sequence&&) noexcept;
  Sequence& operator=(Sequence&&) noexcept;
  ~Sequence();

  // Tokens in the cache (prompt and generated tokens so far).
  int64_t length() const;
  // Empties the cache (the session's state back to the package's values).
  void reset();
  // A new sequence holding a copy of this one's cache and length.
  Sequence fork() const;
  // Bytes its session holds (state, CUDA graphs, sampling buffers).
  uint64_t memory_bytes() const;
  Session& session();

  class Impl;

 private:
  friend class Generator;
  explicit Sequence(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Generator {
 public:
  // Loads every graph of a generation package (Program::load) and works out
  // its GenerationConfig; throws kPackage saying what is missing.
  static Generator load(const std::string& package_path, const GeneratorOptions& options = {});

  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;
  ~Generator();

  const GenerationConfig& config() const;
  const Program& program() const;

  Sequence new_sequence() const;

  // Appends `prompt` to `sequence` and generates up to max_new_tokens after
  // it. A prompt that does not fit the cache, a token outside the
  // vocabulary or a bad sampling parameter throws kInvalidArgument before
  // anything runs, and the sequence is unchanged.
  // Several threads may generate at once, each in its own sequence.
  GenerateResult generate(Sequence& sequence, std::span<const int64_t> prompt,
                          const GenerateOptions& options) const;
  // In a new sequence, destroyed afterwards.
  GenerateResult generate(std::span<const int64_t> prompt, const GenerateOptions& options) const;
  // Encoder-decoder: encodes `encoder_input` (e.g. log-mel features), then
  // generates after the package's decoder start tokens in `sequence`, which
  // must be empty (length() == 0).
  GenerateResult generate_from(Sequence& sequence, const Tensor& encoder_input,
                               const GenerateOptions& options) const;

  class Impl;

 private:
  friend class Sequence;
  explicit Generator(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace aotrt
