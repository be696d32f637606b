// The CPU's integer matmul kernels (Note [Integer matmul semantics]): rows
// in parallel, exact int32 accumulation for int8 x int8 (int32 and int64
// operands wrap in their own width), float32 for the int8-weight product
// (Note [Int8 weight-only matmul on the CPU]; in the activations' own dtype)
// and the int4-weight one (Note [Int4 packed weights]; its product through
// the float32 gemm of cpu/cpu.h), and for CUDA's tinygemm int4 layout (Note
// [Int4 tinygemm layout]; the tests' stand-in for the CUDA kernel).
#include <algorithm>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "cpu/cpu.h"
#include "cpu/elements.h"
#include "cpu/gemv.h"
#include "cpu/isa.h"
#include "ops/dispatch.h"
#include "ops/int4_tinygemm.h"
#include "ops/int_matmul.h"

namespace aotrt::cpu {
namespace {
using ops::IntMatmulKernels;

// Accumulated in Acc's unsigned type, so that a sum past Acc's range wraps
// (as ATen's integer matmul does) instead of overflowing.
template <class In, class Acc>
void int_mm_typed(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  using U = std::make_unsigned_t<Acc>;
  const int64_t m = a.sizes()[0], k = a.sizes()[1], n = b.sizes()[1];
  const auto* x = static_cast<const In*>(a.data_ptr());
  const auto* y = static_cast<const In*>(b.data_ptr());
  auto* o = static_cast<Acc*>(out.data_ptr());
#pragma omp parallel for if (m * n * k > 65536)
  for (int64_t i = 0; i < m; ++i) {
    std::vector<U> row(static_cast<size_t>(n), U{0});
    for (int64_t p = 0; p < k; ++p) {
      const auto v = static_cast<U>(static_cast<Acc>(x[i * k + p]));
      const In* yr = y + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += v * static_cast<U>(static_cast<Acc>(yr[j]));
    }
    for (int64_t j = 0; j < n; ++j) o[i * n + j] = static_cast<Acc>(row[j]);
  }
}

void int_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  switch (a.dtype()) {
    case ScalarType::Int8: return int_mm_typed<int8_t, int32_t>(out, a, b);
    case ScalarType::Int32: return int_mm_typed<int32_t, int32_t>(out, a, b);
    case ScalarType::Int64: return int_mm_typed<int64_t, int64_t>(out, a, b);
    default:
      AOTRT_FAIL(kInternal, "int_mm kernel: dtype ", dtype_name(a.dtype()));
  }
}

// Note [Dequantize, then gemm]
// The weight-only matmuls past their few-row kernels: the weight dequantized
// to float32 one chunk of output columns at a time (each weight byte read
// once, the chunk's tile reused by each OpenMP thread), then A [M, K] times
// the chunk by the float32 gemm (float32 accumulation, as ATen's).
// dequantize(c0, cn, tile) writes columns [c0, c0 + cn): as [cn, K] rows when
// rows_along_k, else as [K, cn].
template <class Dequantize>
void dequantized_gemm(const float* x, int64_t M, int64_t K, int64_t N, int64_t chunk,
                      bool rows_along_k, float* out, const char* fn, const Dequantize& dequantize) {
  const int64_t chunks = (N + chunk - 1) / chunk;
  std::exception_ptr failure;
#pragma omp parallel if (chunks > 1 && M * N * K > 65536)
  {
    std::vector<float> tile;
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t c0 = c * chunk, cn = std::min(chunk, N - c0);
      try {
        tile.resize(static_cast<size_t>(cn * K));  // inside: nothing may leave the region
        dequantize(c0, cn, tile.data());
        sgemm_row_major(false, rows_along_k, M, cn, K, 1.0f, x, K, tile.data(),
                        rows_along_k ? K : cn, 0.0f, out + c0, N, fn);
      } catch (...) {
#pragma omp critical(aotrt_dequantized_gemm)
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// Note [Int8 weight-only matmul on the CPU]
// _weight_int8pack_mm at decode is a matrix-vector product: M = 1..8 rows
// against an int8 [N, K] weight, so its time is the weight's bytes read once:
// up to kMaxFewRows rows through few_rows_product (Note [Few-row products] in
// cpu/gemv.h), which widens the int8 weight in registers, then each sum
// scaled once and rounded once to the output dtype. Past kMaxFewRows rows,
// chunks of the weight are dequantized to float32 (unscaled: exact) and
// multiplied by the float32 gemm, each weight byte still read once. The
// activations (bfloat16, float16) are widened to a float32 copy first (M * K
// values, a few KiB). For 1 x 8192 x 2048 bfloat16 with the weight from
// DRAM: 0.85-1.05 ms, 16-19 GB/s of weights (2 threads, AMD EPYC with AVX2;
// bench/int8_gemv.cpp).

// sums [M, N] float32 <- x [M, K] float32 @ w [N, K]^T (unscaled).
void int8_weight_sums(const float* x, const int8_t* w, float* sums, int64_t M, int64_t K,
                      int64_t N, const char* fn) {
  if (M <= kMaxFewRows) return few_rows_product(x, M, K, w, ScalarType::Int8, K, N, sums, N);
  // Chunks of 128 weight rows, [cn, K] each. (The kernel above 8 rows at a
  // time, the tile from cache after the first pass, was slower: 21.6 ms
  // against 13.1 for M = 128, N = K = 2048, bfloat16, 2 threads.)
  dequantized_gemm(x, M, K, N, 128, /*rows_along_k=*/true, sums, fn,
                   [w, K](int64_t c0, int64_t cn, float* tile) {
                     const int8_t* src = w + c0 * K;
                     for (int64_t i = 0; i < cn * K; ++i) tile[i] = static_cast<float>(src[i]);
                   });
}

// Note [Int8 weight-only matmul on the CPU]: out [M, N], a [M, K], scales [N]
// of one dtype (float32, bfloat16, float16); sums in float32, times the
// scale, rounded once.
void int8_weight_mm_native(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                           const TensorImpl& scales) {
  const char* fn = "_weight_int8pack_mm";
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = w.sizes()[0];
  const ScalarType dt = a.dtype();
  // Pointers and the dtype's switch outside the per-element loops: data_ptr()
  // per element made these loops a quarter of an M = 8 call (perf, 2 threads).
  const void* ap = a.data_ptr();
  const void* sp = scales.data_ptr();
  void* op = out.data_ptr();
  std::vector<float> xf;
  const float* x = static_cast<const float*>(ap);
  if (dt != ScalarType::Float32) {
    xf.resize(static_cast<size_t>(M * K));
    for (int64_t i = 0; i < M * K; ++i) xf[static_cast<size_t>(i)] = load_float_element(ap, i, dt);
    x = xf.data();
  }
  std::vector<float> sf;
  float* sums = static_cast<float*>(op);
  if (dt != ScalarType::Float32) {
    sf.resize(static_cast<size_t>(M * N));
    sums = sf.data();
  }
  int8_weight_sums(x, static_cast<const int8_t*>(w.data_ptr()), sums, M, K, N, fn);
  const auto scale_rows = [&](auto scale_of, auto store) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t n = 0; n < N; ++n) store(i * N + n, sums[i * N + n] * scale_of(n));
    }
  };
  const auto* s16 = static_cast<const uint16_t*>(sp);
  auto* o16 = static_cast<uint16_t*>(op);
  switch (dt) {
    case ScalarType::BFloat16:
      return scale_rows([&](int64_t n) { return bfloat16_to_float(s16[n]); },
                        [&](int64_t e, float v) { o16[e] = float_to_bfloat16(v); });
    case ScalarType::Float16:
      return scale_rows([&](int64_t n) { return half_to_float(s16[n]); },
                        [&](int64_t e, float v) { o16[e] = float_to_half(v); });
    default:
      return scale_rows([&](int64_t n) { return static_cast<const float*>(sp)[n]; },
                        [&](int64_t e, float v) { sums[e] = v; });
  }
}

// A scale or zero of Note [Int4 packed weights] as float32: S is float, or
// uint16_t holding a bfloat16 (a bf16 model's scales, read in place).
inline float scale_value(float v) { return v; }
inline float scale_value(uint16_t v) { return bfloat16_to_float(v); }

// Rows [k0, k1) of one packed block (nb <= 64 columns starting at n0)
// dequantized into rows of `out` (leading dimension ld): byte i of a row holds
// columns i and i + nb/2 when split, else 2i and 2i + 1 (low nibble first).
// Each group's scales and zeros are gathered once; each value is spread,
// scaled and shifted in one pass. (Spreading the nibbles first and scaling in
// a second pass stalled every 32-byte load of the second pass on the 16-byte
// stores of the first: store forwarding fails across them; 68% of an M = 1
// call, measured with perf on this machine.)
template <class S>
[[gnu::always_inline]] inline void dequantize_block_of(const uint8_t* block, int64_t k0, int64_t k1,
                                                       int64_t nb, bool split, int64_t group,
                                                       const S* sz, int64_t N, int64_t n0,
                                                       float* out, int64_t ld) {
  const int64_t half = nb / 2;
  float scale[64], zero[64];
  for (int64_t k = k0; k < k1; ++k) {
    if (k % group == 0 || k == k0) {
      const S* g = sz + ((k / group) * N + n0) * 2;
      for (int64_t j = 0; j < nb; ++j) {
        scale[j] = scale_value(g[j * 2]);
        zero[j] = scale_value(g[j * 2 + 1]);
      }
    }
    const uint8_t* bytes = block + k * half;
    float* row = out + (k - k0) * ld;
    // omp simd: GCC's -O2 cost model leaves these scalar (3.5x slower, measured).
    if (split) {
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        row[i] = static_cast<float>((bytes[i] & 0xF) - 8) * scale[i] + zero[i];
        row[i + half] = static_cast<float>((bytes[i] >> 4) - 8) * scale[i + half] + zero[i + half];
      }
    } else {
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        row[2 * i] = static_cast<float>((bytes[i] & 0xF) - 8) * scale[2 * i] + zero[2 * i];
        row[2 * i + 1] = static_cast<float>((bytes[i] >> 4) - 8) * scale[2 * i + 1] + zero[2 * i + 1];
      }
    }
  }
}

// Not templates: target_clones takes none (clang 14 refuses them).
AOTRT_CLONE_FOR_AVX2
void dequantize_block(const uint8_t* block, int64_t k0, int64_t k1, int64_t nb, bool split,
                      int64_t group, const float* sz, int64_t N, int64_t n0, float* out,
                      int64_t ld) {
  dequantize_block_of(block, k0, k1, nb, split, group, sz, N, n0, out, ld);
}
AOTRT_CLONE_FOR_AVX2
void dequantize_block(const uint8_t* block, int64_t k0, int64_t k1, int64_t nb, bool split,
                      int64_t group, const uint16_t* sz, int64_t N, int64_t n0, float* out,
                      int64_t ld) {
  dequantize_block_of(block, k0, k1, nb, split, group, sz, N, n0, out, ld);
}

// Few rows of A (decoding) take a fused per-block kernel instead of the gemm.
constexpr int64_t kFewRows = 4;

// One packed block's nb columns of every row of o (M <= kFewRows), in k
// order as ATen accumulates: each weight is dequantized in registers and
// multiplied into the M row sums at once (no tile in memory: for M = 1 the
// tile's store and reload were most of the call). NB > 0: the block's width
// at compile time (full blocks of the layouts ATen packs: 16, 32, 64), so the
// sums stay in vector registers; NB = 0: any width (a last, partial block).
template <int M, int NB, bool Split, class S>
[[gnu::always_inline]] inline void int4_few_rows_fused(const float* x, const uint8_t* block,
                                                       const S* sz, float* o, int64_t K,
                                                       int64_t N, int64_t group, int64_t n0,
                                                       int64_t nb_runtime) {
  const int64_t nb = NB > 0 ? NB : nb_runtime, half = nb / 2;
  float scale[64], zero[64];
  float acc[M][64] = {};
  for (int64_t k = 0; k < K; ++k) {
    if (k % group == 0) {
      const S* g = sz + ((k / group) * N + n0) * 2;
      for (int64_t j = 0; j < nb; ++j) {
        scale[j] = scale_value(g[j * 2]);
        zero[j] = scale_value(g[j * 2 + 1]);
      }
    }
    const uint8_t* bytes = block + k * half;
    float v[M];
    for (int i = 0; i < M; ++i) v[i] = x[i * K + k];
    // Split: byte j holds columns j and j + half; else 2j and 2j + 1.
#pragma omp simd simdlen(8)
    for (int64_t j = 0; j < half; ++j) {
      const int64_t c_lo = Split ? j : 2 * j, c_hi = Split ? j + half : 2 * j + 1;
      const float lo = static_cast<float>((bytes[j] & 0xF) - 8) * scale[c_lo] + zero[c_lo];
      const float hi = static_cast<float>((bytes[j] >> 4) - 8) * scale[c_hi] + zero[c_hi];
      for (int i = 0; i < M; ++i) {
        acc[i][c_lo] += v[i] * lo;
        acc[i][c_hi] += v[i] * hi;
      }
    }
  }
  for (int i = 0; i < M; ++i) std::copy(acc[i], acc[i] + nb, o + i * N + n0);
}

template <int M, class S>
[[gnu::always_inline]] inline void int4_few_rows_width(const float* x, const uint8_t* block,
                                                       const S* sz, float* o, int64_t K,
                                                       int64_t N, int64_t group, int64_t n0,
                                                       int64_t nb, bool split) {
  if (split && nb == 32) return int4_few_rows_fused<M, 32, true>(x, block, sz, o, K, N, group, n0, nb);
  if (split && nb == 64) return int4_few_rows_fused<M, 64, true>(x, block, sz, o, K, N, group, n0, nb);
  if (!split && nb == 32) return int4_few_rows_fused<M, 32, false>(x, block, sz, o, K, N, group, n0, nb);
  if (!split && nb == 16) return int4_few_rows_fused<M, 16, false>(x, block, sz, o, K, N, group, n0, nb);
  if (split) return int4_few_rows_fused<M, 0, true>(x, block, sz, o, K, N, group, n0, nb);
  return int4_few_rows_fused<M, 0, false>(x, block, sz, o, K, N, group, n0, nb);
}

template <class S>
[[gnu::always_inline]] inline void int4_few_rows_block_of(const float* x, const uint8_t* packed,
                                                          const S* sz, float* o, int64_t M,
                                                          int64_t K, int64_t N, int64_t group,
                                                          int64_t n0, int64_t nb, bool split) {
  const uint8_t* block = packed + n0 * (K / 2);
  switch (M) {
    case 1: return int4_few_rows_width<1>(x, block, sz, o, K, N, group, n0, nb, split);
    case 2: return int4_few_rows_width<2>(x, block, sz, o, K, N, group, n0, nb, split);
    case 3: return int4_few_rows_width<3>(x, block, sz, o, K, N, group, n0, nb, split);
    default: return int4_few_rows_width<4>(x, block, sz, o, K, N, group, n0, nb, split);
  }
}

AOTRT_CLONE_FOR_AVX2
void int4_few_rows_block(const float* x, const uint8_t* packed, const float* sz, float* o, int64_t M,
                         int64_t K, int64_t N, int64_t group, int64_t n0, int64_t nb, bool split) {
  int4_few_rows_block_of(x, packed, sz, o, M, K, N, group, n0, nb, split);
}
AOTRT_CLONE_FOR_AVX2
void int4_few_rows_block(const float* x, const uint8_t* packed, const uint16_t* sz, float* o,
                         int64_t M, int64_t K, int64_t N, int64_t group, int64_t n0, int64_t nb,
                         bool split) {
  int4_few_rows_block_of(x, packed, sz, o, M, K, N, group, n0, nb, split);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AOTRT_INT4_AVX2 1
// Note [Int4 few-row sums per group]
// The split layouts ATen packs on AVX2 and AVX-512 hosts (NB = 32, 64), with
// AVX2 and FMA, for M <= 4 rows. Inside a group of k the scale s and zero z
// of a column are fixed, so  sum_k x_k ((q_k - 8) s + z)  =  s * sum_k x_k q_k
// + (z - 8 s) * sum_k x_k: per 8 weights one widen, one convert and one fma
// per row (the subtract, the dequantizing fma and its dependency are gone),
// and scale and zero are applied once a group. Not ATen's k order: the sums
// differ from eager's by float32 rounding over K terms (tests allow that).
// A pass keeps the sums of 16 or 32 columns (2 U C M registers, at most 8),
// so a block of NB columns takes one to four passes over a group's bytes
// (re-read from L1); the next group's bytes are prefetched (a thread's blocks
// are contiguous, but the hardware prefetcher stops at 4 KiB pages);
// bfloat16 scales are read in place. Measured on this 2-core Zen 3 machine
// (bench/results/decode-cpu-2026-12-06.md, last section): 1 x 2048 by 2048 x
// 2048 bf16 alone (bench/cpu_int4.py, 1 thread) 0.35 ms against 0.64 before
// and eager's 0.68; from DRAM (aotrt_int8_gemv_bench --int4, 2 threads) M = 1
// at 10-11 GB/s of packed weights against 4-5.5 before, M = 4 at 3.8-6.7
// against 2-3; the 1B decode step's int4 matmuls 132-162 -> 77-80 ms (paired
// runs), its step 0.65-0.74x eager's (was 1.1-1.2x). Chosen per call
// by avx2_kernels() (Note [Hand-written AVX2 kernels]).

// The (scale, zero) pairs of 8 columns at g, as a vector of scales and one of
// zeros minus 8 scales (Note [Int4 few-row sums per group]).
// (Bfloat16 scales, as a bf16 model's are, read in place: a float32 copy of
// the whole [K/group, N, 2] every call held M = 1 from DRAM at 8 GB/s, 16
// without it, in one measurement.)
template <class S>
__attribute__((target("avx2,fma"))) inline void int4_scales_of(const S* g, __m256& s, __m256& z) {
  __m256 a, b;
  if constexpr (std::is_same_v<S, float>) {
    a = _mm256_loadu_ps(g), b = _mm256_loadu_ps(g + 8);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g));
    a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)), 16));
    b = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1)), 16));
  }
  // In-lane: s0 s1 s4 s5 | s2 s3 s6 s7; the 64-bit swap puts them in order.
  s = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
  z = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
  z = _mm256_fnmadd_ps(_mm256_set1_ps(8.0f), s, z);
}

// Columns [8 C0, 8 C0 + 8 C) and [H + 8 C0, H + 8 C0 + 8 C) of a block (bytes
// 8 C0 .. of each row of H bytes) for one group, k in [k0, k1): the sums
// sum_k x_k q_k of M rows, then folded into acc with the group's scales.
template <int M, int NB, int C, int U, class S>
__attribute__((target("avx2,fma"))) inline void int4_group_pass(
    const float* x, const uint8_t* block, const S* g, const float* xsum, float (*acc)[NB],
    int64_t K, int64_t k0, int64_t k1, int c0, bool prefetch, int64_t ahead) {
  constexpr int H = NB / 2;
  // U sets of sums over alternate k: a chain of one fma per k would wait on
  // the fma's latency when there are few sums (M = 1).
  __m256 lo[U][M][C], hi[U][M][C];
#pragma GCC unroll 2
  for (int u = 0; u < U; ++u) {
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) lo[u][i][c] = hi[u][i][c] = _mm256_setzero_ps();
    }
  }
  const __m256i nibble = _mm256_set1_epi32(0x0F);
  const uint8_t* bytes = block + k0 * H + 8 * c0;
  for (int64_t k = k0; k < k1; k += U) {
#pragma GCC unroll 2
    for (int u = 0; u < U; ++u, bytes += H) {
      if (prefetch && ((k + u) * H) % 64 == 0) {
        _mm_prefetch(reinterpret_cast<const char*>(bytes - 8 * c0 + ahead), _MM_HINT_T0);
      }
      __m256 xv[M];
#pragma GCC unroll 4
      for (int i = 0; i < M; ++i) xv[i] = _mm256_broadcast_ss(x + i * K + k + u);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        // 8 bytes widened: low nibbles are columns 8 (c0 + c) .., high ones H + 8 (c0 + c) ..
        const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + 8 * c)));
        const __m256 ql = _mm256_cvtepi32_ps(_mm256_and_si256(w, nibble));
        const __m256 qh = _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 4));
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) {
          lo[u][i][c] = _mm256_fmadd_ps(xv[i], ql, lo[u][i][c]);
          hi[u][i][c] = _mm256_fmadd_ps(xv[i], qh, hi[u][i][c]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) {
    const int cl = 8 * (c0 + c), ch = H + cl;
    __m256 sl, zl, sh, zh;
    int4_scales_of(g + 2 * cl, sl, zl);
    int4_scales_of(g + 2 * ch, sh, zh);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      __m256 l = lo[0][i][c], h = hi[0][i][c];
#pragma GCC unroll 2
      for (int u = 1; u < U; ++u) {
        l = _mm256_add_ps(l, lo[u][i][c]);
        h = _mm256_add_ps(h, hi[u][i][c]);
      }
      const __m256 xs = _mm256_set1_ps(xsum[i]);
      __m256 a = _mm256_fmadd_ps(zl, xs, _mm256_load_ps(acc[i] + cl));
      _mm256_store_ps(acc[i] + cl, _mm256_fmadd_ps(sl, l, a));
      a = _mm256_fmadd_ps(zh, xs, _mm256_load_ps(acc[i] + ch));
      _mm256_store_ps(acc[i] + ch, _mm256_fmadd_ps(sh, h, a));
    }
  }
}

template <int M, int NB, class S>
__attribute__((target("avx2,fma"))) void int4_few_rows_avx2(const float* x, const uint8_t* block,
                                                             const S* sz, float* o, int64_t K,
                                                             int64_t N, int64_t group, int64_t n0) {
  constexpr int H = NB / 2, Chunks = H / 8;  // bytes per k; 8-byte chunks per row
  // Chunks per pass and sets of sums: 2 U C M sums in at most 8 ymm registers.
  constexpr int U = M == 1 ? 2 : 1, C = M <= 2 ? std::min(Chunks, 4 / (M * U)) : 1;
  alignas(32) float acc[M][NB] = {};
  const int64_t ahead = group * H;  // one group on: the next group, or the next block
  for (int64_t k0 = 0; k0 < K; k0 += group) {
    float xsum[M];
    for (int i = 0; i < M; ++i) {
      const float* xi = x + i * K + k0;
      __m256 s = _mm256_setzero_ps();
      int64_t k = 0;
      for (; k + 8 <= group; k += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(xi + k));
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, s);
      float t = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
      for (; k < group; ++k) t += xi[k];
      xsum[i] = t;
    }
    const S* g = sz + ((k0 / group) * N + n0) * 2;
    for (int c0 = 0; c0 < Chunks; c0 += C) {
      int4_group_pass<M, NB, C, U, S>(x, block, g, xsum, acc, K, k0, k0 + group, c0, c0 == 0, ahead);
    }
  }
  for (int i = 0; i < M; ++i) std::copy(acc[i], acc[i] + NB, o + i * N + n0);
}

template <int NB, class S>
void int4_few_rows_avx2_rows(const float* x, const uint8_t* block, const S* sz, float* o, int64_t M,
                             int64_t K, int64_t N, int64_t group, int64_t n0) {
  switch (M) {
    case 1: return int4_few_rows_avx2<1, NB>(x, block, sz, o, K, N, group, n0);
    case 2: return int4_few_rows_avx2<2, NB>(x, block, sz, o, K, N, group, n0);
    case 3: return int4_few_rows_avx2<3, NB>(x, block, sz, o, K, N, group, n0);
    default: return int4_few_rows_avx2<4, NB>(x, block, sz, o, K, N, group, n0);
  }
}

#endif

// The blocks of a few-row product, S float or uint16_t (bfloat16 scales, read
// in place by both kernels): full split blocks of 32 or 64 columns take the
// AVX2 kernel where avx2_kernels() says so, the others int4_few_rows_block.
template <class S>
void int4_weight_mm_few_rows(const float* x, const uint8_t* packed, const S* sz, float* o,
                             int64_t M, int64_t K, int64_t N, int64_t group,
                             ops::Int4PackLayout layout) {
  const int64_t blocks = (N + layout.block_n - 1) / layout.block_n;
#ifdef AOTRT_INT4_AVX2
  const bool avx2 = avx2_kernels();  // Note [Hand-written AVX2 kernels]: before the region
#endif
#pragma omp parallel for schedule(static) if (blocks > 1 && M * N * K > 65536)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t n0 = b * layout.block_n, nb = std::min(layout.block_n, N - n0);
    const bool split = layout.split && nb == layout.block_n;
#ifdef AOTRT_INT4_AVX2
    if (split && (nb == 32 || nb == 64) && avx2) {
      const uint8_t* block = packed + n0 * (K / 2);
      if (nb == 32) int4_few_rows_avx2_rows<32>(x, block, sz, o, M, K, N, group, n0);
      else int4_few_rows_avx2_rows<64>(x, block, sz, o, M, K, N, group, n0);
      continue;
    }
#endif
    int4_few_rows_block(x, packed, sz, o, M, K, N, group, n0, nb, split);
  }
}

// Columns in chunks of whole layout blocks (about 128), each dequantized as
// [K, cn] (Note [Dequantize, then gemm]; in the gemm's order over k). At most
// kFewRows rows of A take int4_weight_mm_few_rows instead.
template <class S>
void int4_weight_mm_typed(const float* x, const uint8_t* packed, const S* sz, float* o, int64_t M,
                          int64_t K, int64_t N, int64_t group, ops::Int4PackLayout layout,
                          const char* fn) {
  if (M <= kFewRows) return int4_weight_mm_few_rows(x, packed, sz, o, M, K, N, group, layout);
  const int64_t chunk = std::max<int64_t>(1, 128 / layout.block_n) * layout.block_n;
  dequantized_gemm(x, M, K, N, chunk, /*rows_along_k=*/false, o, fn,
                   [&](int64_t c0, int64_t cn, float* tile) {
                     for (int64_t n0 = c0; n0 < c0 + cn; n0 += layout.block_n) {
                       const int64_t nb = std::min(layout.block_n, N - n0);
                       const bool split = layout.split && nb == layout.block_n;
                       dequantize_block(packed + n0 * (K / 2), 0, K, nb, split, group, sz, N,
                                        n0, tile + (n0 - c0), cn);
                     }
                   });
}

void int4_weight_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& w,
                    int64_t group, const TensorImpl& scale_zeros, ops::Int4PackLayout layout,
                    const char* fn) {
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = w.sizes()[0];
  const auto* x = static_cast<const float*>(a.data_ptr());
  const auto* packed = static_cast<const uint8_t*>(w.data_ptr());
  auto* o = static_cast<float*>(out.data_ptr());
  // Float32 and bfloat16 scales read in place (ops::weight_int4pack_mm widens float16 ones).
  if (scale_zeros.dtype() == ScalarType::BFloat16) {
    return int4_weight_mm_typed(x, packed, static_cast<const uint16_t*>(scale_zeros.data_ptr()),
                                o, M, K, N, group, layout, fn);
  }
  AOTRT_CHECK(scale_zeros.dtype() == ScalarType::Float32, kInternal, fn,
              ": int4 weight kernel given ", dtype_name(scale_zeros.dtype()),
              " scales (float32 or bfloat16 expected)");
  int4_weight_mm_typed(x, packed, static_cast<const float*>(scale_zeros.data_ptr()), o, M, K, N,
                       group, layout, fn);
}

// The inverse of dequantize_block's reading: each output byte from its two columns.
void int4_pack(const TensorImpl& out, const TensorImpl& q, ops::Int4PackLayout layout) {
  const int64_t N = q.sizes()[0], K = q.sizes()[1];
  const auto* src = static_cast<const int32_t*>(q.data_ptr());
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  for (int64_t n0 = 0; n0 < N; n0 += layout.block_n) {
    const int64_t nb = std::min(layout.block_n, N - n0), half = nb / 2;
    const bool split = layout.split && nb == layout.block_n;
    uint8_t* block = dst + n0 * (K / 2);
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t lo = n0 + (split ? i : 2 * i), hi = lo + (split ? half : 1);
        block[k * half + i] = static_cast<uint8_t>(static_cast<uint8_t>(src[hi * K + k]) << 4) |
                              static_cast<uint8_t>(src[lo * K + k]);
      }
    }
  }
}

// --- _dyn_quant_matmul_4bit (Note [Dynamic int4 matmul]) ---------------------------------
// ATen's reference kernels, operation for operation in float32 (no fma: this
// file is compiled for baseline x86-64), so that every result is eager's to
// the bit, NaN and infinity included. Conversions C++ leaves undefined take
// x86's values, as ATen's compiled code does (float_to_int32: INT32_MIN).

// One row of inp quantized to int8 (ATen's asymmetric per-row scheme): q, the
// reciprocal of the scale, and the offset (minus the zero point).
struct QuantizedRow {
  std::vector<int32_t> q;
  float recip = 0;
  int32_t offset = 0;
};

// The float32 reference takes max(x, acc) and min(x, acc); the bfloat16 one
// max(acc, x): they differ only where x is NaN.
template <bool AccFirst>
void quantize_row(const float* x, int64_t K, QuantizedRow& row) {
  constexpr float qmin = -128.0f, qmax = 127.0f;
  float mx = -std::numeric_limits<float>::max(), mn = std::numeric_limits<float>::max();
  for (int64_t k = 0; k < K; ++k) {
    mx = AccFirst ? std::max(mx, x[k]) : std::max(x[k], mx);
    mn = AccFirst ? std::min(mn, x[k]) : std::min(x[k], mn);
  }
  const float rmin = std::min(0.0f, mn), rmax = std::max(0.0f, mx);
  const float scale = rmin == rmax ? 1.0f : (qmax - qmin) / (rmax - rmin);
  row.recip = scale != 0.0f ? 1.0f / scale : 0.0f;
  const float descaled_min = rmin * scale, descaled_max = rmax * scale;
  const float from_min = qmin + descaled_min, from_max = qmax + descaled_max;
  float zp = from_min + from_max > 0 ? qmin - descaled_min : qmax - descaled_max;
  zp = std::max(zp, qmin);
  zp = std::min(zp, qmax);
  const auto nudged = static_cast<int32_t>(std::lrintf(zp));
  row.offset = -nudged;
  row.q.resize(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) {
    const int32_t r = float_to_int32(static_cast<double>(std::round(x[k] * scale)));
    const auto v = static_cast<int32_t>(static_cast<uint32_t>(r) + static_cast<uint32_t>(nudged));
    row.q[static_cast<size_t>(k)] = std::min(std::max(v, int32_t{-128}), int32_t{127});
  }
}

// sum over k in [k0, k1) of (q + offset) * (w - 8), in int32 (wrapping, as
// ATen's int32 sum would on x86).
int32_t block_sum(const QuantizedRow& row, const uint8_t* w, int64_t k0, int64_t k1) {
  uint32_t acc = 0;
  for (int64_t k = k0; k < k1; ++k) {
    const uint8_t byte = w[k / 2];
    const int32_t rv = (k % 2 == 0 ? (byte & 0x0F) : (byte >> 4)) - 8;
    acc += static_cast<uint32_t>(row.q[static_cast<size_t>(k)] * rv);
    acc += static_cast<uint32_t>(row.offset * rv);
  }
  return static_cast<int32_t>(acc);
}

void dyn_quant_mm(const TensorImpl& out, const TensorImpl& inp, const TensorImpl& weights,
                  const TensorImpl& scales, const TensorImpl* bias, int64_t block_size,
                  const char*) {
  const int64_t M = inp.sizes()[0], K = inp.sizes()[1], N = out.sizes()[1];
  const bool bf16 = inp.dtype() == ScalarType::BFloat16;
  const bool channelwise = block_size == K;
  const int64_t blocks = K / block_size;
  const auto* w = static_cast<const uint8_t*>(weights.data_ptr());
  const auto* s = static_cast<const float*>(scales.data_ptr());
  const float* b = bias != nullptr ? static_cast<const float*>(bias->data_ptr()) : nullptr;
  const float hi = bf16 ? 3.38953139e+38f : std::numeric_limits<float>::max();
#pragma omp parallel for if (M * N * K > 65536)
  for (int64_t m = 0; m < M; ++m) {
    std::vector<float> x(static_cast<size_t>(K));
    if (bf16) {
      const auto* in = static_cast<const uint16_t*>(inp.data_ptr()) + m * K;
      for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(k)] = bfloat16_to_float(in[k]);
    } else {
      const float* in = static_cast<const float*>(inp.data_ptr()) + m * K;
      std::copy(in, in + K, x.begin());
    }
    QuantizedRow row;
    if (bf16) {
      quantize_row<true>(x.data(), K, row);
    } else {
      quantize_row<false>(x.data(), K, row);
    }
    for (int64_t n = 0; n < N; ++n) {
      const uint8_t* wn = w + n * (K / 2);
      float acc;
      if (channelwise) {
        acc = static_cast<float>(block_sum(row, wn, 0, K)) * s[n];
      } else {
        acc = 0.0f;
        for (int64_t g = 0; g < blocks; ++g) {
          const int32_t sum = block_sum(row, wn, g * block_size, (g + 1) * block_size);
          acc += static_cast<float>(sum) * s[n * blocks + g];
        }
      }
      acc = acc * row.recip;
      if (b != nullptr) acc += b[n];
      acc = std::max(acc, -hi);
      acc = std::min(acc, hi);
      if (bf16) {
        uint32_t bits;
        std::memcpy(&bits, &acc, sizeof bits);
        static_cast<uint16_t*>(out.data_ptr())[m * N + n] = static_cast<uint16_t>(bits >> 16);
      } else {
        static_cast<float*>(out.data_ptr())[m * N + n] = acc;
      }
    }
  }
}

// Note [Int4 tinygemm layout]: the weight dequantized to bfloat16 once
// (w^T [K, N] as float), then per output a float32 sum in k order.
void int4_tinygemm_mm(const TensorImpl& out, const TensorImpl& a, const TensorImpl& b,
                      int64_t group, const TensorImpl& scale_zeros, const char*) {
  const int64_t M = a.sizes()[0], K = a.sizes()[1], N = out.sizes()[1];
  const int64_t outer = b.sizes()[1];
  const int inner = static_cast<int>(b.sizes()[3] * 2);
  const auto* words = static_cast<const uint32_t*>(b.data_ptr());
  const auto* sz = static_cast<const uint16_t*>(scale_zeros.data_ptr());
  std::vector<float> w(static_cast<size_t>(K * N));
#pragma omp parallel for if (K * N > 65536)
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t n = 0; n < N; ++n) {
      const auto at = ops::int4_tinygemm::nibble_of(n, k, outer, inner);
      const int q = static_cast<int>((words[at.word] >> at.shift) & 0xF);
      const uint16_t* g = sz + ((k / group) * N + n) * 2;
      const float v = ops::int4_tinygemm::dequantize_round_odd(q, bfloat16_to_float(g[0]),
                                                               bfloat16_to_float(g[1]));
      w[static_cast<size_t>(k * N + n)] = bfloat16_to_float(float_to_bfloat16(v));
    }
  }
  const auto* x = static_cast<const uint16_t*>(a.data_ptr());
  auto* o = static_cast<uint16_t*>(out.data_ptr());
#pragma omp parallel for if (M * N * K > 65536)
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        acc = std::fma(bfloat16_to_float(x[i * K + k]), w[static_cast<size_t>(k * N + n)], acc);
      }
      o[i * N + n] = float_to_bfloat16(acc);
    }
  }
}

constexpr IntMatmulKernels kIntMatmul{.int_mm = int_mm,
                                      .int8_weight_mm = int8_weight_mm_native,
                                      .int8_weight_mm_native = int8_weight_mm_native,
                                      .int_mm_views = nullptr,           // dense operands
                                      .int4_weight_mm = int4_weight_mm,
                                      .int4_pack = int4_pack,
                                      .dyn_quant_mm = dyn_quant_mm,
                                      .int4_tinygemm_mm = int4_tinygemm_mm};
AOTRT_REGISTER_KERNELS(IntMatmulKernels, cpu, kIntMatmul);

}  // namespace
}  // namespace aotrt::cpu
