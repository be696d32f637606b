// float64 and integer convolutions (Note [Direct convolution]) through the C ABI,
// against torch eager's values, dtypes and strides (reference_conv.inc, from
// gen_ops_reference.py): 1-, 2- and 3-d, plain and transposed, groups, stride,
// padding, dilation, output_padding, bias, strided and expanded operands, and
// integer wrap-around. The integer rows are CPU rows (ATen's CUDA convolution
// is cuDNN's, which has no integer kernels); the float64 rows run on CUDA too,
// through cuDNN's float64 engines, into a contiguous result.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_conv.inc"

using Convolution = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*,
                                       const int64_t*, int64_t, const int64_t*, int64_t,
                                       const int64_t*, int64_t, int32_t, const int64_t*, int64_t,
                                       int64_t, AtenTensorHandle*);

std::vector<std::string> integer_names() {
  std::vector<std::string> names;
  for (const OpCase& c : kConvCases) {
    if (c.inputs[0].dtype != kF64) names.emplace_back(c.name);
  }
  return names;
}

// ints: transposed, groups, then stride, padding, dilation, output_padding (k each).
AOTITorchError call(Convolution f, const OpCase& c, std::vector<Tensor>& in, Tensor& out) {
  const int64_t k = static_cast<int64_t>(c.inputs[0].sizes.size()) - 2;
  const int64_t* p = c.ints.data() + 2;
  AtenTensorHandle bias = in.size() > 2 ? in[2].get() : nullptr;
  return f(in[0].get(), in[1].get(), in.size() > 2 ? &bias : nullptr, p, k, p + k, k, p + 2 * k,
           k, static_cast<int32_t>(c.ints[0]), p + 3 * k, k, c.ints[1], out.out());
}

class OpsConv : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsConv, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  AOTRT_FIND_OP(f, Convolution, b, c.op);
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor out;
  ASSERT_EQ(call(f, c, in, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  Values want = c.outputs[0];
  if (!b.is_cpu() && want.dtype == kF64) {
    // The reference is CPU eager's; ATen's CUDA convolution lays a float64 result out
    // contiguous whatever its operands' layout (Note [Convolution output layout]).
    int64_t stride = 1;
    for (size_t d = want.sizes.size(); d-- > 0;) {
      want.strides[d] = stride;
      stride *= std::max<int64_t>(want.sizes[d], 1);
    }
  }
  expect_matches(out.get(), want, c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsConv, ::testing::ValuesIn(all_backends(kConvCases, integer_names())),
                         backend_case_name);

// ATen's slow transposed kernels serve float64 and int64 only; aotrt refuses int32 too.
TEST(OpsConvRefusals, Int32TransposedIsRefusedLikeATen) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Convolution, b, "convolution");
  OpCase c{"int32_transposed", "convolution",
           {Values{kI32, {1, 1, 2}, {2, 2, 1}, 0, {1, 2}}, Values{kI32, {1, 1, 2}, {2, 2, 1}, 0, {1, 1}}},
           {1, 1, 1, 0, 1, 0},
           {},
           {}};
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor out;
  ASSERT_NE(call(f, c, in, out), AOTI_TORCH_SUCCESS);
  const std::string msg = aotrt_last_error();
  EXPECT_NE(msg.find("aoti_torch_cpu_convolution"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  EXPECT_EQ(out.get(), nullptr);
}

// corpus: conv-huge-dilation-overflow. The dilated kernel, the padded input and
// the transposed output size from huge parameters are refused, not overflowed;
// a kernel of size 0 is refused as ATen refuses it.
TEST(OpsConvRefusals, HugeParametersAndEmptyKernelsAreRefused) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Convolution, b, "convolution");
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  const Values x{kF32, {1, 1, 4}, {4, 4, 1}, 0, {1, 2, 3, 4}};
  const Values w3{kF32, {1, 1, 3}, {3, 3, 1}, 0, {1, 1, 1}};
  struct Row {
    const char* what;
    Values w;
    std::vector<int64_t> ints;  // transposed, groups, stride, padding, dilation, output_padding
    const char* says;
  };
  const Row rows[] = {
      {"dilation", w3, {0, 1, 1, 0, kHuge, 0}, "overflows int64"},
      {"padding", w3, {0, 1, 1, kHuge, 1, 0}, "overflows int64"},
      {"transposed stride", w3, {1, 1, kHuge, 0, 1, 0}, "overflows int64"},
      {"empty kernel", Values{kF32, {1, 1, 0}, {1, 1, 1}, 0, {}}, {0, 1, 1, 0, 1, 0},
       "kernel size should be greater than zero"},
  };
  for (const Row& r : rows) {
    OpCase c{r.what, "convolution", {x, r.w}, r.ints, {}, {}};
    std::vector<Tensor> in;
    for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
    Tensor out;
    expect_refused(call(f, c, in, out), "aoti_torch_cpu_convolution", r.says);
    EXPECT_EQ(out.get(), nullptr) << r.what;
  }
}

}  // namespace
}  // namespace aotrt::test
