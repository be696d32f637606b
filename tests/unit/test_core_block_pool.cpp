// Segments carved into blocks (core/block_pool.h, Note [Block pool]), the
// bookkeeping of the CUDA caching allocator, on made-up addresses: rounding,
// splitting, merging, best fit, the small and large pools, owners, stats, and
// a seeded random run that checks every invariant after each step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/block_pool.h"

using aotrt::BlockPool;

namespace {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

// Hands out segment addresses as a driver would: aligned, never adjacent (a
// gap between segments, so a merge across two of them shows as a bad walk).
struct FakeDriver {
  uintptr_t next = uintptr_t{1} << 40;
  int64_t mallocs = 0;
  uintptr_t malloc(size_t size) {
    const uintptr_t base = next;
    next += (size + 4 * MiB) / (2 * MiB) * (2 * MiB);
    ++mallocs;
    return base;
  }
};

// allocate() of the CUDA allocator without the device: the owner's pool,
// else a new segment. Returns the block's address.
uintptr_t take(BlockPool& pool, FakeDriver& driver, BlockPool::Owner owner, size_t nbytes,
               bool exact = false) {
  const size_t size = BlockPool::round(nbytes);
  BlockPool::Block* b = pool.find_free(owner, size);
  if (b == nullptr) {
    const size_t seg = BlockPool::segment_size(size);
    b = pool.add_segment(owner, driver.malloc(seg), seg, BlockPool::is_small(size));
  }
  return pool.allocate(b, size, exact)->addr;
}

struct BlockInfo {
  uintptr_t addr;
  size_t size;
  bool allocated;
};

// The blocks of the segment at `base`, in address order.
std::vector<BlockInfo> blocks_of(const BlockPool& pool, uintptr_t base) {
  std::vector<BlockInfo> out;
  pool.for_each_segment([&](const BlockPool::Segment& s) {
    if (s.base != base) return;
    for (const BlockPool::Block* b = s.first; b != nullptr; b = b->next) {
      out.push_back({b->addr, b->size, b->allocated});
    }
  });
  return out;
}

std::string describe(const std::vector<BlockInfo>& blocks) {
  std::string s;
  for (const BlockInfo& b : blocks) {
    s += "[" + std::to_string(b.size / KiB) + " KiB" + (b.allocated ? " live" : " free") + "]";
  }
  return s;
}

// Every invariant of Note [Block pool]; "" when all hold. `live` is what the
// test handed out and did not free yet: address -> rounded request.
std::string check_invariants(const BlockPool& pool, const std::map<uintptr_t, size_t>& live) {
  std::string bad;
  auto fail = [&](const std::string& what) {
    if (bad.empty()) bad = what;
  };
  int64_t live_bytes = 0, cached_bytes = 0, reserved = 0, live_blocks = 0, free_blocks = 0;
  uintptr_t previous_end = 0;
  std::map<uintptr_t, size_t> seen_live;
  pool.for_each_segment([&](const BlockPool::Segment& s) {
    reserved += static_cast<int64_t>(s.size);
    if (s.base < previous_end) fail("segments overlap at " + std::to_string(s.base));
    previous_end = s.base + s.size;
    if (s.first == nullptr || s.first->addr != s.base || s.first->prev != nullptr) {
      fail("segment at " + std::to_string(s.base) + " does not start with its first block");
      return;
    }
    uintptr_t at = s.base;
    int64_t seg_live = 0;
    const BlockPool::Block* prev = nullptr;
    for (const BlockPool::Block* b = s.first; b != nullptr; prev = b, b = b->next) {
      if (b->segment != &s) fail("a block of segment " + std::to_string(s.base) + " names another");
      if (b->prev != prev) fail("a block's prev link is wrong at " + std::to_string(b->addr));
      if (b->addr != at) fail("blocks do not tile segment " + std::to_string(s.base));
      if (b->size == 0 || b->size % BlockPool::kMinBlock != 0) {
        fail("block of " + std::to_string(b->size) + " bytes");
      }
      if (prev != nullptr && !prev->allocated && !b->allocated) {
        fail("two free neighbours not merged at " + std::to_string(b->addr));
      }
      at = b->addr + b->size;
      if (b->allocated) {
        ++seg_live;
        live_bytes += static_cast<int64_t>(b->size);
        seen_live.emplace(b->addr, b->size);
      } else {
        cached_bytes += static_cast<int64_t>(b->size);
        ++free_blocks;
      }
    }
    if (at != s.base + s.size) fail("blocks of segment " + std::to_string(s.base) + " overrun it");
    if (seg_live != s.live_blocks) fail("segment live count is wrong");
    live_blocks += seg_live;
  });
  if (live_bytes != pool.live_bytes()) fail("live_bytes is not the sum of live blocks");
  if (cached_bytes != pool.cached_bytes()) fail("cached_bytes is not the sum of free blocks");
  if (reserved != pool.reserved_bytes()) fail("reserved_bytes is not the sum of segments");
  if (pool.live_bytes() + pool.cached_bytes() != pool.reserved_bytes()) fail("live + cached != reserved");
  if (live_blocks != pool.live_blocks()) fail("live block count is wrong");
  if (free_blocks != pool.indexed_free_blocks()) {
    fail(std::to_string(free_blocks) + " free blocks but " + std::to_string(pool.indexed_free_blocks()) +
         " indexed");
  }
  // The test's live set is the pool's: each handed-out block at least its request.
  if (seen_live.size() != live.size()) fail("the pool's live blocks are not the ones handed out");
  for (const auto& [addr, size] : live) {
    auto it = seen_live.find(addr);
    if (it == seen_live.end()) {
      fail("handed-out block at " + std::to_string(addr) + " is not live");
    } else if (it->second < size) {
      fail("block at " + std::to_string(addr) + " is smaller than its request");
    }
  }
  return bad;
}

TEST(CoreBlockPool, SizesArePyTorchs) {
  EXPECT_EQ(BlockPool::round(1), 512u);
  EXPECT_EQ(BlockPool::round(512), 512u);
  EXPECT_EQ(BlockPool::round(513), 1024u);
  EXPECT_EQ(BlockPool::round(1638400), 1638400u);  // [1, 64, 80, 80] float32: a multiple of 512
  EXPECT_TRUE(BlockPool::is_small(MiB));
  EXPECT_FALSE(BlockPool::is_small(MiB + 512));
  EXPECT_EQ(BlockPool::segment_size(512), 2 * MiB);
  EXPECT_EQ(BlockPool::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(BlockPool::segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(BlockPool::segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(BlockPool::segment_size(10 * MiB), 10 * MiB);
  EXPECT_EQ(BlockPool::segment_size(10 * MiB + 512), 12 * MiB);
}

TEST(CoreBlockPool, TwoRequestsSplitOneLargeSegment) {
  BlockPool pool;
  FakeDriver driver;
  const size_t n = 1638400;  // 1.5625 MiB
  const uintptr_t a = take(pool, driver, 0, n);
  const uintptr_t b = take(pool, driver, 0, n);
  EXPECT_EQ(driver.mallocs, 1);
  EXPECT_EQ(b, a + n);
  EXPECT_EQ(pool.live_bytes(), static_cast<int64_t>(2 * n));
  EXPECT_EQ(pool.cached_bytes(), static_cast<int64_t>(20 * MiB - 2 * n));
  EXPECT_EQ(pool.reserved_bytes(), static_cast<int64_t>(20 * MiB));
  const std::vector<BlockInfo> blocks = blocks_of(pool, a);
  ASSERT_EQ(blocks.size(), 3u) << describe(blocks);
  EXPECT_TRUE(blocks[0].allocated && blocks[1].allocated && !blocks[2].allocated) << describe(blocks);
  EXPECT_EQ(check_invariants(pool, {{a, n}, {b, n}}), "");
}

TEST(CoreBlockPool, SmallPoolSplitsAnyRest) {
  BlockPool pool;
  FakeDriver driver;
  const uintptr_t a = take(pool, driver, 0, MiB);
  const uintptr_t b = take(pool, driver, 0, MiB - 512);  // leaves 512 bytes: still split off
  EXPECT_EQ(driver.mallocs, 1);
  EXPECT_EQ(b, a + MiB);
  EXPECT_EQ(pool.live_bytes(), static_cast<int64_t>(2 * MiB - 512));
  EXPECT_EQ(pool.cached_bytes(), 512);
  const uintptr_t c = take(pool, driver, 0, 100);
  EXPECT_EQ(c, b + MiB - 512);
  EXPECT_EQ(pool.cached_bytes(), 0);
  EXPECT_EQ(driver.mallocs, 1);
}

TEST(CoreBlockPool, LargePoolKeepsARestOfAtMostOneMiBWithTheBlock) {
  BlockPool pool;
  FakeDriver driver;
  // 11 MiB gets a 12 MiB segment: a rest of exactly 1 MiB is not split off.
  const uintptr_t a = take(pool, driver, 0, 11 * MiB);
  EXPECT_EQ(pool.live_bytes(), static_cast<int64_t>(12 * MiB));
  EXPECT_EQ(pool.cached_bytes(), 0);
  EXPECT_EQ(blocks_of(pool, a).size(), 1u);
  // 512 bytes less leaves 1 MiB + 512: split off.
  const uintptr_t b = take(pool, driver, 0, 11 * MiB - 512);
  EXPECT_EQ(pool.live_bytes(), static_cast<int64_t>(12 * MiB + 11 * MiB - 512));
  EXPECT_EQ(pool.cached_bytes(), static_cast<int64_t>(MiB + 512));
  EXPECT_EQ(blocks_of(pool, b).size(), 2u);
  // allocated_size says what allocate will hand out; `exact` splits any rest.
  BlockPool::Block* rest = pool.find_free(0, 2 * MiB);
  EXPECT_EQ(rest, nullptr) << "a 1 MiB + 512 block cannot serve 2 MiB";
  pool.free(a);
  BlockPool::Block* whole = pool.find_free(0, 11 * MiB);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(pool.allocated_size(whole, 11 * MiB), 12 * MiB);
  EXPECT_EQ(pool.allocated_size(whole, 10 * MiB), 10 * MiB);
  pool.allocate(whole, 11 * MiB, /*exact=*/true);
  EXPECT_EQ(pool.live_bytes(), static_cast<int64_t>(11 * MiB + 11 * MiB - 512));
  EXPECT_EQ(blocks_of(pool, a).size(), 2u);
  EXPECT_EQ(check_invariants(pool, {{a, 11 * MiB}, {b, 11 * MiB - 512}}), "");
}

TEST(CoreBlockPool, FreeMergesWithBothNeighbours) {
  BlockPool pool;
  FakeDriver driver;
  const uintptr_t a = take(pool, driver, 0, 2 * MiB);
  const uintptr_t b = take(pool, driver, 0, 2 * MiB);
  const uintptr_t c = take(pool, driver, 0, 2 * MiB);
  ASSERT_EQ(driver.mallocs, 1);
  ASSERT_EQ(blocks_of(pool, a).size(), 4u);  // a, b, c and a free 14 MiB
  ASSERT_NE(pool.free(a), nullptr);
  EXPECT_EQ(blocks_of(pool, a).size(), 4u) << "a has no free neighbour yet";
  BlockPool::Block* merged = pool.free(c);  // merges with the free rest after it
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->addr, c);
  EXPECT_EQ(merged->size, 16 * MiB);
  EXPECT_EQ(blocks_of(pool, a).size(), 3u) << describe(blocks_of(pool, a));
  merged = pool.free(b);  // merges with a before it and with c's block after it
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->addr, a);
  EXPECT_EQ(merged->size, 20 * MiB);
  EXPECT_TRUE(merged->segment->wholly_free());
  EXPECT_EQ(blocks_of(pool, a).size(), 1u) << describe(blocks_of(pool, a));
  EXPECT_EQ(pool.indexed_free_blocks(), 1);
  EXPECT_EQ(pool.live_bytes(), 0);
  EXPECT_EQ(pool.cached_bytes(), static_cast<int64_t>(20 * MiB));
  EXPECT_EQ(check_invariants(pool, {}), "");
  // The whole segment serves a request as big as itself.
  EXPECT_EQ(take(pool, driver, 0, 20 * MiB), a);
  EXPECT_EQ(driver.mallocs, 1);
}

TEST(CoreBlockPool, BestFitTakesTheSmallestFreeBlockThenTheLowestAddress) {
  BlockPool pool;
  FakeDriver driver;
  // One 20 MiB segment: x1 (4) s1 (1.5) x2 (3) s2 (1.5) x3 (6) s3 (1.5) rest (2.5).
  const uintptr_t x1 = take(pool, driver, 0, 4 * MiB);
  const uintptr_t s1 = take(pool, driver, 0, 3 * MiB / 2);
  const uintptr_t x2 = take(pool, driver, 0, 3 * MiB);
  const uintptr_t s2 = take(pool, driver, 0, 3 * MiB / 2);
  const uintptr_t x3 = take(pool, driver, 0, 6 * MiB);
  const uintptr_t s3 = take(pool, driver, 0, 3 * MiB / 2);
  ASSERT_EQ(driver.mallocs, 1);
  const uintptr_t rest = s3 + 3 * MiB / 2;
  pool.free(x1);
  pool.free(x2);
  pool.free(x3);
  // Free: 4 MiB at x1, 3 at x2, 6 at x3, 2.5 at the end.
  EXPECT_EQ(pool.find_free(0, 5 * MiB / 2)->addr, rest);
  EXPECT_EQ(pool.find_free(0, 11 * MiB / 4)->addr, x2);
  EXPECT_EQ(pool.find_free(0, 7 * MiB / 2)->addr, x1);
  EXPECT_EQ(pool.find_free(0, 5 * MiB)->addr, x3);
  EXPECT_EQ(pool.find_free(0, 7 * MiB), nullptr);
  // 2.75 MiB in the 3 MiB block: the 0.25 MiB rest stays with it.
  EXPECT_EQ(take(pool, driver, 0, 11 * MiB / 4), x2);
  EXPECT_EQ(pool.live_bytes(), static_cast<int64_t>(3 * (3 * MiB / 2) + 3 * MiB));
  EXPECT_EQ(driver.mallocs, 1);
  // After a merge the merged block competes by its new size.
  pool.free(s1);  // merges with x1: 5.5 MiB at x1, smaller than x3's 6
  EXPECT_EQ(pool.find_free(0, 5 * MiB)->addr, x1);
  EXPECT_EQ(check_invariants(pool, {{x2, 11 * MiB / 4}, {s2, 3 * MiB / 2}, {s3, 3 * MiB / 2}}), "");
  // Two free blocks of one size: the lower address first.
  BlockPool pool2;
  FakeDriver driver2;
  const uintptr_t p = take(pool2, driver2, 0, 3 * MiB);
  const uintptr_t sep = take(pool2, driver2, 0, 3 * MiB);
  const uintptr_t q = take(pool2, driver2, 0, 3 * MiB);
  const uintptr_t tail = take(pool2, driver2, 0, 11 * MiB);  // the rest, 11 MiB
  pool2.free(q);
  pool2.free(p);
  EXPECT_EQ(pool2.find_free(0, 2 * MiB)->addr, p);
  EXPECT_EQ(check_invariants(pool2, {{sep, 3 * MiB}, {tail, 11 * MiB}}), "");
}

TEST(CoreBlockPool, SmallAndLargePoolsNeverServeEachOther) {
  BlockPool pool;
  FakeDriver driver;
  const uintptr_t large = take(pool, driver, 0, 2 * MiB);  // 18 MiB free in a large segment
  EXPECT_EQ(driver.mallocs, 1);
  const uintptr_t small = take(pool, driver, 0, 4 * KiB);  // not from the large segment
  EXPECT_EQ(driver.mallocs, 2);
  EXPECT_EQ(pool.segment_count(), 2);
  EXPECT_NE(blocks_of(pool, small).size(), 0u) << "the small block starts a segment of its own";
  EXPECT_EQ(pool.reserved_bytes(), static_cast<int64_t>(22 * MiB));
  // 2 MiB - 4 KiB is free in the small segment, but a large request does not take it...
  const uintptr_t large2 = take(pool, driver, 0, MiB + 512);
  EXPECT_EQ(large2, large + 2 * MiB);
  EXPECT_EQ(driver.mallocs, 2);
  // ...and a small request does not take the large segment's rest.
  const uintptr_t small2 = take(pool, driver, 0, MiB);
  EXPECT_EQ(small2, small + 4 * KiB);
  EXPECT_EQ(driver.mallocs, 2);
  pool.free(large);
  pool.free(large2);
  EXPECT_EQ(pool.find_free(0, 512)->addr, small2 + MiB) << "the small pool's free rest";
  EXPECT_EQ(check_invariants(pool, {{small, 4 * KiB}, {small2, MiB}}), "");
}

TEST(CoreBlockPool, OwnersKeepTheirBlocksAndMoveOnlyWhollyFreeSegments) {
  BlockPool pool;
  FakeDriver driver;
  const BlockPool::Owner A = 0xA, B = 0xB;
  const uintptr_t a1 = take(pool, driver, A, 2 * MiB);
  const uintptr_t a2 = take(pool, driver, A, 2 * MiB);
  pool.free(a1);
  EXPECT_EQ(pool.find_free(B, 2 * MiB), nullptr) << "A's free block went to B";
  auto any = [](const BlockPool::Segment&) { return true; };
  EXPECT_EQ(pool.find_idle_segment(B, 2 * MiB, any), nullptr) << "A's segment still holds a2";
  pool.free(a2);
  BlockPool::Segment* s = pool.find_idle_segment(B, 2 * MiB, any);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->base, a1);
  EXPECT_EQ(pool.find_idle_segment(A, 2 * MiB, any), nullptr) << "its own segment is not idle for A";
  EXPECT_EQ(pool.find_idle_segment(B, 4 * KiB, any), nullptr) << "a large segment offered for a small request";
  EXPECT_EQ(pool.find_idle_segment(B, 21 * MiB, any), nullptr) << "a segment too small";
  auto refuse = [](const BlockPool::Segment&) { return false; };
  EXPECT_EQ(pool.find_idle_segment(B, 2 * MiB, refuse), nullptr);
  // The smallest movable one wins: another owner's 12 MiB segment beats the 20 MiB one.
  const BlockPool::Owner C = 0xC;
  const uintptr_t c1 = take(pool, driver, C, 11 * MiB);
  pool.free(c1);
  EXPECT_EQ(pool.find_idle_segment(B, 2 * MiB, any)->base, c1);
  EXPECT_EQ(pool.find_idle_segment(B, 2 * MiB, [&](const BlockPool::Segment& seg) {
              return seg.owner != C;
            })->base,
            a1);
  pool.move_segment(s, B);
  EXPECT_EQ(s->owner, B);
  EXPECT_EQ(pool.find_free(A, 2 * MiB), nullptr);
  EXPECT_EQ(take(pool, driver, B, 2 * MiB), a1);
  EXPECT_EQ(driver.mallocs, 2);
  EXPECT_EQ(check_invariants(pool, {{a1, 2 * MiB}}), "");
}

// An owner that goes away hands every segment over, live blocks and all: its free
// blocks serve the new owner's requests, none stays indexed under the old one, and a
// block live at the hand-over frees into the new owner's pool.
TEST(CoreBlockPool, HandOverMovesEverySegmentLiveOrFree) {
  BlockPool pool;
  FakeDriver driver;
  const BlockPool::Owner A = 0xA, B = 0xB, Gone = ~BlockPool::Owner{0};
  const uintptr_t small_live = take(pool, driver, A, 4 * KiB);
  const uintptr_t small_freed = take(pool, driver, A, 8 * KiB);
  const uintptr_t large_live = take(pool, driver, A, 3 * MiB);
  const uintptr_t large_freed = take(pool, driver, A, 18 * MiB);  // past the 17 MiB rest: its own segment
  const uintptr_t b_live = take(pool, driver, B, 4 * KiB);
  pool.free(small_freed);
  pool.free(large_freed);
  const int64_t segments = pool.segment_count();
  std::vector<uintptr_t> moved;
  EXPECT_EQ(pool.hand_over(A, Gone, [&](BlockPool::Segment& s) { moved.push_back(s.base); }), 3);
  EXPECT_EQ(moved.size(), 3u);
  EXPECT_EQ(pool.segment_count(), segments) << "a hand-over releases nothing";
  EXPECT_EQ(pool.find_free(A, 4 * KiB), nullptr) << "A's free blocks stayed indexed under A";
  EXPECT_EQ(pool.find_free(A, 3 * MiB), nullptr);
  ASSERT_NE(pool.find_free(Gone, 4 * KiB), nullptr);
  EXPECT_EQ(pool.find_free(Gone, 4 * KiB)->segment->base, small_live);
  ASSERT_NE(pool.find_free(Gone, 3 * MiB), nullptr);
  pool.for_each_segment([&](const BlockPool::Segment& s) {
    EXPECT_EQ(s.owner, s.base == pool.find_free(B, 4 * KiB)->segment->base ? B : Gone) << s.base;
  });
  EXPECT_EQ(pool.hand_over(A, Gone, nullptr), 0) << "A has nothing left";
  EXPECT_EQ(check_invariants(pool, {{small_live, 4 * KiB}, {large_live, 3 * MiB}, {b_live, 4 * KiB}}), "");
  // A new A starts empty: its request makes a segment of its own.
  const int64_t mallocs = driver.mallocs;
  const uintptr_t again = take(pool, driver, A, 4 * KiB);
  EXPECT_EQ(driver.mallocs, mallocs + 1);
  // Blocks live at the hand-over free into Gone's pool; the wholly free segments move on.
  pool.free(small_live);
  pool.free(large_live);
  auto any = [](const BlockPool::Segment&) { return true; };
  BlockPool::Segment* idle = pool.find_idle_segment(B, 3 * MiB, any);
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->owner, Gone);
  pool.move_segment(idle, B);
  EXPECT_EQ(check_invariants(pool, {{again, 4 * KiB}, {b_live, 4 * KiB}}), "");
}

TEST(CoreBlockPool, ReleaseFreesOnlyWhollyFreeSelectedSegments) {
  BlockPool pool;
  FakeDriver driver;
  const uintptr_t a = take(pool, driver, 1, 3 * MiB);      // segment 1: stays live
  const uintptr_t b = take(pool, driver, 1, 18 * MiB);     // segment 2 (17 MiB free in 1): freed below
  const uintptr_t c = take(pool, driver, 2, 4 * KiB);      // segment 3: another owner
  pool.free(b);
  pool.free(c);
  std::vector<std::pair<uintptr_t, size_t>> released;
  const int64_t n = pool.release_free_segments(
      [](const BlockPool::Segment& s) { return s.owner == 1; },
      [&](const BlockPool::Segment& s) { released.emplace_back(s.base, s.size); });
  EXPECT_EQ(n, 1);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].first, b);
  EXPECT_EQ(released[0].second, 18 * MiB);
  EXPECT_EQ(pool.segment_count(), 2);
  EXPECT_EQ(pool.reserved_bytes(), static_cast<int64_t>(22 * MiB));
  EXPECT_EQ(pool.live_bytes(), static_cast<int64_t>(3 * MiB));
  EXPECT_EQ(pool.cached_bytes(), static_cast<int64_t>(19 * MiB));
  // Everything wholly free: owner 2's small segment.
  released.clear();
  auto record = [&](const BlockPool::Segment& s) { released.emplace_back(s.base, s.size); };
  EXPECT_EQ(pool.release_free_segments([](const BlockPool::Segment&) { return true; }, record), 1);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].first, c);
  EXPECT_EQ(pool.find_free(2, 512), nullptr);
  EXPECT_EQ(check_invariants(pool, {{a, 3 * MiB}}), "");
  pool.free(a);
  pool.release_free_segments([](const BlockPool::Segment&) { return true; },
                             [](const BlockPool::Segment&) {});
  EXPECT_EQ(pool.segment_count(), 0);
  EXPECT_EQ(pool.reserved_bytes(), 0);
  EXPECT_EQ(pool.cached_bytes(), 0);
}

TEST(CoreBlockPool, FreeOfAnAddressNotHandedOutIsRefused) {
  BlockPool pool;
  FakeDriver driver;
  const uintptr_t a = take(pool, driver, 0, 4 * KiB);
  EXPECT_EQ(pool.free(a + 512), nullptr) << "inside a block";
  EXPECT_EQ(pool.free(a + 4 * KiB), nullptr) << "the free rest";
  EXPECT_EQ(pool.free(12345), nullptr);
  EXPECT_NE(pool.free(a), nullptr);
  EXPECT_EQ(pool.free(a), nullptr) << "twice";
  EXPECT_EQ(check_invariants(pool, {}), "");
}

// Thousands of random allocations and frees of random sizes over three
// owners, with segments moved and released on the way; every invariant is
// checked after every step, and freeing everything leaves each segment one
// free block.
TEST(CoreBlockPool, RandomOperationsKeepEveryInvariant) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    BlockPool pool;
    FakeDriver driver;
    std::map<uintptr_t, size_t> live;             // address -> rounded request
    auto random_size = [&]() -> size_t {
      switch (rng() % 8) {
        case 0: return 1 + rng() % 512;
        case 1:
        case 2:
        case 3: return 1 + rng() % MiB;                 // small
        case 4:
        case 5: return MiB + 1 + rng() % (9 * MiB);     // large, in 20 MiB segments
        case 6: return 1638400;                         // [1, 64, 80, 80] float32
        default: return 10 * MiB + rng() % (30 * MiB);  // large, a segment of its own
      }
    };
    int64_t splits_seen = 0, merges_seen = 0;
    for (int step = 0; step < 6000; ++step) {
      const uint64_t r = rng() % 100;
      const BlockPool::Owner owner = rng() % 3;
      if (r < 55 || live.empty()) {
        const size_t n = random_size();
        const size_t size = BlockPool::round(n);
        const int64_t blocks_before = pool.indexed_free_blocks() + pool.live_blocks();
        const uintptr_t addr = take(pool, driver, owner, n, /*exact=*/rng() % 10 == 0);
        if (pool.indexed_free_blocks() + pool.live_blocks() > blocks_before + 1) ++splits_seen;
        ASSERT_EQ(live.count(addr), 0u) << "address handed out twice at step " << step;
        live.emplace(addr, size);
      } else if (r < 95) {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        const int64_t free_before = pool.indexed_free_blocks();
        ASSERT_NE(pool.free(it->first), nullptr) << "step " << step;
        if (pool.indexed_free_blocks() <= free_before) ++merges_seen;
        live.erase(it);
      } else if (r < 98) {
        const size_t size = BlockPool::round(random_size());
        BlockPool::Segment* s =
            pool.find_idle_segment(owner, size, [](const BlockPool::Segment&) { return true; });
        if (s != nullptr) {
          ASSERT_TRUE(s->wholly_free());
          ASSERT_NE(s->owner, owner);
          ASSERT_GE(s->size, size);
          ASSERT_EQ(s->small, BlockPool::is_small(size));
          pool.move_segment(s, owner);
        }
      } else if (r < 99) {
        // The owner goes away (owner 3 stands for the retired streams): live blocks and all.
        const BlockPool::Owner gone = 3;
        pool.hand_over(owner, gone, [&](BlockPool::Segment& s) { ASSERT_EQ(s.owner, gone); });
        pool.for_each_segment([&](const BlockPool::Segment& s) { ASSERT_NE(s.owner, owner); });
      } else {
        pool.release_free_segments([&](const BlockPool::Segment& s) { return s.owner == owner; },
                                   [&](const BlockPool::Segment& s) {
                                     ASSERT_TRUE(s.wholly_free());
                                     ASSERT_EQ(s.live_blocks, 0);
                                   });
      }
      const std::string bad = check_invariants(pool, live);
      ASSERT_EQ(bad, "") << "step " << step;
    }
    EXPECT_GT(splits_seen, 100);
    EXPECT_GT(merges_seen, 100);
    EXPECT_GT(pool.segment_count(), 3);
    // Each live block is its owner's: freeing everything leaves whole segments.
    for (const auto& [addr, size] : live) ASSERT_NE(pool.free(addr), nullptr);
    live.clear();
    ASSERT_EQ(check_invariants(pool, live), "");
    pool.for_each_segment([&](const BlockPool::Segment& s) {
      EXPECT_TRUE(s.wholly_free()) << "segment at " << s.base << ": "
                                   << describe(blocks_of(pool, s.base));
      EXPECT_EQ(s.first->size, s.size);
    });
    EXPECT_EQ(pool.indexed_free_blocks(), pool.segment_count());
    EXPECT_EQ(pool.live_bytes(), 0);
    EXPECT_EQ(pool.cached_bytes(), pool.reserved_bytes());
  }
}

}  // namespace
