// Note [Hand-written AVX2 kernels] in cpu/isa.h.
#include "cpu/isa.h"

namespace aotrt::cpu {
namespace {
thread_local bool t_portable = false;
}  // namespace

bool avx2_kernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return yes && !t_portable;
#else
  return false;
#endif
}

PortableKernels::PortableKernels() : previous_(t_portable) { t_portable = true; }
PortableKernels::~PortableKernels() { t_portable = previous_; }

}  // namespace aotrt::cpu
