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

size_t pending_model_thread_destructors() {
  Registry& r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mu);
  return r.pending.size();
}

}  // namespace aotrt::runtime

extern "C" int aotrt_thread_atexit(void (*dtor)(void*), void* obj, void* dso_symbol) {
  using namespace aotrt::runtime;
  Dl_info info{};
  link_map* lm = nullptr;
  if (::dladdr1(dso_symbol, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0 ||
      lm == nullptr) {
    // Not inside a loaded object: nothing to unload, so glibc's way is fine.
    return __cxxabiv1::__cxa_thread_atexit(dtor, obj, dso_symbol);
  }
  Registry& r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mu);
  r.pending.push_back({dtor, obj, lm, &t_exit});
  return 0;
}
