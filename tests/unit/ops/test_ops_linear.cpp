// The linear family through the C ABI against torch eager's values, dtypes and strides
// (reference_linear.inc; Note [Linear semantics]): _addmm_activation, addmv, addbmm,
// _fused_rms_norm, _trilinear, F.linear_cross_entropy's chunked ops (through the proxy
// executor), and their refusals, on every built backend. On CUDA, addmv and float addbmm
// run through cuBLAS (the matmul family), integer addbmm through the integer matmul's
// kernel (ops/int_matmul.h), the others through their CUDA kernels.
#include <sstream>
#include <string>
#include <vector>

#include "ops_testing.h"
#include "proxy_testing.h"

namespace aotrt::test {
namespace {

#include "reference_linear.inc"

using AddmmAct = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, double,
                                    double, int32_t, AtenTensorHandle*);
using AddProduct = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                      double, double, AtenTensorHandle*);
using RmsNorm = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, AtenTensorHandle*,
                                   double*, AtenTensorHandle*, AtenTensorHandle*);
using Trilinear = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                     const int64_t*, int64_t, const int64_t*, int64_t,
                                     const int64_t*, int64_t, const int64_t*, int64_t, int64_t,
                                     AtenTensorHandle*);

class OpsLinear : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsLinear, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor out[2];
  AOTITorchError rc;
  if (op == "_addmm_activation") {
    AOTRT_FIND_OP(f, AddmmAct, b, op);
    rc = f(in[0].get(), in[1].get(), in[2].get(), c.floats[0], c.floats[1],
           static_cast<int32_t>(c.ints[0]), out[0].out());
  } else if (op == "addmv" || op == "addbmm") {
    AOTRT_FIND_OP(f, AddProduct, b, op);
    rc = f(in[0].get(), in[1].get(), in[2].get(), c.floats[0], c.floats[1], out[0].out());
  } else if (op == "_fused_rms_norm") {
    AOTRT_FIND_OP(f, RmsNorm, b, op);
    AtenTensorHandle w = in.size() > 1 ? in[1].get() : nullptr;
    double eps = c.floats.empty() ? 0.0 : c.floats[0];
    rc = f(in[0].get(), c.ints.data(), static_cast<int64_t>(c.ints.size()),
           in.size() > 1 ? &w : nullptr, c.floats.empty() ? nullptr : &eps, out[0].out(),
           out[1].out());
  } else {
    AOTRT_FIND_OP(f, Trilinear, b, op);
    std::vector<std::vector<int64_t>> lists;
    for (size_t i = 0; i < c.ints.size();) {
      const auto n = static_cast<size_t>(c.ints[i]);
      lists.emplace_back(c.ints.begin() + static_cast<int64_t>(i + 1),
                         c.ints.begin() + static_cast<int64_t>(i + 1 + n));
      i += 1 + n;
    }
    auto len = [&](int k) { return static_cast<int64_t>(lists[k].size()); };
    rc = f(in[0].get(), in[1].get(), in[2].get(), lists[0].data(), len(0), lists[1].data(),
           len(1), lists[2].data(), len(2), lists[3].data(), len(3), lists[4][0], out[0].out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    expect_matches(out[k].get(), c.outputs[k], std::string(c.name) + " output " + std::to_string(k));
  }
}

// linear_cross_entropy's rows run through the proxy executor below.
std::vector<OpCase> linear_cases(bool proxy) {
  return cases_where(
      kLinearCases, [](const OpCase& c) { return std::string(c.op) == "linear_cross_entropy"; },
      proxy);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsLinear, ::testing::ValuesIn(all_backends(linear_cases(false))),
                         backend_case_name);

// The nodes as torch 2.13 writes them for F.linear_cross_entropy with chunking options
// (the OpInfo variants .chunked and .chunked_none): reduction 'none' goes to the
// _no_reduction op.
ProxyResult run_linear_cross_entropy(const Backend& b, const std::vector<Tensor>& in,
                                     int64_t ignore, int64_t reduction, bool bias, bool weight,
                                     double smoothing, bool compute_input_grad = false) {
  const char* names[] = {"input", "linear_weight", "target"};
  std::string inputs = "[";
  std::vector<AtenTensorHandle> tensors;
  for (int k = 0; k < 3; ++k) {
    inputs += std::string(k ? ", " : "") + R"({"name": ")" + names[k] +
              R"(", "arg": {"as_tensor": {"name": "a)" + std::to_string(k) + "\"}}}";
    tensors.push_back(in[k].get());
  }
  size_t next = 3;
  for (const auto& [present, name] : {std::pair{bias, "linear_bias"}, std::pair{weight, "weight"}}) {
    inputs += std::string(R"(, {"name": ")") + name + R"(", "arg": )" +
              (present ? R"({"as_tensor": {"name": "o"}}})" : R"({"as_none": true}})");
    if (present) tensors.push_back(in[next++].get());
  }
  std::ostringstream smooth;
  smooth.precision(17);
  smooth << smoothing;
  const std::string tail = R"(, {"name": "batch_chunk_size", "arg": {"as_int": 2}},
      {"name": "acc_policy", "arg": {"as_string": "compact"}},
      {"name": "acc_dtype", "arg": {"as_scalar_type": 7}})";
  if (reduction == 0) {
    inputs += R"(, {"name": "ignore_index", "arg": {"as_int": )" + std::to_string(ignore) + "}}" +
              tail + "]";
    return run_proxy("torch_nn::_linear_cross_entropy_batch_chunked_no_reduction", inputs,
                     {ignore, 2}, tensors, 1, false, proxy_device(b));
  }
  inputs += std::string(R"(, {"name": "reduction", "arg": {"as_string": ")") +
            (reduction == 1 ? "mean" : "sum") + R"("}}, {"name": "ignore_index", "arg": {"as_int": )" +
            std::to_string(ignore) + R"(}}, {"name": "label_smoothing", "arg": {"as_float": )" +
            smooth.str() + "}}" + tail +
            R"(, {"name": "allow_retain_graph", "arg": {"as_bool": true}},
      {"name": "compute_input_grad", "arg": {"as_bool": )" +
            (compute_input_grad ? "true" : "false") + R"(}},
      {"name": "compute_linear_weight_grad", "arg": {"as_bool": false}},
      {"name": "compute_linear_bias_grad", "arg": {"as_bool": false}}])";
  return run_proxy("torch_nn::_linear_cross_entropy_batch_chunked", inputs, {ignore, 2}, tensors,
                   4, false, proxy_device(b));
}

class OpsLinearCrossEntropy : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsLinearCrossEntropy, MatchesTorchThroughTheProxyExecutor) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  ProxyResult r = run_linear_cross_entropy(b, in, c.ints[0], c.ints[1], c.ints[2] != 0,
                                           c.ints[3] != 0, c.floats[0]);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(r.outputs[0].get(), c.outputs[0], c.name);
  if (c.ints[1] != 0) {  // the gradients not asked for: empty, as the fake kernel's
    EXPECT_EQ(meta(r.outputs[1].get()).sizes, (Dims{0, 0}));
    EXPECT_EQ(meta(r.outputs[2].get()).sizes, (Dims{0, 0}));
    EXPECT_EQ(meta(r.outputs[3].get()).sizes, (Dims{0}));
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsLinearCrossEntropy,
                         ::testing::ValuesIn(all_backends(linear_cases(true))), backend_case_name);

TEST(OpsLinearCrossEntropyRefusals, NameTheOpAndTheArgument) {
  const Backend b = built_backends()[0];
  std::vector<Tensor> in;
  in.push_back(make_tensor(b, Values{kF32, {2, 2}, {2, 1}, 0, {1, 2, 3, 4}}));
  in.push_back(make_tensor(b, Values{kF32, {3, 2}, {2, 1}, 0, {1, 0, 0, 1, 1, 1}}));
  in.push_back(make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 3}}));
  ProxyResult r = run_linear_cross_entropy(b, in, -100, 1, false, false, 0.0);
  EXPECT_EQ(r.rc, AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("target 3 of row 1 is out of bounds (3 classes)"),
            std::string::npos)
      << aotrt_last_error();
  in[2] = make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 2}});
  r = run_linear_cross_entropy(b, in, -100, 1, false, false, 0.0, /*compute_input_grad=*/true);
  EXPECT_EQ(r.rc, AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error())
                .find("torch_nn::_linear_cross_entropy_batch_chunked (extern node 0): argument "
                      "'compute_input_grad' is true"),
            std::string::npos)
      << aotrt_last_error();
}

// On CUDA a target outside [0, C) is not refused (that would need the host to wait for the
// kernel): its row is skipped as an ignored one (Note [Cross-entropy targets on CUDA]).
TEST(OpsLinearCrossEntropyCuda, OutOfRangeTargetRowsAreSkipped) {
  AOTRT_SKIP_WITHOUT_CUDA();
  for (const Backend& b : built_backends()) {
    if (b.is_cpu()) continue;
    std::vector<Tensor> in;
    in.push_back(make_tensor(b, Values{kF32, {2, 2}, {2, 1}, 0, {1, 2, 3, 4}}));
    in.push_back(make_tensor(b, Values{kF32, {3, 2}, {2, 1}, 0, {1, 0, 0, 1, 1, 1}}));
    in.push_back(make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 3}}));
    ProxyResult r = run_linear_cross_entropy(b, in, -100, 0, false, false, 0.0);
    ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
    // Row 0: logits [1, 2, 3], log(e + e^2 + e^3) - 1; row 1 (target 3) skipped.
    expect_matches(r.outputs[0].get(), Values{kF32, {2}, {1}, 0, {2.40760596444438, 0}}, "loss");
  }
}

TEST(OpsLinearRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(act, AddmmAct, b, "_addmm_activation");
  AOTRT_FIND_OP(mv, AddProduct, b, "addmv");
  AOTRT_FIND_OP(bmm, AddProduct, b, "addbmm");
  AOTRT_FIND_OP(rms, RmsNorm, b, "_fused_rms_norm");
  AOTRT_FIND_OP(tri, Trilinear, b, "_trilinear");
  Tensor m = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor v3 = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 2, 3}});
  Tensor v2 = make_tensor(b, Values{kF32, {2}, {1}, 0, {1, 2}});
  Tensor v4 = make_tensor(b, Values{kF32, {4}, {1}, 0, {1, 2, 3, 4}});
  Tensor d3 = make_tensor(b, Values{kF64, {3}, {1}, 0, {1, 2, 3}});
  Tensor out;
  expect_refused(act(v3.get(), m.get(), m.get(), 1, 1, 0, out.out()), "aoti_torch_cpu__addmm_activation",
                 "cannot be multiplied");
  expect_refused(mv(v2.get(), m.get(), v2.get(), 1, 1, out.out()), "aoti_torch_cpu_addmv",
                 "cannot be multiplied");
  expect_refused(mv(v4.get(), m.get(), v3.get(), 1, 1, out.out()), "aoti_torch_cpu_addmv",
                 "self of sizes [4] cannot be broadcast to [2]");
  expect_refused(mv(v2.get(), m.get(), d3.get(), 1, 1, out.out()), "aoti_torch_cpu_addmv",
                 "vec is float64");
  expect_refused(bmm(v2.get(), m.get(), m.get(), 1, 1, out.out()), "aoti_torch_cpu_addbmm",
                 "batch1 must be 3-d");
  const int64_t ns[] = {2};
  expect_refused(rms(m.get(), ns, 1, nullptr, nullptr, out.out(), nullptr),
                 "aoti_torch_cpu__fused_rms_norm", "not the trailing sizes");
  Tensor mi = make_tensor(b, Values{kI32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  const int64_t ns3[] = {3};
  expect_refused(rms(mi.get(), ns3, 1, nullptr, nullptr, out.out(), nullptr),
                 "aoti_torch_cpu__fused_rms_norm", "input must be a floating-point tensor");
  const int64_t none[] = {0}, sum1[] = {1};
  expect_refused(tri(m.get(), m.get(), v3.get(), none, 0, none, 0, none, 0, sum1, 1, 1, out.out()),
                 "aoti_torch_cpu__trilinear", "expand3 gives i3 1 dims, i1 has 2");
  Tensor m32 = make_tensor(b, Values{kF32, {3, 2}, {2, 1}, 0, {1, 2, 3, 4, 5, 6}});
  expect_refused(tri(m.get(), m32.get(), m.get(), none, 0, none, 0, none, 0, sum1, 1, 1, out.out()),
                 "aoti_torch_cpu__trilinear", "sizes at dim 0 differ");
  expect_refused(tri(m.get(), m.get(), m.get(), none, 0, none, 0, none, 0, sum1, 1, 2, out.out()),
                 "aoti_torch_cpu__trilinear", "unroll_dim must be in [0, 1], got 2");
  EXPECT_EQ(out.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
