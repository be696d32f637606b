// aoti_torch_cuda_{mm,addmm,bmm,baddbmm}_out (cuda/matmul.cpp) against a
// double-precision reference on the host: every layout cuBLAS can read must
// be read in place (pack_count() stays 0), every other one must still give
// the right answer, and nothing outside the output view may change.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda/runtime.h"
#include "library_test_util.h"

namespace aotrt::cuda_test {
namespace {

enum class Op { kMm, kAddmm, kBmm, kBaddbmm };

ViewSpec row_major(int64_t rows, int64_t cols, int64_t ld = 0, int64_t offset = 0) {
  return {{rows, cols}, {ld ? ld : cols, 1}, offset};
}
ViewSpec col_major(int64_t rows, int64_t cols, int64_t ld = 0, int64_t offset = 0) {
  return {{rows, cols}, {1, ld ? ld : rows}, offset};
}
ViewSpec batched(int64_t batch, int64_t batch_stride, const ViewSpec& m) {
  return {{batch, m.sizes[0], m.sizes[1]}, {batch_stride, m.strides[0], m.strides[1]}, m.offset};
}

struct Tolerance {
  double per_scale;  // times sum |alpha a b| + |beta self|
  double per_value;  // times |result|: the output's rounding
};
Tolerance tolerance_for(int32_t dtype) {
  if (dtype == kBF16) return {1e-4, 1.0 / 128};
  if (dtype == kF16) return {1e-4, 1.0 / 512};
  return {2e-5, 1e-6};
}

struct MatmulCase {
  Op op = Op::kMm;
  int32_t dtype = kF32;
  ViewSpec x, y, out;
  ViewSpec self;         // addmm / baddbmm
  bool self_is_out = false;
  double self_fill = std::numeric_limits<double>::quiet_NaN();  // NaN: random self
  double beta = 1.0, alpha = 1.0;
  int64_t expected_packs = 0;
  std::string label;
};

// Runs the case through the shim and checks the whole output storage.
void check(const MatmulCase& c) {
  SCOPED_TRACE(c.label);
  Rng rng(std::hash<std::string>{}(c.label));
  DeviceView x(c.dtype, c.x, extent(c.x), rng);
  DeviceView y(c.dtype, c.y, extent(c.y), rng);
  DeviceView out(c.dtype, c.out, extent(c.out) + 3, 4321.0);  // sentinel around the view
  std::unique_ptr<DeviceView> self;
  const bool has_self = c.op == Op::kAddmm || c.op == Op::kBaddbmm;
  if (has_self && !c.self_is_out) {
    self = std::isnan(c.self_fill)
               ? std::make_unique<DeviceView>(c.dtype, c.self, extent(c.self), rng)
               : std::make_unique<DeviceView>(c.dtype, c.self, extent(c.self), c.self_fill);
  }
  const bool three_d = c.x.sizes.size() == 3;
  const int64_t B = three_d ? c.x.sizes[0] : 1;
  const int64_t M = c.x.sizes[three_d], K = c.x.sizes[three_d + 1];
  const int64_t N = c.y.sizes[three_d + 1];

  // The reference, over the whole output storage.
  std::vector<double> want = out.storage();
  std::vector<double> tol(want.size(), 0.0);
  const Tolerance t = tolerance_for(c.dtype);
  const auto out_offsets = out.offsets();
  size_t flat = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n, ++flat) {
        double sum = 0, scale = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double a = three_d ? x.at({b, m, k}) : x.at({m, k});
          const double bb = three_d ? y.at({b, k, n}) : y.at({k, n});
          sum += a * bb;
          scale += std::fabs(a * bb);
        }
        double value = c.alpha * sum;
        scale *= std::fabs(c.alpha);
        if (has_self && c.beta != 0.0) {
          double s;
          if (c.self_is_out) {
            s = three_d ? out.at({b, m, n}) : out.at({m, n});
          } else {
            // Broadcast: right-aligned, size-1 dims repeat.
            const std::vector<int64_t> full = three_d ? std::vector<int64_t>{b, m, n}
                                                      : std::vector<int64_t>{m, n};
            std::vector<int64_t> idx;
            const size_t shift = full.size() - c.self.sizes.size();
            for (size_t d = 0; d < c.self.sizes.size(); ++d) {
              idx.push_back(c.self.sizes[d] == 1 ? 0 : full[d + shift]);
            }
            s = self->at(idx);
          }
          value += c.beta * s;
          scale += std::fabs(c.beta * s);
        }
        const int64_t off = out_offsets[flat];
        want[static_cast<size_t>(off)] = value;
        tol[static_cast<size_t>(off)] = t.per_scale * scale + t.per_value * std::fabs(value) + 1e-12;
      }
    }
  }

  const uint64_t packs_before = aotrt::cuda::pack_count();
  AtenTensorHandle self_h = c.self_is_out ? out.get() : (self ? self->get() : nullptr);
  switch (c.op) {
    case Op::kMm: AOTRT_OK(aoti_torch_cuda_mm_out(out.get(), x.get(), y.get())); break;
    case Op::kBmm: AOTRT_OK(aoti_torch_cuda_bmm_out(out.get(), x.get(), y.get())); break;
    case Op::kAddmm:
      AOTRT_OK(aoti_torch_cuda_addmm_out(out.get(), self_h, x.get(), y.get(), c.beta, c.alpha));
      break;
    case Op::kBaddbmm:
      AOTRT_OK(aoti_torch_cuda_baddbmm_out(out.get(), self_h, x.get(), y.get(), c.beta, c.alpha));
      break;
  }
  EXPECT_EQ(aotrt::cuda::pack_count() - packs_before, static_cast<uint64_t>(c.expected_packs))
      << "copies made around the cuBLAS call";
  expect_within(out.device_storage(), want, tol, c.label);
}

TEST(CudaMatmul, Fp32DoesNotUseTf32) {
  // TF32 keeps 10 mantissa bits: 1 + 2^-12 would become 1. PyTorch's default
  // (allow_tf32 = False for matmuls) keeps it, and so must aotrt.
  AOTRT_REQUIRE_GPU();
  const int64_t M = 8, K = 256, N = 8;
  DeviceView x(kF32, row_major(M, K), M * K, 1.0 + std::ldexp(1.0, -12));
  DeviceView y(kF32, row_major(K, N), K * N, 1.0);
  DeviceView out(kF32, row_major(M, N), M * N, 0.0);
  AOTRT_OK(aoti_torch_cuda_mm_out(out.get(), x.get(), y.get()));
  for (double v : out.device_storage()) ASSERT_EQ(v, 256.0 + 256.0 / 4096.0);
}

TEST(CudaMatmul, MmReadsEveryAddressableLayoutInPlace) {
  AOTRT_REQUIRE_GPU();
  const int64_t M = 37, K = 53, N = 29;
  const std::vector<std::pair<std::string, ViewSpec>> xs = {
      {"x row-major", row_major(M, K)},
      {"x transposed", col_major(M, K)},
      {"x row-major ld+5 at offset 3", row_major(M, K, K + 5, 3)},
      {"x transposed ld+3 at offset 1", col_major(M, K, M + 3, 1)}};
  const std::vector<std::pair<std::string, ViewSpec>> ys = {
      {"y row-major", row_major(K, N)},
      {"y transposed", col_major(K, N)},
      {"y row-major ld+2 at offset 5", row_major(K, N, N + 2, 5)},
      {"y transposed ld+7", col_major(K, N, K + 7)}};
  const std::vector<std::pair<std::string, ViewSpec>> outs = {
      {"out row-major", row_major(M, N)},
      {"out row-major ld+4 at offset 2", row_major(M, N, N + 4, 2)},
      {"out transposed ld+1", col_major(M, N, M + 1, 1)}};
  for (const auto& [xn, x] : xs)
    for (const auto& [yn, y] : ys)
      for (const auto& [on, o] : outs) {
        MatmulCase c;
        c.x = x;
        c.y = y;
        c.out = o;
        c.label = "mm " + xn + ", " + yn + ", " + on;
        check(c);
        if (testing::Test::HasFailure()) return;
      }
}

TEST(CudaMatmul, MmPacksOnlyWhatCublasCannotRead) {
  AOTRT_REQUIRE_GPU();
  const int64_t M = 20, K = 33, N = 18;
  const ViewSpec x_strided{{M, K}, {2 * K, 2}, 1};  // every other element: no unit stride
  const ViewSpec out_strided{{M, N}, {2 * N, 2}, 1};
  MatmulCase c;
  c.y = row_major(K, N);
  c.x = x_strided;
  c.out = row_major(M, N);
  c.expected_packs = 1;
  c.label = "mm with an element-strided input";
  check(c);
  c.x = row_major(M, K);
  c.out = out_strided;
  c.label = "mm into an element-strided output";
  check(c);
  c.x = x_strided;
  c.expected_packs = 2;
  c.label = "mm with both";
  check(c);
  // Degenerate shapes: a single row or column needs no unit stride there.
  c.x = ViewSpec{{1, K}, {999, 1}, 0};
  c.y = ViewSpec{{K, 1}, {1, 999}, 0};
  c.out = ViewSpec{{1, 1}, {77, 55}, 2};
  c.expected_packs = 0;
  c.label = "mm of a row and a column with odd strides on their size-1 dims";
  check(c);
}

TEST(CudaMatmul, AddmmBiasBroadcastAlphaBeta) {
  AOTRT_REQUIRE_GPU();
  const int64_t M = 45, K = 64, N = 70;
  MatmulCase c;
  c.op = Op::kAddmm;
  c.x = row_major(M, K);
  c.y = col_major(K, N);  // linear: x @ weight.t()
  c.out = row_major(M, N);
  for (double alpha : {1.0, 0.5}) {
    c.alpha = alpha;
    c.self = ViewSpec{{N}, {1}, 3};
    c.label = "addmm bias [N], alpha " + std::to_string(alpha);
    check(c);
    c.self = ViewSpec{{1, N}, {N, 1}, 0};
    c.label = "addmm bias [1, N], alpha " + std::to_string(alpha);
    check(c);
  }
  c.alpha = 2.0;
  c.beta = 0.5;
  c.self = col_major(M, N);
  c.label = "addmm full transposed self, beta 0.5 alpha 2";
  check(c);
  c.beta = 1.0;
  c.self = ViewSpec{{M, 1}, {1, 1}, 0};
  c.label = "addmm column bias [M, 1]";
  check(c);
  c.beta = -1.0;
  c.self = ViewSpec{{}, {}, 4};
  c.label = "addmm 0-d self, beta -1";
  check(c);
  c.beta = 1.0;
  c.self = ViewSpec{{N}, {2}, 0};
  c.label = "addmm strided bias [N] stride 2";
  check(c);
  c.x = row_major(1, K);
  c.out = row_major(1, N);
  c.self = ViewSpec{{N}, {1}, 0};
  c.label = "addmm bias with one row (not the epilogue path)";
  check(c);
  // Output that is a strided view, bias epilogue straight into it.
  c.x = row_major(M, K);
  c.out = row_major(M, N, N + 9, 5);
  c.label = "addmm bias into a row-major view with ld + 9";
  check(c);
  c.out = col_major(M, N);
  c.label = "addmm bias into a transposed output";
  check(c);
}

TEST(CudaMatmul, AddmmBetaZeroIgnoresNaNSelf) {
  AOTRT_REQUIRE_GPU();
  const int64_t M = 16, K = 24, N = 40;
  Rng rng(7);
  DeviceView x(kF32, row_major(M, K), M * K, rng);
  DeviceView y(kF32, row_major(K, N), K * N, rng);
  DeviceView nan_self(kF32, row_major(M, N), M * N, std::numeric_limits<double>::quiet_NaN());
  DeviceView nan_bias(kF32, ViewSpec{{N}, {1}, 0}, N, std::numeric_limits<double>::quiet_NaN());
  DeviceView out(kF32, row_major(M, N), M * N, std::numeric_limits<double>::quiet_NaN());
  for (AtenTensorHandle s : {nan_self.get(), nan_bias.get()}) {
    AOTRT_OK(aoti_torch_cuda_addmm_out(out.get(), s, x.get(), y.get(), 0.0, 1.5));
    const std::vector<double> got = out.device_storage();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double want = 0;
        for (int64_t k = 0; k < K; ++k) want += x.at({m, k}) * y.at({k, n});
        want *= 1.5;
        ASSERT_FALSE(std::isnan(got[m * N + n])) << "beta 0 let NaN through at " << m << "," << n;
        ASSERT_NEAR(got[m * N + n], want, 1e-4) << m << "," << n;
      }
  }
}

TEST(CudaMatmul, AddmmInPlaceSelfIsOut) {
  AOTRT_REQUIRE_GPU();
  MatmulCase c;
  c.op = Op::kAddmm;
  c.x = row_major(12, 20);
  c.y = row_major(20, 9);
  c.out = row_major(12, 9, 11, 2);
  c.self_is_out = true;
  c.beta = 0.75;
  c.label = "addmm with self = out";
  check(c);
}

// Note [Interleaved batches] in cuda/matmul.cpp: the YOLO11 operand
// [2, 64, 400] with strides [1, 800, 2] has no unit stride inside a batch
// matrix, so no cuBLAS call can read it; it is packed - exactly once - and
// everything else is read in place.
TEST(CudaMatmul, BmmInterleavedHeadsPacksOnlyThatOperand) {
  AOTRT_REQUIRE_GPU();
  const ViewSpec interleaved{{2, 64, 400}, {1, 800, 2}, 0};
  MatmulCase c;
  c.op = Op::kBmm;
  c.x = interleaved;  // as self: v @ attn^T, M = 64, K = 400
  c.y = batched(2, 400 * 48, row_major(400, 48));
  c.out = batched(2, 64 * 48, row_major(64, 48));
  c.expected_packs = 1;
  c.label = "bmm self [2,64,400] strides [1,800,2]";
  check(c);
  c.x = batched(2, 40 * 64, row_major(40, 64));
  c.y = interleaved;  // as mat2: K = 64, N = 400
  c.out = batched(2, 40 * 400, row_major(40, 400));
  c.label = "bmm mat2 [2,64,400] strides [1,800,2]";
  check(c);
  // The same memory seen with heads outermost is read in place.
  c.x = batched(2, 40 * 64, row_major(40, 64));
  c.y = ViewSpec{{2, 64, 400}, {64 * 400, 400, 1}, 0};
  c.expected_packs = 0;
  c.label = "bmm mat2 [2,64,400] contiguous";
  check(c);
}

TEST(CudaMatmul, BmmBatchStridesAreFree) {
  AOTRT_REQUIRE_GPU();
  const int64_t B = 3, M = 17, K = 21, N = 13;
  MatmulCase c;
  c.op = Op::kBmm;
  // self: [B, M, K] viewed out of an [M, B, K] buffer; mat2: transposed batches;
  // out: batches interleaved between rows.
  c.x = ViewSpec{{B, M, K}, {K, B * K, 1}, 2};
  c.y = ViewSpec{{B, K, N}, {K * N, 1, K}, 0};
  c.out = ViewSpec{{B, M, N}, {N, B * N, 1}, 1};
  c.label = "bmm with permuted batches";
  check(c);
  c.y = ViewSpec{{B, K, N}, {0, N, 1}, 0};
  c.label = "bmm with a broadcast mat2 (batch stride 0)";
  check(c);
  c.y = ViewSpec{{B, K, N}, {0, 2 * N, 2}, 0};
  c.expected_packs = 1;
  c.label = "bmm with a broadcast element-strided mat2 (packs one matrix)";
  check(c);
  c.y = ViewSpec{{B, K, N}, {K * N, N, 1}, 0};
  c.out = ViewSpec{{B, M, N}, {2 * M * N, 2 * N, 2}, 0};
  c.label = "bmm into an element-strided output";
  check(c);
}

TEST(CudaMatmul, BaddbmmBroadcastSelf) {
  AOTRT_REQUIRE_GPU();
  const int64_t B = 4, M = 9, K = 31, N = 22;
  MatmulCase c;
  c.op = Op::kBaddbmm;
  c.x = batched(B, M * K, row_major(M, K));
  c.y = batched(B, K * N, col_major(K, N));
  c.out = batched(B, M * N, row_major(M, N));
  c.self = ViewSpec{{N}, {1}, 0};
  c.beta = 0.5;
  c.alpha = 1.5;
  c.label = "baddbmm self [N]";
  check(c);
  c.self = ViewSpec{{B, 1, N}, {N, 0, 1}, 0};
  c.label = "baddbmm self [B, 1, N]";
  check(c);
  c.beta = 0.0;
  c.self_fill = 1.0;
  c.self = ViewSpec{{B, M, N}, {M * N, N, 1}, 0};
  c.label = "baddbmm beta 0";
  check(c);
}

TEST(CudaMatmul, HalfPrecisionsAccumulateInFp32) {
  AOTRT_REQUIRE_GPU();
  for (int32_t dt : {kBF16, kF16}) {
    const std::string name = dt == kBF16 ? "bf16" : "fp16";
    MatmulCase c;
    c.dtype = dt;
    c.x = row_major(33, 200);
    c.y = col_major(200, 65);
    c.out = row_major(33, 65, 70, 1);
    c.label = name + " mm";
    check(c);
    c.op = Op::kAddmm;
    c.out = row_major(33, 65);
    c.self = ViewSpec{{65}, {1}, 0};
    c.label = name + " addmm bias";
    check(c);
    c.beta = 0.25;
    c.self = row_major(33, 65);
    c.label = name + " addmm beta 0.25";
    check(c);
    c.op = Op::kBmm;
    c.beta = 1.0;
    c.x = ViewSpec{{2, 64, 100}, {1, 200, 2}, 0};
    c.y = batched(2, 100 * 24, row_major(100, 24));
    c.out = batched(2, 64 * 24, row_major(64, 24));
    c.expected_packs = 1;
    c.label = name + " bmm interleaved";
    check(c);
  }
}

TEST(CudaMatmul, EmptyReduction) {
  AOTRT_REQUIRE_GPU();
  MatmulCase c;
  c.op = Op::kAddmm;
  c.x = ViewSpec{{5, 0}, {1, 1}, 0};
  c.y = ViewSpec{{0, 7}, {7, 1}, 0};
  c.out = row_major(5, 7, 9, 1);
  c.self = ViewSpec{{7}, {1}, 0};
  c.beta = 0.5;
  c.expected_packs = 1;  // beta * self goes through a dense temporary
  c.label = "addmm with K = 0";
  check(c);
  c.op = Op::kMm;
  c.expected_packs = 0;
  c.label = "mm with K = 0";
  check(c);
  // M = 0: nothing to do, and nothing may fail.
  Rng rng(3);
  DeviceView x(kF32, ViewSpec{{0, 4}, {4, 1}, 0}, 1, rng);
  DeviceView y(kF32, row_major(4, 3), 12, rng);
  DeviceView out(kF32, ViewSpec{{0, 3}, {3, 1}, 0}, 1, 0.0);
  AOTRT_OK(aoti_torch_cuda_mm_out(out.get(), x.get(), y.get()));
}

TEST(CudaMatmul, RefusesWhatItCannotServe) {
  AOTRT_REQUIRE_GPU();
  Rng rng(11);
  DeviceView a(kF32, row_major(4, 5), 20, rng);
  DeviceView b(kF32, row_major(6, 3), 18, rng);
  DeviceView out(kF32, row_major(4, 3), 12, 0.0);
  EXPECT_EQ(aoti_torch_cuda_mm_out(out.get(), a.get(), b.get()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("cannot be multiplied (4x5 and 6x3)"),
            std::string::npos)
      << aotrt_last_error();
  DeviceView b16(kBF16, row_major(5, 3), 15, rng);
  EXPECT_EQ(aoti_torch_cuda_mm_out(out.get(), a.get(), b16.get()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("dtypes differ"), std::string::npos)
      << aotrt_last_error();
  DeviceView b_ok(kF32, row_major(5, 3), 15, rng);
  DeviceView wrong_out(kF32, row_major(3, 4), 12, 0.0);
  EXPECT_EQ(aoti_torch_cuda_mm_out(wrong_out.get(), a.get(), b_ok.get()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("'out' has the wrong shape"), std::string::npos)
      << aotrt_last_error();
  // A CPU operand.
  AtenTensorHandle cpu = nullptr;
  const int64_t sizes[] = {5, 3}, strides[] = {3, 1};
  AOTRT_OK(aoti_torch_empty_strided(2, sizes, strides, kF32, kCPU, -1, &cpu));
  EXPECT_EQ(aoti_torch_cuda_mm_out(out.get(), a.get(), cpu), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("'mat2' is on cpu, not on a CUDA device"), std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(aoti_torch_delete_tensor_object(cpu), AOTI_TORCH_SUCCESS);
  // A deleted handle.
  EXPECT_EQ(aoti_torch_cuda_mm_out(out.get(), a.get(), nullptr), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("argument 'mat2'"), std::string::npos)
      << aotrt_last_error();
  // An int64 matmul is not served.
  AtenTensorHandle i1 = nullptr, i2 = nullptr, io = nullptr;
  AOTRT_OK(aoti_torch_empty_strided(2, sizes, strides, kI64, kCUDA, 0, &i1));
  const int64_t s2[] = {3, 5}, st2[] = {5, 1}, so[] = {5, 5}, sto[] = {5, 1};
  AOTRT_OK(aoti_torch_empty_strided(2, s2, st2, kI64, kCUDA, 0, &i2));
  AOTRT_OK(aoti_torch_empty_strided(2, so, sto, kI64, kCUDA, 0, &io));
  EXPECT_EQ(aoti_torch_cuda_mm_out(io, i1, i2), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("int64"), std::string::npos)
      << aotrt_last_error();
  for (AtenTensorHandle h : {i1, i2, io}) aoti_torch_delete_tensor_object(h);
}

}  // namespace
}  // namespace aotrt::cuda_test
