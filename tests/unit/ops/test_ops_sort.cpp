// The sort family (sort, sort_stable, topk, kthvalue, median, nanmedian, mode) through the
// C ABI on every built backend, and its ops with no C shim (median.dim, nanmedian.dim,
// _unique2, unique_dim, unique_consecutive) through the proxy executor on every built
// backend (Note [Unique on CUDA]), against torch eager's values, dtypes and strides
// (reference_sort.inc, from gen_ops_reference.py; Note [Sort semantics]). Where ATen leaves
// the index among equal values unspecified (cases named *_ties_* of kthvalue and mode),
// the index must point at an element equal to the value instead of equalling torch's.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ops_testing.h"
#include "proxy_testing.h"

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

// Sorts every line along dim of row-major values (NaN last), for comparing
// results whose order within a line is unspecified.
void sort_lines(std::vector<double>& v, const Dims& sizes, int64_t dim) {
  if (sizes.empty() || v.empty()) return;
  const Dims strides = row_major(sizes);
  const int64_t n = sizes[dim], step = strides[dim];
  for (size_t start = 0; start < v.size(); ++start) {
    if ((static_cast<int64_t>(start) / step) % n != 0) continue;  // not a line's first element
    std::vector<double> line;
    for (int64_t k = 0; k < n; ++k) line.push_back(v[start + k * step]);
    std::stable_sort(line.begin(), line.end(), [](double a, double b) {
      return std::isnan(b) ? !std::isnan(a) : a < b;
    });
    for (int64_t k = 0; k < n; ++k) v[start + k * step] = line[k];
  }
}

// Cases of ops served through the proxy executor (no C shim): their op names are
// schema names, with an overload or a leading underscore, or unique*.
bool is_proxy_case(const OpCase& c) {
  const std::string op = c.op;
  return op.find('.') != std::string::npos || op.rfind("unique", 0) == 0 || op == "_unique2";
}
std::vector<OpCase> sort_cases(bool proxy) { return cases_where(kSortCases, is_proxy_case, proxy); }

class OpsSort : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsSort, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  const bool ties = std::string(c.name).find("_ties_") != std::string::npos &&
                    (op == "kthvalue" || op == "mode");
  // The reference records ATen's CPU topk, whose tie breaking (partial_sort /
  // nth_element) and unsorted order ATen's CUDA topk does not share: there the
  // values must be the k extremes (in order when sorted) and every index must
  // select its value.
  const bool cuda_topk = !b.is_cpu() && op == "topk";
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
  if (cuda_topk) {
    dim = c.ints[1];
    if (c.ints[3] != 0) {
      expect_matches(outs[0].get(), c.outputs[0], c.name + std::string(" values"));
    } else {
      const Meta m = meta(outs[0].get());
      EXPECT_EQ(m.sizes, c.outputs[0].sizes);
      EXPECT_EQ(m.strides, c.outputs[0].strides);
      std::vector<double> got = values_of(outs[0].get()), want = c.outputs[0].values;
      const int64_t d = dim < 0 ? dim + static_cast<int64_t>(m.sizes.size()) : dim;
      sort_lines(got, m.sizes, d);
      sort_lines(want, m.sizes, d);
      EXPECT_TRUE(same_values(got, want, 0)) << c.name << " values, each line sorted";
    }
  } else {
    expect_matches(outs[0].get(), c.outputs[0], c.name + std::string(" values"));
  }
  if (outs.size() < 2) return;
  if (ties || cuda_topk) {
    const Meta m = meta(outs[1].get());
    EXPECT_EQ(m.dtype, kI64);
    EXPECT_EQ(m.sizes, c.outputs[1].sizes);
    EXPECT_EQ(m.strides, c.outputs[1].strides);
    expect_indices_select_values(c.inputs[0], dim, keepdim, outs[0].get(), outs[1].get());
  } else {
    expect_matches(outs[1].get(), c.outputs[1], c.name + std::string(" indices"));
  }
}

// ATen's CPU mode places NaN by its std::sort's steps (Note [Mode with NaN]); its CUDA
// kernel orders NaN otherwise.
INSTANTIATE_TEST_SUITE_P(Torch, OpsSort,
                         ::testing::ValuesIn(all_backends(sort_cases(false),
                                                          {"mode_nan_first_cpu", "mode_nan_last_cpu",
                                                           "mode_nan_scattered_cpu"})),
                         backend_case_name);

std::string bool_json(int64_t v) { return v != 0 ? "true" : "false"; }
std::string arg_json(const std::string& name, const std::string& arg) {
  return R"({"name": ")" + name + R"(", "arg": {)" + arg + "}}";
}

// The extern node's inputs as torch 2.13 serialises them for this case (the
// packages of tests/e2e/test_ops_sort.py hold the same), and the run-time ints.
std::pair<std::string, std::vector<int64_t>> proxy_inputs(const OpCase& c) {
  const std::string op = c.op;
  const std::string self = arg_json("self", R"("as_tensor": {"name": "arg0_1"})");
  auto as_int = [](int64_t v) { return R"("as_int": )" + std::to_string(v); };
  auto as_bool = [](int64_t v) { return R"("as_bool": )" + bool_json(v); };
  if (op == "median.dim" || op == "nanmedian.dim") {
    return {"[" + self + ", " + arg_json("dim", as_int(c.ints[0])) + ", " +
                arg_json("keepdim", as_bool(c.ints[1])) + "]",
            {c.ints[0]}};
  }
  if (op == "_unique2") {
    return {"[" + self + ", " + arg_json("sorted", as_bool(1)) + ", " +
                arg_json("return_inverse", as_bool(c.ints[0])) + ", " +
                arg_json("return_counts", as_bool(c.ints[1])) + "]",
            {}};
  }
  if (op == "unique_dim") {
    return {"[" + self + ", " + arg_json("dim", as_int(c.ints[0])) + ", " +
                arg_json("sorted", as_bool(1)) + ", " +
                arg_json("return_inverse", as_bool(c.ints[1])) + ", " +
                arg_json("return_counts", as_bool(c.ints[2])) + "]",
            {c.ints[0]}};
  }
  const bool none = c.ints[2] == kNone;
  return {"[" + self + ", " + arg_json("return_inverse", as_bool(c.ints[0])) + ", " +
              arg_json("return_counts", as_bool(c.ints[1])) + ", " +
              arg_json("dim", none ? R"("as_none": true)" : as_int(c.ints[2])) + "]",
          none ? std::vector<int64_t>{} : std::vector<int64_t>{c.ints[2]}};
}

class OpsSortProxy : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsSortProxy, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  Tensor x = make_tensor(b, c.inputs[0]);
  const auto [inputs, ints] = proxy_inputs(c);
  ProxyResult r = run_proxy(std::string("aten::") + c.op, inputs, ints, {x.get()},
                            static_cast<int>(c.outputs.size()), false, proxy_device(b));
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const char* names[] = {"values", "indices/inverse", "counts"};
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const std::string what = c.name + std::string(" ") + names[k];
    if (k == 1 && !b.is_cpu() && std::string(c.name).find("_all_nan_") != std::string::npos) {
      // A line of NaNs only: every index selects a NaN. The CPU rows give libstdc++'s
      // introselect index, as ATen's CPU kernel (0 0 0 2 2 3 5 for n = 1..7); the CUDA
      // kernel takes the first of the stably sorted line (Note in src/cuda/ops/sort.cu),
      // so here the index is only checked to be one of the line's.
      const Meta m = meta(r.outputs[1].get());
      EXPECT_EQ(m.sizes, c.outputs[1].sizes) << what;
      EXPECT_EQ(m.strides, c.outputs[1].strides) << what;
      const int64_t n = c.inputs[0].sizes.empty() ? 1 : c.inputs[0].sizes[c.ints[0]];
      for (double i : values_of(r.outputs[1].get())) {
        EXPECT_TRUE(i >= 0 && i < static_cast<double>(n)) << what << ": index " << i;
      }
    } else if (k == 1 && std::string(c.name).find("_ties_") != std::string::npos) {
      const Meta m = meta(r.outputs[1].get());
      EXPECT_EQ(m.dtype, kI64) << what;
      EXPECT_EQ(m.sizes, c.outputs[1].sizes) << what;
      EXPECT_EQ(m.strides, c.outputs[1].strides) << what;
      expect_indices_select_values(c.inputs[0], c.ints[0], c.ints[1] != 0, r.outputs[0].get(),
                                   r.outputs[1].get());
    } else {
      expect_matches(r.outputs[k].get(), c.outputs[k], what);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsSortProxy, ::testing::ValuesIn(all_backends(sort_cases(true))),
                         backend_case_name);

// A longer line with many repeats: sorted unique values, inverse and counts
// against std::map's.
void unique_matches_a_map_reference(const Backend& b) {
  const int64_t n = 5000;
  Values v{kI32, {n}, {1}, 0, {}};
  for (int64_t i = 0; i < n; ++i) v.values.push_back(static_cast<double>((i * 7919 + 13) % 331) - 100);
  Tensor x = make_tensor(b, v);
  ProxyResult r = run_proxy("aten::_unique2", R"([{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "return_inverse", "arg": {"as_bool": true}},
      {"name": "return_counts", "arg": {"as_bool": true}}])", {}, {x.get()}, 3, false,
                            proxy_device(b));
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  std::map<double, int64_t> counts;
  for (double e : v.values) ++counts[e];
  std::vector<double> want_values, want_counts, want_inverse;
  std::map<double, int64_t> rank;
  for (const auto& [value, count] : counts) {
    rank[value] = static_cast<int64_t>(want_values.size());
    want_values.push_back(value);
    want_counts.push_back(static_cast<double>(count));
  }
  for (double e : v.values) want_inverse.push_back(static_cast<double>(rank[e]));
  const int64_t k = static_cast<int64_t>(want_values.size());
  expect_matches(r.outputs[0].get(), Values{kI32, {k}, {1}, 0, want_values}, "values");
  expect_matches(r.outputs[1].get(), Values{kI64, {n}, {1}, 0, want_inverse}, "inverse");
  expect_matches(r.outputs[2].get(), Values{kI64, {k}, {1}, 0, want_counts}, "counts");
}

TEST(OpsSortProxyLarge, UniqueMatchesAMapReference) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    unique_matches_a_map_reference(b);
  }
}

TEST(OpsSortProxyRefusals, NameTheOpAndTheArgument) {
  const Backend b = built_backends()[0];
  auto refused = [&](const char* target, const std::string& inputs, std::vector<int64_t> ints,
                     const Values& v, const std::string& what) {
    Tensor x = make_tensor(b, v);
    ProxyResult r = run_proxy(target, inputs, ints, {x.get()}, 3);
    EXPECT_EQ(r.rc, AOTI_TORCH_FAILURE) << what;
    const std::string msg = aotrt_last_error();
    EXPECT_NE(msg.find(target), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  const std::string self = R"([{"name": "self", "arg": {"as_tensor": {"name": "x"}}})";
  const std::string dim0 = self + R"(, {"name": "dim", "arg": {"as_int": 0}}])";
  // ATen: "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"
  refused("aten::unique_dim", dim0, {0}, Values{kF32, {3, 0}, {1, 1}, 0, {}},
          "dim 1 of self (sizes [3, 0]) has size 0 and is not dim 0");
  refused("aten::unique_consecutive", dim0, {0}, Values{kF32, {}, {}, 0, {2}},
          "dim 0 was given but self has no dimensions");
  refused("aten::_unique2", self + "]", {}, Values{kC64, {1}, {1}, 0, {1}},
          "\"unique\" is not implemented for complex64");
  Tensor empty_line = make_tensor(b, Values{kF32, {2, 0}, {1, 1}, 0, {}});
  ProxyResult r = run_proxy("aten::nanmedian.dim", self + R"(, {"name": "dim", "arg": {"as_int": 1}}])",
                            {1}, {empty_line.get()}, 2);
  EXPECT_EQ(r.rc, AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("aten::nanmedian.dim (extern node 0): dim 1 is empty"),
            std::string::npos)
      << aotrt_last_error();
}

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
