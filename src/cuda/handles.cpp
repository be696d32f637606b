#include "cuda/handles.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "core/error.h"

namespace aotrt::cuda {

namespace detail {

void cublas_fail(cublasStatus_t status, const char* expr, const char* file, int line) {
  AOTRT_FAIL(kBackend, expr, " failed: ", cublasGetStatusName(status), " (",
             cublasGetStatusString(status), ") (", file, ":", line, ")");
}

void cudnn_fail(cudnnStatus_t status, const char* expr, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  AOTRT_FAIL(kBackend, expr, " failed: ", cudnnGetErrorString(status),
             detail[0] ? " - " : "", detail, " (", file, ":", line, ")");
}

void cusolver_fail(cusolverStatus_t status, const char* expr, const char* file, int line) {
  AOTRT_FAIL(kBackend, expr, " failed: cusolverStatus_t ", static_cast<int>(status), " (", file,
             ":", line, ")");
}

}  // namespace detail

bool cudnn_rejects(cudnnStatus_t status) {
  const int category = static_cast<int>(status) / 1000 * 1000;
  return category == CUDNN_STATUS_BAD_PARAM || category == CUDNN_STATUS_NOT_SUPPORTED;
}

// --- Handles --------------------------------------------------------------------------

namespace {

// One thread's handles, indexed by device. Destroyed at thread exit, which for
// the main thread is before the CUDA runtime's own teardown (thread_local
// destructors run first in exit()); errors there are ignored.
struct ThreadHandles {
  std::vector<cublasHandle_t> cublas;
  std::vector<cublasLtHandle_t> cublaslt;
  std::vector<cudnnHandle_t> cudnn;
  std::vector<SolverHandle> cusolver;
  // The stream each handle is bound to: binding again costs host time
  // (cublasSetStream also resets the handle's workspace), so it is done only
  // when the stream changes.
  std::vector<std::optional<cudaStream_t>> cublas_stream, cudnn_stream, cusolver_stream;
  // Note [cuBLASLt workspace]. Declared after the handles, so freed before
  // them; freeing only returns the blocks to the allocator's cache.
  struct WorkspaceSlot {
    int device = -1;
    cudaStream_t stream = nullptr;
    DeviceBuffer buffer;
    uint64_t last_use = 0;
  };
  std::array<WorkspaceSlot, kLtWorkspaceSlots> lt_workspaces;
  uint64_t lt_workspace_clock = 0;
  uint64_t streams_forgotten_seen = 0;  // g_streams_forgotten when the slots were last checked
  std::vector<size_t> lt_workspace_bytes;  // per device; 0: not asked yet

  ~ThreadHandles() {
    for (size_t d = 0; d < cublas.size(); ++d) {
      if (cublas[d]) (void)cublasDestroy(cublas[d]);
    }
    for (size_t d = 0; d < cublaslt.size(); ++d) {
      if (cublaslt[d]) (void)cublasLtDestroy(cublaslt[d]);
    }
    for (size_t d = 0; d < cudnn.size(); ++d) {
      if (cudnn[d]) (void)cudnnDestroy(cudnn[d]);
    }
    for (SolverHandle& s : cusolver) {
      if (s.gesvdj) (void)cusolverDnDestroyGesvdjInfo(s.gesvdj);
      if (s.params) (void)cusolverDnDestroyParams(s.params);
      if (s.handle) (void)cusolverDnDestroy(s.handle);
    }
  }
};

thread_local ThreadHandles t_handles;
std::atomic<uint64_t> g_streams_forgotten{0};  // Note [A stream that goes away]

template <typename H>
H& slot(std::vector<H>& handles, int device_index) {
  AOTRT_CHECK(device_index >= 0, kInternal, "library handle asked for device ", device_index);
  if (handles.size() <= static_cast<size_t>(device_index)) {
    handles.resize(static_cast<size_t>(device_index) + 1, H{});
  }
  return handles[static_cast<size_t>(device_index)];
}

}  // namespace

cublasHandle_t cublas_handle(int device_index, cudaStream_t stream) {
  cublasHandle_t& h = slot(t_handles.cublas, device_index);
  if (!h) {
    DeviceGuard guard(device_index);
    AOTRT_CUBLAS_CHECK(cublasCreate(&h));
    // TF32 is chosen per call through the compute type (Note [TF32]); the
    // handle's math mode must not add it behind our back.
    AOTRT_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  }
  std::optional<cudaStream_t>& bound = slot(t_handles.cublas_stream, device_index);
  if (bound != stream) {
    AOTRT_CUBLAS_CHECK(cublasSetStream(h, stream));
    bound = stream;
  }
  return h;
}

cublasLtHandle_t cublaslt_handle(int device_index) {
  cublasLtHandle_t& h = slot(t_handles.cublaslt, device_index);
  if (!h) {
    DeviceGuard guard(device_index);
    AOTRT_CUBLAS_CHECK(cublasLtCreate(&h));
  }
  return h;
}

size_t cublaslt_workspace_bytes(int device_index) {
  size_t& bytes = slot(t_handles.lt_workspace_bytes, device_index);
  if (bytes == 0) {
    int major = 0;
    AOTRT_CUDA_CHECK(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index));
    bytes = major >= 9 ? size_t{32} << 20 : size_t{4} << 20;
  }
  return bytes;
}

LtWorkspace cublaslt_workspace(int device_index, cudaStream_t stream, size_t need,
                               DeviceBuffer& scratch) {
  if (need == 0) return LtWorkspace{};
  auto& slots = t_handles.lt_workspaces;
  const uint64_t forgotten = g_streams_forgotten.load(std::memory_order_acquire);
  if (forgotten != t_handles.streams_forgotten_seen) {
    // A slot may name a destroyed stream whose handle a new one now has (Note [A stream
    // that goes away]): all go back to the cache, stream-ordered as any free.
    for (auto& slot : slots) slot = ThreadHandles::WorkspaceSlot{};
    t_handles.streams_forgotten_seen = forgotten;
  }
  const uint64_t now = ++t_handles.lt_workspace_clock;
  ThreadHandles::WorkspaceSlot* victim = &slots[0];
  for (auto& slot : slots) {
    if (slot.device == device_index && slot.stream == stream) {
      slot.last_use = now;
      if (slot.buffer.nbytes() >= need) return LtWorkspace{slot.buffer.data(), slot.buffer.nbytes()};
      victim = &slot;  // grows: a larger need than this stream met so far
      break;
    }
    if (slot.last_use < victim->last_use) victim = &slot;
  }
  AOTRT_CHECK(stream == current_cuda_stream(device_index), kInternal,
              "cuBLASLt workspace asked for a stream that is not device ", device_index,
              "'s current one");
  if (is_private_pool(device_index, stream)) {
    scratch = DeviceBuffer(device_index, need);
    return LtWorkspace{scratch.data(), scratch.nbytes()};
  }
  // The old buffer goes back to the cache before the new one is taken, so a
  // thread cycling through streams reuses it.
  victim->buffer = DeviceBuffer();
  victim->device = -1;
  victim->buffer = DeviceBuffer(device_index, need);
  victim->device = device_index;
  victim->stream = stream;
  victim->last_use = now;
  return LtWorkspace{victim->buffer.data(), victim->buffer.nbytes()};
}

void forget_stream_workspaces() noexcept { g_streams_forgotten.fetch_add(1, std::memory_order_release); }

cudnnHandle_t cudnn_handle(int device_index, cudaStream_t stream) {
  cudnnHandle_t& h = slot(t_handles.cudnn, device_index);
  if (!h) {
    DeviceGuard guard(device_index);
    AOTRT_CUDNN_CHECK(cudnnCreate(&h));
  }
  std::optional<cudaStream_t>& bound = slot(t_handles.cudnn_stream, device_index);
  if (bound != stream) {
    AOTRT_CUDNN_CHECK(cudnnSetStream(h, stream));
    bound = stream;
  }
  return h;
}

void* SolverHandle::host_workspace(size_t bytes) {
  if (host.size() < bytes) host.resize(bytes);
  return host.empty() ? nullptr : host.data();
}

SolverHandle& cusolver_handle(int device_index, cudaStream_t stream) {
  SolverHandle& h = slot(t_handles.cusolver, device_index);
  if (!h.handle) {
    DeviceGuard guard(device_index);
    AOTRT_CUSOLVER_CHECK(cusolverDnCreate(&h.handle));
    AOTRT_CUSOLVER_CHECK(cusolverDnCreateParams(&h.params));
    AOTRT_CUSOLVER_CHECK(cusolverDnCreateGesvdjInfo(&h.gesvdj));
  }
  std::optional<cudaStream_t>& bound = slot(t_handles.cusolver_stream, device_index);
  if (bound != stream) {
    AOTRT_CUSOLVER_CHECK(cusolverDnSetStream(h.handle, stream));
    bound = stream;
  }
  return h;
}

// --- TF32 -----------------------------------------------------------------------------

namespace {

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "false") == 0 ||
           std::strcmp(v, "FALSE") == 0 || std::strcmp(v, "off") == 0);
}

std::atomic<bool>& matmul_tf32() {
  static std::atomic<bool> flag{env_flag("AOTRT_ALLOW_TF32", false)};
  return flag;
}

std::atomic<bool>& conv_tf32() {
  static std::atomic<bool> flag{env_flag("AOTRT_CUDNN_ALLOW_TF32", true)};
  return flag;
}

}  // namespace

bool matmul_allows_tf32() { return matmul_tf32().load(std::memory_order_relaxed); }
bool conv_allows_tf32() { return conv_tf32().load(std::memory_order_relaxed); }
void set_matmul_allows_tf32(bool allow) { matmul_tf32().store(allow); }
void set_conv_allows_tf32(bool allow) { conv_tf32().store(allow); }

// --- Copies around library calls --------------------------------------------------------

namespace {
thread_local uint64_t t_pack_count = 0;
}  // namespace

uint64_t pack_count() { return t_pack_count; }

PackedInput pack_for_library(const StridedView& src, cudaStream_t stream) {
  PackedInput packed = pack_if_needed(src, stream);
  if (packed.buffer.data() != nullptr) ++t_pack_count;
  return packed;
}

void gather_for_library(void* dense_dst, const StridedView& src, cudaStream_t stream) {
  ++t_pack_count;
  gather(dense_dst, src, stream);
}

void scatter_for_library(const StridedView& dst, const void* dense_src, cudaStream_t stream) {
  ++t_pack_count;
  scatter(dst, dense_src, stream);
}

void copy_for_library(const StridedView& dst, const StridedView& src, cudaStream_t stream) {
  ++t_pack_count;
  copy_device(dst, src, stream);
}

uint32_t pointer_alignment(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

cudaDataType_t cuda_data_type(ScalarType t, const char* what) {
  switch (t) {
    case ScalarType::Float32: return CUDA_R_32F;
    case ScalarType::Float16: return CUDA_R_16F;
    case ScalarType::BFloat16: return CUDA_R_16BF;
    case ScalarType::Float64: return CUDA_R_64F;
    default:
      AOTRT_FAIL(kUnsupported, what, ": dtype ", dtype_name(t),
                 " is not served on CUDA (float32, float64, float16 and bfloat16 are)");
  }
}

cudnnDataType_t cudnn_data_type(ScalarType t, const char* what) {
  switch (t) {
    case ScalarType::Float32: return CUDNN_DATA_FLOAT;
    case ScalarType::Float16: return CUDNN_DATA_HALF;
    case ScalarType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case ScalarType::Float64: return CUDNN_DATA_DOUBLE;
    default:
      AOTRT_FAIL(kUnsupported, what, ": dtype ", dtype_name(t),
                 " is not served on CUDA (float32, float64, float16 and bfloat16 are)");
  }
}

}  // namespace aotrt::cuda
