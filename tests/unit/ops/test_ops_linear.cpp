// The linear family through the C ABI against torch eager's values, dtypes and strides
// (reference_linear.inc; Note [Linear semantics]): _addmm_activation, addmv, addbmm,
// _fused_rms_norm, _trilinear, and their refusals. CPU kernels only so far: on CUDA the
// rows report SKIPPED ("no CUDA kernel").
#include <string>
#include <vector>

#include "ops_testing.h"

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
           len(1), lists[2].data(), len(2), lists[3].data(), len(3), 1, out[0].out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    expect_matches(out[k].get(), c.outputs[k], std::string(c.name) + " output " + std::to_string(k));
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsLinear, ::testing::ValuesIn(all_backends(kLinearCases)),
                         backend_case_name);

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
  EXPECT_EQ(out.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
