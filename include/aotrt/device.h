// Where memory lives. Codes equal c10::DeviceType. A CPU device has index -1,
// as ATen reports it; CUDA devices are numbered from 0.
#pragma once

#include <cstdint>
#include <string>

namespace aotrt {

enum class DeviceType : int32_t { CPU = 0, CUDA = 1 };

struct Device {
  DeviceType type = DeviceType::CPU;
  int32_t index = -1;

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device&) const = default;
  std::string str() const;
};

inline Device cpu_device() { return Device{DeviceType::CPU, -1}; }

// A Device from the (type, index) pair generated code passes; throws
// kInvalidArgument for a device type aotrt does not serve.
Device make_device(int32_t device_type, int32_t device_index, const char* what);

}  // namespace aotrt
