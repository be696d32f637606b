// The int8 oneDNN ops (Note [Quantized oneDNN ops]) through the C ABI on values worked out by
// hand: dequantized operands, per-output-channel weight scales, bias, activation, and the
// output quantized with round-half-to-even and clamping; the in-place "sum"; and the
// refusals. Real X86InductorQuantizer packages against torch: tests/e2e/test_cpu_int8.py.
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

using QLinear = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                   AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                   AtenTensorHandle*, double, int64_t, const int32_t*,
                                   const char*, const double**, int64_t, const char*,
                                   AtenTensorHandle*);
using QLinearBinary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                         AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                         AtenTensorHandle*, AtenTensorHandle*, double, int64_t,
                                         const int32_t*, double, int64_t, const char*, double,
                                         const char*, const double**, int64_t, const char*,
                                         AtenTensorHandle*);

struct Operands {
  Tensor x, x_scale, x_zp, w, w_scale, w_zp, bias;
};

// x_f = ([10, 20] - 10) * 0.5 = [0, 5]; w [K=2, N=2] = [[1, 2], [3, -4]] scaled per column
// by [0.1, 0.2]; x_f @ w_f = [1.5, -4]; + bias [-0.25, 0.5] = [1.25, -3.5].
Operands operands(const Backend& b) {
  Operands o;
  o.x = make_tensor(b, Values{kU8, {1, 2}, {2, 1}, 0, {10, 20}});
  o.x_scale = make_tensor(b, Values{kF32, {}, {}, 0, {0.5}});
  o.x_zp = make_tensor(b, Values{kI32, {}, {}, 0, {10}});
  o.w = make_tensor(b, Values{kI8, {2, 2}, {2, 1}, 0, {1, 2, 3, -4}});
  o.w_scale = make_tensor(b, Values{kF32, {2}, {1}, 0, {0.1, 0.2}});
  o.w_zp = make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 0}});
  o.bias = make_tensor(b, Values{kF32, {2}, {1}, 0, {-0.25, 0.5}});
  return o;
}

TEST(OpsQuantized, LinearDequantizesScalesAndQuantizesHalfToEven) {
  const Backend b = built_backends()[0];  // CPU ops (torch's c/shim_cpu.h)
  AOTRT_FIND_OP(qlinear, QLinear, b, "_qlinear_pointwise_tensor");
  Operands o = operands(b);
  AtenTensorHandle bias = o.bias.get();
  const double* no_args[] = {nullptr};
  // Float output: relu([1.25, -3.5]).
  const int32_t f32 = kF32, u8 = kU8;
  Tensor y;
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &bias, 1.0, 0, &f32, "relu", no_args, 1, "", y.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_TRUE(close_values(values_of(y.get()), {1.25, 0.0}, 1e-6, 1e-7));
  // uint8 output, scale 0.5, zero point 3: 1.25 / 0.5 = 2.5 rounds to 2 (half to even), + 3;
  // 0 gives the zero point. Without relu, -3.5 / 0.5 + 3 = -4 clamps to 0.
  Tensor q, q_none;
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &bias, 0.5, 3, &u8, "relu", no_args, 1, "", q.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(meta(q.get()).dtype, kU8);
  EXPECT_EQ(values_of(q.get()), (std::vector<double>{5, 3}));
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &bias, 0.5, 3, nullptr, "none", no_args, 1, "", q_none.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(values_of(q_none.get()), (std::vector<double>{5, 0}));  // None: x's dtype, uint8
}

TEST(OpsQuantized, LinearSumWritesIntoOther) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(qlinear, QLinearBinary, b, "_qlinear_pointwise_binary_tensor");
  Operands o = operands(b);
  AtenTensorHandle bias = o.bias.get();
  Tensor other = make_tensor(b, Values{kF32, {1, 2}, {2, 1}, 0, {1.0, 10.0}});
  AtenTensorHandle other_h = other.get();
  const double* no_args[] = {nullptr};
  const int32_t f32 = kF32;
  Tensor y;
  // relu([1.25, -3.5] + [1, 10]) = [2.25, 6.5], written into other.
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &other_h, &bias, 1.0, 0, &f32, 1.0, 0, "sum", 1.0, "relu",
                    no_args, 1, "", y.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_TRUE(close_values(values_of(other.get()), {2.25, 6.5}, 1e-6, 1e-7));
  void *a = nullptr, *c = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(y.get(), &a), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_data_ptr(other.get(), &c), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(a, c) << "the sum's result is other itself";
}

TEST(OpsQuantized, RefusalsNameTheArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(qlinear, QLinear, b, "_qlinear_pointwise_tensor");
  Operands o = operands(b);
  const double* no_args[] = {nullptr};
  const std::string fn = std::string(b.op_prefix) + "_qlinear_pointwise_tensor";
  Tensor xf = make_tensor(b, Values{kF32, {1, 2}, {2, 1}, 0, {1, 2}});
  Tensor three = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 1, 1}});
  const int32_t f32 = kF32;
  Tensor y;
  expect_refused(qlinear(xf.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                         o.w_zp.get(), nullptr, 1.0, 0, &f32, "none", no_args, 1, "", y.out()),
                 fn, "x is float32");
  expect_refused(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), three.get(),
                         o.w_zp.get(), nullptr, 1.0, 0, &f32, "none", no_args, 1, "", y.out()),
                 fn, "one entry per output channel (2)");
  expect_refused(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                         o.w_zp.get(), nullptr, 0.5, 0, &f32, "none", no_args, 1, "", y.out()),
                 fn, "needs output_scale 1");
  expect_refused(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                         o.w_zp.get(), nullptr, 1.0, 0, &f32, "mish", no_args, 1, "", y.out()),
                 fn, "attr 'mish'");
  EXPECT_EQ(y.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
