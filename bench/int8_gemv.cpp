// aotrt_int8_gemv_bench: the weight bytes per second of aoti_torch_cpu__weight_int8pack_mm
// at decode shapes (M = 1..8 rows of bfloat16 activations against an int8 [N, K] weight),
// through the C ABI a model calls. The weights cycle through a pool larger than the
// last-level cache (--pool-mib), so that every call reads its weight from DRAM, as a decode
// step does (1 GB of int8 weights for the 1B LLaMA); --hot reuses one weight instead.
// The pool is mapped with 4 KiB pages (MADV_NOHUGEPAGE), as the model .so's file-backed
// constants are; --huge asks for transparent huge pages instead. Per shape, the median and
// the best of --reps rounds, each the mean call over one pass through the pool. --int4
// times aoti_torch_cpu__weight_int4pack_mm_cpu_tensor instead (packed [N, K/2] bytes, groups
// of 128, bfloat16 scales and zeros; GB/s of packed weight bytes).
//
//   OMP_NUM_THREADS=2 aotrt_int8_gemv_bench [--reps R] [--pool-mib MIB] [--hot] [--huge]
//                                           [--int4] [--m 1,8] [--shapes 2048x2048,8192x2048]
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "aotrt/shim.h"

extern "C" AOTITorchError aoti_torch_cpu__weight_int8pack_mm(AtenTensorHandle self,
                                                             AtenTensorHandle mat2,
                                                             AtenTensorHandle scales,
                                                             AtenTensorHandle* ret0);
extern "C" AOTITorchError aoti_torch_cpu__weight_int4pack_mm_cpu_tensor(
    AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle group,
    AtenTensorHandle scales_and_zeros, AtenTensorHandle* ret0);

namespace {

void check(AOTITorchError rc, const char* what) {
  if (rc != AOTI_TORCH_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, aotrt_last_error());
    std::exit(1);
  }
}

AtenTensorHandle blob(void* data, std::vector<int64_t> sizes, int32_t dtype) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  AtenTensorHandle h = nullptr;
  check(aoti_torch_create_tensor_from_blob(data, static_cast<int64_t>(sizes.size()), sizes.data(),
                                           strides.data(), 0, dtype, aoti_torch_device_type_cpu(),
                                           0, &h),
        "aoti_torch_create_tensor_from_blob");
  return h;
}

std::vector<int64_t> ints(const char* s) {
  std::vector<int64_t> out;
  for (const char* p = s; *p != '\0';) {
    char* end = nullptr;
    out.push_back(std::strtoll(p, &end, 10));
    p = *end == '\0' ? end : end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  int64_t pool_mib = 512;
  bool hot = false, huge = false, int4 = false;
  std::vector<int64_t> ms = {1, 8};
  std::vector<std::pair<int64_t, int64_t>> shapes = {{2048, 2048}, {8192, 2048}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--reps") {
      reps = std::atoi(next), ++i;
    } else if (a == "--pool-mib") {
      pool_mib = std::atoll(next), ++i;
    } else if (a == "--hot") {
      hot = true;
    } else if (a == "--int4") {
      int4 = true;
    } else if (a == "--huge") {
      huge = true;
    } else if (a == "--m") {
      ms = ints(next), ++i;
    } else if (a == "--shapes") {
      shapes.clear();
      for (const char* p = next; *p != '\0';) {
        char* end = nullptr;
        const int64_t n = std::strtoll(p, &end, 10);
        const int64_t k = std::strtoll(end + 1, &end, 10);
        shapes.emplace_back(n, k);
        p = *end == '\0' ? end : end + 1;
      }
      ++i;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  const size_t pool_bytes = static_cast<size_t>(pool_mib) << 20;
  void* pool = ::mmap(nullptr, pool_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pool == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  ::madvise(pool, pool_bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  std::mt19937 rng(1);
  auto* bytes = static_cast<int8_t*>(pool);
  uint64_t state = 88172645463325252ull;  // xorshift64: random bytes, quickly
  for (size_t i = 0; i + 8 <= pool_bytes; i += 8) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    std::memcpy(bytes + i, &state, 8);
  }
  // The read bandwidth of these threads over the pool (a sum of its 64-bit words), the
  // figure the kernel's is measured against: the best of --reps passes.
  double read_best = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto* words = static_cast<const uint64_t*>(pool);
    const int64_t n = static_cast<int64_t>(pool_bytes / 64);  // 8 words a step, 8 sums
    uint64_t sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t* p = words + i * 8;
      sum += (p[0] + p[1]) + (p[2] + p[3]) + ((p[4] + p[5]) + (p[6] + p[7]));
    }
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (sum == 42) std::printf("(sum)\n");  // keeps the sum
    if (r > 0) read_best = std::max(read_best, static_cast<double>(pool_bytes) / dt.count() / 1e9);
  }
  const char* threads = std::getenv("OMP_NUM_THREADS");
  std::printf("%s, threads %s, weights %s, %s pages\n", int4 ? "int4 (groups of 128)" : "int8",
              threads != nullptr ? threads : "(default)",
              hot ? "one, reused (cache-hot)" : "cycling through a pool (from DRAM)",
              huge ? "huge" : "4 KiB");
  std::printf("read bandwidth over the pool: %.1f GB/s (best pass)\n", read_best);
  std::printf("%6s %6s %3s %10s %10s %10s %10s\n", "N", "K", "M", "us med", "us best",
              "GB/s med", "GB/s best");
  for (const auto& [N, K] : shapes) {
    const int64_t wbytes = int4 ? N * K / 2 : N * K;
    const int64_t count = hot ? 1 : std::max<int64_t>(1, static_cast<int64_t>(pool_bytes) / wbytes);
    std::vector<AtenTensorHandle> weights;
    for (int64_t c = 0; c < count; ++c) {
      weights.push_back(int4 ? blob(bytes + c * wbytes, {N, K / 2}, aoti_torch_dtype_uint8())
                             : blob(bytes + c * wbytes, {N, K}, aoti_torch_dtype_int8()));
    }
    constexpr int64_t kGroup = 128;
    int64_t group_value = kGroup;
    // int8: a scale per column; int4: (scale, zero) per group and column.
    std::vector<uint16_t> scales(static_cast<size_t>(int4 ? K / kGroup * N * 2 : N), 0x3c00 /* bf16 0.0078 */);
    AtenTensorHandle sc = int4 ? blob(scales.data(), {K / kGroup, N, 2}, aoti_torch_dtype_bfloat16())
                               : blob(scales.data(), {N}, aoti_torch_dtype_bfloat16());
    AtenTensorHandle group = blob(&group_value, {}, aoti_torch_dtype_int64());
    for (const int64_t M : ms) {
      std::vector<uint16_t> x(static_cast<size_t>(M * K));
      for (auto& v : x) v = static_cast<uint16_t>(0x3f80 + (rng() & 0x7f));  // bf16 in [1, 2)
      AtenTensorHandle xt = blob(x.data(), {M, K}, aoti_torch_dtype_bfloat16());
      const int64_t calls = hot ? 64 : count;
      std::vector<double> per_call;
      for (int r = 0; r <= reps; ++r) {  // round 0 warms up
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t c = 0; c < calls; ++c) {
          AtenTensorHandle out = nullptr;
          AtenTensorHandle w = weights[static_cast<size_t>(c % count)];
          check(int4 ? aoti_torch_cpu__weight_int4pack_mm_cpu_tensor(xt, w, group, sc, &out)
                     : aoti_torch_cpu__weight_int8pack_mm(xt, w, sc, &out),
                "the weight matmul");
          check(aoti_torch_delete_tensor_object(out), "aoti_torch_delete_tensor_object");
        }
        const std::chrono::duration<double, std::micro> dt = std::chrono::steady_clock::now() - t0;
        if (r > 0) per_call.push_back(dt.count() / static_cast<double>(calls));
      }
      std::sort(per_call.begin(), per_call.end());
      const double med = per_call[per_call.size() / 2], best = per_call.front();
      const double gb = static_cast<double>(wbytes) / 1e9;
      std::printf("%6ld %6ld %3ld %10.1f %10.1f %10.2f %10.2f\n", static_cast<long>(N),
                  static_cast<long>(K), static_cast<long>(M), med, best, gb / (med * 1e-6),
                  gb / (best * 1e-6));
      check(aoti_torch_delete_tensor_object(xt), "aoti_torch_delete_tensor_object");
    }
    for (AtenTensorHandle w : weights) check(aoti_torch_delete_tensor_object(w), "aoti_torch_delete_tensor_object");
    check(aoti_torch_delete_tensor_object(sc), "aoti_torch_delete_tensor_object");
    check(aoti_torch_delete_tensor_object(group), "aoti_torch_delete_tensor_object");
  }
  ::munmap(pool, pool_bytes);
  return 0;
}
