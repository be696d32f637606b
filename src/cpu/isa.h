// Note [Kernels cloned per ISA]
// libaotrt.so is compiled for baseline x86-64 (SSE2), so that it loads on any
// x86-64 host. A few hot leaf loops whose speed depends on vector width get a
// second copy compiled for x86-64-v3 (AVX2, FMA, F16C), chosen once when the
// library loads (GCC's target_clones: an ifunc the dynamic linker resolves
// from the CPU's features), as ATen's DispatchStub chooses its AVX2 kernels.
// Only leaves: a clone is called through the ifunc and never inlined, so it
// must not hold an OpenMP region or sit in a loop that runs per element.
// With FMA the clone rounds a*b+c once where the baseline rounds twice; the
// kernels that use it state their tolerance against ATen (which fuses too).
// Elsewhere (clang's fuzz builds, other architectures) and under a
// sanitizer the attribute is empty and the baseline code is all there is: an
// ifunc resolver runs while the dynamic linker relocates the library, before
// a sanitizer's runtime is set up, and GCC instruments it (ThreadSanitizer's
// unit tests died there, in _dl_relocate_object).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define AOTRT_CLONE_FOR_AVX2 __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define AOTRT_CLONE_FOR_AVX2
#endif

namespace aotrt::cpu {

// Note [Hand-written AVX2 kernels]
// A few kernels are written with AVX2 intrinsics in functions compiled with
// __attribute__((target("avx2,fma,f16c"))) next to a portable version of the
// same sums (the int8 and int4 weight matmuls, decode attention). The caller
// picks one per call, before any parallel region, with avx2_kernels(): the CPU has AVX2,
// FMA and F16C (AVX-512 hosts included), and the calling thread holds no
// PortableKernels, which the tests use to run the fallbacks on any machine.
bool avx2_kernels();

class PortableKernels {
 public:
  PortableKernels();
  ~PortableKernels();
  PortableKernels(const PortableKernels&) = delete;
  PortableKernels& operator=(const PortableKernels&) = delete;

 private:
  bool previous_;
};

}  // namespace aotrt::cpu
