// aotrt_quant_bench: GPU time of the integer matmul and decode attention kernels
// (Notes [Int4 matmul kernels], [Int8 weight matmul on CUDA], [Int8 matmul on
// CUDA], [Decode attention]) beside the exact kernels, per shape, in microseconds
// and GB/s (the bytes each call must read - weights, scales, activations, the live
// part of the cache - and write, over its time).
//
// Each measurement captures `calls` calls into a CUDA graph on aotrt's private
// stream (aotrt::cuda::Graph) and times replays with CUDA events, so host launch
// costs are left out. The calls rotate over copies of the weights (or caches) that
// together exceed 3x the L2 cache, so every call reads from HBM. A plain read
// kernel over 1 GiB gives the card's read bandwidth; each line's last column is
// the call's time over the time that bandwidth needs for its bytes (1.00: at the
// bandwidth; the decode attention target is 1.1, the int4 decode one 1/0.7).
//
//   aotrt_quant_bench [--only int4|int8|intmm|attention] [--sweep] [--replays N]
//
// --sweep adds every split and tile of the int4 kernels. Output: one table per
// family, Markdown.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "aotrt/aotrt.h"
#include "aotrt/shim.h"
#include "aotrt/shim_cuda.h"
#include "core/handles.h"
#include "cuda/cuda.h"
#include "cuda/library_ops.h"
#include "cuda/runtime.h"
#include "ops/dispatch.h"
#include "ops/int_matmul.h"

// In torch's generated c_shim_cuda.h (libaotrt exports it), not in aotrt's headers.
extern "C" AOTITorchError aoti_torch_cuda__int_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                      AtenTensorHandle mat2);

namespace {

using aotrt::TensorImpl;

#define BENCH_CHECK(expr)                                                                   \
  do {                                                                                      \
    const cudaError_t e_ = (expr);                                                          \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #expr, cudaGetErrorString(e_),       \
                   __FILE__, __LINE__);                                                     \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)
#define SHIM_CHECK(expr)                                                                   \
  do {                                                                                     \
    if ((expr) != AOTI_TORCH_SUCCESS) {                                                    \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #expr, aotrt_last_error(), __FILE__, \
                   __LINE__);                                                              \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

constexpr int32_t kI8 = 1, kI32 = 3, kF16 = 5, kF32 = 6, kBF16 = 15;

// An owned CUDA tensor from aoti_torch_empty_strided, contiguous.
class Buf {
 public:
  Buf() = default;
  Buf(std::vector<int64_t> sizes, int32_t dtype) : sizes_(std::move(sizes)) {
    std::vector<int64_t> strides(sizes_.size());
    int64_t run = 1;
    for (size_t i = sizes_.size(); i-- > 0;) {
      strides[i] = run;
      run *= std::max<int64_t>(sizes_[i], 1);
    }
    SHIM_CHECK(aoti_torch_empty_strided(static_cast<int64_t>(sizes_.size()), sizes_.data(),
                                        strides.data(), dtype, 1, 0, &h_));
    numel_ = run;
  }
  Buf(Buf&& o) noexcept : h_(o.h_), sizes_(std::move(o.sizes_)), numel_(o.numel_) { o.h_ = nullptr; }
  Buf& operator=(Buf&&) = delete;
  ~Buf() {
    if (h_) (void)aoti_torch_delete_tensor_object(h_);
  }
  AtenTensorHandle get() const { return h_; }
  const TensorImpl& impl() const { return *aotrt::handle_lookup(h_); }
  void* data() const {
    void* p = nullptr;
    SHIM_CHECK(aoti_torch_get_data_ptr(h_, &p));
    return p;
  }
  int64_t numel() const { return numel_; }

 private:
  AtenTensorHandle h_ = nullptr;
  std::vector<int64_t> sizes_;
  int64_t numel_ = 0;
};

// Fills `bytes` with a hash of the index (any bit pattern: the weights), or, for
// 16-bit floats, values in [-1, 1) (activations, scales, caches).
__global__ void fill_bits(uint32_t* p, int64_t words, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < words; i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    p[i] = x ^ (x >> 15);
  }
}
template <typename T>
__global__ void fill_float(T* p, int64_t n, uint32_t seed, float scale, float offset) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    const float v = offset + scale * (static_cast<float>(x & 0xffffff) / 8388608.0f - 1.0f);
    if constexpr (std::is_same_v<T, float>) p[i] = v;
    else if constexpr (std::is_same_v<T, __half>) p[i] = __float2half_rn(v);
    else p[i] = __float2bfloat16_rn(v);
  }
}
void random_bits(const Buf& b, size_t bytes, uint32_t seed) {
  fill_bits<<<1024, 256>>>(static_cast<uint32_t*>(b.data()), static_cast<int64_t>(bytes / 4), seed);
  BENCH_CHECK(cudaGetLastError());
}
void random_float(const Buf& b, int32_t dtype, uint32_t seed, float scale = 1.0f, float offset = 0.0f) {
  if (dtype == kF32) fill_float<float><<<1024, 256>>>(static_cast<float*>(b.data()), b.numel(), seed, scale, offset);
  else if (dtype == kF16) fill_float<__half><<<1024, 256>>>(static_cast<__half*>(b.data()), b.numel(), seed, scale, offset);
  else fill_float<__nv_bfloat16><<<1024, 256>>>(static_cast<__nv_bfloat16*>(b.data()), b.numel(), seed, scale, offset);
  BENCH_CHECK(cudaGetLastError());
}

int g_replays = 20;
int64_t g_l2_bytes = 50 << 20;

// Copies of a set of tensors that together exceed 3x L2 (at least 2, at most 16).
int copies_for(int64_t bytes_per_copy) {
  const int64_t want = (3 * g_l2_bytes + bytes_per_copy - 1) / std::max<int64_t>(bytes_per_copy, 1);
  return static_cast<int>(std::clamp<int64_t>(want, 2, 16));
}

// Microseconds per call of `call(i)` (i: the call's index in the graph).
double time_calls(int calls, const std::function<bool(int)>& call) {
  aotrt::cuda::Graph graph(0);
  {
    aotrt::cuda::Graph::OnPrivateStream on(graph);
    for (int i = 0; i < calls; ++i) {
      if (!call(i)) return -1;
    }
    graph.begin_capture();
    for (int i = 0; i < calls; ++i) {
      if (!call(i)) {
        graph.abandon_capture();
        return -1;
      }
    }
    graph.end_capture("aotrt_quant_bench");
  }
  graph.prepare(nullptr);
  graph.replay(nullptr);
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  BENCH_CHECK(cudaEventRecord(start, nullptr));
  for (int r = 0; r < g_replays; ++r) graph.replay(nullptr);
  BENCH_CHECK(cudaEventRecord(stop, nullptr));
  BENCH_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  BENCH_CHECK(cudaEventElapsedTime(&ms, start, stop));
  BENCH_CHECK(cudaEventDestroy(start));
  BENCH_CHECK(cudaEventDestroy(stop));
  return 1000.0 * ms / (static_cast<double>(g_replays) * calls);
}

__global__ void read_kernel(const uint4* p, int64_t n, uint32_t* sink) {
  uint32_t acc = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const uint4 v = __ldg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) *sink = acc;  // keeps the loads
}

// GB/s of a plain read of 1 GiB (the denominator of every line's last column).
double read_bandwidth() {
  const int64_t bytes = int64_t{1} << 30;
  Buf buf({bytes}, kI8), sink({1}, kI32);
  random_bits(buf, static_cast<size_t>(bytes), 1);
  int sms = 0;
  BENCH_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const double us = time_calls(4, [&](int) {
    read_kernel<<<sms * 8, 512, 0, aotrt::cuda::current_cuda_stream(0)>>>(
        static_cast<const uint4*>(buf.data()), bytes / 16, static_cast<uint32_t*>(sink.data()));
    return cudaGetLastError() == cudaSuccess;
  });
  return static_cast<double>(bytes) / us / 1e3;
}

double g_read_gbps = 0;

void row(const char* what, double us, double bytes) {
  if (us < 0) {
    std::printf("| %s | refused | | |\n", what);
    return;
  }
  const double gbps = bytes / us / 1e3;
  std::printf("| %s | %.2f | %.0f | %.2f |\n", what, us, gbps, us / (bytes / g_read_gbps / 1e3));
}

// --- int4 -----------------------------------------------------------------------------------

void bench_int4(bool sweep) {
  std::printf("\n### _weight_int4pack_mm (tinygemm layout, group 128, innerKTiles 8)\n\n");
  std::printf("| shape (M x N x K) and kernel | us | GB/s | x read time |\n|---|---|---|---|\n");
  struct Shape {
    int64_t M, N, K;
  };
  // An 8B model's projections (hidden 4096, MLP 14336) at M 1 to 1024, then the 1.1B
  // LLaMA's decode step at M 1: q/o, k/v, gate/up, down, lm_head.
  const std::vector<Shape> shapes = {{1, 4096, 4096},   {1, 14336, 4096}, {1, 4096, 14336},
                                     {4, 4096, 4096},   {8, 4096, 4096},  {16, 4096, 4096},
                                     {17, 4096, 4096},  {32, 4096, 4096}, {64, 4096, 4096},
                                     {128, 4096, 4096}, {256, 4096, 4096}, {1024, 4096, 4096},
                                     {64, 14336, 4096}, {1, 2048, 2048},  {1, 256, 2048},
                                     {1, 5632, 2048},   {1, 2048, 5632},  {1, 32000, 2048}};
  const int64_t group = 128, inner = 8;
  for (const Shape& s : shapes) {
    const int64_t weight_bytes = s.N * s.K / 2, sz_bytes = s.K / group * s.N * 4;
    const int copies = copies_for(weight_bytes + sz_bytes);
    std::vector<Buf> b, sz;
    for (int c = 0; c < copies; ++c) {
      b.emplace_back(std::vector<int64_t>{s.N / 8, s.K / (inner * 16), 32, inner / 2}, kI32);
      random_bits(b.back(), static_cast<size_t>(weight_bytes), 7u + c);
      sz.emplace_back(std::vector<int64_t>{s.K / group, s.N, 2}, kBF16);
      random_float(sz.back(), kBF16, 11u + c, 0.02f, 0.03f);
    }
    Buf a({s.M, s.K}, kBF16), out({s.M, s.N}, kBF16);
    random_float(a, kBF16, 3);
    const double bytes = static_cast<double>(weight_bytes + sz_bytes + s.M * s.K * 2 + s.M * s.N * 2);
    auto run = [&](const std::string& label, aotrt::cuda::Int4KernelChoice choice) {
      const double us = time_calls(2 * copies, [&](int i) {
        return aotrt::cuda::int4_tinygemm_mm_with(choice, out.impl(), a.impl(), b[i % copies].impl(),
                                                  group, sz[i % copies].impl(), "bench");
      });
      const std::string what = std::to_string(s.M) + " x " + std::to_string(s.N) + " x " +
                               std::to_string(s.K) + " " + label;
      row(what.c_str(), us, bytes);
    };
    using aotrt::cuda::Int4Kernel;
    if (s.M <= 64) run("exact", {Int4Kernel::kExact});
    run("auto", {});
    if (s.M <= aotrt::cuda::kInt4GemvMaxRows) run("gemv", {Int4Kernel::kGemv});
    if (s.M <= 64) run("decode", {Int4Kernel::kDecode});
    run("gemm", {Int4Kernel::kGemm});
    if (!sweep) continue;
    if (s.M <= aotrt::cuda::kInt4GemvMaxRows) {
      for (int splits : {1, 2, 4, 8})
        run("gemv splits " + std::to_string(splits), {Int4Kernel::kGemv, splits, 0});
    }
    if (s.M <= 64) {
      for (int tiles : {1, 2, 4})
        for (int splits : {1, 2, 4, 8})
          run("decode tiles " + std::to_string(tiles) + " splits " + std::to_string(splits),
              {Int4Kernel::kDecode, splits, tiles});
    }
    for (int tiles : {64, 128})
      for (int splits : {1, 2, 4, 8})
        run("gemm rows " + std::to_string(tiles) + " splits " + std::to_string(splits),
            {Int4Kernel::kGemm, splits, tiles});
  }
}

// --- int8 weight-only and _int_mm ----------------------------------------------------------

void bench_int8() {
  std::printf("\n### _weight_int8pack_mm (bfloat16 A and scales)\n\n");
  std::printf("| shape (M x N x K) and kernel | us | GB/s | x read time |\n|---|---|---|---|\n");
  const aotrt::ops::IntMatmulKernels* table = aotrt::KernelRegistry<aotrt::ops::IntMatmulKernels>::cuda;
  for (const auto& [M, N, K] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 4096, 4096}, {1, 14336, 4096}, {4, 4096, 4096}, {16, 4096, 4096}, {64, 4096, 4096}}) {
    const int copies = copies_for(N * K);
    std::vector<Buf> w;
    for (int c = 0; c < copies; ++c) {
      w.emplace_back(std::vector<int64_t>{N, K}, kI8);
      random_bits(w.back(), static_cast<size_t>(N * K), 5u + c);
    }
    Buf a({M, K}, kBF16), sc({N}, kBF16), out({M, N}, kBF16);
    Buf a32({M, K}, kF32), sc32({N}, kF32), out32({M, N}, kF32);
    random_float(a, kBF16, 1);
    random_float(sc, kBF16, 2, 0.001f, 0.01f);
    random_float(a32, kF32, 1);
    random_float(sc32, kF32, 2, 0.001f, 0.01f);
    const double bytes = static_cast<double>(N * K + N * 2 + M * K * 2 + M * N * 2);
    const std::string shape = std::to_string(M) + " x " + std::to_string(N) + " x " + std::to_string(K);
    row((shape + " native (bf16)").c_str(), time_calls(2 * copies, [&](int i) {
          table->int8_weight_mm_native(out.impl(), a.impl(), w[i % copies].impl(), sc.impl());
          return true;
        }), bytes);
    if (M <= 16) {
      row((shape + " exact (fp32)").c_str(), time_calls(2 * copies, [&](int i) {
            table->int8_weight_mm(out32.impl(), a32.impl(), w[i % copies].impl(), sc32.impl());
            return true;
          }), bytes);
    }
  }

  std::printf("\n### _int_mm_out (int8, mat2 a transposed [N, K] weight)\n\n");
  std::printf("| shape (M x N x K) and kernel | us | GB/s | x read time |\n|---|---|---|---|\n");
  for (const auto& [M, N, K] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 4096, 4096}, {16, 4096, 4096}, {32, 4096, 4096}, {256, 4096, 4096}, {1024, 4096, 4096}}) {
    const int copies = copies_for(N * K);
    std::vector<Buf> w;
    std::vector<AtenTensorHandle> wt(static_cast<size_t>(copies));
    for (int c = 0; c < copies; ++c) {
      w.emplace_back(std::vector<int64_t>{N, K}, kI8);
      random_bits(w.back(), static_cast<size_t>(N * K), 9u + c);
      const int64_t sizes[] = {K, N}, strides[] = {1, K};
      SHIM_CHECK(aoti_torch__reinterpret_tensor(w.back().get(), 2, sizes, strides, 0, &wt[static_cast<size_t>(c)]));
    }
    Buf a({M, K}, kI8), out({M, N}, kI32);
    random_bits(a, static_cast<size_t>(M * K), 4);
    const double bytes = static_cast<double>(N * K + M * K + M * N * 4);
    const std::string shape = std::to_string(M) + " x " + std::to_string(N) + " x " + std::to_string(K);
    const uint64_t lt_before = aotrt::cuda::gemm_plan_stats().lt_calls;
    const double us = time_calls(2 * copies, [&](int i) {
      return aoti_torch_cuda__int_mm_out(out.get(), a.get(), wt[static_cast<size_t>(i % copies)]) == AOTI_TORCH_SUCCESS;
    });
    const bool lt = aotrt::cuda::gemm_plan_stats().lt_calls > lt_before;
    row((shape + (lt ? " cuBLASLt" : " GEMV / aotrt kernel")).c_str(), us, bytes);
    std::vector<Buf> dense;  // the exact kernel reads [K, N] row-major
    for (int c = 0; c < copies; ++c) {
      dense.emplace_back(std::vector<int64_t>{K, N}, kI8);
      random_bits(dense.back(), static_cast<size_t>(N * K), 9u + c);
    }
    if (M <= 256) {
      row((shape + " exact").c_str(), time_calls(2 * copies, [&](int i) {
            table->int_mm(out.impl(), a.impl(), dense[i % copies].impl());
            return true;
          }), bytes);
    }
    for (AtenTensorHandle h : wt) (void)aoti_torch_delete_tensor_object(h);
  }
}

// --- decode attention -----------------------------------------------------------------------

void bench_attention() {
  std::printf("\n### Decode attention (bf16 cuDNN-flavor call: B 1, H 32 query heads, a static cache's mask; "
              "decode kernel = AOTRT_DECODE_ATTENTION=1, previous path = 0)\n\n");
  std::printf("| heads, Lq, cache length (filled) and path | us | GB/s | x read time |\n|---|---|---|---|\n");
  const int64_t B = 1, H = 32;
  struct Shape {
    int64_t Hk, E, Lq, Lk, filled;
    bool gqa_step = false;  // a shape the export's GQA step calls: labelled "GQA step"
  };
  // 8 key heads of E 128 (Llama-3-8B); 32 of E 64: TinyLlama's step as Hugging Face's SDPA
  // call hands it over (repeat_kv copies each of the 4 key heads to its 8 query heads).
  // The GQA step rows: the calls on the unrepeated cache (32 query heads over TinyLlama's 4
  // key heads at E 64, over Llama-3-8B's 8 at E 128), short caches that the decode kernel
  // serves in one launch on sm_90 (a cluster of splits, Note [Decode attention]).
  for (const Shape& s : std::vector<Shape>{
           {8, 128, 1, 1024, 1024},  {8, 128, 1, 4096, 4096},   {8, 128, 1, 16384, 16384},
           {8, 128, 1, 32768, 32768}, {8, 128, 1, 32768, 1024},  {8, 128, 1, 32768, 8192},
           {8, 128, 4, 8192, 8192},   {8, 128, 8, 8192, 8192},   {8, 128, 1, 4096, 2048},
           {8, 128, 1, 8192, 4096},   {32, 64, 1, 1024, 540},    {32, 64, 1, 1024, 1024},
           {32, 64, 1, 4096, 2048},   {32, 64, 1, 8192, 4096},
           {4, 64, 1, 1024, 540, true}, {4, 64, 1, 4096, 2048, true}, {8, 128, 1, 1024, 540, true}}) {
    const int64_t Hk = s.Hk, E = s.E;
    const int copies = copies_for(2 * B * Hk * s.filled * E * 2);
    std::vector<Buf> k, v, mask;
    for (int c = 0; c < copies; ++c) {
      k.emplace_back(std::vector<int64_t>{B, Hk, s.Lk, E}, kBF16);
      v.emplace_back(std::vector<int64_t>{B, Hk, s.Lk, E}, kBF16);
      random_float(k.back(), kBF16, 21u + c);
      random_float(v.back(), kBF16, 31u + c);
    }
    Buf q({B, H, s.Lq, E}, kBF16), bias({B, 1, s.Lq, s.Lk}, kBF16);
    random_float(q, kBF16, 41);
    {  // 0 where key j < filled + i, -inf past it (a boolean mask made additive)
      std::vector<uint16_t> host(static_cast<size_t>(s.Lq * s.Lk));
      for (int64_t i = 0; i < s.Lq; ++i)
        for (int64_t j = 0; j < s.Lk; ++j) host[static_cast<size_t>(i * s.Lk + j)] = j < s.filled - s.Lq + 1 + i ? 0x0000 : 0xff80;
      BENCH_CHECK(cudaMemcpy(bias.data(), host.data(), host.size() * 2, cudaMemcpyHostToDevice));
    }
    const double bytes = static_cast<double>(2 * B * Hk * s.filled * E * 2 + 2 * B * H * s.Lq * E * 2 + B * s.Lq * s.Lk * 2);
    for (const bool decode : {true, false}) {
      aotrt::cuda::set_decode_attention_mode(decode ? aotrt::cuda::DecodeAttentionMode::kOn
                                                    : aotrt::cuda::DecodeAttentionMode::kOff);
      const double us = time_calls(2 * copies, [&](int i) {
        AtenTensorHandle bh = bias.get(), out, lse, r2, r3, r6, r7, r8;
        int64_t mq = 0, mk = 0;
        const bool ok = aoti_torch_cuda__scaled_dot_product_cudnn_attention(
                            q.get(), k[i % copies].get(), v[i % copies].get(), &bh, 0, 0.0, 0, 0, nullptr, &out,
                            &lse, &r2, &r3, &mq, &mk, &r6, &r7, &r8) == AOTI_TORCH_SUCCESS;
        if (!ok) return false;
        for (AtenTensorHandle h : {out, lse, r2, r3, r6, r7, r8}) (void)aoti_torch_delete_tensor_object(h);
        return true;
      });
      const std::string heads = std::to_string(H) + " over " + std::to_string(Hk) + " E " +
                                std::to_string(E) + ", ";
      const std::string what = (s.gqa_step ? "GQA step, " + heads : Hk == 8 ? "" : heads) +
                               "Lq " + std::to_string(s.Lq) + ", " + std::to_string(s.Lk) + " (" +
                               std::to_string(s.filled) + ") " + (decode ? "decode kernel" : "previous path (cuDNN)");
      row(what.c_str(), us, bytes);
    }
    aotrt::cuda::set_decode_attention_mode(aotrt::cuda::DecodeAttentionMode::kAuto);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  bool sweep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--sweep") {
      sweep = true;
    } else if (arg == "--replays" && i + 1 < argc) {
      g_replays = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--only int4|int8|attention] [--sweep] [--replays N]\n", argv[0]);
      return 2;
    }
  }
  int l2 = 0;
  BENCH_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  g_l2_bytes = l2;
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  g_read_gbps = read_bandwidth();
  std::printf("# aotrt_quant_bench on %s (%d SMs, L2 %d MiB): plain read %.0f GB/s\n", prop.name,
              prop.multiProcessorCount, l2 >> 20, g_read_gbps);
  if (only.empty() || only == "int4") bench_int4(sweep);
  if (only.empty() || only == "int8") bench_int8();
  if (only.empty() || only == "attention") bench_attention();
  return 0;
}
