// aotrt::synchronize and aotrt::forget_cuda_stream (aotrt/aotrt.h).
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

void forget_cuda_stream(Device device, void* stream) noexcept {
  if (!device.is_cuda()) return;
  try {
    cuda::forget_stream(device.index >= 0 ? device.index : cuda::current_device(), stream);
  } catch (...) {
    // No device to ask for the current index: aotrt ran nothing there.
  }
}

}  // namespace aotrt
