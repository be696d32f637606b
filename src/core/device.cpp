#include "core/device.h"

#include "core/error.h"

namespace aotrt {

std::string Device::str() const {
  if (is_cpu()) return "cpu";
  return "cuda:" + std::to_string(index);
}

Device make_device(int32_t device_type, int32_t device_index, const char* what) {
  switch (device_type) {
    case static_cast<int32_t>(DeviceType::CPU):
      // ATen accepts cpu:0 and cpu (-1) alike; both mean the one host.
      AOTRT_CHECK(device_index >= -1, kInvalidArgument, what, ": cpu device index ",
                  device_index, " is invalid");
      return cpu_device();
    case static_cast<int32_t>(DeviceType::CUDA):
      AOTRT_CHECK(device_index >= -1, kInvalidArgument, what, ": cuda device index ",
                  device_index, " is invalid");
      // -1 means "the current device"; the CUDA backend resolves it.
      return Device{DeviceType::CUDA, device_index};
    default:
      AOTRT_FAIL(kInvalidArgument, what, ": device type ", device_type,
                 " is not served by aotrt (cpu=0, cuda=1)");
  }
}

}  // namespace aotrt
