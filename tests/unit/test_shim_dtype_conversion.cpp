// copy_ between dtypes on the CPU. Every expected value is what torch 2.13
// gives on x86-64 for torch.empty(n, dtype=D).copy_(src), both through its
// vectorised loop and element by element; the few cases where those two
// disagree (float -> uint32 out of range) are left out. See
// Note [Float to integer conversion] in cpu/copy.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

#include "conformance_backends.h"

using namespace aotrt::test;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// Copies src (dtype S, values) into a new CPU tensor of dtype D; returns the
// destination's elements as D.
template <typename D, typename S>
std::vector<D> convert(const std::vector<S>& src, int32_t src_dtype = dtype_of<S>(),
                       int32_t dst_dtype = dtype_of<D>()) {
  std::vector<S> data = src;
  const Dims sizes{static_cast<int64_t>(src.size())}, strides{1};
  Tensor s, d;
  EXPECT_EQ(aoti_torch_create_tensor_from_blob(data.data(), 1, sizes.data(), strides.data(), 0,
                                               src_dtype, 0, 0, s.out()),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_empty_strided(1, sizes.data(), strides.data(), dst_dtype, 0, 0, d.out()),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_copy_(d.get(), s.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  void* p = nullptr;
  aoti_torch_get_data_ptr(d.get(), &p);
  std::vector<D> out(src.size());
  if (p) std::memcpy(out.data(), p, out.size() * sizeof(D));
  return out;
}

const std::vector<float> kEdges = {-2.7f, -0.5f, 0.5f, 2.7f,  300.7f, -300.7f,
                                   kNaN,  kInf,  -kInf, 1e10f, -1e10f, 3e9f};
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();

TEST(ShimDtypeConversion, FloatToInt64TruncatesAndGivesMinForNaNAndOverflow) {
  EXPECT_EQ(convert<int64_t>(kEdges),
            (std::vector<int64_t>{-2, 0, 0, 2, 300, -300, kI64Min, kI64Min, kI64Min,
                                  10000000000, -10000000000, 3000000000}));
}

TEST(ShimDtypeConversion, FloatToInt32GivesInt32MinForNaNAndOverflow) {
  EXPECT_EQ(convert<int32_t>(kEdges),
            (std::vector<int32_t>{-2, 0, 0, 2, 300, -300, kI32Min, kI32Min, kI32Min, kI32Min,
                                  kI32Min, kI32Min}));
  const std::vector<double> edges{2147483647.9, -2147483648.9, 2147483648.0, -2147483649.0};
  EXPECT_EQ(convert<int32_t>(edges),
            (std::vector<int32_t>{2147483647, kI32Min, kI32Min, kI32Min}));
}

TEST(ShimDtypeConversion, FloatToNarrowIntegersGoesThroughInt32) {
  EXPECT_EQ(convert<int16_t>(kEdges),
            (std::vector<int16_t>{-2, 0, 0, 2, 300, -300, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(convert<int8_t>(kEdges),
            (std::vector<int8_t>{-2, 0, 0, 2, 44, -44, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(convert<uint8_t>(kEdges),
            (std::vector<uint8_t>{254, 0, 0, 2, 44, 212, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(convert<uint16_t>(kEdges),
            (std::vector<uint16_t>{65534, 0, 0, 2, 300, 65236, 0, 0, 0, 0, 0, 0}));
  const std::vector<double> edges{32768., 70000., -40000., 2147483648.0};
  EXPECT_EQ(convert<int16_t>(edges), (std::vector<int16_t>{-32768, 4464, 25536, 0}));
}

TEST(ShimDtypeConversion, FloatToUnsigned32And64) {
  EXPECT_EQ(convert<uint32_t>(std::vector<float>{-2.7f, 0.5f, 2.7f, 300.7f, -300.7f, 3e9f}),
            (std::vector<uint32_t>{4294967294u, 0, 2, 300, 4294966996u, 3000000000u}));
  EXPECT_EQ(convert<uint64_t>(kEdges),
            (std::vector<uint64_t>{18446744073709551614ull, 0, 0, 2, 300,
                                   18446744073709551316ull, 9223372036854775808ull, 0,
                                   9223372036854775808ull, 10000000000ull,
                                   18446744063709551616ull, 3000000000ull}));
  // Values of 2^63 and above fit uint64 and convert exactly.
  EXPECT_EQ(convert<uint64_t>(std::vector<double>{1e19, 9.3e18, 1.8e19, 2e19, 1e20}),
            (std::vector<uint64_t>{10000000000000000000ull, 9300000000000000000ull,
                                   18000000000000000000ull, 0, 0}));
  EXPECT_EQ(convert<uint64_t>(std::vector<float>{1e19f, 9.3e18f, 1.8e19f}),
            (std::vector<uint64_t>{9999999980506447872ull, 9300000300729368576ull,
                                   18000000404716257280ull}));
}

TEST(ShimDtypeConversion, DoubleToIntegersLikeFloat) {
  std::vector<double> edges(kEdges.begin(), kEdges.end());
  EXPECT_EQ(convert<int64_t>(edges),
            (std::vector<int64_t>{-2, 0, 0, 2, 300, -300, kI64Min, kI64Min, kI64Min,
                                  10000000000, -10000000000, 3000000000}));
  EXPECT_EQ(convert<uint8_t>(edges),
            (std::vector<uint8_t>{254, 0, 0, 2, 44, 212, 0, 0, 0, 0, 0, 0}));
}

TEST(ShimDtypeConversion, FloatToBoolIsNonZero) {
  const std::vector<bool> want(kEdges.size(), true);  // NaN is true too
  const std::vector<bool> got = [&] {
    auto raw = convert<uint8_t>(kEdges, kF32, kBool);
    return std::vector<bool>(raw.begin(), raw.end());
  }();
  EXPECT_EQ(got, want);
  EXPECT_EQ(convert<uint8_t>(std::vector<float>{0.f, -0.f, 1e-45f}, kF32, kBool),
            (std::vector<uint8_t>{0, 0, 1}));
  EXPECT_EQ(convert<uint8_t>(std::vector<uint8_t>{0, 2, 255}, kU8, kBool),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(convert<float>(std::vector<uint8_t>{1, 0}, kBool, kF32), (std::vector<float>{1, 0}));
}

TEST(ShimDtypeConversion, HalfSourceGoesThroughFloat) {
  // torch: tensor([nan, inf, -65504], dtype=float16).to(int32) -> [min, min, -65504].
  const std::vector<uint16_t> half{0x7e00, 0x7c00, 0xfbff};
  EXPECT_EQ(convert<int32_t>(half, kF16, kI32), (std::vector<int32_t>{kI32Min, kI32Min, -65504}));
}

TEST(ShimDtypeConversion, ComplexToRealKeepsTheRealPart) {
  using c64 = std::complex<float>;
  const std::vector<c64> c{{1.5f, 2.f}, {-3.25f, -1.f}};
  EXPECT_EQ(convert<float>(c, kC64, kF32), (std::vector<float>{1.5f, -3.25f}));
  EXPECT_EQ(convert<int32_t>(c, kC64, kI32), (std::vector<int32_t>{1, -3}));
  EXPECT_EQ(convert<int64_t>(std::vector<c64>{{kNaN, 1.f}, {7.9f, -3.f}}, kC64, kI64),
            (std::vector<int64_t>{kI64Min, 7}));
  EXPECT_EQ(convert<uint8_t>(std::vector<c64>{{0.f, 1.f}, {0.f, 0.f}}, kC64, kBool),
            (std::vector<uint8_t>{1, 0}));  // imaginary part counts for bool
  EXPECT_EQ(convert<c64>(std::vector<float>{1.5f, -2.f}, kF32, kC64),
            (std::vector<c64>{{1.5f, 0.f}, {-2.f, 0.f}}));
  // complex128 -> float16: real part 1.0009765625 -> 0x3c01.
  const std::vector<std::complex<double>> c128{{1.0009765625, 5.0}};
  EXPECT_EQ(convert<uint16_t>(c128, 10, kF16), std::vector<uint16_t>{0x3c01});
}

TEST(ShimDtypeConversion, IntegersWrapAndRoundAsTorch) {
  EXPECT_EQ(convert<float>(std::vector<int64_t>{(1 << 24) + 1, (1 << 24) + 3,
                                                -((int64_t{1} << 53) + 1)}),
            (std::vector<float>{16777216.f, 16777220.f, -9007199254740992.f}));
  EXPECT_EQ(convert<int8_t>(std::vector<int64_t>{127, 128, 255, -129}),
            (std::vector<int8_t>{127, -128, -1, 127}));
  EXPECT_EQ(convert<uint8_t>(std::vector<int32_t>{-1, 256, 511}),
            (std::vector<uint8_t>{255, 0, 255}));
  const auto f = convert<float>(std::vector<double>{1e300, 1.0000000596046448});
  EXPECT_EQ(f[0], kInf);
  EXPECT_EQ(f[1], 1.f);
}

TEST(ShimDtypeConversion, FloatToHalfAndBFloat16Bits) {
  // torch: float32 -> float16 / bfloat16 bits (see also test_core_dtype.cpp).
  const std::vector<uint32_t> bits{0x3f800000, 0x3dcccccd, 0x477feffd, 0x477ff000, 0x33000000,
                                   0x33000001, 0x3f801000, 0x3f803000, 0x387fc000, 0x3f818000,
                                   0x7f7fffff};
  std::vector<float> values(bits.size());
  std::memcpy(values.data(), bits.data(), bits.size() * 4);
  EXPECT_EQ(convert<uint16_t>(values, kF32, kF16),
            (std::vector<uint16_t>{0x3c00, 0x2e66, 0x7bff, 0x7c00, 0x0000, 0x0001, 0x3c00, 0x3c02,
                                   0x03ff, 0x3c0c, 0x7c00}));
  EXPECT_EQ(convert<uint16_t>(values, kF32, kBF16),
            (std::vector<uint16_t>{0x3f80, 0x3dcd, 0x4780, 0x4780, 0x3300, 0x3300, 0x3f80, 0x3f80,
                                   0x3880, 0x3f82, 0x7f80}));
  const auto nan_half = convert<uint16_t>(std::vector<float>{kNaN, -kNaN}, kF32, kF16);
  EXPECT_EQ(nan_half, (std::vector<uint16_t>{0x7e00, 0xfe00}));
}

TEST(ShimDtypeConversion, DoubleToHalfRoundsTwiceAsTorch) {
  // torch converts float64 -> float16 through float32: 1 + 2^-11 + 2^-40
  // first becomes the tie 1 + 2^-11, which rounds to even (0x3c00).
  EXPECT_EQ(convert<uint16_t>(std::vector<double>{1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)},
                              kF64, kF16),
            std::vector<uint16_t>{0x3c00});
  EXPECT_EQ(convert<uint16_t>(std::vector<int64_t>{65519, 65520, 2049, 100000}, kI64, kF16),
            (std::vector<uint16_t>{0x7bff, 0x7c00, 0x6800, 0x7c00}));
  EXPECT_EQ(convert<uint16_t>(std::vector<uint16_t>{0x3c01}, kF16, kBF16),
            std::vector<uint16_t>{0x3f80});
  const auto f = convert<float>(std::vector<uint16_t>{0x0001, 0x7bff, 0xfc00}, kF16, kF32);
  EXPECT_EQ(f, (std::vector<float>{5.960464477539063e-08f, 65504.f, -kInf}));
}

TEST(ShimDtypeConversion, Float8ConvertsAsTorchDoes) {
  // Note [Float8 conversions] in core/float8.h: round to nearest even; e4m3fn saturates at
  // +-448 (infinities too), e5m2 overflows to +-inf, the fnuz formats turn NaN, infinities
  // and overflow into 0x80 and -0 into 0. Bytes from torch 2.13 (x.to(float8).view(uint8));
  // every code and midpoint: tests/unit/ops/test_ops_scaled_mm.cpp.
  const std::vector<float> x{1.0625f, 500.f, kInf, -kInf, kNaN, -0.f, 0.0146484375f};
  const struct {
    int32_t dtype;
    std::vector<uint8_t> bytes;
  } formats[] = {{24, {0x38, 0x7e, 0x7e, 0xfe, 0x7f, 0x80, 0x08}},   // e4m3fn
                 {23, {0x3c, 0x60, 0x7c, 0xfc, 0x7f, 0x80, 0x24}},   // e5m2
                 {26, {0x40, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0f}},   // e4m3fnuz
                 {25, {0x40, 0x64, 0x80, 0x80, 0x80, 0x00, 0x28}}};  // e5m2fnuz
  for (const auto& f : formats) {
    EXPECT_EQ(convert<uint8_t>(x, kF32, f.dtype), f.bytes) << "dtype " << f.dtype;
  }
  const std::vector<uint8_t> codes{0x7e, 0x7f, 0x80, 0x01};
  const auto e4m3fn = convert<float>(codes, 24, kF32);
  EXPECT_EQ(e4m3fn[0], 448.f);
  EXPECT_TRUE(std::isnan(e4m3fn[1]));
  EXPECT_TRUE(e4m3fn[2] == 0.f && std::signbit(e4m3fn[2]));
  EXPECT_EQ(e4m3fn[3], 0.001953125f);
  const auto e4m3fnuz = convert<float>(codes, 26, kF32);
  EXPECT_EQ(e4m3fnuz[0], 224.f);
  EXPECT_EQ(e4m3fnuz[1], 240.f);
  EXPECT_TRUE(std::isnan(e4m3fnuz[2]));
  EXPECT_EQ(e4m3fnuz[3], 0.0009765625f);
  // float64 goes through float32: 1.0625 + 2^-40 becomes the tie 1.0625, which rounds to
  // even (0x38).
  EXPECT_EQ(convert<uint8_t>(std::vector<double>{1.0625 + std::ldexp(1.0, -40)}, kF64, 24),
            std::vector<uint8_t>{0x38});
}

}  // namespace
