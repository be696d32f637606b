// Token sampling (ops/sampling.h, Note [Token sampling]) on every built backend: greedy
// against torch.argmax's rules, the kept sets against Hugging Face's own warpers
// (reference_sampling.inc, from gen_sampling_reference.py) and this file's reading of their
// rules, every drawn token against Note [Token sampling] computed here, frequencies by a
// chi-square test, reproducibility, the step counter, extra outputs and refusals.
#include <map>
#include <set>

#include "ops/sampling_testing.h"

namespace aotrt::test {
namespace {
using namespace sampling;

struct SamplingCase {
  const char* name;
  int32_t dtype;
  float temperature;
  int64_t top_k;
  float top_p;
  std::vector<float> logits;
  std::vector<int64_t> kept;
  std::vector<double> probs;
};
#include "reference_sampling.inc"

class Sampling : public ::testing::TestWithParam<Backend> {
 protected:
  Device device() const { return GetParam().device(); }
};

// Draws `calls` times for rows of the same logits (row r with seed base_seed + r) and counts
// the tokens; every token must be one of `allowed`.
std::map<int64_t, int64_t> draw_counts(Device device, const std::vector<float>& row,
                                       ScalarType dtype, SamplingParams p, int64_t rows,
                                       int calls, const std::set<int64_t>& allowed) {
  const int64_t vocab = static_cast<int64_t>(row.size());
  std::vector<float> values;
  for (int64_t r = 0; r < rows; ++r) values.insert(values.end(), row.begin(), row.end());
  std::vector<SamplingParams> ps;
  for (int64_t r = 0; r < rows; ++r) {
    ps.push_back(p);
    ps.back().seed = p.seed + static_cast<uint64_t>(r);
  }
  Call call(device, rows, vocab, dtype, values, ps);
  std::map<int64_t, int64_t> counts;
  for (int c = 0; c < calls; ++c) {
    for (const int64_t t : call.sample()) {
      EXPECT_TRUE(allowed.count(t)) << "token " << t << " is not in the kept set";
      ++counts[t];
    }
  }
  return counts;
}

TEST_P(Sampling, GreedyIsTorchArgmax) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const int64_t vocab : {int64_t{1}, int64_t{7}, int64_t{4097}, int64_t{50000}}) {
    for (const ScalarType dtype : {ScalarType::Float32, ScalarType::BFloat16, ScalarType::Float16}) {
      const int64_t rows = 8;
      std::vector<float> v = normal_logits(rows * vocab, 3.f, static_cast<uint64_t>(vocab));
      auto at = [&](int64_t r, int64_t i) -> float& { return v[r * vocab + std::min(i, vocab - 1)]; };
      // Row 1: the max twice, the lowest index wins; row 2: all equal; row 3: NaN twice;
      // row 4: -0.0 before +0.0 and nothing larger; row 5: every entry -inf; row 6: +inf.
      at(1, vocab / 3) = 100.f;
      at(1, vocab / 2) = 100.f;
      for (int64_t i = 0; i < vocab; ++i) at(2, i) = 1.5f;
      at(3, vocab / 2) = nan;
      at(3, vocab - 1) = nan;
      for (int64_t i = 0; i < vocab; ++i) at(4, i) = -1.f - static_cast<float>(i % 5);
      at(4, vocab / 4) = -0.f;
      at(4, vocab / 2) = 0.f;
      for (int64_t i = 0; i < vocab; ++i) at(5, i) = -inf;
      at(6, vocab - 1) = inf;
      std::vector<SamplingParams> ps(static_cast<size_t>(rows), params(0.f, 0, 1.f, 1));
      ps[7].temperature = -2.f;  // <= 0 is greedy too
      ps[2].top_k = 3;           // filters are ignored by greedy rows
      ps[2].top_p = 0.5f;
      for (const bool transposed : {false, true}) {
        Call call(device(), rows, vocab, dtype, v, ps, 0, transposed);
        const std::vector<int64_t> got = call.sample();
        for (int64_t r = 0; r < rows; ++r) {
          EXPECT_EQ(got[r], ref_argmax(call.row(r), vocab))
              << "row " << r << ", V " << vocab << ", " << dtype_name(dtype)
              << (transposed ? ", transposed" : "");
        }
      }
    }
  }
}

// The HF fixture's kept sets: this file's reading of HF's rules gives them exactly, and the
// sampler draws only from them and all of them.
TEST_P(Sampling, KeepsHuggingFacesSet) {
  for (const SamplingCase& c : kHfCases) {
    SCOPED_TRACE(c.name);
    const int64_t vocab = static_cast<int64_t>(c.logits.size());
    const Kept ref = hf_kept(tempered(c.logits.data(), vocab, c.temperature), c.top_k, c.top_p);
    ASSERT_EQ(ref.tokens, c.kept);
    ASSERT_FALSE(ref.near);
    for (size_t j = 0; j < ref.probs.size(); ++j) {
      EXPECT_NEAR(ref.probs[j], c.probs[j], 1e-6 + 1e-5 * c.probs[j]) << "token " << c.kept[j];
    }
    const ScalarType dtype = static_cast<ScalarType>(c.dtype);
    const std::set<int64_t> allowed(c.kept.begin(), c.kept.end());
    const int64_t rows = 64;
    const int calls = 40;
    const auto counts = draw_counts(device(), c.logits, dtype,
                                    params(c.temperature, c.top_k, c.top_p, 1000), rows, calls,
                                    allowed);
    for (size_t j = 0; j < c.kept.size(); ++j) {
      // An expected count of 20 is missed with probability e^-20.
      if (c.probs[j] * rows * calls >= 20) {
        EXPECT_GT(counts.count(c.kept[j]), 0u) << "kept token " << c.kept[j] << " never drawn";
      }
    }
  }
}

// Every token equals the one Note [Token sampling] gives, computed here (except on a knife
// edge, where a device's expf may rightly tip it; none is expected on the CPU).
TEST_P(Sampling, TokensFollowTheNote) {
  struct Shape {
    int64_t rows, vocab;
    ScalarType dtype;
    bool transposed;
  };
  const Shape shapes[] = {{4, 50, ScalarType::Float32, false},
                          {3, 4097, ScalarType::Float32, true},
                          {2, 32000, ScalarType::BFloat16, false},
                          {2, 50000, ScalarType::Float16, false}};
  const SamplingParams configs[] = {params(1.f, 0, 1.f, 7),     params(0.7f, 50, 1.f, 8),
                                    params(0.9f, 0, 0.9f, 9),   params(1.1f, 50, 0.9f, 10),
                                    params(0.8f, 1000, 0.6f, 11), params(2.f, 3, 0.5f, 12)};
  int64_t compared = 0, edges = 0;
  for (const Shape& sh : shapes) {
    const std::vector<float> v = normal_logits(sh.rows * sh.vocab, 2.5f, sh.vocab * 31);
    for (const SamplingParams& base : configs) {
      std::vector<SamplingParams> ps;
      for (int64_t r = 0; r < sh.rows; ++r) {
        ps.push_back(base);
        ps.back().seed = base.seed * 1000 + r;
      }
      Call call(device(), sh.rows, sh.vocab, sh.dtype, v, ps, 5, sh.transposed);
      for (uint64_t step = 5; step < 13; ++step) {
        const std::vector<int64_t> got = call.sample();
        for (int64_t r = 0; r < sh.rows; ++r) {
          const Expected e = expected_token(call.row(r), sh.vocab, ps[r], step, r);
          if (e.near) {
            ++edges;
            continue;
          }
          ++compared;
          EXPECT_EQ(got[r], e.token) << "V " << sh.vocab << " row " << r << " step " << step
                                     << " T " << base.temperature << " k " << base.top_k
                                     << " p " << base.top_p;
        }
      }
    }
  }
  EXPECT_GT(compared, 50 * (edges + 1)) << edges << " knife edges, " << compared << " compared";
}

// Frequencies over many draws match the filtered softmax (Pearson's chi-square below its
// 1e-6 quantile), and the same counts are far from the unfiltered softmax (the test can fail).
TEST_P(Sampling, FrequenciesMatchTheFilteredSoftmax) {
  const std::vector<float> logits = normal_logits(20, 1.f, 77);
  struct Config {
    float temperature;
    int64_t top_k;
    float top_p;
  };
  for (const Config cfg : {Config{0.8f, 12, 0.9f}, Config{1.3f, 0, 1.f}, Config{1.f, 6, 1.f}}) {
    SCOPED_TRACE(::testing::Message() << "T " << cfg.temperature << " k " << cfg.top_k << " p "
                                      << cfg.top_p);
    const Kept ref = hf_kept(tempered(logits.data(), 20, cfg.temperature), cfg.top_k, cfg.top_p);
    const std::set<int64_t> allowed(ref.tokens.begin(), ref.tokens.end());
    const auto counts = draw_counts(device(), logits, ScalarType::Float32,
                                    params(cfg.temperature, cfg.top_k, cfg.top_p, 31), 64, 250,
                                    allowed);
    std::vector<int64_t> observed;
    for (const int64_t t : ref.tokens) observed.push_back(counts.count(t) ? counts.at(t) : 0);
    const double x2 = chi_square(observed, ref.probs);
    const double limit = chi_square_limit(static_cast<int64_t>(ref.tokens.size()) - 1);
    EXPECT_LT(x2, limit) << "chi-square over " << ref.tokens.size() << " tokens";
    if (allowed.size() < 20) {
      // Against the plain softmax at T = 1 (every token): filtered tokens never drawn.
      const Kept plain = hf_kept(logits, 0, 1.f);
      std::vector<int64_t> all;
      for (const int64_t t : plain.tokens) all.push_back(counts.count(t) ? counts.at(t) : 0);
      EXPECT_GT(chi_square(all, plain.probs), chi_square_limit(19));
    }
  }
}

TEST_P(Sampling, ReproducibleForASeedAndStep) {
  const int64_t rows = 16, vocab = 3000;
  const std::vector<float> v = normal_logits(rows * vocab, 1.f, 5);
  std::vector<SamplingParams> ps;
  for (int64_t r = 0; r < rows; ++r) ps.push_back(params(1.2f, 0, 0.95f, 42));  // one seed
  Call a(device(), rows, vocab, ScalarType::Float32, v, ps, 100);
  Call b(device(), rows, vocab, ScalarType::Float32, v, ps, 100);
  std::vector<std::vector<int64_t>> first;
  for (int s = 0; s < 6; ++s) {
    first.push_back(a.sample());
    EXPECT_EQ(b.sample(), first.back()) << "step " << 100 + s;
  }
  // The step advanced by one a call, every row.
  EXPECT_EQ(read_back<uint64_t>(*a.step), std::vector<uint64_t>(rows, 106));
  // Rows differ (the row is part of the counter), steps differ, seeds differ.
  EXPECT_NE(std::set<int64_t>(first[0].begin(), first[0].end()).size(), 1u);
  EXPECT_NE(first[0], first[1]);
  for (SamplingParams& p : ps) p.seed = 43;
  Call c(device(), rows, vocab, ScalarType::Float32, v, ps, 100);
  EXPECT_NE(c.sample(), first[0]);
  // Greedy rows count their tokens too.
  for (SamplingParams& p : ps) p.temperature = 0.f;
  Call g(device(), rows, vocab, ScalarType::Float32, v, ps, 7);
  g.sample();
  g.sample();
  EXPECT_EQ(read_back<uint64_t>(*g.step), std::vector<uint64_t>(rows, 9));
}

// tokens [B], the next input_ids [B, 1] and a column of a ring buffer [B, L], with a strided
// int64 step: one token, three places.
TEST_P(Sampling, WritesEveryOutputAndAStridedStep) {
  const int64_t rows = 5, vocab = 700, ring = 6;
  const std::vector<float> v = normal_logits(rows * vocab, 2.f, 9);
  std::vector<SamplingParams> ps;
  for (int64_t r = 0; r < rows; ++r) ps.push_back(params(r == 0 ? 0.f : 0.9f, 40, 0.9f, r));
  Call call(device(), rows, vocab, ScalarType::Float32, v, ps, 3);
  TensorPtr input_ids = make_tokens(device(), rows);
  input_ids->set_sizes_and_strides(Dims{rows, 1}, Dims{1, 1}, "test");
  const std::vector<int64_t> minus(rows * ring, -1);
  TensorPtr ring_buf = raw_tensor(device(), {rows, ring}, ScalarType::Int64, minus.data());
  TensorPtr column = make_tensor(ring_buf->storage(), Dims{rows}, Dims{ring}, 4,
                                 ScalarType::Int64, "test");
  const std::vector<int64_t> steps(rows * 2, 3);  // every other element is a row's step
  TensorPtr step_buf = raw_tensor(device(), {rows * 2}, ScalarType::Int64, steps.data());
  TensorPtr step = make_tensor(step_buf->storage(), Dims{rows}, Dims{2}, 0, ScalarType::Int64,
                               "test");
  TensorImpl* outs[] = {call.tokens.get(), input_ids.get(), column.get()};
  ops::sample_tokens(*call.logits, *call.params, *step, outs);
  const std::vector<int64_t> tokens = read_back<int64_t>(*call.tokens);
  EXPECT_EQ(read_back<int64_t>(*input_ids), tokens);
  EXPECT_EQ(read_back<int64_t>(*column), tokens);
  const std::vector<int64_t> ring_after = read_back<int64_t>(*ring_buf);
  const std::vector<int64_t> step_after = read_back<int64_t>(*step_buf);
  for (int64_t r = 0; r < rows; ++r) {
    const Expected e = expected_token(call.row(r), vocab, ps[r], 3, r);
    if (!e.near) EXPECT_EQ(tokens[r], e.token) << "row " << r;
    for (int64_t j = 0; j < ring; ++j) {
      if (j != 4) EXPECT_EQ(ring_after[r * ring + j], -1) << "ring slot " << j << " was written";
    }
    EXPECT_EQ(step_after[2 * r], 4);
    EXPECT_EQ(step_after[2 * r + 1], 3) << "a hole of the strided step was written";
  }
}

// Ties at the top-p boundary: the lowest indices of the run stay (a stable descending sort),
// as many as HF keeps.
TEST_P(Sampling, TopPTiesKeepTheLowestIndices) {
  for (const int64_t vocab : {int64_t{4}, int64_t{100}, int64_t{9000}}) {
    const std::vector<float> flat(vocab, 0.25f);
    std::set<int64_t> allowed;
    for (int64_t i = 0; i < vocab / 2; ++i) allowed.insert(i);
    const auto counts = draw_counts(device(), flat, ScalarType::Float32,
                                    params(1.f, 0, 0.5f, 3), 64, vocab < 1000 ? 20 : 4, allowed);
    if (vocab <= 100) EXPECT_EQ(counts.size(), allowed.size()) << "V " << vocab;
  }
  // A run cut in the middle after a larger token: [5, 2, 2, 2, 2, -9], T 1, p such that the
  // top token and two of the four 2's stay.
  const std::vector<float> x{5.f, 2.f, 2.f, 2.f, 2.f, -9.f};
  std::vector<double> w;
  for (const float v : x) w.push_back(std::exp(static_cast<double>(v) - 5.0));
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  const float p = static_cast<float>((w[0] + 1.5 * w[1]) / total);
  const auto counts = draw_counts(device(), x, ScalarType::Float32, params(1.f, 0, p, 4), 64, 10,
                                  {0, 1, 2});
  EXPECT_EQ(counts.size(), 3u);
}

// NaN is never drawn; +inf entries share the draws; a row of -inf and NaN takes argmax.
TEST_P(Sampling, NanAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> with_nan{1.f, nan, 1.f, nan, 0.5f};
  auto c1 = draw_counts(device(), with_nan, ScalarType::Float32, params(1.f, 0, 1.f, 5), 64, 5,
                        {0, 2, 4});
  EXPECT_EQ(c1.size(), 3u);
  const std::vector<float> with_inf{1.f, inf, 1e30f, -inf, inf};
  auto c2 = draw_counts(device(), with_inf, ScalarType::Float32, params(1.f, 2, 0.9f, 6), 64, 5,
                        {1, 4});
  EXPECT_EQ(c2.size(), 2u);
  const std::vector<float> nothing{-inf, -inf, nan, -inf};
  draw_counts(device(), nothing, ScalarType::Float32, params(1.f, 0, 1.f, 7), 8, 2, {2});
}

// A vocabulary as Gemma 3's: exact tokens at V = 262144.
TEST_P(Sampling, LargestVocabulary) {
  const int64_t rows = 2, vocab = 262144;
  const std::vector<float> v = normal_logits(rows * vocab, 3.f, 262144);
  for (const SamplingParams base :
       {params(1.f, 0, 1.f, 1), params(0.8f, 50, 0.9f, 2), params(1.f, 0, 0.9f, 3)}) {
    Call call(device(), rows, vocab, ScalarType::BFloat16, v, {base, base}, 0);
    for (uint64_t step = 0; step < 3; ++step) {
      const std::vector<int64_t> got = call.sample();
      for (int64_t r = 0; r < rows; ++r) {
        const Expected e = expected_token(call.row(r), vocab, base, step, r);
        if (!e.near) EXPECT_EQ(got[r], e.token) << "row " << r << " step " << step;
      }
    }
  }
}

// Parameters out of range: refused on the CPU (host memory), served by Note [Token
// sampling]'s rules on CUDA (device memory, no read back).
TEST_P(Sampling, ParametersOutOfRange) {
  const int64_t vocab = 40;
  const std::vector<float> x = normal_logits(vocab, 2.f, 11);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Bad {
    SamplingParams p, as;  // as: what CUDA serves it as
    const char* says;
  };
  const Bad bad[] = {{params(1.f, -3, 1.f, 1), params(1.f, 0, 1.f, 1), "top_k must be >= 0"},
                     {params(1.f, 0, 0.f, 2), params(1.f, 0, 1e-30f, 2), "top_p must be > 0"},
                     {params(1.f, 5, -1.f, 3), params(1.f, 5, 1e-30f, 3), "top_p must be > 0"},
                     {params(1.f, 0, nan, 4), params(1.f, 0, 1.f, 4), "top_p must be > 0"},
                     {params(nan, 0, 1.f, 5), params(0.f, 0, 1.f, 5), "temperature is NaN"}};
  for (const Bad& b : bad) {
    Call call(device(), 1, vocab, ScalarType::Float32, x, {b.p}, 0);
    if (GetParam().is_cpu()) {
      try {
        call.sample();
        ADD_FAILURE() << "accepted " << b.says;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
        EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << e.what();
      }
      continue;
    }
    for (uint64_t step = 0; step < 20; ++step) {
      const std::vector<int64_t> got = call.sample();
      const Expected e = expected_token(call.row(0), vocab, b.as, step, 0);
      if (!e.near) EXPECT_EQ(got[0], e.token) << b.says << ", step " << step;
    }
  }
}

TEST_P(Sampling, RefusesBadArguments) {
  const Device d = device();
  const std::vector<float> v = normal_logits(3 * 10, 1.f, 1);
  Call call(d, 3, 10, ScalarType::Float32, v, std::vector<SamplingParams>(3, params(1, 0, 1, 0)));
  auto expect_refused = [&](auto&& fn, const std::string& says) {
    try {
      fn();
      ADD_FAILURE() << "accepted: " << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find("sample_tokens"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  TensorImpl* outs[] = {call.tokens.get()};
  TensorPtr f64 = device_tensor(d, {3, 10}, {10, 1}, ScalarType::Float64, v);
  expect_refused([&] { ops::sample_tokens(*f64, *call.params, *call.step, outs); },
                 "must be float32, bfloat16 or float16");
  TensorPtr i64 = device_tensor(d, {3, 10}, {10, 1}, ScalarType::Int64, v);
  expect_refused([&] { ops::sample_tokens(*i64, *call.params, *call.step, outs); },
                 "must be float32, bfloat16 or float16");
  TensorPtr empty_vocab = device_tensor(d, {3, 0}, {1, 1}, ScalarType::Float32, {});
  expect_refused([&] { ops::sample_tokens(*empty_vocab, *call.params, *call.step, outs); },
                 "V = 0");
  TensorPtr flat = device_tensor(d, {30}, {1}, ScalarType::Float32, v);
  expect_refused([&] { ops::sample_tokens(*flat, *call.params, *call.step, outs); },
                 "must be [B, V]");
  TensorPtr two_params = make_params(d, std::vector<SamplingParams>(2));
  expect_refused([&] { ops::sample_tokens(*call.logits, *two_params, *call.step, outs); },
                 "params must be B = 3 SamplingParams");
  TensorPtr four_steps = make_steps(d, std::vector<uint64_t>(4, 0));
  expect_refused([&] { ops::sample_tokens(*call.logits, *call.params, *four_steps, outs); },
                 "step has 4 elements");
  TensorPtr f32_step = device_tensor(d, {3}, {1}, ScalarType::Float32, {0, 0, 0});
  expect_refused([&] { ops::sample_tokens(*call.logits, *call.params, *f32_step, outs); },
                 "step must be uint64");
  TensorPtr two_tokens = make_tokens(d, 2);
  TensorImpl* short_outs[] = {two_tokens.get()};
  expect_refused([&] { ops::sample_tokens(*call.logits, *call.params, *call.step, short_outs); },
                 "tokens has 2 elements");
  TensorPtr i32_tokens = device_tensor(d, {3}, {1}, ScalarType::Int32, {0, 0, 0});
  TensorImpl* i32_outs[] = {call.tokens.get(), i32_tokens.get()};
  expect_refused([&] { ops::sample_tokens(*call.logits, *call.params, *call.step, i32_outs); },
                 "output 1 must be int64");
  TensorPtr square = make_tokens(d, 9);
  square->set_sizes_and_strides(Dims{3, 3}, Dims{3, 1}, "test");
  TensorImpl* square_outs[] = {square.get()};
  expect_refused([&] { ops::sample_tokens(*call.logits, *call.params, *call.step, square_outs); },
                 "tokens has 9 elements");
  expect_refused([&] { ops::sample_tokens(*call.logits, *call.params, *call.step, {}); },
                 "between 1 and 8 outputs");
  if (d.is_cuda()) {
    TensorPtr host_params =
        make_params(cpu_device(), std::vector<SamplingParams>(3, params(1, 0, 1, 0)));
    expect_refused([&] { ops::sample_tokens(*call.logits, *host_params, *call.step, outs); },
                   "params is on cpu");
  }
  // Nothing above wrote a token or moved a step.
  EXPECT_EQ(read_back<int64_t>(*call.tokens), std::vector<int64_t>(3, -1));
  EXPECT_EQ(read_back<uint64_t>(*call.step), std::vector<uint64_t>(3, 0));
}

INSTANTIATE_TEST_SUITE_P(Backends, Sampling, ::testing::ValuesIn(built_backends()),
                         backend_name);

}  // namespace
}  // namespace aotrt::test
