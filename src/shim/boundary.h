// The C ABI boundary. Every extern "C" shim body runs inside shim_boundary(),
// which catches anything thrown, keeps the message as the calling thread's
// last error (read with aotrt_last_error()), also prints it to stderr when
// AOTRT_VERBOSE is set, and returns AOTI_TORCH_FAILURE. Nothing crosses the ABI.
// While profiling is on, it also times the call (Note [Shim profiling] in
// shim/profile.h).
#pragma once

#include <exception>
#include <string>

#include "aotrt/shim.h"
#include "core/error.h"
#include "shim/profile.h"

namespace aotrt {

void set_last_error(std::string message);
const std::string& last_error();
void clear_last_error();

namespace detail {
AOTITorchError report_failure(const char* function, const char* message) noexcept;

template <typename Body>
AOTITorchError run_guarded(const char* function, Body& body) noexcept {
  try {
    body();
    return AOTI_TORCH_SUCCESS;
  } catch (const std::exception& e) {
    return report_failure(function, e.what());
  } catch (...) {
    return report_failure(function, "unknown exception");
  }
}
}  // namespace detail

// `function` names the shim (__func__ or a literal: see profile.h).
template <typename Body>
AOTITorchError shim_boundary(const char* function, Body&& body) noexcept {
  // Profiling off: this load is all it costs.
  const bool profiled = profiling::shim_profiling_on();
  const int64_t start = profiled ? profiling::shim_call_begin() : 0;
  const AOTITorchError rc = detail::run_guarded(function, body);
  if (profiled) [[unlikely]] profiling::shim_call_end(function, start);
  return rc;
}

// Checks an output pointer argument (ret_*) is not null.
#define AOTRT_CHECK_OUT(ptr, fn)                                                   \
  AOTRT_CHECK((ptr) != nullptr, kInvalidArgument, fn, ": output argument '" #ptr   \
              "' is null")

}  // namespace aotrt
