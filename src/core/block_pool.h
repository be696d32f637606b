// Segments carved into blocks: the bookkeeping of the CUDA caching allocator
// (cuda/allocator.cpp), with addresses as integers and no device, so that it
// is tested on any machine (tests/unit/test_core_block_pool.cpp).
//
// Note [Block pool]
// Memory comes from the driver in segments; a request takes a block carved
// out of one. The sizes are PyTorch's CUDACachingAllocator's (kMinBlockSize,
// kSmallSize, kSmallBuffer, kLargeBuffer, kMinLargeAlloc, kRoundLarge), so
// that live bytes compare with eager's torch.cuda.memory_allocated():
//  - a request is rounded up to a multiple of 512 bytes (512 at least);
//  - one of at most 1 MiB is small, a bigger one large; each owner (a stream)
//    has a small pool and a large pool, and neither serves the other's kind,
//    so small blocks never pin the middle of a large segment;
//  - a request takes the smallest free block of its pool that holds it (the
//    lowest address among equals), and splits off the rest as a free block
//    when the rest is worth keeping: any rest in the small pool (all sizes are
//    multiples of 512, so any rest is at least PyTorch's 512), more than 1 MiB
//    in the large pool; a smaller rest stays with the block and counts as live,
//    as in PyTorch;
//  - on a miss the caller adds a segment: 2 MiB for a small request, 20 MiB
//    for a large one under 10 MiB, the request rounded up to 2 MiB from 10 MiB;
//  - a freed block merges with its free neighbours, so a segment whose blocks
//    are all free is one free block again ("wholly free"); only a wholly free
//    segment changes owner or goes back to the driver.
// live_bytes counts the blocks handed out, cached_bytes the free ones, and
// live + cached == reserved, the segments' total, after every call.
// Not thread-safe: the caller locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

namespace aotrt {

class BlockPool {
 public:
  using Owner = uintptr_t;  // whose order protects a segment's blocks (a stream)

  static constexpr size_t kMinBlock = 512;
  static constexpr size_t kSmallRequest = size_t{1} << 20;
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kLargeSegment = size_t{20} << 20;
  static constexpr size_t kMinOwnSegment = size_t{10} << 20;  // from here a request gets its own
  static constexpr size_t kLargeRound = size_t{2} << 20;
  // Requests above this are refused by the caller: rounding them could overflow.
  static constexpr size_t kMaxRequest = size_t{1} << 62;

  // The bytes a request of `nbytes` (<= kMaxRequest) takes.
  static size_t round(size_t nbytes);
  static bool is_small(size_t size) { return size <= kSmallRequest; }
  // The bytes of a new segment for a request rounded to `size`.
  static size_t segment_size(size_t size);

  struct Segment;
  struct Block {
    uintptr_t addr = 0;
    size_t size = 0;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours in the segment, by address
    Block* next = nullptr;
    Segment* segment = nullptr;
  };
  struct Segment {
    uintptr_t base = 0;
    size_t size = 0;
    Owner owner = 0;
    bool small = false;
    Block* first = nullptr;  // the block at `base`; it lives as long as the segment
    int64_t live_blocks = 0;
    // The caller's: cuda/allocator.cpp keeps the event of the segment's last free here.
    void* fence = nullptr;
    bool fence_armed = false;
    bool wholly_free() const { return !first->allocated && first->next == nullptr; }
  };

  BlockPool() = default;
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // The best-fit free block of `owner`'s pool for a request rounded to
  // `size`, or null.
  Block* find_free(Owner owner, size_t size) const;
  // Adds [base, base + size) as a segment of `owner` for requests of the
  // kind `small`; returns its one free block.
  Block* add_segment(Owner owner, uintptr_t base, size_t size, bool small);
  // Hands out the free block `b` for a request rounded to `size` (b->size >=
  // size), splitting off the rest when it is worth keeping, or whenever
  // `exact`; returns b.
  Block* allocate(Block* b, size_t size, bool exact = false);
  // The bytes allocate(b, size) would hand out.
  size_t allocated_size(const Block* b, size_t size) const;
  // Takes back the live block at `addr`, merged with its free neighbours;
  // returns the merged free block, or null when no live block starts there.
  Block* free(uintptr_t addr);

  // The smallest wholly free segment of another owner than `owner`, for
  // requests of size's kind, that holds `size` and that `movable` accepts.
  Segment* find_idle_segment(Owner owner, size_t size,
                             const std::function<bool(const Segment&)>& movable) const;
  // Gives the wholly free segment `s` to `owner`.
  void move_segment(Segment* s, Owner owner);
  // Gives every segment of `from`, live blocks and all, to `to` (an owner
  // that goes away: Note [A stream that goes away] in cuda/runtime.h); its
  // free blocks join to's pools. Calls `moved` (which must not throw) on each;
  // returns how many.
  int64_t hand_over(Owner from, Owner to, const std::function<void(Segment&)>& moved);
  // Removes every wholly free segment that `select` accepts, calling
  // `release` on each first; returns how many.
  int64_t release_free_segments(const std::function<bool(const Segment&)>& select,
                                const std::function<void(const Segment&)>& release);

  int64_t live_bytes() const { return live_bytes_; }
  int64_t cached_bytes() const { return cached_bytes_; }
  int64_t reserved_bytes() const { return reserved_bytes_; }
  int64_t live_blocks() const { return static_cast<int64_t>(live_.size()); }
  int64_t segment_count() const { return static_cast<int64_t>(segments_.size()); }
  // Free blocks indexed for reuse, all pools together (tests check that
  // every free block is indexed once).
  int64_t indexed_free_blocks() const;
  // Every segment, by base address (tests walk their blocks).
  void for_each_segment(const std::function<void(const Segment&)>& f) const;

 private:
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->addr < b->addr;
    }
  };
  using FreeSet = std::set<Block*, BySizeThenAddress>;
  struct OwnerPools {
    FreeSet small, large;
    int64_t segments = 0;
    FreeSet& of(bool is_small) { return is_small ? small : large; }
  };

  FreeSet& free_set(const Segment& s) { return owners_.at(s.owner).of(s.small); }
  OwnerPools& pools_of(Owner owner) { return owners_[owner]; }
  void drop_segment_of(Owner owner);  // one segment fewer; forgets an owner with none
  Block* new_block();
  void recycle(Block* b);

  std::map<Owner, OwnerPools> owners_;
  std::map<uintptr_t, Segment*> segments_;
  std::unordered_map<uintptr_t, Block*> live_;
  std::vector<Block*> spare_blocks_;  // so that a split allocates no Block on the host
  int64_t live_bytes_ = 0;
  int64_t cached_bytes_ = 0;
  int64_t reserved_bytes_ = 0;
};

}  // namespace aotrt
