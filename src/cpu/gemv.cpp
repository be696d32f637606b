// Note [Few-row products] in cpu/gemv.h.
#include "cpu/gemv.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

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
void rows_portable(const float* x, const float*, int64_t K, const W* w, int64_t ldw, int64_t n0,
                   int64_t n1, float* sums, int64_t ldo) {
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

// Prefetch of the weight line one tile of rows ahead at the same offset: the
// line this thread reads next after the tile (static schedule), into L2.
template <class W>
__attribute__((target("avx2,fma,f16c"))) inline void prefetch_next_tile(const W* p, int64_t ahead) {
  const auto at = reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(ahead) * sizeof(W);
  _mm_prefetch(reinterpret_cast<const char*>(at), _MM_HINT_T1);  // never faults, even past the end
}

// NR weight rows at a time against M >= 2 rows of x, K in blocks of KC: M *
// NR sums of 8 lanes (at most 8 of the 16 ymm registers), each widened weight
// vector used M times, x packed (pack_rows) so that a block's M rows lie in
// one run of at most 16 KiB that stays in L1. (Unblocked, M = 8 rows of x
// are 64 KiB for K = 2048, past L1; blocked but unpacked, rows 8 KiB apart
// share L1 sets: neither gained, measured.) The tile's partial sums stay as
// vectors in `part` between blocks. Unrolled whole: sums in registers.
template <class W, int M, int NR>
__attribute__((target("avx2,fma,f16c"))) inline void rows_block_avx2(
    const float* xp, const W* wn, int64_t ldw, int64_t k0, int64_t k1, int64_t ahead,
    __m256 (*part)[M]) {
  constexpr int64_t kLine = 64 / sizeof(W);
  __m256 acc[M][NR];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) acc[i][r] = k0 == 0 ? _mm256_setzero_ps() : part[r][i];
  }
  const float* xk = xp + k0 * M;
  for (int64_t k = k0; k + 8 <= k1; k += 8, xk += 8 * M) {
    if (k % kLine == 0) {
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) prefetch_next_tile(wn + r * ldw + k, ahead);
    }
    __m256 wv[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) wv[r] = widen8(wn + r * ldw + k);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const __m256 xv = _mm256_load_ps(xk + 8 * i);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_fmadd_ps(xv, wv[r], acc[i][r]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) part[r][i] = acc[i][r];
  }
}

template <class W, int M>
__attribute__((target("avx2,fma,f16c"))) void rows_avx2(const float* x, const float* xp, int64_t K,
                                                        const W* w, int64_t ldw, int64_t n0,
                                                        int64_t n1, float* sums, int64_t ldo) {
  constexpr int NR = M <= 2 ? 4 : M <= 4 ? 2 : 1;
  constexpr int64_t KC = std::max<int64_t>(64, 4096 / M / 64 * 64);  // M * KC floats: 16 KiB
  alignas(32) __m256 part[kTile][M];
  const int64_t ahead = (n1 - n0) * ldw, K8 = K / 8 * 8;
  for (int64_t k0 = 0; k0 < K8; k0 += KC) {
    const int64_t k1 = std::min(K8, k0 + KC);
    int64_t n = n0;
    for (; n + NR <= n1; n += NR) rows_block_avx2<W, M, NR>(xp, w + n * ldw, ldw, k0, k1, ahead, part + (n - n0));
    for (; n < n1; ++n) rows_block_avx2<W, M, 1>(xp, w + n * ldw, ldw, k0, k1, ahead, part + (n - n0));
  }
  for (int64_t n = n0; n < n1; ++n) {
    const W* wn = w + n * ldw;
    for (int i = 0; i < M; ++i) {
      float s = K8 > 0 ? lane_sum(part[n - n0][i]) : 0.0f;
      for (int64_t p = K8; p < K; ++p) s += x[i * K + p] * widen(wn[p]);
      sums[i * ldo + n] = s;
    }
  }
}

// One row of x: each weight row read as one stream, 64 bytes a step into four
// sums, the next tile's lines prefetched. From DRAM (a 256 MiB int8 weight, 2
// threads, this AMD EPYC) one stream took 20-23 ms against 23-28 for 4-row
// tiles, which read 4 streams.
template <class W>
__attribute__((target("avx2,fma,f16c"))) void row_avx2(const float* x, const float*, int64_t K,
                                                       const W* w, int64_t ldw, int64_t n0,
                                                       int64_t n1, float* sums, int64_t) {
  constexpr int64_t kStep = 64 / sizeof(W);  // one cache line of weights
  const int64_t ahead = (n1 - n0) * ldw;
  for (int64_t n = n0; n < n1; ++n) {
    const W* wn = w + n * ldw;
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t k = 0;
    for (; k + kStep <= K; k += kStep) {
      prefetch_next_tile(wn + k, ahead);
#pragma GCC unroll 8
      for (int v = 0; v < kStep / 8; ++v) {
        a[v % 4] = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8 * v), widen8(wn + k + 8 * v), a[v % 4]);
      }
    }
    for (; k + 8 <= K; k += 8) a[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), widen8(wn + k), a[0]);
    float s = lane_sum(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
    for (; k < K; ++k) s += x[k] * widen(wn[k]);
    sums[n] = s;
  }
}

template <class W, int M>
void rows_avx2_m(const float* x, const float* xp, int64_t K, const W* w, int64_t ldw, int64_t n0,
                 int64_t n1, float* sums, int64_t ldo) {
  if constexpr (M == 1) {
    row_avx2<W>(x, xp, K, w, ldw, n0, n1, sums, ldo);
  } else {
    rows_avx2<W, M>(x, xp, K, w, ldw, n0, n1, sums, ldo);
  }
}
#endif

template <class W>
using Rows = void (*)(const float*, const float*, int64_t, const W*, int64_t, int64_t, int64_t,
                      float*, int64_t);

// The kernel for M rows, and whether it reads x packed (pack_rows).
template <class W>
std::pair<Rows<W>, bool> pick(int64_t M) {
  static constexpr Rows<W> portable[kMaxFewRows] = {
      rows_portable<W, 1>, rows_portable<W, 2>, rows_portable<W, 3>, rows_portable<W, 4>,
      rows_portable<W, 5>, rows_portable<W, 6>, rows_portable<W, 7>, rows_portable<W, 8>};
#ifdef AOTRT_GEMV_AVX2
  static constexpr Rows<W> avx2[kMaxFewRows] = {
      rows_avx2_m<W, 1>, rows_avx2_m<W, 2>, rows_avx2_m<W, 3>, rows_avx2_m<W, 4>,
      rows_avx2_m<W, 5>, rows_avx2_m<W, 6>, rows_avx2_m<W, 7>, rows_avx2_m<W, 8>};
  if (avx2_kernels()) return {avx2[M - 1], M > 1};  // Note [Hand-written AVX2 kernels]
#endif
  return {portable[M - 1], false};
}

// x [M, K] as xp[(k / 8) * M * 8 + i * 8 + l] = x[i * K + k + l] for k < K / 8 * 8:
// the 8 values of each row at one k step next to each other, 64-byte aligned.
const float* pack_rows(const float* x, int64_t M, int64_t K, std::vector<float>& buf) {
  const int64_t K8 = K / 8 * 8;
  buf.resize(static_cast<size_t>(M * K8 + 16));
  const auto addr = reinterpret_cast<uintptr_t>(buf.data());
  float* xp = buf.data() + ((64 - addr % 64) % 64) / sizeof(float);
  for (int64_t k = 0; k < K8; k += 8) {
    for (int64_t i = 0; i < M; ++i) std::memcpy(xp + k * M + i * 8, x + i * K + k, 8 * sizeof(float));
  }
  return xp;
}

template <class W>
void run(const float* x, int64_t M, int64_t K, const W* w, int64_t ldw, int64_t N, float* sums,
         int64_t ldo) {
  const std::pair<Rows<W>, bool> kernel = pick<W>(M);  // no structured binding: clang 14's OpenMP
  const Rows<W> rows = kernel.first;
  // The calling thread's packing buffer, kept between calls: it only grows, so a decode loop
  // allocates once instead of mapping and unmapping M * K floats every call.
  thread_local std::vector<float> buf;
  const float* xp = kernel.second ? pack_rows(x, M, K, buf) : nullptr;
  const int64_t tiles = (N + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (tiles > 1 && M * N * K > 65536)
  for (int64_t t = 0; t < tiles; ++t) {
    rows(x, xp, K, w, ldw, t * kTile, std::min(N, (t + 1) * kTile), sums, ldo);
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
