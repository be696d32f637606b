#include "generate/sampler.h"

#include <cstring>

#include "core/handles.h"
#include "ops/sampling.h"

namespace aotrt::generate {

namespace {

ops::SamplingParams to_params(const SamplingConfig& c) {
  ops::SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.seed = c.seed;
  return p;
}

}  // namespace

// A negative temperature is refused here, as Hugging Face's and vLLM's sampling parameters
// refuse it, although the kernel (Note [Token sampling]) would take it as greedy: a caller who
// writes one has made a mistake, not asked for greedy (0 does that).
void check_sampling(const SamplingConfig& config, const char* fn) {
  AOTRT_CHECK(!(config.temperature < 0.f), kInvalidArgument, fn,
              ": temperature must be >= 0 (0: greedy), got ", config.temperature);
  const ops::SamplingParams p = to_params(config);
  ops::check_sampling_params({&p, 1}, fn);
}

Sampler::Sampler(Device device)
    : device_(device),
      params_(Tensor::empty({static_cast<int64_t>(sizeof(ops::SamplingParams))}, ScalarType::UInt8,
                            device)),
      step_(Tensor::empty({1}, ScalarType::UInt64, device)) {}

void Sampler::configure(const SamplingConfig& config) {
  check_sampling(config, "aotrt::Generator::generate");
  const ops::SamplingParams p = to_params(config);
  uint8_t bytes[sizeof p];
  std::memcpy(bytes, &p, sizeof p);
  uint64_t zero = 0;
  // From the host: staged by the copy, so the locals may go when it returns.
  params_.copy_(Tensor::from_blob(bytes, {static_cast<int64_t>(sizeof p)}, {1}, ScalarType::UInt8));
  step_.copy_(Tensor::from_blob(&zero, {1}, {1}, ScalarType::UInt64));
}

void Sampler::sample(const Tensor& logits, const Tensor& ids) {
  const char* fn = "aotrt::Generator::generate (sampling)";
  const TensorImpl& l = handle_get_defined(logits.handle(), fn);
  const TensorImpl& p = handle_get_defined(params_.handle(), fn);
  const TensorImpl& s = handle_get_defined(step_.handle(), fn);
  TensorImpl* out[] = {const_cast<TensorImpl*>(&handle_get_defined(ids.handle(), fn))};
  ops::sample_tokens(l, p, s, out, fn);
}

uint64_t Sampler::memory_bytes() const { return sizeof(ops::SamplingParams) + sizeof(uint64_t); }

}  // namespace aotrt::generate
