#include "core/allocator.h"

#include "cpu/cpu.h"
#include "cuda/cuda.h"

namespace aotrt {

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) return cpu::allocator();
  return cuda::allocator(device.index);
}

}  // namespace aotrt
