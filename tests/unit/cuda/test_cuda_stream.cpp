// Streams and guards (cuda/stream.cpp, cuda/guard_shims.cpp): the per-thread
// current stream, stream guards nesting and restoring, device guards, the
// raw allocator shims, and that work lands on the current stream.
#include <gtest/gtest.h>

#include <thread>

#include "aotrt/shim_cuda.h"
#include "cuda/cuda.h"
#include "cuda_test_util.h"

namespace aotrt::cuda::test {
namespace {

bool last_error_mentions(const std::string& text) {
  return std::string(aotrt_last_error()).find(text) != std::string::npos;
}

void* current_via_shim(int32_t device) {
  void* s = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(aoti_torch_get_current_cuda_stream(device, &s), AOTI_TORCH_SUCCESS);
  return s;
}

TEST(CudaStream, DefaultIsTheLegacyStream) {
  require_device();
  EXPECT_EQ(current_cuda_stream(0), nullptr);
  EXPECT_EQ(current_via_shim(0), nullptr);
  EXPECT_EQ(current_via_shim(-1), nullptr);
  EXPECT_EQ(current_stream(0), nullptr);
}

TEST(CudaStream, StreamGuardsNestAndRestore) {
  require_device();
  TestStream s1, s2;
  CUDAStreamGuardHandle outer = nullptr, inner = nullptr;
  ASSERT_EQ(aoti_torch_create_cuda_stream_guard(s1.get(), 0, &outer), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(current_via_shim(0), s1.get());
  EXPECT_EQ(current_cuda_stream(0), s1.get());
  EXPECT_EQ(current_stream(0), s1.get());
  EXPECT_EQ(current_device(), 0);
  ASSERT_EQ(aoti_torch_create_cuda_stream_guard(s2.get(), 0, &inner), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(current_via_shim(0), s2.get());
  ASSERT_EQ(aoti_torch_delete_cuda_stream_guard(inner), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(current_via_shim(0), s1.get());
  ASSERT_EQ(aoti_torch_delete_cuda_stream_guard(outer), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(current_via_shim(0), nullptr);
  // A deleted guard is refused, not dereferenced.
  EXPECT_EQ(aoti_torch_delete_cuda_stream_guard(outer), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(last_error_mentions("not a live guard")) << aotrt_last_error();
  EXPECT_EQ(aoti_torch_delete_cuda_stream_guard(nullptr), AOTI_TORCH_FAILURE);
}

TEST(CudaStream, CurrentStreamIsPerThread) {
  require_device();
  TestStream s;
  CUDAStreamGuardHandle g = nullptr;
  ASSERT_EQ(aoti_torch_create_cuda_stream_guard(s.get(), 0, &g), AOTI_TORCH_SUCCESS);
  void* seen = reinterpret_cast<void*>(0x1);
  std::thread([&] { seen = current_via_shim(0); }).join();
  EXPECT_EQ(seen, nullptr) << "another thread saw this thread's stream";
  EXPECT_EQ(current_via_shim(0), s.get());
  ASSERT_EQ(aoti_torch_delete_cuda_stream_guard(g), AOTI_TORCH_SUCCESS);
}

TEST(CudaStream, RefusesBadArguments) {
  require_device();
  CUDAStreamGuardHandle g = nullptr;
  EXPECT_EQ(aoti_torch_create_cuda_stream_guard(nullptr, 99, &g), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(last_error_mentions("aoti_torch_create_cuda_stream_guard")) << aotrt_last_error();
  EXPECT_TRUE(last_error_mentions("99")) << aotrt_last_error();
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(aoti_torch_create_cuda_stream_guard(nullptr, 0, nullptr), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(last_error_mentions("ret_guard")) << aotrt_last_error();
  void* s = nullptr;
  EXPECT_EQ(aoti_torch_get_current_cuda_stream(-7, &s), AOTI_TORCH_FAILURE);
  EXPECT_EQ(aoti_torch_get_current_cuda_stream(0, nullptr), AOTI_TORCH_FAILURE);
  CUDAGuardHandle cg = nullptr;
  EXPECT_EQ(aoti_torch_create_cuda_guard(device_count(), &cg), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(last_error_mentions(std::to_string(device_count()))) << aotrt_last_error();
  EXPECT_EQ(aoti_torch_cuda_guard_set_index(nullptr, 0), AOTI_TORCH_FAILURE);
  EXPECT_EQ(current_via_shim(0), nullptr);  // nothing changed
  EXPECT_EQ(current_device(), 0);
}

TEST(CudaGuard, SetsAndRestoresTheDevice) {
  require_device();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  CUDAGuardHandle g = nullptr;
  ASSERT_EQ(aoti_torch_create_cuda_guard(0, &g), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(current_device(), 0);
  EXPECT_EQ(aoti_torch_cuda_guard_set_index(g, -1), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_cuda_guard_set_index(g, device_count()), AOTI_TORCH_FAILURE);
  if (device_count() >= 2) {
    EXPECT_EQ(aoti_torch_cuda_guard_set_index(g, 1), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(current_device(), 1);
    CUDAGuardHandle nested = nullptr;
    ASSERT_EQ(aoti_torch_create_cuda_guard(0, &nested), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(current_device(), 0);
    ASSERT_EQ(aoti_torch_delete_cuda_guard(nested), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(current_device(), 1);
  }
  ASSERT_EQ(aoti_torch_delete_cuda_guard(g), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(current_device(), 0);
  EXPECT_EQ(aoti_torch_delete_cuda_guard(g), AOTI_TORCH_FAILURE);
}

TEST(CudaGuard, StreamGuardOnAnotherDeviceRestoresBoth) {
  require_device();
  if (device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices, found " << device_count();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t s1 = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  CUDAStreamGuardHandle g = nullptr;
  ASSERT_EQ(aoti_torch_create_cuda_stream_guard(s1, 1, &g), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(current_device(), 1);
  EXPECT_EQ(current_via_shim(1), s1);
  EXPECT_EQ(current_via_shim(0), nullptr);
  EXPECT_EQ(current_via_shim(-1), s1);
  ASSERT_EQ(aoti_torch_delete_cuda_stream_guard(g), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(current_device(), 0);
  EXPECT_EQ(current_via_shim(1), nullptr);
  aotrt::cuda::forget_stream(1, s1);  // Note [A stream that goes away]
  ASSERT_EQ(cudaStreamDestroy(s1), cudaSuccess);
}

// Everything aotrt enqueues goes to the current stream: with the guard's
// stream held back, a copy issued through cuda::copy has not run yet.
TEST(CudaStream, CopiesRunOnTheCurrentStream) {
  require_device();
  TestStream s;
  const int64_t n = 1 << 16;
  DeviceBuffer a(0, n * 4), b(0, n * 4);
  std::vector<float> host(n);
  for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  CUDA_OK(cudaMemcpy(a.data(), host.data(), n * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(b.data(), 0, n * 4));

  CUDAStreamGuardHandle g = nullptr;
  ASSERT_EQ(aoti_torch_create_cuda_stream_guard(s.get(), 0, &g), AOTI_TORCH_SUCCESS);
  StreamBlocker blocker;
  blocker.block(s.get());
  // A transposed copy (a kernel) of a [256, 256] view.
  const std::vector<int64_t> sizes = {256, 256}, dense = {256, 1}, transposed = {1, 256};
  copy(StridedView{static_cast<char*>(b.data()), sizes, dense, ScalarType::Float32, cuda0()},
       StridedView{static_cast<char*>(a.data()), sizes, transposed, ScalarType::Float32, cuda0()});
  EXPECT_EQ(cudaStreamQuery(s.get()), cudaErrorNotReady);
  std::vector<float> early(4);
  CUDA_OK(cudaMemcpy(early.data(), static_cast<char*>(b.data()) + 4, 16, cudaMemcpyDeviceToHost));
  EXPECT_EQ(early, std::vector<float>(4, 0.0f)) << "the copy ran before its stream allowed it";
  blocker.release();
  CUDA_OK(cudaStreamSynchronize(s.get()));
  std::vector<float> got(n);
  CUDA_OK(cudaMemcpy(got.data(), b.data(), n * 4, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < 256; ++i)
    for (int64_t j = 0; j < 256; ++j) ASSERT_EQ(got[i * 256 + j], host[j * 256 + i]);
  ASSERT_EQ(aoti_torch_delete_cuda_stream_guard(g), AOTI_TORCH_SUCCESS);
}

TEST(CudaRawAlloc, AllocatesFromTheCachingAllocator) {
  require_device();
  const AllocatorStats before = allocator(0).stats();
  void* p = nullptr;
  ASSERT_EQ(aoti_torch_cuda_caching_allocator_raw_alloc(1000, &p), AOTI_TORCH_SUCCESS);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(allocator(0).stats().live_allocations, before.live_allocations + 1);
  CUDA_OK(cudaMemset(p, 0x5A, 1000));
  EXPECT_EQ(aoti_torch_cuda_caching_allocator_raw_delete(p), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(allocator(0).stats().live_allocations, before.live_allocations);
  EXPECT_EQ(aoti_torch_cuda_caching_allocator_raw_delete(p), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(last_error_mentions("raw_alloc")) << aotrt_last_error();
  void* z = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(aoti_torch_cuda_caching_allocator_raw_alloc(0, &z), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(z, nullptr);
  EXPECT_EQ(aoti_torch_cuda_caching_allocator_raw_delete(nullptr), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_cuda_caching_allocator_raw_alloc(8, nullptr), AOTI_TORCH_FAILURE);
  // Out of memory is an error code and a message, not a crash.
  EXPECT_EQ(aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t{1} << 52, &p), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(last_error_mentions(std::to_string(uint64_t{1} << 52))) << aotrt_last_error();
}

}  // namespace
}  // namespace aotrt::cuda::test
