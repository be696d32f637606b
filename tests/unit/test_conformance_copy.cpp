// Conformance: copy_ from and into strided views, across devices and dtypes,
// and ATen's overlap rules. See the table in test_conformance.cpp.
#include <gtest/gtest.h>

#include <complex>
#include <vector>

#include "conformance_backends.h"

namespace aotrt::test {
namespace {

using F = std::vector<float>;

class ConformanceCopy : public ::testing::TestWithParam<Backend> {};

const Backend kHost = built_backends()[0];

TEST_P(ConformanceCopy, FromNonPackedViewIntoDense) {
  const Backend& b = GetParam();
  Tensor parent = empty(b, {1, 8, 4, 4}, {128, 1, 32, 8}, kF32);  // channels-last
  Tensor flat = reinterpret(parent.get(), {128}, {1}, 0);
  write<float>(flat.get(), iota(128));
  Tensor chunk = reinterpret(parent.get(), {1, 4, 4, 4}, {128, 1, 32, 8}, 4);  // C 4..7
  Tensor dense = empty(b, {1, 4, 4, 4}, kF32);
  ASSERT_EQ(aoti_torch_copy_(dense.get(), chunk.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  F want;
  for (int c = 0; c < 4; ++c)
    for (int h = 0; h < 4; ++h)
      for (int w = 0; w < 4; ++w) want.push_back(static_cast<float>(4 + c + 32 * h + 8 * w));
  EXPECT_EQ(kernel_read<float>(b, dense.get()), want);
}

TEST_P(ConformanceCopy, IntoNonPackedViewKeepsTheHoles) {
  const Backend& b = GetParam();
  Tensor parent = filled<float>(b, F(128, -7.f), {128});
  Tensor chunk = reinterpret(parent.get(), {1, 4, 4, 4}, {128, 1, 32, 8}, 4);
  Tensor src = filled<float>(b, iota(64, 1.f), {1, 4, 4, 4});
  ASSERT_EQ(aoti_torch_copy_(chunk.get(), src.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  F want(128, -7.f);
  for (int c = 0; c < 4; ++c)
    for (int h = 0; h < 4; ++h)
      for (int w = 0; w < 4; ++w) want[4 + c + 32 * h + 8 * w] = static_cast<float>(1 + c * 16 + h * 4 + w);
  EXPECT_EQ(kernel_read<float>(b, parent.get()), want);
}

TEST_P(ConformanceCopy, BetweenTwoStridedViews) {
  const Backend& b = GetParam();
  Tensor a = filled<float>(b, iota(24), {4, 6});
  Tensor d = filled<float>(b, F(30, -1.f), {30});
  Tensor src = reinterpret(a.get(), {3, 2}, {1, 6}, 7);     // transposed window
  Tensor dst = reinterpret(d.get(), {3, 2}, {5, 2}, 1);     // gapped
  ASSERT_EQ(aoti_torch_copy_(dst.get(), src.get(), 0), AOTI_TORCH_SUCCESS);
  F want(30, -1.f);
  const float v[3][2] = {{7, 13}, {8, 14}, {9, 15}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) want[1 + 5 * i + 2 * j] = v[i][j];
  EXPECT_EQ(kernel_read<float>(b, d.get()), want);
  // A larger case with many rows, to leave the smallest loops.
  Tensor big = filled<float>(b, iota(300 * 257), {300, 257});
  Tensor big_t = reinterpret(big.get(), {257, 300}, {1, 257}, 0);
  Tensor out = empty(b, {257, 300}, {1, 257 + 3}, kF32);  // column-major with padding
  ASSERT_EQ(aoti_torch_copy_(out.get(), big_t.get(), 0), AOTI_TORCH_SUCCESS);
  const F got = read<float>(out.get());
  int64_t bad = 0;
  for (int64_t i = 0; i < 257; ++i)
    for (int64_t j = 0; j < 300; ++j)
      if (got[i * 300 + j] != static_cast<float>(j * 257 + i)) ++bad;
  EXPECT_EQ(bad, 0);
}

TEST_P(ConformanceCopy, BroadcastIntoStridedView) {
  const Backend& b = GetParam();
  Tensor d = filled<float>(b, F(20, 0.f), {20});
  Tensor dst = reinterpret(d.get(), {3, 4}, {6, 1}, 1);
  Tensor row = filled<float>(b, {1, 2, 3, 4}, {4});
  ASSERT_EQ(aoti_torch_copy_(dst.get(), row.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(dst.get()), (F{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
  Tensor col = filled<float>(b, {7, 8, 9}, {3, 1});
  ASSERT_EQ(aoti_torch_copy_(dst.get(), col.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(dst.get()), (F{7, 7, 7, 7, 8, 8, 8, 8, 9, 9, 9, 9}));
  F want(20, 0.f);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) want[1 + 6 * i + j] = static_cast<float>(7 + i);
  EXPECT_EQ(kernel_read<float>(b, d.get()), want);
}

TEST_P(ConformanceCopy, AcrossDevices) {
  const Backend& b = GetParam();
  // Host strided view -> device strided view.
  Tensor host = filled<float>(kHost, iota(40), {40});
  Tensor host_view = reinterpret(host.get(), {4, 3}, {1, 8}, 2);  // transposed, gapped
  Tensor dev = filled<float>(b, F(50, -1.f), {50});
  Tensor dev_view = reinterpret(dev.get(), {4, 3}, {10, 3}, 5);
  ASSERT_EQ(aoti_torch_copy_(dev_view.get(), host_view.get(), 0), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  F want(50, -1.f), values;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) {
      want[5 + 10 * i + 3 * j] = static_cast<float>(2 + i + 8 * j);
      values.push_back(static_cast<float>(2 + i + 8 * j));
    }
  EXPECT_EQ(kernel_read<float>(b, dev.get()), want);
  // Device strided view -> host strided view, holes kept on the host side.
  Tensor back = filled<float>(kHost, F(30, -2.f), {30});
  Tensor back_view = reinterpret(back.get(), {4, 3}, {1, 6}, 3);
  ASSERT_EQ(aoti_torch_copy_(back_view.get(), dev_view.get(), 0), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  F want_back(30, -2.f);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) want_back[3 + i + 6 * j] = values[i * 3 + j];
  EXPECT_EQ(kernel_read<float>(kHost, back.get()), want_back);
  // A broadcast source on the other device.
  Tensor scalar = filled<float>(kHost, {4.5f}, {1});
  ASSERT_EQ(aoti_torch_copy_(dev_view.get(), scalar.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(dev_view.get()), F(12, 4.5f));
}

TEST_P(ConformanceCopy, BetweenDtypes) {
  // In-range values, where every backend must agree exactly.
  const Backend& b = GetParam();
  const F values{-2.5f, -1.f, 0.f, 0.5f, 1.f, 2.75f, 100.f, 65504.f};
  Tensor src_buf = filled<float>(b, F(16, 0.f), {16});
  Tensor src = reinterpret(src_buf.get(), {8}, {2}, 1);  // strided source
  write<float>(src.get(), values);
  auto to = [&](int32_t dtype) {
    Tensor buf = empty(b, {24}, dtype);
    Tensor dst = reinterpret(buf.get(), {8}, {3}, 2);  // strided destination
    EXPECT_EQ(aoti_torch_copy_(dst.get(), src.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    return dst;
  };
  Tensor f16 = to(kF16), bf16 = to(kBF16), f64 = to(kF64), i32 = to(kI32), i64 = to(kI64),
         b8 = to(kBool);
  EXPECT_EQ(read<uint16_t>(f16.get()),
            (std::vector<uint16_t>{0xc100, 0xbc00, 0x0000, 0x3800, 0x3c00, 0x4180, 0x5640, 0x7bff}));
  EXPECT_EQ(read<uint16_t>(bf16.get()),
            (std::vector<uint16_t>{0xc020, 0xbf80, 0x0000, 0x3f00, 0x3f80, 0x4030, 0x42c8, 0x4780}));
  EXPECT_EQ(read<double>(f64.get()), (std::vector<double>{-2.5, -1, 0, 0.5, 1, 2.75, 100, 65504}));
  EXPECT_EQ(read<int32_t>(i32.get()), (std::vector<int32_t>{-2, -1, 0, 0, 1, 2, 100, 65504}));
  EXPECT_EQ(read<int64_t>(i64.get()), (std::vector<int64_t>{-2, -1, 0, 0, 1, 2, 100, 65504}));
  EXPECT_EQ(read<uint8_t>(b8.get()), (std::vector<uint8_t>{1, 1, 0, 1, 1, 1, 1, 1}));
  // And back to float32, across devices: host float32 from device float16.
  Tensor host = empty(kHost, {8}, kF32);
  ASSERT_EQ(aoti_torch_copy_(host.get(), f16.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(read<float>(host.get()), values);
  Tensor from_int = empty(b, {8}, kF32);
  ASSERT_EQ(aoti_torch_copy_(from_int.get(), i32.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(from_int.get()), (F{-2, -1, 0, 0, 1, 2, 100, 65504}));
  // Rounding to float16 is to nearest even on every backend.
  Tensor ties = filled<float>(b, {1.00048828125f, 1.00146484375f, 65519.99f, 65520.f}, {4});
  Tensor ties16 = empty(b, {4}, kF16);
  ASSERT_EQ(aoti_torch_copy_(ties16.get(), ties.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<uint16_t>(ties16.get()), (std::vector<uint16_t>{0x3c00, 0x3c02, 0x7bff, 0x7c00}));
}

// complex32 (two float16 halves; view_as_complex of float16) converts on the CPU
// through complex64: to complex32 rounds each half to nearest even, back is exact,
// to a real dtype drops the imaginary part, as ATen's copy_.
TEST(ConformanceCopyComplex32, ConvertsThroughComplex64OnTheCpu) {
  constexpr int32_t kC32 = 8;
  using C = std::complex<float>;
  Tensor src = empty(kHost, {3}, kC64);
  write<C>(src.get(), {C(1.5f, -2.f), C(65504.f, 1.00048828125f), C(-0.25f, 100.f)});
  Tensor buf = empty(kHost, {7}, kC32);
  Tensor c32 = reinterpret(buf.get(), {3}, {2}, 1);  // strided destination
  ASSERT_EQ(aoti_torch_copy_(c32.get(), src.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  // little-endian pairs: real half in the low 16 bits
  EXPECT_EQ(read<uint32_t>(c32.get()),
            (std::vector<uint32_t>{0xc0003e00u, 0x3c007bffu, 0x5640b400u}));
  Tensor back = empty(kHost, {3}, kC64);
  ASSERT_EQ(aoti_torch_copy_(back.get(), c32.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(read<C>(back.get()), (std::vector<C>{C(1.5f, -2.f), C(65504.f, 1.f), C(-0.25f, 100.f)}));
  Tensor real = empty(kHost, {3}, kF32);
  ASSERT_EQ(aoti_torch_copy_(real.get(), c32.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(read<float>(real.get()), (F{1.5f, 65504.f, -0.25f}));
}

// dst.copy_(src) must be refused naming `what`, leaving `whole` unchanged.
void expect_refused(const Backend& b, AtenTensorHandle dst, AtenTensorHandle src,
                    AtenTensorHandle whole, const char* what) {
  const F before = read<float>(whole);
  const Counters c = counters(b);
  EXPECT_EQ(aoti_torch_copy_(dst, src, 0), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_copy_", what}));
  EXPECT_EQ(counters(b), c);
  EXPECT_EQ(read<float>(whole), before);
}

TEST_P(ConformanceCopy, PartialOverlapIsRefusedAsATen) {
  const Backend& b = GetParam();
  Tensor a = filled<float>(b, iota(10), {10});
  Tensor lo = reinterpret(a.get(), {4}, {1}, 0), hi = reinterpret(a.get(), {4}, {1}, 2);
  expect_refused(b, lo.get(), hi.get(), a.get(), "single memory location");
  expect_refused(b, hi.get(), lo.get(), a.get(), "single memory location");
}

TEST_P(ConformanceCopy, SameBytesOtherStridesIsRefusedAsATen) {
  const Backend& b = GetParam();
  Tensor a = filled<float>(b, iota(16), {4, 4});
  Tensor t = reinterpret(a.get(), {4, 4}, {1, 4}, 0);
  expect_refused(b, a.get(), t.get(), a.get(), "single memory location");
}

TEST_P(ConformanceCopy, SameViewIsANoOp) {
  const Backend& b = GetParam();
  Tensor a = filled<float>(b, iota(10), {10});
  Tensor v1 = reinterpret(a.get(), {2, 2}, {1, 3}, 1), v2 = reinterpret(a.get(), {2, 2}, {1, 3}, 1);
  ASSERT_EQ(aoti_torch_copy_(v1.get(), v2.get(), 0), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_copy_(a.get(), a.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), iota(10));
}

TEST_P(ConformanceCopy, InterleavedViewsCopyAsATen) {
  // torch: a[0:8:2].copy_(a[1:9:2]) -> [1, 1, 3, 3, 5, 5, 7, 7, 8, 9].
  const Backend& b = GetParam();
  Tensor a = filled<float>(b, iota(10), {10});
  Tensor even = reinterpret(a.get(), {4}, {2}, 0), odd = reinterpret(a.get(), {4}, {2}, 1);
  ASSERT_EQ(aoti_torch_copy_(even.get(), odd.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{1, 1, 3, 3, 5, 5, 7, 7, 8, 9}));
}

TEST_P(ConformanceCopy, NonDenseSourceOverDenseDestination) {
  // torch: as_strided(a, [3], [1], 2).copy_(as_strided(a, [3], [3], 0)) -> [0, 1, 0, 3, 6, 5, ...].
  const Backend& b = GetParam();
  Tensor a = filled<float>(b, iota(10), {10});
  Tensor d = reinterpret(a.get(), {3}, {1}, 2), s = reinterpret(a.get(), {3}, {3}, 0);
  ASSERT_EQ(aoti_torch_copy_(d.get(), s.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{0, 1, 0, 3, 6, 5, 6, 7, 8, 9}));
}

TEST_P(ConformanceCopy, ElementAliasingReadsTheSourceFirst) {
  // ATen promises nothing here (its CPU loop reads what it already wrote);
  // aotrt's rule on every backend: as if the source were read first.
  const Backend& b = GetParam();
  Tensor a = filled<float>(b, iota(10), {10});
  Tensor d = reinterpret(a.get(), {4}, {2}, 0), s = reinterpret(a.get(), {4}, {1}, 0);
  ASSERT_EQ(aoti_torch_copy_(d.get(), s.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{0, 1, 1, 3, 2, 5, 3, 7, 8, 9}));
}

TEST_P(ConformanceCopy, InternalOverlapDestinationIsRefused) {
  const Backend& b = GetParam();
  Tensor a = filled<float>(b, iota(3), {3});
  Tensor e = reinterpret(a.get(), {2, 3}, {0, 1}, 0);
  Tensor src = filled<float>(b, F(6, 1.f), {2, 3});
  expect_refused(b, e.get(), src.get(), a.get(), "more than one element");
}

INSTANTIATE_TEST_SUITE_P(Backends, ConformanceCopy, ::testing::ValuesIn(built_backends()),
                         backend_name);

}  // namespace
}  // namespace aotrt::test
