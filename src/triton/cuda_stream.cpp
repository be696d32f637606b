#include "triton/cuda_stream.h"

#include <cuda_runtime_api.h>

#include "aotrt/aotrt.h"
#include "aotrt/error.h"
#include "aotrt/shim_cuda.h"

namespace aotrt::triton {
namespace {

#define CHECK_CUDA(call)                                                              \
  do {                                                                                \
    const cudaError_t status_ = (call);                                               \
    AOTRT_CHECK(status_ == cudaSuccess, kBackend, #call, " failed: ",                 \
                cudaGetErrorString(status_), " (", __FILE__, ":", __LINE__, ")");     \
  } while (0)

}  // namespace

CudaStream::CudaStream(int device_index) : device_index_(device_index) {
  int previous = 0;
  CHECK_CUDA(cudaGetDevice(&previous));
  CHECK_CUDA(cudaSetDevice(device_index));
  cudaStream_t stream = nullptr;
  const cudaError_t status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaSetDevice(previous);
  AOTRT_CHECK(status == cudaSuccess, kBackend, "cudaStreamCreateWithFlags on cuda:", device_index,
              " failed: ", cudaGetErrorString(status));
  stream_ = stream;
}

CudaStream::~CudaStream() {
  if (stream_ == nullptr) return;
  cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  aotrt::forget_cuda_stream(aotrt::Device{aotrt::DeviceType::CUDA, device_index_}, stream_);
  cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

CurrentStream::CurrentStream(const CudaStream& stream) {
  CUDAStreamGuardHandle guard = nullptr;
  AOTRT_CHECK(aoti_torch_create_cuda_stream_guard(stream.handle(), stream.device_index(),
                                                  &guard) == AOTI_TORCH_SUCCESS,
              kBackend, "aoti_torch_create_cuda_stream_guard on cuda:", stream.device_index(),
              " failed: ", aotrt_last_error());
  guard_ = guard;
}

CurrentStream::~CurrentStream() {
  if (guard_ != nullptr) aoti_torch_delete_cuda_stream_guard(static_cast<CUDAStreamGuardHandle>(guard_));
}

}  // namespace aotrt::triton
