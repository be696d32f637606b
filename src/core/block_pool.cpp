// See Note [Block pool] in core/block_pool.h.
#include "core/block_pool.h"

#include <utility>

#include "core/error.h"

namespace aotrt {
namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

size_t BlockPool::round(size_t nbytes) {
  return nbytes < kMinBlock ? kMinBlock : round_up(nbytes, kMinBlock);
}

size_t BlockPool::segment_size(size_t size) {
  if (is_small(size)) return kSmallSegment;
  if (size < kMinOwnSegment) return kLargeSegment;
  return round_up(size, kLargeRound);
}

BlockPool::~BlockPool() {
  for (auto& [base, s] : segments_) {
    for (Block* b = s->first; b != nullptr;) delete std::exchange(b, b->next);
    delete s;
  }
  for (Block* b : spare_blocks_) delete b;
}

BlockPool::Block* BlockPool::find_free(Owner owner, size_t size) const {
  auto o = owners_.find(owner);
  if (o == owners_.end()) return nullptr;
  const FreeSet& set = is_small(size) ? o->second.small : o->second.large;
  Block key;
  key.size = size;
  auto it = set.lower_bound(&key);
  return it == set.end() ? nullptr : *it;
}

BlockPool::Block* BlockPool::add_segment(Owner owner, uintptr_t base, size_t size, bool small) {
  AOTRT_CHECK(size > 0 && segments_.count(base) == 0, kInternal, "block pool: segment at ", base,
              " of ", size, " bytes is empty or already held");
  auto* s = new Segment;
  Block* b = nullptr;
  try {
    b = new_block();
    s->base = base;
    s->size = size;
    s->owner = owner;
    s->small = small;
    s->first = b;
    b->addr = base;
    b->size = size;
    b->segment = s;
    segments_.emplace(base, s);
  } catch (...) {
    if (b != nullptr) recycle(b);
    delete s;
    throw;
  }
  OwnerPools& pools = pools_of(owner);
  ++pools.segments;
  pools.of(small).insert(b);
  reserved_bytes_ += static_cast<int64_t>(size);
  cached_bytes_ += static_cast<int64_t>(size);
  return b;
}

size_t BlockPool::allocated_size(const Block* b, size_t size) const {
  const size_t rest = b->size - size;
  const bool split = b->segment->small ? rest >= kMinBlock : rest > kSmallRequest;
  return split ? size : b->size;
}

BlockPool::Block* BlockPool::allocate(Block* b, size_t size, bool exact) {
  AOTRT_CHECK(!b->allocated && b->size >= size, kInternal, "block pool: block at ", b->addr,
              " of ", b->size, " bytes cannot serve ", size);
  // Before any change, so that a failed host allocation leaves the pool as it was.
  const size_t keep = exact ? size : allocated_size(b, size);
  Block* rest = keep < b->size ? new_block() : nullptr;
  try {
    live_.emplace(b->addr, b);
  } catch (...) {
    if (rest != nullptr) recycle(rest);
    throw;
  }
  FreeSet& set = free_set(*b->segment);
  set.erase(b);
  if (rest != nullptr) {
    rest->addr = b->addr + keep;
    rest->size = b->size - keep;
    rest->segment = b->segment;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = keep;
    set.insert(rest);
  }
  b->allocated = true;
  ++b->segment->live_blocks;
  live_bytes_ += static_cast<int64_t>(b->size);
  cached_bytes_ -= static_cast<int64_t>(b->size);
  return b;
}

BlockPool::Block* BlockPool::free(uintptr_t addr) {
  auto it = live_.find(addr);
  if (it == live_.end()) return nullptr;
  Block* b = it->second;
  live_.erase(it);
  FreeSet& set = free_set(*b->segment);
  b->allocated = false;
  --b->segment->live_blocks;
  live_bytes_ -= static_cast<int64_t>(b->size);
  cached_bytes_ += static_cast<int64_t>(b->size);
  if (Block* prev = b->prev; prev != nullptr && !prev->allocated) {
    set.erase(prev);  // before its size changes: the set is ordered by size
    prev->size += b->size;
    prev->next = b->next;
    if (b->next != nullptr) b->next->prev = prev;
    recycle(b);
    b = prev;
  }
  if (Block* next = b->next; next != nullptr && !next->allocated) {
    set.erase(next);
    b->size += next->size;
    b->next = next->next;
    if (next->next != nullptr) next->next->prev = b;
    recycle(next);
  }
  set.insert(b);
  return b;
}

BlockPool::Segment* BlockPool::find_idle_segment(
    Owner owner, size_t size, const std::function<bool(const Segment&)>& movable) const {
  const bool small = is_small(size);
  Block key;
  key.size = size;
  Segment* best = nullptr;
  for (const auto& [other, pools] : owners_) {
    if (other == owner) continue;
    const FreeSet& set = small ? pools.small : pools.large;
    for (auto it = set.lower_bound(&key); it != set.end(); ++it) {
      if (best != nullptr && (*it)->size >= best->size) break;
      Segment* s = (*it)->segment;
      if (!s->wholly_free() || !movable(*s)) continue;
      best = s;
      break;
    }
  }
  return best;
}

void BlockPool::move_segment(Segment* s, Owner owner) {
  AOTRT_CHECK(s->wholly_free(), kInternal, "block pool: segment at ", s->base,
              " moved while it holds live blocks");
  if (s->owner == owner) return;
  OwnerPools& to = pools_of(owner);  // may throw; nothing changed yet
  free_set(*s).erase(s->first);
  drop_segment_of(s->owner);
  s->owner = owner;
  ++to.segments;
  to.of(s->small).insert(s->first);
}

int64_t BlockPool::hand_over(Owner from, Owner to, const std::function<void(Segment&)>& moved) {
  auto o = owners_.find(from);
  if (from == to || o == owners_.end()) return 0;
  OwnerPools& dst = pools_of(to);  // may throw; nothing changed yet
  OwnerPools& src = o->second;
  int64_t count = 0;
  for (auto& [base, s] : segments_) {
    if (s->owner != from) continue;
    for (Block* b = s->first; b != nullptr; b = b->next) {
      // Node handles: the move allocates nothing, so it cannot fail halfway.
      if (!b->allocated) dst.of(s->small).insert(src.of(s->small).extract(b));
    }
    s->owner = to;
    ++dst.segments;
    --src.segments;
    ++count;
    if (moved) moved(*s);
  }
  owners_.erase(o);  // every segment of `from` moved
  return count;
}

int64_t BlockPool::release_free_segments(const std::function<bool(const Segment&)>& select,
                                         const std::function<void(const Segment&)>& release) {
  int64_t released = 0;
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment* s = it->second;
    if (!s->wholly_free() || !select(*s)) {
      ++it;
      continue;
    }
    release(*s);
    free_set(*s).erase(s->first);
    drop_segment_of(s->owner);
    cached_bytes_ -= static_cast<int64_t>(s->size);
    reserved_bytes_ -= static_cast<int64_t>(s->size);
    recycle(s->first);
    delete s;
    it = segments_.erase(it);
    ++released;
  }
  return released;
}

int64_t BlockPool::indexed_free_blocks() const {
  int64_t n = 0;
  for (const auto& [owner, pools] : owners_) {
    n += static_cast<int64_t>(pools.small.size() + pools.large.size());
  }
  return n;
}

void BlockPool::for_each_segment(const std::function<void(const Segment&)>& f) const {
  for (const auto& [base, s] : segments_) f(*s);
}

void BlockPool::drop_segment_of(Owner owner) {
  auto o = owners_.find(owner);
  if (--o->second.segments == 0) owners_.erase(o);
}

BlockPool::Block* BlockPool::new_block() {
  if (spare_blocks_.empty()) return new Block;
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  *b = Block{};
  return b;
}

void BlockPool::recycle(Block* b) {
  try {
    spare_blocks_.push_back(b);
  } catch (...) {
    delete b;  // out of host memory: give it back instead of keeping it spare
  }
}

}  // namespace aotrt
