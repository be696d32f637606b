// segment_reduce through the C ABI against torch eager's values, dtypes and strides
// (reference_segment.inc; Note [Segment reduce semantics]) on every built backend, the
// CPU's refusals, and what CUDA does instead (Note [Segment bounds on CUDA]).
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_segment.inc"

using SegmentReduce = AOTITorchError (*)(AtenTensorHandle, const char*, AtenTensorHandle*,
                                         AtenTensorHandle*, AtenTensorHandle*, int64_t, int32_t,
                                         double*, AtenTensorHandle*);

const char* const kReduces[] = {"sum", "prod", "mean", "max", "min"};

class OpsSegment : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsSegment, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  AOTRT_FIND_OP(f, SegmentReduce, b, c.op);
  AtenTensorHandle bounds = in[1].get();
  double initial = c.floats.empty() ? 0.0 : c.floats[0];
  Tensor out;
  const bool offsets = c.ints[3] != 0;
  const AOTITorchError rc =
      f(in[0].get(), kReduces[c.ints[0]], offsets ? nullptr : &bounds, nullptr,
        offsets ? &bounds : nullptr, c.ints[1], static_cast<int32_t>(c.ints[2]),
        c.floats.empty() ? nullptr : &initial, out.out());
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsSegment, ::testing::ValuesIn(all_backends(kSegmentCases)),
                         backend_case_name);

TEST(OpsSegmentRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, SegmentReduce, b, "segment_reduce");
  Tensor d = make_tensor(b, Values{kF32, {4}, {1}, 0, {1, 2, 3, 4}});
  Tensor good = make_tensor(b, Values{kI64, {2}, {1}, 0, {1, 3}});
  Tensor short_l = make_tensor(b, Values{kI64, {2}, {1}, 0, {1, 2}});
  Tensor negative = make_tensor(b, Values{kI64, {2}, {1}, 0, {5, -1}});
  Tensor long_l = make_tensor(b, Values{kI64, {2}, {1}, 0, {3, 3}});
  Tensor fl = make_tensor(b, Values{kF32, {2}, {1}, 0, {1, 3}});
  Tensor di = make_tensor(b, Values{kI32, {4}, {1}, 0, {1, 2, 3, 4}});
  Tensor out;
  auto refused = [&](AtenTensorHandle data, const char* reduce, AtenTensorHandle lengths,
                     int32_t unsafe, const char* what) {
    AtenTensorHandle l = lengths;
    expect_refused(f(data, reduce, lengths ? &l : nullptr, nullptr, nullptr, 0, unsafe, nullptr,
                     out.out()),
                   "aoti_torch_cpu_segment_reduce", what);
  };
  refused(d.get(), "median", good.get(), 0, "reduce must be");
  refused(d.get(), "sum", nullptr, 0, "either lengths or offsets");
  refused(d.get(), "sum", short_l.get(), 0, "must sum to data's size");
  refused(d.get(), "sum", negative.get(), 1, "negative");
  refused(d.get(), "sum", long_l.get(), 1, "past data's size");
  refused(d.get(), "sum", fl.get(), 0, "lengths must be int64 or int32");
  refused(di.get(), "sum", good.get(), 0, "data must be float16");
  AtenTensorHandle idx = good.get();
  EXPECT_EQ(f(d.get(), "sum", nullptr, &idx, nullptr, 0, 0, nullptr, out.out()),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("indices based reduction"), std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(out.get(), nullptr);
}

// Note [Segment bounds on CUDA]: a negative length counts as 0, starts are clamped to
// [previous start, data's size].
TEST(OpsSegmentCuda, BadBoundsAreClampedNotRead) {
  AOTRT_SKIP_WITHOUT_CUDA();
  for (const Backend& b : built_backends()) {
    if (b.is_cpu()) continue;
    AOTRT_FIND_OP(f, SegmentReduce, b, "segment_reduce");
    Tensor d = make_tensor(b, Values{kF32, {4}, {1}, 0, {1, 2, 3, 4}});
    Tensor lengths = make_tensor(b, Values{kI64, {3}, {1}, 0, {2, -1, 5}});
    Tensor offsets = make_tensor(b, Values{kI64, {4}, {1}, 0, {1, 3, 2, 9}});
    AtenTensorHandle l = lengths.get(), o = offsets.get();
    Tensor by_lengths, by_offsets;
    ASSERT_EQ(f(d.get(), "sum", &l, nullptr, nullptr, 0, 1, nullptr, by_lengths.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    // [0, 2), [2, 2), [2, 4) (7 clamped to 4).
    expect_matches(by_lengths.get(), Values{kF32, {3}, {1}, 0, {3, 0, 7}}, "lengths");
    ASSERT_EQ(f(d.get(), "sum", nullptr, nullptr, &o, 0, 0, nullptr, by_offsets.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    // [1, 3), [3, 3) (2 raised to 3), [3, 4) (9 clamped to 4).
    expect_matches(by_offsets.get(), Values{kF32, {3}, {1}, 0, {5, 0, 4}}, "offsets");
  }
}

}  // namespace
}  // namespace aotrt::test
