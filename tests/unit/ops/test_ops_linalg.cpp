// lu_unpack through the C ABI against torch eager's values, dtypes and strides
// (reference_linalg.inc, LU and pivots from torch.linalg.lu_factor), and its refusals. The
// LAPACK ops of the linalg family are tested end to end (tests/e2e/test_ops_linalg.py); the
// refusals of the proxy-executor ops, which have no C entry point, are checked here on the
// family's functions (ops/linalg.h), as the executor calls them.
#include <string>
#include <vector>

#include "aotrt/error.h"
#include "core/handles.h"
#include "ops/linalg.h"
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

// The family function's error names `fn` and contains `what`.
template <class Call>
void expect_throws(Call&& call, const char* what) {
  try {
    call();
    ADD_FAILURE() << "expected a refusal containing: " << what;
  } catch (const ::aotrt::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("proxy: op"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(OpsLinalgRefusals, ProxyOpsNameTheArgumentAndWhatIsWrong) {
  const Backend b = built_backends()[0];
  const char* fn = "proxy: op";
  Tensor wide = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor square = make_tensor(b, Values{kF32, {2, 2}, {2, 1}, 0, {2, 1, 1, 2}});
  Tensor square64 = make_tensor(b, Values{kF64, {2, 2}, {2, 1}, 0, {2, 1, 1, 2}});
  Tensor ints = make_tensor(b, Values{kI64, {2, 2}, {2, 1}, 0, {1, 2, 3, 4}});
  Tensor cplx = make_tensor(b, Values{kC64, {2, 2}, {2, 1}, 0, {1, 0, 2, 0, 3, 0, 4, 0}});
  Tensor vec = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 2, 3}});
  Tensor piv64 = make_tensor(b, Values{kI64, {2}, {1}, 0, {1, 2}});
  Tensor piv = make_tensor(b, Values{kI32, {2}, {1}, 0, {1, 2}});
  Tensor tau = make_tensor(b, Values{kF32, {1}, {1}, 0, {1}});
  auto t = [](const Tensor& x) -> const TensorImpl& { return *handle_lookup(x.get()); };
  expect_throws([&] { ops::eigh(t(wide), "L", true, fn); },
                "argument 'A' must be batches of square matrices, but they are 2 by 3");
  expect_throws([&] { ops::eigh(t(square), "X", true, fn); }, "UPLO argument to be 'L' or 'U'");
  expect_throws([&] { ops::eig(t(cplx), fn); },
                "argument 'self' is complex64; aotrt's linear algebra serves float32 and float64");
  expect_throws([&] { ops::svd(t(ints), false, true, false, fn); },
                "argument 'A' is int64; aotrt's linear algebra serves float32 and float64");
  expect_throws([&] { ops::svd(t(square), false, true, true, fn); },
                "`driver=` is only supported on CUDA inputs");
  expect_throws([&] { ops::svd(t(vec), false, true, false, fn); },
                "argument 'A' must have at least 2 dimensions");
  expect_throws([&] { ops::qr(t(wide), "economic", fn); }, "unrecognized mode 'economic'");
  expect_throws([&] { ops::qr(t(cplx), "reduced", fn); }, "argument 'A' is complex64");
  expect_throws([&] { ops::householder_product(t(wide), t(tau), fn); },
                "input.shape[-2] must be greater than or equal to input.shape[-1]");
  expect_throws([&] { ops::lu(t(square), false, fn); }, "LU without pivoting");
  expect_throws([&] { ops::lu_solve(t(square), t(piv64), t(square), true, false, fn); },
                "argument 'pivots' must be int32, got int64");
  expect_throws([&] { ops::lu_solve(t(square), t(piv), t(square64), true, false, fn); },
                "expected 'LU' and 'B' to have the same dtype");
  expect_throws([&] { ops::lu_solve(t(square), t(piv), t(wide), false, false, fn); },
                "Incompatible shapes of A and B for the equation XA = B");
  expect_throws([&] { ops::ldl_solve(t(square), t(tau), t(square), false, fn); },
                "argument 'pivots' must be int32, got float32");
  expect_throws([&] { ops::ldl_factor_ex(t(wide), false, false, fn); },
                "argument 'self' must be batches of square matrices");
  expect_throws([&] { ops::cholesky(t(wide), false, fn); }, "must be batches of square matrices");
  expect_throws([&] { ops::pinv(t(wide), &t(cplx), nullptr, false, fn); },
                "atol tensor of complex type is not supported");
  expect_throws([&] { ops::pinv(t(wide), nullptr, nullptr, true, fn); },
                "argument 'self' must be batches of square matrices");
}

TEST(OpsLinalgRefusals, CholeskyRaisesAtensErrorAndSvdKeepsAtensLayout) {
  const Backend b = built_backends()[0];
  Tensor indefinite = make_tensor(b, Values{kF64, {2, 2}, {2, 1}, 0, {1, 2, 2, 1}});
  expect_throws([&] { ops::cholesky(*handle_lookup(indefinite.get()), false, "proxy: op"); },
                "cholesky: The factorization could not be completed because the input is not "
                "positive-definite (the leading minor of order 2 is not positive-definite).");
  // A transposed (column-major) view in, U column-major out, as ATen's.
  Tensor tall = make_tensor(b, Values{kF32, {3, 2}, {1, 3}, 0, {1, 2, 3, 4, 5, 6}});
  auto [u, s, vh] = ops::svd(*handle_lookup(tall.get()), false, true, false, "proxy: op");
  EXPECT_EQ(u->sizes()[0], 3);
  EXPECT_EQ(u->sizes()[1], 2);
  EXPECT_EQ(u->strides()[0], 1);  // column-major, as ATen's
  EXPECT_EQ(u->strides()[1], 3);
  EXPECT_EQ(s->sizes()[0], 2);
}

}  // namespace
}  // namespace aotrt::test
