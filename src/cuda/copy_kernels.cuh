// Device code of the copy kernels (cuda/copy.cu plans and launches them).
// Geometry travels by value in the kernel parameters: no device memory is
// allocated for sizes and strides. Dims are stored innermost first.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/int_divider.h"

namespace aotrt::cuda::kernels {

// Dims a kernel walks after merging (see Note [Copy plans] in copy.cu).
constexpr int kMaxDims = 16;

// Offsets of the two sides of a copy (or one side of a fill) for a linear
// index over the dims, innermost first; strides in units of the kernel's
// element type.
template <typename I>
struct Offsets {
  int ndim = 0;
  IntDivider<I> sizes[kMaxDims];  // the outermost one is never divided by
  I dst[kMaxDims];
  I src[kMaxDims];

  __device__ __forceinline__ void get(I linear, I& od, I& os) const {
    od = 0;
    os = 0;
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == ndim - 1) {
        od += linear * dst[d];
        os += linear * src[d];
        break;
      }
      const DivMod<I> qr = sizes[d].divmod(linear);
      linear = qr.div;
      od += qr.mod * dst[d];
      os += qr.mod * src[d];
    }
  }
};

// A unit of `Bytes` bytes moved as one access (16 bytes: one 128-bit load).
template <int Bytes>
struct Unit;
template <> struct Unit<1> { using type = uint8_t; };
template <> struct Unit<2> { using type = uint16_t; };
template <> struct Unit<4> { using type = uint32_t; };
template <> struct Unit<8> { using type = uint2; };
template <> struct Unit<16> { using type = uint4; };

constexpr int kThreads = 256;
// Units each thread of copy_units moves: 16 bytes in flight per thread. On an
// H200, 16-byte units copy fastest one per thread (97% of cudaMemcpy for the
// channel half of a channels-last tensor, 95% with four).
template <typename T>
constexpr int unroll_for() {
  const int units = 16 / static_cast<int>(sizeof(T));
  return units < 1 ? 1 : units > 8 ? 8 : units;
}

// dst[i] = src[i] for every linear index, in units of T; each thread moves
// Unroll units spaced a block apart, all loads issued before the stores.
template <typename T, typename I, int Unroll = unroll_for<T>()>
__global__ void __launch_bounds__(kThreads)
    copy_units(Offsets<I> g, T* __restrict__ dst, const T* __restrict__ src, I n) {
  const I step = static_cast<I>(gridDim.x) * (kThreads * Unroll);
  for (I base = static_cast<I>(blockIdx.x) * (kThreads * Unroll) + threadIdx.x; base < n;
       base += step) {
    T v[Unroll];
    I od[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      const I i = base + static_cast<I>(k * kThreads);
      if (i < n) {
        I os;
        g.get(i, od[k], os);
        v[k] = src[os];
      }
    }
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      if (base + static_cast<I>(k * kThreads) < n) dst[od[k]] = v[k];
    }
  }
}

// Writes `value` to every unit through the dst side of g.
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads) fill_units(Offsets<I> g, T* __restrict__ dst, T value,
                                                       I n) {
  const I step = static_cast<I>(gridDim.x) * kThreads;
  for (I i = static_cast<I>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) {
    I od, os;
    g.get(i, od, os);
    dst[od] = value;
  }
}

// --- The tiled transpose ----------------------------------------------------------
//
// Note [Tiled transpose]
// When the destination's innermost dim (A, unit stride in dst) is not the
// source's (B, unit stride in src), an element-by-element copy is coalesced
// on one side only. A block instead moves a Tile x Tile tile of (A, B):
// it reads rows along B (coalesced in src) into shared memory, then writes
// rows along A (coalesced in dst). The row of the shared tile is padded by
// one unit so the column reads do not hit one bank. The other dims are a
// batch, decomposed from the tile index.
// Tile: units along each of A and B per tile; the block is 32 x Rows
// threads, each moving (Tile / 32) * (Tile / Rows) units per tile, all its
// loads in flight before the barrier. Measured on an H200 for the channel
// half of a 1 GiB fp32 channels-last tensor into NCHW (gather; scatter), as a
// share of cudaMemcpy: 32 x 4: 93%, 91%; 32 x 8: 87%, 83%; 64 x 4: 90%, 88%;
// 64 x 8: 88%, 87%; 64 x 16: 89%, 81%. fp16 (2-byte units) reaches 65%.
constexpr int kTile = 32;
constexpr int kTileRows = 4;

template <typename I>
struct TileGeometry {
  I size_a = 0, size_b = 0;
  I dst_a = 0, dst_b = 0, src_a = 0, src_b = 0;
  IntDivider<I> tiles_a, tiles_b;  // tiles along A and along B
  Offsets<I> batch;                // the other dims (ndim 0: one batch entry)
};

template <typename T, typename I, int Tile = kTile, int Rows = kTileRows>
__global__ void __launch_bounds__(32 * Rows)
    transpose_units(TileGeometry<I> g, T* __restrict__ dst, const T* __restrict__ src,
                    I num_tiles) {
  static_assert(Tile % 32 == 0 && Tile % Rows == 0, "tile shape");
  __shared__ T tile[Tile][Tile + 1];
  for (I t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    const DivMod<I> qa = g.tiles_a.divmod(t);
    const DivMod<I> qb = g.tiles_b.divmod(qa.div);
    I od = 0, os = 0;
    if (g.batch.ndim > 0) g.batch.get(qb.div, od, os);
    const I a0 = qa.mod * Tile, b0 = qb.mod * Tile;

    // Read rows along B: consecutive threads, consecutive source units.
#pragma unroll
    for (int cb = 0; cb < Tile / 32; ++cb) {
      const int x = threadIdx.x + 32 * cb;
      const I b = b0 + x;
#pragma unroll
      for (int k = 0; k < Tile / Rows; ++k) {
        const int r = threadIdx.y + k * Rows;
        const I a = a0 + r;
        if (a < g.size_a && b < g.size_b) tile[r][x] = src[os + a * g.src_a + b * g.src_b];
      }
    }
    __syncthreads();
    // Write rows along A: consecutive threads, consecutive destination units.
#pragma unroll
    for (int ca = 0; ca < Tile / 32; ++ca) {
      const int x = threadIdx.x + 32 * ca;
      const I a = a0 + x;
#pragma unroll
      for (int k = 0; k < Tile / Rows; ++k) {
        const int r = threadIdx.y + k * Rows;
        const I b = b0 + r;
        if (a < g.size_a && b < g.size_b) dst[od + a * g.dst_a + b * g.dst_b] = tile[x][r];
      }
    }
    __syncthreads();
  }
}

// --- Copies that convert dtypes ----------------------------------------------------
//
// The conversions are ATen's on CUDA: float16 and bfloat16 through float with
// round-to-nearest-even (NaN stays a quiet NaN), anything to bool as != 0,
// integers wrapping to the width, and floats to integers as in
// Note [Float to integer conversion on CUDA].

struct HalfBits {
  uint16_t bits;
};
struct BFloat16Bits {
  uint16_t bits;
};

__device__ __forceinline__ float bf16_to_float(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}
__device__ __forceinline__ uint16_t float_to_bf16(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Note [Float to integer conversion on CUDA]
// C++ leaves NaN and out-of-range float-to-integer conversions undefined;
// ATen's CUDA kernels get what the hardware's saturating cvt gives, which is
// (measured with torch 2.11 on an H200):
//  - int64: truncate, saturating at INT64_MIN / INT64_MAX; NaN gives INT64_MIN;
//  - uint8: through that int64, then the low 8 bits (c10 casts uint8 through
//    int64): 300.7 -> 44, -1.5 -> 255, inf -> 255, NaN -> 0;
//  - int32: truncate, saturating; NaN gives 0 from a float (float16 and
//    bfloat16 convert through float) and INT32_MIN from a double;
//  - int16, int8: through that int32, then the low bits: 40000.5 -> int16
//    -25536, 1e10 -> int8 -1.
// The CPU backend follows ATen's CPU results instead (cpu/copy.cpp), which
// differ for exactly these inputs, as ATen's do.
template <typename D, typename V>
__host__ __device__ __forceinline__ D float_to_integer(V v) {
  const double x = static_cast<double>(v);  // exact for float
  if constexpr (std::is_same_v<D, int64_t> || std::is_same_v<D, uint8_t>) {
    int64_t wide;
    if (x != x) {
      wide = INT64_MIN;
    } else if (x >= 9223372036854775808.0) {
      wide = INT64_MAX;
    } else if (x < -9223372036854775808.0) {
      wide = INT64_MIN;
    } else {
      wide = static_cast<int64_t>(x);
    }
    return static_cast<D>(wide);
  } else {
    int32_t narrow;
    if (x != x) {
      narrow = std::is_same_v<V, double> ? INT32_MIN : 0;
    } else if (x >= 2147483648.0) {
      narrow = INT32_MAX;
    } else if (x <= -2147483649.0) {
      narrow = INT32_MIN;
    } else {
      narrow = static_cast<int32_t>(x);
    }
    return static_cast<D>(narrow);
  }
}

// Complex elements as stored (real, imaginary): complex64 and complex128 as
// two floats or doubles, complex32 (ATen's ComplexHalf) as two halves, which
// load as a complex64 value (every complex32 value is one).
template <typename R>
struct ComplexOf {
  R re, im;
};
struct Complex32Bits {
  HalfBits re, im;
};

template <typename T>
inline constexpr bool is_complex_element_v =
    std::is_same_v<T, ComplexOf<float>> || std::is_same_v<T, ComplexOf<double>> ||
    std::is_same_v<T, Complex32Bits>;

template <typename S>
__device__ __forceinline__ auto load_value(const S& s) {
  if constexpr (std::is_same_v<S, HalfBits>) {
    return __half2float(__ushort_as_half(s.bits));
  } else if constexpr (std::is_same_v<S, BFloat16Bits>) {
    return bf16_to_float(s.bits);
  } else if constexpr (std::is_same_v<S, Complex32Bits>) {
    return ComplexOf<float>{__half2float(__ushort_as_half(s.re.bits)),
                            __half2float(__ushort_as_half(s.im.bits))};
  } else {
    return s;
  }
}

template <typename D, typename V>
__device__ __forceinline__ D convert_value(V v);

// Note [Complex conversions on CUDA]
// As ATen's copy_: a real value becomes (v, 0); complex to complex converts
// each part; complex to bool is "either part nonzero"; complex to any other
// real dtype keeps the real part (ATen warns that the imaginary part is
// discarded), converted as a real value of the part's type would be.
template <typename D, typename V>
__device__ __forceinline__ D convert_complex(V v) {
  if constexpr (is_complex_element_v<V>) {
    if constexpr (std::is_same_v<D, Complex32Bits>) {
      return D{convert_value<HalfBits>(v.re), convert_value<HalfBits>(v.im)};
    } else if constexpr (is_complex_element_v<D>) {
      using R = decltype(D{}.re);
      return D{static_cast<R>(v.re), static_cast<R>(v.im)};
    } else if constexpr (std::is_same_v<D, bool>) {
      return v.re != 0 || v.im != 0;
    } else {
      return convert_value<D>(v.re);
    }
  } else if constexpr (std::is_same_v<D, Complex32Bits>) {
    return D{convert_value<HalfBits>(v), convert_value<HalfBits>(0.0f)};
  } else {
    using R = decltype(D{}.re);
    return D{static_cast<R>(v), R(0)};
  }
}

template <typename D, typename V>
__device__ __forceinline__ D convert_value(V v) {
  if constexpr (is_complex_element_v<D> || is_complex_element_v<V>) {
    return convert_complex<D>(v);
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != V(0);
  } else if constexpr (std::is_same_v<D, HalfBits>) {
    return HalfBits{__half_as_ushort(__float2half_rn(static_cast<float>(v)))};
  } else if constexpr (std::is_same_v<D, BFloat16Bits>) {
    return BFloat16Bits{float_to_bf16(static_cast<float>(v))};
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) {
    return float_to_integer<D>(v);
  } else {
    return static_cast<D>(v);
  }
}

// dst[i] = convert(src[i]); strides in elements, 64-bit indices.
template <typename D, typename S>
__global__ void __launch_bounds__(kThreads)
    convert_elements(Offsets<uint64_t> g, D* __restrict__ dst, const S* __restrict__ src,
                     uint64_t n) {
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * kThreads;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += step) {
    uint64_t od, os;
    g.get(i, od, os);
    dst[od] = convert_value<D>(load_value(src[os]));
  }
}

}  // namespace aotrt::cuda::kernels
