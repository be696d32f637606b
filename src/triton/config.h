// A Triton model configuration (config.pbtxt, as the JSON the server hands a
// backend) read against the aotrt package it serves: which package input each
// configured input feeds, their dtypes and dims, the batch size, and the
// backend's own parameters. Nothing here calls the server.
//
// Note [Batching along dim 0]
// With max_batch_size > 0 a request's tensors carry a leading batch dim that
// config.pbtxt's dims leave out, and the server may hand one execution several
// requests. The backend concatenates them along dim 0 and runs the package
// once, which needs a package whose every input has a dynamic dim 0 (exported
// with aotrt_tools.export --dynamic-batch N, up to N rows), then gives each
// request its own rows of every output. A package with a static dim 0 serves
// only max_batch_size 0 (the dims are then the full shape).
//
// Note [Generation models]
// A model whose config.pbtxt sets model_transaction_policy { decoupled: true }
// is a generation model: its package is served by an aotrt::Generator
// (aotrt/generate.h), not run once per request (src/triton/generation.h,
// Note [Serving generation]). The parameter "generation": "true" makes a
// model without decoupled a generation model too, answering each request
// with one response (no streaming); "generation": "false" with decoupled is
// refused. The package says nothing about this: a torch-flow decoder step
// carries no metadata, and one made by aotrt_tools.llm would serve either way.
// Its tensors are named and typed as TensorRT-LLM's backend names them, so
// its clients work unchanged; config.pbtxt may list a subset (auto-complete
// lists them all), and a name not below is refused:
//   input_ids               INT32|INT64 [-1]  the prompt (required)
//   input_lengths           INT32|INT64 [1]   its first N ids only
//   request_output_len      INT32|INT64 [1]   at most N new tokens (required)
//   end_id                  INT32|INT64 [1]   the token that ends the sequence
//   streaming               BOOL [1]          a response per token (decoupled only)
//   temperature             FP32|FP64 [1]     0 (default): greedy
//   runtime_top_k           INT32|INT64 [1]   0 (default): all tokens
//   runtime_top_p           FP32|FP64 [1]     1 or 0 (default): no top-p
//   random_seed             UINT64|INT64|INT32 [1]  the same seed, the same tokens
//   beam_width              INT32|INT64 [1]   1 only
//   exclude_input_in_output BOOL [1]          non-streaming: new tokens only
//   output_ids              INT32|INT64 [-1, -1]  (beam, tokens)
//   sequence_length         INT32|INT64 [-1]  tokens in output_ids, per beam
// With max_batch_size > 0 every tensor also has a leading batch dim, and a
// request holds one sequence (batch 1).
// Sampling means what `aotrt generate` does with the same values (the same
// prompt, parameters and seed give the same tokens). Parameters of the
// model: "max_sessions" (sequences generating at once, default 8),
// "max_cache_len" and "eos_token_ids" (comma-separated) for a package that
// does not record them, and "cuda_graph" as for any model.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "triton/triton_api.h"

namespace aotrt::triton {

// config.pbtxt's data_type names ("TYPE_FP32") and the server's enum, as
// aotrt dtypes; nullopt for a type aotrt has no dtype for (TYPE_STRING).
std::optional<ScalarType> dtype_from_config(const std::string& name);
std::optional<ScalarType> dtype_from_server(TRITONSERVER_DataType type);
// Throws kUnsupported for a dtype Triton has no type for (complex, float8).
const char* config_dtype_name(ScalarType dtype);
TRITONSERVER_DataType server_dtype(ScalarType dtype);

// One configured input or output.
struct TensorConfig {
  std::string name;
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> dims;  // as configured: without the batch dim; -1 any size
  size_t package_index = 0;   // its position among the package's inputs or outputs
};

struct ModelConfig {
  std::string name;
  int64_t max_batch_size = 0;
  // The fewest rows the package takes along its dynamic dim 0 (2 for
  // aotrt_tools.export --dynamic-batch, see Note [Dynamic batch export] in
  // export.py); a smaller batch is padded with zero rows.
  int64_t min_batch = 1;
  std::vector<TensorConfig> inputs;   // in the package's input order
  std::vector<TensorConfig> outputs;  // as configured
  std::string model_filename = "model.pt2";
  // parameters { key: "cuda_graph" value: { string_value: "true" } }: replay
  // the model as one CUDA graph (CudaGraphMode::kOn); batches are then padded
  // to max_batch_size rows so that every run has the same shapes. "false":
  // kOff. Absent: kAuto, aotrt's default (graphs for the batch sizes that
  // repeat, where they change nothing but the speed).
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;
  // parameters "report_instance": each response carries the parameters
  // aotrt_instance (the instance that ran it), aotrt_batch (the rows of that
  // run) and aotrt_compute_start_ns / aotrt_compute_end_ns (steady clock).
  bool report_instance = false;
};

// The package file a configuration names: default_model_filename, else
// model.pt2.
std::string model_filename(const nlohmann::json& config);

// A true/false entry of the configuration's parameters (false when absent);
// throws kInvalidArgument for another value.
bool parameter_flag(const nlohmann::json& config, const char* key);
// The "cuda_graph" parameter as a mode (ModelConfig::cuda_graph).
CudaGraphMode cuda_graph_parameter(const nlohmann::json& config);

// Note [Outputs of a package that records none]
// A package exported by aotrt_tools.export records its outputs' dtypes and
// sizes ("aotrt.outputs"); one made by aoti_compile_and_package itself does
// not, and config.pbtxt must then list them, unless something else says.
// Two places could: the generated <h>.wrapper.cpp, or a run. The source
// never states an output's dtype: an output is the handle of a buffer that
// may be a view of another (reinterpret_tensor), a fallback op's result
// (its dtype is that op's rule) or an input, so reading it means
// re-implementing the ops. A run shows what the model returns. So the
// backend runs the model on zeros laid out as its input specs say (recorded,
// or read from the source's input checks): dtypes and ranks from the
// outputs. For a package with a dynamic dim (a batch) one run cannot tell an
// output's dynamic dims from its fixed ones, so a second run has every
// dynamic input dim one larger (within its range): an output dim whose size
// changed is dynamic, -1 in config.pbtxt, and an output dim 0 that follows
// the batch lets Triton batch along it (Note [Batching along dim 0]). Only
// when config.pbtxt lists no outputs and the package records none; at load,
// never per request.

// Per output of `model`, its dtype and sizes, and its dynamic dims, as runs
// on zeros show them (Note [Outputs of a package that records none]).
// Throws kInvalidArgument naming the model when an input has no recorded
// spec, a run fails or returns None for an output.
std::vector<std::optional<TensorSpec>> output_specs_from_runs(Model& model,
                                                              const std::string& where);

// Fills in what `config` leaves out from what the package records: with no
// inputs configured, every input (names, dtypes, dims) and, for a package
// whose inputs all have a dynamic dim 0, max_batch_size (the largest batch
// the package takes); with no outputs configured, every output. Returns
// whether anything changed. Throws kInvalidArgument when the package records
// too little to fill something in (it was not exported by aotrt_tools).
bool autocomplete(nlohmann::json& config, const ModelInfo& info);

// Reads `config` and checks it against the package: names, dtypes, dims and
// max_batch_size (Note [Batching along dim 0]). Throws kInvalidArgument
// naming the model, the tensor and what does not fit.
ModelConfig read_config(const nlohmann::json& config, const ModelInfo& info);

// Note [Generation models].
struct GenerationModelConfig {
  std::string name;
  bool decoupled = false;   // responses per token may be streamed
  int64_t max_batch_size = 0;
  int64_t max_sessions = 8;
  std::optional<int64_t> max_cache_len;
  std::vector<int64_t> eos_token_ids;  // for a package that records none
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;
  std::string model_filename = "model.pt2";
  std::map<std::string, ScalarType> inputs;   // configured name -> data type
  std::map<std::string, ScalarType> outputs;
};

// Whether `config` is a generation model's (Note [Generation models]);
// throws kInvalidArgument for "generation": "false" with decoupled.
bool is_generation_model(const nlohmann::json& config);
// With no inputs configured, lists every input of Note [Generation models]
// (INT32 token ids, as TensorRT-LLM's); with no outputs, both outputs.
// Returns whether anything changed.
bool autocomplete_generation(nlohmann::json& config);
// Reads and checks a generation model's configuration; throws
// kInvalidArgument naming what does not fit.
GenerationModelConfig read_generation_config(const nlohmann::json& config);

}  // namespace aotrt::triton
