// The pointwise family through the C ABI against torch eager's values, dtypes and strides
// (reference_pointwise.inc; Note [Pointwise semantics]): abs, angle, add, mul, pow, polar,
// gcd on real and complex dtypes, and c_shim_aten.h's device-generic subtract_Tensor (rows
// named aten_*, looked up as aoti_torch_aten_*). Complex inputs come as torch.view_as_real of them and are
// viewed back with aotrt's view_as_complex; complex results are compared through
// view_as_real (its sizes and strides carry the complex result's), on every built backend.
#include <limits>
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_pointwise.inc"

using Unary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);
using Binary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*);
using BinaryAlpha = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, double,
                                       AtenTensorHandle*);
using ScalarAlpha = AOTITorchError (*)(AtenTensorHandle, double, double, AtenTensorHandle*);
using WithScalar = AOTITorchError (*)(AtenTensorHandle, double, AtenTensorHandle*);
using ScalarBase = AOTITorchError (*)(double, AtenTensorHandle, AtenTensorHandle*);

class OpsPointwise : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsPointwise, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  AOTRT_FIND_OP(as_real, Unary, b, "view_as_real");
  const std::vector<Tensor> in = make_inputs(b, c, c.ints[0]);
  if (::testing::Test::HasFailure()) return;
  Tensor out;
  AOTITorchError rc;
  if (op == "abs" || op == "angle") {
    AOTRT_FIND_OP(f, Unary, b, op);
    rc = f(in[0].get(), out.out());
  } else if (op == "add_Tensor") {
    AOTRT_FIND_OP(f, BinaryAlpha, b, op);
    rc = f(in[0].get(), in[1].get(), c.floats[0], out.out());
  } else if (op == "aten_subtract_Tensor") {
    auto f = reinterpret_cast<BinaryAlpha>(dlsym(RTLD_DEFAULT, ("aoti_torch_" + op).c_str()));
    ASSERT_NE(f, nullptr) << "aoti_torch_" << op << " is missing";
    rc = f(in[0].get(), in[1].get(), c.floats[0], out.out());
  } else if (op == "add_Scalar") {
    AOTRT_FIND_OP(f, ScalarAlpha, b, op);
    rc = f(in[0].get(), c.floats[0], c.floats[1], out.out());
  } else if (op == "mul_Scalar" || op == "pow_Tensor_Scalar") {
    AOTRT_FIND_OP(f, WithScalar, b, op);
    rc = f(in[0].get(), c.floats[0], out.out());
  } else if (op == "pow_Scalar") {
    AOTRT_FIND_OP(f, ScalarBase, b, op);
    rc = f(c.floats[0], in[0].get(), out.out());
  } else {
    AOTRT_FIND_OP(f, Binary, b, op);
    rc = f(in[0].get(), in[1].get(), out.out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  int32_t dtype = 0;
  ASSERT_EQ(aoti_torch_get_dtype(out.get(), &dtype), AOTI_TORCH_SUCCESS);
  if (dtype == kC64 || dtype == 10) {  // complex64, complex128
    Tensor r;
    ASSERT_EQ(as_real(out.get(), r.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    out = std::move(r);
  }
  expect_matches(out.get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsPointwise, ::testing::ValuesIn(all_backends(kPointwiseCases)),
                         backend_case_name);

TEST(OpsPointwiseRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(gcd, Binary, b, "gcd");
  AOTRT_FIND_OP(pow, WithScalar, b, "pow_Tensor_Scalar");
  AOTRT_FIND_OP(polar, Binary, b, "polar");
  AOTRT_FIND_OP(add, BinaryAlpha, b, "add_Tensor");
  AOTRT_FIND_OP(abs, Unary, b, "abs");
  Tensor f = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 2, 3}});
  Tensor f2 = make_tensor(b, Values{kF32, {2}, {1}, 0, {1, 2}});
  Tensor d = make_tensor(b, Values{kF64, {3}, {1}, 0, {1, 2, 3}});
  Tensor i = make_tensor(b, Values{kI64, {3}, {1}, 0, {1, 2, 3}});
  Tensor bo = make_tensor(b, Values{kBool, {3}, {1}, 0, {1, 0, 1}});
  Tensor out;
  expect_refused(gcd(f.get(), i.get(), out.out()), "aoti_torch_cpu_gcd", "gcd takes integer tensors");
  expect_refused(pow(i.get(), -1.0, out.out()), "aoti_torch_cpu_pow_Tensor_Scalar",
                 "Integers to negative integer powers are not allowed");
  expect_refused(polar(f.get(), d.get(), out.out()), "aoti_torch_cpu_polar", "angle is float64");
  expect_refused(polar(i.get(), i.get(), out.out()), "aoti_torch_cpu_polar",
                 "abs must be float32 or float64");
  expect_refused(add(f.get(), f2.get(), 1.0, out.out()), "aoti_torch_cpu_add_Tensor",
                 "must match the size");
  expect_refused(abs(bo.get(), out.out()), "aoti_torch_cpu_abs", "bool");
  EXPECT_EQ(out.get(), nullptr);
}

TEST(OpsPointwiseRefusals, SubtractRefusesBoolAndAFloatAlphaForIntegers) {
  const Backend b = built_backends()[0];
  auto sub = reinterpret_cast<BinaryAlpha>(dlsym(RTLD_DEFAULT, "aoti_torch_aten_subtract_Tensor"));
  ASSERT_NE(sub, nullptr);
  AOTRT_FIND_OP(add, BinaryAlpha, b, "add_Tensor");
  Tensor f = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 2, 3}});
  Tensor i = make_tensor(b, Values{kI64, {3}, {1}, 0, {1, 2, 3}});
  Tensor bo = make_tensor(b, Values{kBool, {3}, {1}, 0, {1, 0, 1}});
  Tensor out;
  expect_refused(sub(bo.get(), bo.get(), 1.0, out.out()), "aoti_torch_aten_subtract_Tensor",
                 "with two bool tensors is not supported");
  expect_refused(sub(f.get(), bo.get(), 1.0, out.out()), "aoti_torch_aten_subtract_Tensor",
                 "with a bool tensor is not supported");
  expect_refused(sub(i.get(), i.get(), 1.5, out.out()), "aoti_torch_aten_subtract_Tensor",
                 "argument alpha must not be a floating point number");
  expect_refused(add(i.get(), i.get(), 0.5, out.out()), "aoti_torch_cpu_add_Tensor",
                 "argument alpha must not be a floating point number");
  expect_refused(sub(nullptr, i.get(), 1.0, out.out()), "aoti_torch_aten_subtract_Tensor", "self");
  EXPECT_EQ(out.get(), nullptr);
}

// An empty tensor may have any size in its other dims: the dense strides of the result are
// computed in checked arithmetic and their overflow refused (fuzz_op_shims found the signed
// overflow in iterator_output_strides).
TEST(OpsPointwiseRefusals, HugeEmptyOperandsRefuseTheOverflow) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    AOTRT_FIND_OP(add, BinaryAlpha, b, "add_Tensor");
    Tensor parent = empty(b, {1}, kF32);
    const int64_t huge = std::numeric_limits<int64_t>::max();
    Tensor x = reinterpret(parent.get(), {0, huge, 3}, {0, 0, 1}, 0);
    Tensor out;
    expect_refused(add(x.get(), x.get(), 1.0, out.out()), std::string(b.op_prefix) + "add_Tensor",
                   "overflows int64");
    EXPECT_EQ(out.get(), nullptr);
  }
}

}  // namespace
}  // namespace aotrt::test
