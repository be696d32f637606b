// The reduce family through the C ABI against torch eager's values, dtypes and strides
// (reference_reduce.inc; Note [Reduce semantics]): c_shim_aten.h's device-generic amax.
// CPU kernels only so far: on CUDA the rows report SKIPPED ("no CUDA kernel").
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_reduce.inc"

using Amax = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, int32_t,
                                AtenTensorHandle*);

Amax find_amax() {
  return reinterpret_cast<Amax>(dlsym(RTLD_DEFAULT, "aoti_torch_aten_amax"));
}

class OpsReduce : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsReduce, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const Amax amax = find_amax();
  ASSERT_NE(amax, nullptr) << "aoti_torch_aten_amax is missing";
  Tensor x = make_tensor(b, c.inputs[0]);
  const std::vector<int64_t> dims(c.ints.begin() + 1, c.ints.end());
  Tensor out;
  const AOTITorchError rc = amax(x.get(), dims.data(), static_cast<int64_t>(dims.size()),
                                 static_cast<int32_t>(c.ints[0]), out.out());
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsReduce, ::testing::ValuesIn(all_backends(kReduceCases)),
                         backend_case_name);

TEST(OpsReduceRefusals, AmaxNamesTheFunctionAndWhatIsWrong) {
  const Backend b = built_backends()[0];
  const Amax amax = find_amax();
  ASSERT_NE(amax, nullptr);
  Tensor x = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor e = make_tensor(b, Values{kF32, {0, 3}, {3, 1}, 0, {}});
  Tensor z = make_tensor(b, Values{kF32, {3, 2}, {2, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor zc;
  AOTRT_FIND_OP(as_complex, AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*), b,
                "view_as_complex");
  ASSERT_EQ(as_complex(z.get(), zc.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  Tensor out;
  const int64_t twice[] = {1, -1}, zero[] = {0}, far[] = {2};
  expect_refused(amax(x.get(), twice, 2, 0, out.out()), "aoti_torch_aten_amax",
                 "dim 1 appears multiple times in the list of dims");
  expect_refused(amax(e.get(), zero, 1, 0, out.out()), "aoti_torch_aten_amax",
                 "Expected reduction dim 0 to have non-zero size");
  expect_refused(amax(e.get(), nullptr, 0, 0, out.out()), "aoti_torch_aten_amax",
                 "Expected reduction dim 0 to have non-zero size");
  expect_refused(amax(x.get(), far, 1, 0, out.out()), "aoti_torch_aten_amax",
                 "Dimension out of range");
  expect_refused(amax(zc.get(), zero, 1, 0, out.out()), "aoti_torch_aten_amax",
                 "not implemented for 'complex64'");
  expect_refused(amax(nullptr, zero, 1, 0, out.out()), "aoti_torch_aten_amax", "self");
  EXPECT_EQ(out.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
