// Getter shims. Expected values are torch 2.13's for the same tensors.
#include <gtest/gtest.h>

#include <vector>

#include "conformance_backends.h"

using namespace aotrt::test;

namespace {

const Backend kCpu = built_backends()[0];

TEST(ShimGetters, DescribeAView) {
  Tensor base = empty(kCpu, {100}, kF64);
  Tensor v = reinterpret(base.get(), {3, 2}, {10, 3}, 4);
  int64_t dim = 0, numel = 0, offset = 0, nbytes = 0, storage_numel = 0;
  ASSERT_EQ(aoti_torch_get_dim(v.get(), &dim), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_numel(v.get(), &numel), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_storage_offset(v.get(), &offset), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_storage_size(v.get(), &nbytes), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_storage_numel(v.get(), &storage_numel), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(dim, 2);
  EXPECT_EQ(numel, 6);
  EXPECT_EQ(offset, 4);
  EXPECT_EQ(nbytes, 800);  // the parent's storage, not the view's span
  EXPECT_EQ(storage_numel, 100);
  int32_t dtype = -1, device = -1, index = 7, layout = -1;
  ASSERT_EQ(aoti_torch_get_dtype(v.get(), &dtype), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_device_type(v.get(), &device), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_device_index(v.get(), &index), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_layout(v.get(), &layout), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(dtype, kF64);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(index, -1);
  EXPECT_EQ(layout, 0);
}

TEST(ShimGetters, SizesAndStridesAreBorrowedAndStable) {
  Tensor t = empty(kCpu, {2, 3, 4}, {1, 2, 6}, kF32);
  int64_t *sizes = nullptr, *strides = nullptr, *sizes2 = nullptr;
  ASSERT_EQ(aoti_torch_get_sizes(t.get(), &sizes), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_strides(t.get(), &strides), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(Dims(sizes, sizes + 3), (Dims{2, 3, 4}));
  EXPECT_EQ(Dims(strides, strides + 3), (Dims{1, 2, 6}));
  Tensor other = empty(kCpu, {9}, kF32);  // making tensors does not move them
  ASSERT_EQ(aoti_torch_get_sizes(t.get(), &sizes2), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(sizes, sizes2);
  EXPECT_EQ(sizes[2], 4);
}

TEST(ShimGetters, SizeAndStrideTakeNegativeDims) {
  // torch: get_size(t, -1) of a [3, 2] tensor is 2; get_stride(t, -2) is 10.
  Tensor base = empty(kCpu, {100}, kF32);
  Tensor v = reinterpret(base.get(), {3, 2}, {10, 3}, 4);
  int64_t r = 0;
  ASSERT_EQ(aoti_torch_get_size(v.get(), -1, &r), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(r, 2);
  ASSERT_EQ(aoti_torch_get_stride(v.get(), -2, &r), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(r, 10);
  ASSERT_EQ(aoti_torch_get_size(v.get(), 0, &r), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(r, 3);
  r = 99;
  EXPECT_EQ(aoti_torch_get_size(v.get(), 2, &r), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_get_size", "dimension 2", "out of range"}));
  EXPECT_EQ(aoti_torch_get_stride(v.get(), -3, &r), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_get_stride", "dimension -3"}));
  EXPECT_EQ(r, 99);
}

TEST(ShimGetters, DataPointersAgreeAndPointAtTheFirstElement) {
  Tensor base = empty(kCpu, {10}, kI16);
  Tensor v = reinterpret(base.get(), {2}, {3}, 5);
  void *b = nullptr, *d = nullptr, *m = nullptr;
  const void* c = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(base.get(), &b), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_data_ptr(v.get(), &d), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_mutable_data_ptr(v.get(), &m), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_const_data_ptr(v.get(), &c), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(static_cast<char*>(d) - static_cast<char*>(b), 10);
  EXPECT_EQ(d, m);
  EXPECT_EQ(d, c);
}

TEST(ShimGetters, EmptyTensorsHaveANullDataPointer) {
  // torch: data_ptr() of a tensor with no elements is null, wherever it sits.
  Tensor base = empty(kCpu, {8}, kF32);
  Tensor e = reinterpret(base.get(), {2, 0}, {1, 1}, 3);
  void* d = reinterpret_cast<void*>(0x1);
  ASSERT_EQ(aoti_torch_get_data_ptr(e.get(), &d), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(d, nullptr);
  Tensor z = empty(kCpu, {0}, kF32);
  ASSERT_EQ(aoti_torch_get_data_ptr(z.get(), &d), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(d, nullptr);
}

TEST(ShimGetters, IsContiguousAsTorch) {
  struct Case {
    Dims sizes, strides;
    bool contiguous;
  };
  const Case cases[] = {{{0, 3}, {1, 7}, true},  {{2, 1, 3}, {3, 100, 1}, true},
                        {{3}, {0}, false},       {{1}, {0}, true},
                        {{}, {}, true},          {{2, 3}, {1, 2}, false},
                        {{3, 2}, {10, 3}, false}};
  Tensor base = empty(kCpu, {1000}, kF32);
  for (const Case& c : cases) {
    Tensor v = reinterpret(base.get(), c.sizes, c.strides, 0);
    bool r = !c.contiguous;
    ASSERT_EQ(aoti_torch_is_contiguous(v.get(), &r), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(r, c.contiguous) << ::testing::PrintToString(c.sizes);
  }
}

TEST(ShimGetters, RefuseNullOutputsDeletedAndUndefinedHandles) {
  Tensor t = empty(kCpu, {2}, kF32);
  EXPECT_EQ(aoti_torch_get_dim(t.get(), nullptr), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_get_dim", "output argument", "null"}));
  EXPECT_EQ(aoti_torch_get_size(t.get(), 0, nullptr), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_get_size", "null"}));
  int64_t n = 5;
  EXPECT_EQ(aoti_torch_get_numel(nullptr, &n), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_get_numel", "null"}));
  AtenTensorHandle dead = t.release();
  ASSERT_EQ(aoti_torch_delete_tensor_object(dead), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_get_numel(dead, &n), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_get_numel", "not a live tensor handle"}));
  bool defined = true;
  EXPECT_EQ(aoti_torch_is_defined(dead, &defined), AOTI_TORCH_FAILURE);
  EXPECT_EQ(n, 5);
  EXPECT_TRUE(defined);
}

}  // namespace
