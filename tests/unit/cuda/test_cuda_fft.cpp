// The CUDA FFT kernels (src/cuda/ops/fft.cu, Note [cuFFT passes]) beyond the
// device-generic rows of tests/unit/ops/test_ops_fft.cpp: what c2r makes of
// imaginary parts in the DC and Nyquist bins (cuFFT's answer, as ATen's CUDA
// kernel gives it), and the contract of a kernel inside a run: the calls of a
// warm run capture into a CUDA graph (no host sync, nothing on another stream,
// no cudaMalloc; cached plans, work areas from the caching allocator) and its
// replay gives the eager values.
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <iostream>
#include <string>
#include <vector>

#include "core/handles.h"
#include "cuda/cuda.h"
#include "cuda/runtime.h"
#include "ops/fft.h"
#include "op_test_util.h"
#include "ops/ops_testing.h"

namespace aotrt::test {
namespace {

using FftShim = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, int64_t, int32_t,
                                   AtenTensorHandle*);
using Unary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);

// A complex tensor on backend b from interleaved (re, im) values of `sizes`.
Tensor complex_tensor(const Backend& b, Dims sizes, const std::vector<double>& pairs) {
  Dims real_sizes = sizes;
  real_sizes.push_back(2);
  Tensor r = make_tensor(b, Values{kF32, real_sizes, row_major(real_sizes), 0, pairs});
  Tensor z;
  const auto as_complex = find_op<Unary>(b, "view_as_complex");
  EXPECT_NE(as_complex, nullptr);
  EXPECT_EQ(as_complex(r.get(), z.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  return z;
}

// c2r of n = 8 points from 5 bins whose DC and Nyquist bins have imaginary
// parts: ATen's CUDA kernel hands its (contiguous) copy to cuFFT's C2R, so its
// result is cuFFT's own for these bins, which this test computes with a plain
// cuFFT plan and compares with aotrt's (which must hand cuFFT the bins as they
// are). Whether cuFFT ignores those imaginary parts as ATen's CPU kernel does
// is printed, not asserted: either is ATen's CUDA behaviour.
TEST(CudaFft, C2rGivesCuFFTsResultForImaginaryDcAndNyquist) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  const int64_t batch = 2, n = 8, bins = n / 2 + 1;
  std::vector<double> pairs;
  for (int64_t i = 0; i < batch * bins; ++i) {
    pairs.push_back(static_cast<double>((i * 7 + 3) % 11) - 5);
    pairs.push_back(static_cast<double>((i * 5 + 1) % 7) - 3);  // DC and Nyquist too
  }
  Tensor z = complex_tensor(b, {batch, bins}, pairs);
  const std::vector<int64_t> dim{1};
  Tensor out(handle_register(ops::fft_c2r(*handle_lookup(z.get()), dim, 0, n, "test")));
  const std::vector<double> got = values_of(out.get());

  // cuFFT alone: a basic-layout plan of its own (auto-allocated work area).
  std::vector<float> host_in(pairs.begin(), pairs.end());
  std::vector<float> host_out(static_cast<size_t>(batch * n));
  void *d_in = nullptr, *d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, host_in.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, host_out.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, host_in.data(), host_in.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  cufftHandle plan = 0;
  ASSERT_EQ(cufftPlan1d(&plan, static_cast<int>(n), CUFFT_C2R, static_cast<int>(batch)),
            CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecC2R(plan, static_cast<cufftComplex*>(d_in), static_cast<cufftReal*>(d_out)),
            CUFFT_SUCCESS);
  ASSERT_EQ(cudaMemcpy(host_out.data(), d_out, host_out.size() * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  (void)cufftDestroy(plan);
  (void)cudaFree(d_in);
  (void)cudaFree(d_out);
  const std::vector<double> want(host_out.begin(), host_out.end());
  EXPECT_TRUE(same_values(got, want, 1e-5)) << "aotrt's c2r against cuFFT's own C2R";

  // The CPU's answer (imaginary parts of DC and Nyquist ignored), for the record.
  Tensor zc = complex_tensor(built_backends()[0], {batch, bins}, pairs);
  Tensor cpu(handle_register(ops::fft_c2r(*handle_lookup(zc.get()), dim, 0, n, "test")));
  const bool ignores = same_values(want, values_of(cpu.get()), 1e-5);
  std::cout << "cuFFT's C2R " << (ignores ? "ignores" : "uses")
            << " the imaginary parts of the DC and Nyquist bins\n";
  RecordProperty("cufft_c2r_ignores_imaginary_dc_nyquist", ignores ? "yes" : "no");
}

// r2c, c2c (transposed, so its passes gather and write back) and c2r, captured
// after two warm-up calls: the capture fails on a host sync, on work on
// another stream and on a cache miss of the allocator (a work area or a
// temporary cudaMalloc'd), and a plan made inside it would allocate too.
TEST(CudaFft, WarmCallsCaptureIntoAGraph) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(r2c, FftShim, b, "_fft_r2c");
  AOTRT_FIND_OP(c2c, FftShim, b, "_fft_c2c");
  Values xv{kF32, {6, 10}, {10, 1}, 0, {}};
  for (int64_t i = 0; i < 60; ++i) xv.values.push_back(static_cast<double>((i * 7 + 3) % 11) - 5);
  Tensor x = make_tensor(b, xv);
  Values xt = xv;
  xt.strides = {1, 6};  // the same values, column-major
  Tensor x_t = make_tensor(b, xt);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const int64_t d1[] = {1}, d01[] = {0, 1};
  const std::vector<int64_t> c2r_dim{1};

  // Eager results first, for the replay to match.
  Tensor spec_e, zt_e, ze, back_e;
  CALL_OK(r2c(x.get(), d1, 1, 2, 1, spec_e.out()));
  CALL_OK(r2c(x_t.get(), d01, 2, 0, 0, zt_e.out()));
  CALL_OK(c2c(zt_e.get(), d01, 2, 1, 0, ze.out()));
  back_e = Tensor(handle_register(ops::fft_c2r(*handle_lookup(spec_e.get()), c2r_dim, 2, 10, "t")));
  const std::vector<double> want_spec = values_of(spec_e.get()), want_z = values_of(ze.get()),
                            want_back = values_of(back_e.get());

  cuda::Graph graph(0);
  Tensor spec, zt, z, back;  // declared after the graph: freed before its pool goes
  {
    cuda::Graph::OnPrivateStream on(graph);
    auto run = [&] {
      if (r2c(x.get(), d1, 1, 2, 1, spec.out()) != AOTI_TORCH_SUCCESS) return false;
      if (r2c(x_t.get(), d01, 2, 0, 0, zt.out()) != AOTI_TORCH_SUCCESS) return false;
      if (c2c(zt.get(), d01, 2, 1, 0, z.out()) != AOTI_TORCH_SUCCESS) return false;
      try {
        back = Tensor(handle_register(
            ops::fft_c2r(*handle_lookup(spec.get()), c2r_dim, 2, 10, "test")));
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
        return false;
      }
      return true;
    };
    for (int warm = 0; warm < 2; ++warm) ASSERT_TRUE(run()) << aotrt_last_error();
    spec.reset();
    zt.reset();
    z.reset();
    back.reset();
    capture_warm_calls(graph, run, "test_cuda_fft");
    if (::testing::Test::HasFatalFailure()) return;
  }
  graph.prepare(nullptr);
  graph.replay(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(same_values(values_of(spec.get()), want_spec, 1e-6)) << "r2c in the graph";
  EXPECT_TRUE(same_values(values_of(z.get()), want_z, 1e-6)) << "c2c in the graph";
  EXPECT_TRUE(same_values(values_of(back.get()), want_back, 1e-6)) << "c2r in the graph";
}

}  // namespace
}  // namespace aotrt::test
