// AOTRT_HOST_DEVICE marks a function that CUDA kernels call as well as host
// code (philox.h, ops/special_math.h): __host__ __device__ under nvcc,
// nothing otherwise.
#pragma once

#if defined(__CUDACC__)
#define AOTRT_HOST_DEVICE __host__ __device__
#else
#define AOTRT_HOST_DEVICE
#endif
