// The registry of live tensor handles (core/handles.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/handles.h"
#include "core/tensor.h"

using namespace aotrt;

namespace {

std::unique_ptr<TensorImpl> small_tensor() {
  const int64_t sizes[] = {4}, strides[] = {1};
  return empty_strided(sizes, strides, ScalarType::Float32, cpu_device(), "test");
}

ErrorKind kind_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no error thrown";
  return ErrorKind::kInternal;
}

TEST(CoreHandles, RegisterLookUpDelete) {
  const int64_t before = handle_live_count();
  AtenTensorHandle h = handle_register(small_tensor());
  EXPECT_EQ(handle_live_count(), before + 1);
  EXPECT_TRUE(handle_is_live(h));
  EXPECT_EQ(handle_get(h, "t").numel(), 4);
  handle_delete(h, "t");
  EXPECT_EQ(handle_live_count(), before);
  EXPECT_FALSE(handle_is_live(h));
}

TEST(CoreHandles, DeletedHandleIsRefusedNamingTheCaller) {
  AtenTensorHandle h = handle_register(small_tensor());
  handle_delete(h, "t");
  EXPECT_EQ(kind_of([&] { handle_get(h, "my_fn: argument 'x'"); }), ErrorKind::kInvalidHandle);
  EXPECT_EQ(kind_of([&] { handle_delete(h, "again"); }), ErrorKind::kInvalidHandle);
  try {
    handle_get(h, "my_fn: argument 'x'");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("my_fn: argument 'x'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not a live tensor handle"), std::string::npos);
  }
}

TEST(CoreHandles, NullAndForeignPointersAreRefused) {
  EXPECT_EQ(kind_of([&] { handle_get(nullptr, "t"); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([&] { handle_delete(nullptr, "t"); }), ErrorKind::kInvalidArgument);
  int not_a_tensor = 0;
  auto foreign = reinterpret_cast<AtenTensorHandle>(&not_a_tensor);
  EXPECT_EQ(kind_of([&] { handle_get(foreign, "t"); }), ErrorKind::kInvalidHandle);
  EXPECT_FALSE(handle_is_live(foreign));
  EXPECT_FALSE(handle_is_live(nullptr));
}

// Note [Handle values]: the slot of a deleted handle is taken by the next
// handle made on this thread (and, with glibc's allocator, often the old
// TensorImpl's address too); the old value stays refused.
TEST(CoreHandles, DeletedHandleStaysRefusedWhenItsSlotIsReused) {
  AtenTensorHandle old = handle_register(small_tensor());
  const void* old_impl = &handle_get(old, "t");
  handle_delete(old, "t");
  AtenTensorHandle fresh = handle_register(small_tensor());
  EXPECT_EQ(handle_slot(fresh), handle_slot(old));
  EXPECT_NE(fresh, old);
  EXPECT_TRUE(handle_is_live(fresh));
  EXPECT_FALSE(handle_is_live(old));
  EXPECT_EQ(kind_of([&] { handle_get(old, "f: argument 'x'"); }), ErrorKind::kInvalidHandle);
  EXPECT_EQ(kind_of([&] { handle_delete(old, "f"); }), ErrorKind::kInvalidHandle);
  try {
    handle_get(old, "f: argument 'x'");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it was deleted"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(handle_is_live(fresh));  // the failed delete of `old` left the new handle alone
  std::printf("[handles] slot reused; TensorImpl address %s\n",
              &handle_get(fresh, "t") == old_impl ? "reused too" : "not reused");
  handle_delete(fresh, "t");
}

TEST(CoreHandles, OtherGenerationsOfALiveSlotAreRefused) {
  AtenTensorHandle h = handle_register(small_tensor());
  const auto v = reinterpret_cast<uintptr_t>(h);
  // Other generations of the same slot (odd and even), a slot never made.
  for (uintptr_t other : {v + (uintptr_t{2} << 32), v - (uintptr_t{2} << 32), v ^ (uintptr_t{1} << 32),
                          (v & ~uintptr_t{0xffffffff}) | 0x7ffffff0u}) {
    EXPECT_FALSE(handle_is_live(reinterpret_cast<AtenTensorHandle>(other))) << std::hex << other;
    // Slot 0's even generation 0 is the null handle (the first handle of a
    // fresh process, as under ctest), refused as null rather than as stale.
    const ErrorKind want = other == 0 ? ErrorKind::kInvalidArgument : ErrorKind::kInvalidHandle;
    EXPECT_EQ(kind_of([&] { handle_get(reinterpret_cast<AtenTensorHandle>(other), "t"); }), want)
        << std::hex << other;
  }
  handle_delete(h, "t");
}

TEST(CoreHandles, UndefinedTensorIsLiveButNotDefined) {
  AtenTensorHandle h = handle_register(std::make_unique<TensorImpl>());
  EXPECT_FALSE(handle_get(h, "t").defined());
  EXPECT_EQ(kind_of([&] { handle_get_defined(h, "t"); }), ErrorKind::kInvalidArgument);
  handle_delete(h, "t");
}

TEST(CoreHandles, HandleHoldsOneReferenceOnItsStorage) {
  AtenTensorHandle h = handle_register(small_tensor());
  TensorImpl& t = handle_get(h, "t");
  EXPECT_EQ(t.storage()->use_count(), 1);
  StorageRef extra = t.storage();
  EXPECT_EQ(extra->use_count(), 2);
  handle_delete(h, "t");
  EXPECT_EQ(extra->use_count(), 1);
}

TEST(CoreHandles, ConcurrentRegistrationAndDeletion) {
  const int64_t before = handle_live_count();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      std::vector<AtenTensorHandle> mine;
      for (int i = 0; i < 2000; ++i) {
        mine.push_back(handle_register(std::make_unique<TensorImpl>()));
        if (i % 3 == 0) {
          handle_delete(mine.back(), "t");
          mine.pop_back();
        }
      }
      for (AtenTensorHandle h : mine) {
        ASSERT_TRUE(handle_is_live(h));
        handle_delete(h, "t");
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(handle_live_count(), before);
}

}  // namespace
