// Conformance: every handle holds one count on its storage, whatever made
// it; memory is freed exactly when the last handle goes, and borrowed memory
// never. See the table in test_conformance.cpp and Note [Storage ownership].
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "conformance_backends.h"

namespace aotrt::test {
namespace {

using F = std::vector<float>;

class ConformanceOwnership : public ::testing::TestWithParam<Backend> {};

// The handles generated code makes into one buffer, each from the previous
// ones: a reinterpret at offset 0 and elsewhere, a view of a view, a copied
// handle of that, and an alias through assign_tensors_out.
std::vector<Tensor> make_family(AtenTensorHandle root) {
  std::vector<Tensor> hs;
  hs.push_back(reinterpret(root, {4, 4}, {8, 1}, 0));      // offset 0: same address as root
  hs.push_back(reinterpret(root, {2, 8}, {16, 1}, 16));    // offset 16
  hs.push_back(reinterpret(hs[1].get(), {2, 2}, {8, 2}, 5));  // nested: offset 21
  hs.push_back(new_handle(hs[2].get()));                   // copied handle of the nested view
  Tensor alias;
  EXPECT_EQ(aoti_torch_assign_tensors_out(hs[0].get(), alias.out()), AOTI_TORCH_SUCCESS);
  hs.push_back(std::move(alias));
  return hs;
}

// What each member of the family sees in a buffer holding iota(64).
std::vector<F> family_values() {
  F v0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) v0.push_back(static_cast<float>(8 * r + c));
  F v1 = iota(8, 16.f);
  const F tail = iota(8, 32.f);
  v1.insert(v1.end(), tail.begin(), tail.end());
  const F nested{21, 23, 29, 31};
  return {iota(64), v0, v1, nested, nested, v0};
}

TEST_P(ConformanceOwnership, EveryDeletionOrderFreesExactlyOnce) {
  const Backend& b = GetParam();
  const std::vector<F> want = family_values();
  std::vector<int> order(6);
  std::iota(order.begin(), order.end(), 0);
  int permutations = 0;
  do {
    SCOPED_TRACE(::testing::PrintToString(order));
    const Counters before = counters(b);
    std::vector<Tensor> hs;
    hs.push_back(filled<float>(b, iota(64), {64}));
    for (Tensor& t : make_family(hs[0].get())) hs.push_back(std::move(t));
    const Counters all = counters(b);
    ASSERT_TRUE(grew_by(b, before, all, 256));
    ASSERT_EQ(all.handles, before.handles + 6);
    ASSERT_EQ(all.live_allocations, before.live_allocations + 1);
    for (size_t k = 0; k < order.size(); ++k) {
      const int victim = order[k];
      if (k + 1 == order.size()) {
        // The last handle still reaches intact memory before it goes.
        ASSERT_EQ(read<float>(hs[victim].get()), want[victim]) << "handle " << victim;
      }
      hs[victim].reset();
      const Counters now = counters(b);
      ASSERT_EQ(now.handles, all.handles - static_cast<int64_t>(k) - 1);
      if (k + 1 < order.size()) {
        ASSERT_EQ(now.live_bytes, all.live_bytes) << "freed early, after handle " << victim;
        ASSERT_EQ(now.live_allocations, all.live_allocations);
      } else {
        ASSERT_EQ(now, before) << "not freed when the last handle went";
      }
    }
    ++permutations;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(permutations, 720);
}

TEST_P(ConformanceOwnership, BorrowedMemoryIsNeverFreed) {
  const Backend& b = GetParam();
  constexpr size_t kBytes = 512;
  std::vector<uint8_t> canary(kBytes);
  for (size_t i = 0; i < kBytes; ++i) canary[i] = static_cast<uint8_t>(0xa5 ^ (i * 7));
  void* mem = foreign_alloc(b, kBytes);
  ASSERT_NE(mem, nullptr);
  std::vector<int> order(6);
  std::iota(order.begin(), order.end(), 0);
  do {
    SCOPED_TRACE(::testing::PrintToString(order));
    write_raw(b, mem, canary.data(), kBytes);
    const Counters before = counters(b);
    std::vector<Tensor> hs;
    const Dims sizes{64}, strides{1};
    Tensor root;
    ASSERT_EQ(aoti_torch_create_tensor_from_blob(mem, 1, sizes.data(), strides.data(), 0, kF32,
                                                 b.device_type, b.is_cpu() ? 0 : b.device_index,
                                                 root.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    hs.push_back(std::move(root));
    for (Tensor& t : make_family(hs[0].get())) hs.push_back(std::move(t));
    ASSERT_EQ(counters(b).live_bytes, before.live_bytes);
    ASSERT_EQ(counters(b).live_allocations, before.live_allocations);
    for (int victim : order) {
      hs[victim].reset();
      ASSERT_EQ(counters(b).live_bytes, before.live_bytes);
    }
    ASSERT_EQ(counters(b), before);
    std::vector<uint8_t> now(kBytes);
    read_raw(b, now.data(), mem, kBytes);
    ASSERT_EQ(now, canary);
  } while (std::next_permutation(order.begin(), order.end()));
  // Writes through views of borrowed memory land in it.
  {
    const Dims sizes{8, 8}, strides{8, 1};
    Tensor root;
    ASSERT_EQ(aoti_torch_create_tensor_from_blob(mem, 2, sizes.data(), strides.data(), 0, kF32,
                                                 b.device_type, b.is_cpu() ? 0 : b.device_index,
                                                 root.out()),
              AOTI_TORCH_SUCCESS);
    Tensor col = reinterpret(root.get(), {8}, {8}, 3);
    Tensor src = filled<float>(b, iota(8, 1.f), {8});
    ASSERT_EQ(aoti_torch_copy_(col.get(), src.get(), 0), AOTI_TORCH_SUCCESS);
  }
  F raw(64);
  read_raw(b, raw.data(), mem, 256);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(raw[8 * r + 3], static_cast<float>(r + 1));
  std::vector<uint8_t> now(kBytes);
  read_raw(b, now.data(), mem, kBytes);
  EXPECT_TRUE(std::equal(now.begin() + 256, now.end(), canary.begin() + 256));
  foreign_free(b, mem);
}

TEST_P(ConformanceOwnership, AssignReleasesTheOldStorage) {
  const Backend& b = GetParam();
  const Counters before = counters(b);
  Tensor a = filled<float>(b, iota(16), {16});
  const Counters with_a = counters(b);
  Tensor d = filled<float>(b, F(1024, 1.f), {1024});
  Tensor view = reinterpret(a.get(), {4}, {4}, 1);
  ASSERT_EQ(aoti_torch_assign_tensors(view.get(), d.get()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(counters(b).live_bytes, with_a.live_bytes);  // d's 4 KiB went with the assign
  EXPECT_EQ(read<float>(d.get()), (F{1, 5, 9, 13}));
  a.reset();
  view.reset();
  EXPECT_EQ(counters(b).live_bytes, with_a.live_bytes);  // d holds a's storage now
  EXPECT_EQ(read<float>(d.get()), (F{1, 5, 9, 13}));
  d.reset();
  EXPECT_EQ(counters(b), before);
}

TEST_P(ConformanceOwnership, ClonesOwnNewMemory) {
  const Backend& b = GetParam();
  const Counters before = counters(b);
  Tensor a = filled<float>(b, iota(40), {40});
  Tensor v = reinterpret(a.get(), {3, 2}, {10, 3}, 4);
  Tensor c, p;
  ASSERT_EQ(aoti_torch_clone(v.get(), c.out()), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_clone_preserve_strides(v.get(), p.out()), AOTI_TORCH_SUCCESS);
  const Counters all = counters(b);
  EXPECT_EQ(all.live_allocations, before.live_allocations + 3);
  a.reset();
  v.reset();
  EXPECT_EQ(counters(b).live_allocations, before.live_allocations + 2);
  EXPECT_EQ(read<float>(c.get()), (F{4, 7, 14, 17, 24, 27}));
  EXPECT_EQ(read<float>(p.get()), (F{4, 7, 14, 17, 24, 27}));
  write<float>(c.get(), F(6, 0.f));
  EXPECT_EQ(read<float>(p.get()), (F{4, 7, 14, 17, 24, 27}));
  c.reset();
  p.reset();
  EXPECT_EQ(counters(b), before);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConformanceOwnership, ::testing::ValuesIn(built_backends()),
                         backend_name);

}  // namespace
}  // namespace aotrt::test
