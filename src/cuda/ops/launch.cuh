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

// Note [Early start]
// On sm_90 and later a kernel may be launched to start while the kernel before it on the
// stream is finishing (programmatic dependent launch): its blocks are scheduled as that
// kernel's blocks retire, and run what does not depend on it - loading weights, which no
// kernel of a run writes - until grid_dependency_wait(), which returns once the previous
// grid has completed and its writes are visible. A kernel launched so must wait before its
// first read of anything an earlier kernel writes (activations; an L1 prefetch counts: a
// line fetched early would be stale) and before its first global write (the previous kernel
// may still read the memory it writes). Launched plainly, the wait returns at once. A CUDA
// graph captured from such launches keeps the overlap as programmatic edges. After its last
// read of weights a kernel calls allow_early_start(), so that the next one, if launched so,
// may start its own loads. Served: the GEMV kernels of decode steps, int4 weight-only (Note
// [Int4 matmul kernels]) and float16/bfloat16 (Note [Decode GEMV]), when AOTRT_EARLY_START=1
// (early_start_enabled); off by default until measured in a decode step.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_early_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Launches `kernel` with clusters of `cluster` blocks when it has more than one, and to start
// early (Note [Early start]) when `early_start` and the device is sm_90 or later (`capability`).
template <typename Kernel, typename... Args>
void launch_with_clusters(Kernel kernel, dim3 grid, int threads, size_t smem, dim3 cluster,
                          bool early_start, int capability, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[2];
  unsigned n = 0;
  if (cluster.x * cluster.y * cluster.z > 1) {
    attribute[n].id = cudaLaunchAttributeClusterDimension;
    attribute[n].val.clusterDim.x = cluster.x;
    attribute[n].val.clusterDim.y = cluster.y;
    attribute[n].val.clusterDim.z = cluster.z;
    ++n;
  }
  if (early_start && capability >= 90) {
    attribute[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  config.attrs = n > 0 ? attribute : nullptr;
  config.numAttrs = n;
  AOTRT_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

}  // namespace aotrt::cuda::launch
