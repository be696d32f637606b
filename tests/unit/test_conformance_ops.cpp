// Conformance: library ops (the generated fallback shims) read non-packed
// views as they are and write results through strided output views. The
// ops are looked up at run time by their per-device names
// (aoti_torch_<cpu|cuda>_mm_out, ...) so this file builds before they land;
// a missing op is reported as SKIPPED with its name, never as passed.
// See the table in test_conformance.cpp.
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <cmath>
#include <string>
#include <vector>

#include "conformance_backends.h"

namespace aotrt::test {
namespace {

using F = std::vector<float>;
using MmOut = decltype(&aoti_torch_cpu_mm_out);
using BmmOut = decltype(&aoti_torch_cpu_bmm_out);
using Convolution = decltype(&aoti_torch_cpu_convolution);

class ConformanceOps : public ::testing::TestWithParam<Backend> {
 protected:
  template <typename Fn>
  Fn op(const char* name) {
    const std::string full = std::string(GetParam().op_prefix) + name;
    return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, full.c_str()));
  }
};

#define REQUIRE_OP(fn, name)                                                   \
  if (fn == nullptr) {                                                         \
    GTEST_SKIP() << GetParam().op_prefix << name << " is not in libaotrt yet"; \
  }

// Small integers: every product and sum below is exact in float32.
float small(int64_t i) { return static_cast<float>((i * 7 + 3) % 11) - 5.f; }

TEST_P(ConformanceOps, MmReadsNonPackedViewsAndWritesAStridedOut) {
  const Backend& b = GetParam();
  auto mm_out = op<MmOut>("mm_out");
  REQUIRE_OP(mm_out, "mm_out");
  constexpr int64_t M = 5, K = 7, N = 6;
  F a_buf(M * 16), b_buf(N * 9);
  for (size_t i = 0; i < a_buf.size(); ++i) a_buf[i] = small(static_cast<int64_t>(i));
  for (size_t i = 0; i < b_buf.size(); ++i) b_buf[i] = small(static_cast<int64_t>(i) + 5);
  Tensor A_parent = filled<float>(b, a_buf, {M, 16});
  Tensor B_parent = filled<float>(b, b_buf, {N, 9});
  Tensor A = reinterpret(A_parent.get(), {M, K}, {16, 1}, 3);  // columns 3..9 of each row
  Tensor B = reinterpret(B_parent.get(), {K, N}, {1, 9}, 1);   // transposed, gapped
  Tensor out_parent = filled<float>(b, F(M * 20, -7.f), {M, 20});
  Tensor out = reinterpret(out_parent.get(), {M, N}, {20, 2}, 1);  // every other column
  ASSERT_EQ(mm_out(out.get(), A.get(), B.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  F want(M * 20, -7.f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(a_buf[i * 16 + 3 + k]) * b_buf[1 + k + 9 * j];
      want[i * 20 + 1 + 2 * j] = static_cast<float>(s);
    }
  EXPECT_EQ(kernel_read<float>(b, out_parent.get()), want);
}

TEST_P(ConformanceOps, MmWritesIntoAChannelsLastChunk) {
  // The output is a chunk along C of a channels-last buffer: [HW, C/2] rows
  // of a [HW, C] matrix at column offset C/2 (strides [C, 1]).
  const Backend& b = GetParam();
  auto mm_out = op<MmOut>("mm_out");
  REQUIRE_OP(mm_out, "mm_out");
  constexpr int64_t HW = 9, C = 8, K = 4;
  F x(HW * K), w(K * C / 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = small(static_cast<int64_t>(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = small(static_cast<int64_t>(i) + 2);
  Tensor X = filled<float>(b, x, {HW, K});
  Tensor W = filled<float>(b, w, {K, C / 2});
  Tensor cat = filled<float>(b, F(HW * C, 0.5f), {HW, C});
  Tensor chunk = reinterpret(cat.get(), {HW, C / 2}, {C, 1}, C / 2);
  ASSERT_EQ(mm_out(chunk.get(), X.get(), W.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  F want(HW * C, 0.5f);
  for (int64_t i = 0; i < HW; ++i)
    for (int64_t j = 0; j < C / 2; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(x[i * K + k]) * w[k * (C / 2) + j];
      want[i * C + C / 2 + j] = static_cast<float>(s);
    }
  EXPECT_EQ(kernel_read<float>(b, cat.get()), want);
}

TEST_P(ConformanceOps, BmmReadsThePermutedInputYolo11Needs) {
  // yolo11n's bmm input: [2, 64, 400] with strides [1, 800, 2].
  const Backend& b = GetParam();
  auto bmm_out = op<BmmOut>("bmm_out");
  REQUIRE_OP(bmm_out, "bmm_out");
  constexpr int64_t B = 2, M = 64, K = 400, N = 8;
  F storage(B * M * K);
  for (size_t i = 0; i < storage.size(); ++i) storage[i] = small(static_cast<int64_t>(i)) / 4.f;
  Tensor buf = filled<float>(b, storage, {B * M * K});
  Tensor self = reinterpret(buf.get(), {B, M, K}, {1, 800, 2}, 0);
  F m2(B * K * N);
  for (size_t i = 0; i < m2.size(); ++i) m2[i] = small(static_cast<int64_t>(i) + 1) / 2.f;
  Tensor mat2 = filled<float>(b, m2, {B, K, N});
  Tensor out = empty(b, {B, M, N}, kF32);
  ASSERT_EQ(bmm_out(out.get(), self.get(), mat2.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const F got = read<float>(out.get());
  int64_t bad = 0;
  for (int64_t z = 0; z < B; ++z)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += double(storage[z + 800 * i + 2 * k]) * m2[(z * K + k) * N + j];
        if (std::fabs(got[(z * M + i) * N + j] - s) > 1e-3 * (1 + std::fabs(s))) ++bad;
      }
  EXPECT_EQ(bad, 0);
}

// out[n, o, y, x] of a conv2d with stride 1, dilation 1, groups 1.
F conv_reference(const F& in, int64_t C, int64_t H, int64_t W, const F& wt, int64_t O,
                 int64_t kh, int64_t kw, int64_t pad, const F* bias) {
  F out(O * H * W);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) {
        double s = bias ? (*bias)[o] : 0.0;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t dy = 0; dy < kh; ++dy)
            for (int64_t dx = 0; dx < kw; ++dx) {
              const int64_t yy = y + dy - pad, xx = x + dx - pad;
              if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
              s += double(in[(c * H + yy) * W + xx]) * wt[((o * C + c) * kh + dy) * kw + dx];
            }
        out[(o * H + y) * W + x] = static_cast<float>(s);
      }
  return out;
}

TEST_P(ConformanceOps, ConvolutionReadsAChannelsLastChunk) {
  // C2f: a 1x1 conv (and a 3x3 one) on chunk 1 of a [1, 32, 6, 6]
  // channels-last buffer: sizes [1, 8, 6, 6], strides [1152, 1, 192, 32], offset 8.
  const Backend& b = GetParam();
  auto conv = op<Convolution>("convolution");
  REQUIRE_OP(conv, "convolution");
  constexpr int64_t C = 8, H = 6, W = 6, O = 4;
  Tensor parent = empty(b, {1, 32, H, W}, {1152, 1, 192, 32}, kF32);
  F storage(1152);
  for (size_t i = 0; i < storage.size(); ++i) storage[i] = small(static_cast<int64_t>(i));
  Tensor flat = reinterpret(parent.get(), {1152}, {1}, 0);
  write<float>(flat.get(), storage);
  Tensor chunk = reinterpret(parent.get(), {1, C, H, W}, {1152, 1, 192, 32}, 8);
  F in(C * H * W);  // the chunk's elements, NCHW order
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) in[(c * H + y) * W + x] = storage[8 + c + 192 * y + 32 * x];
  const int64_t one[2] = {1, 1}, zero[2] = {0, 0}, pad1[2] = {1, 1};
  for (int64_t k : {1, 3}) {
    SCOPED_TRACE(k);
    F wt(O * C * k * k), bias{1, -2, 3, 0};
    for (size_t i = 0; i < wt.size(); ++i) wt[i] = small(static_cast<int64_t>(i) + 3);
    Tensor weight = filled<float>(b, wt, {O, C, k, k});
    Tensor bias_t = filled<float>(b, bias, {O});
    AtenTensorHandle bias_h = bias_t.get();
    Tensor out;
    ASSERT_EQ(conv(chunk.get(), weight.get(), k == 1 ? &bias_h : nullptr, one, 2,
                   k == 1 ? zero : pad1, 2, one, 2, 0, zero, 2, 1, out.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(meta(out.get()).sizes, (Dims{1, O, H, W}));
    const F want = conv_reference(in, C, H, W, wt, O, k, k, k == 1 ? 0 : 1, k == 1 ? &bias : nullptr);
    const F got = read<float>(out.get());
    ASSERT_EQ(got.size(), want.size());
    int64_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::fabs(got[i] - want[i]) > 1e-4f * (1.f + std::fabs(want[i]))) ++bad;
    EXPECT_EQ(bad, 0);
  }
  // The chunk's parent is untouched by reading it.
  EXPECT_EQ(read<float>(flat.get()), storage);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConformanceOps, ::testing::ValuesIn(built_backends()),
                         backend_name);

}  // namespace
}  // namespace aotrt::test
