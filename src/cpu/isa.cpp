// Note [Hand-written AVX2 kernels] in cpu/isa.h.
#include "cpu/isa.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace aotrt::cpu {
namespace {
thread_local bool t_portable = false;

#if defined(__x86_64__) && defined(__GNUC__)
// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does
// not know the feature's name.
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}
#endif
}  // namespace

bool avx2_kernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          has_f16c();
  return yes && !t_portable;
#else
  return false;
#endif
}

PortableKernels::PortableKernels() : previous_(t_portable) { t_portable = true; }
PortableKernels::~PortableKernels() { t_portable = previous_; }

}  // namespace aotrt::cpu
