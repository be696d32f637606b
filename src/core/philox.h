// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011), the counter-based generator of aotrt's random
// ops on every device: one 128-bit block per (key, counter), no state to
// carry between elements, so CPU and CUDA kernels compute the same stream.
// See Note [Random streams] in ops/random.h.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace aotrt {

struct PhiloxBlock {
  uint32_t w[4];
};

// The block for a 128-bit counter (c0 lowest) under a 64-bit key (k0 low).
AOTRT_HOST_DEVICE inline PhiloxBlock philox4x32_10(PhiloxBlock counter, uint32_t k0,
                                                   uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = counter.w[0], c1 = counter.w[1], c2 = counter.w[2], c3 = counter.w[3];
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

// aotrt's stream: counter (lo, hi, 0, 0) under key `seed`.
AOTRT_HOST_DEVICE inline PhiloxBlock philox4x32_10(uint64_t seed, uint64_t counter) {
  const PhiloxBlock c{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0}};
  return philox4x32_10(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform doubles in [0, 1) from 53 bits of two words, and in (0, 1].
AOTRT_HOST_DEVICE inline double philox_unit(uint32_t lo, uint32_t hi) {
  const uint64_t bits = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);  // 2^-53
}
// A uniform float in [0, 1) from 24 bits (ATen's uniform_real_distribution
// for float takes 24 bits too).
AOTRT_HOST_DEVICE inline float philox_unit_float(uint32_t w) {
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f);  // 2^-24
}

}  // namespace aotrt
