// Copies of views with more than 2^32 elements over a float32 buffer of more
// than 16 GiB: the 64-bit index paths of every kernel. The buffers are filled
// with a byte pattern (cudaMemset) and a few hundred elements are poked with
// distinct values; only those, and a sample of the rest, are read back, so
// the test stays fast (a few copies of 17 GB at device bandwidth).
#include <gtest/gtest.h>

#include <random>

#include "cuda_test_util.h"

namespace aotrt::cuda::test {
namespace {

constexpr int64_t kRows = 65537, kCols = 65536;  // kRows * kCols > 2^32
constexpr int64_t kElems = kRows * kCols;
constexpr unsigned char kPatternByte = 0x3C;

float pattern_value() {
  float f;
  std::memset(&f, kPatternByte, 4);
  return f;
}

template <typename T>
T read_element(const void* base, int64_t index) {
  T v;
  EXPECT_EQ(cudaMemcpy(&v, static_cast<const T*>(base) + index, sizeof(T), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return v;
}

// The source: the pattern everywhere, distinct values at `pokes` (element
// indices of the buffer), the first and last element among them.
struct LargeSource {
  DeviceBuffer buffer;
  std::vector<int64_t> pokes;

  LargeSource() : buffer(0, static_cast<size_t>(kElems) * 4) {
    EXPECT_EQ(cudaMemset(buffer.data(), kPatternByte, static_cast<size_t>(kElems) * 4), cudaSuccess);
    std::mt19937_64 rng(2024);
    pokes = {0, kElems - 1, kCols, kElems - kCols, (int64_t{1} << 32) - 1, int64_t{1} << 32,
             (int64_t{1} << 32) + 1};
    for (int i = 0; i < 200; ++i) pokes.push_back(static_cast<int64_t>(rng() % kElems));
    for (int64_t p : pokes) {
      const float v = value_at(p);
      EXPECT_EQ(cudaMemcpy(static_cast<float*>(buffer.data()) + p, &v, 4, cudaMemcpyHostToDevice),
                cudaSuccess);
    }
  }
  // Integers 1..2000: exact in float16, and different for neighbours.
  static float value_at(int64_t index) { return static_cast<float>((index * 7919) % 2000 + 1); }
};

TEST(CudaCopyLarge, MoreThan2To32ElementsThroughEveryKernel) {
  require_device();
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  ASSERT_GT(free_bytes, size_t{40} << 30) << "this test needs 40 GiB of free device memory";
  LargeSource src;
  ASSERT_FALSE(HasFailure());
  DeviceBuffer dst(0, static_cast<size_t>(kElems) * 4);
  const Device dev = cuda0();
  const cudaStream_t stream = current_cuda_stream(0);

  // 1. The tiled transpose: dst [kCols, kRows] dense from the transposed view.
  {
    ASSERT_EQ(cudaMemset(dst.data(), 0xFF, static_cast<size_t>(kElems) * 4), cudaSuccess);
    const std::vector<int64_t> sizes = {kCols, kRows}, dst_strides = {kRows, 1},
                               src_strides = {1, kCols};
    copy_device(StridedView{static_cast<char*>(dst.data()), sizes, dst_strides,
                            ScalarType::Float32, dev},
                StridedView{static_cast<char*>(src.buffer.data()), sizes, src_strides,
                            ScalarType::Float32, dev},
                stream);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int64_t p : src.pokes) {
      const int64_t r = p / kCols, c = p % kCols;  // source element (r, c) is view (c, r)
      ASSERT_EQ(read_element<float>(dst.data(), c * kRows + r), LargeSource::value_at(p))
          << "transpose: source element " << p;
    }
    std::mt19937_64 rng(1);
    for (int i = 0; i < 50; ++i) {
      const int64_t d = static_cast<int64_t>(rng() % kElems);
      const int64_t p = (d % kRows) * kCols + d / kRows;
      const float want = std::find(src.pokes.begin(), src.pokes.end(), p) != src.pokes.end()
                             ? LargeSource::value_at(p)
                             : pattern_value();
      ASSERT_EQ(read_element<float>(dst.data(), d), want) << "transpose: destination " << d;
    }
  }

  // 2. The element-wise kernel: de-interleave [2, kElems/2] with source
  //    strides [1, 2] (the inner dims of the two sides differ, but one is too
  //    small for a tile).
  {
    ASSERT_EQ(cudaMemset(dst.data(), 0xFF, static_cast<size_t>(kElems) * 4), cudaSuccess);
    const int64_t half = kElems / 2;
    const std::vector<int64_t> sizes = {2, half}, dst_strides = {half, 1}, src_strides = {1, 2};
    copy_device(StridedView{static_cast<char*>(dst.data()), sizes, dst_strides,
                            ScalarType::Float32, dev},
                StridedView{static_cast<char*>(src.buffer.data()), sizes, src_strides,
                            ScalarType::Float32, dev},
                stream);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int64_t p : src.pokes) {
      const int64_t d = (p % 2) * half + p / 2;
      ASSERT_EQ(read_element<float>(dst.data(), d), LargeSource::value_at(p))
          << "de-interleave: source element " << p;
    }
  }

  // 3. The converting kernel: float32 -> float16 of the whole buffer as
  //    [kRows, kCols] into rows kCols + 1 apart (a gap per row, so no merging).
  {
    const int64_t row = kCols + 1;
    const size_t dst_bytes = static_cast<size_t>(kRows * row) * 2;
    const std::vector<int64_t> sizes = {kRows, kCols}, src_strides = {kCols, 1},
                               dst_strides = {row, 1};
    ASSERT_EQ(cudaMemset(dst.data(), 0xFF, dst_bytes), cudaSuccess);
    copy_device(StridedView{static_cast<char*>(dst.data()), sizes, dst_strides,
                            ScalarType::Float16, dev},
                StridedView{static_cast<char*>(src.buffer.data()), sizes, src_strides,
                            ScalarType::Float32, dev},
                stream);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int64_t p : src.pokes) {
      const int64_t r = p / kCols, c = p % kCols;
      const uint16_t h = read_element<uint16_t>(dst.data(), r * row + c);
      ASSERT_EQ(h, float_to_half(LargeSource::value_at(p)))
          << "float32 -> float16: source element " << p;
    }
    EXPECT_EQ(read_element<uint16_t>(dst.data(), 5 * row + 3), float_to_half(pattern_value()));
    // The gap after each row was not written.
    EXPECT_EQ(read_element<uint16_t>(dst.data(), kCols), 0xFFFF);
    EXPECT_EQ(read_element<uint16_t>(dst.data(), (kRows - 1) * row + kCols), 0xFFFF);
  }

  // 4. fill_zero through a strided view reaching past 2^32 elements.
  {
    const std::vector<int64_t> sizes = {kRows}, strides = {kCols};
    fill_zero_device(StridedView{static_cast<char*>(src.buffer.data()) + 4 * 7, sizes, strides,
                                 ScalarType::Float32, dev},
                     stream);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(read_element<float>(src.buffer.data(), (kRows - 1) * kCols + 7), 0.0f);
    EXPECT_EQ(read_element<float>(src.buffer.data(), (kRows - 1) * kCols + 8), pattern_value());
  }
  src.buffer = DeviceBuffer();
  dst = DeviceBuffer();
  empty_cache(0);
}

}  // namespace
}  // namespace aotrt::cuda::test
