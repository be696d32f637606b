// How an op family reaches the kernels of a tensor's device.
//
// Note [Op dispatch]
// Each family (src/ops/<family>.h) declares a table of kernels: a struct of
// function pointers, one per kernel, device-independent in its signature
// (e.g. ScanKernels). Each backend fills one in its kernel file
// (src/cpu/ops/<family>.cpp, src/cuda/ops/<family>.cu) and registers it
// with AOTRT_REGISTER_KERNELS(ScanKernels, cpu|cuda, table). The family's
// semantics reach a kernel with kernel(&ScanKernels::scan, device, fn): a
// device with no table - CUDA in a build without CUDA, whose refusal is
// no_cuda.cpp's - or a null entry in a table is refused there, naming the
// shim. So a build without CUDA needs no #ifdef in a family: the CUDA kernel
// files are simply not compiled, and their tables stay unregistered.
// Tables are constant-initialized and registered during static
// initialization of libaotrt.so, before any shim can be called.
#pragma once

#include "core/device.h"
#include "core/error.h"
#include "cuda/cuda.h"

namespace aotrt {

template <class Kernels>
struct KernelRegistry {
  static inline const Kernels* cpu = nullptr;
  static inline const Kernels* cuda = nullptr;
};

// The kernel `member` of the family table registered for `device`.
template <class Kernels, class Fn>
Fn kernel(Fn Kernels::*member, Device device, const char* fn) {
  if (device.is_cuda() && !cuda::built()) {
    AOTRT_FAIL(kUnsupported, fn, ": ", cuda::kNotBuiltMessage);
  }
  const Kernels* table =
      device.is_cuda() ? KernelRegistry<Kernels>::cuda : KernelRegistry<Kernels>::cpu;
  const Fn f = table == nullptr ? nullptr : table->*member;
  AOTRT_CHECK(f != nullptr, kUnsupported, fn, ": this aotrt has no ",
              device.is_cuda() ? "CUDA" : "CPU", " kernel for it");
  return f;
}

}  // namespace aotrt

// Registers `table` (a constexpr Kernels) as the kernels of `device` (cpu or
// cuda). Once per family and device, at namespace scope of its kernel file;
// Kernels is the table's unqualified name (it names the registration).
#define AOTRT_REGISTER_KERNELS(Kernels, device, table)                    \
  [[maybe_unused]] static const bool aotrt_registered_##Kernels##_##device = \
      (::aotrt::KernelRegistry<Kernels>::device = &(table), true)
