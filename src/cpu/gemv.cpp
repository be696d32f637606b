// Note [Few-row products] in cpu/gemv.h.
#include "cpu/gemv.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "cpu/isa.h"

namespace aotrt::cpu {
namespace {

constexpr int64_t kTile = 16;  // weight rows a thread takes at a time

template <class W>
float widen(W v) {
  if constexpr (std::is_same_v<W, int8_t>) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<W, BFloat16>) {
    return bfloat16_to_float(v.bits);
  } else {
    return half_to_float(v.bits);
  }
}

// Portable: 8 independent lane sums, which the compiler vectorises at any width.
template <class W, int M>
void rows_portable(const float* x, int64_t K, const W* w, int64_t ldw, int64_t n0, int64_t n1,
                   float* sums, int64_t ldo) {
  for (int64_t n = n0; n < n1; ++n) {
    const W* wn = w + n * ldw;
    float acc[M][8] = {};
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      float wf[8];
      for (int l = 0; l < 8; ++l) wf[l] = widen(wn[k + l]);
      for (int i = 0; i < M; ++i) {
        for (int l = 0; l < 8; ++l) acc[i][l] += x[i * K + k + l] * wf[l];
      }
    }
    for (int i = 0; i < M; ++i) {
      float s = 0;
      for (int l = 0; l < 8; ++l) s += acc[i][l];
      for (int64_t p = k; p < K; ++p) s += x[i * K + p] * widen(wn[p]);
      sums[i * ldo + n] = s;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AOTRT_GEMV_AVX2 1
__attribute__((target("avx2,fma,f16c"))) inline float lane_sum(__m256 v) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}

// 8 weights at p widened to float32.
template <class W>
__attribute__((target("avx2,fma,f16c"))) inline __m256 widen8(const W* p) {
  if constexpr (std::is_same_v<W, int8_t>) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  } else if constexpr (std::is_same_v<W, BFloat16>) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
}

// NR weight rows at a time against M rows of x: M * NR sums of 8 lanes (at
// most 8 of the 16 ymm registers), each widened weight vector used M times.
// Unrolled whole, so that the sums live in registers, not on the stack.
template <class W, int M, int NR>
__attribute__((target("avx2,fma,f16c"))) void rows_avx2(const float* x, int64_t K, const W* w,
                                                        int64_t ldw, int64_t n0, int64_t n1,
                                                        float* sums, int64_t ldo) {
  int64_t n = n0;
  for (; n + NR <= n1; n += NR) {
    __m256 acc[M][NR];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_setzero_ps();
    }
    const W* wn = w + n * ldw;
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      __m256 wv[NR];
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) wv[r] = widen8(wn + r * ldw + k);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        const __m256 xv = _mm256_loadu_ps(x + i * K + k);
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_fmadd_ps(xv, wv[r], acc[i][r]);
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        float s = lane_sum(acc[i][r]);
        for (int64_t p = k; p < K; ++p) s += x[i * K + p] * widen(wn[r * ldw + p]);
        sums[i * ldo + n + r] = s;
      }
    }
  }
  if (n < n1) rows_avx2<W, M, 1>(x, K, w, ldw, n, n1, sums, ldo);
}

// One row of x: each weight row read as one stream, 32 values a step into
// four sums. From DRAM (a 256 MiB int8 weight, 2 threads, this AMD EPYC) it
// took 20-23 ms against 23-28 for the 4-row tiles below, which read 4 streams.
template <class W>
__attribute__((target("avx2,fma,f16c"))) void row_avx2(const float* x, int64_t K, const W* w,
                                                       int64_t ldw, int64_t n0, int64_t n1,
                                                       float* sums) {
  for (int64_t n = n0; n < n1; ++n) {
    const W* wn = w + n * ldw;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), widen8(wn + k), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8), widen8(wn + k + 8), a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 16), widen8(wn + k + 16), a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 24), widen8(wn + k + 24), a3);
    }
    for (; k + 8 <= K; k += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), widen8(wn + k), a0);
    float s = lane_sum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; k < K; ++k) s += x[k] * widen(wn[k]);
    sums[n] = s;
  }
}

template <class W, int M>
void rows_avx2_m(const float* x, int64_t K, const W* w, int64_t ldw, int64_t n0, int64_t n1,
                 float* sums, int64_t ldo) {
  if constexpr (M == 1) return row_avx2<W>(x, K, w, ldw, n0, n1, sums);
  constexpr int NR = M <= 2 ? 4 : M <= 4 ? 2 : 1;
  rows_avx2<W, M, NR>(x, K, w, ldw, n0, n1, sums, ldo);
}
#endif

template <class W>
using Rows = void (*)(const float*, int64_t, const W*, int64_t, int64_t, int64_t, float*, int64_t);

template <class W>
Rows<W> pick(int64_t M) {
  static constexpr Rows<W> portable[kMaxFewRows] = {
      rows_portable<W, 1>, rows_portable<W, 2>, rows_portable<W, 3>, rows_portable<W, 4>,
      rows_portable<W, 5>, rows_portable<W, 6>, rows_portable<W, 7>, rows_portable<W, 8>};
#ifdef AOTRT_GEMV_AVX2
  static constexpr Rows<W> avx2[kMaxFewRows] = {
      rows_avx2_m<W, 1>, rows_avx2_m<W, 2>, rows_avx2_m<W, 3>, rows_avx2_m<W, 4>,
      rows_avx2_m<W, 5>, rows_avx2_m<W, 6>, rows_avx2_m<W, 7>, rows_avx2_m<W, 8>};
  if (avx2_kernels()) return avx2[M - 1];  // Note [Hand-written AVX2 kernels]
#endif
  return portable[M - 1];
}

template <class W>
void run(const float* x, int64_t M, int64_t K, const W* w, int64_t ldw, int64_t N, float* sums,
         int64_t ldo) {
  const Rows<W> rows = pick<W>(M);
  const int64_t tiles = (N + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (tiles > 1 && M * N * K > 65536)
  for (int64_t t = 0; t < tiles; ++t) {
    rows(x, K, w, ldw, t * kTile, std::min(N, (t + 1) * kTile), sums, ldo);
  }
}

}  // namespace

void few_rows_product(const float* x, int64_t M, int64_t K, const void* w, ScalarType wdtype,
                      int64_t ldw, int64_t N, float* sums, int64_t ldo) {
  AOTRT_CHECK(M >= 1 && M <= kMaxFewRows, kInternal, "few_rows_product: M = ", M);
  switch (wdtype) {
    case ScalarType::Int8:
      return run(x, M, K, static_cast<const int8_t*>(w), ldw, N, sums, ldo);
    case ScalarType::BFloat16:
      return run(x, M, K, static_cast<const BFloat16*>(w), ldw, N, sums, ldo);
    case ScalarType::Float16:
      return run(x, M, K, static_cast<const Half*>(w), ldw, N, sums, ldo);
    default:
      AOTRT_FAIL(kInternal, "few_rows_product: weight dtype ", dtype_name(wdtype));
  }
}

}  // namespace aotrt::cpu
