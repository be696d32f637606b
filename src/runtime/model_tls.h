// The thread-local destructors of model .so files, run by aotrt so that a
// model can be unloaded. See Note [Thread-local destructors and dlclose] in
// package/elf_patch.h: the loader renames a model's import of
// __cxa_thread_atexit to aotrt_thread_atexit (and glibc's
// __cxa_thread_atexit_impl to aotrt_thread_atexit_impl), defined here.
//
// A registration is kept per (thread, model). It runs when the thread exits,
// as glibc would run it, or, for a model unloaded first, on the unloading
// thread right before dlclose: the object lives in the registering thread's
// TLS block of the model, which glibc frees only after dlclose, and no thread
// may run a model that is being unloaded. Destructors run under the
// registry's lock, so a thread's exit and an unload never both run one.
#pragma once

#include <cstddef>

#include "aotrt/shim.h"

extern "C" {
// __cxa_thread_atexit's contract: calls dtor(obj) when the calling thread
// exits; dso_symbol is an address inside the registering object. Returns 0.
AOTRT_EXPORT int aotrt_thread_atexit(void (*dtor)(void*), void* obj, void* dso_symbol);
// The same for a model's static copy of libstdc++, which calls glibc's
// __cxa_thread_atexit_impl directly.
AOTRT_EXPORT int aotrt_thread_atexit_impl(void (*dtor)(void*), void* obj, void* dso_symbol);
}

namespace aotrt::runtime {

// Runs, then forgets, every destructor registered for the model dlopened as
// `so_handle`, whichever thread registered it. Never throws.
void run_model_thread_destructors(void* so_handle) noexcept;

// Registrations not yet run, over all threads and models (for tests).
size_t pending_model_thread_destructors();

// Note [A model's own libstdc++]
// A model linked with -static-libstdc++ carries its own copy of libstdc++,
// whose emergency exception pool (~70 KB, allocated by a static constructor)
// is never freed: libstdc++ expects to live as long as the process, and each
// load of such a model would leave it behind. Its __gnu_cxx::__freeres()
// frees it; this calls the model's own copy (never the process's), right
// before dlclose, when no code of the model runs any more.
void release_model_cxx_runtime(void* so_handle) noexcept;

}  // namespace aotrt::runtime
