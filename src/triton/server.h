// What the backend's two halves (backend.cpp: one response a request;
// generation.cpp: decoupled generation) share of their calls into the
// server: errors both ways, logging, the entry-point boundary, and the bytes
// of a request input.
#pragma once

#include <cstdint>
#include <source_location>
#include <span>
#include <string>

#include "aotrt/aotrt.h"
#include "triton/triton_api.h"

namespace aotrt::triton {

// Steady-clock nanoseconds, as the server's statistics take them.
uint64_t now_ns();

TRITONSERVER_Error_Code server_code(ErrorKind kind);

// A server error carrying aotrt's message ("aotrt: ..."); the caller owns it.
TRITONSERVER_Error* server_error(const Error& e);

// Throws the message of a failed server call as an aotrt::Error quoting the
// call; deletes `err`.
void check_server(TRITONSERVER_Error* err, const char* call);
#define CHECK_TRITON(call) ::aotrt::triton::check_server((call), #call)

// Logs a failed server call whose failure must not stop the caller; deletes `err`.
void log_failure(TRITONSERVER_Error* err, const std::string& what);

void log(TRITONSERVER_LogLevel level, const std::string& message,
         std::source_location where = std::source_location::current());

// Runs an entry point's body; what it throws comes back as the server's error.
template <typename Body>
TRITONSERVER_Error* entry_boundary(const char* fn, Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return server_error(e);
  } catch (const std::exception& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 (std::string("aotrt: ") + fn + ": " + e.what()).c_str());
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 (std::string("aotrt: ") + fn + ": unknown exception").c_str());
  }
}

std::string shape_text(std::span<const int64_t> shape);

// Copies the bytes of a request input (one or more server buffers, host or
// device memory) to `dst` (host memory of exactly that size).
void copy_input_bytes(TRITONBACKEND_Input* input, uint8_t* dst, uint64_t nbytes);

}  // namespace aotrt::triton
