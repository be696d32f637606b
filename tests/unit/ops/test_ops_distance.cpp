// The distance family (_cdist_forward, _pdist_forward) on every built backend against
// torch eager's values, dtypes and strides (reference_distance.inc, from
// gen_ops_reference.py; Note [Distance semantics]): every p (0, 1, 2, 3, inf, 1.5),
// strided and offset views, broadcast batch dims, ATen's matmul path, NaN, empty inputs.
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_distance.inc"

using Cdist = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, double, int64_t*,
                                 AtenTensorHandle*);
using Pdist = AOTITorchError (*)(AtenTensorHandle, double, AtenTensorHandle*);

class OpsDistance : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsDistance, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor out;
  AOTITorchError rc;
  if (std::string(c.op) == "_cdist_forward") {
    AOTRT_FIND_OP(f, Cdist, b, c.op);
    int64_t mode = c.ints[0];
    rc = f(in[0].get(), in[1].get(), c.floats[0], mode == kNone ? nullptr : &mode, out.out());
  } else {
    AOTRT_FIND_OP(f, Pdist, b, c.op);
    rc = f(in[0].get(), c.floats[0], out.out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsDistance, ::testing::ValuesIn(all_backends(kDistanceCases)),
                         backend_case_name);

// An empty [n, 0] input whose n (n - 1) / 2 pairs do not fit int64 (found by fuzz_op_shims):
// refused, naming the output size, on every backend.
TEST(OpsDistanceRefusals, PdistPairsThatOverflowAreRefused) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    AOTRT_FIND_OP(f, Pdist, b, "_pdist_forward");
    for (int64_t n : {int64_t{1} << 40, (int64_t{1} << 40) + 1}) {
      Tensor x = make_tensor(b, Values{kF32, {n, 0}, {0, 1}, 0, {}});
      Tensor out;
      EXPECT_EQ(f(x.get(), 2.0, out.out()), AOTI_TORCH_FAILURE) << n;
      EXPECT_NE(std::string(aotrt_last_error()).find("pdist's output size"), std::string::npos)
          << aotrt_last_error();
    }
  }
}

}  // namespace
}  // namespace aotrt::test
