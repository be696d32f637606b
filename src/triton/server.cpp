#include "triton/server.h"

#include <chrono>
#include <cstring>

namespace aotrt::triton {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

TRITONSERVER_Error_Code server_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kOutOfBounds:
      return TRITONSERVER_ERROR_INVALID_ARG;
    case ErrorKind::kUnsupported:
    case ErrorKind::kPackage:
      return TRITONSERVER_ERROR_UNSUPPORTED;
    case ErrorKind::kOutOfMemory:
      return TRITONSERVER_ERROR_UNAVAILABLE;
    default:
      return TRITONSERVER_ERROR_INTERNAL;
  }
}

TRITONSERVER_Error* server_error(const Error& e) {
  return TRITONSERVER_ErrorNew(server_code(e.kind()), (std::string("aotrt: ") + e.what()).c_str());
}

void check_server(TRITONSERVER_Error* err, const char* call) {
  if (err == nullptr) return;
  const std::string message = TRITONSERVER_ErrorMessage(err);
  TRITONSERVER_ErrorDelete(err);
  AOTRT_FAIL(kBackend, call, " failed: ", message);
}

void log(TRITONSERVER_LogLevel level, const std::string& message, std::source_location where) {
  TRITONSERVER_Error* err = TRITONSERVER_LogMessage(level, where.file_name(),
                                                    static_cast<int>(where.line()), message.c_str());
  if (err != nullptr) TRITONSERVER_ErrorDelete(err);
}

void log_failure(TRITONSERVER_Error* err, const std::string& what) {
  if (err == nullptr) return;
  log(TRITONSERVER_LOG_ERROR, "aotrt: " + what + " failed: " + TRITONSERVER_ErrorMessage(err));
  TRITONSERVER_ErrorDelete(err);
}

std::string shape_text(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

void copy_input_bytes(TRITONBACKEND_Input* input, uint8_t* dst, uint64_t nbytes) {
  uint32_t count = 0;
  CHECK_TRITON(TRITONBACKEND_InputProperties(input, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             &count));
  uint64_t done = 0;
  for (uint32_t b = 0; b < count; ++b) {
    const void* buffer = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    CHECK_TRITON(TRITONBACKEND_InputBuffer(input, b, &buffer, &size, &type, &type_id));
    AOTRT_CHECK(done + size <= nbytes, kInvalidArgument, "request input holds more than its ",
                nbytes, " bytes");
    if (type == TRITONSERVER_MEMORY_GPU) {
      const Device where{DeviceType::CUDA, static_cast<int32_t>(type_id)};
      Tensor src = Tensor::from_blob(const_cast<void*>(buffer), {static_cast<int64_t>(size)}, {1},
                                     ScalarType::UInt8, where);
      Tensor host = Tensor::from_blob(dst + done, {static_cast<int64_t>(size)}, {1},
                                      ScalarType::UInt8);
      host.copy_(src);
      synchronize(where);
    } else if (size > 0) {
      std::memcpy(dst + done, buffer, size);
    }
    done += size;
  }
  AOTRT_CHECK(done == nbytes, kInvalidArgument, "request input holds ", done, " bytes, not ",
              nbytes);
}

}  // namespace aotrt::triton
