// The C ABI boundary. Every extern "C" shim body runs inside shim_boundary(),
// which catches anything thrown, keeps the message as the calling thread's
// last error (read with aotrt_last_error()), also prints it to stderr when
// AOTRT_VERBOSE is set, and returns AOTI_TORCH_FAILURE. Nothing crosses the ABI.
#pragma once

#include <exception>
#include <string>

#include "aotrt/shim.h"
#include "core/error.h"

namespace aotrt {

void set_last_error(std::string message);
const std::string& last_error();
void clear_last_error();

namespace detail {
AOTITorchError report_failure(const char* function, const char* message) noexcept;
}  // namespace detail

template <typename Body>
AOTITorchError shim_boundary(const char* function, Body&& body) noexcept {
  try {
    body();
    return AOTI_TORCH_SUCCESS;
  } catch (const std::exception& e) {
    return detail::report_failure(function, e.what());
  } catch (...) {
    return detail::report_failure(function, "unknown exception");
  }
}

// Checks an output pointer argument (ret_*) is not null.
#define AOTRT_CHECK_OUT(ptr, fn)                                                   \
  AOTRT_CHECK((ptr) != nullptr, kInvalidArgument, fn, ": output argument '" #ptr   \
              "' is null")

}  // namespace aotrt
