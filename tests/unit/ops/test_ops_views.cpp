// The views (narrow, slice_Tensor, permute, squeeze_dim, reshape, view_dtype, view_as_real,
// view_as_complex, aten narrow) through the C ABI on every built backend, against torch
// eager (reference_views.inc; Note [View semantics]). A view must be one of its input's
// memory: the same storage offset torch gives in the input's buffer, at the address that
// offset names, and holding a count on the storage after the input handle is gone. Then
// the in-place resize_, resize_as_ and set__source_Tensor (OpsResize).
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_views.inc"

using Narrow = AOTITorchError (*)(AtenTensorHandle, int64_t, int64_t, int64_t, AtenTensorHandle*);
using Slice = AOTITorchError (*)(AtenTensorHandle, int64_t, int64_t*, int64_t*, int64_t,
                                 AtenTensorHandle*);
using IntList = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, AtenTensorHandle*);
using OneInt = AOTITorchError (*)(AtenTensorHandle, int64_t, AtenTensorHandle*);
using Dtype = AOTITorchError (*)(AtenTensorHandle, int32_t, AtenTensorHandle*);
using Unary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);

char* data_of(AtenTensorHandle h) {
  void* p = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &p), AOTI_TORCH_SUCCESS);
  return static_cast<char*>(p);
}

class OpsViews : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsViews, MatchesTorchAndStaysAView) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  Tensor x = make_tensor(b, c.inputs[0]);
  Tensor out;
  AOTITorchError rc;
  if (op == "narrow") {
    AOTRT_FIND_OP(f, Narrow, b, op);
    rc = f(x.get(), c.ints[0], c.ints[1], c.ints[2], out.out());
  } else if (op == "slice_Tensor") {
    AOTRT_FIND_OP(f, Slice, b, op);
    int64_t start = c.ints[1], end = c.ints[2];
    rc = f(x.get(), c.ints[0], start == kNone ? nullptr : &start, end == kNone ? nullptr : &end,
           c.ints[3], out.out());
  } else if (op == "permute" || op == "reshape") {
    AOTRT_FIND_OP(f, IntList, b, op);
    rc = f(x.get(), c.ints.data(), static_cast<int64_t>(c.ints.size()), out.out());
  } else if (op == "squeeze_dim") {
    AOTRT_FIND_OP(f, OneInt, b, op);
    rc = f(x.get(), c.ints[0], out.out());
  } else {
    AOTRT_FIND_OP(f, Dtype, b, op);
    rc = f(x.get(), static_cast<int32_t>(c.ints[0]), out.out());
  }
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Values& want = c.outputs[0];
  expect_matches(out.get(), want, c.name);
  const bool copy = std::string(c.name).find("_copy") != std::string::npos;
  const Meta m = meta(out.get());
  if (!copy) {
    EXPECT_EQ(m.offset, want.offset) << "not the view torch makes";
    if (numel_of(want.sizes) > 0) {
      const Meta in = meta(x.get());
      EXPECT_EQ(data_of(out.get()) - data_of(x.get()),
                static_cast<std::ptrdiff_t>(m.offset * m.itemsize) -
                    static_cast<std::ptrdiff_t>(in.offset * in.itemsize));
    }
  }
  // The result keeps its memory alive without the input.
  const std::vector<double> before = values_of(out.get());
  x.reset();
  EXPECT_TRUE(same_values(values_of(out.get()), before, 0));
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsViews, ::testing::ValuesIn(all_backends(kViewsCases)),
                         backend_case_name);

TEST(OpsViewsComplex, ViewAsComplexThenRealIsTheSameMemory) {
  for (const Backend& b : built_backends()) {
    AOTRT_FIND_OP(as_complex, Unary, b, "view_as_complex");
    AOTRT_FIND_OP(as_real, Unary, b, "view_as_real");
    // A [3, 2] float view at offset 2 with row stride 4: complex [3], stride 2, offset 1.
    Tensor x = make_tensor(b, Values{kF32, {3, 2}, {4, 1}, 2, {1, 2, 3, 4, 5, 6}});
    Tensor z, r;
    ASSERT_EQ(as_complex(x.get(), z.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    Meta mz = meta(z.get());
    EXPECT_EQ(mz.dtype, kC64);
    EXPECT_EQ(mz.sizes, (Dims{3}));
    EXPECT_EQ(mz.strides, (Dims{2}));
    EXPECT_EQ(mz.offset, 1);
    EXPECT_EQ(data_of(z.get()), data_of(x.get()));
    ASSERT_EQ(as_real(z.get(), r.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    expect_matches(r.get(), Values{kF32, {3, 2}, {4, 1}, 2, {1, 2, 3, 4, 5, 6}}, "round trip");
    EXPECT_EQ(meta(r.get()).offset, 2);
    // Refusals name the rule.
    Tensor odd = make_tensor(b, Values{kF32, {3, 2}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
    EXPECT_EQ(as_complex(odd.get(), z.out()), AOTI_TORCH_FAILURE);
    EXPECT_NE(std::string(aotrt_last_error()).find("stride divisible by 2"), std::string::npos);
    EXPECT_EQ(as_real(x.get(), r.out()), AOTI_TORCH_FAILURE);
    EXPECT_NE(std::string(aotrt_last_error()).find("only supported for complex"), std::string::npos);
  }
}

TEST(OpsViewsRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(narrow, Narrow, b, "narrow");
  AOTRT_FIND_OP(reshape, IntList, b, "reshape");
  AOTRT_FIND_OP(view_dtype, Dtype, b, "view_dtype");
  Tensor x = make_tensor(b, Values{kF32, {2, 3}, {1, 2}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor out;
  EXPECT_EQ(narrow(x.get(), 1, 2, 2, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("aoti_torch_cpu_narrow: start (2) + length (2) exceeds"),
            std::string::npos) << aotrt_last_error();
  const int64_t bad[] = {4, 2};
  EXPECT_EQ(reshape(x.get(), bad, 2, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("invalid for input of size 6"), std::string::npos);
  EXPECT_EQ(view_dtype(x.get(), kI16, out.out()), AOTI_TORCH_FAILURE);  // stride(-1) is 2
  EXPECT_NE(std::string(aotrt_last_error()).find("stride(-1) must be 1"), std::string::npos);
  EXPECT_EQ(out.get(), nullptr);
}

// corpus: view-dtype-huge-stride-overflow. A dim of one element may have any
// stride (slice of a huge step leaves one); viewing float32 as uint8 scales the
// others by 4, and one that cannot be scaled is refused, not overflowed.
TEST(OpsViewsRefusals, ViewDtypeKeepsAnUnusedHugeStrideAndRefusesAnOverflow) {
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  for (const Backend& b : built_backends()) {
    AOTRT_FIND_OP(view_dtype, Dtype, b, "view_dtype");
    Tensor parent = empty(b, {4}, kF32);
    Tensor row = reinterpret(parent.get(), {1, 4}, {kHuge, 1}, 0);
    Tensor bytes;
    ASSERT_EQ(view_dtype(row.get(), kU8, bytes.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    EXPECT_EQ(meta(bytes.get()).sizes, (Dims{1, 16})) << b.name;
    EXPECT_EQ(meta(bytes.get()).strides, (Dims{kHuge, 1})) << b.name;
    EXPECT_EQ(data_of(bytes.get()), data_of(parent.get())) << b.name;
    Tensor empty_rows = reinterpret(parent.get(), {2, 0}, {kHuge, 1}, 0);
    Tensor out;
    expect_refused(view_dtype(empty_rows.get(), kU8, out.out()),
                   std::string(b.op_prefix) + "view_dtype", "self.stride(0) is 9223372036854775807");
    EXPECT_EQ(out.get(), nullptr);
  }
}

// resize_, resize_as_ and set__source_Tensor change the tensor behind a handle (Note [Resizing
// in place] in src/ops/views.cpp); the expected sizes and strides are torch 2.13 eager's.
using Resize = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, int32_t*);
using ResizeAs = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int32_t*);
using SetSource = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle);

constexpr int32_t kContiguousFormat = 0, kPreserveFormat = 1, kChannelsLast = 2;

class OpsResize : public ::testing::TestWithParam<Backend> {};

TEST_P(OpsResize, ShrinkingKeepsTheMemoryAndItsValues) {
  const Backend& b = GetParam();
  AOTRT_FIND_OP(resize, Resize, b, "resize_");
  Tensor x = filled<float>(b, {0, 1, 2, 3, 4, 5}, {2, 3}, {3, 1});
  char* before = data_of(x.get());
  const Counters c0 = counters(b);
  const Dims size{4};
  ASSERT_EQ(resize(x.get(), size.data(), 1, nullptr), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(counters(b), c0) << "no allocation when the storage is large enough";
  const Meta m = meta(x.get());
  EXPECT_EQ(m.sizes, Dims{4});
  EXPECT_EQ(m.strides, Dims{1});
  EXPECT_EQ(data_of(x.get()), before);
  EXPECT_EQ(values_of(x.get()), (std::vector<double>{0, 1, 2, 3}));
}

TEST_P(OpsResize, SameSizesKeepTheirStridesUnlessAFormatIsGiven) {
  const Backend& b = GetParam();
  AOTRT_FIND_OP(resize, Resize, b, "resize_");
  // x.t() of a [2, 3] tensor: sizes [3, 2], strides [1, 3].
  Tensor x = filled<float>(b, {0, 3, 1, 4, 2, 5}, {3, 2}, {1, 3});
  const Dims size{3, 2};
  ASSERT_EQ(resize(x.get(), size.data(), 2, nullptr), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(meta(x.get()).strides, (Dims{1, 3}));
  int32_t contiguous = kContiguousFormat;
  ASSERT_EQ(resize(x.get(), size.data(), 2, &contiguous), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(meta(x.get()).strides, (Dims{2, 1}));
  // Four dims in channels_last: torch.empty(2, 9).resize_(1, 2, 3, 3, memory_format=cl).
  Tensor y = empty(b, {2, 9}, kF32);
  const Dims nchw{1, 2, 3, 3};
  int32_t cl = kChannelsLast;
  ASSERT_EQ(resize(y.get(), nchw.data(), 4, &cl), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(meta(y.get()).strides, (Dims{18, 1, 6, 2}));
}

TEST_P(OpsResize, GrowingMovesEveryViewOfTheStorageToTheNewBlock) {
  const Backend& b = GetParam();
  AOTRT_FIND_OP(resize, Resize, b, "resize_");
  Tensor x = filled<float>(b, {0, 1, 2, 3}, {2, 2}, {2, 1});
  Tensor tail = reinterpret(x.get(), {2}, {1}, 2);  // another handle on the same storage
  const Counters c0 = counters(b);
  const Dims size{3, 3};
  ASSERT_EQ(resize(x.get(), size.data(), 2, nullptr), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(x.get());
  EXPECT_EQ(m.sizes, (Dims{3, 3}));
  EXPECT_EQ(m.strides, (Dims{3, 1}));
  // The old values are kept; the view sees the new block at its own offset.
  const std::vector<double> grown = values_of(x.get());
  EXPECT_EQ(std::vector<double>(grown.begin(), grown.begin() + 4), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(data_of(tail.get()), data_of(x.get()) + 2 * sizeof(float));
  EXPECT_EQ(values_of(tail.get()), (std::vector<double>{2, 3}));
  // A write through x shows through the other handle.
  ASSERT_EQ(aoti_torch_zero_(x.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(values_of(tail.get()), (std::vector<double>{0, 0}));
  // One block of 9 floats replaced one of 4; all of it goes with the last handle.
  const Counters c1 = counters(b);
  EXPECT_EQ(c1.live_allocations, c0.live_allocations);
  if (b.is_cpu()) EXPECT_TRUE(grew_by(b, c0, c1, 5 * sizeof(float)));  // CUDA rounds blocks
  x.reset();
  EXPECT_EQ(values_of(tail.get()), (std::vector<double>{0, 0}));
  tail.reset();
  EXPECT_EQ(counters(b).live_allocations, c0.live_allocations - 1);
}

TEST_P(OpsResize, RefusalsNameTheReasonAndChangeNothing) {
  const Backend& b = GetParam();
  AOTRT_FIND_OP(resize, Resize, b, "resize_");
  Tensor x = filled<float>(b, {0, 1, 2, 3, 4, 5}, {2, 3}, {3, 1});
  const Dims neg{2, -1}, three{6}, big{4, 4};
  int32_t preserve = kPreserveFormat, cl = kChannelsLast, bogus = 9;
  expect_refused(resize(x.get(), neg.data(), 2, nullptr), std::string(b.op_prefix) + "resize_",
                 "negative dimension");
  expect_refused(resize(x.get(), three.data(), 1, &preserve),
                 std::string(b.op_prefix) + "resize_", "Unsupported memory format");
  expect_refused(resize(x.get(), three.data(), 1, &cl), std::string(b.op_prefix) + "resize_",
                 "required rank 4");
  expect_refused(resize(x.get(), three.data(), 1, &bogus), std::string(b.op_prefix) + "resize_",
                 "memory format 9");
  EXPECT_EQ(meta(x.get()).sizes, (Dims{2, 3}));
  // Memory aotrt does not own cannot grow; it can be viewed smaller.
  void* blob = foreign_alloc(b, 6 * sizeof(float));
  {
    const Dims s{2, 3}, st{3, 1};
    Tensor f;
    ASSERT_EQ(aoti_torch_create_tensor_from_blob(blob, 2, s.data(), st.data(), 0, kF32,
                                                 b.device_type, b.is_cpu() ? 0 : b.device_index,
                                                 f.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    expect_refused(resize(f.get(), big.data(), 2, nullptr), std::string(b.op_prefix) + "resize_",
                   "not resizable");
    EXPECT_EQ(meta(f.get()).sizes, (Dims{2, 3}));
    EXPECT_EQ(resize(f.get(), three.data(), 1, nullptr), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    EXPECT_EQ(meta(f.get()).sizes, Dims{6});
  }
  foreign_free(b, blob);
}

TEST_P(OpsResize, ResizeAsTakesTheTemplatesSizesAndPreservedFormat) {
  const Backend& b = GetParam();
  AOTRT_FIND_OP(resize_as, ResizeAs, b, "resize_as_");
  Tensor self = empty(b, {0}, kF32);
  Tensor tmpl = empty(b, {2, 3, 2, 2}, {12, 1, 6, 3}, kF32);  // channels_last
  ASSERT_EQ(resize_as(self.get(), tmpl.get(), nullptr), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(meta(self.get()).sizes, (Dims{2, 3, 2, 2}));
  EXPECT_EQ(meta(self.get()).strides, (Dims{12, 4, 2, 1}));
  int32_t preserve = kPreserveFormat;
  ASSERT_EQ(resize_as(self.get(), tmpl.get(), &preserve), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(meta(self.get()).strides, (Dims{12, 1, 6, 3}));
}

TEST_P(OpsResize, SetMakesSelfAViewOfSourceThatKeepsItAlive) {
  const Backend& b = GetParam();
  AOTRT_FIND_OP(set, SetSource, b, "set__source_Tensor");
  Tensor self = empty(b, {4}, kF32);
  Tensor parent = filled<float>(b, {0, 1, 2, 3, 4, 5}, {6}, {1});
  Tensor source = reinterpret(parent.get(), {2, 2}, {1, 2}, 1);
  ASSERT_EQ(set(self.get(), source.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(self.get());
  EXPECT_EQ(m.sizes, (Dims{2, 2}));
  EXPECT_EQ(m.strides, (Dims{1, 2}));
  EXPECT_EQ(m.offset, 1);
  EXPECT_EQ(data_of(self.get()), data_of(source.get()));
  parent.reset();
  source.reset();
  EXPECT_EQ(values_of(self.get()), (std::vector<double>{1, 3, 2, 4}));
  Tensor ints = empty(b, {4}, kI64);
  expect_refused(set(ints.get(), self.get()), std::string(b.op_prefix) + "set__source_Tensor",
                 "Could not set tensor of type");
}

INSTANTIATE_TEST_SUITE_P(Backends, OpsResize, ::testing::ValuesIn(built_backends()), backend_name);

}  // namespace
}  // namespace aotrt::test
