#include "core/error.h"

namespace aotrt {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kInvalidHandle: return "invalid handle";
    case ErrorKind::kOutOfBounds: return "out of bounds";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kOutOfMemory: return "out of memory";
    case ErrorKind::kPackage: return "bad package";
    case ErrorKind::kBackend: return "backend failure";
    case ErrorKind::kInternal: return "internal error";
  }
  return "error";
}

}  // namespace aotrt
