// The CUDA shims of aotrt/shim_cuda.h: device and stream guards, the current
// stream, raw caching-allocator memory. See Note [Current stream] in
// cuda/stream.cpp.
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "aotrt/shim_cuda.h"
#include "cuda/runtime.h"
#include "shim/boundary.h"

using namespace aotrt;

// What a guard restores when it is deleted.
struct CUDAGuardOpaque {
  int original_device;
};
struct CUDAStreamGuardOpaque {
  int original_device;
  int device;
  cudaStream_t original_stream;
};

namespace {

// Live guards, so that a deleted or made-up handle is refused rather than
// dereferenced (as the tensor handle registry does for tensors).
template <typename Guard>
class GuardRegistry {
 public:
  Guard* add(Guard* g) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(g);
    return g;
  }
  Guard* get(Guard* g, const char* fn) {
    std::lock_guard<std::mutex> lock(mu_);
    AOTRT_CHECK(g != nullptr && live_.count(g) != 0, kInvalidHandle, fn, ": guard ",
                static_cast<const void*>(g),
                g == nullptr ? " is null" : " is not a live guard (deleted already?)");
    return g;
  }
  void remove(Guard* g) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(g);
  }

 private:
  std::mutex mu_;
  std::unordered_set<Guard*> live_;
};

GuardRegistry<CUDAGuardOpaque>& cuda_guards() {
  static auto* r = new GuardRegistry<CUDAGuardOpaque>();
  return *r;
}
GuardRegistry<CUDAStreamGuardOpaque>& stream_guards() {
  static auto* r = new GuardRegistry<CUDAStreamGuardOpaque>();
  return *r;
}

int resolve_index(int32_t device_index, const char* fn) {
  if (device_index == -1) return cuda::current_device();
  cuda::check_device_index(device_index, fn);
  return device_index;
}

void switch_device(int device) {
  if (cuda::current_device() != device) cuda::set_current_device(device);
}

// Raw blocks handed out by raw_alloc: their device and size.
struct RawBlocks {
  std::mutex mu;
  std::unordered_map<void*, std::pair<int, size_t>> blocks;
};
RawBlocks& raw_blocks() {
  static auto* r = new RawBlocks();
  return *r;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_create_cuda_guard";
    AOTRT_CHECK_OUT(ret_guard, fn);
    const int original = cuda::current_device();
    const int device = resolve_index(device_index, fn);
    switch_device(device);
    *ret_guard = cuda_guards().add(new CUDAGuardOpaque{original});
  });
}

AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_delete_cuda_guard";
    CUDAGuardOpaque* g = cuda_guards().get(guard, fn);
    cuda_guards().remove(g);
    const int original = g->original_device;
    delete g;
    switch_device(original);
  });
}

AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_cuda_guard_set_index";
    cuda_guards().get(guard, fn);
    switch_device(resolve_index(device_index, fn));
  });
}

AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                   CUDAStreamGuardHandle* ret_guard) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_create_cuda_stream_guard";
    AOTRT_CHECK_OUT(ret_guard, fn);
    const int original = cuda::current_device();
    const int device = resolve_index(device_index, fn);
    auto* g = new CUDAStreamGuardOpaque{original, device, cuda::current_cuda_stream(device)};
    try {
      switch_device(device);
    } catch (...) {
      delete g;
      throw;
    }
    cuda::set_current_cuda_stream(device, static_cast<cudaStream_t>(stream));
    *ret_guard = stream_guards().add(g);
  });
}

AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_delete_cuda_stream_guard";
    CUDAStreamGuardOpaque* g = stream_guards().get(guard, fn);
    stream_guards().remove(g);
    const CUDAStreamGuardOpaque saved = *g;
    delete g;
    cuda::set_current_cuda_stream(saved.device, saved.original_stream);
    switch_device(saved.original_device);
  });
}

AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_get_current_cuda_stream";
    AOTRT_CHECK_OUT(ret_stream, fn);
    *ret_stream = cuda::current_cuda_stream(resolve_index(device_index, fn));
  });
}

AOTITorchError aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t nbytes, void** ret_ptr) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_cuda_caching_allocator_raw_alloc";
    AOTRT_CHECK_OUT(ret_ptr, fn);
    *ret_ptr = nullptr;
    if (nbytes == 0) return;
    const int device = cuda::current_device();
    Allocator& allocator = cuda::allocator(device);
    void* p = allocator.allocate(static_cast<size_t>(nbytes));
    try {
      RawBlocks& raw = raw_blocks();
      std::lock_guard<std::mutex> lock(raw.mu);
      raw.blocks.emplace(p, std::make_pair(device, static_cast<size_t>(nbytes)));
    } catch (...) {
      allocator.deallocate(p, static_cast<size_t>(nbytes));
      throw;
    }
    *ret_ptr = p;
  });
}

AOTITorchError aoti_torch_cuda_caching_allocator_raw_delete(void* ptr) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_cuda_caching_allocator_raw_delete";
    if (ptr == nullptr) return;
    std::pair<int, size_t> block;
    {
      RawBlocks& raw = raw_blocks();
      std::lock_guard<std::mutex> lock(raw.mu);
      auto it = raw.blocks.find(ptr);
      AOTRT_CHECK(it != raw.blocks.end(), kInvalidArgument, fn, ": pointer ", ptr,
                  " did not come from aoti_torch_cuda_caching_allocator_raw_alloc "
                  "(or was freed already)");
      block = it->second;
      raw.blocks.erase(it);
    }
    cuda::allocator(block.first).deallocate(ptr, block.second);
  });
}

}  // extern "C"
