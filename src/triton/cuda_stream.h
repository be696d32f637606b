// The CUDA stream a KIND_GPU model instance runs on. A build without CUDA
// links no_cuda_stream.cpp, whose CudaStream says that CUDA was not built.
#pragma once

namespace aotrt::triton {

// A non-blocking stream of one device, destroyed with the object.
class CudaStream {
 public:
  explicit CudaStream(int device_index);
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  int device_index() const { return device_index_; }
  void* handle() const { return stream_; }

 private:
  int device_index_;
  void* stream_ = nullptr;  // cudaStream_t
};

// While it lives, `stream` is the calling thread's current stream of its
// device and that device the current device (aotrt's stream guard, so a
// model run and aotrt's copies queue on it); the previous ones come back after.
class CurrentStream {
 public:
  explicit CurrentStream(const CudaStream& stream);
  ~CurrentStream();
  CurrentStream(const CurrentStream&) = delete;
  CurrentStream& operator=(const CurrentStream&) = delete;

 private:
  void* guard_ = nullptr;
};

}  // namespace aotrt::triton
