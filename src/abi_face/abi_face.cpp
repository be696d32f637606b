// libaotrt_abi.so, the ABI face (Note [The ABI face], src/runtime/self_library.h):
// the table the generated stubs (cmake/abi_face.cmake) jump through, and the
// one call that fills it. It links nothing of aotrt's, so making it global puts
// only the model-facing names (and the libraries a model's kernels import
// from: Sleef, OpenMP) into the process's global scope.
#include <cstddef>

extern "C" {
extern void* aotrt_abi_slots[];
extern const char* const aotrt_abi_names[];
extern const std::size_t aotrt_abi_count;

// Asks `resolve` for the address of every name; returns how many it could not
// give (0 once bound). Called once, before any model is loaded through it.
__attribute__((visibility("default"))) std::size_t aotrt_abi_bind(void* (*resolve)(const char* name, void* ctx),
                                                                    void* ctx) {
  std::size_t missing = 0;
  for (std::size_t i = 0; i < aotrt_abi_count; ++i) {
    void* address = resolve(aotrt_abi_names[i], ctx);
    if (address == nullptr) {
      ++missing;
    } else {
      aotrt_abi_slots[i] = address;
    }
  }
  return missing;
}
}
