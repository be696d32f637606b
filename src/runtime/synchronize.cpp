// aotrt::synchronize (aotrt/aotrt.h).
#include "aotrt/aotrt.h"
#include "cuda/cuda.h"
#include "ops/linalg.h"

namespace aotrt {

void synchronize(Device device) {
  if (device.is_cpu()) return;
  AOTRT_CHECK(device.is_cuda(), kInvalidArgument, "aotrt::synchronize: device ", device.str(),
              " is neither cpu nor cuda");
  AOTRT_CHECK(cuda::built(), kUnsupported, "aotrt::synchronize: device ", device.str(),
              " asked for, but this aotrt was built without CUDA");
  const int index = device.index >= 0 ? device.index : cuda::current_device();
  cuda::synchronize(index);
  // What the work just waited for found (Note [Linalg errors on CUDA]).
  ops::raise_deferred_errors(Device{DeviceType::CUDA, index}, "aotrt::synchronize");
}

}  // namespace aotrt
