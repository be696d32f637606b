// GenerationConfig from a loaded Program (aotrt/generate.h).
//
// Note [Generation packages]
// A package made by aotrt_tools.llm says what it is: every graph's
// <h>.wrapper_metadata.json holds "aotrt.generation", a JSON object with
// "kind" ("decoder" | "encoder_decoder"), "graph" (its role: "decode",
// "prefill", "encoder"), "inputs" (the role of each input in order:
// "input_ids", "cache_position", "encoder_hidden_states", ...),
// "max_cache_len", "max_prefill_len", "vocab_size", "eos_token_ids",
// "decoder_start_token_ids". A package made by torch's own flow from
// Hugging Face's exportable module (TorchExportableModuleForDecoderOnlyLM)
// says none of it; what is known is read from the graph:
//  - one graph with two int64 inputs: token ids [B, T] (rank 2) and cache
//    positions [T] (rank 1), by rank, their names ("input_ids",
//    "cache_position") breaking a tie; it serves as the decode graph, and
//    also as the prefill graph when T is dynamic;
//  - the cache length: GeneratorOptions::max_cache_len, else the one
//    length every rank-4 state constant (a [B, heads, length, head_dim] KV
//    cache) has in dim 2; none or several refuse the package, asking for it;
//  - the vocabulary: the last dim of the logits (when the package records no
//    output sizes, Generator::load runs one decode step of a scratch session
//    to read it);
//  - end of sequence: GeneratorOptions::eos_token_ids (none by default).
#include "generate/config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <tuple>

#include "package/layout.h"
#include "package/wrapper_source.h"
#include "package/zip_reader.h"
#include "runtime/preflight.h"

namespace aotrt::generate {
namespace {

constexpr const char* kFn = "aotrt::Generator::load";

std::vector<int64_t> ints(const nlohmann::json& j, const char* key) {
  std::vector<int64_t> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) {
    if (v.is_number_integer()) out.push_back(v.get<int64_t>());
  }
  return out;
}

int64_t integer(const nlohmann::json& j, const char* key, int64_t otherwise = 0) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : otherwise;
}

// The range of dim `dim` of input `index` as the graph's own input checks
// state it ({size, size} for a fixed one); nullopt when the package has no
// generated source or does not check it.
struct Range {
  int64_t min = 0, max = -1;  // max -1: unbounded
};
std::optional<Range> input_dim_range(const ModelInfo& info, size_t index, size_t dim) {
  const package::ZipArchive archive = package::ZipArchive::open(info.package_path);
  const package::ModelLayout layout = package::find_model(archive, info.model_name);
  if (!layout.wrapper_source || layout.wrapper_source->size > runtime::kMaxWrapperSourceBytes) {
    return std::nullopt;
  }
  const package::WrapperSource source = package::parse_wrapper_source(
      archive.read(*layout.wrapper_source, runtime::kMaxWrapperSourceBytes));
  if (index >= source.inputs.size()) return std::nullopt;
  const package::WrapperInput& in = source.inputs[index];
  if (dim < in.sizes.size() && in.sizes[dim]) return Range{*in.sizes[dim], *in.sizes[dim]};
  Range r;
  if (dim < in.min_sizes.size() && in.min_sizes[dim]) r.min = *in.min_sizes[dim];
  if (dim < in.max_sizes.size() && in.max_sizes[dim]) r.max = *in.max_sizes[dim];
  return r;
}

// The position of `role` in the graph's "inputs" list; -1 when absent.
int role_index(const nlohmann::json& j, const char* role) {
  if (!j.contains("inputs") || !j["inputs"].is_array()) return -1;
  const auto& inputs = j["inputs"];
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_string() && inputs[i].get<std::string>() == role) return static_cast<int>(i);
  }
  return -1;
}

std::optional<nlohmann::json> metadata_of(const ModelInfo& info) {
  const auto it = info.metadata.find("aotrt.generation");
  if (it == info.metadata.end()) return std::nullopt;
  auto j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    AOTRT_FAIL(kPackage, kFn, ": model '", info.model_name, "' of ", info.package_path,
               ": its \"aotrt.generation\" metadata is not a JSON object");
  }
  return j;
}

GenerationConfig from_metadata(const Program& program, const GeneratorOptions& options) {
  GenerationConfig c;
  c.source = "package";
  for (const std::string& g : program.graphs()) {
    const auto j = metadata_of(program.info(g));
    if (!j) continue;
    const std::string role = j->value("graph", std::string());
    c.kind = j->value("kind", std::string("decoder"));
    if (role == "decode") {
      c.decode_graph = g;
      c.decode_ids_input = role_index(*j, "input_ids");
      c.decode_pos_input = role_index(*j, "cache_position");
      c.decode_encoder_input = role_index(*j, "encoder_hidden_states");
      c.max_cache_len = integer(*j, "max_cache_len");
      c.vocab_size = integer(*j, "vocab_size");
      c.eos_token_ids = ints(*j, "eos_token_ids");
      c.decoder_start_token_ids = ints(*j, "decoder_start_token_ids");
    } else if (role == "prefill") {
      c.prefill_graph = g;
      c.prefill_ids_input = role_index(*j, "input_ids");
      c.prefill_pos_input = role_index(*j, "cache_position");
      c.max_prefill_len = integer(*j, "max_prefill_len");
    } else if (role == "encoder") {
      c.encoder_graph = g;
    }
  }
  AOTRT_CHECK(!c.decode_graph.empty(), kPackage, kFn, ": package ", program.info(program.graphs()[0]).package_path,
              " has \"aotrt.generation\" metadata but no graph with the role \"decode\"");
  AOTRT_CHECK(c.decode_ids_input >= 0 && (c.kind == "encoder_decoder" || c.decode_pos_input >= 0),
              kPackage, kFn, ": the decode graph '", c.decode_graph,
              "' does not say which inputs are \"input_ids\" and \"cache_position\"");
  AOTRT_CHECK(c.prefill_graph.empty() || (c.prefill_ids_input >= 0 && c.prefill_pos_input >= 0),
              kPackage, kFn, ": the prefill graph '", c.prefill_graph,
              "' does not say which inputs are \"input_ids\" and \"cache_position\"");
  AOTRT_CHECK(c.kind != "encoder_decoder" || !c.encoder_graph.empty(), kPackage, kFn,
              ": an encoder-decoder package without a graph with the role \"encoder\"");
  // The record's vocabulary against the logits' width, where the decode graph states it: a record
  // that says less would refuse valid prompt tokens, one that says more would let the embedding
  // read past its table.
  const ModelInfo& decode_info = program.info(c.decode_graph);
  const std::optional<TensorSpec>* logits =
      decode_info.output_specs.empty() ? nullptr : &decode_info.output_specs[0];
  if (c.vocab_size > 0 && logits != nullptr && *logits && !(*logits)->sizes.empty()) {
    const size_t last = (*logits)->sizes.size() - 1;
    const int64_t width = (*logits)->sizes[last];
    AOTRT_CHECK((*logits)->dynamic(last) != nullptr || width <= 0 || width == c.vocab_size, kPackage,
                kFn, ": the decode graph '", c.decode_graph, "' of ", decode_info.package_path,
                " records a vocabulary of ", c.vocab_size, " tokens but its logits are ", width,
                " wide; re-export it (aotrt_tools.llm) or correct \"vocab_size\"");
  }
  if (options.max_cache_len) c.max_cache_len = *options.max_cache_len;
  if (!options.eos_token_ids.empty()) c.eos_token_ids = options.eos_token_ids;
  return c;
}

// The token ids and cache positions among a graph's inputs (Note [Generation
// packages]); throws naming the graph when they are not there.
std::pair<int, int> token_inputs(const ModelInfo& info) {
  int ids = -1, pos = -1;
  for (size_t i = 0; i < info.input_names.size(); ++i) {
    const bool int64 = i < info.input_dtypes.size() && info.input_dtypes[i] == ScalarType::Int64;
    const int64_t rank = i < info.input_ranks.size() ? info.input_ranks[i] : -1;
    if (!int64) continue;
    const std::string& name = info.input_names[i];
    if ((rank == 2 || name == "input_ids") && (ids < 0 || name == "input_ids")) ids = static_cast<int>(i);
    if ((rank == 1 || name == "cache_position") && (pos < 0 || name == "cache_position")) {
      pos = static_cast<int>(i);
    }
  }
  AOTRT_CHECK(info.input_names.size() == 2 && ids >= 0 && pos >= 0 && ids != pos, kPackage, kFn,
              ": model '", info.model_name, "' of ", info.package_path, " is not a decoder step "
              "aotrt recognises: it should take two int64 inputs, token ids [batch, tokens] and "
              "cache positions [tokens] (Hugging Face's TorchExportableModuleForDecoderOnlyLM "
              "exports one), and has ", info.input_names.size(), " input(s); export it with "
              "aotrt_tools.llm, which records what each input is");
  return {ids, pos};
}

// Note [Generation packages]: a torch-flow package.
GenerationConfig inferred(const Program& program, const GeneratorOptions& options) {
  GenerationConfig c;
  c.source = "inferred";
  c.kind = "decoder";
  const std::vector<std::string>& graphs = program.graphs();
  const std::string& path = program.info(graphs[0]).package_path;
  if (graphs.size() == 1) {
    c.decode_graph = graphs[0];
  } else {
    AOTRT_CHECK(program.has_graph("decode"), kPackage, kFn, ": package ", path, " has ",
                graphs.size(), " graphs, none named 'decode', and no \"aotrt.generation\" "
                "metadata saying which decodes (export it with aotrt_tools.llm)");
    c.decode_graph = "decode";
    if (program.has_graph("prefill")) c.prefill_graph = "prefill";
  }
  const ModelInfo& info = program.info(c.decode_graph);
  const std::string what = "model '" + info.model_name + "' of " + info.package_path;
  std::tie(c.decode_ids_input, c.decode_pos_input) = token_inputs(info);
  // How many tokens a step takes: one (a decode step, as Hugging Face's module
  // exports it), or a range (the same graph prefills; torch.export makes a
  // dynamic dim's minimum 2 unless told otherwise, and then it cannot decode).
  const std::optional<Range> tokens =
      input_dim_range(info, static_cast<size_t>(c.decode_ids_input), 1);
  AOTRT_CHECK(tokens.has_value(), kPackage, kFn, ": ", what, " does not say how many tokens a "
              "step takes (no generated source in the package); export it with aotrt_tools.llm");
  AOTRT_CHECK(tokens->min <= 1, kPackage, kFn, ": ", what, " takes at least ", tokens->min,
              " tokens a step, so it cannot decode one token at a time; export the decode step "
              "with one token (input_ids [batch, 1]), or the token dim as torch.export.Dim with "
              "min=1 (aotrt_tools.llm exports both graphs)");
  if (c.prefill_graph.empty() && tokens->max != 1) {
    c.prefill_graph = c.decode_graph;
    c.max_prefill_len = tokens->max > 0 ? tokens->max : 0;
  }
  if (!c.prefill_graph.empty()) {
    const ModelInfo& pinfo = program.info(c.prefill_graph);
    std::tie(c.prefill_ids_input, c.prefill_pos_input) = token_inputs(pinfo);
    if (c.prefill_graph != c.decode_graph) {
      const auto r = input_dim_range(pinfo, static_cast<size_t>(c.prefill_ids_input), 1);
      c.max_prefill_len = r && r->max > 0 ? r->max : 0;
    }
  }
  if (!info.output_specs.empty() && info.output_specs[0] && !info.output_specs[0]->sizes.empty()) {
    c.vocab_size = info.output_specs[0]->sizes.back();
  }
  if (options.max_cache_len) {
    c.max_cache_len = *options.max_cache_len;
  } else {
    std::set<int64_t> lengths;
    for (const StateInfo& s : program.state()) {
      if (s.sizes.size() == 4) lengths.insert(s.sizes[2]);
    }
    AOTRT_CHECK(lengths.size() == 1, kPackage, kFn, ": ", what, " does not record its cache "
                "length and its state does not tell it (", lengths.size(), " different lengths "
                "among its [batch, heads, length, head_dim] buffers); give it "
                "(GeneratorOptions::max_cache_len, --max-cache-len)");
    c.max_cache_len = *lengths.begin();
  }
  c.eos_token_ids = options.eos_token_ids;
  return c;
}

}  // namespace

GenerationConfig read_config(const Program& program, const GeneratorOptions& options) {
  bool any = false;
  for (const std::string& g : program.graphs()) any = any || metadata_of(program.info(g)).has_value();
  GenerationConfig c = any ? from_metadata(program, options) : inferred(program, options);
  const std::string& path = program.info(c.decode_graph).package_path;
  AOTRT_CHECK(c.max_cache_len > 0, kPackage, kFn, ": package ", path,
              " does not say how many positions its cache holds; give GeneratorOptions::"
              "max_cache_len (--max-cache-len)");
  AOTRT_CHECK(c.kind == "decoder" || c.kind == "encoder_decoder", kPackage, kFn, ": package ",
              path, " is of generation kind '", c.kind, "', which this aotrt does not know");
  return c;
}

}  // namespace aotrt::generate
