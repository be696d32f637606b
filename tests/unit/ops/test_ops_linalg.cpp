// lu_unpack through the C ABI against torch eager's values, dtypes and strides
// (reference_linalg.inc, LU and pivots from torch.linalg.lu_factor), and its refusals. The
// LAPACK ops of the linalg family are tested end to end (tests/e2e/test_ops_linalg.py).
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_linalg.inc"

using LuUnpack = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int32_t, int32_t,
                                    AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*);

class OpsLinalg : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsLinalg, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  AOTRT_FIND_OP(f, LuUnpack, b, c.op);
  Tensor out[3];
  const AOTITorchError rc = f(in[0].get(), in[1].get(), static_cast<int32_t>(c.ints[0]),
                              static_cast<int32_t>(c.ints[1]), out[0].out(), out[1].out(),
                              out[2].out());
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const char* names[] = {"P", "L", "U"};
  for (int k = 0; k < 3; ++k) {
    expect_matches(out[k].get(), c.outputs[k], std::string(c.name) + " " + names[k]);
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsLinalg, ::testing::ValuesIn(all_backends(kLinalgCases)),
                         backend_case_name);

TEST(OpsLinalgRefusals, LuUnpackNamesTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, LuUnpack, b, "lu_unpack");
  Tensor lu = make_tensor(b, Values{kF32, {2, 2}, {2, 1}, 0, {1, 2, 3, 4}});
  Tensor p64 = make_tensor(b, Values{kI64, {2}, {1}, 0, {1, 2}});
  Tensor far = make_tensor(b, Values{kI32, {2}, {1}, 0, {3, 2}});
  Tensor short_p = make_tensor(b, Values{kI32, {1}, {1}, 0, {1}});
  Tensor out;
  auto refused = [&](AtenTensorHandle piv, const char* what) {
    expect_refused(f(lu.get(), piv, 1, 1, out.out(), nullptr, nullptr), "aoti_torch_cpu_lu_unpack",
                   what);
  };
  refused(p64.get(), "'LU_pivots' must be int32");
  refused(far.get(), "between 1 and LU_data.size(-2) = 2, got 3");
  refused(short_p.get(), "does not match LU_data");
  EXPECT_EQ(out.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
