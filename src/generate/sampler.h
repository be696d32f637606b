// A sequence's sampler: the parameters and the step counter that
// ops::sample_tokens (Note [Token sampling] in ops/sampling.h) reads on the
// model's device, and the call that draws one token into the next step's ids.
#pragma once

#include <cstdint>

#include "aotrt/generate.h"

namespace aotrt::generate {

// Refuses what the sampler cannot serve (a NaN or negative temperature,
// top_k < 0, top_p NaN or <= 0), naming `fn`.
void check_sampling(const SamplingConfig& config, const char* fn);

class Sampler {
 public:
  explicit Sampler(Device device);
  // The parameters of the next draws, and the step counter back to 0 (so that
  // a seed gives the same tokens in every generate call); queued on the
  // current stream.
  void configure(const SamplingConfig& config);
  // Draws one token from `logits` ([1, V]) into `ids` (int64, one element),
  // on the current stream; advances the step counter on the device.
  void sample(const Tensor& logits, const Tensor& ids);
  uint64_t memory_bytes() const;

 private:
  Device device_;
  Tensor params_;  // one ops::SamplingParams, as bytes
  Tensor step_;    // uint64 [1]
};

}  // namespace aotrt::generate
