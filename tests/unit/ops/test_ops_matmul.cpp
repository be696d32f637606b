// The integer products of the matmul family (mm, addmm, bmm, baddbmm .out; Note
// [Integer matmul on the CPU]) through the C ABI, against torch eager's values
// (reference_matmul.inc, from gen_ops_reference.py): operands and out through
// strided views, wrap-around on overflow, beta and alpha cast to the integer type.
// ATen's CUDA matmul has no integer product, so the rows are CPU-only.
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_matmul.inc"

using Product = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);
using AddProduct = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                      AtenTensorHandle, double, double);

std::vector<std::string> all_names() {
  std::vector<std::string> names;
  for (const OpCase& c : kMatmulCases) names.emplace_back(c.name);
  return names;
}

class OpsMatmul : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsMatmul, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = std::string(c.op) + "_out";
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  AOTITorchError rc;
  if (c.floats.empty()) {
    AOTRT_FIND_OP(f, Product, b, op);
    rc = f(in[0].get(), in[1].get(), in[2].get());
  } else {
    AOTRT_FIND_OP(f, AddProduct, b, op);
    rc = f(in[0].get(), in[1].get(), in[2].get(), in[3].get(), c.floats[0], c.floats[1]);
  }
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(in[0].get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsMatmul,
                         ::testing::ValuesIn(all_backends(kMatmulCases, all_names())),
                         backend_case_name);

// Enough rows for the parallel loop: [2, 70, 33] @ [2, 33, 40] int32 through a
// transposed batch2, against a serial product that wraps in uint32.
TEST(OpsMatmulLarge, ParallelIntegerRowsMatchASerialReference) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Product, b, "bmm_out");
  const int64_t B = 2, M = 70, K = 33, N = 40;
  Values a{kI32, {B, M, K}, {M * K, K, 1}, 0, {}};
  Values w{kI32, {B, K, N}, {K * N, 1, K}, 0, {}};
  for (int64_t i = 0; i < B * M * K; ++i) a.values.push_back(static_cast<double>((i * 7919) % 100003 - 50000) * 40000);
  for (int64_t i = 0; i < B * K * N; ++i) w.values.push_back(static_cast<double>((i * 31) % 97) - 48);
  Tensor ta = make_tensor(b, a), tw = make_tensor(b, w);
  Tensor out = make_tensor(b, Values{kI32, {B, M, N}, {M * N, N, 1}, 0, std::vector<double>(B * M * N, 0)});
  ASSERT_EQ(f(out.get(), ta.get(), tw.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  // w's values are listed row-major over its sizes, whatever its strides.
  std::vector<double> want;
  for (int64_t p = 0; p < B; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        uint32_t s = 0;
        for (int64_t k = 0; k < K; ++k) {
          const auto x = static_cast<uint32_t>(static_cast<int64_t>(a.values[(p * M + i) * K + k]));
          const auto y = static_cast<uint32_t>(static_cast<int64_t>(w.values[(p * K + k) * N + j]));
          s += x * y;
        }
        want.push_back(static_cast<double>(static_cast<int32_t>(s)));
      }
  expect_matches(out.get(), Values{kI32, {B, M, N}, {M * N, N, 1}, 0, want}, "bmm int32");
}

TEST(OpsMatmulRefusals, BoolIsRefusedLikeATen) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Product, b, "mm_out");
  Tensor x = make_tensor(b, Values{kBool, {2, 2}, {2, 1}, 0, {1, 0, 1, 1}});
  Tensor out = make_tensor(b, Values{kBool, {2, 2}, {2, 1}, 0, {0, 0, 0, 0}});
  ASSERT_NE(f(out.get(), x.get(), x.get()), AOTI_TORCH_SUCCESS);
  const std::string msg = aotrt_last_error();
  EXPECT_NE(msg.find("aoti_torch_cpu_mm_out"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
}

}  // namespace
}  // namespace aotrt::test
