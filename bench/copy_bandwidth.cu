// aotrt_copy_bench: bandwidth of aotrt's CUDA copy kernels against a plain
// device-to-device cudaMemcpyAsync, on the layout the seed's hazard produces:
// the channel half of a channels-last tensor (a non-packed view with an
// offset), gathered into NCHW-dense and channels-last-dense buffers and
// scattered back. Bandwidth counts bytes read plus bytes written; each case is
// timed with CUDA events, after warm-up, as the median of --iters runs, and
// its result is checked element by element against the source.
//
//   aotrt_copy_bench [--shape N C H W] [--iters K] [--dtype f32|f16|bf16]
//
// The default shape [16, 256, 256, 256] fp32 is a 1 GiB parent tensor.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cuda/runtime.h"

namespace {

#define BENCH_CHECK(expr)                                                                   \
  do {                                                                                      \
    const cudaError_t e_ = (expr);                                                          \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #expr, cudaGetErrorString(e_),       \
                   __FILE__, __LINE__);                                                     \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// A value per parent element that differs between neighbours and fits any
// 16-bit float exactly (integers below 2048).
__host__ __device__ inline uint32_t pattern(uint64_t i) {
  return static_cast<uint32_t>((i * 2654435761ull) >> 7) % 2039u;
}

__global__ void fill_pattern(float* p, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    p[i] = static_cast<float>(pattern(i));
  }
}

struct Options {
  int64_t n = 16, c = 256, h = 256, w = 256;
  int iters = 20;
  std::string dtype = "f32";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shape" && i + 4 < argc) {
      o.n = std::atoll(argv[++i]);
      o.c = std::atoll(argv[++i]);
      o.h = std::atoll(argv[++i]);
      o.w = std::atoll(argv[++i]);
    } else if (a == "--iters" && i + 1 < argc) {
      o.iters = std::atoi(argv[++i]);
    } else if (a == "--dtype" && i + 1 < argc) {
      o.dtype = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--shape N C H W] [--iters K] [--dtype f32|f16|bf16]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (o.c % 2 != 0 || o.iters < 1 || (o.dtype != "f32" && o.dtype != "f16" && o.dtype != "bf16")) {
    std::fprintf(stderr, "C must be even, --iters >= 1, dtype f32, f16 or bf16\n");
    std::exit(2);
  }
  return o;
}

// Median time in ms of `iters` runs of f on `stream`, after 3 warm-up runs.
double time_ms(const std::function<void()>& f, cudaStream_t stream, int iters) {
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) f();
  BENCH_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i) {
    BENCH_CHECK(cudaEventRecord(start, stream));
    f();
    BENCH_CHECK(cudaEventRecord(stop, stream));
    BENCH_CHECK(cudaEventSynchronize(stop));
    BENCH_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
  }
  BENCH_CHECK(cudaEventDestroy(start));
  BENCH_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[iters / 2];
}

// The bits the parent holds at element i: pattern(i) as a float32, or as a
// 16-bit pattern derived from it (the benchmark only moves bits).
uint32_t expected_bits(uint64_t parent_index, const std::string& dtype) {
  const float v = static_cast<float>(pattern(parent_index));
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if (dtype == "f32") return u;
  if (dtype == "bf16") return u >> 16;
  // float16 of an integer below 2048: exponent and 10 mantissa bits, exact.
  if (v == 0.0f) return 0;
  const int exp = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  return (static_cast<uint32_t>(exp) << 10) | ((u >> 13) & 0x3ff);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace aotrt;
  const Options o = parse(argc, argv);
  const ScalarType dtype = o.dtype == "f32"   ? ScalarType::Float32
                           : o.dtype == "f16" ? ScalarType::Float16
                                              : ScalarType::BFloat16;
  const size_t isz = element_size(dtype);
  const int64_t n = o.n, c = o.c, h = o.h, w = o.w, half_c = c / 2;
  const uint64_t parent_elems = static_cast<uint64_t>(n * c * h * w);
  const uint64_t half_elems = parent_elems / 2;
  const size_t parent_bytes = parent_elems * isz, half_bytes = half_elems * isz;

  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %.0f MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize / 1e6);
  std::printf("parent [%lld, %lld, %lld, %lld] %s channels-last (%.3f GiB); view: channels "
              "[%lld, %lld) (%.3f GiB)\n",
              (long long)n, (long long)c, (long long)h, (long long)w, o.dtype.c_str(),
              parent_bytes / 1073741824.0, (long long)half_c, (long long)c,
              half_bytes / 1073741824.0);

  cudaStream_t stream;
  BENCH_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cuda::set_current_cuda_stream(0, stream);

  char *parent, *parent_copy, *dense;
  BENCH_CHECK(cudaMalloc(&parent, parent_bytes));
  BENCH_CHECK(cudaMalloc(&parent_copy, parent_bytes));
  BENCH_CHECK(cudaMalloc(&dense, half_bytes));
  if (isz == 4) {
    fill_pattern<<<4096, 256, 0, stream>>>(reinterpret_cast<float*>(parent), parent_elems);
  } else {
    std::vector<uint16_t> host(parent_elems);
    for (uint64_t i = 0; i < parent_elems; ++i) {
      host[i] = static_cast<uint16_t>(expected_bits(i, o.dtype));
    }
    BENCH_CHECK(cudaMemcpy(parent, host.data(), parent_bytes, cudaMemcpyHostToDevice));
  }
  BENCH_CHECK(cudaGetLastError());
  BENCH_CHECK(cudaStreamSynchronize(stream));

  // Parent channels-last strides [C*H*W, 1, W*C, C]; the view starts at channel C/2.
  const std::vector<int64_t> sizes = {n, half_c, h, w};
  const std::vector<int64_t> view_strides = {c * h * w, 1, w * c, c};
  const std::vector<int64_t> nchw = {half_c * h * w, h * w, w, 1};
  const std::vector<int64_t> cl = {half_c * h * w, 1, w * half_c, half_c};
  const Device dev{DeviceType::CUDA, 0};
  const StridedView view{parent + half_c * isz, sizes, view_strides, dtype, dev};
  const StridedView dense_nchw{dense, sizes, nchw, dtype, dev};
  const StridedView dense_cl{dense, sizes, cl, dtype, dev};

  // Checks every element of a dense result against the parent's pattern.
  auto check_dense = [&](const std::vector<int64_t>& strides, const char* what) {
    std::vector<char> host(half_bytes);
    BENCH_CHECK(cudaMemcpy(host.data(), dense, half_bytes, cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    for (int64_t in = 0; in < n; ++in)
      for (int64_t ic = 0; ic < half_c; ++ic)
        for (int64_t ih = 0; ih < h; ++ih)
          for (int64_t iw = 0; iw < w; ++iw) {
            const int64_t d = in * strides[0] + ic * strides[1] + ih * strides[2] + iw * strides[3];
            const uint64_t p = static_cast<uint64_t>(in * c * h * w + (ic + half_c) + iw * c + ih * w * c);
            uint32_t got = 0;
            std::memcpy(&got, host.data() + d * isz, isz);
            if (got != expected_bits(p, o.dtype) && bad++ < 5) {
              std::fprintf(stderr, "MISMATCH %s at [%lld,%lld,%lld,%lld]: got %08x want %08x\n",
                           what, (long long)in, (long long)ic, (long long)ih, (long long)iw, got,
                           expected_bits(p, o.dtype));
            }
          }
    return bad;
  };
  // Checks the parent after a scatter: every element equals the pattern again
  // (the view's half was overwritten from `dense`, the rest untouched).
  auto check_parent = [&](const char* what) {
    std::vector<char> host(parent_bytes);
    BENCH_CHECK(cudaMemcpy(host.data(), parent, parent_bytes, cudaMemcpyDeviceToHost));
    int64_t bad = 0;
    for (uint64_t i = 0; i < parent_elems; ++i) {
      uint32_t got = 0;
      std::memcpy(&got, host.data() + i * isz, isz);
      if (got != expected_bits(i, o.dtype) && bad++ < 5) {
        std::fprintf(stderr, "MISMATCH %s at parent element %llu: got %08x want %08x\n", what,
                     (unsigned long long)i, got, expected_bits(i, o.dtype));
      }
    }
    return bad;
  };

  struct Row {
    std::string name;
    double ms, gbps;
    int64_t bad;
  };
  std::vector<Row> rows;
  auto add = [&](const std::string& name, double ms, size_t bytes_moved, int64_t bad) {
    rows.push_back({name, ms, bytes_moved / (ms * 1e-3) / 1e9, bad});
  };

  const double copy_ms = time_ms(
      [&] {
        BENCH_CHECK(cudaMemcpyAsync(parent_copy, parent, parent_bytes, cudaMemcpyDeviceToDevice,
                                    stream));
      },
      stream, o.iters);
  add("cudaMemcpyAsync D2D (whole parent)", copy_ms, 2 * parent_bytes, 0);

  double ms = time_ms([&] { cuda::gather(dense, view, stream); }, stream, o.iters);
  add("gather view -> NCHW dense", ms, 2 * half_bytes, check_dense(nchw, "NCHW gather"));

  ms = time_ms([&] { cuda::scatter(view, dense, stream); }, stream, o.iters);
  add("scatter NCHW dense -> view", ms, 2 * half_bytes, check_parent("NCHW scatter"));

  ms = time_ms([&] { cuda::copy_device(dense_cl, view, stream); }, stream, o.iters);
  add("copy view -> channels-last dense", ms, 2 * half_bytes,
      check_dense(cl, "channels-last gather"));

  ms = time_ms([&] { cuda::copy_device(view, dense_cl, stream); }, stream, o.iters);
  add("copy channels-last dense -> view", ms, 2 * half_bytes,
      check_parent("channels-last scatter"));

  std::printf("\n%-40s %10s %10s %10s  %s\n", "case", "ms", "GB/s", "% copy", "check");
  int64_t total_bad = 0;
  for (const Row& r : rows) {
    std::printf("%-40s %10.4f %10.1f %9.1f%%  %s\n", r.name.c_str(), r.ms, r.gbps,
                100.0 * r.gbps / rows[0].gbps, r.bad == 0 ? "ok" : "MISMATCH");
    total_bad += r.bad;
  }
  std::printf("(GB/s counts bytes read + written; median of %d runs after 3 warm-ups)\n",
              o.iters);
  cuda::set_current_cuda_stream(0, nullptr);
  BENCH_CHECK(cudaFree(parent));
  BENCH_CHECK(cudaFree(parent_copy));
  BENCH_CHECK(cudaFree(dense));
  BENCH_CHECK(cudaStreamDestroy(stream));
  return total_bad == 0 ? 0 : 1;
}
