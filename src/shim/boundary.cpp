#include "shim/boundary.h"

#include <cstdio>
#include <cstdlib>

namespace aotrt {
namespace {
thread_local std::string t_last_error;

bool verbose() {
  static const bool v = std::getenv("AOTRT_VERBOSE") != nullptr;
  return v;
}
}  // namespace

void set_last_error(std::string message) { t_last_error = std::move(message); }
const std::string& last_error() { return t_last_error; }
void clear_last_error() { t_last_error.clear(); }

namespace detail {
AOTITorchError report_failure(const char* function, const char* message) noexcept {
  try {
    std::string text = message;
    // Messages from aotrt already name the function; others get it here.
    if (text.rfind(function, 0) != 0) text = std::string(function) + ": " + text;
    if (verbose()) std::fprintf(stderr, "aotrt: error: %s\n", text.c_str());
    t_last_error = std::move(text);
  } catch (...) {
    // Out of memory while reporting: the error code still says it failed.
  }
  return AOTI_TORCH_FAILURE;
}
}  // namespace detail

}  // namespace aotrt

extern "C" const char* aotrt_last_error(void) { return aotrt::last_error().c_str(); }
