// View arithmetic (core/view.h): spans, bounds, overflow and layout queries.
#include <gtest/gtest.h>

#include <limits>

#include "core/error.h"
#include "core/view.h"

using namespace aotrt;

TEST(ViewSpan, PackedView) {
  const int64_t sizes[] = {2, 3}, strides[] = {3, 1};
  ViewSpan s = view_span(sizes, strides, 4, 4, "t");
  EXPECT_EQ(s.numel, 6);
  EXPECT_EQ(s.begin_elem, 4);
  EXPECT_EQ(s.end_elem, 10);
  EXPECT_EQ(s.end_byte, 40);
}

TEST(ViewSpan, NonPackedChannelsLastChunk) {
  // The seed's chunk along C of a [1,32,40,40] channels-last buffer.
  const int64_t sizes[] = {1, 16, 40, 40}, strides[] = {0, 1, 1280, 32};
  ViewSpan s = view_span(sizes, strides, 16, 4, "t");
  EXPECT_EQ(s.end_elem, 16 + 15 + 39 * 1280 + 39 * 32 + 1);
  EXPECT_EQ(s.end_elem, 51200);  // ends exactly at the parent's end
}

TEST(ViewSpan, StrideZeroAndEmpty) {
  const int64_t sizes[] = {5, 3}, strides[] = {0, 1};
  EXPECT_EQ(view_span(sizes, strides, 0, 1, "t").end_elem, 3);
  const int64_t esizes[] = {0, 3}, estrides[] = {123456, 7};
  ViewSpan e = view_span(esizes, estrides, 9, 1, "t");
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.end_elem, 9);
}

TEST(ViewSpan, RefusesNegativeAndOverflow) {
  const int64_t sizes[] = {2}, neg[] = {-1};
  EXPECT_THROW(view_span(sizes, neg, 1, 4, "t"), Error);
  const int64_t big[] = {std::numeric_limits<int64_t>::max()}, two[] = {2};
  EXPECT_THROW(view_span(two, big, 0, 4, "t"), Error);
  const int64_t one[] = {1};
  EXPECT_THROW(view_span(one, one, std::numeric_limits<int64_t>::max(), 1, "t"), Error);
  EXPECT_THROW(view_span(one, one, -1, 4, "t"), Error);
}

TEST(ViewSpan, StorageBound) {
  const int64_t sizes[] = {4}, strides[] = {1};
  EXPECT_NO_THROW(check_view_in_storage(sizes, strides, 4, 4, 32, "t"));
  EXPECT_THROW(check_view_in_storage(sizes, strides, 5, 4, 32, "t"), Error);
  const int64_t esizes[] = {0};
  EXPECT_NO_THROW(check_view_in_storage(esizes, strides, 8, 4, 32, "t"));  // empty at the end
  EXPECT_THROW(check_view_in_storage(esizes, strides, 9, 4, 32, "t"), Error);
}

TEST(Layout, Contiguity) {
  const int64_t sizes[] = {2, 1, 3};
  const int64_t c[] = {3, 3, 1}, c1[] = {3, 100, 1}, t[] = {1, 1, 2};
  EXPECT_TRUE(is_contiguous(sizes, c));
  EXPECT_TRUE(is_contiguous(sizes, c1));  // size-1 dims do not count
  EXPECT_FALSE(is_contiguous(sizes, t));
  EXPECT_TRUE(is_non_overlapping_and_dense(sizes, t));
}

TEST(Layout, PreserveFormatStrides) {
  const int64_t sizes[] = {1, 16, 40, 40}, chunk[] = {51200, 1, 1280, 32};
  EXPECT_TRUE(is_channels_last_strides_2d(sizes, chunk));
  auto s = preserve_format_strides(sizes, chunk);
  EXPECT_EQ(s, (std::vector<int64_t>{25600, 1, 640, 16}));
}
