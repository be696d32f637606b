// The registry of live tensor handles (core/handles.h).
#include <gtest/gtest.h>

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
