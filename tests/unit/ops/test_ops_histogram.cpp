// The histogram family through the C ABI against torch eager's values, dtypes and strides
// (reference_histogram.inc; Note [Histogram semantics]): histogram.bin_ct and
// _histogramdd_from_bin_cts, and their refusals; _histogramdd_bin_edges (no C shim) through
// the proxy executor. CPU only (torch's CUDA header has neither shim).
#include <string>
#include <vector>

#include "ops_testing.h"
#include "proxy_testing.h"

namespace aotrt::test {
namespace {

#include "reference_histogram.inc"

using Histogram = AOTITorchError (*)(AtenTensorHandle, int64_t, const double**, int64_t,
                                     AtenTensorHandle*, int32_t, AtenTensorHandle*,
                                     AtenTensorHandle*);
using HistogramDD = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, const double**,
                                       int64_t, AtenTensorHandle*, int32_t, AtenTensorHandle*);

class OpsHistogram : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsHistogram, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  AtenTensorHandle w = in.size() > 1 ? in[1].get() : nullptr;
  const double* range = c.floats.data();
  const double** range_arg = c.floats.empty() ? nullptr : &range;
  const auto range_len = static_cast<int64_t>(c.floats.size());
  Tensor out[2];
  AOTITorchError rc;
  if (op == "histogram_bin_ct") {
    AOTRT_FIND_OP(f, Histogram, b, op);
    rc = f(in[0].get(), c.ints[0], range_arg, range_len, in.size() > 1 ? &w : nullptr,
           static_cast<int32_t>(c.ints[1]), out[0].out(), out[1].out());
  } else {
    AOTRT_FIND_OP(f, HistogramDD, b, op);
    rc = f(in[0].get(), c.ints.data() + 1, static_cast<int64_t>(c.ints.size()) - 1, range_arg,
           range_len, in.size() > 1 ? &w : nullptr, static_cast<int32_t>(c.ints[0]),
           out[0].out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    expect_matches(out[k].get(), c.outputs[k], std::string(c.name) + " output " + std::to_string(k));
  }
}

std::vector<OpCase> histogram_cases(bool edges) {
  return cases_where(
      kHistogramCases, [](const OpCase& c) { return std::string(c.op) == "_histogramdd_bin_edges"; },
      edges);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsHistogram,
                         ::testing::ValuesIn(all_backends(histogram_cases(false))),
                         backend_case_name);

class OpsHistogramEdges : public ::testing::TestWithParam<BackendCase> {};

// The node as torch 2.13 writes it for torch.histogramdd(x, bins=[...], range=...).
TEST_P(OpsHistogramEdges, MatchesTorchThroughTheProxyExecutor) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  if (!b.is_cpu()) GTEST_SKIP() << "a CPU proxy op";
  Tensor x = make_tensor(b, c.inputs[0]);
  std::string bins, range;
  for (int64_t v : c.ints) bins += (bins.empty() ? "" : ", ") + std::to_string(v);
  for (double v : c.floats) range += (range.empty() ? "" : ", ") + std::to_string(v);
  const std::string inputs =
      R"([{"name": "self", "arg": {"as_tensor": {"name": "arg0_1"}}},
          {"name": "bins", "arg": {"as_ints": [)" + bins + "]}}" +
      (c.floats.empty() ? "" : R"(, {"name": "range", "arg": {"as_floats": [)" + range + "]}}") +
      "]";
  ProxyResult r = run_proxy("aten::_histogramdd_bin_edges", inputs, c.ints, {x.get()},
                            static_cast<int>(c.outputs.size()), /*list_output=*/true);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    expect_matches(r.outputs[k].get(), c.outputs[k], std::string(c.name) + " edges " + std::to_string(k));
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsHistogramEdges,
                         ::testing::ValuesIn(all_backends(histogram_cases(true))),
                         backend_case_name);

TEST(OpsHistogramRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(h, Histogram, b, "histogram_bin_ct");
  AOTRT_FIND_OP(dd, HistogramDD, b, "_histogramdd_from_bin_cts");
  Tensor x = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 2, 3}});
  Tensor xn = make_tensor(b, Values{kF32, {2}, {1}, 0, {1, kNaN}});
  Tensor xh = make_tensor(b, Values{kF16, {3}, {1}, 0, {1, 2, 3}});
  Tensor w64 = make_tensor(b, Values{kF64, {3}, {1}, 0, {1, 2, 3}});
  Tensor p = make_tensor(b, Values{kF32, {2, 2}, {2, 1}, 0, {1, 2, 3, 4}});
  Tensor out;
  const char* H = "aoti_torch_cpu_histogram_bin_ct";
  expect_refused(h(x.get(), 0, nullptr, 0, nullptr, 0, out.out(), nullptr), H, "bins must be > 0");
  expect_refused(h(xn.get(), 2, nullptr, 0, nullptr, 0, out.out(), nullptr), H, "is not finite");
  expect_refused(h(xh.get(), 2, nullptr, 0, nullptr, 0, out.out(), nullptr), H,
                 "self must be float32 or float64");
  const double backwards[] = {2, 1};
  const double* r = backwards;
  expect_refused(h(x.get(), 2, &r, 2, nullptr, 0, out.out(), nullptr), H, "min should not exceed max");
  AtenTensorHandle w = w64.get();
  expect_refused(h(x.get(), 2, nullptr, 0, &w, 0, out.out(), nullptr), H, "weight is float64");
  const int64_t one_bin[] = {2};
  expect_refused(dd(p.get(), one_bin, 1, nullptr, 0, nullptr, 0, out.out()),
                 "aoti_torch_cpu__histogramdd_from_bin_cts", "bins has 1 counts for 2 dims");
  const int64_t bins2[] = {2, 2};
  expect_refused(dd(p.get(), bins2, 2, &r, 2, nullptr, 0, out.out()),
                 "aoti_torch_cpu__histogramdd_from_bin_cts", "range has 2 values; 4");
  EXPECT_EQ(out.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
