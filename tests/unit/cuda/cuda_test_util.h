// Helpers for the CUDA device-layer tests (allocator, streams, copies):
// strided layouts over a storage, host mirrors of device storage, random
// contents per dtype, streams that can be held back, and storage comparisons
// that treat two NaNs as equal.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/view.h"
#include "cuda/runtime.h"

namespace aotrt::cuda::test {

// A CUDA build run without a device fails every CUDA test loudly rather than
// skipping it.
#define require_device()                                                        \
  do {                                                                          \
    ASSERT_GT(::aotrt::cuda::device_count(), 0)                                 \
        << "aotrt was built with CUDA but no CUDA device is visible";           \
  } while (0)

#define CUDA_OK(expr)                                                      \
  do {                                                                     \
    const cudaError_t cuda_ok_err_ = (expr);                               \
    ASSERT_EQ(cuda_ok_err_, cudaSuccess) << #expr << ": "                  \
                                         << cudaGetErrorString(cuda_ok_err_); \
  } while (0)

inline Device cuda0() { return Device{DeviceType::CUDA, 0}; }

// A view of a storage: sizes, strides and offset in elements.
struct Layout {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
  // Elements the storage needs to hold the view (at least one).
  int64_t storage_elems() const {
    int64_t end = offset + 1;
    if (numel() == 0) return std::max<int64_t>(offset, 1);
    for (size_t d = 0; d < sizes.size(); ++d) end += (sizes[d] - 1) * strides[d];
    return end;
  }
};

inline Layout dense_layout(const std::vector<int64_t>& sizes) {
  return Layout{sizes, contiguous_strides(sizes), 0};
}

// A random non-negative layout of `sizes`: dims in a random order, some gaps
// between them, a small offset; stride-0 dims too when allow_broadcast.
// Without broadcast the view never overlaps itself.
inline Layout random_layout(std::mt19937_64& rng, const std::vector<int64_t>& sizes,
                            bool allow_broadcast) {
  Layout l;
  l.sizes = sizes;
  l.strides.assign(sizes.size(), 0);
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  int64_t running = 1 + static_cast<int64_t>(rng() % 4 == 0 ? rng() % 3 : 0);
  for (size_t i = order.size(); i-- > 0;) {
    const size_t d = order[i];
    if (allow_broadcast && rng() % 5 == 0) {
      l.strides[d] = 0;
      continue;
    }
    l.strides[d] = running;
    running = running * std::max<int64_t>(sizes[d], 1) +
              static_cast<int64_t>(rng() % 3 == 0 ? rng() % 4 : 0);
  }
  l.offset = static_cast<int64_t>(rng() % 5);
  return l;
}

inline std::string describe(const Layout& l) {
  std::ostringstream out;
  out << "sizes [";
  for (size_t i = 0; i < l.sizes.size(); ++i) out << (i ? ", " : "") << l.sizes[i];
  out << "] strides [";
  for (size_t i = 0; i < l.strides.size(); ++i) out << (i ? ", " : "") << l.strides[i];
  out << "] offset " << l.offset;
  return out.str();
}

inline StridedView view_of(char* base, const Layout& l, ScalarType dtype, Device device) {
  return StridedView{base + l.offset * static_cast<int64_t>(element_size(dtype)), l.sizes,
                     l.strides, dtype, device};
}

// The dtypes copy_device converts between.
inline const std::vector<ScalarType>& device_dtypes() {
  static const std::vector<ScalarType> dtypes = {
      ScalarType::Bool,    ScalarType::UInt8,   ScalarType::Int8,     ScalarType::Int16,
      ScalarType::Int32,   ScalarType::Int64,   ScalarType::Float16,  ScalarType::BFloat16,
      ScalarType::Float32, ScalarType::Float64};
  return dtypes;
}

// Random elements: booleans 0/1; integers across their whole range half the
// time, small otherwise; floats mostly in [-300, 300] with some infinities,
// NaNs, -0 and values beyond every integer type (conversions of those are
// defined the same way on host and device: see cpu/copy.cpp).
inline void fill_random(std::mt19937_64& rng, ScalarType dtype, void* data, int64_t n) {
  std::uniform_real_distribution<double> real(-300.0, 300.0);
  char* p = static_cast<char*>(data);
  const size_t isz = element_size(dtype);
  for (int64_t i = 0; i < n; ++i, p += isz) {
    const uint64_t r = rng();
    double v = real(rng);
    switch (r % 40) {
      case 0: v = INFINITY; break;
      case 1: v = -INFINITY; break;
      case 2: v = NAN; break;
      case 3: v = 1e30; break;
      case 4: v = -0.0; break;
      default: break;
    }
    switch (dtype) {
      case ScalarType::Bool: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>((r >> 8) & 1); break;
      case ScalarType::UInt8:
      case ScalarType::Int8:
      case ScalarType::Int16:
      case ScalarType::Int32:
      case ScalarType::Int64: {
        uint64_t bits = rng();
        if (r & 2) bits = static_cast<uint64_t>(static_cast<int64_t>(std::isfinite(v) ? v : 7.0));
        std::memcpy(p, &bits, isz);
        break;
      }
      case ScalarType::Float16: {
        const uint16_t b = float_to_half(static_cast<float>(v));
        std::memcpy(p, &b, 2);
        break;
      }
      case ScalarType::BFloat16: {
        const uint16_t b = float_to_bfloat16(static_cast<float>(v));
        std::memcpy(p, &b, 2);
        break;
      }
      case ScalarType::Float32: {
        const float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case ScalarType::Float64: std::memcpy(p, &v, 8); break;
      case ScalarType::Complex64: {
        const float c[2] = {static_cast<float>(v), static_cast<float>(real(rng))};
        std::memcpy(p, c, 8);
        break;
      }
      case ScalarType::Complex128: {
        const double c[2] = {v, real(rng)};
        std::memcpy(p, c, 16);
        break;
      }
      default:  // float8 and the rest: any byte pattern, copied as bytes
        for (size_t b = 0; b < isz; ++b) p[b] = static_cast<char>(rng());
        break;
    }
  }
}

inline void fill_random_bytes(std::mt19937_64& rng, std::vector<char>& bytes) {
  for (char& b : bytes) b = static_cast<char>(rng());
}

// A host buffer and a device buffer of the same size.
struct Mirrored {
  std::vector<char> host;
  DeviceBuffer device;

  explicit Mirrored(size_t nbytes) : host(nbytes), device(0, std::max<size_t>(nbytes, 1)) {}
  void upload() {
    if (!host.empty()) {
      EXPECT_EQ(cudaMemcpy(device.data(), host.data(), host.size(), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
  }
  std::vector<char> download() {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<char> out(host.size());
    if (!out.empty()) {
      EXPECT_EQ(cudaMemcpy(out.data(), device.data(), out.size(), cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    return out;
  }
};

namespace detail {
inline bool is_nan_element(ScalarType dtype, const char* p) {
  switch (dtype) {
    case ScalarType::Float16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return std::isnan(half_to_float(b));
    }
    case ScalarType::BFloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return std::isnan(bfloat16_to_float(b));
    }
    case ScalarType::Float32: {
      float f;
      std::memcpy(&f, p, 4);
      return std::isnan(f);
    }
    case ScalarType::Float64: {
      double f;
      std::memcpy(&f, p, 8);
      return std::isnan(f);
    }
    default: return false;
  }
}
}  // namespace detail

// "" when the storages hold the same elements (bytes equal, or both NaN);
// else where they first differ.
inline std::string compare_storages(ScalarType dtype, const std::vector<char>& got,
                                    const std::vector<char>& want) {
  if (got.size() != want.size()) {
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  }
  const size_t isz = element_size(dtype);
  size_t bad = 0;
  std::ostringstream out;
  for (size_t off = 0; off + isz <= got.size(); off += isz) {
    if (std::memcmp(got.data() + off, want.data() + off, isz) == 0) continue;
    if (detail::is_nan_element(dtype, got.data() + off) &&
        detail::is_nan_element(dtype, want.data() + off)) {
      continue;
    }
    if (bad++ < 3) {
      out << "element " << off / isz << " differs (bytes";
      for (size_t b = 0; b < isz; ++b) {
        out << ' ' << std::hex << (static_cast<unsigned>(got[off + b]) & 0xff);
      }
      out << " vs";
      for (size_t b = 0; b < isz; ++b) {
        out << ' ' << std::hex << (static_cast<unsigned>(want[off + b]) & 0xff);
      }
      out << std::dec << "); ";
    }
  }
  if (bad == 0) return "";
  out << bad << " of " << got.size() / isz << " elements differ";
  return out.str();
}

// ATen's float-to-integer result on CUDA (Note [Float to integer conversion
// on CUDA] in cuda/copy_kernels.cuh), written here independently of the
// kernels and itself checked against torch's results in
// CudaCopy.FloatToIntegerMatchesTorchOnCuda. from_double: the source was a
// float64 (float16, bfloat16 and float32 convert through float).
inline int64_t cuda_float_to_int(double x, bool from_double, ScalarType dst) {
  if (dst == ScalarType::Int64 || dst == ScalarType::UInt8) {
    int64_t w;
    if (std::isnan(x)) w = INT64_MIN;
    else if (x >= 9223372036854775808.0) w = INT64_MAX;
    else if (x < -9223372036854775808.0) w = INT64_MIN;
    else w = static_cast<int64_t>(x);
    return dst == ScalarType::UInt8 ? static_cast<uint8_t>(w) : w;
  }
  int32_t n;
  if (std::isnan(x)) n = from_double ? INT32_MIN : 0;
  else if (x >= 2147483648.0) n = INT32_MAX;
  else if (x <= -2147483649.0) n = INT32_MIN;
  else n = static_cast<int32_t>(x);
  if (dst == ScalarType::Int16) return static_cast<int16_t>(n);
  if (dst == ScalarType::Int8) return static_cast<int8_t>(n);
  return n;
}

inline bool is_float_dtype(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}
inline bool is_int_dtype(ScalarType t) {
  return t == ScalarType::UInt8 || t == ScalarType::Int8 || t == ScalarType::Int16 ||
         t == ScalarType::Int32 || t == ScalarType::Int64;
}

// Calls f(dst_offset, src_offset), in elements, for every element of two
// views of the same sizes.
template <typename F>
void for_each_element(const Layout& d, const Layout& s, F&& f) {
  const int64_t n = d.numel();
  std::vector<int64_t> index(d.sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t od = d.offset, os = s.offset;
    for (size_t i = 0; i < index.size(); ++i) {
      od += index[i] * d.strides[i];
      os += index[i] * s.strides[i];
    }
    f(od, os);
    for (size_t i = index.size(); i-- > 0;) {
      if (++index[i] < d.sizes[i]) break;
      index[i] = 0;
    }
  }
}

// For a float -> integer copy made on a CUDA device, rewrites the view's
// elements of a host reference (made by cpu::copy_strided, which follows
// ATen's CPU results) with the CUDA results.
inline void apply_cuda_float_to_int(char* dst, const Layout& dl, ScalarType dt, const char* src,
                                    const Layout& sl, ScalarType st) {
  if (!is_float_dtype(st) || !is_int_dtype(dt)) return;
  const size_t dsz = element_size(dt), ssz = element_size(st);
  for_each_element(dl, sl, [&](int64_t od, int64_t os) {
    const char* p = src + os * static_cast<int64_t>(ssz);
    double x = 0;
    if (st == ScalarType::Float16) { uint16_t h; std::memcpy(&h, p, 2); x = half_to_float(h); }
    if (st == ScalarType::BFloat16) { uint16_t h; std::memcpy(&h, p, 2); x = bfloat16_to_float(h); }
    if (st == ScalarType::Float32) { float f; std::memcpy(&f, p, 4); x = f; }
    if (st == ScalarType::Float64) std::memcpy(&x, p, 8);
    const int64_t v = cuda_float_to_int(x, st == ScalarType::Float64, dt);
    std::memcpy(dst + od * static_cast<int64_t>(dsz), &v, dsz);  // little-endian: the low bytes
  });
}

// A non-blocking stream for one test.
class TestStream {
 public:
  TestStream() {
    EXPECT_EQ(cudaGetDevice(&device_), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), cudaSuccess);
  }
  ~TestStream() {
    if (s_) {
      (void)cudaStreamSynchronize(s_);
      forget_stream(device_, s_);  // Note [A stream that goes away]
      (void)cudaStreamDestroy(s_);
    }
  }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  int device_ = 0;
  cudaStream_t s_ = nullptr;
};

// Holds a stream back: block() queues a host function that waits until
// release() (or the destructor, or 10 s), so work queued after it stays pending.
class StreamBlocker {
 public:
  StreamBlocker() = default;
  // Releases, then waits until the queued host function has let go of this.
  ~StreamBlocker() {
    release();
    while (pending_.load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;
  void block(cudaStream_t stream) {
    released_.store(false);
    pending_.fetch_add(1);
    const cudaError_t err = cudaLaunchHostFunc(stream, &StreamBlocker::wait, this);
    if (err != cudaSuccess) pending_.fetch_sub(1);
    EXPECT_EQ(err, cudaSuccess);
  }
  void release() { released_.store(true); }

 private:
  // Waits for release(), or 10 s so that a broken test cannot hang forever.
  static void CUDART_CB wait(void* self) {
    auto* b = static_cast<StreamBlocker*>(self);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!b->released_.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    b->pending_.fetch_sub(1);
  }
  std::atomic<bool> released_{true};
  std::atomic<int> pending_{0};
};

}  // namespace aotrt::cuda::test
