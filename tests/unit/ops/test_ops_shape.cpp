// Factories and shape ops (fill_, full, new_empty, new_zeros, cat, constant pad) through
// the C ABI on every built backend, against torch eager (reference_shape.inc; Note [Shape
// semantics]).
#include <dlfcn.h>

#include <limits>
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_shape.inc"

using Fill = AOTITorchError (*)(AtenTensorHandle, double);
using Cat = AOTITorchError (*)(const AtenTensorHandle*, int64_t, int64_t, AtenTensorHandle*);
using Pad = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, const char*, double*,
                               AtenTensorHandle*);
using Full = AOTITorchError (*)(const int64_t*, int64_t, double, int32_t*, int32_t*, int32_t*,
                                int32_t, int32_t*, AtenTensorHandle*);
using NewLike = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, int32_t*, int32_t*,
                                   int32_t*, int32_t, int32_t*, AtenTensorHandle*);

class OpsShape : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsShape, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  if (op == "fill__Scalar") {
    AOTRT_FIND_OP(f, Fill, b, op);
    ASSERT_EQ(f(in[0].get(), c.floats[0]), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    expect_matches(in[0].get(), c.outputs[0], c.name, /*check_strides=*/false);
    // The holes of the strided view keep the buffer's -77.
    Tensor parent_view = reinterpret(in[0].get(), {1}, {1}, -meta(in[0].get()).offset);
    EXPECT_TRUE(same_values(values_of(parent_view.get()), {-77}, 0));
    return;
  }
  Tensor out;
  AOTITorchError rc;
  if (op == "cat") {
    AOTRT_FIND_OP(f, Cat, b, op);
    std::vector<AtenTensorHandle> hs;
    for (const Tensor& t : in) hs.push_back(t.get());
    rc = f(hs.data(), static_cast<int64_t>(hs.size()), c.ints[0], out.out());
  } else {
    AOTRT_FIND_OP(f, Pad, b, op);
    double value = c.floats.empty() ? 0 : c.floats[0];
    rc = f(in[0].get(), c.ints.data(), static_cast<int64_t>(c.ints.size()), "constant",
           c.floats.empty() ? nullptr : &value, out.out());
  }
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsShape, ::testing::ValuesIn(all_backends(kShapeCases)),
                         backend_case_name);

TEST(OpsShapeAten, FullNewEmptyNewZeros) {
  auto full = reinterpret_cast<Full>(dlsym(RTLD_DEFAULT, "aoti_torch_aten_full"));
  auto new_empty = reinterpret_cast<NewLike>(dlsym(RTLD_DEFAULT, "aoti_torch_aten_new_empty"));
  auto new_zeros = reinterpret_cast<NewLike>(dlsym(RTLD_DEFAULT, "aoti_torch_aten_new_zeros"));
  ASSERT_TRUE(full && new_empty && new_zeros);
  for (const Backend& b : built_backends()) {
    const int64_t size[] = {2, 3};
    int32_t i64 = kI64, dev = b.device_type;
    Tensor t;
    ASSERT_EQ(full(size, 2, 7.0, &i64, nullptr, &dev, b.device_index, nullptr, t.out()),
              AOTI_TORCH_SUCCESS) << aotrt_last_error();
    expect_matches(t.get(), Values{kI64, {2, 3}, {3, 1}, 0, {7, 7, 7, 7, 7, 7}}, "full");
    EXPECT_EQ(meta(t.get()).device_type, b.device_type);
    Tensor like = make_tensor(b, Values{kF16, {4}, {1}, 0, {1, 2, 3, 4}});
    Tensor z, e;
    const int64_t zsize[] = {3};
    ASSERT_EQ(new_zeros(like.get(), zsize, 1, nullptr, nullptr, nullptr, 0, nullptr, z.out()),
              AOTI_TORCH_SUCCESS) << aotrt_last_error();
    expect_matches(z.get(), Values{kF16, {3}, {1}, 0, {0, 0, 0}}, "new_zeros keeps dtype");
    ASSERT_EQ(new_empty(like.get(), size, 2, &i64, nullptr, nullptr, 0, nullptr, e.out()),
              AOTI_TORCH_SUCCESS) << aotrt_last_error();
    const Meta m = meta(e.get());
    EXPECT_EQ(m.dtype, kI64);
    EXPECT_EQ(m.sizes, (Dims{2, 3}));
    EXPECT_EQ(m.device_type, b.device_type);
    int32_t sparse = 1;
    EXPECT_EQ(full(size, 2, 1.0, nullptr, &sparse, nullptr, 0, nullptr, t.out()), AOTI_TORCH_FAILURE);
    EXPECT_NE(std::string(aotrt_last_error()).find("layout 1 is not served"), std::string::npos);
  }
}

TEST(OpsShapeRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(pad, Pad, b, "pad");
  AOTRT_FIND_OP(cat, Cat, b, "cat");
  Tensor x = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor y = make_tensor(b, Values{kF32, {3, 3}, {3, 1}, 0, std::vector<double>(9, 1)});
  Tensor out;
  const int64_t p[] = {1, 1};
  EXPECT_EQ(pad(x.get(), p, 2, "reflect", nullptr, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("aoti_torch_cpu_pad: pad mode 'reflect' is not served"),
            std::string::npos) << aotrt_last_error();
  const AtenTensorHandle hs[] = {x.get(), y.get()};
  EXPECT_EQ(cat(hs, 2, 1, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("Sizes of tensors must match except in dimension 1"),
            std::string::npos) << aotrt_last_error();
  EXPECT_EQ(out.get(), nullptr);
}

// Empty tensors may have any size in another dim: the sizes cat adds up are checked, not
// wrapped (fuzz_op_shims found the signed overflow in a CI run).
TEST(OpsShapeRefusals, CatOfHugeEmptyTensorsRefusesTheOverflow) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    AOTRT_FIND_OP(cat, Cat, b, "cat");
    const int64_t huge = std::numeric_limits<int64_t>::max();
    Tensor parent = empty(b, {1}, kF32);
    Tensor x = reinterpret(parent.get(), {0, huge}, {1, 0}, 0);
    const AtenTensorHandle hs[] = {x.get(), x.get()};
    Tensor out;
    expect_refused(cat(hs, 2, 1, out.out()), std::string(b.op_prefix) + "cat", "overflow");
    EXPECT_EQ(out.get(), nullptr);
    // A channels-last result's strides are checked too.
    Tensor y = reinterpret(parent.get(), {0, 2, huge / 2, 2}, {1, 1, 0, 0}, 0);
    const AtenTensorHandle ys[] = {y.get(), y.get()};
    EXPECT_EQ(cat(ys, 2, 0, out.out()), AOTI_TORCH_FAILURE);
    EXPECT_EQ(out.get(), nullptr);
  }
}

}  // namespace
}  // namespace aotrt::test
