// Errors and the C ABI boundary (core/error.h, shim/boundary.h): nothing
// crosses the ABI, and the message a caller reads names the function.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <thread>

#include "aotrt/shim.h"
#include "core/error.h"
#include "shim/boundary.h"

using namespace aotrt;

namespace {

TEST(CoreError, CheckThrowsItsKindAndStreamsTheParts) {
  try {
    AOTRT_CHECK(1 + 1 == 3, kOutOfBounds, "f: ", 42, " is ", 1.5);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfBounds);
    EXPECT_STREQ(e.what(), "f: 42 is 1.5");
  }
  EXPECT_NO_THROW(AOTRT_CHECK(true, kInternal, "never"));
  EXPECT_STREQ(error_kind_name(ErrorKind::kInvalidHandle), "invalid handle");
  EXPECT_STREQ(error_kind_name(ErrorKind::kUnsupported), "unsupported");
}

TEST(ShimBoundary, CatchesEverythingAndKeepsTheMessage) {
  EXPECT_EQ(shim_boundary("fn_a", [] { AOTRT_FAIL(kInvalidArgument, "fn_a: bad x"); }),
            AOTI_TORCH_FAILURE);
  EXPECT_STREQ(aotrt_last_error(), "fn_a: bad x");
  // Messages that do not start with the function get it prepended.
  EXPECT_EQ(shim_boundary("fn_b", [] { throw std::runtime_error("plain"); }), AOTI_TORCH_FAILURE);
  EXPECT_STREQ(aotrt_last_error(), "fn_b: plain");
  EXPECT_EQ(shim_boundary("fn_c", [] { throw std::bad_alloc(); }), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("fn_c"), std::string::npos);
  EXPECT_EQ(shim_boundary("fn_d", [] { throw 7; }), AOTI_TORCH_FAILURE);
  EXPECT_STREQ(aotrt_last_error(), "fn_d: unknown exception");
  EXPECT_EQ(shim_boundary("fn_e", [] {}), AOTI_TORCH_SUCCESS);
}

TEST(ShimBoundary, LastErrorIsPerThread) {
  (void)shim_boundary("main_fn", [] { AOTRT_FAIL(kInternal, "main_fn: here"); });
  std::string seen = "unset";
  std::thread([&] {
    seen = aotrt_last_error();
    (void)shim_boundary("other_fn", [] { AOTRT_FAIL(kInternal, "other_fn: there"); });
  }).join();
  EXPECT_EQ(seen, "");
  EXPECT_STREQ(aotrt_last_error(), "main_fn: here");
}

}  // namespace
