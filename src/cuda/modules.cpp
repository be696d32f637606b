// Note [Kernel modules of a model]
// Generated CUDA code loads its Triton kernels with the driver's cuModuleLoad
// (cubin files) or cuModuleLoadData (embedded cubins), lazily at the first
// run, and never unloads them: every load of a model kept its modules, host
// and device memory both (pointwise_c2f of torch 2.11 on the H200: ~127 KB
// of host memory and ~12 KB of device memory per load). The loader renames
// a CUDA model's imports of those two functions (package/elf_patch.h) to the
// ones below, which load the module and remember it under the model that
// asked - the object the call came from - and unload_model_modules() unloads
// them when the model goes, after its container and before dlclose.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <string>
#include <vector>

#include "aotrt/shim.h"
#include "core/error.h"
#include "cuda/cuda.h"

namespace aotrt::cuda {
namespace {

struct LoadedModule {
  const void* model;  // link_map of the object that loaded it
  CUmodule module;
};

struct Driver {
  CUresult (*load)(CUmodule*, const char*) = nullptr;
  CUresult (*load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*unload)(CUmodule) = nullptr;
};

// The driver's functions, from the libcuda that expose_runtime_symbols()
// made global before any CUDA model was opened.
const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return r;
    r.load = reinterpret_cast<decltype(r.load)>(::dlsym(lib, "cuModuleLoad"));
    r.load_data = reinterpret_cast<decltype(r.load_data)>(::dlsym(lib, "cuModuleLoadData"));
    r.unload = reinterpret_cast<decltype(r.unload)>(::dlsym(lib, "cuModuleUnload"));
    return r;
  }();
  return d;
}

std::mutex g_mutex;
std::vector<LoadedModule>& modules() {
  static auto* m = new std::vector<LoadedModule>;  // never destroyed: models may outlive statics
  return *m;
}

const void* object_of(const void* address) {
  Dl_info info{};
  link_map* lm = nullptr;
  if (::dladdr1(address, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0) {
    return nullptr;
  }
  return lm;
}

CUresult remember(CUresult status, CUmodule* module, const void* caller) {
  if (status == CUDA_SUCCESS && module != nullptr && *module != nullptr) {
    std::lock_guard<std::mutex> lock(g_mutex);
    modules().push_back({object_of(caller), *module});
  }
  return status;
}

}  // namespace

size_t loaded_module_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return modules().size();
}

void unload_model_modules(void* so_handle) noexcept {
  link_map* lm = nullptr;
  if (so_handle == nullptr || ::dlinfo(so_handle, RTLD_DI_LINKMAP, &lm) != 0) return;
  std::vector<CUmodule> mine;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& all = modules();
    for (size_t i = all.size(); i-- > 0;) {
      if (all[i].model != lm) continue;
      mine.push_back(all[i].module);
      all.erase(all.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (driver().unload == nullptr) return;
  for (CUmodule m : mine) {
    if (const CUresult s = driver().unload(m); s != CUDA_SUCCESS) {
      std::fprintf(stderr, "aotrt: warning: unloading a kernel module of a model failed (CUresult %d)\n",
                   static_cast<int>(s));
    }
  }
}

}  // namespace aotrt::cuda

// The model's calls, renamed (Note [Kernel modules of a model]).
extern "C" AOTRT_EXPORT CUresult aoModuleLoad(CUmodule* module, const char* fname) {
  using namespace aotrt::cuda;
  if (driver().load == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return remember(driver().load(module, fname), module, __builtin_return_address(0));
}

extern "C" AOTRT_EXPORT CUresult aoModuleLoadData(CUmodule* module, const void* image) {
  using namespace aotrt::cuda;
  if (driver().load_data == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return remember(driver().load_data(module, image), module, __builtin_return_address(0));
}
