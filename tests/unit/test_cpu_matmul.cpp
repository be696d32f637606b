// aoti_torch_cpu_{mm,addmm,bmm,baddbmm}_out, driven through the C ABI as
// generated code drives them, against a double-precision reference loop that
// reads the same views by their strides.
//
// Tolerance: float32 results may differ from the double reference by
// 1e-5 of the sum of |products| (plus 1e-6): K <= 400 here, so the float32
// rounding bound K * 2^-24 * sum|a*b| stays under a third of it. float64 uses
// 1e-12; bfloat16 4e-3 (one rounding of the result, 2^-8, plus input
// rounding, on unit-scale sums).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "cpu_ops_testing.h"

namespace aotrt::test {
namespace {

const int32_t kF32 = 6, kF64 = 7, kBF16 = 15, kI32 = 3;

// An element (b, i, j) of an operand; b is ignored for 2-d layouts.
template <typename T>
double element(const HostBuffer<T>& buf, const Layout& l, int64_t b, int64_t i, int64_t j) {
  const int64_t off = l.sizes.size() == 3 ? l.at({b, i, j}) : l.at({i, j});
  if constexpr (std::is_same_v<T, uint16_t>) {  // bfloat16 bits
    uint32_t u = static_cast<uint32_t>(buf[off]) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  } else {
    return static_cast<double>(buf[off]);
  }
}

using Get = std::function<double(int64_t, int64_t, int64_t)>;

struct Expected {
  int64_t batch = 1, rows = 0, cols = 0;
  std::vector<double> value, scale;  // batch x rows x cols, row-major
};

// alpha * a @ b + beta * self (self may be empty).
Expected reference(int64_t B, int64_t M, int64_t K, int64_t N, const Get& a, const Get& b,
                   const Get& self, double beta, double alpha) {
  Expected e{B, M, N, std::vector<double>(B * M * N), std::vector<double>(B * M * N)};
  for (int64_t x = 0; x < B; ++x)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, abs = 0;
        for (int64_t k = 0; k < K; ++k) {
          s += a(x, i, k) * b(x, k, j);
          abs += std::fabs(a(x, i, k) * b(x, k, j));
        }
        double v = alpha * s, sc = std::fabs(alpha) * abs;
        if (self && beta != 0) {
          v += beta * self(x, i, j);
          sc += std::fabs(beta * self(x, i, j));
        }
        e.value[(x * M + i) * N + j] = v;
        e.scale[(x * M + i) * N + j] = sc;
      }
  return e;
}

// Compares out (read through its layout) with e, and checks that every
// element of the buffer outside the view still holds `sentinel`.
template <typename T>
void expect_out(const HostBuffer<T>& buf, const Layout& out, const Expected& e, double rtol,
                T sentinel) {
  std::set<int64_t> inside;
  int failures = 0;
  for (int64_t x = 0; x < e.batch; ++x)
    for (int64_t i = 0; i < e.rows; ++i)
      for (int64_t j = 0; j < e.cols; ++j) {
        const int64_t off = out.sizes.size() == 3 ? out.at({x, i, j}) : out.at({i, j});
        inside.insert(off);
        const double got = element(buf, out, x, i, j);
        const size_t n = static_cast<size_t>((x * e.rows + i) * e.cols + j);
        const double tol = rtol * e.scale[n] + 1e-6;
        if (!(std::fabs(got - e.value[n]) <= tol) && failures++ < 5) {
          ADD_FAILURE() << "out[" << x << "," << i << "," << j << "] = " << got << ", expected "
                        << e.value[n] << " (tolerance " << tol << ")";
        }
      }
  for (int64_t o = 0; o < buf.size(); ++o) {
    if (inside.count(o) == 0 && !(buf[o] == sentinel) && failures++ < 10) {
      ADD_FAILURE() << "element " << o << " outside the out view was written";
    }
  }
  EXPECT_EQ(failures, 0);
}

// A float operand filled with noise, viewed with layout l.
struct F32Operand {
  HostBuffer<float> buf;
  Layout l;
  Handle h;
  F32Operand(const Layout& layout, int64_t seed)
      : buf(layout.extent() + 3, 0.f, kF32), l(layout) {
    for (int64_t i = 0; i < buf.size(); ++i) buf[i] = noise(i + seed * 100003);
    h = buf.view(l);
  }
  Get get() const {
    return [this](int64_t b, int64_t i, int64_t j) { return element(buf, l, b, i, j); };
  }
};

// A float out buffer filled with a sentinel, viewed with layout l.
struct F32Out {
  HostBuffer<float> buf;
  Layout l;
  Handle h;
  float sentinel;
  F32Out(const Layout& layout, float fill = -777.f)
      : buf(layout.extent() + 5, fill, kF32), l(layout), sentinel(fill) {
    h = buf.view(l);
  }
};

constexpr double kF32Tol = 1e-5;

void check_mm(const Layout& la, const Layout& lb, const Layout& lout) {
  F32Operand a(la, 1), b(lb, 2);
  F32Out out(lout);
  ASSERT_EQ(aoti_torch_cpu_mm_out(out.h.get(), a.h.get(), b.h.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  const int64_t M = la.sizes[0], K = la.sizes[1], N = lb.sizes[1];
  expect_out(out.buf, lout, reference(1, M, K, N, a.get(), b.get(), nullptr, 0, 1), kF32Tol,
             out.sentinel);
}

// --- mm -------------------------------------------------------------------------

TEST(CpuMatmul, MmPlain) {
  check_mm(dense({65, 130}), dense({130, 33}), dense({65, 33}));
}

TEST(CpuMatmul, MmTransposedInputs) {
  // a = [M,K] seen through a transpose of [K,M]; b likewise.
  check_mm({{17, 23}, {1, 17}, 0}, {{23, 9}, {1, 23}, 0}, dense({17, 9}));
}

TEST(CpuMatmul, MmRowStridedInputs) {
  // Columns 3..25 of a [17, 40] buffer; a [23, 9] slice of a [23, 12] buffer at offset 2.
  check_mm({{17, 23}, {40, 1}, 3}, {{23, 9}, {12, 1}, 2}, dense({17, 9}));
}

TEST(CpuMatmul, MmInputsWithNoUnitStrideArePacked) {
  // Every other element of every other row, and a stride-0 broadcast row.
  check_mm({{7, 11}, {44, 2}, 1}, {{11, 5}, {0, 1}, 0}, dense({7, 5}));
  check_mm({{7, 11}, {3, 21}, 0}, {{11, 5}, {10, 2}, 0}, dense({7, 5}));
}

TEST(CpuMatmul, MmWritesThroughNonPackedOutViews) {
  // Every other column of a wider buffer: not BLAS-writable, goes through a temporary.
  check_mm(dense({9, 14}), dense({14, 6}), {{9, 6}, {15, 2}, 1});
  // Row-strided: written in place by BLAS.
  check_mm(dense({9, 14}), dense({14, 6}), {{9, 6}, {10, 1}, 3});
  // Transposed (column-major): written in place by BLAS.
  check_mm(dense({9, 14}), dense({14, 6}), {{9, 6}, {1, 11}, 2});
}

TEST(CpuMatmul, MmVectorShapes) {
  check_mm(dense({1, 30}), dense({30, 1}), dense({1, 1}));
  check_mm({{1, 30}, {5, 3}, 0}, {{30, 4}, {4, 1}, 0}, {{1, 4}, {9, 2}, 0});
  check_mm(dense({8, 1}), {{1, 7}, {99, 3}, 0}, dense({8, 7}));
}

TEST(CpuMatmul, MmEmptyDims) {
  // K == 0 gives zeros, even over NaN in out.
  F32Operand a(dense({3, 0}), 1), b(dense({0, 4}), 2);
  F32Out out(dense({3, 4}), std::numeric_limits<float>::quiet_NaN());
  ASSERT_EQ(aoti_torch_cpu_mm_out(out.h.get(), a.h.get(), b.h.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(out.buf[i], 0.f) << i;
  // M == 0 and N == 0 write nothing.
  F32Operand a0(dense({0, 5}), 1), b0(dense({5, 4}), 2);
  F32Out out0(dense({0, 4}));
  ASSERT_EQ(aoti_torch_cpu_mm_out(out0.h.get(), a0.h.get(), b0.h.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  F32Operand a1(dense({3, 5}), 1), b1(dense({5, 0}), 2);
  F32Out out1(dense({3, 0}));
  ASSERT_EQ(aoti_torch_cpu_mm_out(out1.h.get(), a1.h.get(), b1.h.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  for (int64_t i = 0; i < out1.buf.size(); ++i) EXPECT_EQ(out1.buf[i], out1.sentinel);
}

TEST(CpuMatmul, MmOutAliasingAnInputIsReadFirst) {
  // out is mat1's own memory: the result is as if mat1 had been read first.
  HostBuffer<float> buf(36, 0.f, kF32);
  for (int64_t i = 0; i < 36; ++i) buf[i] = small_int(i);
  const std::vector<float> before = buf.data();
  Handle a = buf.view(dense({6, 6}));
  F32Operand b(dense({6, 6}), 3);
  ASSERT_EQ(aoti_torch_cpu_mm_out(a.get(), a.get(), b.h.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 6; ++k) s += before[i * 6 + k] * b.buf[k * 6 + j];
      EXPECT_NEAR(buf[i * 6 + j], s, 1e-4) << i << "," << j;
    }
}

TEST(CpuMatmul, MmFloat64) {
  HostBuffer<double> a(20 * 7, 0, kF64), b(7 * 3 * 2, 0, kF64), out(20 * 3, -1, kF64);
  for (int64_t i = 0; i < a.size(); ++i) a[i] = noise(i);
  for (int64_t i = 0; i < b.size(); ++i) b[i] = noise(i + 999);
  const Layout la = dense({20, 7}), lb{{7, 3}, {1, 14}, 1}, lo = dense({20, 3});
  Handle ha = a.view(la), hb = b.view(lb), ho = out.view(lo);
  ASSERT_EQ(aoti_torch_cpu_mm_out(ho.get(), ha.get(), hb.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  auto ga = [&](int64_t, int64_t i, int64_t j) { return element(a, la, 0, i, j); };
  auto gb = [&](int64_t, int64_t i, int64_t j) { return element(b, lb, 0, i, j); };
  expect_out(out, lo, reference(1, 20, 7, 3, ga, gb, nullptr, 0, 1), 1e-12, -1.0);
}

TEST(CpuMatmul, MmBFloat16ComputesInFloat32) {
  auto bf16 = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  };
  HostBuffer<uint16_t> a(12 * 40, 0, kBF16), b(40 * 5, 0, kBF16), out(12 * 5, 0xffff, kBF16);
  for (int64_t i = 0; i < a.size(); ++i) a[i] = bf16(noise(i));
  for (int64_t i = 0; i < b.size(); ++i) b[i] = bf16(noise(i + 77));
  const Layout la{{12, 40}, {1, 12}, 0}, lb = dense({40, 5}), lo = dense({12, 5});
  Handle ha = a.view(la), hb = b.view(lb), ho = out.view(lo);
  ASSERT_EQ(aoti_torch_cpu_mm_out(ho.get(), ha.get(), hb.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  auto ga = [&](int64_t, int64_t i, int64_t j) { return element(a, la, 0, i, j); };
  auto gb = [&](int64_t, int64_t i, int64_t j) { return element(b, lb, 0, i, j); };
  expect_out(out, lo, reference(1, 12, 40, 5, ga, gb, nullptr, 0, 1), 4e-3, uint16_t{0xffff});
}

// --- addmm ----------------------------------------------------------------------

void check_addmm(const Layout& lself, const Layout& la, const Layout& lb, const Layout& lout,
                 double beta, double alpha) {
  F32Operand self(lself, 5), a(la, 1), b(lb, 2);
  F32Out out(lout);
  ASSERT_EQ(aoti_torch_cpu_addmm_out(out.h.get(), self.h.get(), a.h.get(), b.h.get(), beta,
                                     alpha),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  const int64_t M = la.sizes[0], K = la.sizes[1], N = lb.sizes[1];
  // self broadcast to [M, N]: align right, size-1 dims repeat.
  Get gs = [&](int64_t, int64_t i, int64_t j) {
    std::vector<int64_t> idx;
    if (lself.sizes.size() == 2) idx = {lself.sizes[0] == 1 ? 0 : i, lself.sizes[1] == 1 ? 0 : j};
    if (lself.sizes.size() == 1) idx = {lself.sizes[0] == 1 ? 0 : j};
    return static_cast<double>(self.buf[lself.at(idx)]);
  };
  expect_out(out.buf, lout, reference(1, M, K, N, a.get(), b.get(), gs, beta, alpha), kF32Tol,
             out.sentinel);
}

TEST(CpuMatmul, AddmmBiasBroadcasts) {
  check_addmm(dense({9}), dense({13, 21}), {{21, 9}, {1, 21}, 0}, dense({13, 9}), 1.0, 1.0);
  check_addmm(dense({1, 9}), dense({13, 21}), dense({21, 9}), dense({13, 9}), 0.5, 2.0);
  // A stride-0 expanded bias, as generated code passes it.
  check_addmm({{13, 9}, {0, 1}, 2}, dense({13, 21}), dense({21, 9}), dense({13, 9}), 1.0, -1.0);
  check_addmm(dense({13, 1}), dense({13, 21}), dense({21, 9}), {{13, 9}, {1, 15}, 0}, 2.0, 1.0);
  check_addmm(dense({13, 9}), dense({13, 21}), dense({21, 9}), {{13, 9}, {30, 3}, 1}, 1.5, 0.5);
}

TEST(CpuMatmul, AddmmBetaZeroIgnoresNaNInSelf) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Layout& lout : {dense({5, 4}), Layout{{5, 4}, {9, 2}, 0}}) {
    HostBuffer<float> self(20, nan, kF32);
    F32Operand a(dense({5, 3}), 1), b(dense({3, 4}), 2);
    F32Out out(lout, nan);  // NaN in out must not survive either
    Handle hs = self.view(dense({5, 4}));
    ASSERT_EQ(aoti_torch_cpu_addmm_out(out.h.get(), hs.get(), a.h.get(), b.h.get(), 0.0, 1.0),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    const Expected e = reference(1, 5, 3, 4, a.get(), b.get(), nullptr, 0, 1);
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        EXPECT_NEAR(out.buf[lout.at({i, j})], e.value[i * 4 + j], 1e-5) << i << "," << j;
      }
  }
}

TEST(CpuMatmul, AddmmEmptySumIsBetaSelf) {
  F32Operand self(dense({4}), 5), a(dense({3, 0}), 1), b(dense({0, 4}), 2);
  F32Out out(dense({3, 4}));
  ASSERT_EQ(aoti_torch_cpu_addmm_out(out.h.get(), self.h.get(), a.h.get(), b.h.get(), 2.5, 1.0),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(out.buf[i * 4 + j], 2.5f * self.buf[j]);
  // beta == 0: zeros, NaN in self notwithstanding.
  HostBuffer<float> nan_self(4, std::numeric_limits<float>::quiet_NaN(), kF32);
  Handle hn = nan_self.view(dense({4}));
  ASSERT_EQ(aoti_torch_cpu_addmm_out(out.h.get(), hn.get(), a.h.get(), b.h.get(), 0.0, 1.0),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(out.buf[i], 0.f) << i;
}

TEST(CpuMatmul, AddmmInPlaceOnSelf) {
  // addmm_out(out=self): out = beta * out + alpha * a @ b.
  HostBuffer<float> c(6 * 5, 0.f, kF32);
  for (int64_t i = 0; i < c.size(); ++i) c[i] = small_int(i);
  const std::vector<float> before = c.data();
  Handle hc = c.view(dense({6, 5}));
  F32Operand a(dense({6, 4}), 1), b(dense({4, 5}), 2);
  ASSERT_EQ(aoti_torch_cpu_addmm_out(hc.get(), hc.get(), a.h.get(), b.h.get(), 3.0, 0.5),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  Get gs = [&](int64_t, int64_t i, int64_t j) { return static_cast<double>(before[i * 5 + j]); };
  const Expected e = reference(1, 6, 4, 5, a.get(), b.get(), gs, 3.0, 0.5);
  for (int64_t n = 0; n < 30; ++n) EXPECT_NEAR(c[n], e.value[n], 1e-5) << n;
}

// --- bmm and baddbmm ---------------------------------------------------------------

void check_bmm(const Layout& la, const Layout& lb, const Layout& lout) {
  F32Operand a(la, 1), b(lb, 2);
  F32Out out(lout);
  ASSERT_EQ(aoti_torch_cpu_bmm_out(out.h.get(), a.h.get(), b.h.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  const int64_t B = la.sizes[0], M = la.sizes[1], K = la.sizes[2], N = lb.sizes[2];
  expect_out(out.buf, lout, reference(B, M, K, N, a.get(), b.get(), nullptr, 0, 1), kF32Tol,
             out.sentinel);
}

TEST(CpuMatmul, BmmPlainAndTransposed) {
  check_bmm(dense({3, 8, 12}), dense({3, 12, 5}), dense({3, 8, 5}));
  check_bmm({{3, 8, 12}, {96, 1, 8}, 0}, {{3, 12, 5}, {60, 1, 12}, 0}, dense({3, 8, 5}));
}

TEST(CpuMatmul, BmmPermutedInputOfYoloAttention) {
  // [2,64,400] with strides [1,800,2]: no batch matrix has a unit stride.
  check_bmm({{2, 64, 400}, {1, 800, 2}, 0}, dense({2, 400, 32}), dense({2, 64, 32}));
  check_bmm(dense({2, 32, 64}), {{2, 64, 400}, {1, 800, 2}, 0}, dense({2, 32, 400}));
}

TEST(CpuMatmul, BmmBroadcastBatchAndInterleavedOut) {
  // mat2 expanded along the batch (stride 0); out is a [S,H,D] buffer seen as
  // [H,S,D] (batches interleaved, not overlapping): written in place.
  check_bmm(dense({4, 6, 10}), {{4, 10, 8}, {0, 8, 1}, 0}, {{4, 6, 8}, {8, 32, 1}, 0});
  // The same out in a gapped buffer, and a batch-strided out.
  check_bmm(dense({4, 6, 10}), dense({4, 10, 8}), {{4, 6, 8}, {9, 40, 1}, 2});
}

TEST(CpuMatmul, BmmEmpty) {
  check_bmm(dense({0, 3, 4}), dense({0, 4, 5}), dense({0, 3, 5}));
  F32Operand a(dense({2, 3, 0}), 1), b(dense({2, 0, 5}), 2);
  F32Out out(dense({2, 3, 5}), std::numeric_limits<float>::quiet_NaN());
  ASSERT_EQ(aoti_torch_cpu_bmm_out(out.h.get(), a.h.get(), b.h.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(out.buf[i], 0.f) << i;
}

TEST(CpuMatmul, BaddbmmBroadcastsSelf) {
  const Layout la{{3, 5, 7}, {35, 1, 5}, 0}, lb = dense({3, 7, 4});
  for (const Layout& lself : {dense({4}), dense({5, 4}), Layout{{3, 5, 4}, {0, 4, 1}, 0},
                              dense({3, 1, 4})}) {
    F32Operand self(lself, 5), a(la, 1), b(lb, 2);
    const Layout lout{{3, 5, 4}, {40, 8, 2}, 1};
    F32Out out(lout);
    ASSERT_EQ(aoti_torch_cpu_baddbmm_out(out.h.get(), self.h.get(), a.h.get(), b.h.get(), 0.75,
                                         -2.0),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    Get gs = [&](int64_t x, int64_t i, int64_t j) {
      const size_t n = lself.sizes.size();
      std::vector<int64_t> full{x, i, j}, idx;
      for (size_t d = 0; d < n; ++d) {
        const size_t fd = 3 - n + d;
        idx.push_back(lself.sizes[d] == 1 ? 0 : full[fd]);
      }
      return static_cast<double>(self.buf[lself.at(idx)]);
    };
    expect_out(out.buf, lout, reference(3, 5, 7, 4, a.get(), b.get(), gs, 0.75, -2.0), kF32Tol,
               out.sentinel);
  }
}

// --- Refusals -----------------------------------------------------------------------

TEST(CpuMatmul, RefusesWrongShapedOut) {
  F32Operand a(dense({3, 4}), 1), b(dense({4, 5}), 2);
  F32Out out(dense({3, 6}));
  EXPECT_EQ(aoti_torch_cpu_mm_out(out.h.get(), a.h.get(), b.h.get()), AOTI_TORCH_FAILURE);
  const std::string msg = aotrt_last_error();
  EXPECT_NE(msg.find("aoti_torch_cpu_mm_out"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'out'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not resize"), std::string::npos) << msg;
  for (int64_t i = 0; i < out.buf.size(); ++i) EXPECT_EQ(out.buf[i], out.sentinel);
}

TEST(CpuMatmul, RefusesOutWithStrideZero) {
  F32Operand a(dense({3, 4}), 1), b(dense({4, 5}), 2);
  F32Out out({{3, 5}, {0, 1}, 0});
  EXPECT_EQ(aoti_torch_cpu_mm_out(out.h.get(), a.h.get(), b.h.get()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("stride 0"), std::string::npos);
}

TEST(CpuMatmul, RefusesMismatchedShapesAndDtypes) {
  F32Operand a(dense({3, 4}), 1), b(dense({5, 5}), 2);
  F32Out out(dense({3, 5}));
  EXPECT_EQ(aoti_torch_cpu_mm_out(out.h.get(), a.h.get(), b.h.get()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("cannot be multiplied"), std::string::npos);

  HostBuffer<double> d(20, 0, kF64);
  Handle hd = d.view(dense({4, 5}));
  F32Operand a2(dense({3, 4}), 1);
  EXPECT_EQ(aoti_torch_cpu_mm_out(out.h.get(), a2.h.get(), hd.get()), AOTI_TORCH_FAILURE);
  const std::string msg = aotrt_last_error();
  EXPECT_NE(msg.find("'mat2'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;

  F32Operand a3(dense({2, 3, 4}), 1);  // mm of a 3-d tensor
  EXPECT_EQ(aoti_torch_cpu_mm_out(out.h.get(), a3.h.get(), b.h.get()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("must be 2-d"), std::string::npos);

  // addmm self that does not broadcast.
  F32Operand self(dense({4}), 1), m1(dense({3, 4}), 2), m2(dense({4, 5}), 3);
  EXPECT_EQ(aoti_torch_cpu_addmm_out(out.h.get(), self.h.get(), m1.h.get(), m2.h.get(), 1, 1),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("cannot be broadcast"), std::string::npos);
}

TEST(CpuMatmul, RefusesDeadHandles) {
  F32Operand a(dense({3, 4}), 1);
  F32Out out(dense({3, 5}));
  AtenTensorHandle dead = nullptr;
  {
    F32Operand b(dense({4, 5}), 2);
    ASSERT_EQ(aoti_torch_new_tensor_handle(b.h.get(), &dead), AOTI_TORCH_SUCCESS);
    ASSERT_EQ(aoti_torch_delete_tensor_object(dead), AOTI_TORCH_SUCCESS);
  }
  EXPECT_EQ(aoti_torch_cpu_mm_out(out.h.get(), a.h.get(), dead), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("argument 'mat2'"), std::string::npos);
  EXPECT_EQ(aoti_torch_cpu_mm_out(out.h.get(), nullptr, a.h.get()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("argument 'self'"), std::string::npos);
}

}  // namespace
}  // namespace aotrt::test
