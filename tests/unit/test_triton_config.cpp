// config.pbtxt (as the server's JSON) read against a package's ModelInfo:
// auto-complete and the checks ModelInitialize makes (src/triton/config.h).
#include <gtest/gtest.h>

#include <string>

#include "triton/config.h"

namespace aotrt::triton {
namespace {

// A package like resnet_basic_block exported with --dynamic-batch 8.
ModelInfo batched_package() {
  ModelInfo info;
  info.input_names = {"arg18_1"};
  info.output_names = {"output0"};
  TensorSpec in{ScalarType::Float32, {2, 32, 32, 32}, {32768, 1024, 32, 1}, {{0, 2, 8}}};
  TensorSpec out{ScalarType::Float32, {2, 64, 16, 16}, {}, {{0, 2, 8}}};
  info.input_specs = {in};
  info.output_specs = {out};
  return info;
}

// A package like mm: two static inputs.
ModelInfo static_package() {
  ModelInfo info;
  info.input_names = {"arg0_1", "arg1_1"};
  info.output_names = {"output0"};
  info.input_specs = {TensorSpec{ScalarType::Float32, {3, 4}, {4, 1}, {}},
                      TensorSpec{ScalarType::Float32, {4, 5}, {5, 1}, {}}};
  info.output_specs = {TensorSpec{ScalarType::Float32, {3, 5}, {}, {}}};
  return info;
}

std::string refusal(const nlohmann::json& config, const ModelInfo& info) {
  try {
    read_config(config, info);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TritonConfig, DataTypesMapBothWays) {
  EXPECT_EQ(dtype_from_config("TYPE_FP32"), ScalarType::Float32);
  EXPECT_EQ(dtype_from_config("TYPE_BF16"), ScalarType::BFloat16);
  EXPECT_EQ(dtype_from_config("TYPE_STRING"), std::nullopt);
  EXPECT_EQ(dtype_from_server(TRITONSERVER_TYPE_INT64), ScalarType::Int64);
  EXPECT_EQ(dtype_from_server(TRITONSERVER_TYPE_BYTES), std::nullopt);
  EXPECT_STREQ(config_dtype_name(ScalarType::Float16), "TYPE_FP16");
  EXPECT_EQ(server_dtype(ScalarType::Bool), TRITONSERVER_TYPE_BOOL);
  EXPECT_THROW(server_dtype(ScalarType::Complex64), Error);
}

TEST(TritonConfig, AutocompleteFillsInputsOutputsAndBatch) {
  nlohmann::json config = {{"name", "resnet_block"}, {"max_batch_size", 0}};
  ASSERT_TRUE(autocomplete(config, batched_package()));
  EXPECT_EQ(config["max_batch_size"], 8);
  EXPECT_EQ(config["input"][0]["name"], "arg18_1");
  EXPECT_EQ(config["input"][0]["data_type"], "TYPE_FP32");
  EXPECT_EQ(config["input"][0]["dims"], nlohmann::json({32, 32, 32}));
  EXPECT_EQ(config["output"][0]["dims"], nlohmann::json({64, 16, 16}));
  const ModelConfig m = read_config(config, batched_package());
  EXPECT_EQ(m.max_batch_size, 8);
  EXPECT_EQ(m.min_batch, 2);
  // Already complete: nothing changes.
  EXPECT_FALSE(autocomplete(config, batched_package()));

  nlohmann::json mm = {{"name", "mm"}};
  ASSERT_TRUE(autocomplete(mm, static_package()));
  EXPECT_FALSE(mm.contains("max_batch_size"));
  EXPECT_EQ(mm["input"][1]["dims"], nlohmann::json({4, 5}));
  EXPECT_EQ(read_config(mm, static_package()).inputs.size(), 2u);
}

TEST(TritonConfig, ReadsDimsAsTheServerWritesThem) {
  // The server's JSON writes int64 values as strings.
  nlohmann::json config = {
      {"name", "mm"}, {"max_batch_size", 0},
      {"input", {{{"name", "arg1_1"}, {"data_type", "TYPE_FP32"}, {"dims", {"4", "5"}}},
                 {{"name", "arg0_1"}, {"data_type", "TYPE_FP32"}, {"dims", {"-1", "4"}}}}},
      {"output", {{{"name", "output0"}, {"data_type", "TYPE_FP32"}, {"dims", {"3", "5"}}}}},
      {"parameters", {{"cuda_graph", {{"string_value", "false"}}}}}};
  const ModelConfig m = read_config(config, static_package());
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.inputs[0].name, "arg0_1");  // package order
  EXPECT_EQ(m.inputs[0].dims, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(m.cuda_graph, CudaGraphMode::kOff);
  nlohmann::json absent = config;
  absent.erase("parameters");
  EXPECT_EQ(read_config(absent, static_package()).cuda_graph, CudaGraphMode::kAuto);
  nlohmann::json on = config;
  on["parameters"]["cuda_graph"]["string_value"] = "true";
  EXPECT_EQ(read_config(on, static_package()).cuda_graph, CudaGraphMode::kOn);
}

TEST(TritonConfig, RefusesWhatThePackageCannotServe) {
  nlohmann::json config = {{"name", "mm"}};
  autocomplete(config, static_package());
  nlohmann::json batched = config;
  batched["max_batch_size"] = 4;
  EXPECT_NE(refusal(batched, static_package()).find("needs a package whose dim 0 is a dynamic batch"),
            std::string::npos);

  nlohmann::json fp64 = config;
  fp64["input"][0]["data_type"] = "TYPE_FP64";
  EXPECT_NE(refusal(fp64, static_package()).find("is TYPE_FP64 but the package's is float32"),
            std::string::npos);

  nlohmann::json renamed = config;
  renamed["input"][0]["name"] = "INPUT__0";
  EXPECT_NE(refusal(renamed, static_package()).find("'INPUT__0' is not an input of the package"),
            std::string::npos);

  nlohmann::json missing = config;
  missing["input"].erase(1);
  EXPECT_NE(refusal(missing, static_package()).find("input 'arg1_1' is not in config.pbtxt"),
            std::string::npos);

  nlohmann::json wrong_dims = config;
  wrong_dims["input"][0]["dims"] = {3, 5};
  EXPECT_NE(refusal(wrong_dims, static_package()).find("do not fit the package's [3, 4]"),
            std::string::npos);

  nlohmann::json too_big = {{"name", "resnet_block"}, {"max_batch_size", 16}};
  autocomplete(too_big, batched_package());
  EXPECT_NE(refusal(too_big, batched_package()).find("takes batches of at most 8"),
            std::string::npos);

  nlohmann::json flag = config;
  flag["parameters"] = {{"cuda_graph", {{"string_value", "maybe"}}}};
  EXPECT_NE(refusal(flag, static_package()).find("parameter cuda_graph is 'maybe'"),
            std::string::npos);
}

TEST(TritonConfig, AutocompleteNeedsTheRecordedLayouts) {
  ModelInfo info = static_package();
  info.input_specs.clear();  // a package not exported by aotrt_tools
  nlohmann::json config = {{"name", "mm"}};
  try {
    autocomplete(config, info);
    ADD_FAILURE() << "auto-complete without recorded layouts";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must list the inputs"), std::string::npos) << e.what();
  }
}

// Note [Generation models].
std::string generation_refusal(const nlohmann::json& config) {
  try {
    read_generation_config(config);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

nlohmann::json decoupled(const char* name) {
  return {{"name", name}, {"model_transaction_policy", {{"decoupled", true}}}};
}

TEST(TritonGenerationConfig, DecoupledOrTheParameterMakesAGenerationModel) {
  EXPECT_TRUE(is_generation_model(decoupled("llm")));
  EXPECT_FALSE(is_generation_model({{"name", "mm"}}));
  nlohmann::json unary = {{"name", "llm"},
                          {"parameters", {{"generation", {{"string_value", "true"}}}}}};
  EXPECT_TRUE(is_generation_model(unary));
  nlohmann::json contradiction = decoupled("llm");
  contradiction["parameters"] = {{"generation", {{"string_value", "false"}}}};
  EXPECT_THROW(is_generation_model(contradiction), Error);
}

TEST(TritonGenerationConfig, AutocompleteListsTensorRTLLMsTensors) {
  nlohmann::json config = decoupled("llm");
  ASSERT_TRUE(autocomplete_generation(config));
  EXPECT_FALSE(autocomplete_generation(config));
  const GenerationModelConfig g = read_generation_config(config);
  EXPECT_TRUE(g.decoupled);
  EXPECT_EQ(g.max_sessions, 8);
  EXPECT_EQ(g.inputs.at("input_ids"), ScalarType::Int32);
  EXPECT_EQ(g.inputs.at("random_seed"), ScalarType::UInt64);
  EXPECT_EQ(g.inputs.at("streaming"), ScalarType::Bool);
  EXPECT_EQ(g.outputs.at("output_ids"), ScalarType::Int32);
  EXPECT_EQ(g.inputs.size(), 11u);
  EXPECT_EQ(g.outputs.size(), 2u);
  for (const auto& in : config["input"]) {
    const bool required = in["name"] == "input_ids" || in["name"] == "request_output_len";
    EXPECT_EQ(in.value("optional", false), !required) << in.dump();
  }
  EXPECT_EQ(config["output"][0]["dims"], nlohmann::json({-1, -1}));
}

TEST(TritonGenerationConfig, ReadsParametersAndDimsAsTheServerWritesThem) {
  nlohmann::json config = decoupled("llm");
  config["max_batch_size"] = "8";
  config["input"] = {{{"name", "input_ids"}, {"data_type", "TYPE_INT64"}, {"dims", {"-1"}}},
                     {{"name", "request_output_len"}, {"data_type", "TYPE_INT64"}, {"dims", {"1"}}}};
  config["output"] = {{{"name", "output_ids"}, {"data_type", "TYPE_INT64"}, {"dims", {"-1", "-1"}}}};
  config["parameters"] = {{"max_sessions", {{"string_value", "64"}}},
                          {"max_cache_len", {{"string_value", "1024"}}},
                          {"eos_token_ids", {{"string_value", "2, 32000"}}},
                          {"cuda_graph", {{"string_value", "false"}}}};
  const GenerationModelConfig g = read_generation_config(config);
  EXPECT_EQ(g.max_batch_size, 8);
  EXPECT_EQ(g.max_sessions, 64);
  EXPECT_EQ(g.max_cache_len, 1024);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{2, 32000}));
  EXPECT_EQ(g.cuda_graph, CudaGraphMode::kOff);
  EXPECT_EQ(g.inputs.at("input_ids"), ScalarType::Int64);
  EXPECT_FALSE(g.inputs.contains("streaming"));
}

TEST(TritonGenerationConfig, RefusesWhatItCannotServe) {
  nlohmann::json base = decoupled("llm");
  autocomplete_generation(base);

  nlohmann::json unknown = base;
  unknown["input"].push_back({{"name", "bad_words_list"}, {"data_type", "TYPE_INT32"}, {"dims", {2, -1}}});
  EXPECT_NE(generation_refusal(unknown).find("'bad_words_list' is not one a generation model serves"),
            std::string::npos);

  nlohmann::json fp_ids = base;
  fp_ids["input"][0]["data_type"] = "TYPE_FP32";
  EXPECT_NE(generation_refusal(fp_ids).find("takes TYPE_INT32 or TYPE_INT64"), std::string::npos)
      << generation_refusal(fp_ids);

  nlohmann::json no_length = base;
  no_length["input"].erase(2);  // request_output_len
  EXPECT_NE(generation_refusal(no_length).find("needs the input 'request_output_len'"),
            std::string::npos);

  nlohmann::json wide = base;
  wide["input"][2]["dims"] = {2};
  EXPECT_NE(generation_refusal(wide).find("dims [2]; expected [1]"), std::string::npos);

  nlohmann::json sessions = base;
  sessions["parameters"] = {{"max_sessions", {{"string_value", "0"}}}};
  EXPECT_NE(generation_refusal(sessions).find("max_sessions is 0"), std::string::npos);
  sessions["parameters"]["max_sessions"]["string_value"] = "many";
  EXPECT_NE(generation_refusal(sessions).find("'many' is not an integer"), std::string::npos);
}

}  // namespace
}  // namespace aotrt::triton
