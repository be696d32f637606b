// Host-side launch facts of the tensor-core kernels (int4_tinygemm.cu,
// attention_decode.cu): a device's capability and SM count, how many blocks
// of a kernel an SM holds (their grids are sized to one wave), and a launch
// with thread-block clusters. Each fact is read once per device.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "cuda/runtime.h"

namespace aotrt::cuda::launch {

struct DeviceFacts {
  int capability = 0;  // 10 * major + minor
  int sms = 0;
};

inline DeviceFacts device_facts(int device) {
  static std::array<std::atomic<int64_t>, 64> cache{};  // capability << 32 | SMs; 0: unread
  const bool cached = device >= 0 && device < 64;
  int64_t v = cached ? cache[static_cast<size_t>(device)].load(std::memory_order_relaxed) : 0;
  if (v == 0) {
    int major = 0, minor = 0, sms = 0;
    AOTRT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    AOTRT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    AOTRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    v = (int64_t{10 * major + minor} << 32) | sms;
    if (cached) cache[static_cast<size_t>(device)].store(v, std::memory_order_relaxed);
  }
  return {static_cast<int>(v >> 32), static_cast<int>(v & 0xffffffff)};
}

// Blocks of `Kernel` (`threads` a block, `smem` dynamic bytes) an SM of
// `device` holds at once (at least 1), as the occupancy calculator says.
template <auto Kernel>
int resident_blocks(int threads, size_t smem, int device) {
  static std::array<std::atomic<int>, 64> cache{};
  const bool cached = device >= 0 && device < 64;
  int n = cached ? cache[static_cast<size_t>(device)].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    AOTRT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, threads, smem));
    n = n > 0 ? n : 1;
    if (cached) cache[static_cast<size_t>(device)].store(n, std::memory_order_relaxed);
  }
  return n;
}

// Launches `kernel` with clusters of `cluster` blocks when it has more than one.
template <typename Kernel, typename... Args>
void launch_with_clusters(Kernel kernel, dim3 grid, int threads, size_t smem, dim3 cluster,
                          cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  if (cluster.x * cluster.y * cluster.z > 1) {
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = cluster.x;
    attribute[0].val.clusterDim.y = cluster.y;
    attribute[0].val.clusterDim.z = cluster.z;
    config.attrs = attribute;
    config.numAttrs = 1;
  }
  AOTRT_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

}  // namespace aotrt::cuda::launch
