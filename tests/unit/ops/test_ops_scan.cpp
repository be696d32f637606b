// The scan family (cumsum, cumprod, logcumsumexp, cummax, cummin) through the C ABI on
// every built backend, against torch eager's values, dtypes and strides
// (reference_scan.inc, from gen_ops_reference.py; Note [Scan semantics]).
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_scan.inc"

using WithDtype = AOTITorchError (*)(AtenTensorHandle, int64_t, int32_t*, AtenTensorHandle*);
using Plain = AOTITorchError (*)(AtenTensorHandle, int64_t, AtenTensorHandle*);
using TwoOut = AOTITorchError (*)(AtenTensorHandle, int64_t, AtenTensorHandle*, AtenTensorHandle*);

class OpsScan : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsScan, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  Tensor x = make_tensor(b, c.inputs[0]);
  std::vector<Tensor> outs(c.outputs.size());
  AOTITorchError rc;
  if (op == "cumsum" || op == "cumprod") {
    AOTRT_FIND_OP(f, WithDtype, b, op);
    int32_t dtype = static_cast<int32_t>(c.ints[1]);
    rc = f(x.get(), c.ints[0], c.ints[1] == kNone ? nullptr : &dtype, outs[0].out());
  } else if (op == "logcumsumexp") {
    AOTRT_FIND_OP(f, Plain, b, op);
    rc = f(x.get(), c.ints[0], outs[0].out());
  } else {
    AOTRT_FIND_OP(f, TwoOut, b, op);
    rc = f(x.get(), c.ints[0], outs[0].out(), outs[1].out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (size_t i = 0; i < outs.size(); ++i) {
    expect_matches(outs[i].get(), c.outputs[i], c.name + std::string(" output ") + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsScan, ::testing::ValuesIn(all_backends(kScanCases)),
                         backend_case_name);

// Enough lines for the parallel path: [300, 129] float64 small integers (exact sums)
// through a gapped view, scanned along dim 0 (long strided lines) and dim 1.
TEST(OpsScanLarge, ParallelLinesMatchASerialReference) {
  for (const Backend& b : built_backends()) {
    AOTRT_FIND_OP(f, WithDtype, b, "cumsum");
    const int64_t R = 300, C = 129;
    Values v{kF64, {R, C}, {C + 3, 1}, 2, {}};
    for (int64_t i = 0; i < R * C; ++i) v.values.push_back(static_cast<double>((i * 7 + 3) % 11) - 5);
    Tensor x = make_tensor(b, v);
    for (int64_t dim : {0, 1}) {
      Tensor out;
      const AOTITorchError rc = f(x.get(), dim, nullptr, out.out());
      AOTRT_SKIP_IF_NO_KERNEL(b, rc);
      ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
      std::vector<double> want(v.values);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t k = 0; k < C; ++k) {
          if (dim == 0 && r > 0) want[r * C + k] += want[(r - 1) * C + k];
          if (dim == 1 && k > 0) want[r * C + k] += want[r * C + k - 1];
        }
      expect_matches(out.get(), Values{kF64, {R, C}, {C, 1}, 0, want}, "dim " + std::to_string(dim));
    }
  }
}

TEST(OpsScanRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(cumsum, WithDtype, b, "cumsum");
  AOTRT_FIND_OP(lcse, Plain, b, "logcumsumexp");
  Tensor x = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor out;
  EXPECT_EQ(cumsum(x.get(), 2, nullptr, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("aoti_torch_cpu_cumsum: Dimension out of range"),
            std::string::npos) << aotrt_last_error();
  int32_t bad_dtype = 99;
  EXPECT_EQ(cumsum(x.get(), 0, &bad_dtype, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("argument 'dtype'"), std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(cumsum(nullptr, 0, nullptr, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("aoti_torch_cpu_cumsum: argument 'self'"),
            std::string::npos) << aotrt_last_error();
  Tensor i = make_tensor(b, Values{kI64, {3}, {1}, 0, {1, 2, 3}});
  EXPECT_EQ(lcse(i.get(), 0, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("floating-point"), std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(out.get(), nullptr);  // nothing handed out on failure
}

}  // namespace
}  // namespace aotrt::test
