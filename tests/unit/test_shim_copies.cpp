// Copy shims: copy_, tensor_copy_, clone, clone_preserve_strides, zero_,
// assign_tensors[_out]. Every expected value and refusal below is what
// torch 2.13 gives for the same call (Tensor.copy_ / clone / zero_ on CPU,
// and libtorch's aoti_torch_clone_preserve_strides).
#include <gtest/gtest.h>

#include <vector>

#include "conformance_backends.h"

using namespace aotrt::test;
using F = std::vector<float>;

namespace {

const Backend kCpu = built_backends()[0];

// dst.copy_(src) must fail, name copy_ and `what`, and leave memory as it was.
void expect_copy_refused(AtenTensorHandle dst, AtenTensorHandle src, AtenTensorHandle whole,
                         const char* what) {
  const F before = read<float>(whole);
  const Counters c = counters(kCpu);
  EXPECT_EQ(aoti_torch_copy_(dst, src, 0), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_copy_", what}));
  EXPECT_EQ(read<float>(whole), before);
  EXPECT_EQ(counters(kCpu), c);
}

TEST(ShimCopy, BroadcastsTheSourceAsTorchDoes) {
  struct Case {
    Dims dst, src;
    F src_values, expected;  // expected empty: refused
  };
  const Case cases[] = {
      {{2, 3}, {3}, {1, 2, 3}, {1, 2, 3, 1, 2, 3}},
      {{2, 3}, {2, 1}, {1, 2}, {1, 1, 1, 2, 2, 2}},
      {{2, 3}, {}, {7}, {7, 7, 7, 7, 7, 7}},
      {{1}, {}, {3}, {3}},
      {{0}, {1}, {1}, {}},
      {{0, 3}, {3}, {1, 1, 1}, {}},
  };
  for (const Case& c : cases) {
    Tensor dst = filled<float>(kCpu, F(numel_of(c.dst), 0.f), c.dst);
    HostTensor<float> src(c.src_values, c.src);
    ASSERT_EQ(aoti_torch_copy_(dst.get(), src.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    EXPECT_EQ(read<float>(dst.get()), c.expected);
  }
}

TEST(ShimCopy, RefusesWhatTorchCannotBroadcast) {
  struct Case {
    Dims dst, src;
  };
  // torch: "The size of tensor a (3) must match the size of tensor b (4)",
  // "output with shape [2, 3] doesn't match the broadcast shape [1, 2, 3]".
  const Case cases[] = {{{2, 3}, {4}},    {{2, 3}, {1, 2, 3}}, {{2, 3}, {2}},
                        {{2, 3}, {0}},    {{}, {1}},           {{}, {1, 1}}};
  for (const Case& c : cases) {
    Tensor dst = filled<float>(kCpu, F(numel_of(c.dst), 5.f), c.dst);
    HostTensor<float> src(F(numel_of(c.src), 1.f), c.src);
    expect_copy_refused(dst.get(), src.get(), dst.get(), "broadcast");
  }
}

TEST(ShimCopy, StridedToStrided) {
  Tensor a = filled<float>(kCpu, iota(24), {4, 6});
  Tensor dst = filled<float>(kCpu, F(30, -1.f), {30});
  // src: a transposed 3x2 window of a; dst: a 3x2 view with a gap.
  Tensor src = reinterpret(a.get(), {3, 2}, {1, 6}, 7);
  Tensor dview = reinterpret(dst.get(), {3, 2}, {5, 2}, 1);
  ASSERT_EQ(aoti_torch_copy_(dview.get(), src.get(), 0), AOTI_TORCH_SUCCESS);
  F expected(30, -1.f);
  const float want[3][2] = {{7, 13}, {8, 14}, {9, 15}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) expected[1 + i * 5 + j * 2] = want[i][j];
  EXPECT_EQ(read<float>(dst.get()), expected);
}

TEST(ShimCopy, TensorCopyTakesSourceFirst) {
  Tensor dst = filled<float>(kCpu, F{0, 0}, {2});
  HostTensor<float> src(F{4, 5}, {2});
  ASSERT_EQ(aoti_torch_tensor_copy_(src.get(), dst.get()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(dst.get()), (F{4, 5}));
}

TEST(ShimCopyOverlap, PartialOverlapOfDenseViewsIsRefused) {
  // torch: a[0:4].copy_(a[2:6]) and a[2:6].copy_(a[0:4]) both raise "some
  // elements of the input tensor and the written-to tensor refer to a single
  // memory location".
  Tensor a = filled<float>(kCpu, iota(10), {10});
  Tensor lo = reinterpret(a.get(), {4}, {1}, 0), hi = reinterpret(a.get(), {4}, {1}, 2);
  expect_copy_refused(lo.get(), hi.get(), a.get(), "single memory location");
  expect_copy_refused(hi.get(), lo.get(), a.get(), "single memory location");
}

TEST(ShimCopyOverlap, SameRangeWithOtherStridesIsRefused) {
  // torch: a.copy_(a.t()) on a 2x2 or 8x8 tensor raises the partial-overlap error.
  Tensor a = filled<float>(kCpu, iota(64), {8, 8});
  Tensor t = reinterpret(a.get(), {8, 8}, {1, 8}, 0);
  expect_copy_refused(a.get(), t.get(), a.get(), "single memory location");
}

TEST(ShimCopyOverlap, SameViewIsANoOp) {
  Tensor a = filled<float>(kCpu, iota(10), {10});
  ASSERT_EQ(aoti_torch_copy_(a.get(), a.get(), 0), AOTI_TORCH_SUCCESS);
  Tensor v1 = reinterpret(a.get(), {4}, {1}, 1), v2 = reinterpret(a.get(), {4}, {1}, 1);
  ASSERT_EQ(aoti_torch_copy_(v1.get(), v2.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), iota(10));
}

TEST(ShimCopyOverlap, InterleavedViewsCopyAsTorchDoes) {
  // torch: a[0:8:2].copy_(a[1:9:2]) -> [1, 1, 3, 3, 5, 5, 7, 7, 8, 9].
  Tensor a = filled<float>(kCpu, iota(10), {10});
  Tensor even = reinterpret(a.get(), {4}, {2}, 0), odd = reinterpret(a.get(), {4}, {2}, 1);
  ASSERT_EQ(aoti_torch_copy_(even.get(), odd.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{1, 1, 3, 3, 5, 5, 7, 7, 8, 9}));
}

TEST(ShimCopyOverlap, NonDenseSourceOverDenseDestinationAsTorchDoes) {
  // torch: as_strided(a, [3], [1], 2).copy_(as_strided(a, [3], [3], 0)) ->
  // [0, 1, 0, 3, 6, 5, ...]; and as_strided(a,[4],[1]).copy_(as_strided(a,[4],[2]))
  // -> [0, 2, 4, 6, 4, 5, ...].
  Tensor a = filled<float>(kCpu, iota(10), {10});
  Tensor d = reinterpret(a.get(), {3}, {1}, 2), s = reinterpret(a.get(), {3}, {3}, 0);
  ASSERT_EQ(aoti_torch_copy_(d.get(), s.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{0, 1, 0, 3, 6, 5, 6, 7, 8, 9}));

  Tensor b = filled<float>(kCpu, iota(10), {10});
  Tensor d2 = reinterpret(b.get(), {4}, {1}, 0), s2 = reinterpret(b.get(), {4}, {2}, 0);
  ASSERT_EQ(aoti_torch_copy_(d2.get(), s2.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(b.get()), (F{0, 2, 4, 6, 4, 5, 6, 7, 8, 9}));
}

TEST(ShimCopyOverlap, ElementAliasingIsReadBeforeWritten) {
  // as_strided(a, [4], [2]).copy_(as_strided(a, [4], [1])): torch promises no
  // result here (its CPU loop gives [0, 1, 1, 3, 1, 5, 3, 7, ...], reading
  // elements it already wrote). aotrt copies through a temporary, so the
  // result is as if the whole source had been read first.
  Tensor a = filled<float>(kCpu, iota(10), {10});
  Tensor d = reinterpret(a.get(), {4}, {2}, 0), s = reinterpret(a.get(), {4}, {1}, 0);
  ASSERT_EQ(aoti_torch_copy_(d.get(), s.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{0, 1, 1, 3, 2, 5, 3, 7, 8, 9}));
}

TEST(ShimCopyOverlap, DestinationWithInternalOverlapIsRefused) {
  // torch: a.expand(2, 3).copy_(ones(2, 3)) raises "more than one element of
  // the written-to tensor refers to a single memory location"; expand(1, 3)
  // (stride 0 on a size-1 dim) is fine.
  Tensor a = filled<float>(kCpu, iota(3), {3});
  Tensor e = reinterpret(a.get(), {2, 3}, {0, 1}, 0);
  HostTensor<float> ones(F(6, 1.f), {2, 3});
  expect_copy_refused(e.get(), ones.get(), a.get(), "more than one element");
  Tensor e1 = reinterpret(a.get(), {1, 3}, {0, 1}, 0);
  HostTensor<float> ones1(F(3, 1.f), {1, 3});
  ASSERT_EQ(aoti_torch_copy_(e1.get(), ones1.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{1, 1, 1}));
}

TEST(ShimCopyOverlap, SameBytesInAnotherDtypeConvertInPlace) {
  // Same range and strides (torch: full overlap, allowed): int32 view of a
  // float32 buffer copied onto itself converts element by element.
  Tensor a = filled<float>(kCpu, F{1.5f, -2.5f, 3.75f}, {3});
  Tensor as_int;
  const Dims s{3}, st{1};
  ASSERT_EQ(aoti_torch__alloc_from_pool(a.get(), 0, kI32, 1, s.data(), st.data(), as_int.out()),
            AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_copy_(as_int.get(), a.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(read<int32_t>(as_int.get()), (std::vector<int32_t>{1, -2, 3}));
}

TEST(ShimClone, StridesAreTorchsPreserveFormat) {
  struct Case {
    Dims sizes, strides, clone_strides;
  };
  const Case cases[] = {
      {{8, 3}, {1, 16}, {1, 8}},
      {{1, 16, 40, 40}, {102400, 1, 2560, 64}, {25600, 1, 640, 16}},
      {{2, 2, 5, 3}, {60, 10, 1, 20}, {30, 5, 1, 10}},
      {{4, 3}, {0, 1}, {3, 1}},
      {{3, 0, 2}, {1, 5, 10}, {1, 5, 10}},
      {{2, 3}, {1, 2}, {1, 2}},
      {{}, {}, {}},
  };
  Tensor base = filled<float>(kCpu, iota(120000), {120000});
  for (const Case& c : cases) {
    Tensor v = reinterpret(base.get(), c.sizes, c.strides, 3);
    const Counters before = counters(kCpu);
    Tensor cl;
    ASSERT_EQ(aoti_torch_clone(v.get(), cl.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    const Meta m = meta(cl.get());
    EXPECT_EQ(m.strides, c.clone_strides) << ::testing::PrintToString(c.sizes);
    EXPECT_EQ(m.offset, 0);
    EXPECT_EQ(read<float>(cl.get()), read<float>(v.get()));
    int64_t nbytes = 0;
    aoti_torch_get_storage_size(cl.get(), &nbytes);
    EXPECT_EQ(nbytes, numel_of(c.sizes) * 4);
    EXPECT_EQ(counters(kCpu).live_bytes, before.live_bytes + nbytes);
  }
}

TEST(ShimClone, OfBorrowedMemoryIsOwnedAndIndependent) {
  F buf = iota(6);
  HostTensor<float> h(buf, {2, 3});
  Tensor cl;
  ASSERT_EQ(aoti_torch_clone(h.get(), cl.out()), AOTI_TORCH_SUCCESS);
  h.data[0] = 100.f;
  EXPECT_EQ(read<float>(cl.get()), iota(6));
}

TEST(ShimClonePreserveStrides, CopiesTheSpanAndKeepsTheStrides) {
  // torch: sizes [3, 2], strides [10, 3] at offset 4 -> storage of 24 floats
  // (96 bytes), offset 0, the same strides.
  Tensor base = filled<float>(kCpu, iota(40), {40});
  Tensor v = reinterpret(base.get(), {3, 2}, {10, 3}, 4);
  Tensor c;
  ASSERT_EQ(aoti_torch_clone_preserve_strides(v.get(), c.out()), AOTI_TORCH_SUCCESS);
  const Meta m = meta(c.get());
  EXPECT_EQ(m.sizes, (Dims{3, 2}));
  EXPECT_EQ(m.strides, (Dims{10, 3}));
  EXPECT_EQ(m.offset, 0);
  int64_t nbytes = 0;
  aoti_torch_get_storage_size(c.get(), &nbytes);
  EXPECT_EQ(nbytes, 96);
  EXPECT_EQ(read<float>(c.get()), (F{4, 7, 14, 17, 24, 27}));
  // The holes come along too: the whole span is copied.
  Tensor flat = reinterpret(c.get(), {24}, {1}, 0);
  EXPECT_EQ(read<float>(flat.get()), iota(24, 4.f));
}

TEST(ShimClonePreserveStrides, DenseAndEmptyKeepTheirStrides) {
  Tensor base = filled<float>(kCpu, iota(12), {12});
  Tensor t = reinterpret(base.get(), {3, 4}, {1, 3}, 0);
  Tensor c;
  ASSERT_EQ(aoti_torch_clone_preserve_strides(t.get(), c.out()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(c.get()).strides, (Dims{1, 3}));
  EXPECT_EQ(read<float>(c.get()), read<float>(t.get()));
  Tensor e = reinterpret(base.get(), {0, 5}, {7, 9}, 12);
  Tensor ce;
  ASSERT_EQ(aoti_torch_clone_preserve_strides(e.get(), ce.out()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(ce.get()).strides, (Dims{7, 9}));
  int64_t nbytes = -1;
  aoti_torch_get_storage_size(ce.get(), &nbytes);
  EXPECT_EQ(nbytes, 0);
}

TEST(ShimZero, WritesOnlyTheViewsElements) {
  Tensor a = filled<float>(kCpu, iota(12, 1.f), {3, 4});
  Tensor v = reinterpret(a.get(), {2, 2}, {4, 2}, 1);
  ASSERT_EQ(aoti_torch_zero_(v.get()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{1, 0, 3, 0, 5, 0, 7, 0, 9, 10, 11, 12}));
}

TEST(ShimZero, ExpandedAndEmptyViews) {
  // torch: a.expand(4, 3).zero_() is allowed and zeroes a.
  Tensor a = filled<float>(kCpu, iota(3, 1.f), {3});
  Tensor e = reinterpret(a.get(), {4, 3}, {0, 1}, 0);
  ASSERT_EQ(aoti_torch_zero_(e.get()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), (F{0, 0, 0}));
  Tensor b = filled<float>(kCpu, F{5}, {1});
  Tensor none = reinterpret(b.get(), {0}, {1}, 1);
  ASSERT_EQ(aoti_torch_zero_(none.get()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(b.get()), F{5});
}

TEST(ShimAssign, DestinationBecomesAnAliasAndDropsItsOldStorage) {
  const Counters before = counters(kCpu);
  Tensor a = filled<float>(kCpu, iota(4), {4});
  Tensor b = filled<float>(kCpu, F(100, 1.f), {100});
  Tensor va = reinterpret(a.get(), {2}, {2}, 1);
  const int64_t with_b = counters(kCpu).live_bytes;
  ASSERT_EQ(aoti_torch_assign_tensors(va.get(), b.get()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(counters(kCpu).live_bytes, with_b - 400);  // b's old storage is gone
  const Meta m = meta(b.get());
  EXPECT_EQ(m.sizes, Dims{2});
  EXPECT_EQ(m.strides, Dims{2});
  EXPECT_EQ(m.offset, 1);
  EXPECT_EQ(read<float>(b.get()), (F{1, 3}));
  a.reset();
  va.reset();
  EXPECT_EQ(read<float>(b.get()), (F{1, 3}));  // b keeps a's storage alive
  b.reset();
  EXPECT_EQ(counters(kCpu), before);
}

TEST(ShimAssign, OntoItselfChangesNothing) {
  Tensor a = filled<float>(kCpu, iota(4), {4});
  ASSERT_EQ(aoti_torch_assign_tensors(a.get(), a.get()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(a.get()), iota(4));
}

TEST(ShimAssign, OutMakesANewAlias) {
  Tensor a = filled<float>(kCpu, iota(6), {6});
  Tensor v = reinterpret(a.get(), {3}, {2}, 0);
  Tensor out;
  ASSERT_EQ(aoti_torch_assign_tensors_out(v.get(), out.out()), AOTI_TORCH_SUCCESS);
  EXPECT_NE(out.get(), v.get());
  EXPECT_EQ(read<float>(out.get()), (F{0, 2, 4}));
  write<float>(out.get(), {9, 9, 9});
  EXPECT_EQ(read<float>(a.get()), (F{9, 1, 9, 3, 9, 5}));
}

}  // namespace
