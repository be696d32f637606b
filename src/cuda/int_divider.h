// Division by a run-time constant with a multiply-high, an add and a shift,
// for the index arithmetic of the copy kernels (a 64-bit `/` on the GPU is a
// long software routine). Host and device code; the host computes the magic.
//
// Note [Fast integer division]
// For a divisor d >= 1 in an N-bit unsigned type (N = 32 or 64) take
//   shift = ceil(log2(d)),  magic = floor(2^N * (2^shift - d) / d) + 1.
// Then for every n < 2^(N-1):  n / d == (mulhi(n, magic) + n) >> shift,
// where mulhi is the high half of the 2N-bit product. magic < 2^N, so
// mulhi(n, magic) < n and the sum cannot wrap for n < 2^(N-1). Callers keep
// indices below 2^31 (32-bit) or 2^63 (64-bit) - every index aotrt makes is
// an int64 that is >= 0. (Granlund and Montgomery, "Division by invariant
// integers using multiplication", 1994.)
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace aotrt::cuda {

template <typename T>
struct DivMod {
  T div, mod;
};

template <typename T>
struct IntDivider;

template <>
struct IntDivider<uint32_t> {
  IntDivider() = default;
  explicit IntDivider(uint32_t d) : divisor(d) {
    shift = 0;
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    const uint64_t m = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1;
    magic = static_cast<uint32_t>(m);
  }
  AOTRT_HOST_DEVICE uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(n, magic);
#else
    const uint32_t t = static_cast<uint32_t>((uint64_t{n} * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
  AOTRT_HOST_DEVICE DivMod<uint32_t> divmod(uint32_t n) const {
    const uint32_t q = div(n);
    return {q, n - q * divisor};
  }
  uint32_t divisor = 1;
  uint32_t magic = 1;
  uint32_t shift = 0;
};

template <>
struct IntDivider<uint64_t> {
  IntDivider() = default;
  explicit IntDivider(uint64_t d) : divisor(d) {
    shift = 0;
    while (shift < 64 && (static_cast<unsigned __int128>(1) << shift) < d) ++shift;
    const unsigned __int128 one = 1;
    const unsigned __int128 m = ((one << 64) * ((one << shift) - d)) / d + 1;
    magic = static_cast<uint64_t>(m);
  }
  AOTRT_HOST_DEVICE uint64_t div(uint64_t n) const {
#if defined(__CUDA_ARCH__)
    const uint64_t t = __umul64hi(n, magic);
#else
    const uint64_t t =
        static_cast<uint64_t>((static_cast<unsigned __int128>(n) * magic) >> 64);
#endif
    return (t + n) >> shift;
  }
  AOTRT_HOST_DEVICE DivMod<uint64_t> divmod(uint64_t n) const {
    const uint64_t q = div(n);
    return {q, n - q * divisor};
  }
  uint64_t divisor = 1;
  uint64_t magic = 1;
  uint32_t shift = 0;
};

}  // namespace aotrt::cuda
