// CPU kernel of token sampling (ops/sampling.h): Note [Token sampling]
// read literally, one row at a time (rows in parallel): the k-th largest
// key by selection, the top-p order by a stable sort of the kept tokens,
// then the inverse CDF in index order.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/dtype.h"
#include "ops/dispatch.h"
#include "ops/sampling.h"
#include "ops/sampling_math.h"

namespace aotrt::cpu {
namespace {
using namespace ops::sampling_math;
using ops::SampleArgs;
using ops::SamplingKernels;

float load_logit(const SampleArgs& a, int64_t row, int64_t i) {
  const int64_t at = row * a.row_stride + i * a.col_stride;
  switch (a.dtype) {
    case ScalarType::BFloat16:
      return bfloat16_to_float(static_cast<const uint16_t*>(a.logits)[at]);
    case ScalarType::Float16: return half_to_float(static_cast<const uint16_t*>(a.logits)[at]);
    default: return static_cast<const float*>(a.logits)[at];
  }
}

int64_t sample_row(const SampleArgs& a, int64_t row, uint64_t step) {
  const int64_t n = a.vocab;
  const RowRule rule = row_rule(a.params[row], n);
  std::vector<float> x(static_cast<size_t>(n));
  uint64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = load_logit(a, row, i);
    best = std::max(best, argmax_pack(x[i], i));
  }
  const int64_t greedy = argmax_index(best);
  if (rule.greedy) return greedy;

  std::vector<uint32_t> keys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    x[i] = x[i] / rule.temperature;  // x now holds s
    keys[i] = sample_key(x[i]);
  }
  const uint32_t max_key = *std::max_element(keys.begin(), keys.end());
  if (!drawable(max_key)) return greedy;
  const float max_s = key_float(max_key);

  uint32_t kth = 0;  // top-k keeps keys >= kth
  if (rule.top_k) {
    std::vector<uint32_t> sorted = keys;
    std::nth_element(sorted.begin(), sorted.begin() + (rule.k - 1), sorted.end(),
                     std::greater<>());
    kth = sorted[static_cast<size_t>(rule.k - 1)];
  }
  const int bits = fixed_bits(n);
  std::vector<uint64_t> w(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (keys[i] >= kth) w[i] = fixed_weight(x[i], max_s, bits);
  }
  if (rule.top_p) {
    std::vector<int64_t> order;
    uint64_t total = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (keys[i] >= kth) {
        order.push_back(i);
        total += w[i];
      }
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t l, int64_t r) { return keys[l] > keys[r]; });
    const double limit = top_p_limit(rule.p, total);
    uint64_t before = 0;
    for (const int64_t i : order) {
      const uint64_t wi = w[i];
      if (!(static_cast<double>(before) < limit)) w[i] = 0;
      before += wi;
    }
  }
  const uint64_t kept = std::accumulate(w.begin(), w.end(), uint64_t{0});
  if (kept == 0) return greedy;
  const uint64_t target = draw_target(draw_word(a.params[row].seed, step, row), kept);
  uint64_t running = 0;
  for (int64_t i = 0; i < n; ++i) {
    running += w[i];
    if (running > target) return i;
  }
  return greedy;  // unreachable: target < kept
}

void sample(const SampleArgs& a, const char* fn) {
  (void)fn;
#pragma omp parallel for if (a.rows > 1 && a.rows * a.vocab > 65536)
  for (int64_t row = 0; row < a.rows; ++row) {
    uint64_t& step = a.step[row * a.step_stride];
    const int64_t token = sample_row(a, row, step);
    for (int o = 0; o < a.outputs; ++o) a.out[o][row * a.out_stride[o]] = token;
    step += 1;
  }
}

constexpr SamplingKernels kSampling{.sample = sample};
AOTRT_REGISTER_KERNELS(SamplingKernels, cpu, kSampling);

}  // namespace
}  // namespace aotrt::cpu
