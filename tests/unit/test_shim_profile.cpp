// The shim profile (aotrt::set_shim_profiling, shim_profile; Note [Shim
// profiling] in shim/profile.h): exact call counts, failed calls, reset,
// nested shims counted once, several threads.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "aotrt/aotrt.h"
#include "aotrt/shim.h"
#include "shim/boundary.h"

namespace {

// Profiling on from a clean table for one test, off again after it.
class ShimProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    aotrt::set_shim_profiling(false);
    aotrt::reset_shim_profile();
  }
  void TearDown() override {
    aotrt::set_shim_profiling(false);
    aotrt::reset_shim_profile();
  }
};

// A 2x3 float32 CPU tensor through the C ABI.
AtenTensorHandle make_2x3() {
  const int64_t sizes[] = {2, 3}, strides[] = {3, 1};
  AtenTensorHandle h = nullptr;
  EXPECT_EQ(aoti_torch_empty_strided(2, sizes, strides, aoti_torch_dtype_float32(),
                                     aoti_torch_device_type_cpu(), 0, &h),
            AOTI_TORCH_SUCCESS);
  return h;
}

// The entry for `function`, or one with no calls.
aotrt::ShimTiming find(const std::vector<aotrt::ShimTiming>& rows, const std::string& function) {
  for (const aotrt::ShimTiming& t : rows) {
    if (t.function == function) return t;
  }
  return {function, 0, 0, 0};
}

void expect_sane(const aotrt::ShimTiming& t) {
  EXPECT_GT(t.calls, 0) << t.function;
  EXPECT_GT(t.max_ns, 0) << t.function;
  EXPECT_GE(t.total_ns, t.max_ns) << t.function;
}

}  // namespace

TEST_F(ShimProfile, RecordsNothingWhileOff) {
  for (int i = 0; i < 5; ++i) {
    AtenTensorHandle h = make_2x3();
    EXPECT_EQ(aoti_torch_delete_tensor_object(h), AOTI_TORCH_SUCCESS);
  }
  EXPECT_TRUE(aotrt::shim_profile().empty());
}

TEST_F(ShimProfile, CountsExactlyTheCallsMadeFailedOnesToo) {
  aotrt::set_shim_profiling(true);
  std::vector<AtenTensorHandle> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(make_2x3());
  int64_t dim = 0;
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(aoti_torch_get_dim(handles[0], &dim), AOTI_TORCH_SUCCESS);
  }
  EXPECT_EQ(dim, 2);
  // Failures: a null ret pointer, an unknown dtype.
  const int64_t sizes[] = {4}, strides[] = {1};
  EXPECT_EQ(aoti_torch_empty_strided(1, sizes, strides, aoti_torch_dtype_float32(),
                                     aoti_torch_device_type_cpu(), 0, nullptr),
            AOTI_TORCH_FAILURE);
  AtenTensorHandle bad = nullptr;
  EXPECT_EQ(aoti_torch_empty_strided(1, sizes, strides, 999, aoti_torch_device_type_cpu(), 0, &bad),
            AOTI_TORCH_FAILURE);
  EXPECT_EQ(aoti_torch_get_dim(handles[0], nullptr), AOTI_TORCH_FAILURE);
  for (AtenTensorHandle h : handles) EXPECT_EQ(aoti_torch_delete_tensor_object(h), AOTI_TORCH_SUCCESS);
  aotrt::set_shim_profiling(false);
  // Calls after profiling is off are not counted.
  AtenTensorHandle after = make_2x3();
  EXPECT_EQ(aoti_torch_get_dim(after, &dim), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_delete_tensor_object(after), AOTI_TORCH_SUCCESS);

  const std::vector<aotrt::ShimTiming> rows = aotrt::shim_profile();
  ASSERT_EQ(rows.size(), 3u);
  const aotrt::ShimTiming empty = find(rows, "aoti_torch_empty_strided");
  const aotrt::ShimTiming get_dim = find(rows, "aoti_torch_get_dim");
  const aotrt::ShimTiming del = find(rows, "aoti_torch_delete_tensor_object");
  EXPECT_EQ(empty.calls, 3 + 2);
  EXPECT_EQ(get_dim.calls, 7 + 1);
  EXPECT_EQ(del.calls, 3);
  for (const aotrt::ShimTiming& t : rows) expect_sane(t);
  // Most total time first.
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].total_ns, rows[i].total_ns);
}

TEST_F(ShimProfile, ResetForgetsEverything) {
  aotrt::set_shim_profiling(true);
  EXPECT_EQ(aoti_torch_delete_tensor_object(make_2x3()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aotrt::shim_profile().size(), 2u);
  aotrt::reset_shim_profile();
  EXPECT_TRUE(aotrt::shim_profile().empty());
  // Still on: counting starts again from zero.
  EXPECT_EQ(aoti_torch_delete_tensor_object(make_2x3()), AOTI_TORCH_SUCCESS);
  const std::vector<aotrt::ShimTiming> rows = aotrt::shim_profile();
  EXPECT_EQ(find(rows, "aoti_torch_empty_strided").calls, 1);
  EXPECT_EQ(find(rows, "aoti_torch_delete_tensor_object").calls, 1);
}

TEST_F(ShimProfile, NestedShimsAreCountedOnceAsTheOutermost) {
  aotrt::set_shim_profiling(true);
  // A shim whose body calls other shims: only the outer one is timed.
  EXPECT_EQ(aotrt::shim_boundary("test_outer_shim",
                                 [] {
                                   AtenTensorHandle h = make_2x3();
                                   int64_t n = 0;
                                   EXPECT_EQ(aoti_torch_get_numel(h, &n), AOTI_TORCH_SUCCESS);
                                   EXPECT_EQ(n, 6);
                                   EXPECT_EQ(aoti_torch_delete_tensor_object(h), AOTI_TORCH_SUCCESS);
                                 }),
            AOTI_TORCH_SUCCESS);
  // Shims that forward to another without a boundary of their own count as
  // the one that does the work: tensor_copy_ -> copy_, pinned -> empty_strided.
  AtenTensorHandle a = make_2x3(), b = make_2x3();
  EXPECT_EQ(aoti_torch_tensor_copy_(a, b), AOTI_TORCH_SUCCESS);
  const int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle pinned = nullptr;
  EXPECT_EQ(aoti_torch_empty_strided_pinned(1, sizes, strides, aoti_torch_dtype_float32(),
                                            aoti_torch_device_type_cpu(), 0, &pinned),
            AOTI_TORCH_SUCCESS);
  for (AtenTensorHandle h : {a, b, pinned}) EXPECT_EQ(aoti_torch_delete_tensor_object(h), AOTI_TORCH_SUCCESS);

  const std::vector<aotrt::ShimTiming> rows = aotrt::shim_profile();
  const aotrt::ShimTiming outer = find(rows, "test_outer_shim");
  EXPECT_EQ(outer.calls, 1);
  expect_sane(outer);
  EXPECT_EQ(find(rows, "aoti_torch_get_numel").calls, 0);
  EXPECT_EQ(find(rows, "aoti_torch_empty_strided").calls, 2 + 1);  // a, b, pinned
  EXPECT_EQ(find(rows, "aoti_torch_delete_tensor_object").calls, 3);
  EXPECT_EQ(find(rows, "aoti_torch_copy_").calls, 1);
  EXPECT_EQ(find(rows, "aoti_torch_tensor_copy_").calls, 0);
  EXPECT_EQ(find(rows, "aoti_torch_empty_strided_pinned").calls, 0);
  // The outer call holds the inner ones: it took longer than nothing at all.
  EXPECT_GT(outer.total_ns, 0);
}

TEST_F(ShimProfile, CopiesOfOneNameShareAnEntry) {
  aotrt::set_shim_profiling(true);
  // Two arrays with the same text at different addresses.
  static const char first[] = "test_same_name";
  static const char second[] = "test_same_name";
  ASSERT_NE(static_cast<const void*>(first), static_cast<const void*>(second));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(aotrt::shim_boundary(first, [] {}), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aotrt::shim_boundary(second, [] { throw 1; }), AOTI_TORCH_FAILURE);
  const std::vector<aotrt::ShimTiming> rows = aotrt::shim_profile();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].function, "test_same_name");
  EXPECT_EQ(rows[0].calls, 4);
}

TEST_F(ShimProfile, CountsEveryThreadAndNestsPerThread) {
  aotrt::set_shim_profiling(true);
  constexpr int kThreads = 4, kCalls = 500;
  AtenTensorHandle h = make_2x3();
  // The outer shim on this thread does not hide calls made on other threads.
  EXPECT_EQ(aotrt::shim_boundary("test_spawning_shim",
                                 [&] {
                                   std::vector<std::thread> threads;
                                   for (int k = 0; k < kThreads; ++k) {
                                     threads.emplace_back([h] {
                                       int64_t n = 0;
                                       for (int i = 0; i < kCalls; ++i) {
                                         (void)aoti_torch_get_numel(h, &n);
                                       }
                                     });
                                   }
                                   for (std::thread& t : threads) t.join();
                                 }),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_delete_tensor_object(h), AOTI_TORCH_SUCCESS);
  const std::vector<aotrt::ShimTiming> rows = aotrt::shim_profile();
  EXPECT_EQ(find(rows, "aoti_torch_get_numel").calls, kThreads * kCalls);
  EXPECT_EQ(find(rows, "test_spawning_shim").calls, 1);
  expect_sane(find(rows, "aoti_torch_get_numel"));
}
