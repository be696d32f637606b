// The sort family (sort, sort_stable, topk, kthvalue, median, nanmedian, mode) through the
// C ABI on every built backend, against torch eager's values, dtypes and strides
// (reference_sort.inc, from gen_ops_reference.py; Note [Sort semantics]). Where ATen leaves
// the index among equal values unspecified (cases named *_ties_* of kthvalue and mode),
// the index must point at an element equal to the value instead of equalling torch's.
#include <cmath>
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_sort.inc"

using Sort = AOTITorchError (*)(AtenTensorHandle, int64_t, int32_t, AtenTensorHandle*,
                                AtenTensorHandle*);
using SortStable = AOTITorchError (*)(AtenTensorHandle, int32_t*, int64_t, int32_t,
                                      AtenTensorHandle*, AtenTensorHandle*);
using Topk = AOTITorchError (*)(AtenTensorHandle, int64_t, int64_t, int32_t, int32_t,
                                AtenTensorHandle*, AtenTensorHandle*);
using Kth = AOTITorchError (*)(AtenTensorHandle, int64_t, int64_t, int32_t, AtenTensorHandle*,
                               AtenTensorHandle*);
using Mode = AOTITorchError (*)(AtenTensorHandle, int64_t, int32_t, AtenTensorHandle*,
                                AtenTensorHandle*);
using Median = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);

// Every index points along `dim` at an input element equal to its value.
void expect_indices_select_values(const Values& in, int64_t dim, bool keepdim,
                                  AtenTensorHandle values, AtenTensorHandle indices) {
  const std::vector<double> v = values_of(values), idx = values_of(indices);
  const Meta m = meta(values);
  const int64_t ndim = static_cast<int64_t>(in.sizes.size());
  const int64_t d = dim < 0 ? dim + ndim : dim;
  const Dims in_strides = row_major(in.sizes);
  for (size_t p = 0; p < v.size(); ++p) {
    // The output's multi-index, with the input's dim put back when it was dropped.
    Dims pos(m.sizes.size());
    int64_t rest = static_cast<int64_t>(p);
    for (size_t k = m.sizes.size(); k-- > 0;) {
      pos[k] = rest % m.sizes[k];
      rest /= m.sizes[k];
    }
    if (!keepdim && static_cast<int64_t>(pos.size()) < ndim) pos.insert(pos.begin() + d, 0);
    pos[d] = static_cast<int64_t>(idx[p]);
    ASSERT_GE(pos[d], 0);
    ASSERT_LT(pos[d], in.sizes[d]);
    int64_t flat = 0;
    for (int64_t k = 0; k < ndim; ++k) flat += pos[k] * in_strides[k];
    const double want = in.values[static_cast<size_t>(flat)];
    EXPECT_TRUE(std::isnan(want) ? std::isnan(v[p]) : want == v[p])
        << "element " << p << ": value " << v[p] << ", but index " << idx[p] << " holds " << want;
  }
}

class OpsSort : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsSort, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  const bool ties = std::string(c.name).find("_ties_") != std::string::npos &&
                    (op == "kthvalue" || op == "mode");
  Tensor x = make_tensor(b, c.inputs[0]);
  std::vector<Tensor> outs(c.outputs.size());
  AOTITorchError rc;
  int64_t dim = 0;
  bool keepdim = true;
  if (op == "sort") {
    AOTRT_FIND_OP(f, Sort, b, op);
    rc = f(x.get(), c.ints[0], static_cast<int32_t>(c.ints[1]), outs[0].out(), outs[1].out());
  } else if (op == "sort_stable") {
    AOTRT_FIND_OP(f, SortStable, b, op);
    int32_t stable = 1;
    rc = f(x.get(), &stable, c.ints[0], static_cast<int32_t>(c.ints[1]), outs[0].out(),
           outs[1].out());
  } else if (op == "topk") {
    AOTRT_FIND_OP(f, Topk, b, op);
    rc = f(x.get(), c.ints[0], c.ints[1], static_cast<int32_t>(c.ints[2]),
           static_cast<int32_t>(c.ints[3]), outs[0].out(), outs[1].out());
  } else if (op == "kthvalue") {
    AOTRT_FIND_OP(f, Kth, b, op);
    dim = c.ints[1];
    keepdim = c.ints[2] != 0;
    rc = f(x.get(), c.ints[0], dim, static_cast<int32_t>(keepdim), outs[0].out(), outs[1].out());
  } else if (op == "mode") {
    AOTRT_FIND_OP(f, Mode, b, op);
    dim = c.ints[0];
    keepdim = c.ints[1] != 0;
    rc = f(x.get(), dim, static_cast<int32_t>(keepdim), outs[0].out(), outs[1].out());
  } else {
    AOTRT_FIND_OP(f, Median, b, op);
    rc = f(x.get(), outs[0].out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(outs[0].get(), c.outputs[0], c.name + std::string(" values"));
  if (outs.size() < 2) return;
  if (ties) {
    const Meta m = meta(outs[1].get());
    EXPECT_EQ(m.dtype, kI64);
    EXPECT_EQ(m.sizes, c.outputs[1].sizes);
    EXPECT_EQ(m.strides, c.outputs[1].strides);
    expect_indices_select_values(c.inputs[0], dim, keepdim, outs[0].get(), outs[1].get());
  } else {
    expect_matches(outs[1].get(), c.outputs[1], c.name + std::string(" indices"));
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsSort, ::testing::ValuesIn(all_backends(kSortCases)),
                         backend_case_name);

// Long lines in parallel: every row of [257, 200] sorted descending, as a reference does.
TEST(OpsSortLarge, ParallelLinesMatchAStableReference) {
  for (const Backend& b : built_backends()) {
    AOTRT_FIND_OP(f, Sort, b, "sort");
    const int64_t R = 257, C = 200;
    Values v{kF32, {R, C}, {1, R}, 0, {}};  // column-major: lines are strided
    for (int64_t i = 0; i < R * C; ++i) v.values.push_back(static_cast<double>((i * 37 + 11) % 23));
    Tensor x = make_tensor(b, v);
    Tensor values, indices;
    const AOTITorchError rc = f(x.get(), 1, 1, values.out(), indices.out());
    AOTRT_SKIP_IF_NO_KERNEL(b, rc);
    ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
    std::vector<double> want_v, want_i;
    for (int64_t r = 0; r < R; ++r) {
      std::vector<std::pair<double, int64_t>> line;
      for (int64_t k = 0; k < C; ++k) line.push_back({v.values[r * C + k], k});
      std::stable_sort(line.begin(), line.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      for (const auto& [val, k] : line) {
        want_v.push_back(val);
        want_i.push_back(static_cast<double>(k));
      }
    }
    expect_matches(values.get(), Values{kF32, {R, C}, {1, R}, 0, want_v}, "values");
    expect_matches(indices.get(), Values{kI64, {R, C}, {1, R}, 0, want_i}, "indices");
  }
}

TEST(OpsSortRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(topk, Topk, b, "topk");
  AOTRT_FIND_OP(kth, Kth, b, "kthvalue");
  AOTRT_FIND_OP(mode, Mode, b, "mode");
  Tensor x = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor v, i;
  EXPECT_EQ(topk(x.get(), 4, 1, 1, 1, v.out(), i.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("aoti_torch_cpu_topk: selected index k out of range"),
            std::string::npos) << aotrt_last_error();
  EXPECT_EQ(kth(x.get(), 0, 1, 0, v.out(), i.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("k out of range"), std::string::npos);
  Tensor empty_line = make_tensor(b, Values{kF32, {2, 0}, {1, 1}, 0, {}});
  EXPECT_EQ(mode(empty_line.get(), 1, 0, v.out(), i.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("is empty"), std::string::npos);
  EXPECT_EQ(v.get(), nullptr);
  EXPECT_EQ(i.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
