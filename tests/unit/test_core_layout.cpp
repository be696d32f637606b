// Layout queries behind clone and copy (core/view.h): density, contiguity
// and the strides empty_like(preserve_format) gives. Expected values are
// torch 2.13's (Tensor.clone().stride(), is_contiguous()).
#include <gtest/gtest.h>

#include <vector>

#include "core/view.h"

using namespace aotrt;
using Dims = std::vector<int64_t>;

namespace {

struct CloneCase {
  Dims sizes, strides, clone_strides;
};
// torch 2.13: torch.as_strided(buf, sizes, strides).clone().stride().
const CloneCase kCloneStrides[] = {
    {{8, 3}, {1, 16}, {1, 8}},                                  // transposed, not dense
    {{2, 3}, {2, 4}, {1, 2}},
    {{1, 16, 40, 40}, {102400, 1, 2560, 64}, {25600, 1, 640, 16}},  // C2f chunk
    {{2, 2, 5, 3}, {60, 10, 1, 20}, {30, 5, 1, 10}},            // permuted, not dense
    {{4, 3}, {0, 1}, {3, 1}},                                   // expanded
    {{4, 3}, {1, 0}, {3, 1}},
    {{3, 1, 4}, {8, 1, 2}, {4, 1, 1}},
    {{2, 3, 4}, {0, 1, 3}, {12, 1, 3}},
    {{3, 0, 2}, {1, 5, 10}, {1, 5, 10}},                        // empty: strides kept
    {{0, 2}, {12, 12}, {12, 12}},
    {{2, 3}, {3, 3}, {1, 2}},                                   // equal strides
    {{3, 2}, {10, 3}, {2, 1}},
    {{1, 3}, {7, 2}, {3, 1}},
    {{3, 1}, {2, 7}, {1, 3}},
    {{3}, {2}, {1}},
    {{2, 3, 1, 1}, {3, 1, 3, 3}, {3, 1, 3, 3}},                 // channels-last, dense
    {{}, {}, {}},
};

TEST(CoreLayout, PreserveFormatStridesMatchTorchClone) {
  for (const CloneCase& c : kCloneStrides) {
    EXPECT_EQ(preserve_format_strides(c.sizes, c.strides), c.clone_strides)
        << "sizes " << ::testing::PrintToString(c.sizes) << " strides "
        << ::testing::PrintToString(c.strides);
  }
}

TEST(CoreLayout, EmptyTensorsAreNonOverlappingAndDense) {
  // ATen counts an empty tensor as contiguous, hence dense, whatever its strides.
  EXPECT_TRUE(is_non_overlapping_and_dense(Dims{0, 2}, Dims{12, 12}));
  EXPECT_TRUE(is_non_overlapping_and_dense(Dims{2, 1, 0}, Dims{8, 8, 5}));
  EXPECT_TRUE(is_non_overlapping_and_dense(Dims{0}, Dims{7}));
}

TEST(CoreLayout, NonOverlappingAndDense) {
  EXPECT_TRUE(is_non_overlapping_and_dense(Dims{}, Dims{}));
  EXPECT_TRUE(is_non_overlapping_and_dense(Dims{3}, Dims{1}));
  EXPECT_TRUE(is_non_overlapping_and_dense(Dims{1}, Dims{9}));
  EXPECT_FALSE(is_non_overlapping_and_dense(Dims{3}, Dims{2}));
  EXPECT_TRUE(is_non_overlapping_and_dense(Dims{2, 3}, Dims{1, 2}));  // transposed
  EXPECT_FALSE(is_non_overlapping_and_dense(Dims{4, 3}, Dims{0, 1}));
  EXPECT_FALSE(is_non_overlapping_and_dense(Dims{2, 3}, Dims{3, 3}));
  EXPECT_TRUE(is_non_overlapping_and_dense(Dims{1, 16, 40, 40}, Dims{25600, 1, 640, 16}));
  EXPECT_FALSE(is_non_overlapping_and_dense(Dims{1, 16, 40, 40}, Dims{102400, 1, 2560, 64}));
}

TEST(CoreLayout, ContiguityMatchesTorch) {
  EXPECT_TRUE(is_contiguous(Dims{0, 3}, Dims{1, 7}));       // empty
  EXPECT_TRUE(is_contiguous(Dims{2, 1, 3}, Dims{3, 100, 1}));  // size-1 stride ignored
  EXPECT_FALSE(is_contiguous(Dims{3}, Dims{0}));
  EXPECT_TRUE(is_contiguous(Dims{1}, Dims{0}));
  EXPECT_TRUE(is_contiguous(Dims{}, Dims{}));
  EXPECT_FALSE(is_contiguous(Dims{2, 3}, Dims{1, 2}));
}

TEST(CoreLayout, ContiguousStridesTreatSizeZeroAsOne) {
  EXPECT_EQ(contiguous_strides(Dims{2, 0, 3}), (Dims{3, 3, 1}));
  EXPECT_EQ(contiguous_strides(Dims{}), Dims{});
  EXPECT_EQ(contiguous_strides(Dims{4, 5, 6}), (Dims{30, 6, 1}));
}

}  // namespace
