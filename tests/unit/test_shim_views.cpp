// View shims: _reinterpret_tensor, _alloc_from_pool, as_strided. Offsets and
// values are torch 2.13's (torch.ops.inductor._reinterpret_tensor,
// torch.ops.inductor._alloc_from_pool, torch.as_strided).
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "conformance_backends.h"

using namespace aotrt::test;

namespace {

const Backend kCpu = built_backends()[0];

void* data_of(AtenTensorHandle h) {
  void* p = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &p), AOTI_TORCH_SUCCESS);
  return p;
}

TEST(ShimReinterpret, OffsetIsAddedToSelfsOffset) {
  // torch: _reinterpret_tensor(base, (10,), (1,), 5) then (3,), (2,), 7 ->
  // storage offset 12, values [12, 14, 16].
  Tensor base = filled<float>(kCpu, iota(100), {100});
  Tensor v = reinterpret(base.get(), {10}, {1}, 5);
  Tensor w = reinterpret(v.get(), {3}, {2}, 7);
  EXPECT_EQ(meta(v.get()).offset, 5);
  EXPECT_EQ(meta(w.get()).offset, 12);
  EXPECT_EQ(read<float>(w.get()), (std::vector<float>{12, 14, 16}));
  EXPECT_EQ(static_cast<float*>(data_of(w.get())), static_cast<float*>(data_of(base.get())) + 12);
}

TEST(ShimReinterpret, NegativeIncrementIsFineWhileTheOffsetStaysInStorage) {
  // torch: _reinterpret_tensor(v at 5, (2,), (1,), -3) -> offset 2, [2, 3].
  Tensor base = filled<float>(kCpu, iota(100), {100});
  Tensor v = reinterpret(base.get(), {10}, {1}, 5);
  Tensor w = reinterpret(v.get(), {2}, {1}, -3);
  EXPECT_EQ(meta(w.get()).offset, 2);
  EXPECT_EQ(read<float>(w.get()), (std::vector<float>{2, 3}));
  // torch does no checks at all and would make offset -1; aotrt refuses it.
  AtenTensorHandle out = nullptr;
  const Dims s{2}, st{1};
  EXPECT_EQ(aoti_torch__reinterpret_tensor(v.get(), 1, s.data(), st.data(), -6, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__reinterpret_tensor", "storage offset -1"}));
  EXPECT_EQ(out, nullptr);
}

TEST(ShimReinterpret, KeepsDtypeDeviceAndStorage) {
  Tensor base = empty(kCpu, {4, 4}, kI16);
  Tensor v = reinterpret(base.get(), {2, 8}, {8, 1}, 0);
  const Meta m = meta(v.get());
  EXPECT_EQ(m.dtype, kI16);
  EXPECT_EQ(m.device_type, 0);
  int64_t size = 0;
  aoti_torch_get_storage_size(v.get(), &size);
  EXPECT_EQ(size, 32);
}

TEST(ShimReinterpret, WritesThroughTheViewReachTheParent) {
  Tensor base = filled<float>(kCpu, std::vector<float>(12, 0.f), {3, 4});
  Tensor col = reinterpret(base.get(), {3}, {4}, 2);  // column 2
  write<float>(col.get(), {1.f, 2.f, 3.f});
  EXPECT_EQ(read<float>(base.get()),
            (std::vector<float>{0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0}));
}

TEST(ShimReinterpret, ViewUpToTheEndIsFineOnePastIsRefused) {
  Tensor base = empty(kCpu, {8}, kF32);
  Tensor last = reinterpret(base.get(), {2}, {3}, 4);  // elements 4 and 7
  EXPECT_TRUE(last);
  Tensor empty_at_end = reinterpret(base.get(), {0}, {1}, 8);
  EXPECT_TRUE(empty_at_end);
  const Counters before = counters(kCpu);
  AtenTensorHandle out = nullptr;
  const Dims s{2}, st{4};
  EXPECT_EQ(aoti_torch__reinterpret_tensor(base.get(), 1, s.data(), st.data(), 4, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__reinterpret_tensor", "36 bytes", "has 32"}));
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(kCpu), before);
}

TEST(ShimReinterpret, UndefinedSelfIsRefused) {
  Tensor u;
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(u.out()), AOTI_TORCH_SUCCESS);
  AtenTensorHandle out = nullptr;
  const Dims s{1}, st{1};
  EXPECT_EQ(aoti_torch__reinterpret_tensor(u.get(), 1, s.data(), st.data(), 0, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__reinterpret_tensor", "undefined"}));
}

TEST(ShimAllocFromPool, ByteOffsetFromTheStorageStartInTheNewDtype) {
  // torch: _alloc_from_pool(arange(100.), 8, float32, (2,), (1,)) -> offset 2, [2, 3].
  Tensor pool = filled<float>(kCpu, iota(16), {16});
  Tensor a = Tensor();
  const Dims s{2}, st{1};
  ASSERT_EQ(aoti_torch__alloc_from_pool(pool.get(), 8, kF32, 1, s.data(), st.data(), a.out()),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(a.get()).offset, 2);
  EXPECT_EQ(read<float>(a.get()), (std::vector<float>{2, 3}));

  Tensor b;
  const Dims s3{3};
  ASSERT_EQ(aoti_torch__alloc_from_pool(pool.get(), 16, kI32, 1, s3.data(), st.data(), b.out()),
            AOTI_TORCH_SUCCESS);
  const Meta mb = meta(b.get());
  EXPECT_EQ(mb.offset, 4);
  EXPECT_EQ(mb.dtype, kI32);
  int64_t numel = 0;
  ASSERT_EQ(aoti_torch_get_storage_numel(b.get(), &numel), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(numel, 16);
  EXPECT_EQ(static_cast<char*>(data_of(b.get())), static_cast<char*>(data_of(pool.get())) + 16);

  Tensor c;
  const Dims s8{8};
  ASSERT_EQ(aoti_torch__alloc_from_pool(pool.get(), 3, kU8, 1, s8.data(), st.data(), c.out()),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(c.get()).offset, 3);
}

TEST(ShimAllocFromPool, RefusesWhatTorchRefusesAndWhatCannotBeServed) {
  Tensor pool = empty(kCpu, {16}, kF32);
  Tensor at_offset = reinterpret(pool.get(), {8}, {1}, 4);
  const Dims s{2}, st{1};
  const Counters before = counters(kCpu);
  AtenTensorHandle out = nullptr;
  // torch: "Expected self.storage_offset() == 0".
  EXPECT_EQ(aoti_torch__alloc_from_pool(at_offset.get(), 0, kF32, 1, s.data(), st.data(), &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__alloc_from_pool", "storage offset"}));
  // An offset that is not a whole number of elements.
  EXPECT_EQ(aoti_torch__alloc_from_pool(pool.get(), 6, kF32, 1, s.data(), st.data(), &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__alloc_from_pool", "6 bytes"}));
  EXPECT_EQ(aoti_torch__alloc_from_pool(pool.get(), -4, kF32, 1, s.data(), st.data(), &out),
            AOTI_TORCH_FAILURE);
  // Past the end of the pool.
  EXPECT_EQ(aoti_torch__alloc_from_pool(pool.get(), 60, kF32, 1, s.data(), st.data(), &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__alloc_from_pool", "68 bytes", "has 64"}));
  EXPECT_EQ(aoti_torch__alloc_from_pool(pool.get(), 0, 99, 1, s.data(), st.data(), &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__alloc_from_pool", "99"}));
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(kCpu), before);
}

TEST(ShimAsStrided, KeepsSelfsOffsetAndRank) {
  // torch: as_strided(v at offset 5, (2, 2), (3, 1)) -> offset 5, [[5, 6], [8, 9]].
  Tensor base = filled<float>(kCpu, iota(100), {100});
  Tensor v = reinterpret(base.get(), {2, 5}, {5, 1}, 5);
  Tensor a;
  const Dims s{2, 2}, st{3, 1};
  ASSERT_EQ(aoti_torch_as_strided(v.get(), s.data(), st.data(), a.out()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(a.get()).offset, 5);
  EXPECT_EQ(read<float>(a.get()), (std::vector<float>{5, 6, 8, 9}));
}

TEST(ShimAsStrided, RefusesNegativeStridesAndViewsPastTheEnd) {
  Tensor base = empty(kCpu, {4, 4}, kF32);
  const Counters before = counters(kCpu);
  AtenTensorHandle out = nullptr;
  const Dims s{2, 2}, neg{-1, 1}, far{8, 8};
  EXPECT_EQ(aoti_torch_as_strided(base.get(), s.data(), neg.data(), &out), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_as_strided", "stride -1", "negative"}));
  EXPECT_EQ(aoti_torch_as_strided(base.get(), s.data(), far.data(), &out), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_as_strided", "68 bytes"}));
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(kCpu), before);
}

TEST(ShimViews, SizeAndStrideCountsMustAgreeAndFitInt64) {
  Tensor base = empty(kCpu, {4}, kF32);
  AtenTensorHandle out = nullptr;
  const Dims huge{std::numeric_limits<int64_t>::max(), 2}, st{1, 1};
  EXPECT_EQ(aoti_torch__reinterpret_tensor(base.get(), 2, huge.data(), st.data(), 0, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__reinterpret_tensor", "overflows int64"}));
  EXPECT_EQ(aoti_torch__reinterpret_tensor(base.get(), -1, huge.data(), st.data(), 0, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__reinterpret_tensor", "ndim -1"}));
  EXPECT_EQ(aoti_torch__reinterpret_tensor(base.get(), 65, huge.data(), st.data(), 0, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__reinterpret_tensor", "64 dims"}));
  EXPECT_EQ(out, nullptr);
}

}  // namespace
