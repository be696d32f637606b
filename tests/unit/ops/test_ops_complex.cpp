// Ops inductor leaves to the proxy executor for complex tensors (complex, _conj,
// _conj_physical, prims.convert_element_type, clone, constant_pad_nd) and index_add,
// called through aotrt's ProxyExecutor with the extern node AOTInductor writes for each
// (names and argument kinds as torch 2.13 serialises them), against torch eager's values,
// dtypes and strides (reference_complex.inc; Note [Conjugate views] in ops/pointwise.h).
// Complex inputs come as torch.view_as_real of them and are viewed back with
// view_as_complex; complex results are compared through view_as_real (complex32 ones
// through a complex64 copy of the same layout). complex, _conj and _conj_physical (the
// pointwise family) and clone, constant_pad_nd and convert_element_type (copies and fills)
// run on every built backend, and index_add too (on CUDA through the indexing family's
// atomic sums: its rows add values whose float sums are exact in any order).
#include <string>
#include <vector>

#include "ops_testing.h"
#include "proxy_testing.h"
#include "runtime/proxy_executor.h"

namespace aotrt::test {
namespace {

#include "reference_complex.inc"

using Unary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);

std::string tensor_arg(const std::string& name) {
  return R"({"name": ")" + name + R"(", "arg": {"as_tensor": {"name": ")" + name + R"("}}})";
}
std::string arg(const std::string& name, const std::string& value) {
  return R"({"name": ")" + name + R"(", "arg": )" + value + "}";
}
std::string ints_json(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// One extern node of `target` with these inputs (JSON), one tensor output.
std::string node_json(const std::string& target, const std::vector<std::string>& inputs) {
  std::string in;
  for (size_t i = 0; i < inputs.size(); ++i) in += (i ? ", " : "") + inputs[i];
  return R"({"nodes": [{"name": "buf0", "node": {"target": ")" + target +
         R"(", "inputs": [)" + in + R"(], "outputs": [{"as_tensor": {"name": "buf1"}}]}}]})";
}

// Runs the node with these tensors and run-time ints; the output lands in `out`.
AOTITorchError run_node(const std::string& json, std::vector<AtenTensorHandle> tensors,
                        std::vector<int64_t> ints, Tensor& out,
                        const std::string& device = "cpu") {
  runtime::ProxyExecutor ex(runtime::parse_extern_nodes(json, "test"), device, "test");
  EXPECT_EQ(aoti_torch_new_uninitialized_tensor(out.out()), AOTI_TORCH_SUCCESS);
  tensors.push_back(out.get());
  return aoti_torch_proxy_executor_call_function(
      ex.handle(), 0, static_cast<int>(ints.size()), ints.data(),
      static_cast<int>(tensors.size()), tensors.data());
}

class OpsComplex : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsComplex, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  const bool every_device = op == "complex" || op == "_conj" || op == "_conj_physical" ||
                            op == "clone" || op == "constant_pad_nd" ||
                            op == "convert_element_type" || op == "index_add";
  if (!b.is_cpu() && !every_device) GTEST_SKIP() << "a CPU proxy op";
  AOTRT_FIND_OP(as_real, Unary, b, "view_as_real");
  const std::vector<Tensor> in = make_inputs(b, c, c.ints[0]);
  if (::testing::Test::HasFailure()) return;
  std::vector<AtenTensorHandle> handles;
  for (const Tensor& t : in) handles.push_back(t.get());
  std::string json;
  std::vector<int64_t> ints;
  if (op == "complex") {
    json = node_json("aten::complex", {tensor_arg("real"), tensor_arg("imag")});
  } else if (op == "_conj" || op == "_conj_physical") {
    json = node_json("aten::" + op, {tensor_arg("self")});
  } else if (op == "convert_element_type") {
    json = node_json("prims::convert_element_type",
                     {tensor_arg("a"),
                      arg("dtype", R"({"as_scalar_type": )" + std::to_string(c.ints[1]) + "}")});
  } else if (op == "clone") {
    std::vector<std::string> args{tensor_arg("self")};
    if (c.ints[1] != kNone) {
      args.push_back(
          arg("memory_format", R"({"as_memory_format": )" + std::to_string(c.ints[1]) + "}"));
    }
    json = node_json("aten::clone", args);
  } else if (op == "constant_pad_nd") {
    ints.assign(c.ints.begin() + 2, c.ints.begin() + 2 + c.ints[1]);
    json = node_json("aten::constant_pad_nd",
                     {tensor_arg("self"), arg("pad", R"({"as_ints": )" + ints_json(ints) + "}"),
                      arg("value", R"({"as_float": )" + std::to_string(c.floats[0]) + "}")});
  } else if (op == "index_add") {
    ints = {c.ints[1]};
    json = node_json("aten::index_add",
                     {tensor_arg("self"), arg("dim", R"({"as_int": 0})"), tensor_arg("index"),
                      tensor_arg("source"),
                      arg("alpha", R"({"as_float": )" + std::to_string(c.floats[0]) + "}")});
  } else {
    FAIL() << "no extern node for " << op;
  }
  Tensor out;
  const AOTITorchError rc = run_node(json, handles, ints, out, proxy_device(b));
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  int32_t dtype = 0;
  ASSERT_EQ(aoti_torch_get_dtype(out.get(), &dtype), AOTI_TORCH_SUCCESS);
  if (dtype == 8) {  // complex32: numpy has none; compare a complex64 copy of its layout
    const Meta m = meta(out.get());
    Tensor wide = empty(b, m.sizes, m.strides, kC64);
    ASSERT_EQ(aoti_torch_copy_(wide.get(), out.get(), 0), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    out = std::move(wide);
    dtype = kC64;
  }
  if (dtype == kC64 || dtype == 10) {
    Tensor r;
    ASSERT_EQ(as_real(out.get(), r.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    out = std::move(r);
  }
  expect_matches(out.get(), c.outputs[0], c.name);
  // These ops move, negate or (index_add) sum values in the order and precision ATen
  // does: exact, which the dtype tolerance above (8e-3 for bfloat16) would not show.
  EXPECT_TRUE(same_values(values_of(out.get()), c.outputs[0].values, 0)) << c.name << ": exact";
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsComplex, ::testing::ValuesIn(all_backends(kComplexCases)),
                         backend_case_name);

// An expanded view (stride 0) shares its elements: _conj's copy of it holds each
// conjugated once, laid out as the view.
TEST(OpsComplexConj, ExpandedViewIsConjugatedOncePerElement) {
  const Backend b = built_backends()[0];
  if (!b.is_cpu()) GTEST_SKIP() << "CPU proxy ops";
  AOTRT_FIND_OP(as_complex, Unary, b, "view_as_complex");
  AOTRT_FIND_OP(as_real, Unary, b, "view_as_real");
  Tensor pairs = make_tensor(b, Values{kF32, {3, 2}, {2, 1}, 0, {1, 2, 3, -4, 0, 5}});
  Tensor z;
  ASSERT_EQ(as_complex(pairs.get(), z.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  Tensor expanded = reinterpret(z.get(), {2, 3}, {0, 1}, 0);
  Tensor out;
  ASSERT_EQ(run_node(node_json("aten::_conj", {tensor_arg("self")}), {expanded.get()}, {}, out),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(meta(out.get()).strides, (Dims{0, 1}));
  Tensor r;
  ASSERT_EQ(as_real(out.get(), r.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_TRUE(same_values(values_of(r.get()), {1, -2, 3, 4, 0, -5, 1, -2, 3, 4, 0, -5}, 0));
  // The input is untouched.
  EXPECT_TRUE(same_values(values_of(pairs.get()), {1, 2, 3, -4, 0, 5}, 0));
}

TEST(OpsComplexRefusals, NameTheOpAndWhatIsWrong) {
  const Backend b = built_backends()[0];
  if (!b.is_cpu()) GTEST_SKIP() << "CPU proxy ops";
  Tensor f = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor d = make_tensor(b, Values{kF64, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor i = make_tensor(b, Values{kI64, {3}, {1}, 0, {0, 1, -1}});
  Tensor fi = make_tensor(b, Values{kI32, {2}, {1}, 0, {1, 2}});
  Tensor src = make_tensor(b, Values{kF32, {3, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9}});
  Tensor out;
  const std::string cplx = node_json("aten::complex", {tensor_arg("real"), tensor_arg("imag")});
  expect_refused(run_node(cplx, {f.get(), d.get()}, {}, out), "aten::complex",
                 "Expected object of scalar type float32 but got scalar type float64");
  Tensor out2;
  expect_refused(run_node(cplx, {fi.get(), fi.get()}, {}, out2), "aten::complex",
                 "Expected both inputs to be Half, Float or Double tensors");
  Tensor out3;
  expect_refused(run_node(node_json("aten::_conj", {tensor_arg("self")}), {f.get()}, {}, out3),
                 "aten::_conj", "_conj of a float32 tensor");
  Tensor out4;
  const std::string cl = node_json(
      "aten::clone", {tensor_arg("self"), arg("memory_format", R"({"as_memory_format": 2})")});
  expect_refused(run_node(cl, {f.get()}, {}, out4), "aten::clone",
                 "required rank 4 tensor to use channels_last format");
  Tensor out5;
  const std::string unknown = node_json(
      "aten::clone", {tensor_arg("self"), arg("memory_format", R"({"as_memory_format": 0})")});
  expect_refused(run_node(unknown, {f.get()}, {}, out5), "aten::clone",
                 "serialised memory format 0");
  Tensor out6;
  const std::string ia = node_json(
      "aten::index_add", {tensor_arg("self"), arg("dim", R"({"as_int": 0})"),
                          tensor_arg("index"), tensor_arg("source")});
  Tensor self3 = make_tensor(b, Values{kF32, {3, 3}, {3, 1}, 0, {0, 0, 0, 0, 0, 0, 0, 0, 0}});
  // alpha, left out of the JSON at its default, still takes a run-time int (1).
  expect_refused(run_node(ia, {self3.get(), i.get(), src.get()}, {0, 1}, out6), "aten::index_add",
                 "index out of range in self");
  Tensor out7;
  expect_refused(run_node(ia, {self3.get(), i.get(), d.get()}, {0, 1}, out7), "aten::index_add",
                 "must have the same scalar type");
  Tensor out8;
  const std::string pad = node_json("aten::constant_pad_nd",
                                    {tensor_arg("self"), arg("pad", R"({"as_ints": [1, 2, 3]})"),
                                     arg("value", R"({"as_float": 0.5})")});
  expect_refused(run_node(pad, {f.get()}, {1, 2, 3}, out8), "aten::constant_pad_nd",
                 "Padding length must be divisible by 2");
  // A complex pad value is serialised as_complex, which the executor refuses at load.
  const std::string cpad = node_json(
      "aten::constant_pad_nd",
      {tensor_arg("self"), arg("pad", R"({"as_ints": [1, 1]})"),
       arg("value", R"({"as_complex": {"real": 1.0, "imag": 2.0}})")});
  EXPECT_NE(runtime::proxy_refusal(runtime::parse_extern_nodes(cpad, "t")[0], "cpu")
                .find("as_complex"),
            std::string::npos);
}

}  // namespace
}  // namespace aotrt::test
