// aotrt_gemm_bench: host time per GEMM shim call on cuBLASLt plans (Note
// [GEMM plans] in src/cuda/matmul.cpp) and, for comparison, on the
// cublasGemmEx fallback (set_gemm_lt_refusal_for_testing). The shapes are
// small, so the device keeps up and the time measured is the host's: the
// whole shim (argument checks, views, plan lookup, the library call).
// Per case and path, the median and the minimum over --reps runs of --n
// calls each, the stream synchronised between runs (outside the timing).
//
//   aotrt_gemm_bench [--n N] [--reps R]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "aotrt/shim.h"
#include "aotrt/shim_cuda.h"
#include "cuda/library_ops.h"

namespace {

void check(AOTITorchError rc, const char* what) {
  if (rc != AOTI_TORCH_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, aotrt_last_error());
    std::exit(1);
  }
}

// A zeroed CUDA tensor with the given sizes and strides.
AtenTensorHandle tensor(std::vector<int64_t> sizes, std::vector<int64_t> strides, int32_t dtype) {
  AtenTensorHandle h = nullptr;
  check(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(),
                                 dtype, aoti_torch_device_type_cuda(), 0, &h),
        "aoti_torch_empty_strided");
  check(aoti_torch_zero_(h), "aoti_torch_zero_");
  return h;
}

struct Case {
  std::string name;
  std::function<AOTITorchError()> call;
};

struct Timing {
  double median_us, min_us;
};

Timing time_calls(const Case& c, int n, int reps) {
  for (int i = 0; i < 20; ++i) check(c.call(), c.name.c_str());  // plans, workspace
  if (cudaDeviceSynchronize() != cudaSuccess) std::exit(1);
  std::vector<double> per_call;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) check(c.call(), c.name.c_str());
    const auto stop = std::chrono::steady_clock::now();
    per_call.push_back(std::chrono::duration<double, std::micro>(stop - start).count() / n);
    if (cudaDeviceSynchronize() != cudaSuccess) std::exit(1);
  }
  std::sort(per_call.begin(), per_call.end());
  return {per_call[per_call.size() / 2], per_call.front()};
}

}  // namespace

int main(int argc, char** argv) {
  int n = 200, reps = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--n") == 0) n = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  }
  if (n < 1 || reps < 1) {
    std::fprintf(stderr, "usage: aotrt_gemm_bench [--n N] [--reps R]\n");
    return 2;
  }
  const int32_t f32 = aoti_torch_dtype_float32(), f16 = aoti_torch_dtype_float16(),
                bf16 = aoti_torch_dtype_bfloat16();
  // resnet's 1x1 convolution as conv.cpp runs it: [pixels, C] @ w^T [C, O].
  AtenTensorHandle cx = tensor({3136, 64}, {64, 1}, f32), cw = tensor({64, 256}, {1, 64}, f32),
                   cy = tensor({3136, 256}, {256, 1}, f32);
  // resnet50's classifier: addmm with a bias vector (the epilogue).
  AtenTensorHandle fx = tensor({32, 2048}, {2048, 1}, f32), fw = tensor({2048, 1000}, {1, 2048}, f32),
                   fb = tensor({1000}, {1}, f32), fy = tensor({32, 1000}, {1000, 1}, f32);
  // A decoder's projection for one token, bf16.
  AtenTensorHandle dx = tensor({1, 1024}, {1024, 1}, bf16), dw = tensor({1024, 1024}, {1, 1024}, bf16),
                   dy = tensor({1, 1024}, {1024, 1}, bf16);
  // Attention scores per head, fp16.
  AtenTensorHandle bq = tensor({8, 64, 64}, {4096, 64, 1}, f16),
                   bk = tensor({8, 64, 64}, {4096, 1, 64}, f16),
                   bs = tensor({8, 64, 64}, {4096, 64, 1}, f16);
  const std::vector<Case> cases = {
      {"mm fp32 [3136,64] @ [64,256] (1x1 conv)", [&] { return aoti_torch_cuda_mm_out(cy, cx, cw); }},
      {"addmm fp32 bias, [32,2048] @ [2048,1000]",
       [&] { return aoti_torch_cuda_addmm_out(fy, fb, fx, fw, 1.0, 1.0); }},
      {"mm bf16 [1,1024] @ [1024,1024]", [&] { return aoti_torch_cuda_mm_out(dy, dx, dw); }},
      {"bmm fp16 8 x [64,64] @ [64,64]^T", [&] { return aoti_torch_cuda_bmm_out(bs, bq, bk); }},
  };
  std::printf("host time per shim call, us (median / min of %d runs of %d calls)\n", reps, n);
  std::printf("%-44s %20s %20s\n", "case", "cublasLtMatmul plan", "cublasGemmEx");
  for (const Case& c : cases) {
    aotrt::cuda::set_gemm_lt_refusal_for_testing(false);
    const auto lt_before = aotrt::cuda::gemm_plan_stats();
    const Timing lt = time_calls(c, n, reps);
    const auto lt_after = aotrt::cuda::gemm_plan_stats();
    aotrt::cuda::set_gemm_lt_refusal_for_testing(true);
    const Timing ex = time_calls(c, n, reps);
    const auto ex_after = aotrt::cuda::gemm_plan_stats();
    aotrt::cuda::set_gemm_lt_refusal_for_testing(false);
    std::printf("%-44s %9.2f / %-8.2f %9.2f / %-8.2f\n", c.name.c_str(), lt.median_us, lt.min_us,
                ex.median_us, ex.min_us);
    if (lt_after.fallback_calls != lt_before.fallback_calls ||
        ex_after.lt_calls != lt_after.lt_calls) {
      std::printf("  (paths mixed: cuBLASLt refused this case, %llu calls fell back)\n",
                  static_cast<unsigned long long>(lt_after.fallback_calls -
                                                  lt_before.fallback_calls));
    }
  }
  for (AtenTensorHandle h : {cx, cw, cy, fx, fw, fb, fy, dx, dw, dy, bq, bk, bs}) {
    aoti_torch_delete_tensor_object(h);
  }
  return 0;
}
