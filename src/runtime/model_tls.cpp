#include "runtime/model_tls.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace aotrt::runtime {
namespace {

struct Registration {
  void (*dtor)(void*);
  void* obj;
  const void* model;   // the model's link_map
  const void* thread;  // the registering thread's ThreadExit
};

struct Registry {
  // Recursive: a destructor may touch another thread_local of its model.
  std::recursive_mutex mu;
  std::vector<Registration> pending;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads exit after static destructors
  return *r;
}

// Runs (newest first, as glibc does) and removes the registrations `pick` selects.
template <typename Pick>
void run_where(Pick pick) noexcept {
  Registry& r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mu);
  for (size_t i = r.pending.size(); i-- > 0;) {
    if (i >= r.pending.size() || !pick(r.pending[i])) continue;
    const Registration reg = r.pending[i];
    r.pending.erase(r.pending.begin() + static_cast<std::ptrdiff_t>(i));
    reg.dtor(reg.obj);
  }
}

// One per thread that registered anything: its destructor, registered with
// the real __cxa_thread_atexit against aotrt's own library, runs the
// thread's registrations when the thread exits.
struct ThreadExit {
  ~ThreadExit() {
    run_where([this](const Registration& reg) { return reg.thread == this; });
  }
};
thread_local ThreadExit t_exit;

const void* link_map_of(void* so_handle) {
  link_map* lm = nullptr;
  if (so_handle == nullptr || ::dlinfo(so_handle, RTLD_DI_LINKMAP, &lm) != 0) return nullptr;
  return lm;
}

}  // namespace

void run_model_thread_destructors(void* so_handle) noexcept {
  const void* model = link_map_of(so_handle);
  if (model == nullptr) return;
  run_where([model](const Registration& reg) { return reg.model == model; });
}

void release_model_cxx_runtime(void* so_handle) noexcept {
  const void* model = link_map_of(so_handle);
  if (model == nullptr) return;
  void* freeres = ::dlsym(so_handle, "_ZN9__gnu_cxx9__freeresEv");  // __gnu_cxx::__freeres()
  if (freeres == nullptr) return;
  Dl_info info{};
  link_map* owner = nullptr;
  if (::dladdr1(freeres, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) == 0 ||
      owner != model) {
    return;  // the process's libstdc++, which stays
  }
  reinterpret_cast<void (*)()>(freeres)();
}

size_t pending_model_thread_destructors() {
  Registry& r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mu);
  return r.pending.size();
}

}  // namespace aotrt::runtime

namespace {

using ThreadAtexit = int (*)(void (*)(void*), void*, void*);

// Keeps the registration when dso_symbol lies in a loaded object (a model);
// anything else goes to `fallback`, the function the model would have called.
int register_thread_destructor(void (*dtor)(void*), void* obj, void* dso_symbol,
                               ThreadAtexit fallback) {
  using namespace aotrt::runtime;
  Dl_info info{};
  link_map* lm = nullptr;
  if (::dladdr1(dso_symbol, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0 ||
      lm == nullptr) {
    // Not inside a loaded object: nothing to unload, so glibc's way is fine.
    return fallback(dtor, obj, dso_symbol);
  }
  Registry& r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mu);
  r.pending.push_back({dtor, obj, lm, &t_exit});
  return 0;
}

}  // namespace

extern "C" int __cxa_thread_atexit_impl(void (*)(void*), void*, void*);  // glibc 2.18

extern "C" int aotrt_thread_atexit(void (*dtor)(void*), void* obj, void* dso_symbol) {
  return register_thread_destructor(dtor, obj, dso_symbol, &__cxxabiv1::__cxa_thread_atexit);
}

extern "C" int aotrt_thread_atexit_impl(void (*dtor)(void*), void* obj, void* dso_symbol) {
  return register_thread_destructor(dtor, obj, dso_symbol, &__cxa_thread_atexit_impl);
}
