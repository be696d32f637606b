// The fused oneDNN ops of torch's hand-written c/shim_cpu.h (Note [Fused oneDNN
// ops] in ops/linear.h) refusing what fuzz_op_shims found they could not serve:
// each row is one finding, kept as an input in fuzz/corpus/op_shims/ under the
// name its comment gives. CPU ops (torch declares no CUDA ones): the rows run on
// the CPU backend. The served cases are the frozen packages of
// tests/e2e/test_cpu_freezing.py, against eager.
#include <limits>
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

using ConvTransposePointwise = AOTITorchError (*)(
    AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*, const int64_t*, int64_t,
    const int64_t*, int64_t, const int64_t*, int64_t, const int64_t*, int64_t, int64_t,
    const char*, const double**, int64_t, const char**, AtenTensorHandle*);

using LinearPointwise = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*,
                                           const char*, const double**, int64_t, const char**,
                                           AtenTensorHandle*);

// Found reading the op while fuzzing it: with K = 0 the result has M * N
// elements and M came out as numel(X) / K = 0, leaving the result's memory
// unwritten. ATen's oneDNN kernel refuses K = 0 (no inner-product primitive);
// aotrt serves it as F.linear does, torch eager's F.linear(x [3, 0], w [4, 0], b)
// being b on every row: relu(b) here, and zeros without a bias.
TEST(OpsFused, LinearPointwiseOfZeroInnerDimIsTheBias) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, LinearPointwise, b, "_linear_pointwise");
  Tensor x = empty(b, {3, 0}, kF32), w = empty(b, {4, 0}, kF32);
  Tensor bias = make_tensor(b, Values{kF32, {4}, {1}, 0, {1, -2, 3, -4}});
  AtenTensorHandle bias_h = bias.get();
  Tensor out, no_bias;
  ASSERT_EQ(f(x.get(), w.get(), &bias_h, "relu", nullptr, 0, nullptr, out.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_matches(out.get(), Values{kF32, {3, 4}, {4, 1}, 0, {1, 0, 3, 0, 1, 0, 3, 0, 1, 0, 3, 0}},
                 "relu(linear(x, w, b))");
  ASSERT_EQ(f(x.get(), w.get(), nullptr, "none", nullptr, 0, nullptr, no_bias.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_matches(no_bias.get(), Values{kF32, {3, 4}, {4, 1}, 0, std::vector<double>(12, 0.0)},
                 "linear(x, w)");
}

// corpus: fused-conv-transpose-groups-overflow. An empty deconvolution weight
// [0, 2, 1, 1] divides by any groups; groups * 2 (the input's channels) must
// not overflow on the way to aten.convolution's [I, O/g, k...] weight.
TEST(OpsFusedRefusals, TransposedConvGroupsTimesChannelsOverflowIsRefused) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, ConvTransposePointwise, b, "mkldnn__convolution_transpose_pointwise");
  Tensor x = empty(b, {1, 2, 3, 3}, kF32), w = empty(b, {0, 2, 1, 1}, kF32);
  const int64_t zero[] = {0, 0}, one[] = {1, 1};
  Tensor out;
  expect_refused(f(x.get(), w.get(), nullptr, zero, 2, zero, 2, one, 2, one, 2,
                   std::numeric_limits<int64_t>::max(), "none", nullptr, 0, nullptr, out.out()),
                 "aoti_torch_cpu_mkldnn__convolution_transpose_pointwise", "overflows int64");
  EXPECT_EQ(out.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
