// The proxy executor (runtime/proxy_executor.h): reading AOTInductor's
// extern-node JSON, the flat argument layout, binding to registered ops, and
// the refusals made before a model runs. The JSON below is what torch 2.13
// wrote for torch.linalg.inv and torch.unique_consecutive (trimmed of
// metadata), plus hand-made nodes for the argument kinds they lack.
#include <limits>
#include <cmath>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aotrt/shim.h"
#include "core/error.h"
#include "core/handles.h"
#include "runtime/proxy_executor.h"
#include "shim/boundary.h"

using namespace aotrt;
using namespace aotrt::runtime;

namespace {

const char* kTorchJson = R"({"nodes": [
 {"name": "buf0", "node": {"target": "aten::linalg_inv_ex",
   "inputs": [{"name": "A", "arg": {"as_tensor": {"name": "arg1_1"}}, "kind": 1}],
   "outputs": [{"as_tensor": {"name": "buf1"}}, {"as_tensor": {"name": "buf2"}}]}},
 {"name": "buf3", "node": {"target": "aten::_linalg_check_errors",
   "inputs": [{"name": "info", "arg": {"as_tensor": {"name": "buf2"}}, "kind": 1},
              {"name": "api_name", "arg": {"as_string": "linalg.inv"}, "kind": 1},
              {"name": "is_matrix", "arg": {"as_bool": true}, "kind": 2}],
   "outputs": []}},
 {"name": "buf4", "node": {"target": "aten::unique_consecutive",
   "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "arg2_1"}}, "kind": 1},
              {"name": "return_inverse", "arg": {"as_bool": true}, "kind": 1},
              {"name": "return_counts", "arg": {"as_bool": true}, "kind": 1},
              {"name": "dim", "arg": {"as_none": true}, "kind": 1}],
   "outputs": [{"as_tensor": {"name": "buf5"}}, {"as_tensor": {"name": "buf6"}},
               {"as_tensor": {"name": "buf7"}}]}}]})";

TEST(ProxyExecutor, FlattensArgumentsAsInductorDoes) {
  const std::vector<ExternNode> nodes = parse_extern_nodes(kTorchJson, "test");
  ASSERT_EQ(nodes.size(), 3u);
  // linalg_inv_ex: input A, then its two outputs' handles.
  EXPECT_EQ(nodes[0].target, "aten::linalg_inv_ex");
  EXPECT_EQ(nodes[0].num_tensors, 3);
  EXPECT_EQ(nodes[0].num_ints, 0);
  EXPECT_EQ(nodes[0].outputs[0].tensor_begin, 1);
  EXPECT_EQ(nodes[0].outputs[1].tensor_begin, 2);
  // Strings and bools are static; as_none takes no slot.
  EXPECT_EQ(nodes[1].num_tensors, 1);
  EXPECT_EQ(nodes[2].num_tensors, 4);
  EXPECT_EQ(nodes[2].num_ints, 0);
}

TEST(ProxyExecutor, IntsAndOptionalTensorListsTakeRunTimeSlots) {
  const char* json = R"({"nodes": [{"name": "b", "node": {"target": "aten::x",
    "inputs": [{"name": "a", "arg": {"as_int": 3}},
               {"name": "l", "arg": {"as_ints": [1, 2, 3]}},
               {"name": "s", "arg": {"as_sym_int": {"as_name": "s0"}}},
               {"name": "t", "arg": {"as_optional_tensors": [{"as_tensor": {"name": "x"}},
                                                               {"as_none": true},
                                                               {"as_tensor": {"name": "y"}}]}},
               {"name": "f", "arg": {"as_float": 0.5}},
               {"name": "d", "arg": {"as_scalar_type": 7}}],
    "outputs": [{"as_tensors": [{"name": "o1"}, {"name": "o2"}]}, {"as_none": true}]}}]})";
  const std::vector<ExternNode> nodes = parse_extern_nodes(json, "test");
  ASSERT_EQ(nodes.size(), 1u);
  const ExternNode& n = nodes[0];
  EXPECT_EQ(n.num_ints, 5);     // 1 + 3 + 1
  EXPECT_EQ(n.num_tensors, 4);  // two present optionals, two list outputs
  EXPECT_EQ(n.inputs[1].int_begin, 1);
  EXPECT_EQ(n.inputs[2].int_begin, 4);
  EXPECT_EQ(n.outputs[0].tensor_begin, 2);
  EXPECT_EQ(n.outputs[0].tensor_count, 2);
  EXPECT_EQ(n.outputs[1].tensor_count, 0);
  EXPECT_TRUE(n.unsupported.empty());
}

// Note [Non-finite floats in the extern-node JSON]: torch 2.13 writes inf as
// the string "Infinity"; Python's json.dumps (older serializers) as the bare
// token, which is not JSON. Both read back as the value; the same words inside
// a string are left alone.
TEST(ProxyExecutor, ReadsNonFiniteFloatsAsTorchWritesThem) {
  const char* json = R"({"nodes": [{"name": "b", "node": {"target": "aten::x",
    "inputs": [{"name": "a", "arg": {"as_float": Infinity}},
               {"name": "b", "arg": {"as_float": -Infinity}},
               {"name": "c", "arg": {"as_float": NaN}},
               {"name": "d", "arg": {"as_float": "-Infinity"}},
               {"name": "e", "arg": {"as_floats": [1.5, Infinity, "NaN"]}},
               {"name": "f", "arg": {"as_string": "NaN \" Infinity"}}],
    "outputs": []}}]})";
  const std::vector<ExternNode> nodes = parse_extern_nodes(json, "test");
  ASSERT_EQ(nodes.size(), 1u);
  const std::vector<ProxyArg>& in = nodes[0].inputs;
  ASSERT_EQ(in.size(), 6u);
  EXPECT_TRUE(nodes[0].unsupported.empty()) << nodes[0].unsupported;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(std::get<double>(in[0].value), inf);
  EXPECT_EQ(std::get<double>(in[1].value), -inf);
  EXPECT_TRUE(std::isnan(std::get<double>(in[2].value)));
  EXPECT_EQ(std::get<double>(in[3].value), -inf);
  const auto& e = std::get<std::vector<double>>(in[4].value);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0], 1.5);
  EXPECT_EQ(e[1], inf);
  EXPECT_TRUE(std::isnan(e[2]));
  EXPECT_EQ(std::get<std::string>(in[5].value), "NaN \" Infinity");
}

TEST(ProxyExecutor, RefusesMalformedJsonNamingTheFile) {
  EXPECT_THROW(
      {
        try {
          parse_extern_nodes("{\"nodes\": 3}", "pkg.pt2: x.wrapper.json");
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("x.wrapper.json"), std::string::npos);
          throw;
        }
      },
      Error);
  EXPECT_THROW(parse_extern_nodes("not json", "f"), Error);
}

TEST(ProxyExecutor, RefusesUnservedOpsBeforeAnyRunNamingEach) {
  const char* json = R"({"nodes": [
    {"name": "a", "node": {"target": "aten::no_such_op", "inputs": [], "outputs": []}},
    {"name": "b", "node": {"target": "my::custom", "inputs": [
       {"name": "obj", "arg": {"as_custom_obj": {"name": "o", "class_fqn": "c"}}}],
       "outputs": []}}]})";
  try {
    ProxyExecutor ex(parse_extern_nodes(json, "t"), "cpu", "package p.pt2");
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("package p.pt2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aten::no_such_op"), std::string::npos) << msg;
    EXPECT_NE(msg.find("my::custom"), std::string::npos) << msg;
    EXPECT_NE(msg.find("as_custom_obj"), std::string::npos) << msg;
  }
}

// A test op: out0 = a view of `self` (same storage) narrowed to `n` elements,
// with a default for n and the scale read as a float.
int64_t g_seen_n = -1;
double g_seen_scale = 0;
AOTRT_PROXY_OP("aotrt_test::head", {"self", "n", "scale"}, kProxyCpu, [](ProxyCall& c) {
  const TensorImpl& self = c.tensor("self");
  g_seen_n = c.int_arg("n", 2);
  g_seen_scale = c.float_arg("scale", 1.0);
  const int64_t size[] = {g_seen_n}, stride[] = {self.strides()[0]};
  c.set_output(0, make_tensor(self.storage(), size, stride, self.storage_offset(), self.dtype(),
                              c.what()));
});

TEST(ProxyExecutor, CallsTheOpAndAliasesItsResultIntoTheOutputHandle) {
  const char* json = R"({"nodes": [{"name": "b", "node": {"target": "aotrt_test::head",
    "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
               {"name": "n", "arg": {"as_int": 3}},
               {"name": "scale", "arg": {"as_float": 0.25}}],
    "outputs": [{"as_tensor": {"name": "o"}}]}}]})";
  ProxyExecutor ex(parse_extern_nodes(json, "t"), "cpu", "test");
  float data[5] = {1, 2, 3, 4, 5};
  const int64_t sizes[] = {5}, strides[] = {1};
  AtenTensorHandle x = nullptr, out = nullptr;
  ASSERT_EQ(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, 0, 6, 0, 0, &x),
            AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(&out), AOTI_TORCH_SUCCESS);
  int64_t ints[] = {4};  // the run-time value wins over the JSON's 3
  AtenTensorHandle tensors[] = {x, out};
  ASSERT_EQ(aoti_torch_proxy_executor_call_function(ex.handle(), 0, 1, ints, 2, tensors),
            AOTI_TORCH_SUCCESS)
      << last_error();
  EXPECT_EQ(g_seen_n, 4);
  EXPECT_EQ(g_seen_scale, 0.25);
  int64_t numel = 0;
  void* p = nullptr;
  aoti_torch_get_numel(out, &numel);
  aoti_torch_get_data_ptr(out, &p);
  EXPECT_EQ(numel, 4);
  EXPECT_EQ(p, data);
  aoti_torch_delete_tensor_object(out);
  aoti_torch_delete_tensor_object(x);
}

// Static ScalarType and MemoryFormat arguments, in torch.export's serialised codes
// (as clone(memory_format=...) and prims.convert_element_type carry them).
std::optional<MemoryFormat> g_seen_format;
ScalarType g_seen_dtype = ScalarType::Bool;
AOTRT_PROXY_OP("aotrt_test::formats", {"self", "dtype", "memory_format"}, kProxyCpu,
               [](ProxyCall& c) {
                 g_seen_dtype = c.dtype("dtype");
                 g_seen_format = c.optional_memory_format("memory_format");
                 const TensorImpl& self = c.tensor("self");
                 c.set_output(0, make_tensor(self.storage(), self.sizes(), self.strides(),
                                             self.storage_offset(), self.dtype(), c.what()));
               });

AOTITorchError call_formats(const std::string& extra) {
  const std::string json = R"({"nodes": [{"name": "b", "node": {"target": "aotrt_test::formats",
    "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}})" + extra +
                           R"(], "outputs": [{"as_tensor": {"name": "o"}}]}}]})";
  ProxyExecutor ex(parse_extern_nodes(json, "t"), "cpu", "test");
  float data[2] = {1, 2};
  const int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle x = nullptr, out = nullptr;
  aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, 0, 6, 0, 0, &x);
  aoti_torch_new_uninitialized_tensor(&out);
  AtenTensorHandle tensors[] = {x, out};
  const AOTITorchError rc =
      aoti_torch_proxy_executor_call_function(ex.handle(), 0, 0, nullptr, 2, tensors);
  aoti_torch_delete_tensor_object(out);
  aoti_torch_delete_tensor_object(x);
  return rc;
}

TEST(ProxyExecutor, DecodesScalarTypesAndMemoryFormats) {
  const std::string dtype = R"(, {"name": "dtype", "arg": {"as_scalar_type": 10}})";
  auto format = [](int code) {
    return R"(, {"name": "memory_format", "arg": {"as_memory_format": )" + std::to_string(code) +
           "}}";
  };
  ASSERT_EQ(call_formats(dtype + format(2)), AOTI_TORCH_SUCCESS) << last_error();
  EXPECT_EQ(g_seen_dtype, ScalarType::Complex64);
  EXPECT_EQ(g_seen_format, MemoryFormat::ChannelsLast);
  ASSERT_EQ(call_formats(R"(, {"name": "dtype", "arg": {"as_scalar_type": 9}})" + format(1)),
            AOTI_TORCH_SUCCESS)
      << last_error();
  EXPECT_EQ(g_seen_dtype, ScalarType::Complex32);
  EXPECT_EQ(g_seen_format, MemoryFormat::Contiguous);
  ASSERT_EQ(call_formats(dtype + format(3)), AOTI_TORCH_SUCCESS) << last_error();
  EXPECT_EQ(g_seen_format, MemoryFormat::ChannelsLast3d);
  // preserve_format, None and a left-out argument all mean "keep the layout".
  ASSERT_EQ(call_formats(dtype + format(4)), AOTI_TORCH_SUCCESS) << last_error();
  EXPECT_FALSE(g_seen_format.has_value());
  ASSERT_EQ(call_formats(dtype + R"(, {"name": "memory_format", "arg": {"as_none": true}})"),
            AOTI_TORCH_SUCCESS)
      << last_error();
  EXPECT_FALSE(g_seen_format.has_value());
  ASSERT_EQ(call_formats(dtype), AOTI_TORCH_SUCCESS) << last_error();
  EXPECT_FALSE(g_seen_format.has_value());
  // Unknown (0), an unknown code, a missing or None dtype: refused naming the argument.
  EXPECT_EQ(call_formats(dtype + format(0)), AOTI_TORCH_FAILURE);
  EXPECT_NE(last_error().find("argument 'memory_format' has serialised memory format 0"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(call_formats(R"(, {"name": "dtype", "arg": {"as_scalar_type": 99}})"),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(last_error().find("serialised dtype code 99"), std::string::npos) << last_error();
  EXPECT_EQ(call_formats(""), AOTI_TORCH_FAILURE);
  EXPECT_NE(last_error().find("argument 'dtype' (ScalarType) is missing"), std::string::npos)
      << last_error();
  EXPECT_EQ(call_formats(R"(, {"name": "dtype", "arg": {"as_none": true}})"),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(last_error().find("argument 'dtype' (ScalarType) is None"), std::string::npos)
      << last_error();
}

// A keyword-only int default left out of the JSON still takes its run-time slot, where the
// schema has it: torch 2.13 serialises index_add(a, 0, i, s) without alpha but passes
// ints {dim, alpha} = {0, 1}.
int64_t g_seen_dim = -1, g_seen_k = -1, g_seen_alpha = -1;
AOTRT_PROXY_OP("aotrt_test::kwdefault", {"self", "dim", "alpha", "k"}, kProxyCpu,
               [](ProxyCall& c) {
                 g_seen_dim = c.int_arg("dim");
                 g_seen_alpha = c.int_arg("alpha");
                 g_seen_k = c.int_arg("k");
                 const TensorImpl& self = c.tensor("self");
                 c.set_output(0, make_tensor(self.storage(), self.sizes(), self.strides(),
                                             self.storage_offset(), self.dtype(), c.what()));
               },
               {{"alpha", 1}});

TEST(ProxyExecutor, LeftOutRunTimeDefaultsKeepTheirSlots) {
  const char* json = R"({"nodes": [{"name": "b", "node": {"target": "aotrt_test::kwdefault",
    "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
               {"name": "dim", "arg": {"as_int": 0}},
               {"name": "k", "arg": {"as_int": 5}}],
    "outputs": [{"as_tensor": {"name": "o"}}]}}]})";
  EXPECT_EQ(parse_extern_nodes(json, "t")[0].num_ints, 2);  // as written
  ProxyExecutor ex(parse_extern_nodes(json, "t"), "cpu", "test");
  float data[2] = {1, 2};
  const int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle x = nullptr, out = nullptr;
  ASSERT_EQ(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, 0, 6, 0, 0, &x),
            AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(&out), AOTI_TORCH_SUCCESS);
  int64_t ints[] = {1, 3, 7};  // dim, alpha (the default the wrapper fills), k
  AtenTensorHandle tensors[] = {x, out};
  ASSERT_EQ(aoti_torch_proxy_executor_call_function(ex.handle(), 0, 3, ints, 2, tensors),
            AOTI_TORCH_SUCCESS)
      << last_error();
  EXPECT_EQ(g_seen_dim, 1);
  EXPECT_EQ(g_seen_alpha, 3);
  EXPECT_EQ(g_seen_k, 7);
  // Two ints (the JSON's count without the default) no longer fit the call.
  EXPECT_EQ(aoti_torch_proxy_executor_call_function(ex.handle(), 0, 2, ints, 2, tensors),
            AOTI_TORCH_FAILURE);
  aoti_torch_delete_tensor_object(out);
  aoti_torch_delete_tensor_object(x);
}

TEST(ProxyExecutor, RefusesACallWhoseCountsDisagreeWithTheJson) {
  const char* json = R"({"nodes": [{"name": "b", "node": {"target": "aotrt_test::head",
    "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}}],
    "outputs": [{"as_tensor": {"name": "o"}}]}}]})";
  ProxyExecutor ex(parse_extern_nodes(json, "t"), "cpu", "test");
  AtenTensorHandle tensors[] = {nullptr, nullptr, nullptr};
  EXPECT_EQ(aoti_torch_proxy_executor_call_function(ex.handle(), 0, 0, nullptr, 3, tensors),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(last_error().find("aotrt_test::head (extern node 0) was called with 0 ints and 3 "
                              "tensors; its JSON describes 0 and 2"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(aoti_torch_proxy_executor_call_function(ex.handle(), 7, 0, nullptr, 2, tensors),
            AOTI_TORCH_FAILURE);
  EXPECT_EQ(aoti_torch_proxy_executor_call_function(nullptr, 0, 0, nullptr, 2, tensors),
            AOTI_TORCH_FAILURE);
}

TEST(ProxyExecutor, RefusesAnArgumentTheOpDoesNotTakeAndADeviceItLacks) {
  const char* json = R"({"nodes": [{"name": "b", "node": {"target": "aotrt_test::head",
    "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
               {"name": "bogus", "arg": {"as_bool": true}}],
    "outputs": [{"as_tensor": {"name": "o"}}]}}]})";
  const std::vector<ExternNode> nodes = parse_extern_nodes(json, "t");
  EXPECT_NE(proxy_refusal(nodes[0], "cpu").find("argument 'bogus'"), std::string::npos);
  const char* ok = R"({"nodes": [{"name": "b", "node": {"target": "aotrt_test::head",
    "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}}],
    "outputs": [{"as_tensor": {"name": "o"}}]}}]})";
  const std::vector<ExternNode> good = parse_extern_nodes(ok, "t");
  EXPECT_EQ(proxy_refusal(good[0], "cpu"), "");
  EXPECT_NE(proxy_refusal(good[0], "cuda").find("no cuda kernel"), std::string::npos);
}

}  // namespace
