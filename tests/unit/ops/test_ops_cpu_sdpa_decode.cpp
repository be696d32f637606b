// aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu at decode shapes (Note
// [Attention at decode] in cpu/sdpa.cpp) against eager (reference_cpusdpa.inc): 1 to 8
// query rows against a longer key/value cache, GQA (the reference expands the key/value
// heads for eager's kernel; aotrt reads them grouped), a static cache's prefix attended
// through an additive -inf mask, a random mask broadcast over heads, upper-left causal,
// a transposed query view; float32, float16 and bfloat16. The output's values, sizes,
// strides and dtype, and the logsumexp. Tolerance: the output's one rounding (relative,
// tolerance_of its dtype) or, absolute, the dtype's unit roundoff at the values' scale of
// 1 (2^-8 bfloat16, 2^-11 float16, 1e-5 float32): outputs are convex sums of values near 1
// that cancel, and eager's half-precision kernel itself is off the float64 result by up to
// about a third of that (measured with torch 2.13 on such values: 1.2e-3 bfloat16, 1.4e-4
// float16), aotrt's by one rounding of the output; logsumexp (float32) 1e-5.
#include <cmath>
#include <vector>

#include "core/handles.h"
#include "cpu/isa.h"
#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_cpusdpa.inc"

class OpsCpuSdpaDecode : public ::testing::TestWithParam<OpCase> {};

void expect_decode_matches(const OpCase& c) {
  const Backend cpu = built_backends()[0];
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(cpu, v));
  AtenTensorHandle mask = c.ints[1] ? in[3].get() : nullptr;
  Tensor out, lse;
  ASSERT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
                in[0].get(), in[1].get(), in[2].get(), 0.0, static_cast<int32_t>(c.ints[0]),
                mask ? &mask : nullptr, nullptr, out.out(), lse.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  const Values& want = c.outputs[0];
  const Meta m = meta(out.get());
  EXPECT_EQ(m.dtype, want.dtype);
  EXPECT_EQ(m.sizes, want.sizes);
  EXPECT_EQ(m.strides, want.strides);
  const double atol = want.dtype == kBF16 ? 0x1p-8 : want.dtype == kF16 ? 0x1p-11 : 1e-5;
  EXPECT_TRUE(close_values(values_of(out.get()), want.values, tolerance_of(want.dtype), atol))
      << c.name << ": output";
  const Values& want_lse = c.outputs[1];
  EXPECT_EQ(meta(lse.get()).sizes, want_lse.sizes);
  EXPECT_EQ(meta(lse.get()).strides, want_lse.strides);
  EXPECT_TRUE(close_values(values_of(lse.get()), want_lse.values, 1e-5, 1e-5))
      << c.name << ": logsumexp";
}

TEST_P(OpsCpuSdpaDecode, MatchesTorch) { expect_decode_matches(GetParam()); }

// The portable kernels, which x86 hosts with AVX2 do not pick (Note [Hand-written AVX2
// kernels] in cpu/isa.h).
TEST_P(OpsCpuSdpaDecode, PortableKernelsMatchTorch) {
  const cpu::PortableKernels portable;
  expect_decode_matches(GetParam());
}

std::string case_name(const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Torch, OpsCpuSdpaDecode, ::testing::ValuesIn(kCpusdpaCases), case_name);

}  // namespace
}  // namespace aotrt::test
