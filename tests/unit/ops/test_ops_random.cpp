// The random family's ops with no C shim (aten::multinomial, prims::normal) through the
// proxy executor on the CPU (Note [Random streams]). Values are aotrt's Philox draws, not
// torch's, so the rows check the distribution: category frequencies within 6 standard
// errors of the probabilities (a false failure about once in 10^8 runs), zero weights never
// drawn, samples of a row without replacement distinct, the same seed giving the same
// draws, and the refusals ATen makes, with its messages.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "proxy_testing.h"

namespace aotrt::test {
namespace {

const std::string kSelf = R"({"name": "self", "arg": {"as_tensor": {"name": "p"}}})";

std::string multinomial_inputs(int64_t k, bool replacement) {
  return "[" + kSelf + R"(, {"name": "num_samples", "arg": {"as_int": )" + std::to_string(k) +
         R"(}}, {"name": "replacement", "arg": {"as_bool": )" +
         (replacement ? "true" : "false") + "}}]";
}

ProxyResult multinomial(const Values& p, int64_t k, bool replacement) {
  Tensor t = make_tensor(built_backends()[0], p);
  return run_proxy("aten::multinomial", multinomial_inputs(k, replacement), {k}, {t.get()}, 1);
}

void expect_frequencies(const std::vector<double>& drawn, const std::vector<double>& weights,
                        const std::string& what) {
  double total = 0;
  for (double w : weights) total += w;
  std::vector<double> count(weights.size(), 0);
  for (double d : drawn) {
    ASSERT_GE(d, 0) << what;
    ASSERT_LT(d, static_cast<double>(weights.size())) << what;
    count[static_cast<size_t>(d)] += 1;
  }
  const double n = static_cast<double>(drawn.size());
  for (size_t c = 0; c < weights.size(); ++c) {
    const double p = weights[c] / total;
    if (p == 0) {
      EXPECT_EQ(count[c], 0) << what << ": zero-weight category " << c << " was drawn";
      continue;
    }
    EXPECT_LE(std::abs(count[c] / n - p), 6 * std::sqrt(p * (1 - p) / n))
        << what << ": category " << c << " drawn " << count[c] / n << " of the time, p = " << p;
  }
}

TEST(OpsRandomProxy, MultinomialWithReplacementFollowsTheWeights) {
  // Unnormalised float64 weights in a strided view, one of them zero.
  const std::vector<double> w = {2, 0, 5, 1, 2};
  ProxyResult r = multinomial(Values{kF64, {5}, {3}, 1, w}, 200000, true);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(r.outputs[0].get());
  EXPECT_EQ(m.dtype, kI64);
  EXPECT_EQ(m.sizes, (Dims{200000}));
  EXPECT_EQ(m.strides, (Dims{1}));
  expect_frequencies(values_of(r.outputs[0].get()), w, "with replacement");
}

TEST(OpsRandomProxy, MultinomialWithoutReplacementDrawsDistinctCategoriesPerRow) {
  // 20000 rows of float32 weights (a transposed view: rows are strided), 2 of 6 zero.
  const int64_t rows = 20000, n = 6, k = 4;
  const std::vector<double> w = {3, 0, 1, 4, 0, 2};
  Values v{kF32, {rows, n}, {1, rows}, 0, {}};
  for (int64_t r = 0; r < rows; ++r) v.values.insert(v.values.end(), w.begin(), w.end());
  ProxyResult r = multinomial(v, k, false);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(r.outputs[0].get());
  EXPECT_EQ(m.sizes, (Dims{rows, k}));
  EXPECT_EQ(m.strides, (Dims{k, 1}));
  const std::vector<double> got = values_of(r.outputs[0].get());
  std::vector<double> first;
  for (int64_t i = 0; i < rows; ++i) {
    std::set<double> seen(got.begin() + i * k, got.begin() + (i + 1) * k);
    ASSERT_EQ(seen.size(), static_cast<size_t>(k)) << "row " << i << " repeats a category";
    EXPECT_EQ(seen.count(1) + seen.count(4), 0u) << "row " << i << " drew a zero weight";
    first.push_back(got[static_cast<size_t>(i * k)]);
  }
  // The first sample of a row follows the weights.
  expect_frequencies(first, w, "first sample without replacement");
}

TEST(OpsRandomProxy, MultinomialBeyondThePositiveWeightsTakesZeroWeightsLast) {
  // ATen allows k above the positive weights without replacement: they come first.
  ProxyResult r = multinomial(Values{kF32, {4}, {1}, 0, {0, 1, 0, 3}}, 4, false);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const std::vector<double> got = values_of(r.outputs[0].get());
  EXPECT_EQ(std::set<double>(got.begin(), got.begin() + 2), (std::set<double>{1, 3}));
  EXPECT_EQ(std::set<double>(got.begin() + 2, got.end()), (std::set<double>{0, 2}));
}

TEST(OpsRandomProxy, MultinomialIsDeterministicUnderAManualSeed) {
  const Values p{kF32, {3, 4}, {4, 1}, 0, {1, 2, 3, 4, 4, 3, 2, 1, 1, 1, 1, 1}};
  manual_seed(1234);
  ProxyResult a = multinomial(p, 8, true);
  ProxyResult b = multinomial(p, 8, true);
  manual_seed(1234);
  ProxyResult c = multinomial(p, 8, true);
  ASSERT_EQ(a.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(values_of(a.outputs[0].get()), values_of(c.outputs[0].get()));
  EXPECT_NE(values_of(a.outputs[0].get()), values_of(b.outputs[0].get()));
}

TEST(OpsRandomProxy, MultinomialOfNoRowsIsEmpty) {
  ProxyResult r = multinomial(Values{kF32, {0, 3}, {3, 1}, 0, {}}, 2, true);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(meta(r.outputs[0].get()).sizes, (Dims{0, 2}));
}

TEST(OpsRandomProxy, MultinomialRefusesWhatATenRefuses) {
  auto refused = [](const Values& p, int64_t k, bool replacement, const std::string& what) {
    ProxyResult r = multinomial(p, k, replacement);
    EXPECT_EQ(r.rc, AOTI_TORCH_FAILURE) << what;
    const std::string msg = aotrt_last_error();
    EXPECT_NE(msg.find("aten::multinomial"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  const Values ok{kF32, {3}, {1}, 0, {1, 2, 3}};
  refused(Values{kI64, {2}, {1}, 0, {1, 2}}, 1, true,
          "multinomial only supports floating-point dtypes for input, got: int64");
  refused(Values{kF32, {1, 1, 2}, {2, 2, 1}, 0, {1, 2}}, 1, true, "prob_dist must be 1 or 2 dim");
  refused(ok, 0, true, "cannot sample n_sample <= 0 samples");
  refused(ok, 4, false, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  for (double bad : {-1.0, kNaN, kInf}) {
    refused(Values{kF32, {3}, {1}, 0, {1, bad, 2}}, 1, true,
            "probability tensor contains either `inf`, `nan` or element < 0");
  }
  refused(Values{kF32, {2, 2}, {2, 1}, 0, {1, 1, 0, 0}}, 1, true,
          "invalid multinomial distribution (sum of probabilities <= 0) in row 1");
  refused(Values{kF32, {2, 0}, {1, 1}, 0, {}}, 1, true, "prob_dist has no categories");
}

TEST(OpsRandomProxy, PrimsNormalDrawsTheShapeDtypeAndMoments) {
  // What torch 2.13 writes for torch.normal(mean, std) (kind 2: keyword arguments).
  const std::string inputs = R"([{"name": "shape", "arg": {"as_ints": [400, 500]}},
      {"name": "mean", "arg": {"as_float": 1.5}}, {"name": "std", "arg": {"as_float": 2.0}},
      {"name": "dtype", "arg": {"as_scalar_type": 8}},
      {"name": "device", "arg": {"as_device": {"type": "cpu", "index": null}}},
      {"name": "requires_grad", "arg": {"as_bool": false}}])";
  ProxyResult r = run_proxy("prims::normal", inputs, {400, 500}, {}, 1);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(r.outputs[0].get());
  EXPECT_EQ(m.dtype, kF64);  // serialised dtype 8 (torch.export's numbering): float64
  EXPECT_EQ(m.sizes, (Dims{400, 500}));
  EXPECT_EQ(m.strides, (Dims{500, 1}));
  const std::vector<double> v = values_of(r.outputs[0].get());
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double n = static_cast<double>(v.size()), mean = sum / n;
  for (double x : v) sq += (x - mean) * (x - mean);
  const double var = sq / n;
  EXPECT_LE(std::abs(mean - 1.5), 6 * std::sqrt(4.0 / n)) << mean;
  EXPECT_LE(std::abs(var - 4.0), 6 * std::sqrt(2 * 16.0 / n)) << var;
}

TEST(OpsRandomProxy, PrimsNormalRefusesANegativeStd) {
  const std::string inputs = R"([{"name": "shape", "arg": {"as_ints": [3]}},
      {"name": "mean", "arg": {"as_float": 0.0}}, {"name": "std", "arg": {"as_float": -1.0}},
      {"name": "dtype", "arg": {"as_scalar_type": 7}},
      {"name": "device", "arg": {"as_device": {"type": "cpu", "index": null}}},
      {"name": "requires_grad", "arg": {"as_bool": false}}])";
  ProxyResult r = run_proxy("prims::normal", inputs, {3}, {}, 1);
  EXPECT_EQ(r.rc, AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("prims::normal (extern node 0): normal expects std >= 0.0"),
            std::string::npos)
      << aotrt_last_error();
}

}  // namespace
}  // namespace aotrt::test
