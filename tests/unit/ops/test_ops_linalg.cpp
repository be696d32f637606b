// The linalg family on every backend (LAPACK on the CPU, cuSOLVER and cuBLAS on CUDA)
// against torch eager's values, dtypes and strides: the C-shim ops (lu_unpack,
// triangular_solve, cholesky_solve, cholesky_inverse, geqrf, ormqr; reference_linalg.inc)
// through the C ABI, the proxy-executor ops (reference_linalgproxy.inc) on the family's
// functions (ops/linalg.h), as the executor calls them; their refusals; and how a failed
// factorization is raised (at once on the CPU, at the next synchronize on CUDA: Note
// [Linalg errors on CUDA]). Tolerances, relative to max(1, |torch's value|): 1e-5
// (float32) and 1e-12 (float64) on the CPU (LAPACK against torch's MKL); 5e-5 and 1e-10
// on CUDA, whose cuSOLVER takes other paths (Jacobi SVD, blocked factorizations) than
// LAPACK. float32 is not the family's usual 1e-6: qr_wide_reduced factors a rank-2 3x5
// matrix, so an entry of R is cancellation noise of order eps * |A| (about 2e-6), whose
// size and sign follow the kernels the LAPACK build picks for the CPU (torch -9.5e-7,
// OpenBLAS 1.2e-7 on an AVX-512 EPYC).
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "aotrt/aotrt.h"
#include "aotrt/error.h"
#include "core/handles.h"
#include "ops/linalg.h"
#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_linalg.inc"
#include "reference_linalgproxy.inc"

using LuUnpack = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int32_t, int32_t,
                                    AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*);
using TriangularSolve = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int32_t, int32_t,
                                           int32_t, AtenTensorHandle*, AtenTensorHandle*);
using CholeskySolve = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int32_t,
                                         AtenTensorHandle*);
using CholeskyInverse = AOTITorchError (*)(AtenTensorHandle, int32_t, AtenTensorHandle*);
using Geqrf = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*, AtenTensorHandle*);
using Ormqr = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, int32_t,
                                 int32_t, AtenTensorHandle*);

// See the tolerances at the top.
double linalg_tolerance(const Backend& b, int32_t dtype) {
  if (b.is_cpu()) return dtype == kF32 ? 1e-5 : tolerance_of(dtype);
  return dtype == kF32 ? 5e-5 : dtype == kF64 ? 1e-10 : 0;
}

// `magnitudes`: compare |values| (singular vectors and eigenvectors, unique up to sign;
// torch's are recorded as |.|).
void expect_close(const Backend& b, AtenTensorHandle h, const Values& want,
                  const std::string& what, bool magnitudes = false) {
  ASSERT_NE(h, nullptr) << what << ": no output";
  const Meta m = meta(h);
  EXPECT_EQ(m.dtype, want.dtype) << what << ": dtype";
  EXPECT_EQ(m.sizes, want.sizes) << what << ": sizes";
  EXPECT_EQ(m.strides, want.strides) << what << ": strides";
  std::vector<double> got = values_of(h);
  if (magnitudes) {
    for (double& v : got) v = std::abs(v);
  }
  EXPECT_TRUE(same_values(got, want.values, linalg_tolerance(b, want.dtype))) << what;
}

class OpsLinalg : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsLinalg, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  auto flag = [&](size_t i) { return static_cast<int32_t>(c.ints[i]); };
  Tensor out[3];
  AOTITorchError rc = AOTI_TORCH_FAILURE;
  if (op == "lu_unpack") {
    AOTRT_FIND_OP(f, LuUnpack, b, c.op);
    rc = f(in[0].get(), in[1].get(), flag(0), flag(1), out[0].out(), out[1].out(), out[2].out());
  } else if (op == "triangular_solve") {
    AOTRT_FIND_OP(f, TriangularSolve, b, c.op);
    rc = f(in[0].get(), in[1].get(), flag(0), flag(1), flag(2), out[0].out(), out[1].out());
  } else if (op == "cholesky_solve") {
    AOTRT_FIND_OP(f, CholeskySolve, b, c.op);
    rc = f(in[0].get(), in[1].get(), flag(0), out[0].out());
  } else if (op == "cholesky_inverse") {
    AOTRT_FIND_OP(f, CholeskyInverse, b, c.op);
    rc = f(in[0].get(), flag(0), out[0].out());
  } else if (op == "geqrf") {
    AOTRT_FIND_OP(f, Geqrf, b, c.op);
    rc = f(in[0].get(), out[0].out(), out[1].out());
  } else if (op == "ormqr") {
    AOTRT_FIND_OP(f, Ormqr, b, c.op);
    rc = f(in[0].get(), in[1].get(), in[2].get(), flag(0), flag(1), out[0].out());
  } else {
    FAIL() << "no runner for " << op;
  }
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    expect_close(b, out[k].get(), c.outputs[k], std::string(c.name) + " output " + std::to_string(k));
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

using ops::TensorPtr;

// A complex tensor's elements as (re, im) pairs: torch.view_as_real.
TensorPtr real_view(const TensorImpl& t) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end()), strides;
  for (int64_t st : t.strides()) strides.push_back(2 * st);
  sizes.push_back(2);
  strides.push_back(1);
  const ScalarType real = t.dtype() == ScalarType::Complex64 ? ScalarType::Float32
                                                             : ScalarType::Float64;
  return ::aotrt::make_tensor(t.storage(), sizes, strides, 2 * t.storage_offset(), real, "test");
}

template <class... T>
std::vector<TensorPtr> all_of(std::tuple<T...> results) {
  std::vector<TensorPtr> out;
  std::apply([&](auto&&... r) { (out.push_back(std::move(r)), ...); }, std::move(results));
  return out;
}

// The proxy op c.op (an ATen name) on the family's function, as the executor calls it;
// the outputs the case lists (gen_ops_reference.py: linalgproxy_cases).
std::vector<TensorPtr> run_proxy_op(const OpCase& c, const std::vector<const TensorImpl*>& in) {
  const std::string op = c.op;
  const char* fn = "proxy executor: test";
  auto flag = [&](size_t i) { return c.ints[i] != 0; };
  if (op == "linalg_qr") {
    const char* modes[] = {"reduced", "complete", "r"};
    return all_of(ops::qr(*in[0], modes[c.ints[0]], fn));
  }
  if (op == "linalg_householder_product") {
    std::vector<TensorPtr> out;
    out.push_back(ops::householder_product(*in[0], *in[1], fn));
    return out;
  }
  if (op == "_linalg_svd") {
    auto r = all_of(ops::svd(*in[0], flag(0), flag(1), false, fn));
    if (!flag(1)) return r;
    std::vector<TensorPtr> values;
    values.push_back(std::move(r[1]));  // U and Vh: signs not unique
    return values;
  }
  if (op == "_linalg_svd_abs") return all_of(ops::svd(*in[0], flag(0), flag(1), false, fn));
  if (op == "_linalg_eigh") return all_of(ops::eigh(*in[0], flag(0) ? "U" : "L", flag(1), fn));
  if (op == "_linalg_eigh_abs") return all_of(ops::eigh(*in[0], flag(0) ? "U" : "L", flag(1), fn));
  if (op == "linalg_inv_ex") return all_of(ops::inv_ex(*in[0], false, fn));
  if (op == "_linalg_solve_ex") return all_of(ops::solve_ex(*in[0], *in[1], flag(0), false, fn));
  if (op == "linalg_lu_factor_ex") return all_of(ops::lu_factor_ex(*in[0], true, false, fn));
  if (op == "linalg_cholesky_ex") return all_of(ops::cholesky_ex(*in[0], flag(0), false, fn));
  if (op == "_linalg_det") return all_of(ops::det(*in[0], fn));
  if (op == "_linalg_slogdet") return all_of(ops::slogdet(*in[0], fn));
  if (op == "linalg_eig") {
    auto r = all_of(ops::eig(*in[0], fn));
    std::vector<TensorPtr> values;
    values.push_back(real_view(*r[0]));
    return values;
  }
  if (op == "linalg_lu") return all_of(ops::lu(*in[0], flag(0), fn));
  std::vector<TensorPtr> out;
  if (op == "linalg_solve_triangular") {
    out.push_back(ops::solve_triangular(*in[0], *in[1], flag(0), flag(1), flag(2), fn));
  } else if (op == "linalg_lu_solve") {
    out.push_back(ops::lu_solve(*in[0], *in[1], *in[2], flag(0), flag(1), fn));
  } else if (op == "cholesky") {
    out.push_back(ops::cholesky(*in[0], flag(0), fn));
  } else if (op == "linalg_ldl_factor_ex") {
    return all_of(ops::ldl_factor_ex(*in[0], false, false, fn));
  } else if (op == "linalg_ldl_solve") {
    out.push_back(ops::ldl_solve(*in[0], *in[1], *in[2], false, fn));
  } else if (op == "linalg_matrix_exp") {
    out.push_back(ops::matrix_exp(*in[0], fn));
  } else if (op == "linalg_pinv") {
    out.push_back(ops::pinv(*in[0], nullptr, nullptr, flag(0), fn));
  } else {
    ADD_FAILURE() << "no runner for " << op;
  }
  return out;
}

class OpsLinalgProxy : public ::testing::TestWithParam<BackendCase> {};

// Values, dtypes and strides against torch eager (strided and offset inputs, batches,
// broadcast right-hand sides), through the functions the proxy executor calls.
TEST_P(OpsLinalgProxy, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  std::vector<const TensorImpl*> impls;
  for (const Values& v : c.inputs) {
    in.push_back(make_tensor(b, v));
    impls.push_back(handle_lookup(in.back().get()));
  }
  // pinv and matrix_exp end in the matmul family's gemm, which CUDA serves in float32,
  // float16 and bfloat16 only: float64 is refused there, by name.
  const std::string op = c.op;
  std::vector<TensorPtr> got;
  try {
    got = run_proxy_op(c, impls);
  } catch (const ::aotrt::Error& e) {
    FAIL() << e.what();
  }
  ASSERT_EQ(got.size(), c.outputs.size());
  for (size_t k = 0; k < got.size(); ++k) {
    Tensor out(handle_register(std::move(got[k])));
    // U and Vh of _linalg_svd_abs, the eigenvectors of _linalg_eigh_abs.
    const bool magnitudes = (op == "_linalg_svd_abs" && k != 1) || (op == "_linalg_eigh_abs" && k == 1);
    // The references are torch's CPU outputs; on CUDA, Vh is row-major (Note [Vh's layout]).
    Values want = c.outputs[k];
    if (!b.is_cpu() && op == "_linalg_svd_abs" && k == 2) want.strides = row_major(want.sizes);
    expect_close(b, out.get(), want, std::string(c.name) + " output " + std::to_string(k),
                 magnitudes);
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsLinalgProxy,
                         ::testing::ValuesIn(all_backends(kLinalgproxyCases)), backend_case_name);

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

// Note [Linalg errors on CUDA]: the CPU raises a failed factorization in the op; CUDA
// returns cuSOLVER's results and raises ATen's message, naming the op that checked, at the
// next synchronize of the device, once.
TEST(OpsLinalgErrors, RaisedInTheOpOnCpuAndAtSynchronizeOnCuda) {
  const char* message =
      "cholesky: The factorization could not be completed because the input is not "
      "positive-definite (the leading minor of order 2 is not positive-definite).";
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    Tensor indefinite = make_tensor(b, Values{kF64, {2, 2}, {2, 1}, 0, {1, 2, 2, 1}});
    const TensorImpl& a = *handle_lookup(indefinite.get());
    if (b.is_cpu()) {
      expect_throws([&] { ops::cholesky(a, false, "proxy: op"); }, message);
      continue;
    }
    ops::TensorPtr l;
    EXPECT_NO_THROW(l = ops::cholesky(a, false, "proxy: op"));
    try {
      synchronize(b.device());
      ADD_FAILURE() << "synchronize raised nothing";
    } catch (const ::aotrt::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("aotrt::synchronize: proxy: op"), std::string::npos) << msg;
      EXPECT_NE(msg.find(message), std::string::npos) << msg;
    }
    EXPECT_NO_THROW(synchronize(b.device()));  // taken: raised once
    // A host copy of a result waits too, and raises the same way.
    ::aotrt::Tensor result = ::aotrt::Tensor::adopt(handle_register(ops::cholesky(a, false, "proxy: op")));
    try {
      (void)result.dense_host_copy();
      ADD_FAILURE() << "dense_host_copy raised nothing";
    } catch (const ::aotrt::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("aotrt::Tensor::dense_host_copy: proxy: op"), std::string::npos) << msg;
      EXPECT_NE(msg.find(message), std::string::npos) << msg;
    }
    // A batch names its first failed element, as ATen's; the first error stands.
    Tensor info = make_tensor(b, Values{kI32, {3}, {1}, 0, {0, 3, 2}});
    Tensor info2 = make_tensor(b, Values{kI32, {1}, {1}, 0, {1}});
    EXPECT_NO_THROW(ops::check_errors(*handle_lookup(info.get()), "linalg.inv_ex", false, "op a"));
    EXPECT_NO_THROW(ops::check_errors(*handle_lookup(info2.get()), "linalg.svd", true, "op b"));
    try {
      synchronize(b.device());
      ADD_FAILURE() << "synchronize raised nothing";
    } catch (const ::aotrt::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("op a: linalg.inv_ex: (Batch element 1): The diagonal element 3 is zero"),
                std::string::npos)
          << msg;
    }
    EXPECT_NO_THROW(synchronize(b.device()));
  }
}

// lu_unpack's pivots outside [1, m]: refused on the CPU (above), a zero P on CUDA (the
// check would need the pivots on the host), L and U unpacked as usual.
TEST(OpsLinalgErrors, LuUnpackBadPivotGivesZeroPermutationOnCuda) {
  AOTRT_SKIP_WITHOUT_CUDA();
  for (const Backend& b : built_backends()) {
    if (b.is_cpu()) continue;
    AOTRT_FIND_OP(f, LuUnpack, b, "lu_unpack");
    Tensor lu = make_tensor(b, Values{kF32, {2, 2, 2}, {4, 2, 1}, 0, {1, 2, 3, 4, 5, 6, 7, 8}});
    Tensor piv = make_tensor(b, Values{kI32, {2, 2}, {2, 1}, 0, {2, 2, 3, 2}});
    Tensor p, l, u;
    ASSERT_EQ(f(lu.get(), piv.get(), 1, 1, p.out(), l.out(), u.out()), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    // Matrix 0: pivots (2, 2) swap rows 0 and 1; matrix 1 has pivot 3 > m = 2.
    EXPECT_TRUE(same_values(values_of(p.get()), {0, 1, 1, 0, 0, 0, 0, 0}, 0));
    EXPECT_TRUE(same_values(values_of(l.get()), {1, 0, 3, 1, 1, 0, 7, 1}, 0));
    EXPECT_TRUE(same_values(values_of(u.get()), {1, 2, 0, 4, 5, 6, 0, 8}, 0));
  }
}

}  // namespace
}  // namespace aotrt::test
