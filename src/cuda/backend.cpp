// What the core asks of the CUDA backend (cuda/cuda.h): copies between any
// two views where at least one side is CUDA memory, and fills.
//
// Note [Host-device copies]
// Everything runs on the current stream of the CUDA side.
//  - dtypes are converted where ATen converts them: on the CPU for a copy
//    between CPU and CUDA, on the source device between two CUDA devices (the
//    two backends differ for NaN and out-of-range float-to-integer values, as
//    ATen's do: Note [Float to integer conversion on CUDA]).
//  - host -> device: the host bytes travel as they are when the source's span
//    holds no gaps (dense, or broadcast) and no conversion is needed;
//    otherwise they are packed (and converted) on the host first with
//    cpu::copy_strided. They land directly in the destination when it has the
//    same dense layout, else in a device temporary that is then scattered
//    into the destination. A pageable source is staged by cudaMemcpyAsync
//    before it returns; a pinned one is waited for, as ATen's blocking copy_
//    does, since the caller may reuse it at once.
//  - device -> host: gathered on the device into a temporary laid out like a
//    dense destination, or row-major otherwise; one cudaMemcpyAsync, then
//    cudaStreamSynchronize, because the host reads the result next (the only
//    host wait in the backend); a non-dense or other-dtype destination is
//    filled from a host temporary with cpu::copy_strided.
//  - device -> other device: dense temporaries on both sides and
//    cudaMemcpyPeerAsync on the destination's stream, ordered against the
//    source's stream with events both ways (the source temporary returns to
//    its stream's cache, so that stream must not run ahead of the peer copy).
#include <dlfcn.h>

#include <string>

#include <memory>
#include <vector>

#include "core/view.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "cuda/runtime.h"

namespace aotrt::cuda {
namespace {

bool dense(const StridedView& v) { return is_non_overlapping_and_dense(v.sizes, v.strides); }

// Same strides in every dim of size > 1: the same bytes in the same places.
bool same_layout(const StridedView& a, const StridedView& b) {
  if (a.sizes.size() != b.sizes.size()) return false;
  for (size_t i = 0; i < a.sizes.size(); ++i) {
    if (a.sizes[i] != b.sizes[i]) return false;
    if (a.sizes[i] > 1 && a.strides[i] != b.strides[i]) return false;
  }
  return true;
}

// Elements from a view's first element to one past its last.
int64_t span_elements(const StridedView& v) {
  return view_span(v.sizes, v.strides, 0, v.itemsize(), "cuda::copy").end_elem;
}

bool is_pinned_host(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

// An event of one device, destroyed with its scope (a pending one is
// released by the driver once it completes).
class Event {
 public:
  explicit Event(int device) {
    DeviceGuard guard(device);
    AOTRT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ~Event() {
    if (cudaEventDestroy(event_) != cudaSuccess) (void)cudaGetLastError();
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

void host_to_device(const StridedView& dst, const StridedView& src) {
  const int device = dst.device.index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_cuda_stream(device);

  // Pack (and convert) on the host when the span has gaps or dtypes differ.
  StridedView shipped = src;
  std::vector<int64_t> packed_strides;
  std::unique_ptr<char[]> packed;
  if (span_elements(src) > src.numel() || dst.dtype != src.dtype) {
    packed_strides = contiguous_strides(src.sizes);
    packed.reset(new char[static_cast<size_t>(src.numel()) * dst.itemsize()]);
    shipped = StridedView{packed.get(), src.sizes, packed_strides, dst.dtype, src.device};
    cpu::copy_strided(shipped, src);
  }
  const size_t nbytes = static_cast<size_t>(span_elements(shipped)) * shipped.itemsize();
  const bool wait = packed == nullptr && is_pinned_host(src.data);

  if (dense(dst) && dense(shipped) && same_layout(dst, shipped)) {
    AOTRT_CUDA_CHECK(
        cudaMemcpyAsync(dst.data, shipped.data, nbytes, cudaMemcpyHostToDevice, stream));
  } else {
    DeviceBuffer staged(device, nbytes);
    AOTRT_CUDA_CHECK(
        cudaMemcpyAsync(staged.data(), shipped.data, nbytes, cudaMemcpyHostToDevice, stream));
    copy_device(dst,
                StridedView{static_cast<char*>(staged.data()), shipped.sizes, shipped.strides,
                            shipped.dtype, dst.device},
                stream);
  }
  if (wait) AOTRT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void device_to_host(const StridedView& dst, const StridedView& src) {
  const int device = src.device.index;
  DeviceGuard guard(device);
  const cudaStream_t stream = current_cuda_stream(device);
  const auto numel = static_cast<size_t>(src.numel());

  if (dst.dtype == src.dtype && dense(dst) && dense(src) && same_layout(dst, src)) {
    AOTRT_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, numel * src.itemsize(),
                                     cudaMemcpyDeviceToHost, stream));
    AOTRT_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  // Lay the temporary out like a dense destination so that one memcpy lands
  // it; conversions happen on the host.
  const ScalarType dtype = src.dtype;
  const bool direct = dtype == dst.dtype && dense(dst);
  const std::vector<int64_t> strides =
      direct ? std::vector<int64_t>(dst.strides.begin(), dst.strides.end())
             : contiguous_strides(src.sizes);
  const size_t nbytes = numel * element_size(dtype);
  DeviceBuffer staged(device, nbytes);
  const StridedView staged_view{static_cast<char*>(staged.data()), src.sizes, strides, dtype,
                                src.device};
  copy_device(staged_view, src, stream);
  if (direct) {
    AOTRT_CUDA_CHECK(
        cudaMemcpyAsync(dst.data, staged.data(), nbytes, cudaMemcpyDeviceToHost, stream));
    AOTRT_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  std::unique_ptr<char[]> host(new char[nbytes]);
  AOTRT_CUDA_CHECK(
      cudaMemcpyAsync(host.get(), staged.data(), nbytes, cudaMemcpyDeviceToHost, stream));
  AOTRT_CUDA_CHECK(cudaStreamSynchronize(stream));
  cpu::copy_strided(dst, StridedView{host.get(), src.sizes, strides, dtype, cpu_device()});
}

void device_to_other_device(const StridedView& dst, const StridedView& src) {
  const int from = src.device.index, to = dst.device.index;
  const cudaStream_t from_stream = current_cuda_stream(from);
  const cudaStream_t to_stream = current_cuda_stream(to);
  const size_t nbytes = static_cast<size_t>(src.numel()) * src.itemsize();

  DeviceBuffer src_packed;
  const char* src_dense = src.data;
  if (!is_contiguous(src.sizes, src.strides)) {
    src_packed = DeviceBuffer(from, nbytes);
    gather(src_packed.data(), src, from_stream);
    src_dense = static_cast<const char*>(src_packed.data());
  }
  const bool direct = dst.dtype == src.dtype && is_contiguous(dst.sizes, dst.strides);
  DeviceBuffer dst_dense;
  if (!direct) dst_dense = DeviceBuffer(to, nbytes);
  char* landing = direct ? dst.data : static_cast<char*>(dst_dense.data());

  Event src_ready(from), copied(to);
  {
    DeviceGuard guard(from);
    AOTRT_CUDA_CHECK(cudaEventRecord(src_ready.get(), from_stream));
  }
  {
    DeviceGuard guard(to);
    AOTRT_CUDA_CHECK(cudaStreamWaitEvent(to_stream, src_ready.get(), 0));
    AOTRT_CUDA_CHECK(cudaMemcpyPeerAsync(landing, to, src_dense, from, nbytes, to_stream));
    AOTRT_CUDA_CHECK(cudaEventRecord(copied.get(), to_stream));
  }
  {
    DeviceGuard guard(from);
    AOTRT_CUDA_CHECK(cudaStreamWaitEvent(from_stream, copied.get(), 0));
  }
  if (!direct) {
    const std::vector<int64_t> strides = contiguous_strides(src.sizes);
    copy_device(dst, StridedView{landing, src.sizes, strides, src.dtype, dst.device}, to_stream);
  }
}

}  // namespace

bool built() { return true; }

void copy(const StridedView& dst, const StridedView& src) {
  AOTRT_CHECK(dst.sizes.size() == src.sizes.size(), kInternal, "cuda::copy: views of rank ",
              dst.sizes.size(), " and ", src.sizes.size());
  if (dst.numel() == 0) return;
  if (dst.device.is_cpu() && src.device.is_cpu()) {
    cpu::copy_strided(dst, src);
  } else if (dst.device.is_cuda() && src.device.is_cuda()) {
    if (dst.device == src.device) {
      DeviceGuard guard(dst.device.index);
      copy_device(dst, src, current_cuda_stream(dst.device.index));
    } else {
      device_to_other_device(dst, src);
    }
  } else if (dst.device.is_cuda()) {
    host_to_device(dst, src);
  } else {
    device_to_host(dst, src);
  }
}

void fill_zero(const StridedView& dst) {
  AOTRT_CHECK(dst.device.is_cuda(), kInternal, "cuda::fill_zero of a ", dst.device.str(),
              " view");
  fill_zero_device(dst, current_cuda_stream(dst.device.index));
}

void fill(const StridedView& dst, const void* element) {
  AOTRT_CHECK(dst.device.is_cuda(), kInternal, "cuda::fill of a ", dst.device.str(), " view");
  fill_device(dst, element, current_cuda_stream(dst.device.index));
}

// Note [CUDA symbols for model .so files]
// A CUDA model .so exported without libtorch imports the driver API (its
// Triton kernels) and cudart, and binds them at dlopen from the global
// scope. libcudart is aotrt's own dependency, but aotrt itself may have been
// loaded locally, and libcuda may not be linked at all on a build machine
// without a driver; so both are opened here with RTLD_GLOBAL.
void expose_runtime_symbols() {
  static const std::string error = [] {
    if (::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* e = ::dlerror();
      return std::string("cannot load the CUDA driver library libcuda.so.1: ") +
             (e ? e : "unknown error");
    }
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&cudaGetDevice), &info) == 0 ||
        info.dli_fname == nullptr ||
        ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == nullptr) {
      return std::string("cannot make aotrt's CUDA runtime library global");
    }
    return std::string();
  }();
  AOTRT_CHECK(error.empty(), kBackend, error);
}

void* current_stream(int device_index) {
  if (device_index < 0) device_index = current_device();
  return current_cuda_stream(device_index);
}

}  // namespace aotrt::cuda
