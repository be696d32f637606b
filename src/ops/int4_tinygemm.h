// Where a packed int4 weight of CUDA's _weight_int4pack_mm keeps each value,
// and how it is dequantized (Note [Int4 tinygemm layout] in ops/int_matmul.h):
// host and device functions, compiled by nvcc for src/cuda/ops/int_matmul.cu
// and by the host compiler for src/cpu/ops/int_matmul.cpp.
#pragma once

#include <math.h>

#include <cstdint>

#include <string.h>

#include "core/host_device.h"

namespace aotrt::ops::int4_tinygemm {

// The int32 (an index into the packed tensor's dense elements) and the bit
// shift of the nibble holding q[n, k]; k_outer_tiles is the packed tensor's
// size(1) (K / (inner_k_tiles * 16)).
struct Nibble {
  int64_t word;
  int shift;
};

AOTRT_HOST_DEVICE inline Nibble nibble_of(int64_t n, int64_t k, int64_t k_outer_tiles,
                                          int inner_k_tiles) {
  const int64_t k_outer = k / (inner_k_tiles * 16);
  const int k_tile = static_cast<int>((k % (inner_k_tiles * 16)) / 16);  // in the outer tile
  const int kk = static_cast<int>(k % 16);                              // in the k tile
  const int lane = static_cast<int>(n % 8) * 4 + (kk % 8) / 2;
  // Nibbles 0-3 hold the even k of (first tile, k < 8), (first, k >= 8), (second, < 8),
  // (second, >= 8); nibbles 4-7 the odd k after each.
  const int nibble = (kk % 2) * 4 + (k_tile % 2) * 2 + (kk >= 8 ? 1 : 0);
  const int64_t word =
      (((n / 8) * k_outer_tiles + k_outer) * 32 + lane) * (inner_k_tiles / 2) + k_tile / 2;
  return Nibble{word, 4 * nibble};
}

// (q - 8) * scale + zero, exact in double (a 4-bit integer times a bfloat16,
// plus a bfloat16), rounded to float by rounding to odd: float's 16 bits past
// bfloat16's make the next round-to-nearest-even conversion to bfloat16 the
// single correctly rounded one, as ATen's bfloat16 fma gives it.
AOTRT_HOST_DEVICE inline float dequantize_round_odd(int q, float scale, float zero) {
  const double exact = static_cast<double>(q - 8) * scale + zero;
  float f = static_cast<float>(exact);  // to nearest
  if (static_cast<double>(f) != exact && isfinite(f)) {
    if (fabs(static_cast<double>(f)) > fabs(exact)) f = nextafterf(f, 0.0f);  // toward zero
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits |= 1u;  // sticky: inexact
    memcpy(&f, &bits, sizeof f);
  }
  return f;
}

}  // namespace aotrt::ops::int4_tinygemm
