// What the rest of aotrt asks of the CUDA backend. A build without CUDA links
// cuda/no_cuda.cpp instead, whose functions say that CUDA was not built.
#pragma once

#include "core/allocator.h"
#include "core/tensor.h"

namespace aotrt::cuda {

// True when aotrt was built with the CUDA backend.
bool built();

// The caching allocator of one device.
Allocator& allocator(int device_index);

// The calling thread's current device (cudaGetDevice).
int current_device();

// The calling thread's current stream on a device, as the cudaStream_t a CUDA
// model's Run takes (nullptr: the legacy default stream).
void* current_stream(int device_index);

// Copies between any two same-sized strided views where at least one side
// is CUDA memory, converting dtypes, on the current stream of the CUDA side.
// Host memory on the other side is staged; nothing waits for the host
// except a device-to-host copy into memory the caller reads next.
void copy(const StridedView& dst, const StridedView& src);

// Makes the CUDA driver and runtime symbols a model .so imports (cuModuleLoadData,
// cuLaunchKernel, cudaMalloc, ...) visible to it: dlopens libcuda.so.1 and
// aotrt's libcudart with RTLD_GLOBAL. Called before a CUDA model is dlopened;
// throws kBackend naming the library when the driver is absent.
void expose_runtime_symbols();

// Writes zero to every element of a CUDA view, on the current stream.
void fill_zero(const StridedView& dst);

}  // namespace aotrt::cuda
