// The CUDA integer matmul kernels against the exact kernels and host references:
// - _weight_int4pack_mm (Note [Int4 matmul kernels]): the gemv, decode and gemm kernels
//   against the exact kernel and a double sum, for M 1, 3, 8, 9, 16, 17, 64 and 200
//   (gemv: every M to 8 and each side of its row groups to 32), N not a multiple of any tile, K at group and tile boundaries,
//   innerKTiles 2, 4, 8, every group size, forced splits and tiles. On data whose every
//   product and sum is exact in float32 (A in eighths, scales powers of two, zeros
//   quarters) every kernel must give the same bits as the rounded exact sum; with A the
//   identity every output is one weight, so the dequantization (bfloat16 fma) is checked
//   bit for bit with random scales and zeros; on random data the kernels must agree
//   within the bound of Note [Int4 matmul kernels]. gemv refuses M 33 with nothing
//   queued. Through the C shim the chosen kernel serves; warm calls are captured into a
//   CUDA graph (no host sync, no cudaMalloc).
// - _weight_int8pack_mm in A's dtype (Note [Int8 weight matmul on CUDA]): float32,
//   bfloat16 and float16 against the exact float32 kernel and a double sum, exact data
//   bit for bit, random data within the bound.
// - _int_mm_out (Note [Int8 matmul on CUDA]): the DP4A GEMV and cuBLASLt against the
//   exact integer kernel bit for bit, full int8 range, column- and row-major operands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "core/handles.h"
#include "cuda/cuda.h"
#include "cuda/library_ops.h"
#include "cuda/runtime.h"
#include "op_test_util.h"
#include "ops/dispatch.h"
#include "ops/int4_tinygemm.h"
#include "ops/int_matmul.h"

namespace aotrt::test {
namespace {

const TensorImpl& impl(const Tensor& t) { return *handle_lookup(t.get()); }

double bf16(double v) { return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v))); }
double f16(double v) { return half_to_float(float_to_half(static_cast<float>(v))); }
double round_dtype(int32_t dtype, double v) {
  return dtype == kBF16 ? bf16(v) : dtype == kF16 ? f16(v) : static_cast<float>(v);
}

// --- int4 ----------------------------------------------------------------------------------

struct Int4Shape {
  int64_t M, N, K, group;
  int inner;
};

std::string name_of(const Int4Shape& s) {
  return "M " + std::to_string(s.M) + " N " + std::to_string(s.N) + " K " + std::to_string(s.K) +
         " group " + std::to_string(s.group) + " innerKTiles " + std::to_string(s.inner);
}

enum class Data { kExact, kRandom, kIdentity };

// A problem on the host: A, q, (scale, zero), the packed words and the weights.
struct Int4Problem {
  Int4Shape s;
  std::vector<double> a;      // [M][K] bfloat16 values
  std::vector<double> sz;     // [K/g][N][2] bfloat16 values
  std::vector<double> words;  // the packed int32s as values
  std::vector<double> w;      // [N][K] the dequantized bfloat16 weights
};

Int4Problem make_int4(const Int4Shape& s, Data data, uint64_t seed) {
  Int4Problem p{s, {}, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  auto uniform = [&] { return static_cast<double>(rng() % 1000000) / 1e6; };
  const int64_t groups = s.K / s.group;
  p.sz.resize(static_cast<size_t>(groups * s.N * 2));
  for (int64_t i = 0; i < groups * s.N; ++i) {
    if (data == Data::kExact) {
      p.sz[2 * i] = std::ldexp(1.0, static_cast<int>(rng() % 4) - 2);
      p.sz[2 * i + 1] = static_cast<double>(static_cast<int>(rng() % 9) - 4) / 4;
    } else {
      p.sz[2 * i] = bf16(0.005 + 0.05 * uniform());
      p.sz[2 * i + 1] = bf16((uniform() - 0.5) * 0.1);
    }
  }
  p.a.resize(static_cast<size_t>(s.M * s.K));
  for (int64_t m = 0; m < s.M; ++m) {
    for (int64_t k = 0; k < s.K; ++k) {
      double v = 0;
      if (data == Data::kExact) v = static_cast<double>(static_cast<int>(rng() % 17) - 8) / 8;
      if (data == Data::kRandom) v = bf16(normal(rng));
      if (data == Data::kIdentity) v = k == m ? 1.0 : 0.0;
      p.a[static_cast<size_t>(m * s.K + k)] = v;
    }
  }
  const int64_t outer = s.K / (s.inner * 16);
  std::vector<uint32_t> packed(static_cast<size_t>(s.N * s.K / 8), 0u);
  p.w.resize(static_cast<size_t>(s.N * s.K));
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t k = 0; k < s.K; ++k) {
      const int q = static_cast<int>(rng() % 16);
      const auto at = ops::int4_tinygemm::nibble_of(n, k, outer, s.inner);
      packed[static_cast<size_t>(at.word)] |= static_cast<uint32_t>(q) << at.shift;
      const size_t g = static_cast<size_t>(((k / s.group) * s.N + n) * 2);
      p.w[static_cast<size_t>(n * s.K + k)] = bf16(ops::int4_tinygemm::dequantize_round_odd(
          q, static_cast<float>(p.sz[g]), static_cast<float>(p.sz[g + 1])));
    }
  }
  p.words.reserve(packed.size());
  for (uint32_t v : packed) p.words.push_back(static_cast<double>(static_cast<int32_t>(v)));
  return p;
}

// The problem's tensors on the GPU and an output to fill.
struct Int4Tensors {
  Tensor a, b, sz;
  Int4Tensors(const Backend& be, const Int4Problem& p) {
    const Int4Shape& s = p.s;
    a = make_tensor(be, Values{kBF16, {s.M, s.K}, {s.K, 1}, 0, p.a});
    const Dims bz{s.N / 8, s.K / (s.inner * 16), 32, s.inner / 2};
    b = make_tensor(be, Values{kI32, bz, row_major(bz), 0, p.words});
    const Dims szz{s.K / s.group, s.N, 2};
    sz = make_tensor(be, Values{kBF16, szz, row_major(szz), 0, p.sz});
  }
  // The output of one kernel choice (ran: whether the kernel served it).
  std::vector<double> run(const Backend& be, const Int4Problem& p, cuda::Int4KernelChoice choice,
                          bool* ran = nullptr) {
    Tensor out = empty(be, {p.s.M, p.s.N}, kBF16);
    const bool served = cuda::int4_tinygemm_mm_with(choice, impl(out), impl(a), impl(b), p.s.group,
                                                    impl(sz), "test_cuda_int_matmul");
    if (ran != nullptr) *ran = served;
    EXPECT_TRUE(served || ran != nullptr) << "the kernel refused " << name_of(p.s);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return served ? values_of(out.get()) : std::vector<double>{};
  }
};

// sum_k a w in double, and sum_k |a w| (the bound's scale), [M][N].
void int4_reference(const Int4Problem& p, std::vector<double>& sum, std::vector<double>& abs_sum) {
  const Int4Shape& s = p.s;
  sum.assign(static_cast<size_t>(s.M * s.N), 0.0);
  abs_sum.assign(sum.size(), 0.0);
  for (int64_t m = 0; m < s.M; ++m) {
    const double* a = &p.a[static_cast<size_t>(m * s.K)];
    for (int64_t n = 0; n < s.N; ++n) {
      const double* w = &p.w[static_cast<size_t>(n * s.K)];
      double t = 0, u = 0;
      for (int64_t k = 0; k < s.K; ++k) {
        t += a[k] * w[k];
        u += std::fabs(a[k] * w[k]);
      }
      sum[static_cast<size_t>(m * s.N + n)] = t;
      abs_sum[static_cast<size_t>(m * s.N + n)] = u;
    }
  }
}

// Bit for bit (as doubles of bfloat16 values, NaN never expected).
::testing::AssertionResult same_bits(const std::vector<double>& got, const std::vector<double>& want,
                                     int64_t cols) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " values, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return ::testing::AssertionFailure() << "output [" << static_cast<int64_t>(i) / cols << ", "
                                           << static_cast<int64_t>(i) % cols << "] is " << got[i]
                                           << ", want " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// |x - y| <= 2 K 2^-23 sum |a w| + 2^-8 (|x| + |y|): Note [Int4 matmul kernels].
::testing::AssertionResult within_bound(const std::vector<double>& x, const std::vector<double>& y,
                                        const std::vector<double>& abs_sum, int64_t K, int64_t cols) {
  if (x.size() != y.size()) return ::testing::AssertionFailure() << x.size() << " values vs " << y.size();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double tol = 2.0 * static_cast<double>(K) * std::ldexp(abs_sum[i], -23) +
                       std::ldexp(std::fabs(x[i]) + std::fabs(y[i]), -8);
    const double d = std::fabs(x[i] - y[i]);
    if (!(d <= tol)) {
      return ::testing::AssertionFailure() << "output [" << static_cast<int64_t>(i) / cols << ", "
                                           << static_cast<int64_t>(i) % cols << "]: " << x[i]
                                           << " vs " << y[i] << ", bound " << tol;
    }
    worst = std::max(worst, tol > 0 ? d / tol : 0.0);
  }
  return ::testing::AssertionSuccess() << "worst difference " << worst << " of the bound";
}

using cuda::Int4Kernel;
using cuda::Int4KernelChoice;

// Every kernel, split and tile that serves M.
std::vector<std::pair<std::string, Int4KernelChoice>> int4_choices(int64_t M) {
  std::vector<std::pair<std::string, Int4KernelChoice>> out;
  if (M <= cuda::kInt4GemvMaxRows) {
    for (int splits : {0, 1, 2, 3, 8}) {
      out.push_back({"gemv splits " + std::to_string(splits), {Int4Kernel::kGemv, splits, 0}});
    }
  }
  if (M <= 64) {
    for (int tiles : {0, 1, 2, 4}) {
      for (int splits : {0, 1, 2, 3, 8}) {
        out.push_back({"decode tiles " + std::to_string(tiles) + " splits " + std::to_string(splits),
                       {Int4Kernel::kDecode, splits, tiles}});
      }
    }
  }
  for (int tiles : {0, 64, 128}) {
    for (int splits : {0, 1, 3}) {
      out.push_back({"gemm tiles " + std::to_string(tiles) + " splits " + std::to_string(splits),
                     {Int4Kernel::kGemm, splits, tiles}});
    }
  }
  out.push_back({"auto", {}});
  return out;
}

const std::vector<Int4Shape> kInt4Shapes = {
    {1, 24, 256, 32, 2},     {3, 136, 384, 128, 8},  {8, 40, 192, 64, 4},
    {9, 72, 96, 32, 2},      {16, 264, 1024, 256, 8}, {17, 24, 256, 64, 4},
    {64, 136, 512, 128, 8},  {200, 72, 640, 128, 8}, {1, 4096, 4096, 128, 8},
    {2, 4096, 14336, 128, 8}, {5, 8, 64, 64, 4},      {33, 16, 32, 32, 2}};

// The references above against aotrt's CPU kernel of the layout (k-order float32 sums,
// the CUDA exact kernel's twin): the packing, the exact data and the identity are what
// the GPU tests take them to be. Runs without a GPU.
TEST(CudaInt4Kernels, HostReferencesMatchTheCpuKernel) {
  const Backend cpu = built_backends()[0];
  for (const Int4Shape& s : {Int4Shape{3, 136, 384, 128, 8}, Int4Shape{9, 72, 96, 32, 2},
                             Int4Shape{17, 24, 256, 64, 4}}) {
    SCOPED_TRACE(name_of(s));
    for (const Data data : {Data::kExact, Data::kIdentity}) {
      Int4Shape shape = s;
      if (data == Data::kIdentity) shape.M = s.K;
      const Int4Problem p = make_int4(shape, data, 5);
      std::vector<double> sum, abs_sum;
      int4_reference(p, sum, abs_sum);
      std::vector<double> want(sum.size());
      for (size_t i = 0; i < sum.size(); ++i) want[i] = bf16(sum[i]);
      Int4Tensors t(cpu, p);
      std::unique_ptr<TensorImpl> out;
      ASSERT_NO_THROW(out = ops::weight_int4pack_mm_tinygemm(impl(t.a), impl(t.b), shape.group,
                                                             impl(t.sz), "test"));
      Tensor h(handle_register(std::move(out)));
      EXPECT_TRUE(same_bits(values_of(h.get()), want, shape.N))
          << (data == Data::kExact ? "exact data" : "identity");
    }
  }
}

TEST(CudaInt4Kernels, ExactSumsGiveTheRoundedSumBitForBit) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  for (const Int4Shape& s : kInt4Shapes) {
    SCOPED_TRACE(name_of(s));
    const Int4Problem p = make_int4(s, Data::kExact, static_cast<uint64_t>(s.M * 131 + s.N + s.K));
    std::vector<double> sum, abs_sum;
    int4_reference(p, sum, abs_sum);
    std::vector<double> want(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) want[i] = bf16(sum[i]);  // the float32 sum is exact
    Int4Tensors t(be, p);
    EXPECT_TRUE(same_bits(t.run(be, p, {Int4Kernel::kExact}), want, s.N)) << "exact kernel";
    for (const auto& [label, choice] : int4_choices(s.M)) {
      EXPECT_TRUE(same_bits(t.run(be, p, choice), want, s.N)) << label;
    }
  }
}

// A = I: out[m][n] = w[n][m], one weight each, bit for bit with random scales and zeros
// (the kernels' bfloat16 fma against the exact kernel's correctly rounded emulation).
TEST(CudaInt4Kernels, IdentityGivesEveryWeightBitForBit) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  for (const Int4Shape base : {Int4Shape{0, 24, 256, 32, 2}, Int4Shape{0, 136, 256, 64, 4},
                               Int4Shape{0, 40, 512, 128, 8}, Int4Shape{0, 16, 256, 256, 8}}) {
    Int4Shape s = base;
    s.M = s.K;
    SCOPED_TRACE(name_of(s));
    const Int4Problem p = make_int4(s, Data::kIdentity, static_cast<uint64_t>(s.N + s.K + s.inner));
    std::vector<double> want(static_cast<size_t>(s.M * s.N));
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t n = 0; n < s.N; ++n) want[static_cast<size_t>(m * s.N + n)] = p.w[static_cast<size_t>(n * s.K + m)];
    Int4Tensors t(be, p);
    EXPECT_TRUE(same_bits(t.run(be, p, {Int4Kernel::kExact}), want, s.N)) << "exact kernel";
    EXPECT_TRUE(same_bits(t.run(be, p, {Int4Kernel::kGemm}), want, s.N)) << "gemm kernel";
    // The decode kernel, 8, 16, 32 and 64 rows of the identity at a time (each of
    // its row counts; every weight reaches every fragment row), and the gemv kernel to 32.
    for (const int64_t rows : {8, 16, 32, 64}) {
      for (int64_t k0 = 0; k0 < s.K; k0 += rows) {
        Int4Problem slice = p;
        slice.s.M = rows;
        slice.a.assign(p.a.begin() + k0 * s.K, p.a.begin() + (k0 + rows) * s.K);
        Int4Tensors ts(be, slice);
        const std::vector<double> part(want.begin() + k0 * s.N, want.begin() + (k0 + rows) * s.N);
        EXPECT_TRUE(same_bits(ts.run(be, slice, {Int4Kernel::kDecode}), part, s.N))
            << "decode kernel, rows " << k0 << " .. " << k0 + rows - 1;
        if (rows <= cuda::kInt4GemvMaxRows) {
          EXPECT_TRUE(same_bits(ts.run(be, slice, {Int4Kernel::kGemv}), part, s.N))
              << "gemv kernel, rows " << k0 << " .. " << k0 + rows - 1;
        }
      }
    }
  }
}

TEST(CudaInt4Kernels, RandomDataAgreesWithinTheBound) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  for (const Int4Shape& s : {Int4Shape{1, 4096, 4096, 128, 8}, Int4Shape{5, 1000, 2048, 64, 4},
                             Int4Shape{16, 520, 1024, 32, 2}, Int4Shape{64, 512, 4096, 128, 8},
                             Int4Shape{200, 520, 1024, 256, 8}}) {
    SCOPED_TRACE(name_of(s));
    const Int4Problem p = make_int4(s, Data::kRandom, static_cast<uint64_t>(s.M + 7 * s.N));
    std::vector<double> sum, abs_sum;
    int4_reference(p, sum, abs_sum);
    Int4Tensors t(be, p);
    const std::vector<double> exact = t.run(be, p, {Int4Kernel::kExact});
    EXPECT_TRUE(within_bound(exact, sum, abs_sum, s.K, s.N)) << "exact kernel vs double";
    for (const auto& [label, choice] : int4_choices(s.M)) {
      const std::vector<double> got = t.run(be, p, choice);
      const auto r = within_bound(got, exact, abs_sum, s.K, s.N);
      EXPECT_TRUE(r) << label;
      if (label == "auto") std::printf("  %s, auto vs exact: %s\n", name_of(s).c_str(), r.message());
    }
  }
}

// The gemv kernel (M <= 32) on exact data, bit for bit against the rounded sum and the
// exact kernel: every M to 8 and each side of the row groups past (9, 15, 16, 17, 24, 25,
// 31, 32), innerKTiles 2, 4 and 8, groups 32 to 256; one n tile, a
// single pair (one block) and an odd count (the last block's second tile empty); K of
// one outer tile (or of one group: most warps idle), runs of outer tiles that do not
// divide evenly over the 8 warps, and K 14336 (7 batches a warp: both buffers reloaded);
// the splits auto picks and forced ones (a cluster of 2, 3 or 8 blocks, some empty).
TEST(CudaInt4Kernels, GemvEveryRowCountGivesTheRoundedSumBitForBit) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  std::vector<Int4Shape> shapes;
  for (const int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 24, 25, 31, 32}) {
    for (const int inner : {2, 4, 8}) {
      for (const int64_t group : {32, 64, 128, 256}) {
        const int64_t one_tile = std::max<int64_t>(16 * inner, group);
        shapes.push_back({M, 8, one_tile, group, inner});
        shapes.push_back({M, M % 2 == 0 ? 16 : 24, 1280, group, inner});
        shapes.push_back({M, 520, 1280, group, inner});
      }
    }
  }
  for (const Int4Shape& s : {Int4Shape{1, 24, 14336, 128, 8}, Int4Shape{8, 24, 14336, 32, 8},
                             Int4Shape{3, 40, 14336, 64, 2}, Int4Shape{6, 16, 14336, 256, 4},
                             Int4Shape{5, 520, 4096, 128, 8}, Int4Shape{16, 24, 14336, 32, 8},
                             Int4Shape{27, 40, 14336, 128, 4}, Int4Shape{32, 520, 4096, 64, 8}}) {
    shapes.push_back(s);
  }
  for (const Int4Shape& s : shapes) {
    SCOPED_TRACE(name_of(s));
    const uint64_t seed = static_cast<uint64_t>(s.M * 977 + s.N + s.K + s.group + s.inner);
    const Int4Problem p = make_int4(s, Data::kExact, seed);
    std::vector<double> sum, abs_sum;
    int4_reference(p, sum, abs_sum);
    std::vector<double> want(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) want[i] = bf16(sum[i]);  // the float32 sum is exact
    Int4Tensors t(be, p);
    const std::vector<double> exact = t.run(be, p, {Int4Kernel::kExact});
    EXPECT_TRUE(same_bits(exact, want, s.N)) << "exact kernel";
    for (const int splits : {0, 1, 2, 3, 8}) {
      const std::vector<double> got = t.run(be, p, {Int4Kernel::kGemv, splits, 0});
      EXPECT_TRUE(same_bits(got, want, s.N)) << "gemv splits " << splits;
      EXPECT_TRUE(same_bits(got, exact, s.N)) << "gemv splits " << splits << " vs the exact kernel";
    }
    if (s.M <= cuda::kInt4GemvAutoRows) EXPECT_TRUE(same_bits(t.run(be, p, {}), want, s.N)) << "auto";
    if (::testing::Test::HasFailure()) return;  // one shape's messages are enough
  }
}

// The gemv kernel on random data within the bound of the exact kernel; auto gives the
// gemv kernel's own bits (its default split), so auto picks it for every M to
// kInt4GemvAutoRows.
TEST(CudaInt4Kernels, GemvRandomDataAgreesWithinTheBound) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  std::vector<Int4Shape> shapes;
  for (const int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 24, 32}) shapes.push_back({M, 520, 4096, 128, 8});
  for (const Int4Shape& s : {Int4Shape{1, 4096, 4096, 128, 8}, Int4Shape{3, 264, 14336, 32, 2},
                             Int4Shape{7, 1000, 2048, 64, 4}, Int4Shape{2, 256, 2048, 256, 8},
                             Int4Shape{8, 136, 14336, 128, 8}, Int4Shape{13, 4096, 4096, 128, 8},
                             Int4Shape{20, 264, 14336, 32, 2}}) {
    shapes.push_back(s);
  }
  for (const Int4Shape& s : shapes) {
    SCOPED_TRACE(name_of(s));
    const Int4Problem p = make_int4(s, Data::kRandom, static_cast<uint64_t>(s.M * 31 + s.N + s.K));
    std::vector<double> sum, abs_sum;
    int4_reference(p, sum, abs_sum);
    Int4Tensors t(be, p);
    const std::vector<double> exact = t.run(be, p, {Int4Kernel::kExact});
    EXPECT_TRUE(within_bound(exact, sum, abs_sum, s.K, s.N)) << "exact kernel vs double";
    const std::vector<double> gemv = t.run(be, p, {Int4Kernel::kGemv});
    const auto r = within_bound(gemv, exact, abs_sum, s.K, s.N);
    EXPECT_TRUE(r) << "gemv";
    std::printf("  %s, gemv vs exact: %s\n", name_of(s).c_str(), r.message());
    for (const int splits : {1, 2, 8}) {
      EXPECT_TRUE(within_bound(t.run(be, p, {Int4Kernel::kGemv, splits, 0}), exact, abs_sum, s.K, s.N))
          << "gemv splits " << splits;
    }
    if (s.M <= cuda::kInt4GemvAutoRows) {
      EXPECT_TRUE(same_bits(t.run(be, p, {}), gemv, s.N)) << "auto should be the gemv kernel";
    }
  }
}

// gemv refuses past 32 rows, and an A it cannot read by 4 bytes, with nothing queued
// (the output keeps what it held); it serves an A 4 bytes off 16, which decode refuses.
// Note [Early start]: launched to start while the kernel before it finishes, the gemv kernel
// still reads that kernel's output, not what the memory held before. A chain of two calls
// (the second's A is the first's output), fed two inputs in turn, so that a read before the
// first call's writes would see the other input's product; each result against the same chain
// launched plainly, bit for bit. At 1, 8 and 17 rows (one and three row groups), one split
// and a cluster of 4.
TEST(CudaInt4Kernels, GemvStartedEarlyReadsThePreviousKernelsOutput) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  struct EarlyStartOff {
    ~EarlyStartOff() { cuda::set_early_start_enabled(false); }
  } restore;
  for (const int64_t M : {1, 8, 17}) {
    for (const int splits : {1, 4}) {
      SCOPED_TRACE("M " + std::to_string(M) + ", splits " + std::to_string(splits));
      const Int4Shape s1{M, 4096, 2048, 128, 8}, s2{M, 2048, 4096, 64, 4};
      const Int4Problem p1 = make_int4(s1, Data::kExact, static_cast<uint64_t>(M + 1));
      const Int4Problem p1b = make_int4(s1, Data::kExact, static_cast<uint64_t>(M + 2));
      const Int4Problem p2 = make_int4(s2, Data::kExact, static_cast<uint64_t>(M + 3));
      Int4Tensors t1(be, p1), t2(be, p2);
      const Tensor a_other = make_tensor(be, Values{kBF16, {M, s1.K}, {s1.K, 1}, 0, p1b.a});
      Tensor mid = empty(be, {M, s1.N}, kBF16);
      Tensor out = empty(be, {M, s2.N}, kBF16);
      const cuda::Int4KernelChoice gemv{Int4Kernel::kGemv, splits, 0};
      auto chain = [&](const Tensor& a) {
        EXPECT_TRUE(cuda::int4_tinygemm_mm_with(gemv, impl(mid), impl(a), impl(t1.b), s1.group,
                                                impl(t1.sz), "test_cuda_int_matmul"));
        EXPECT_TRUE(cuda::int4_tinygemm_mm_with(gemv, impl(out), impl(mid), impl(t2.b), s2.group,
                                                impl(t2.sz), "test_cuda_int_matmul"));
      };
      cuda::set_early_start_enabled(false);
      std::vector<double> want[2];
      for (int i = 0; i < 2; ++i) {
        chain(i == 0 ? t1.a : a_other);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        want[i] = values_of(out.get());
      }
      ASSERT_FALSE(same_bits(want[0], want[1], s2.N)) << "the two inputs must give different outputs";
      cuda::set_early_start_enabled(true);
      for (int round = 0; round < 16; ++round) {
        const int i = round % 2;
        chain(i == 0 ? t1.a : a_other);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        ASSERT_TRUE(same_bits(values_of(out.get()), want[i], s2.N)) << "round " << round;
      }
      cuda::set_early_start_enabled(false);
    }
  }
}

TEST(CudaInt4Kernels, GemvRefusesThirtyThreeRowsAndUnalignedAWithNothingQueued) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  {
    const Int4Shape s{cuda::kInt4GemvMaxRows + 1, 136, 512, 128, 8};
    const Int4Problem p = make_int4(s, Data::kExact, 9);
    Int4Tensors t(be, p);
    const std::vector<double> held(static_cast<size_t>(s.M * s.N), 7.0);
    for (const int splits : {0, 1, 4}) {
      Tensor out = make_tensor(be, Values{kBF16, {s.M, s.N}, {s.N, 1}, 0, held});
      EXPECT_FALSE(cuda::int4_tinygemm_mm_with({Int4Kernel::kGemv, splits, 0}, impl(out), impl(t.a),
                                               impl(t.b), s.group, impl(t.sz), "test_cuda_int_matmul"))
          << "M " << s.M << ", splits " << splits;
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(cudaGetLastError(), cudaSuccess);
      EXPECT_TRUE(same_bits(values_of(out.get()), held, s.N)) << "M " << s.M << " wrote its output";
    }
    bool ran = false;
    t.run(be, p, {Int4Kernel::kDecode}, &ran);
    EXPECT_TRUE(ran) << "decode serves M " << s.M;
  }
  const Int4Shape s{3, 136, 512, 128, 8};
  const Int4Problem p = make_int4(s, Data::kExact, 10);
  std::vector<double> sum, abs_sum;
  int4_reference(p, sum, abs_sum);
  std::vector<double> want(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) want[i] = bf16(sum[i]);
  Int4Tensors t(be, p);
  for (const int64_t offset : {1, 2}) {  // 2 and 4 bytes off the buffer's start
    SCOPED_TRACE("A " + std::to_string(offset) + " elements off");
    const std::vector<double> held(static_cast<size_t>(s.M * s.N), 7.0);
    Tensor a = make_tensor(be, Values{kBF16, {s.M, s.K}, {s.K, 1}, offset, p.a});
    Tensor out = make_tensor(be, Values{kBF16, {s.M, s.N}, {s.N, 1}, 0, held});
    const bool served = cuda::int4_tinygemm_mm_with({Int4Kernel::kGemv}, impl(out), impl(a), impl(t.b),
                                                    s.group, impl(t.sz), "test_cuda_int_matmul");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(served, offset == 2) << "gemv reads A by 4 bytes";
    EXPECT_TRUE(same_bits(values_of(out.get()), served ? want : held, s.N));
    EXPECT_FALSE(cuda::int4_tinygemm_mm_with({Int4Kernel::kDecode}, impl(out), impl(a), impl(t.b),
                                             s.group, impl(t.sz), "test_cuda_int_matmul"))
        << "decode stages A by 16 bytes";
  }
}

using Int4Mm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int64_t, AtenTensorHandle,
                                  AtenTensorHandle*);

// The shim runs the kernel its M picks; a misaligned A (a view at an odd
// element offset) falls back to the exact kernel with the same result.
TEST(CudaInt4Kernels, ShimServesEveryMAndMisalignedA) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  const auto f = find_op<Int4Mm>(be, "_weight_int4pack_mm");
  ASSERT_NE(f, nullptr);
  for (int64_t M : {1, 16, 17, 64}) {
    const Int4Shape s{M, 136, 512, 128, 8};
    SCOPED_TRACE(name_of(s));
    const Int4Problem p = make_int4(s, Data::kExact, static_cast<uint64_t>(M));
    std::vector<double> sum, abs_sum;
    int4_reference(p, sum, abs_sum);
    std::vector<double> want(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) want[i] = bf16(sum[i]);
    Int4Tensors t(be, p);
    Tensor out;
    CALL_OK(f(t.a.get(), t.b.get(), s.group, t.sz.get(), out.out()));
    EXPECT_TRUE(same_bits(values_of(out.get()), want, s.N));
    Tensor odd = make_tensor(be, Values{kBF16, {s.M, s.K}, {s.K, 1}, 1, p.a});  // 2 bytes off
    CALL_OK(f(odd.get(), t.b.get(), s.group, t.sz.get(), out.out()));
    EXPECT_TRUE(same_bits(values_of(out.get()), want, s.N)) << "A at an odd offset";
  }
}

// Warm calls captured into a CUDA graph on aotrt's private stream (the capture
// fails on a host wait, another stream or a cudaMalloc), the replay giving the
// eager result: the gemv kernel (M = 1, one split: Note [Int4 matmul kernels]) and the
// decode kernel (M = 64, split in a cluster).
TEST(CudaInt4Kernels, WarmCallsCaptureIntoAGraph) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  const auto f = find_op<Int4Mm>(be, "_weight_int4pack_mm");
  ASSERT_NE(f, nullptr);
  for (int64_t M : {1, 64}) {
    const Int4Shape s{M, 512, 4096, 128, 8};  // few columns: the decode kernel splits K
    SCOPED_TRACE(name_of(s));
    const Int4Problem p = make_int4(s, Data::kExact, 3);
    std::vector<double> sum, abs_sum;
    int4_reference(p, sum, abs_sum);
    std::vector<double> want(sum.size());
    for (size_t i = 0; i < sum.size(); ++i) want[i] = bf16(sum[i]);
    Int4Tensors t(be, p);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cuda::Graph graph(0);
    Tensor out;  // declared after the graph: freed before its pool goes
    {
      cuda::Graph::OnPrivateStream on(graph);
      for (int warm = 0; warm < 2; ++warm) CALL_OK(f(t.a.get(), t.b.get(), s.group, t.sz.get(), out.out()));
      out.reset();
      capture_warm_calls(
          graph,
          [&] { return f(t.a.get(), t.b.get(), s.group, t.sz.get(), out.out()) == AOTI_TORCH_SUCCESS; },
          "test_cuda_int_matmul");
      if (::testing::Test::HasFatalFailure()) return;
    }
    graph.prepare(nullptr);
    graph.replay(nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(same_bits(values_of(out.get()), want, s.N)) << "the replay";
  }
}

// --- _weight_int8pack_mm -------------------------------------------------------------------

using Int8PackMm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                      AtenTensorHandle*);

struct Int8Shape {
  int64_t M, N, K;
};

// The exact data of the test below on aotrt's CPU kernel: its products and sums are exact,
// so the result is the rounded double sum in every dtype. Runs without a GPU.
TEST(CudaInt8Kernels, ExactDataIsExactOnTheCpu) {
  const Backend cpu = built_backends()[0];
  for (const int32_t dtype : {kF32, kBF16, kF16}) {
    const int64_t M = 3, N = 130, K = 4096;
    SCOPED_TRACE(dtype);
    std::mt19937_64 rng(11);
    Values a{dtype, {M, K}, {K, 1}, 0, {}}, w{kI8, {N, K}, {K, 1}, 0, {}}, sc{dtype, {N}, {1}, 0, {}};
    for (int64_t i = 0; i < M * K; ++i) a.values.push_back(static_cast<double>(static_cast<int>(rng() % 17) - 8) / 8);
    for (int64_t i = 0; i < N * K; ++i) w.values.push_back(static_cast<double>(static_cast<int>(rng() % 256) - 128));
    for (int64_t j = 0; j < N; ++j) sc.values.push_back(std::ldexp(1.0, static_cast<int>(rng() % 5) - 8));
    Tensor ta = make_tensor(cpu, a), tw = make_tensor(cpu, w), ts = make_tensor(cpu, sc);
    std::unique_ptr<TensorImpl> out;
    ASSERT_NO_THROW(out = ops::weight_int8pack_mm(impl(ta), impl(tw), impl(ts), "test"));
    Tensor h(handle_register(std::move(out)));
    const std::vector<double> got = values_of(h.get());
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < K; ++k) sum += a.values[static_cast<size_t>(i * K + k)] * w.values[static_cast<size_t>(j * K + k)];
        ASSERT_EQ(got[static_cast<size_t>(i * N + j)], round_dtype(dtype, sum * sc.values[static_cast<size_t>(j)]))
            << "[" << i << ", " << j << "]";
      }
  }
}

TEST(CudaInt8Kernels, WeightInt8PackMmInEveryDtype) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  const auto f = find_op<Int8PackMm>(be, "_weight_int8pack_mm");
  ASSERT_NE(f, nullptr);
  const ops::IntMatmulKernels* table = KernelRegistry<ops::IntMatmulKernels>::cuda;
  ASSERT_NE(table, nullptr);
  const std::vector<Int8Shape> shapes = {{1, 7, 48},    {3, 130, 4096}, {4, 8, 16},  {5, 64, 37},
                                         {16, 33, 512}, {17, 40, 64},   {64, 130, 1024},
                                         {200, 72, 96}, {1, 4096, 4096}};
  for (const int32_t dtype : {kF32, kBF16, kF16}) {
    for (const Int8Shape& s : shapes) {
      for (const bool exact : {true, false}) {
        const std::string what = std::string(dtype == kF32 ? "float32" : dtype == kBF16 ? "bfloat16" : "float16") +
                                 " M " + std::to_string(s.M) + " N " + std::to_string(s.N) + " K " +
                                 std::to_string(s.K) + (exact ? " exact data" : " random data");
        SCOPED_TRACE(what);
        std::mt19937_64 rng(static_cast<uint64_t>(s.M * 1000 + s.N + s.K + dtype));
        std::normal_distribution<double> normal;
        Values a{dtype, {s.M, s.K}, {s.K, 1}, 0, {}}, w{kI8, {s.N, s.K}, {s.K, 1}, 0, {}},
            sc{dtype, {s.N}, {1}, 0, {}};
        for (int64_t i = 0; i < s.M * s.K; ++i) {
          a.values.push_back(exact ? static_cast<double>(static_cast<int>(rng() % 17) - 8) / 8
                                   : round_dtype(dtype, normal(rng)));
        }
        for (int64_t i = 0; i < s.N * s.K; ++i) w.values.push_back(static_cast<double>(static_cast<int>(rng() % 256) - 128));
        for (int64_t j = 0; j < s.N; ++j) {
          sc.values.push_back(exact ? std::ldexp(1.0, static_cast<int>(rng() % 5) - 8)
                                    : round_dtype(dtype, 0.001 + 0.01 * static_cast<double>(rng() % 1000) / 1000));
        }
        Tensor ta = make_tensor(be, a), tw = make_tensor(be, w), ts = make_tensor(be, sc), out;
        CALL_OK(f(ta.get(), tw.get(), ts.get(), out.out()));
        const Meta m = meta(out.get());
        EXPECT_EQ(m.dtype, dtype);
        EXPECT_EQ(m.sizes, (Dims{s.M, s.N}));
        const std::vector<double> got = values_of(out.get());
        // The exact float32 kernel on float32 copies, rounded once to the dtype.
        Tensor a32 = make_tensor(be, Values{kF32, a.sizes, a.strides, 0, a.values});
        Tensor s32 = make_tensor(be, Values{kF32, sc.sizes, sc.strides, 0, sc.values});
        Tensor e32 = empty(be, {s.M, s.N}, kF32);
        table->int8_weight_mm(impl(e32), impl(a32), impl(tw), impl(s32));
        std::vector<double> exact_out = values_of(e32.get());
        for (double& v : exact_out) v = round_dtype(dtype, v);
        std::vector<double> abs_sum(got.size(), 0.0), sum(got.size(), 0.0);
        for (int64_t i = 0; i < s.M; ++i)
          for (int64_t j = 0; j < s.N; ++j)
            for (int64_t k = 0; k < s.K; ++k) {
              const double p = a.values[static_cast<size_t>(i * s.K + k)] * w.values[static_cast<size_t>(j * s.K + k)];
              sum[static_cast<size_t>(i * s.N + j)] += p * sc.values[static_cast<size_t>(j)];
              abs_sum[static_cast<size_t>(i * s.N + j)] += std::fabs(p * sc.values[static_cast<size_t>(j)]);
            }
        const double unit = dtype == kF32 ? std::ldexp(1.0, -24) : dtype == kBF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
        for (size_t i = 0; i < got.size(); ++i) {
          if (exact) {
            EXPECT_EQ(got[i], round_dtype(dtype, sum[i])) << "element " << i;
            EXPECT_EQ(got[i], exact_out[i]) << "element " << i << " vs the exact kernel";
          } else {
            // Two float32 sums of K terms in different orders, one product by the
            // scale each, one rounding to the dtype each.
            const double tol = 2.0 * static_cast<double>(s.K + 1) * std::ldexp(abs_sum[i], -24) +
                               unit * (std::fabs(got[i]) + std::fabs(exact_out[i]));
            EXPECT_LE(std::fabs(got[i] - exact_out[i]), tol) << "element " << i;
          }
          if (::testing::Test::HasFailure()) break;
        }
      }
    }
  }
}

// --- _int_mm ---------------------------------------------------------------------------

using IntMmOut = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);

TEST(CudaIntMm, ViewsMatchTheExactKernelBitForBit) {
  REQUIRE_CUDA_DEVICE();
  const Backend be = cuda_backend();
  const auto f = find_op<IntMmOut>(be, "_int_mm_out");
  ASSERT_NE(f, nullptr);
  const ops::IntMatmulKernels* table = KernelRegistry<ops::IntMatmulKernels>::cuda;
  ASSERT_NE(table, nullptr);
  struct Shape {
    int64_t m, k, n;
  };
  for (const Shape& s : {Shape{1, 4096, 4096}, Shape{3, 48, 24}, Shape{16, 40, 8}, Shape{17, 64, 24},
                         Shape{64, 4096, 1024}, Shape{200, 48, 40}, Shape{5, 37, 9}}) {
    for (const bool mat2_col_major : {true, false}) {
      for (const bool out_col_major : {false, true}) {
        const std::string what = "m " + std::to_string(s.m) + " k " + std::to_string(s.k) + " n " +
                                 std::to_string(s.n) + (mat2_col_major ? ", mat2 column-major" : ", mat2 row-major") +
                                 (out_col_major ? ", out column-major" : "");
        SCOPED_TRACE(what);
        std::mt19937_64 rng(static_cast<uint64_t>(s.m + s.k + s.n));
        Values a{kI8, {s.m, s.k}, {s.k, 1}, 0, {}};
        Values b{kI8, {s.k, s.n}, mat2_col_major ? Dims{1, s.k} : Dims{s.n, 1}, 0, {}};
        for (int64_t i = 0; i < s.m * s.k; ++i) a.values.push_back(static_cast<double>(static_cast<int>(rng() % 256) - 128));
        for (int64_t i = 0; i < s.k * s.n; ++i) b.values.push_back(static_cast<double>(static_cast<int>(rng() % 256) - 128));
        Tensor ta = make_tensor(be, a), tb = make_tensor(be, b);
        Tensor out = empty(be, {s.m, s.n}, out_col_major ? Dims{1, s.m} : Dims{s.n, 1}, kI32);
        const uint64_t lt_before = cuda::gemm_plan_stats().lt_calls;
        CALL_OK(f(out.get(), ta.get(), tb.get()));
        const bool lt = cuda::gemm_plan_stats().lt_calls > lt_before;
        // The exact kernel on dense copies.
        Tensor da = make_tensor(be, Values{kI8, a.sizes, row_major(a.sizes), 0, a.values});
        Tensor db = make_tensor(be, Values{kI8, b.sizes, row_major(b.sizes), 0, b.values});
        Tensor want = empty(be, {s.m, s.n}, kI32);
        table->int_mm(impl(want), impl(da), impl(db));
        EXPECT_TRUE(same_bits(values_of(out.get()), values_of(want.get()), s.n));
        if (s.m > 16 && mat2_col_major && !out_col_major && s.k % 16 == 0) {
          EXPECT_TRUE(lt) << "cuBLASLt's int8 GEMM should serve the layout ATen gives it";
        }
        std::printf("  _int_mm %s: %s\n", what.c_str(), lt ? "cuBLASLt" : "aotrt's kernel");
      }
    }
  }
}

}  // namespace
}  // namespace aotrt::test
