// The device-generic conformance suite: the view and ownership contract,
// driven only through the public C ABI, as generated code drives it, plus
// the allocator's counters (aotrt::allocator_for(device).stats()) and the
// live handle count. Every test is a TEST_P over the backends that are built
// (conformance_backends.h: CPU always, CUDA with AOTRT_WITH_CUDA) and runs
// unchanged on each.
//
// Seed = ExecuTorch PR #22984 "Metal backend: keep non-packed views in their
// parent's buffer" (/work/shared/seed), its stack (#22956, #22957, #24782) and
// its tests (reference executorch-metal-backend.md section 4).
//
// Test                                                 Seed scenario or bug it covers
// ---------------------------------------------------- ---------------------------------------------
// test_conformance.cpp (ConformanceViews)
//   NonPackedChunkStaysInItsParent                     #22983: a chunk along C of a channels-last
//                                                      buffer was replaced by a packed copy; writes
//                                                      were lost (NonPackedViewStaysInParentBuffer)
//   CatFilledThroughChunkViewsIsComplete               the C2f pattern: a cat filled through four
//                                                      views of its result (pointwise_c2f,
//                                                      linear_chunk_cat_last_dim), by copy_ and by
//                                                      kernel writes through data_ptr + strides
//   OffsetViewWritesReachTheParent                     #22956: an offset view aliased as a separate
//                                                      buffer read stale data (linear_chunk_*_dim)
//   ReinterpretOffsetIsAddedNotReplaced                linear_nested_chunk; ABI: offset_increment
//   LastDimChunkOutputIsReadable                       linear_chunk_last_dim_output: a model output
//                                                      that is a non-packed view, copied out with
//                                                      copy_ (Metal's copy_ refused it once)
//   NestedViewsAndCopiedHandlesShareMemory             CopiedHandleIsAStridedViewToo, nested views
//   EmptyViewAtEndOfBuffer                             EmptyViewAtEndOfBufferIsNotRegisteredPastIt;
//                                                      the last commit: an empty view at offset 8 of
//                                                      8 elements reinterpreted as 4 elements must be
//                                                      refused, not address elements 0-3
//   SizeZeroDimsTakeAnyStrides                         "an empty view is packed whatever its strides"
//   StrideZeroViews                                    stride 0 (expand), unrepresentable in ETensor
//   ZeroDimTensors                                     0-d tensors at any offset, broadcast from
// test_conformance_copy.cpp (ConformanceCopy)
//   FromNonPackedViewIntoDense                         PackedCopyGathersTheViewsElements
//   IntoNonPackedViewKeepsTheHoles                     Metal refused copy_ into a strided view
//                                                      (kWrite); aotrt writes through it
//   BetweenTwoStridedViews, BroadcastIntoStridedView   copy_ with ATen semantics on any strides
//   AcrossDevices                                      CopyOfStridedViewInto{...}: host <-> device
//                                                      copies of strided views, holes kept
//   BetweenDtypes                                      copies that convert (in-range values, exact)
//   PartialOverlapIsRefusedAsATen                      DestinationOverlappingTheViewIsDetected;
//                                                      ATen refuses, memory unchanged
//   SameBytesOtherStridesIsRefusedAsATen               ATen's full-overlap rule needs equal strides
//   SameViewIsANoOp, InterleavedViewsCopyAsATen,       ATen's results where ATen promises one
//   NonDenseSourceOverDenseDestination
//   ElementAliasingReadsTheSourceFirst                 the one overlap ATen leaves open: aotrt's rule
//   InternalOverlapDestinationIsRefused                ATen's assert_no_internal_overlap
// test_conformance_ownership.cpp (ConformanceOwnership)
//   EveryDeletionOrderFreesExactlyOnce                 ViewOutlivesDeleted{OriginalOfCopiedHandle,
//                                                      CopiedHandle, ...SameAddressReinterpret},
//                                                      ParentFreedAfter{View,Parent}DeletedLast,
//                                                      NestedViewKeepsParentAlive,
//                                                      CopiedViewHandleKeepsParentAlive; the PR's
//                                                      "offset view never gave its count back"
//   BorrowedMemoryIsNeverFreed                         BlobAddressIsTrackedWhileTensorIsAlive,
//                                                      CleanupLeavesNoTrackedMemory: from_blob
//                                                      memory is the caller's, in every order
//   AssignReleasesTheOldStorage                        aoti_torch_assign_tensors ownership
//   ClonesOwnNewMemory                                 clone / clone_preserve_strides lifetime
// test_conformance_refusals.cpp (ConformanceRefusals)
//   NegativeStrides, ViewPastItsStorage,               ShimsRefuseArgumentsNoTensorCanHave,
//   SpanOverflowingInt64, UnknownDtypeCodes,           ViewsTheGatherCannotPackAreNotRecorded,
//   UnknownDeviceCodes, NullPointers,                  StridesOfNoDenseTensorAreRefused: refused
//   DeletedHandles, UndefinedTensors, OutOfMemory      with a clear error and no state change
// test_conformance_large.cpp (ConformanceLarge)
//   ViewSpanningMoreThan2To32Elements                  DISABLED_PackingAViewSpanningMoreThan32Bits
//                                                      and LogitsOfOneLongSequence: 64-bit indexing
// test_conformance_ops.cpp (ConformanceOps)
//   MmReadsNonPackedViewsAndWritesAStridedOut          HandWrittenKernelReadsPackedCopy,
//                                                      HandWrittenKernelMayNotWriteAStridedView
//   MmWritesIntoAChannelsLastChunk                     an op's result written through a chunk
//                                                      view (MPSGraph "fails instead of writing to
//                                                      the wrong place"; aotrt writes through it)
//   ConvolutionReadsAChannelsLastChunk                 the C2f 1x1 convs on chunk views
//   BmmReadsThePermutedInputYolo11Needs                "yolo11n stops in aoti_torch_mps_bmm_out,
//                                                      which rejects a permuted input ([2,64,400],
//                                                      strides [1,800,2])"
// test_random_model.cpp (RandomModel, CPU): 100000 random calls against a
// reference model, all of the above mixed; see Note [Random model].
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "conformance_backends.h"

namespace aotrt::test {
namespace {

class ConformanceViews : public ::testing::TestWithParam<Backend> {};

// The seed's C2f geometry: [1, 64, 40, 40] channels-last, chunked along C.
const Dims kCatSizes{1, 64, 40, 40}, kCatStrides{102400, 1, 2560, 64};
const Dims kChunkSizes{1, 16, 40, 40};
constexpr int64_t kCatNumel = 102400;

void* data_of(AtenTensorHandle h) {
  void* p = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &p), AOTI_TORCH_SUCCESS);
  return p;
}

// Element (0, c, h, w) of a chunk at channel offset c0 sits at storage index
// c0 + c + 2560 h + 64 w of the cat buffer.
int64_t cat_index(int64_t c, int64_t h, int64_t w) { return c + 2560 * h + 64 * w; }

TEST_P(ConformanceViews, NonPackedChunkStaysInItsParent) {
  const Backend& b = GetParam();
  Tensor parent = empty(b, kCatSizes, kCatStrides, kF32);
  Tensor flat = reinterpret(parent.get(), {kCatNumel}, {1}, 0);
  write<float>(flat.get(), iota(kCatNumel));
  for (int64_t k = 0; k < 4; ++k) {
    Tensor chunk = reinterpret(parent.get(), kChunkSizes, kCatStrides, 16 * k);
    const Meta m = meta(chunk.get());
    EXPECT_EQ(m.sizes, kChunkSizes);
    EXPECT_EQ(m.strides, kCatStrides);  // the parent's strides, not packed ones
    EXPECT_EQ(m.offset, 16 * k);
    EXPECT_EQ(static_cast<float*>(data_of(chunk.get())),
              static_cast<float*>(data_of(parent.get())) + 16 * k);
    std::vector<float> want;
    for (int64_t c = 0; c < 16; ++c)
      for (int64_t h = 0; h < 40; ++h)
        for (int64_t w = 0; w < 40; ++w) want.push_back(static_cast<float>(16 * k + cat_index(c, h, w)));
    ASSERT_EQ(read<float>(chunk.get()), want) << "chunk " << k;
    ASSERT_EQ(kernel_read<float>(b, chunk.get()), want) << "chunk " << k;
  }
  // A write through chunk 2 lands in the parent, and nowhere else.
  Tensor chunk2 = reinterpret(parent.get(), kChunkSizes, kCatStrides, 32);
  std::vector<float> neg(25600);
  for (size_t i = 0; i < neg.size(); ++i) neg[i] = -1.f - static_cast<float>(i);
  write<float>(chunk2.get(), neg);
  std::vector<float> want = iota(kCatNumel);
  size_t i = 0;
  for (int64_t c = 0; c < 16; ++c)
    for (int64_t h = 0; h < 40; ++h)
      for (int64_t w = 0; w < 40; ++w) want[static_cast<size_t>(32 + cat_index(c, h, w))] = neg[i++];
  EXPECT_EQ(read<float>(flat.get()), want);
  // And a write to the parent is seen through the chunk.
  kernel_write<float>(b, parent.get(), std::vector<float>(kCatNumel, 5.f));
  EXPECT_EQ(read<float>(chunk2.get()), std::vector<float>(25600, 5.f));
}

TEST_P(ConformanceViews, CatFilledThroughChunkViewsIsComplete) {
  const Backend& b = GetParam();
  // Sources: the four chunk results, NCHW-contiguous and channels-last.
  for (bool channels_last_sources : {false, true}) {
    SCOPED_TRACE(channels_last_sources ? "channels-last sources" : "contiguous sources");
    const Counters before = counters(b);
    Tensor cat = empty(b, kCatSizes, kCatStrides, kF32);
    ASSERT_EQ(aoti_torch_zero_(cat.get()), AOTI_TORCH_SUCCESS);
    std::vector<std::vector<float>> src_values(4);
    for (int64_t k = 0; k < 4; ++k) {
      src_values[k] = iota(25600, 100000.f * static_cast<float>(k + 1));
      const Dims strides = channels_last_sources ? Dims{25600, 1, 640, 16} : row_major(kChunkSizes);
      Tensor src = filled<float>(b, src_values[k], kChunkSizes, strides);
      // As generated code does: a view of the cat result, written, then dropped.
      Tensor chunk = reinterpret(cat.get(), kChunkSizes, kCatStrides, 16 * k);
      ASSERT_EQ(aoti_torch_copy_(chunk.get(), src.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    }
    const std::vector<float> got = read<float>(cat.get());
    ASSERT_EQ(got.size(), static_cast<size_t>(kCatNumel));
    int64_t mismatches = 0;
    for (int64_t c = 0; c < 64; ++c)
      for (int64_t h = 0; h < 40; ++h)
        for (int64_t w = 0; w < 40; ++w) {
          const float want = src_values[c / 16][(c % 16) * 1600 + h * 40 + w];
          if (got[c * 1600 + h * 40 + w] != want) ++mismatches;
        }
    EXPECT_EQ(mismatches, 0);
    cat.reset();
    EXPECT_EQ(counters(b), before);
  }
  // The same cat filled by a kernel writing through each view's data pointer
  // with the view's strides, as an inductor kernel does.
  Tensor cat = empty(b, kCatSizes, kCatStrides, kF32);
  ASSERT_EQ(aoti_torch_zero_(cat.get()), AOTI_TORCH_SUCCESS);
  for (int64_t k = 0; k < 4; ++k) {
    Tensor chunk = reinterpret(cat.get(), kChunkSizes, kCatStrides, 16 * k);
    kernel_write<float>(b, chunk.get(), iota(25600, 100000.f * static_cast<float>(k + 1)));
  }
  const std::vector<float> got = read<float>(cat.get());
  int64_t mismatches = 0;
  for (int64_t c = 0; c < 64; ++c)
    for (int64_t hw = 0; hw < 1600; ++hw) {
      const float want = 100000.f * static_cast<float>(c / 16 + 1) + static_cast<float>((c % 16) * 1600 + hw);
      if (got[c * 1600 + hw] != want) ++mismatches;
    }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(ConformanceViews, OffsetViewWritesReachTheParent) {
  // linear(x) then chunk(2, dim=0): the second chunk is a packed view at an
  // offset; a write through it must be read back through the parent at once.
  const Backend& b = GetParam();
  Tensor out = filled<float>(b, std::vector<float>(12 * 16, 0.f), {12, 16});
  Tensor second = reinterpret(out.get(), {6, 16}, {16, 1}, 96);
  Tensor src = filled<float>(b, iota(96, 1.f), {6, 16});
  ASSERT_EQ(aoti_torch_copy_(second.get(), src.get(), 0), AOTI_TORCH_SUCCESS);
  std::vector<float> want(96, 0.f);
  const std::vector<float> tail = iota(96, 1.f);
  want.insert(want.end(), tail.begin(), tail.end());
  EXPECT_EQ(read<float>(out.get()), want);
  EXPECT_EQ(kernel_read<float>(b, out.get()), want);
}

TEST_P(ConformanceViews, ReinterpretOffsetIsAddedNotReplaced) {
  const Backend& b = GetParam();
  Tensor base = filled<float>(b, iota(100), {100});
  Tensor v = reinterpret(base.get(), {10}, {1}, 5);
  Tensor w = reinterpret(v.get(), {3}, {2}, 7);  // torch: offset 12, [12, 14, 16]
  Tensor x = reinterpret(w.get(), {2, 2}, {10, 1}, 30);  // offset 42
  EXPECT_EQ(meta(w.get()).offset, 12);
  EXPECT_EQ(meta(x.get()).offset, 42);
  EXPECT_EQ(read<float>(w.get()), (std::vector<float>{12, 14, 16}));
  EXPECT_EQ(read<float>(x.get()), (std::vector<float>{42, 43, 52, 53}));
  EXPECT_EQ(kernel_read<float>(b, x.get()), (std::vector<float>{42, 43, 52, 53}));
}

TEST_P(ConformanceViews, LastDimChunkOutputIsReadable) {
  // linear(x).chunk(2, dim=-1)[1] as a model output: [12, 8], strides [16, 1], offset 8.
  const Backend& b = GetParam();
  Tensor y = filled<float>(b, iota(12 * 16), {12, 16});
  Tensor out = reinterpret(y.get(), {12, 8}, {16, 1}, 8);
  std::vector<float> want;
  for (int r = 0; r < 12; ++r)
    for (int c = 0; c < 8; ++c) want.push_back(static_cast<float>(r * 16 + 8 + c));
  Tensor host;
  const Dims sizes{12, 8}, strides{8, 1};
  ASSERT_EQ(aoti_torch_empty_strided(2, sizes.data(), strides.data(), kF32, 0, 0, host.out()),
            AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_copy_(host.get(), out.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(kernel_read<float>(built_backends()[0], host.get()), want);
  Tensor cl;
  ASSERT_EQ(aoti_torch_clone(out.get(), cl.out()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(cl.get()).strides, (Dims{8, 1}));
  EXPECT_EQ(read<float>(cl.get()), want);
}

TEST_P(ConformanceViews, NestedViewsAndCopiedHandlesShareMemory) {
  const Backend& b = GetParam();
  Tensor parent = filled<float>(b, std::vector<float>(64, 0.f), {8, 8});
  Tensor view = reinterpret(parent.get(), {4, 4}, {8, 1}, 18);       // rows 2-5, cols 2-5
  Tensor nested = reinterpret(view.get(), {2, 2}, {16, 2}, 9);        // offset 27
  Tensor copy = new_handle(nested.get());
  EXPECT_EQ(meta(copy.get()).strides, (Dims{16, 2}));
  EXPECT_EQ(meta(copy.get()).offset, 27);
  EXPECT_EQ(data_of(copy.get()), data_of(nested.get()));
  write<float>(copy.get(), {1, 2, 3, 4});
  std::vector<float> want(64, 0.f);
  want[27] = 1;
  want[29] = 2;
  want[43] = 3;
  want[45] = 4;
  EXPECT_EQ(read<float>(parent.get()), want);
  EXPECT_EQ(read<float>(nested.get()), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(read<float>(view.get())[5], 1.f);  // view (1, 1) is element 27
}

TEST_P(ConformanceViews, EmptyViewAtEndOfBuffer) {
  const Backend& b = GetParam();
  Tensor buf = filled<float>(b, iota(8, 1.f), {8});
  Tensor e = reinterpret(buf.get(), {0}, {1}, 8);
  ASSERT_TRUE(e);
  EXPECT_EQ(meta(e.get()).offset, 8);
  EXPECT_EQ(data_of(e.get()), nullptr);  // torch: no elements, no address
  int64_t numel = -1;
  ASSERT_EQ(aoti_torch_get_numel(e.get(), &numel), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(numel, 0);
  // Reinterpreting it as 4 elements would read past the end: refused.
  const Counters before = counters(b);
  AtenTensorHandle out = nullptr;
  const Dims four{4}, one{1};
  EXPECT_EQ(aoti_torch__reinterpret_tensor(e.get(), 1, four.data(), one.data(), 0, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch__reinterpret_tensor", "48 bytes", "has 32"}));
  const Dims zero{0};
  EXPECT_EQ(aoti_torch__reinterpret_tensor(buf.get(), 1, zero.data(), one.data(), 9, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(b), before);
  // Still empty views of it are fine, and copies and zero_ through it are no-ops.
  Tensor e2 = reinterpret(e.get(), {0, 3}, {5, 1}, 0);
  EXPECT_TRUE(e2);
  Tensor host_empty = filled<float>(built_backends()[0], {}, {0});
  EXPECT_EQ(aoti_torch_copy_(e.get(), host_empty.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_zero_(e.get()), AOTI_TORCH_SUCCESS);
  Tensor cl;
  ASSERT_EQ(aoti_torch_clone(e.get(), cl.out()), AOTI_TORCH_SUCCESS);
  int64_t nbytes = -1;
  aoti_torch_get_storage_size(cl.get(), &nbytes);
  EXPECT_EQ(nbytes, 0);
  EXPECT_EQ(read<float>(buf.get()), iota(8, 1.f));
}

TEST_P(ConformanceViews, SizeZeroDimsTakeAnyStrides) {
  const Backend& b = GetParam();
  Tensor buf = filled<float>(b, iota(8), {8});
  const int64_t big = std::numeric_limits<int64_t>::max() / 4;
  Tensor e = reinterpret(buf.get(), {2, 0, 3}, {big, 1000000000000, 7}, 8);
  ASSERT_TRUE(e);
  EXPECT_EQ(meta(e.get()).strides, (Dims{big, 1000000000000, 7}));
  EXPECT_EQ(aoti_torch_zero_(e.get()), AOTI_TORCH_SUCCESS);
  Tensor cl;
  ASSERT_EQ(aoti_torch_clone(e.get(), cl.out()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(cl.get()).strides, (Dims{big, 1000000000000, 7}));  // torch keeps them
  Tensor cps;
  ASSERT_EQ(aoti_torch_clone_preserve_strides(e.get(), cps.out()), AOTI_TORCH_SUCCESS);
  // empty_strided of an empty shape allocates nothing, whatever its strides.
  const Counters before = counters(b);
  Tensor none = empty(b, {0, 5}, {big, big}, kF32);
  EXPECT_EQ(counters(b).live_bytes, before.live_bytes);
  EXPECT_EQ(read<float>(buf.get()), iota(8));
}

TEST_P(ConformanceViews, StrideZeroViews) {
  const Backend& b = GetParam();
  Tensor base = filled<float>(b, {1, 2, 3}, {3});
  Tensor expanded = reinterpret(base.get(), {4, 3}, {0, 1}, 0);
  const std::vector<float> rows{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3};
  EXPECT_EQ(read<float>(expanded.get()), rows);
  EXPECT_EQ(kernel_read<float>(b, expanded.get()), rows);
  Tensor dense = empty(b, {4, 3}, kF32);
  ASSERT_EQ(aoti_torch_copy_(dense.get(), expanded.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(dense.get()), rows);
  Tensor cl;
  ASSERT_EQ(aoti_torch_clone(expanded.get(), cl.out()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(cl.get()).strides, (Dims{3, 1}));
  EXPECT_EQ(read<float>(cl.get()), rows);
  // One element expanded in every direction.
  Tensor scalar = reinterpret(base.get(), {2, 5}, {0, 0}, 2);
  EXPECT_EQ(read<float>(scalar.get()), std::vector<float>(10, 3.f));
  // Writing through a stride-0 view: copy_ is refused (internal overlap),
  // zero_ is allowed (torch: a.expand(4, 3).zero_()).
  Tensor src = filled<float>(b, std::vector<float>(12, 9.f), {4, 3});
  EXPECT_EQ(aoti_torch_copy_(expanded.get(), src.get(), 0), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_copy_", "more than one element"}));
  EXPECT_EQ(read<float>(base.get()), (std::vector<float>{1, 2, 3}));
  ASSERT_EQ(aoti_torch_zero_(expanded.get()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(base.get()), (std::vector<float>{0, 0, 0}));
}

TEST_P(ConformanceViews, ZeroDimTensors) {
  const Backend& b = GetParam();
  Tensor z = empty(b, {}, {}, kF32);
  int64_t nbytes = 0;
  aoti_torch_get_storage_size(z.get(), &nbytes);
  EXPECT_EQ(nbytes, 4);
  write<float>(z.get(), {3.5f});
  float item = 0;
  ASSERT_EQ(aoti_torch_item_float32(z.get(), &item), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(item, 3.5f);
  Tensor buf = filled<float>(b, iota(8), {8});
  Tensor at5 = reinterpret(buf.get(), {}, {}, 5);
  EXPECT_EQ(meta(at5.get()).offset, 5);
  EXPECT_EQ(read<float>(at5.get()), std::vector<float>{5.f});
  // A 0-d source broadcast into a strided view.
  Tensor grid = reinterpret(buf.get(), {2, 2}, {4, 1}, 1);
  ASSERT_EQ(aoti_torch_copy_(grid.get(), z.get(), 0), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(read<float>(buf.get()), (std::vector<float>{0, 3.5f, 3.5f, 3, 4, 3.5f, 3.5f, 7}));
  Tensor cl;
  ASSERT_EQ(aoti_torch_clone(at5.get(), cl.out()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(meta(cl.get()).offset, 0);
  EXPECT_EQ(read<float>(cl.get()), std::vector<float>{3.5f});  // element 5 is in the grid
}

INSTANTIATE_TEST_SUITE_P(Backends, ConformanceViews, ::testing::ValuesIn(built_backends()),
                         backend_name);

}  // namespace
}  // namespace aotrt::test
