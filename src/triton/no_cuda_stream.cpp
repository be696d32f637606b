// CudaStream of a build without CUDA: a KIND_GPU instance is refused.
#include "aotrt/error.h"
#include "triton/cuda_stream.h"

namespace aotrt::triton {

CudaStream::CudaStream(int device_index) : device_index_(device_index) {
  AOTRT_FAIL(kUnsupported, "a KIND_GPU instance on GPU ", device_index,
             ": this aotrt was built without CUDA (configure with -DAOTRT_CUDA=ON)");
}

CudaStream::~CudaStream() = default;

CurrentStream::CurrentStream(const CudaStream&) {
  AOTRT_FAIL(kUnsupported, "CUDA streams: this aotrt was built without CUDA");
}

CurrentStream::~CurrentStream() = default;

}  // namespace aotrt::triton
