// Errors inside aotrt are exceptions of one type, aotrt::Error, carrying a
// kind and a message a user can act on. They never cross the C ABI: every
// extern "C" shim runs its body through shim_boundary() (shim/boundary.h),
// which turns an Error into AOTI_TORCH_FAILURE and keeps the message as the
// thread's last error.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace aotrt {

enum class ErrorKind {
  kInvalidArgument,   // a value the caller passed is wrong (null, negative, mismatched)
  kInvalidHandle,     // a tensor handle that was deleted or never made
  kOutOfBounds,       // a view that reaches outside its storage, or overflows int64
  kUnsupported,       // valid input that aotrt does not serve (said why)
  kOutOfMemory,       // an allocator could not give the bytes asked for
  kPackage,           // a .pt2 package that cannot be loaded
  kBackend,           // a library or driver call failed (the call is quoted)
  kInternal,          // a broken invariant in aotrt itself
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail

}  // namespace aotrt

// AOTRT_CHECK(cond, kind, parts...): throws aotrt::Error(kind, parts...) when
// cond is false. The parts are streamed, so numbers need no formatting.
#define AOTRT_CHECK(cond, kind, ...)                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      throw ::aotrt::Error(::aotrt::ErrorKind::kind,                           \
                           ::aotrt::detail::concat(__VA_ARGS__));              \
    }                                                                          \
  } while (0)

#define AOTRT_FAIL(kind, ...)                                                  \
  throw ::aotrt::Error(::aotrt::ErrorKind::kind, ::aotrt::detail::concat(__VA_ARGS__))
