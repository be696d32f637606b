// What the CUDA library ops (matmul.cpp, conv.cpp, attention.cu, ops/linalg.cu)
// share: one cuBLAS, cuBLASLt, cuDNN and cuSOLVER handle per device per
// thread, one check macro per library, the TF32 policy, and the helpers through which those ops copy an
// operand or a result (and count it).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>
#include <cusolverDn.h>

#include <cstdint>
#include <vector>

#include "cuda/runtime.h"

// Quote the failing call, file and line, as AOTRT_CUDA_CHECK does.
#define AOTRT_CUBLAS_CHECK(expr)                                                        \
  do {                                                                                  \
    const cublasStatus_t aotrt_status_ = (expr);                                        \
    if (aotrt_status_ != CUBLAS_STATUS_SUCCESS) {                                       \
      ::aotrt::cuda::detail::cublas_fail(aotrt_status_, #expr, __FILE__, __LINE__);     \
    }                                                                                   \
  } while (0)

#define AOTRT_CUDNN_CHECK(expr)                                                         \
  do {                                                                                  \
    const cudnnStatus_t aotrt_status_ = (expr);                                         \
    if (aotrt_status_ != CUDNN_STATUS_SUCCESS) {                                        \
      ::aotrt::cuda::detail::cudnn_fail(aotrt_status_, #expr, __FILE__, __LINE__);      \
    }                                                                                   \
  } while (0)

#define AOTRT_CUSOLVER_CHECK(expr)                                                      \
  do {                                                                                  \
    const cusolverStatus_t aotrt_status_ = (expr);                                      \
    if (aotrt_status_ != CUSOLVER_STATUS_SUCCESS) {                                     \
      ::aotrt::cuda::detail::cusolver_fail(aotrt_status_, #expr, __FILE__, __LINE__);   \
    }                                                                                   \
  } while (0)

namespace aotrt::cuda {

namespace detail {
[[noreturn]] void cublas_fail(cublasStatus_t status, const char* expr, const char* file,
                              int line);
[[noreturn]] void cudnn_fail(cudnnStatus_t status, const char* expr, const char* file,
                             int line);
[[noreturn]] void cusolver_fail(cusolverStatus_t status, const char* expr, const char* file,
                                int line);
}  // namespace detail

// True for the cuDNN statuses that mean "this layout or shape is not served"
// (the BAD_PARAM and NOT_SUPPORTED families), after which a caller may pack
// its operands and try again; every other failure is an error.
bool cudnn_rejects(cudnnStatus_t status);

// --- Handles --------------------------------------------------------------------------
// The calling thread's handle for a device, created on first use (with that
// device current) and destroyed when the thread ends. cublas_handle and
// cudnn_handle bind the handle to `stream` on every call, so a library call
// always runs on the stream the caller passes (the current stream).
cublasHandle_t cublas_handle(int device_index, cudaStream_t stream);
cublasLtHandle_t cublaslt_handle(int device_index);

// Note [cuBLASLt workspace]
// cublasLtMatmul takes its workspace (split-K partials, counters) as an
// argument. The calling thread keeps one per (device, stream), from the
// caching allocator, made on the first GEMM on that stream and kept, so a
// steady-state GEMM neither allocates nor records the allocator's free event.
// Calls on one stream run in order, so every plan on it can share the one
// buffer. Plans ask the heuristic for algorithms that fit cuBLAS's own
// recommendation (and ATen's choice), 32 MiB on Hopper and later, 4 MiB
// before, and keep what the chosen algorithm needs; the buffer is as large as
// the largest need met on its stream so far (grown, never shrunk; none while
// no algorithm needs any), so small GEMMs cost no workspace memory: eager
// PyTorch pays none for the 1x1 convolutions it runs on cuDNN, which aotrt
// runs as GEMMs. At most kLtWorkspaceSlots streams per thread keep one: past
// that the least recently used goes back to the cache (stream-ordered, so
// kernels still queued keep it until they ran).
// A CUDA graph's private stream (Note [Private pools for graph capture]) keeps
// none: it dies with its graph, which needs all its blocks back then, so each
// GEMM on it takes `scratch` from the private pool for the call (no free
// event there); only warm-up and capture runs call GEMMs on it.
// `stream` must be the device's current stream: the allocator tags the block
// with it.
inline constexpr size_t kLtWorkspaceSlots = 8;
struct LtWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
};
LtWorkspace cublaslt_workspace(int device_index, cudaStream_t stream, size_t need,
                               DeviceBuffer& scratch);
// A stream went away (Note [A stream that goes away] in cuda/runtime.h): every thread drops
// its workspaces at its next cublaslt_workspace call.
void forget_stream_workspaces() noexcept;
// The most workspace a plan of that device may need.
size_t cublaslt_workspace_bytes(int device_index);
cudnnHandle_t cudnn_handle(int device_index, cudaStream_t stream);

// cuSOLVER's dense handle with what its calls need beside it: the 64-bit
// API's params, gesvdj's parameters (default tolerance and sweeps), and a
// host workspace (the X API's bufferOnHost) that grows and is kept.
struct SolverHandle {
  cusolverDnHandle_t handle = nullptr;
  cusolverDnParams_t params = nullptr;
  gesvdjInfo_t gesvdj = nullptr;
  // At least `bytes` of host workspace, owned by the handle.
  void* host_workspace(size_t bytes);
  std::vector<char> host;
};
SolverHandle& cusolver_handle(int device_index, cudaStream_t stream);

// --- TF32 -----------------------------------------------------------------------------
// Note [TF32]
// PyTorch's defaults, which aotrt matches so that a model computes what it
// computes in eager: fp32 matmuls do NOT use TF32
// (torch.backends.cuda.matmul.allow_tf32 = False: cuBLAS runs with
// CUBLAS_COMPUTE_32F), while fp32 convolutions DO
// (torch.backends.cudnn.allow_tf32 = True: cuDNN runs with CUDNN_DEFAULT_MATH,
// which lets it pick TF32 tensor-core kernels). The environment changes
// either at process start: AOTRT_ALLOW_TF32=1 allows TF32 in matmuls
// (CUBLAS_COMPUTE_32F_FAST_TF32), AOTRT_CUDNN_ALLOW_TF32=0 forbids it in
// convolutions (CUDNN_FMA_MATH). fp16 and bf16 always accumulate in fp32.
bool matmul_allows_tf32();
bool conv_allows_tf32();
void set_matmul_allows_tf32(bool allow);
void set_conv_allows_tf32(bool allow);

// --- Copies around library calls --------------------------------------------------------
// Every copy a library op makes of an operand (a gather into a dense buffer)
// or of a result (a scatter from a temporary into a strided view) goes
// through these, which add one to pack_count() (runtime.h).
PackedInput pack_for_library(const StridedView& src, cudaStream_t stream);
void gather_for_library(void* dense_dst, const StridedView& src, cudaStream_t stream);
void scatter_for_library(const StridedView& dst, const void* dense_src, cudaStream_t stream);
void copy_for_library(const StridedView& dst, const StridedView& src, cudaStream_t stream);

// Largest power of two (at most 256) that divides the address: the
// alignment cuBLASLt heuristics must be told about.
uint32_t pointer_alignment(const void* p);

// cudaDataType of a floating dtype aotrt's library ops serve (fp32, fp16,
// bf16); throws kUnsupported naming `what` for any other.
cudaDataType_t cuda_data_type(ScalarType t, const char* what);
cudnnDataType_t cudnn_data_type(ScalarType t, const char* what);

}  // namespace aotrt::cuda
