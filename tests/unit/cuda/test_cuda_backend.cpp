// cuda::copy (cuda/backend.cpp) for every CPU/CUDA combination, against
// cpu::copy_strided on host mirrors (with CUDA's float-to-integer results
// where the conversion happens on a device, as in ATen); and the same paths
// through the C ABI (aoti_torch_copy_, clone, zero_, item) on CUDA tensors.
#include <gtest/gtest.h>

#include <random>

#include "aotrt/shim.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"
#include "cuda_test_util.h"

namespace aotrt::cuda::test {
namespace {

enum class Side { kHost, kDevice };

// Storage on the host or the device, with a host mirror for the reference.
struct Store {
  Side side;
  std::vector<char> host;      // the host storage (kHost) or the mirror (kDevice)
  std::vector<char> reference; // what the storage must hold after the copy
  DeviceBuffer device;

  Store(Side s, size_t nbytes) : side(s), host(nbytes), device(0, s == Side::kDevice ? std::max<size_t>(nbytes, 1) : 0) {}
  char* data() { return side == Side::kHost ? host.data() : static_cast<char*>(device.data()); }
  Device dev() const { return side == Side::kHost ? cpu_device() : cuda0(); }
  void upload() {
    if (side == Side::kDevice && !host.empty())
      ASSERT_EQ(cudaMemcpy(device.data(), host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<char> contents() {
    if (side == Side::kHost) return host;
    std::vector<char> out(host.size());
    if (!out.empty()) EXPECT_EQ(cudaMemcpy(out.data(), device.data(), out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

void check_cross(std::mt19937_64& rng, Side dst_side, Side src_side, const Layout& dl,
                 const Layout& sl, ScalarType dt, ScalarType st, const std::string& label) {
  Store src(src_side, static_cast<size_t>(sl.storage_elems()) * element_size(st));
  Store dst(dst_side, static_cast<size_t>(dl.storage_elems()) * element_size(dt));
  fill_random(rng, st, src.host.data(), sl.storage_elems());
  fill_random_bytes(rng, dst.host);
  src.upload();
  dst.upload();
  std::vector<char> want = dst.host;
  cpu::copy_strided(view_of(want.data(), dl, dt, cpu_device()),
                    view_of(src.host.data(), sl, st, cpu_device()));
  // Between CPU and CUDA, ATen converts on the CPU; on one device, the CUDA way.
  if (dst_side == Side::kDevice && src_side == Side::kDevice) {
    apply_cuda_float_to_int(want.data(), dl, dt, src.host.data(), sl, st);
  }
  copy(view_of(dst.data(), dl, dt, dst.dev()), view_of(src.data(), sl, st, src.dev()));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(compare_storages(dt, dst.contents(), want), "")
      << label << ": " << dtype_name(st) << " -> " << dtype_name(dt) << "\n  dst "
      << describe(dl) << "\n  src " << describe(sl);
}

TEST(CudaBackendCopy, EveryDirectionOnRandomViews) {
  require_device();
  std::mt19937_64 rng(31);
  const std::pair<Side, Side> directions[] = {
      {Side::kDevice, Side::kHost}, {Side::kHost, Side::kDevice}, {Side::kDevice, Side::kDevice}};
  const ScalarType dtypes[] = {ScalarType::Float32, ScalarType::Float16, ScalarType::Int64,
                               ScalarType::Bool, ScalarType::Complex64};
  for (const auto& [d, s] : directions) {
    for (int i = 0; i < 150; ++i) {
      std::vector<int64_t> sizes(rng() % 5);
      for (int64_t& x : sizes) x = rng() % 25 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 8);
      // Dense or not on either side, broadcast sources, converting or not.
      const Layout dl = i % 3 == 0 ? dense_layout(sizes) : random_layout(rng, sizes, false);
      const Layout sl = i % 4 == 0 ? dense_layout(sizes) : random_layout(rng, sizes, true);
      const ScalarType st = dtypes[rng() % std::size(dtypes)];
      // Complex converts only on the host, so device-to-device keeps it as it is.
      ScalarType dt = i % 2 ? st : dtypes[rng() % std::size(dtypes)];
      if (d == Side::kDevice && s == Side::kDevice &&
          (dt == ScalarType::Complex64) != (st == ScalarType::Complex64)) {
        dt = st;
      }
      check_cross(rng, d, s, dl, sl, dt, st,
                  std::string(d == Side::kHost ? "host" : "device") + " <- " +
                      (s == Side::kHost ? "host" : "device") + " case " + std::to_string(i));
      if (HasFailure()) return;
    }
  }
}

TEST(CudaBackendCopy, PinnedHostSourceIsSafeToReuseAfterCopy) {
  require_device();
  const int64_t n = 1 << 20;
  float* pinned = nullptr;
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&pinned), n * 4));
  for (int64_t i = 0; i < n; ++i) pinned[i] = static_cast<float>(i);
  DeviceBuffer dev(0, n * 4);
  const std::vector<int64_t> sizes = {n}, strides = {1};
  copy(StridedView{static_cast<char*>(dev.data()), sizes, strides, ScalarType::Float32, cuda0()},
       StridedView{reinterpret_cast<char*>(pinned), sizes, strides, ScalarType::Float32,
                   cpu_device()});
  for (int64_t i = 0; i < n; ++i) pinned[i] = -1.0f;  // the caller reuses its buffer at once
  std::vector<float> got(n);
  CUDA_OK(cudaMemcpy(got.data(), dev.data(), n * 4, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<float>(i)) << i;
  CUDA_OK(cudaFreeHost(pinned));
}

TEST(CudaBackendCopy, BetweenTwoDevices) {
  require_device();
  if (device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices, found " << device_count();
  std::mt19937_64 rng(41);
  for (int i = 0; i < 30; ++i) {
    std::vector<int64_t> sizes(1 + rng() % 4);
    for (int64_t& x : sizes) x = 1 + static_cast<int64_t>(rng() % 20);
    const Layout dl = i % 2 ? dense_layout(sizes) : random_layout(rng, sizes, false);
    const Layout sl = i % 3 ? dense_layout(sizes) : random_layout(rng, sizes, true);
    const ScalarType st = ScalarType::Float32;
    const ScalarType dt = i % 4 == 0 ? ScalarType::BFloat16 : st;
    std::vector<char> src_host(static_cast<size_t>(sl.storage_elems()) * 4);
    std::vector<char> dst_host(static_cast<size_t>(dl.storage_elems()) * element_size(dt));
    fill_random(rng, st, src_host.data(), sl.storage_elems());
    fill_random_bytes(rng, dst_host);
    DeviceBuffer src(0, src_host.size());
    DeviceBuffer dst(1, dst_host.size());
    CUDA_OK(cudaMemcpy(src.data(), src_host.data(), src_host.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dst.data(), dst_host.data(), dst_host.size(), cudaMemcpyHostToDevice));
    copy(view_of(static_cast<char*>(dst.data()), dl, dt, Device{DeviceType::CUDA, 1}),
         view_of(static_cast<char*>(src.data()), sl, st, cuda0()));
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaDeviceSynchronize());
    cpu::copy_strided(view_of(dst_host.data(), dl, dt, cpu_device()),
                      view_of(src_host.data(), sl, st, cpu_device()));
    apply_cuda_float_to_int(dst_host.data(), dl, dt, src_host.data(), sl, st);
    std::vector<char> got(dst_host.size());
    CUDA_OK(cudaMemcpy(got.data(), dst.data(), got.size(), cudaMemcpyDeviceToHost));
    ASSERT_EQ(compare_storages(dt, got, dst_host), "") << "case " << i << " dst " << describe(dl)
                                                       << " src " << describe(sl);
  }
}

// --- Through the C ABI -------------------------------------------------------------------

struct Handle {
  AtenTensorHandle h = nullptr;
  ~Handle() {
    if (h) aoti_torch_delete_tensor_object(h);
  }
};

TEST(CudaBackendShims, CopyCloneZeroItemOnCudaTensors) {
  require_device();
  const int32_t cpu = aoti_torch_device_type_cpu(), cuda = aoti_torch_device_type_cuda();
  const int32_t f32 = aoti_torch_dtype_float32();
  // A channels-last [1, 4, 3, 5] host tensor and its channel half as a view.
  const int64_t sizes[] = {1, 4, 3, 5}, cl[] = {60, 1, 20, 4};
  Handle host, dev, half, half_dense, back;
  ASSERT_EQ(aoti_torch_empty_strided(4, sizes, cl, f32, cpu, -1, &host.h), AOTI_TORCH_SUCCESS);
  float* hp = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(host.h, reinterpret_cast<void**>(&hp)), AOTI_TORCH_SUCCESS);
  for (int i = 0; i < 60; ++i) hp[i] = static_cast<float>(i) + 0.25f;
  ASSERT_EQ(aoti_torch_empty_strided(4, sizes, cl, f32, cuda, 0, &dev.h), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_copy_(dev.h, host.h, 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const int64_t half_sizes[] = {1, 2, 3, 5};
  ASSERT_EQ(aoti_torch__reinterpret_tensor(dev.h, 4, half_sizes, cl, 2, &half.h),
            AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_clone(half.h, &half_dense.h), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  // Back to the host in NCHW order, element by element against the source.
  const int64_t nchw[] = {30, 15, 5, 1};
  ASSERT_EQ(aoti_torch_empty_strided(4, half_sizes, nchw, f32, cpu, -1, &back.h),
            AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_copy_(back.h, half_dense.h, 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  float* bp = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(back.h, reinterpret_cast<void**>(&bp)), AOTI_TORCH_SUCCESS);
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 5; ++x)
        EXPECT_EQ(bp[c * 15 + y * 5 + x], hp[(c + 2) + x * 4 + y * 20]) << c << y << x;
  // zero_ through the view leaves the other half alone.
  ASSERT_EQ(aoti_torch_zero_(half.h), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  Handle all_back;
  ASSERT_EQ(aoti_torch_empty_strided(4, sizes, cl, f32, cpu, -1, &all_back.h), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_copy_(all_back.h, dev.h, 0), AOTI_TORCH_SUCCESS);
  float* ap = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(all_back.h, reinterpret_cast<void**>(&ap)), AOTI_TORCH_SUCCESS);
  for (int i = 0; i < 60; ++i) EXPECT_EQ(ap[i], i % 4 >= 2 ? 0.0f : hp[i]) << i;
  // item of one element of the device tensor.
  Handle one;
  ASSERT_EQ(aoti_torch__reinterpret_tensor(dev.h, 0, nullptr, nullptr, 21, &one.h),
            AOTI_TORCH_SUCCESS);
  float v = 0;
  ASSERT_EQ(aoti_torch_item_float32(one.h, &v), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(v, hp[21]);
}

}  // namespace
}  // namespace aotrt::cuda::test
