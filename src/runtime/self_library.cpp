#include "runtime/self_library.h"

#include <dlfcn.h>

#include <cstddef>

#include "core/error.h"

namespace aotrt::runtime {
namespace {

struct SelfLibrary {
  void* handle = nullptr;
  std::string path;
};

// An address inside libaotrt that no other library can interpose (taking an
// exported function's address would go through the GOT).
void anchor() {}

const SelfLibrary& self() {
  static const SelfLibrary lib = [] {
    SelfLibrary s;
    Dl_info info{};
    void* main_program = ::dlopen(nullptr, RTLD_NOW);
    if (::dladdr(reinterpret_cast<void*>(&anchor), &info) != 0 && info.dli_fname != nullptr) {
      void* h = ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
      if (h != nullptr && h != main_program) {
        s.path = info.dli_fname;
        s.handle = h;
      }
    }
    // Linked statically into the program: the program's own scope.
    if (s.handle == nullptr) s.handle = main_program;
    return s;
  }();
  AOTRT_CHECK(lib.handle != nullptr, kInternal,
              "cannot find aotrt's own library with dladdr/dlopen: ", ::dlerror());
  return lib;
}

// The library that defines `address`, for messages.
std::string owner_of(void* address) {
  Dl_info info{};
  if (::dladdr(address, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "an unknown library";
}

void* resolve_in_self(const char* name, void* handle) { return ::dlsym(handle, name); }

// What a model .so opened RTLD_LOCAL will bind `name` to: the global scope's
// definition. dlsym(RTLD_DEFAULT) would not tell: it also searches the
// calling library's own dependencies, aotrt's here; the main program's handle
// searches the global scope alone.
void* global_definition(const char* name) {
  static void* const global_scope = ::dlopen(nullptr, RTLD_NOW);
  return ::dlsym(global_scope, name);
}

struct Face {
  void* handle = nullptr;  // libaotrt_abi.so, or null where aotrt is global already
  std::string error;
};

// Note [The ABI face]: opened once; never closed.
const Face& face() {
  static const Face f = []() -> Face {
    Face r;
    void* own = ::dlsym(self().handle, "aoti_torch_empty_strided");
    if (own == nullptr) {
      r.error = "aotrt's own library does not define aoti_torch_empty_strided";
      return r;
    }
    // A program that links libaotrt (or aotrt statically) has it global.
    if (global_definition("aoti_torch_empty_strided") == own) return r;
    const std::string& path = self().path;
    const std::string dir = path.substr(0, path.find_last_of('/') + 1);
    const std::string face_path = dir + "libaotrt_abi.so";
    r.handle = ::dlopen(face_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (r.handle == nullptr) {
      const char* e = ::dlerror();
      r.error = "cannot load aotrt's ABI library " + face_path + " (it is built and installed beside " +
                path + "): " + (e ? e : "dlopen failed");
      return r;
    }
    using Bind = std::size_t (*)(void* (*)(const char*, void*), void*);
    auto bind = reinterpret_cast<Bind>(::dlsym(r.handle, "aotrt_abi_bind"));
    if (bind == nullptr) {
      r.error = face_path + " has no aotrt_abi_bind: not aotrt's ABI library";
    } else if (const std::size_t missing = bind(&resolve_in_self, self().handle); missing != 0) {
      r.error = face_path + " names " + std::to_string(missing) + " function(s) that " + path +
                " does not define: the two come from different builds";
    }
    return r;
  }();
  return f;
}

}  // namespace

void* self_library_handle() { return self().handle; }
const std::string& self_library_path() { return self().path; }

bool provides_symbol(const std::string& name) {
  ::dlerror();
  return ::dlsym(self().handle, name.c_str()) != nullptr;
}

void expose_to_models(const std::vector<std::string>& imports) {
  const Face& f = face();
  AOTRT_CHECK(f.error.empty(), kBackend, f.error);
  for (const std::string& name : imports) {
    void* own = ::dlsym(self().handle, name.c_str());
    if (own == nullptr) continue;  // refused by the preflight, with the list of what is missing
    void* global = global_definition(name.c_str());
    const bool ours = global == own || (f.handle != nullptr && global == ::dlsym(f.handle, name.c_str()));
    AOTRT_CHECK(ours, kBackend, "the model's import ", name, " would bind to ", owner_of(global),
                ", which is in the process's global scope before aotrt: load that library "
                "without RTLD_GLOBAL, or load aotrt first");
  }
}

}  // namespace aotrt::runtime
