#include "runtime/self_library.h"

#include <dlfcn.h>

#include "aotrt/shim.h"
#include "core/error.h"

namespace aotrt::runtime {
namespace {

struct SelfLibrary {
  void* handle = nullptr;
  std::string path;
};

const SelfLibrary& self() {
  static const SelfLibrary lib = [] {
    SelfLibrary s;
    Dl_info info{};
    // Any shim works: they all live in aotrt's library.
    if (::dladdr(reinterpret_cast<void*>(&aoti_torch_delete_tensor_object), &info) != 0 &&
        info.dli_fname != nullptr) {
      s.path = info.dli_fname;
      s.handle = ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    }
    if (s.handle == nullptr) {
      // Linked statically into the program: the program's own scope is global.
      s.path.clear();
      s.handle = ::dlopen(nullptr, RTLD_NOW | RTLD_GLOBAL);
    }
    return s;
  }();
  AOTRT_CHECK(lib.handle != nullptr, kInternal,
              "cannot find aotrt's own library with dladdr/dlopen: ", ::dlerror());
  return lib;
}

}  // namespace

void* self_library_handle() { return self().handle; }
const std::string& self_library_path() { return self().path; }

bool provides_symbol(const std::string& name) {
  ::dlerror();
  return ::dlsym(self().handle, name.c_str()) != nullptr;
}

}  // namespace aotrt::runtime
