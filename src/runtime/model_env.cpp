#include "runtime/model_env.h"

#include <cstdlib>
#include <cstring>

extern "C" char* aotenv(const char* name) {
  char* host = std::getenv(name);
  if (host != nullptr || name == nullptr) return host;
  static char on[] = "1";
  return std::strcmp(name, "AOTI_RUNTIME_CHECK_INPUTS") == 0 ? on : nullptr;
}
