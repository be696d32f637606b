// item_* and scalar_to_tensor_* shims. torch 2.13: item() converts to the
// asked type (a float32 2.5 read with item_int32 gives 2), and refuses a
// tensor of more than one element.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "conformance_backends.h"

using namespace aotrt::test;

namespace {

const Backend kCpu = built_backends()[0];

TEST(ShimScalarToTensor, MakesAZeroDimTensorOfThatDtype) {
  auto check = [](AtenTensorHandle h, int32_t dtype, const void* value, size_t size) {
    const Meta m = meta(h);
    EXPECT_TRUE(m.sizes.empty());
    EXPECT_EQ(m.dtype, dtype);
    EXPECT_EQ(m.device_type, 0);
    int64_t nbytes = 0;
    aoti_torch_get_storage_size(h, &nbytes);
    EXPECT_EQ(nbytes, static_cast<int64_t>(size));
    void* p = nullptr;
    aoti_torch_get_data_ptr(h, &p);
    EXPECT_EQ(std::memcmp(p, value, size), 0) << "dtype " << dtype;
  };
#define SCALAR_CASE(fn, type, code, v)        \
  {                                           \
    const type value = v;                     \
    Tensor t;                                 \
    ASSERT_EQ(fn(value, t.out()), AOTI_TORCH_SUCCESS); \
    check(t.get(), code, &value, sizeof(type)); \
  }
  SCALAR_CASE(aoti_torch_scalar_to_tensor_float32, float, kF32, -2.5f)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_float64, double, kF64, 1e300)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_uint8, uint8_t, kU8, 250)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_uint16, uint16_t, kU16, 65000)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_uint32, uint32_t, kU32, 4000000000u)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_uint64, uint64_t, kU64, 18000000000000000000ull)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_int8, int8_t, kI8, -100)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_int16, int16_t, kI16, -30000)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_int32, int32_t, kI32, -2000000000)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_int64, int64_t, kI64, -9000000000000000000ll)
  SCALAR_CASE(aoti_torch_scalar_to_tensor_bool, bool, kBool, true)
#undef SCALAR_CASE
}

TEST(ShimItem, ReadsEachDtype) {
  Tensor t;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_float64(2.75, t.out()), AOTI_TORCH_SUCCESS);
  double d = 0;
  float f = 0;
  ASSERT_EQ(aoti_torch_item_float64(t.get(), &d), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_float32(t.get(), &f), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(d, 2.75);
  EXPECT_EQ(f, 2.75f);
  uint16_t h = 0, b = 0;
  ASSERT_EQ(aoti_torch_item_float16(t.get(), &h), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_bfloat16(t.get(), &b), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(h, 0x4180);  // 2.75 in half
  EXPECT_EQ(b, 0x4030);  // 2.75 in bfloat16
  int8_t i8 = 0;
  int16_t i16 = 0;
  int32_t i32 = 0;
  int64_t i64 = 0;
  uint8_t u8 = 0;
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  bool bo = false;
  ASSERT_EQ(aoti_torch_item_int8(t.get(), &i8), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_int16(t.get(), &i16), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_int32(t.get(), &i32), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_int64(t.get(), &i64), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_uint8(t.get(), &u8), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_uint16(t.get(), &u16), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_uint32(t.get(), &u32), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_uint64(t.get(), &u64), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_bool(t.get(), &bo), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(i8, 2);
  EXPECT_EQ(i16, 2);
  EXPECT_EQ(i32, 2);
  EXPECT_EQ(i64, 2);
  EXPECT_EQ(u8, 2);
  EXPECT_EQ(u16, 2);
  EXPECT_EQ(u32, 2u);
  EXPECT_EQ(u64, 2u);
  EXPECT_TRUE(bo);
  float c[2] = {9, 9};
  ASSERT_EQ(aoti_torch_item_complex64(t.get(), c), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(c[0], 2.75f);
  EXPECT_EQ(c[1], 0.f);
}

TEST(ShimItem, ExactIntegersSurvive) {
  Tensor t;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_int64(std::numeric_limits<int64_t>::min() + 1, t.out()),
            AOTI_TORCH_SUCCESS);
  int64_t v = 0;
  ASSERT_EQ(aoti_torch_item_int64(t.get(), &v), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(v, std::numeric_limits<int64_t>::min() + 1);
  Tensor u;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_uint64(18000000000000000001ull, u.out()),
            AOTI_TORCH_SUCCESS);
  uint64_t w = 0;
  ASSERT_EQ(aoti_torch_item_uint64(u.get(), &w), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(w, 18000000000000000001ull);
}

TEST(ShimItem, ReadsOneElementViewsAnywhere) {
  Tensor base = filled<float>(kCpu, iota(20), {20});
  Tensor v = reinterpret(base.get(), {1, 1}, {7, 3}, 13);
  float f = 0;
  ASSERT_EQ(aoti_torch_item_float32(v.get(), &f), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(f, 13.f);
  Tensor h = filled<uint16_t>(kCpu, {0x3c00, 0xc000}, {2});
  // A float16 buffer is written through a uint16 tensor of the same bytes.
  Tensor half;
  const Dims s{}, st{};
  ASSERT_EQ(aoti_torch__alloc_from_pool(h.get(), 2, kF16, 0, s.data(), st.data(), half.out()),
            AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_item_float32(half.get(), &f), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(f, -2.f);
}

TEST(ShimItem, RefusesAnythingButOneElement) {
  Tensor t = empty(kCpu, {2, 3}, kF32);
  float f = 42.f;
  EXPECT_EQ(aoti_torch_item_float32(t.get(), &f), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_item_float32", "6 elements", "cannot be converted"}));
  Tensor e = empty(kCpu, {0}, kF32);
  EXPECT_EQ(aoti_torch_item_float32(e.get(), &f), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_item_float32", "0 elements"}));
  EXPECT_EQ(aoti_torch_item_float32(t.get(), nullptr), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_item_float32", "null"}));
  EXPECT_EQ(f, 42.f);
}

}  // namespace
