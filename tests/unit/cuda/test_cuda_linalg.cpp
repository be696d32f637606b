// The contract of the CUDA linalg kernels (src/cuda/ops/linalg.cu) inside a run: every
// call queues its work on the current stream and returns without waiting for the device
// (info stays on the device: Note [Linalg errors on CUDA]) and, once the allocator is
// warm, without a cudaMalloc (workspaces come from the caching allocator, handles are
// made once per thread). Proven on a stream held back by a host function: an op that
// waited would not return until the hold ends (10 s at most), and the stream would no
// longer be pending. Values are the device-generic rows' job (tests/unit/ops/).
// linalg_eig (cusolverDnXgeev uses a host workspace) and matrix_exp (reads its norms on
// the host, as ATen's) are left out: they are documented to wait. So are the LDL
// factorization (sytrf), every SVD (gesvdj) and every eigh (syevd), and so pinv: the H200
// runs of this test (2026-12-01, one held round per step) measured each of svd full,
// reduced, values only, tall float64, eigh with and without vectors, pinv and hermitian
// pinv waiting 10 s for the held stream inside cuSOLVER (Note [Linalg errors on CUDA]).
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aotrt/aotrt.h"
#include "aotrt/error.h"
#include "core/handles.h"
#include "cuda/runtime.h"
#include "cuda_test_util.h"
#include "ops/linalg.h"
#include "ops/ops_testing.h"

namespace aotrt::test {
namespace {

using ops::TensorPtr;
using Round = std::function<void(std::vector<TensorPtr>&)>;

Backend cuda_only_backend() {
  for (const Backend& b : built_backends()) {
    if (!b.is_cpu()) return b;
  }
  ADD_FAILURE() << "a CUDA build without the CUDA backend";
  return built_backends()[0];
}

// A batch of well-conditioned (diagonally dominant, symmetric when asked) matrices.
Values matrices(int32_t dtype, Dims sizes, bool symmetric) {
  const int64_t n = sizes.back(), m = sizes[sizes.size() - 2];
  int64_t count = 1;
  for (size_t d = 0; d + 2 < sizes.size(); ++d) count *= sizes[d];
  Values v{dtype, sizes, row_major(sizes), 0, {}};
  for (int64_t b = 0; b < count; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t lo = symmetric ? std::min(i, j) : i, hi = symmetric ? std::max(i, j) : j;
        const double off = static_cast<double>((lo * 7 + hi * 3 + b * 5) % 11) / 11.0 - 0.5;
        v.values.push_back(i == j ? 4.0 * static_cast<double>(n) + off : off);
      }
    }
  }
  return v;
}

// The steps of the held round that took more than a second: each waited for the device,
// and names itself in the failure (step()).
struct HeldSteps {
  bool held = false;
  std::vector<std::pair<std::string, double>> slow;
};
HeldSteps g_steps;

template <class F>
void step(const char* name, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (g_steps.held && s > 1.0) g_steps.slow.emplace_back(name, s);
}

// Runs `round` once to warm the allocator and the handles, then again on a held stream:
// it must return while the stream is still held, with no cudaMalloc.
void expect_queued_without_waiting(const Round& round) {
  cuda::test::TestStream stream;
  cuda::set_current_cuda_stream(0, stream.get());
  struct Restore {
    ~Restore() { cuda::set_current_cuda_stream(0, nullptr); }
  } restore;
  std::vector<TensorPtr> results;
  try {
    round(results);
  } catch (const ::aotrt::Error& e) {
    FAIL() << "warm-up: " << e.what();
  }
  results.clear();
  ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
  const int64_t mallocs = cuda::allocator_counters(0).cuda_mallocs;
  cuda::test::StreamBlocker blocker;
  blocker.block(stream.get());
  const auto t0 = std::chrono::steady_clock::now();
  g_steps = HeldSteps{true, {}};
  try {
    round(results);
  } catch (const ::aotrt::Error& e) {
    ADD_FAILURE() << "held round: " << e.what();
  }
  g_steps.held = false;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string slow;
  for (const auto& [name, secs] : g_steps.slow) slow += " " + name + " (" + std::to_string(secs) + " s)";
  EXPECT_TRUE(g_steps.slow.empty()) << "these steps waited for the held stream:" << slow;
  EXPECT_EQ(cudaStreamQuery(stream.get()), cudaErrorNotReady)
      << "the stream finished while the ops were being called: one waited for the device";
  (void)cudaGetLastError();
  EXPECT_LT(s, 5.0) << "the held round took " << s << " s";
  EXPECT_EQ(cuda::allocator_counters(0).cuda_mallocs, mallocs) << "cudaMalloc on a warm allocator";
  blocker.release();
  ASSERT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
  results.clear();
  // Nothing failed, so nothing was recorded to raise.
  EXPECT_NO_THROW(synchronize(Device{DeviceType::CUDA, 0}));
}

class CudaLinalgContract : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(cuda::device_count(), 0) << "aotrt was built with CUDA but no CUDA device is visible";
    const Backend b = cuda_only_backend();
    sq_ = make_tensor(b, matrices(kF32, {2, 4, 4}, false));
    spd_ = make_tensor(b, matrices(kF64, {2, 3, 3}, true));
    sym_ = make_tensor(b, matrices(kF32, {4, 4}, true));
    rhs_ = make_tensor(b, matrices(kF32, {2, 4, 2}, false));
    rhs64_ = make_tensor(b, matrices(kF64, {2, 3, 2}, false));
    tall_ = make_tensor(b, matrices(kF64, {5, 3}, false));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  static const TensorImpl& t(const Tensor& x) { return *handle_lookup(x.get()); }
  Tensor sq_, spd_, sym_, rhs_, rhs64_, tall_;
};

template <class... T>
void keep(std::vector<TensorPtr>& out, std::tuple<T...> r) {
  std::apply([&](auto&... x) { (out.push_back(std::move(x)), ...); }, r);
}

TEST_F(CudaLinalgContract, LuCholeskyQrAndTriangularOpsQueueWithoutWaiting) {
  const char* fn = "test_cuda_linalg";
  expect_queued_without_waiting([&](std::vector<TensorPtr>& out) {
    TensorPtr lu, piv, info, l, g, tau;
    step("lu_factor_ex", [&] { std::tie(lu, piv, info) = ops::lu_factor_ex(t(sq_), true, true, fn); });
    step("lu_solve", [&] { out.push_back(ops::lu_solve(*lu, *piv, t(rhs_), true, false, fn)); });
    step("lu_unpack", [&] { keep(out, ops::lu_unpack(*lu, *piv, true, true, fn)); });
    step("check_errors", [&] { ops::check_errors(*info, "torch.linalg.lu_factor_ex", false, fn); });
    step("inv_ex", [&] { keep(out, ops::inv_ex(t(sq_), true, fn)); });
    step("solve_ex", [&] { keep(out, ops::solve_ex(t(sq_), t(rhs_), true, true, fn)); });
    step("det", [&] { keep(out, ops::det(t(sq_), fn)); });
    step("slogdet", [&] { keep(out, ops::slogdet(t(sq_), fn)); });
    step("cholesky_ex", [&] {
      TensorPtr cinfo;
      std::tie(l, cinfo) = ops::cholesky_ex(t(spd_), false, true, fn);
      out.push_back(std::move(cinfo));
    });
    step("cholesky_solve", [&] { out.push_back(ops::cholesky_solve(t(rhs64_), *l, false, fn)); });
    step("cholesky_inverse", [&] { out.push_back(ops::cholesky_inverse(*l, false, fn)); });
    step("cholesky", [&] { out.push_back(ops::cholesky(t(spd_), true, fn)); });
    step("triangular_solve",
         [&] { keep(out, ops::triangular_solve(t(rhs_), t(sq_), true, false, false, fn)); });
    step("solve_triangular",
         [&] { out.push_back(ops::solve_triangular(t(sq_), t(rhs_), false, true, false, fn)); });
    step("geqrf", [&] { std::tie(g, tau) = ops::geqrf(t(tall_), fn); });
    step("ormqr", [&] { out.push_back(ops::ormqr(*g, *tau, t(tall_), true, true, fn)); });
    step("householder_product", [&] { out.push_back(ops::householder_product(*g, *tau, fn)); });
    step("qr", [&] { keep(out, ops::qr(t(tall_), "complete", fn)); });
    step("lu", [&] { keep(out, ops::lu(t(tall_), true, fn)); });
    for (TensorPtr* p : {&lu, &piv, &info, &l, &g, &tau}) out.push_back(std::move(*p));
  });
}

}  // namespace
}  // namespace aotrt::test
