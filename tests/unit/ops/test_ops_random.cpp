// The random family's ops with no C shim (aten::multinomial, prims::normal) through the
// proxy executor, and the functional uniform and normal_functional C shims, on every
// built backend (Note [Random streams]; Note [Multinomial on CUDA]). Values are aotrt's Philox draws, not
// torch's, so the rows check the distribution: category frequencies within 6 standard
// errors of the probabilities (a false failure about once in 10^8 runs), zero weights never
// drawn, samples of a row without replacement distinct, the same seed giving the same
// draws, and the refusals ATen makes, with its messages.
#include <algorithm>
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

ProxyResult multinomial(const Backend& b, const Values& p, int64_t k, bool replacement) {
  Tensor t = make_tensor(b, p);
  return run_proxy("aten::multinomial", multinomial_inputs(k, replacement), {k}, {t.get()}, 1,
                   false, proxy_device(b));
}
ProxyResult multinomial(const Values& p, int64_t k, bool replacement) {
  return multinomial(built_backends()[0], p, k, replacement);
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

void check_multinomial_with_replacement_follows_the_weights(const Backend& b) {
  // Unnormalised float64 weights in a strided view, one of them zero.
  const std::vector<double> w = {2, 0, 5, 1, 2};
  ProxyResult r = multinomial(b, Values{kF64, {5}, {3}, 1, w}, 200000, true);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(r.outputs[0].get());
  EXPECT_EQ(m.dtype, kI64);
  EXPECT_EQ(m.sizes, (Dims{200000}));
  EXPECT_EQ(m.strides, (Dims{1}));
  expect_frequencies(values_of(r.outputs[0].get()), w, "with replacement");
}

TEST(OpsRandomProxy, MultinomialWithReplacementFollowsTheWeights) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    check_multinomial_with_replacement_follows_the_weights(b);
  }
}

void check_multinomial_without_replacement_draws_distinct_categories_per_row(const Backend& b) {
  // 20000 rows of float32 weights (a transposed view: rows are strided), 2 of 6 zero.
  const int64_t rows = 20000, n = 6, k = 4;
  const std::vector<double> w = {3, 0, 1, 4, 0, 2};
  Values v{kF32, {rows, n}, {1, rows}, 0, {}};
  for (int64_t r = 0; r < rows; ++r) v.values.insert(v.values.end(), w.begin(), w.end());
  ProxyResult r = multinomial(b, v, k, false);
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

TEST(OpsRandomProxy, MultinomialWithoutReplacementDrawsDistinctCategoriesPerRow) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    check_multinomial_without_replacement_draws_distinct_categories_per_row(b);
  }
}

void check_multinomial_beyond_the_positive_weights_takes_zero_weights_last(const Backend& b) {
  // ATen allows k above the positive weights without replacement: they come first.
  ProxyResult r = multinomial(b, Values{kF32, {4}, {1}, 0, {0, 1, 0, 3}}, 4, false);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const std::vector<double> got = values_of(r.outputs[0].get());
  EXPECT_EQ(std::set<double>(got.begin(), got.begin() + 2), (std::set<double>{1, 3}));
  EXPECT_EQ(std::set<double>(got.begin() + 2, got.end()), (std::set<double>{0, 2}));
}

TEST(OpsRandomProxy, MultinomialBeyondThePositiveWeightsTakesZeroWeightsLast) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    check_multinomial_beyond_the_positive_weights_takes_zero_weights_last(b);
  }
}

void check_multinomial_is_deterministic_under_a_manual_seed(const Backend& b) {
  const Values p{kF32, {3, 4}, {4, 1}, 0, {1, 2, 3, 4, 4, 3, 2, 1, 1, 1, 1, 1}};
  manual_seed(1234);
  ProxyResult first = multinomial(b, p, 8, true);
  ProxyResult second = multinomial(b, p, 8, true);
  manual_seed(1234);
  ProxyResult again = multinomial(b, p, 8, true);
  ASSERT_EQ(first.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(values_of(first.outputs[0].get()), values_of(again.outputs[0].get()));
  EXPECT_NE(values_of(first.outputs[0].get()), values_of(second.outputs[0].get()));
}

TEST(OpsRandomProxy, MultinomialIsDeterministicUnderAManualSeed) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    check_multinomial_is_deterministic_under_a_manual_seed(b);
  }
}

void check_multinomial_of_no_rows_is_empty(const Backend& b) {
  ProxyResult r = multinomial(b, Values{kF32, {0, 3}, {3, 1}, 0, {}}, 2, true);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(meta(r.outputs[0].get()).sizes, (Dims{0, 2}));
}

TEST(OpsRandomProxy, MultinomialOfNoRowsIsEmpty) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    check_multinomial_of_no_rows_is_empty(b);
  }
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

// Sample mean and variance, and the range, of v.
struct Moments {
  double mean = 0, var = 0, lo = kInf, hi = -kInf;
};
Moments moments_of(const std::vector<double>& v) {
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.lo = std::min(m.lo, x);
    m.hi = std::max(m.hi, x);
  }
  const double n = static_cast<double>(v.size());
  m.mean /= n;
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= n;
  return m;
}

// The moments of n draws of a normal(mean, std) within 6 standard errors.
void expect_normal(const std::vector<double>& v, double mean, double std, const std::string& what) {
  const Moments m = moments_of(v);
  const double n = static_cast<double>(v.size()), var = std * std;
  EXPECT_LE(std::abs(m.mean - mean), 6 * std::sqrt(var / n)) << what << ": mean " << m.mean;
  EXPECT_LE(std::abs(m.var - var), 6 * std::sqrt(2 * var * var / n)) << what << ": var " << m.var;
}

void check_prims_normal_draws_the_shape_dtype_and_moments(const Backend& b) {
  // What torch 2.13 writes for torch.normal(mean, std) (kind 2: keyword arguments).
  const std::string device = b.is_cpu() ? R"({"type": "cpu", "index": null})"
                                        : R"({"type": "cuda", "index": )" +
                                              std::to_string(b.device_index) + "}";
  const std::string inputs = R"([{"name": "shape", "arg": {"as_ints": [400, 500]}},
      {"name": "mean", "arg": {"as_float": 1.5}}, {"name": "std", "arg": {"as_float": 2.0}},
      {"name": "dtype", "arg": {"as_scalar_type": 8}},
      {"name": "device", "arg": {"as_device": )" + device + R"(}},
      {"name": "requires_grad", "arg": {"as_bool": false}}])";
  ProxyResult r = run_proxy("prims::normal", inputs, {400, 500}, {}, 1, false, proxy_device(b));
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(r.outputs[0].get());
  EXPECT_EQ(m.dtype, kF64);  // serialised dtype 8 (torch.export's numbering): float64
  EXPECT_EQ(m.sizes, (Dims{400, 500}));
  EXPECT_EQ(m.strides, (Dims{500, 1}));
  int32_t type = -1;
  ASSERT_EQ(aoti_torch_get_device_type(r.outputs[0].get(), &type), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(type, b.device_type) << "drawn on the device the node names";
  expect_normal(values_of(r.outputs[0].get()), 1.5, 2.0, "prims::normal");
}

TEST(OpsRandomProxy, PrimsNormalDrawsTheShapeDtypeAndMoments) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    check_prims_normal_draws_the_shape_dtype_and_moments(b);
  }
}

using Functional = AOTITorchError (*)(AtenTensorHandle, double, double, AtenGeneratorHandle*,
                                      AtenTensorHandle*);

// uniform(self, from, to) and normal_functional(self, mean, std): a new tensor of self's
// sizes, strides (preserve_format: a transposed self stays transposed) and dtype, drawn
// from the distribution: uniform values in [from, to] (float16 may round up to `to`),
// mean and variance within 6 standard errors (a false failure about once in 10^8 runs).
void check_functional_draws(const Backend& b) {
  AOTRT_FIND_OP(uniform, Functional, b, "uniform");
  AOTRT_FIND_OP(normal, Functional, b, "normal_functional");
  const int64_t rows = 300, cols = 400;
  const double n = static_cast<double>(rows * cols);
  for (int32_t dtype : {kF32, kF64, kF16}) {
    SCOPED_TRACE(dtype);
    Tensor self = make_tensor(
        b, Values{dtype, {rows, cols}, {1, rows}, 0, std::vector<double>(rows * cols, 0.0)});
    Tensor u, g;
    ASSERT_EQ(uniform(self.get(), -2, 3, nullptr, u.out()), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    ASSERT_EQ(normal(self.get(), 1.5, 2, nullptr, g.out()), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    for (Tensor* t : {&u, &g}) {
      const Meta m = meta(t->get());
      EXPECT_EQ(m.dtype, dtype);
      EXPECT_EQ(m.sizes, (Dims{rows, cols}));
      EXPECT_EQ(m.strides, (Dims{1, rows}));
    }
    const std::vector<double> uv = values_of(u.get());
    const Moments um = moments_of(uv);
    EXPECT_GE(um.lo, -2);
    EXPECT_LE(um.hi, 3);
    EXPECT_LE(um.lo, -1.99);  // the whole range is drawn
    EXPECT_GE(um.hi, 2.99);
    // uniform on [a, b): variance (b - a)^2 / 12, fourth central moment (b - a)^4 / 80.
    const double var = 25.0 / 12, m4 = 625.0 / 80;
    EXPECT_LE(std::abs(um.mean - 0.5), 6 * std::sqrt(var / n)) << um.mean;
    EXPECT_LE(std::abs(um.var - var), 6 * std::sqrt((m4 - var * var) / n)) << um.var;
    expect_normal(values_of(g.get()), 1.5, 2.0, "normal_functional");
  }
}

TEST(OpsRandom, UniformAndNormalFunctionalDrawTheLayoutDtypeAndMoments) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    check_functional_draws(b);
  }
}

// rand_like's memory_format is c10's value (aoti_torch_memory_format_*): None and
// preserve_format (1) keep self's layout, contiguous_format (0) and channels_last (2) lay
// the draw out in that format, as eager's rand_like does; anything else is refused.
TEST(OpsRandom, RandLikeHonoursTheMemoryFormat) {
  using Like = AOTITorchError (*)(AtenTensorHandle, int32_t*, int32_t*, int32_t*, int32_t,
                                  int32_t*, int32_t*, AtenTensorHandle*);
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    AOTRT_FIND_OP(rand_like, Like, b, "rand_like");
    Tensor cl = empty(b, {2, 3, 4, 5}, {60, 1, 15, 3}, kF32);  // channels_last
    int32_t preserve = 1, contiguous = 0, channels_last = 2;
    const std::pair<int32_t*, Dims> cases[] = {
        {nullptr, {60, 1, 15, 3}},
        {&preserve, {60, 1, 15, 3}},
        {&contiguous, {60, 20, 5, 1}},
        {&channels_last, {60, 1, 15, 3}},
    };
    for (const auto& [format, strides] : cases) {
      SCOPED_TRACE(format == nullptr ? -1 : *format);
      Tensor out;
      ASSERT_EQ(rand_like(cl.get(), nullptr, nullptr, nullptr, 0, nullptr, format, out.out()),
                AOTI_TORCH_SUCCESS)
          << aotrt_last_error();
      EXPECT_EQ(meta(out.get()).strides, strides);
    }
    int32_t bogus = 7;
    Tensor out;
    expect_refused(rand_like(cl.get(), nullptr, nullptr, nullptr, 0, nullptr, &bogus, out.out()),
                   std::string(b.op_prefix) + "rand_like", "memory format 7");
  }
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
