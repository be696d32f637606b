// The pieces of the run fast path that changed for speed (Note [Run without
// host waits] in runtime/model.cpp): the handle registry's allocation-free
// set and TensorImpl's inline dims, checked against plain references.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "aotrt/aotrt.h"
#include "core/handles.h"
#include "core/tensor.h"

using namespace aotrt;

namespace {

std::vector<int64_t> vec(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

AtenTensorHandle new_handle(const StorageRef& storage, int64_t n) {
  const int64_t sizes[] = {n}, strides[] = {1};
  return handle_register(make_tensor(storage, sizes, strides, 0, ScalarType::UInt8, "test"));
}

}  // namespace

TEST(FastPathRegistry, RandomRegisterAndDeleteMatchesAReferenceSet) {
  // Thousands of handles made and deleted in random order (the registry
  // grows, then erases shift entries back through wrapped runs): every
  // handle is live exactly while the reference says so.
  std::mt19937_64 rng(1234);
  StorageRef storage = Storage::allocate(cpu_device(), 64);
  const int64_t base = handle_live_count();
  std::vector<AtenTensorHandle> live;
  std::set<AtenTensorHandle> dead;  // deleted, address possibly reused
  for (int step = 0; step < 20000; ++step) {
    const bool add = live.empty() || (rng() % 100) < (step < 10000 ? 60 : 40);
    if (add) {
      AtenTensorHandle h = new_handle(storage, 1 + static_cast<int64_t>(rng() % 64));
      dead.erase(h);
      live.push_back(h);
    } else {
      const size_t k = rng() % live.size();
      AtenTensorHandle h = live[k];
      live[k] = live.back();
      live.pop_back();
      handle_delete(h, "test");
      dead.insert(h);
    }
    if (step % 997 == 0) {
      for (AtenTensorHandle h : live) ASSERT_TRUE(handle_is_live(h)) << "step " << step;
      for (AtenTensorHandle h : dead) ASSERT_FALSE(handle_is_live(h)) << "step " << step;
      ASSERT_EQ(handle_live_count() - base, static_cast<int64_t>(live.size()));
    }
  }
  for (AtenTensorHandle h : live) handle_delete(h, "test");
  EXPECT_EQ(handle_live_count(), base);
  for (AtenTensorHandle h : live) EXPECT_FALSE(handle_is_live(h));
  // Deleting twice is still refused.
  AtenTensorHandle h = new_handle(storage, 8);
  handle_delete(h, "test");
  EXPECT_THROW(handle_delete(h, "test"), Error);
}

TEST(FastPathTensorImpl, DimsInlineAndOnTheHeapSurviveAssignment) {
  StorageRef storage = Storage::allocate(cpu_device(), 4096);
  const std::vector<int64_t> s2 = {4, 8}, t2 = {8, 1};
  const std::vector<int64_t> s7 = {1, 2, 1, 2, 1, 2, 3}, t7 = {24, 12, 12, 6, 6, 3, 1};
  auto a = make_tensor(storage, s2, t2, 3, ScalarType::Float32, "test");
  auto b = make_tensor(storage, s7, t7, 0, ScalarType::Float32, "test");
  EXPECT_EQ(vec(a->sizes()), s2);
  EXPECT_EQ(vec(a->strides()), t2);
  EXPECT_EQ(a->sizes_data()[1], 8);
  EXPECT_EQ(a->strides_data()[0], 8);
  EXPECT_EQ(vec(b->sizes()), s7);  // more dims than fit inline
  EXPECT_EQ(vec(b->strides()), t7);
  EXPECT_EQ(b->dim(), 7);
  // heap <- inline, inline <- heap, and each onto itself.
  b->assign(*a);
  EXPECT_EQ(vec(b->sizes()), s2);
  EXPECT_EQ(vec(b->strides()), t2);
  EXPECT_EQ(b->storage_offset(), 3);
  auto c = make_tensor(storage, s7, t7, 0, ScalarType::Float32, "test");
  a->assign(*c);
  EXPECT_EQ(vec(a->sizes()), s7);
  EXPECT_EQ(vec(a->strides()), t7);
  a->assign(*a);
  EXPECT_EQ(vec(a->sizes()), s7);
  EXPECT_EQ(vec(a->strides()), t7);
  b->assign(*b);
  EXPECT_EQ(vec(b->sizes()), s2);
  EXPECT_EQ(vec(b->strides()), t2);
  // A 0-d tensor has no dims at all.
  auto scalar = make_tensor(storage, {}, {}, 5, ScalarType::Float32, "test");
  EXPECT_EQ(scalar->dim(), 0);
  EXPECT_EQ(scalar->numel(), 1);
}
