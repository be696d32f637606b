// The FFT family (_fft_r2c, _fft_c2c through the C ABI, _fft_c2r through the proxy
// executor, Note [FFT layout and scaling]) on every built backend, against torch eager's
// values (reference_fft.inc, from gen_ops_reference.py). Strides: eager's on the CPU; on
// CUDA the layout of ATen's cuFFT kernels, which torch's CUDA meta functions give (Note
// [cuFFT output layouts] in src/ops/fft.cpp), each case's second output.
//
// Tolerance, relative to the largest magnitude of eager's output (at least 1): float32
// 2e-6, float64 1e-13, each times log2 of the transform's size (FFT rounding grows as
// eps * log n * |x|; KISS FFT and cuFFT against eager's pocketfft). float16 / complex32
// rows (cuFFT's half precision, CUDA only; eager's float32 result rounded to half):
// 2e-3 times log2 n, and on the CPU they are refusals, as in ATen.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/fft.h"
#include "ops_testing.h"
#include "runtime/proxy_executor.h"

namespace aotrt::test {
namespace {

#include "reference_fft.inc"

using FftShim = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, int64_t, int32_t,
                                   AtenTensorHandle*);
using Unary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);

// aten::_fft_c2r as AOTInductor writes its extern node: dim and last_dim_size run-time ints.
AOTITorchError run_c2r(const Backend& b, AtenTensorHandle self, const std::vector<int64_t>& dim,
                       int64_t normalization, int64_t last_dim_size, Tensor& out) {
  std::string dims = "[";
  for (size_t i = 0; i < dim.size(); ++i) dims += (i ? ", " : "") + std::to_string(dim[i]);
  dims += "]";
  const std::string json =
      R"({"nodes": [{"name": "buf0", "node": {"target": "aten::_fft_c2r", "inputs": [)"
      R"({"name": "self", "arg": {"as_tensor": {"name": "self"}}}, )"
      R"({"name": "dim", "arg": {"as_ints": )" + dims + R"(}}, )"
      R"({"name": "normalization", "arg": {"as_int": )" + std::to_string(normalization) + R"(}}, )"
      R"({"name": "last_dim_size", "arg": {"as_int": )" + std::to_string(last_dim_size) +
      R"(}}], "outputs": [{"as_tensor": {"name": "buf1"}}]}}]})";
  runtime::ProxyExecutor ex(runtime::parse_extern_nodes(json, "test"), b.is_cpu() ? "cpu" : "cuda",
                            "test");
  EXPECT_EQ(aoti_torch_new_uninitialized_tensor(out.out()), AOTI_TORCH_SUCCESS);
  std::vector<int64_t> ints = dim;
  ints.push_back(normalization);
  ints.push_back(last_dim_size);
  std::vector<AtenTensorHandle> tensors{self, out.get()};
  return aoti_torch_proxy_executor_call_function(ex.handle(), 0, static_cast<int>(ints.size()),
                                                 ints.data(), static_cast<int>(tensors.size()),
                                                 tensors.data());
}

::testing::AssertionResult close_to(const std::vector<double>& got, const std::vector<double>& want,
                                    double tol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " elements, torch has " << want.size();
  }
  double scale = 1;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tol * scale)) {
      return ::testing::AssertionFailure() << "element " << i << " is " << got[i] << ", torch has "
                                           << want[i] << " (tolerance " << tol * scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

class OpsFft : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsFft, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  const std::vector<Tensor> in = make_inputs(b, c, c.ints[0]);
  if (::testing::Test::HasFailure()) return;
  const int64_t norm = c.ints[1], flag = c.ints[2];
  const std::vector<int64_t> dim(c.ints.begin() + 3, c.ints.end());
  Tensor out;
  AOTITorchError rc;
  std::string fn;
  if (op == "_fft_c2r") {
    rc = run_c2r(b, in[0].get(), dim, norm, flag, out);
    fn = "aten::_fft_c2r";
  } else {
    AOTRT_FIND_OP(f, FftShim, b, op);
    rc = f(in[0].get(), dim.data(), static_cast<int64_t>(dim.size()), norm,
           static_cast<int32_t>(flag), out.out());
    fn = b.op_prefix + op;
  }
  const bool half = c.inputs[0].dtype == kF16;
  if (half && b.is_cpu()) {
    expect_refused(rc, fn, c.ints[0] ? "is complex32 on cpu" : "is float16 on cpu");
    return;
  }
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  if (op != "_fft_c2r") {
    AOTRT_FIND_OP(as_real, Unary, b, "view_as_real");
    Tensor r;
    ASSERT_EQ(as_real(out.get(), r.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    out = std::move(r);
  }
  // The transform's size: the product of the signal sizes (c2r: the output's).
  const Values& want = c.outputs[0];
  const Values& layout = c.outputs[b.is_cpu() ? 0 : 1];
  const Meta m = meta(out.get());
  double n = 1;
  for (int64_t d : dim) {
    const int64_t w = d < 0 ? d + static_cast<int64_t>(m.sizes.size()) : d;
    n *= static_cast<double>(op == "_fft_r2c" ? c.inputs[0].sizes[w] : m.sizes[w]);
  }
  EXPECT_EQ(m.dtype, want.dtype) << c.name;
  EXPECT_EQ(m.sizes, want.sizes) << c.name;
  EXPECT_EQ(m.strides, layout.strides) << c.name << ": strides";
  const double eps = want.dtype == kF64 ? 1e-13 : half ? 2e-3 : 2e-6;
  EXPECT_TRUE(close_to(values_of(out.get()), want.values, eps * std::max(1.0, std::log2(n))))
      << c.name;
}

// ATen's CPU c2r ignores the imaginary parts of the DC and Nyquist bins; on CUDA it is
// whatever cuFFT's C2R makes of them, which eager on the CPU cannot give.
INSTANTIATE_TEST_SUITE_P(Torch, OpsFft,
                         ::testing::ValuesIn(all_backends(kFftCases, {"c2r_imag_dc_nyquist_cpu"})),
                         backend_case_name);

// The layouts the CUDA kernels are given (ops::cuda_fft_strides) against torch's CUDA meta
// functions, for every case: checked on any build, with or without a GPU.
TEST(OpsFftCudaLayout, MatchesTorchsCudaMetaFunctions) {
  for (const OpCase& c : kFftCases) {
    const std::string op = c.op;
    // Complex tensors come as view_as_real: drop the pair dim, halve the strides.
    auto complex_of = [](const Values& v, bool is_complex) {
      Dims sizes = v.sizes, strides = v.strides;
      if (is_complex) {
        sizes.pop_back();
        strides.pop_back();
        for (int64_t& s : strides) s /= 2;
      }
      return std::make_pair(sizes, strides);
    };
    const auto [in_sizes, in_strides] = complex_of(c.inputs[0], c.ints[0] != 0);
    const auto [out_sizes, want] = complex_of(c.outputs[1], op != "_fft_c2r");
    const std::vector<int64_t> dim(c.ints.begin() + 3, c.ints.end());
    const ops::FftOp kind = op == "_fft_c2c"   ? ops::FftOp::kC2C
                            : op == "_fft_r2c" ? ops::FftOp::kR2C
                                               : ops::FftOp::kC2R;
    EXPECT_EQ(ops::cuda_fft_strides(kind, in_sizes, in_strides, dim, c.ints[2]), want) << c.name;
  }
}

// A second call of each transform with the same shapes reuses what the first made (on
// CUDA its cached cuFFT plans) and gives the same values; an input view whose storage
// lives on keeps its values (c2r transforms a copy: cuFFT's C2R overwrites its input).
TEST(OpsFftRepeat, SecondCallMatchesFirstAndInputIsKept) {
  for (const Backend& b : built_backends()) {
    for (const OpCase& c : kFftCases) {
      const bool half_on_cpu = c.inputs[0].dtype == kF16 && b.is_cpu();
      if (std::string(c.op) != "_fft_c2r" || std::string(c.name) == "c2r_imag_dc_nyquist_cpu" ||
          half_on_cpu) {
        continue;
      }
      const std::vector<Tensor> in = make_inputs(b, c, c.ints[0]);
      AOTRT_FIND_OP(as_real, Unary, b, "view_as_real");
      Tensor before;
      ASSERT_EQ(as_real(in[0].get(), before.out()), AOTI_TORCH_SUCCESS);
      const std::vector<double> input_values = values_of(before.get());
      const std::vector<int64_t> dim(c.ints.begin() + 3, c.ints.end());
      Tensor first, second;
      ASSERT_EQ(run_c2r(b, in[0].get(), dim, c.ints[1], c.ints[2], first), AOTI_TORCH_SUCCESS)
          << b.name << " " << c.name << ": " << aotrt_last_error();
      ASSERT_EQ(run_c2r(b, in[0].get(), dim, c.ints[1], c.ints[2], second), AOTI_TORCH_SUCCESS)
          << b.name << " " << c.name << ": " << aotrt_last_error();
      EXPECT_TRUE(same_values(values_of(second.get()), values_of(first.get()), 0))
          << b.name << " " << c.name;
      EXPECT_TRUE(same_values(values_of(before.get()), input_values, 0))
          << b.name << " " << c.name << ": the input changed";
    }
  }
}

TEST(OpsFftRefusals, NameTheShimAndWhatIsWrong) {
  for (const Backend& b : built_backends()) {
    AOTRT_FIND_OP(r2c, FftShim, b, "_fft_r2c");
    AOTRT_FIND_OP(c2c, FftShim, b, "_fft_c2c");
    const std::string pre = b.op_prefix;
    // float16: refused on the CPU; on CUDA (cuFFT's half precision) for powers of two only.
    Tensor half = make_tensor(b, Values{kF16, {6}, {1}, 0, {1, 2, 3, 4, 5, 6}});
    Tensor real = make_tensor(b, Values{kF32, {2, 4}, {4, 1}, 0, {1, 2, 3, 4, 5, 6, 7, 8}});
    const int64_t d0[] = {0}, d1[] = {1}, d5[] = {5};
    Tensor out;
    expect_refused(r2c(half.get(), d0, 1, 0, 1, out.out()), pre + "_fft_r2c",
                   b.is_cpu() ? "argument 'self' is float16 on cpu"
                              : "powers of two when computing in half precision, but got a "
                                "signal size of 6 in dim 0");
    expect_refused(r2c(real.get(), d5, 1, 0, 1, out.out()), pre + "_fft_r2c",
                   "dimension 5 is out of range");
    expect_refused(r2c(real.get(), d1, 1, 3, 1, out.out()), pre + "_fft_r2c",
                   "normalization 3");
    expect_refused(c2c(real.get(), d1, 1, 0, 1, out.out()), pre + "_fft_c2c",
                   "expected complex64 or complex128");
    // Zero points along the one-sided dim would still make one bin (found by
    // the op_shims fuzzer: the kernel read past an empty plan).
    Tensor no_points = make_tensor(b, Values{kF32, {3, 0}, {1, 1}, 0, {}});
    expect_refused(r2c(no_points.get(), d1, 1, 0, 1, out.out()), pre + "_fft_r2c",
                   "Invalid number of data points (0)");
  }
}

}  // namespace
}  // namespace aotrt::test
