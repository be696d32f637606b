#include "cpu/sdpa.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
// libsleef's dispatcher for 4 floats (declared here: the build finds the
// library but not necessarily its header).
extern "C" __m128 Sleef_expf4_u10(__m128);
#endif

#include <algorithm>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <span>
#include <optional>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/view.h"
#include "cpu/cpu.h"
#include "cpu/elements.h"
#include "cpu/isa.h"

namespace aotrt::cpu {
namespace {

// A dense float32 (or float64) copy of any view, read through cpu::copy_strided.
template <typename T>
std::vector<T> dense_copy(const TensorImpl& t, std::span<const int64_t> as_sizes,
                          std::span<const int64_t> as_strides) {
  std::vector<T> out(static_cast<size_t>(t.numel() == 0 ? 0 : std::accumulate(
      as_sizes.begin(), as_sizes.end(), int64_t{1}, std::multiplies<>())));
  if (out.empty()) return out;
  const std::vector<int64_t> dense = contiguous_strides(as_sizes);
  const ScalarType dt = std::is_same_v<T, double> ? ScalarType::Float64 : ScalarType::Float32;
  StridedView dst{reinterpret_cast<char*>(out.data()), as_sizes, dense, dt, cpu_device()};
  StridedView src{static_cast<char*>(t.data_ptr()), as_sizes, as_strides, t.dtype(), t.device()};
  copy_strided(dst, src);
  return out;
}

// Strides that read `t` as if broadcast to `sizes` (stride 0 where t has 1).
std::vector<int64_t> broadcast_to(const TensorImpl& t, std::span<const int64_t> sizes,
                                  const char* what) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  AOTRT_CHECK(t.dim() <= nd, kInvalidArgument, what, ": attn_mask of ", t.dim(),
              " dims cannot broadcast to ", nd, " dims");
  std::vector<int64_t> strides(nd, 0);
  for (int64_t i = 0; i < t.dim(); ++i) {
    const int64_t sd = t.dim() - 1 - i, dd = nd - 1 - i;
    if (t.sizes()[sd] == sizes[dd]) {
      strides[dd] = t.strides()[sd];
    } else {
      AOTRT_CHECK(t.sizes()[sd] == 1, kInvalidArgument, what, ": attn_mask size ",
                  t.sizes()[sd], " at dim ", sd, " does not broadcast to ", sizes[dd]);
    }
  }
  return strides;
}

// Dense strides laying dims out in the order of `like`'s strides (largest
// first; ties keep dim order), as ATen's CPU flash attention lays its output.
std::vector<int64_t> strides_in_order_of(std::span<const int64_t> sizes,
                                         std::span<const int64_t> like) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return like[a] > like[b]; });
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[order[i]] = running;
    running = checked_mul(running, std::max<int64_t>(sizes[order[i]], 1), "attention output strides");
  }
  return strides;
}

// Note [A row that sees no key]
// A query row whose every key is masked (-inf in the additive mask: a padded row) has
// no softmax. ATen's CPU flash attention, since torch 2.5 (as the math path's
// _safe_softmax), gives it a zero output row and a zero logsumexp; checked with torch 2.13
// in float32, bfloat16 and float64, at decode and prefill lengths
// (tests/unit/ops/reference_cpusdpa.inc, decode_bf16_q4_a_row_sees_no_key). All three
// paths below do the same. (No keys at all, Lk = 0, stays NaN: ATen's kernel divides by
// zero there.)

// Note [Attention loop order]
// float64 attention (float32 goes through gemms: Note [Attention through
// gemm]). Keys come transposed (kt: [B*H, E, Lk]) so that the scores of one
// query row are independent sums over e, built up in e order: the same
// operations in the same order as one dot product per key, so the same
// rounding, but with no chain of dependent adds through one accumulator.
// Scores, and the output sums over keys, are made kBlock at a time in
// accumulators the compiler can keep in registers (sum_rows).
constexpr int64_t kBlock = 16;

// out[0..n) = sum over t < count of x[t] * rows[t * stride + 0..n), added in
// t order, each product rounded before it is added (no fused multiply-add):
// a dot product's operations, for n <= kBlock columns at once. Terms whose x
// is zero are left out when skip_zero_x.
template <typename T>
void sum_rows(T* out, int64_t n, const T* x, const T* rows, int64_t stride, int64_t count,
              bool skip_zero_x) {
  T acc[kBlock] = {};
  for (int64_t t = 0; t < count; ++t) {
    if (skip_zero_x && x[t] == T(0)) continue;
    const T* row = rows + t * stride;
    for (int64_t j = 0; j < n; ++j) acc[j] += x[t] * row[j];
  }
  std::copy(acc, acc + n, out);
}

// sc[j] = exp(sc[j] - max) for j < n; returns their sum, added in j order.
// float32 takes four at a time from Sleef (1.0 ULP, as ATen's vectorized
// kernels do; aotrt links libsleef for model kernels anyway): a libm call
// per weight was the largest cost of a small attention.
template <typename T>
T exp_weights(T* sc, int64_t n, T max) {
  int64_t j = 0;
#if defined(__x86_64__) && defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    const __m128 m = _mm_set1_ps(max);
    for (; j + 4 <= n; j += 4) {
      _mm_storeu_ps(sc + j, Sleef_expf4_u10(_mm_sub_ps(_mm_loadu_ps(sc + j), m)));
    }
  }
#endif
  for (; j < n; ++j) sc[j] = std::exp(sc[j] - max);
  T sum = 0;
  for (j = 0; j < n; ++j) sum += sc[j];
  return sum;
}

// Query head h reads key/value head h / group (GQA: H = Hk * group).
template <typename T>
void attend(const std::vector<T>& q, const std::vector<T>& kt, const std::vector<T>& v,
            const std::vector<T>* mask, int64_t B, int64_t H, int64_t group, int64_t Lq,
            int64_t Lk, int64_t E, int64_t Ev, bool causal, T scale, std::vector<T>& out,
            std::vector<T>& lse) {
  const int64_t rows = B * H * Lq;
#pragma omp parallel
  {
    std::vector<T> scores(static_cast<size_t>(Lk));  // one per thread, not per row
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r % Lq, bh = r / Lq;
      const int64_t bhk = bh / H * (H / group) + bh % H / group;  // (b, h / group)
      const T* qi = q.data() + r * E;
      const T* ktb = kt.data() + bhk * E * Lk;
      const T* vb = v.data() + bhk * Lk * Ev;
      const T* mi = mask ? mask->data() + r * Lk : nullptr;
      T* sc = scores.data();
      for (int64_t j0 = 0; j0 < Lk; j0 += kBlock) {
        sum_rows(sc + j0, std::min(kBlock, Lk - j0), qi, ktb + j0, Lk, E, false);
      }
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < Lk; ++j) {
        const T s = causal && j > i ? -std::numeric_limits<T>::infinity()
                                    : sc[j] * scale + (mi ? mi[j] : T(0));
        sc[j] = s;
        max = std::max(max, s);
      }
      T* oi = out.data() + r * Ev;
      if (max == -std::numeric_limits<T>::infinity()) {  // Note [A row that sees no key]
        std::fill(oi, oi + Ev, T(0));
        lse[r] = T(0);
        continue;
      }
      const T sum = exp_weights(sc, Lk, max);  // sc holds the weights from here on
      for (int64_t e0 = 0; e0 < Ev; e0 += kBlock) {
        const int64_t n = std::min(kBlock, Ev - e0);
        sum_rows(oi + e0, n, sc, vb + e0, Ev, Lk, true);
        for (int64_t e = 0; e < n; ++e) oi[e0 + e] /= sum;
      }
      lse[r] = max + std::log(sum);
    }
  }
}

// Note [Attention through gemm]
// float32 (and float16/bfloat16, computed in float32) attention runs as two
// gemms a block of query rows: scores S = scale * Q K^T, then the softmax's
// weights P = exp(S - max) row by row, then O = P V / sum. The gemm library
// (Note [CPU gemm library]) sums in its own blocked order with fused
// multiply-adds, so the rounding is a gemm's, like ATen's own CPU flash
// attention (which also runs gemms on blocks), not one dot product per key's
// (Note [Attention loop order], kept for float64). With is_causal the keys
// past a block's last row are all masked and left out of both gemms. The
// encoder of bench/results/cpu-freezing-2026-12-01.md (8 x 8 heads of
// 128 x 64) spent 54 ms in attention, 2.5 GFLOP/s, with the loop.
constexpr int64_t kQueryBlock = 64;

// A [B, H, rows, cols] float32 operand as the gemms read it: matrix (b, h)
// starts at data + b * batch + h * head, rows `ld` elements apart, columns
// adjacent. A view with unit column stride is read in place; any other is
// packed first (`owned`).
struct HeadMatrices {
  float* data = nullptr;
  int64_t batch = 0, head = 0, ld = 0;
  std::vector<float> owned;

  float* at(int64_t b, int64_t h) const { return data + b * batch + h * head; }
};

HeadMatrices head_matrices(const TensorImpl& t) {
  HeadMatrices m;
  const auto st = t.strides();
  if (t.dtype() == ScalarType::Float32 && st[3] == 1 && st[2] >= t.sizes()[3] && st[0] >= 0 && st[1] >= 0) {
    m.data = static_cast<float*>(t.data_ptr());
    m.batch = st[0];
    m.head = st[1];
    m.ld = st[2];
    return m;
  }
  m.owned = dense_copy<float>(t, t.sizes(), t.strides());
  m.data = m.owned.data();
  m.ld = t.sizes()[3];
  m.head = t.sizes()[2] * m.ld;
  m.batch = t.sizes()[1] * m.head;
  return m;
}

// The additive mask, read through its broadcast strides where it is float32
// (a [Lq, Lk] mask is not spread over every batch and head), else packed.
struct MaskRows {
  const float* data = nullptr;
  std::array<int64_t, 4> strides{};  // [B, H, Lq, Lk], 0 where broadcast
  std::vector<float> owned;
};

MaskRows mask_rows(const TensorImpl& mask, std::span<const int64_t> sizes, const char* what) {
  MaskRows m;
  const std::vector<int64_t> st = broadcast_to(mask, sizes, what);
  if (mask.dtype() == ScalarType::Float32) {
    m.data = static_cast<const float*>(mask.data_ptr());
    std::copy(st.begin(), st.end(), m.strides.begin());
    return m;
  }
  m.owned = dense_copy<float>(mask, sizes, st);
  m.data = m.owned.data();
  const std::vector<int64_t> dense = contiguous_strides(sizes);
  std::copy(dense.begin(), dense.end(), m.strides.begin());
  return m;
}

void attend_gemm(const HeadMatrices& q, const HeadMatrices& k, const HeadMatrices& v, const MaskRows* mask,
                 const HeadMatrices& out, int64_t B, int64_t H, int64_t group, int64_t Lq, int64_t Lk,
                 int64_t E, int64_t Ev, bool causal, float scale, std::vector<float>& lse,
                 const char* fn) {
  const int64_t blocks = (Lq + kQueryBlock - 1) / kQueryBlock;
  const float inf = std::numeric_limits<float>::infinity();
#pragma omp parallel
  {
    std::vector<float> scores(static_cast<size_t>(kQueryBlock * Lk));  // one per thread
    std::vector<float> sums(static_cast<size_t>(kQueryBlock));
#pragma omp for schedule(static)
    for (int64_t u = 0; u < B * H * blocks; ++u) {
      const int64_t bh = u / blocks, b = bh / H, h = bh % H, i0 = (u % blocks) * kQueryBlock;
      const int64_t rows = std::min(kQueryBlock, Lq - i0);
      // Causal: row i sees keys j <= i, so this block sees keys below i0 + rows.
      const int64_t keys = causal ? std::min(Lk, i0 + rows) : Lk;
      const float* qb = q.at(b, h) + i0 * q.ld;
      float* ob = out.at(b, h) + i0 * out.ld;
      float* sc = scores.data();
      if (keys == 0) {
        for (int64_t r = 0; r < rows; ++r) {
          std::fill(ob + r * out.ld, ob + r * out.ld + Ev, std::numeric_limits<float>::quiet_NaN());
          lse[bh * Lq + i0 + r] = -inf;
        }
        continue;
      }
      sgemm_row_major(false, true, rows, keys, E, scale, qb, q.ld, k.at(b, h / group), k.ld, 0.0f, sc,
                      keys, fn);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        float* row = sc + r * keys;
        const float* mi = mask ? mask->data + b * mask->strides[0] + h * mask->strides[1] + i * mask->strides[2]
                               : nullptr;
        const int64_t mj = mask ? mask->strides[3] : 0;
        float max = -inf;
        for (int64_t j = 0; j < keys; ++j) {
          const float x = causal && j > i ? -inf : row[j] + (mi ? mi[j * mj] : 0.0f);
          row[j] = x;
          max = std::max(max, x);
        }
        if (max == -inf) {  // Note [A row that sees no key]: weights 0, output row 0
          std::fill(row, row + keys, 0.0f);
          sums[static_cast<size_t>(r)] = 1.0f;
          lse[bh * Lq + i] = 0.0f;
          continue;
        }
        const float sum = exp_weights(row, keys, max);
        sums[static_cast<size_t>(r)] = sum;
        lse[bh * Lq + i] = max + std::log(sum);
      }
      sgemm_row_major(false, false, rows, Ev, keys, 1.0f, sc, keys, v.at(b, h / group), v.ld, 0.0f, ob,
                      out.ld, fn);
      for (int64_t r = 0; r < rows; ++r) {
        const float inv = 1.0f / sums[static_cast<size_t>(r)];
        float* o = ob + r * out.ld;
        for (int64_t e = 0; e < Ev; ++e) o[e] *= inv;
      }
    }
  }
}

// Note [Attention at decode]
// A decode step asks for a few query rows (Lq <= kDecodeRows) against a long
// key/value cache, usually bfloat16, with GQA. The gemm path (Note [Attention
// through gemm]) converted the whole cache to float32 copies first and ran two
// thin gemms per query head (15.7 ms a call for the 1B LLaMA shape at cache
// 1024, 2 threads). Here each (batch, key/value head) is one task: its group
// of query heads times Lq rows is scored against each key row as it is read
// (bfloat16/float16 widened to float32 in registers, one row at a time, no
// copy of the cache), so the cache is read once per key/value head; the
// softmax runs on the rows of scores, then each value row, read once, is
// added into every row's float32 output. Tasks are split over threads. The
// sums are float32 with fused multiply-adds in 8 lanes (AVX2) or in a loop,
// not a gemm's order, so results agree with ATen's to float32 rounding before
// the output's one rounding to its dtype. Keys past the last one the mask leaves
// visible to some row (a static cache past the current position) are not read at
// all: for the 1B LLaMA shape at position 32 of a 1024-key bfloat16 cache, 0.22-0.26
// ms a call against 0.75-0.81 reading the whole cache (2 threads, this 2-core AVX2
// machine, `aotrt bench` of the int4 decode package, paired runs).
constexpr int64_t kDecodeRows = 8;

struct DecodeCall {
  const char *q, *k, *v, *mask;
  int64_t qs[4], ks[4], vs[4], ms[4], os[4];  // strides in elements; ms 0 where broadcast
  ScalarType dtype, mask_dtype;
  char* out;
  float* lse;  // [B, H, Lq] dense
  int64_t B, H, group, Lq, Lk, E, Ev;
  bool causal;
  float scale;
};

void store_from_float(char* p, int64_t i, ScalarType dt, float v) {
  switch (dt) {
    case ScalarType::BFloat16: reinterpret_cast<uint16_t*>(p)[i] = float_to_bfloat16(v); break;
    case ScalarType::Float16: reinterpret_cast<uint16_t*>(p)[i] = float_to_half(v); break;
    default: reinterpret_cast<float*>(p)[i] = v;
  }
}

// The per-row kernels: row (n values of dtype, unit stride) widened to float32.
void widen_portable(const char* row, int64_t n, ScalarType dt, float* out) {
  for (int64_t e = 0; e < n; ++e) out[e] = load_float_element(row, e, dt);
}
float dot_portable(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(a[e + l], b[e + l], acc[l]);
  }
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; e < n; ++e) s = std::fma(a[e], b[e], s);
  return s;
}
void axpy_portable(float* y, float a, const float* x, int64_t n) {
  for (int64_t e = 0; e < n; ++e) y[e] = std::fma(a, x[e], y[e]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AOTRT_SDPA_AVX2 1
__attribute__((target("avx2,fma,f16c"))) void widen_avx2(const char* row, int64_t n,
                                                         ScalarType dt, float* out) {
  int64_t e = 0;
  if (dt == ScalarType::BFloat16) {
    for (; e + 8 <= n; e += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row) + e / 8);
      _mm256_storeu_ps(out + e,
                       _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
    }
  } else if (dt == ScalarType::Float16) {
    for (; e + 8 <= n; e += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row) + e / 8);
      _mm256_storeu_ps(out + e, _mm256_cvtph_ps(h));
    }
  }
  for (; e < n; ++e) out[e] = load_float_element(row, e, dt);
}
__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + e), _mm256_loadu_ps(b + e), acc);
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  float s = _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
  for (; e < n; ++e) s = std::fma(a[e], b[e], s);
  return s;
}
__attribute__((target("avx2,fma"))) void axpy_avx2(float* y, float a, const float* x, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    _mm256_storeu_ps(y + e, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + e), _mm256_loadu_ps(y + e)));
  }
  for (; e < n; ++e) y[e] = std::fma(a, x[e], y[e]);
}
#endif

struct RowKernels {
  void (*widen)(const char*, int64_t, ScalarType, float*);
  float (*dot)(const float*, const float*, int64_t);
  void (*axpy)(float*, float, const float*, int64_t);
};

RowKernels row_kernels() {
#ifdef AOTRT_SDPA_AVX2
  if (avx2_kernels()) return {widen_avx2, dot_avx2, axpy_avx2};  // Note [Hand-written AVX2 kernels]
#endif
  return {widen_portable, dot_portable, axpy_portable};
}

// One (batch, key/value head) task of Note [Attention at decode]. Buffers:
// qf [R, E], sc [R, Lk], of [R, Ev], row [max(E, Ev)], sums [R], R = group * Lq.
void attend_decode_task(const DecodeCall& c, const RowKernels& rk, int64_t b, int64_t hk,
                        float* qf, float* sc, float* of, float* row, float* sums) {
  const int64_t R = c.group * c.Lq, esz = element_size(c.dtype);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < R; ++r) {
    const int64_t h = hk * c.group + r / c.Lq, i = r % c.Lq;
    for (int64_t e = 0; e < c.E; ++e) {
      qf[r * c.E + e] = load_float_element(c.q, b * c.qs[0] + h * c.qs[1] + i * c.qs[2] + e * c.qs[3], c.dtype);
    }
  }
  // Causal (upper-left): row i sees keys j <= i. Keys past the last one that some row's
  // mask leaves above -inf (a static cache past the current position) get weight
  // exp(-inf) = 0 in every row, whatever their scores: they are left out of every loop, and
  // their key and value rows are not read. (A NaN or inf there, which would make eager's
  // row NaN, is not read either.)
  int64_t keys = c.causal ? std::min(c.Lk, c.Lq) : c.Lk;
  if (c.mask != nullptr) {
    const int64_t msz = element_size(c.mask_dtype);
    const auto hidden = [&](int64_t j) {
      for (int64_t r = 0; r < R; ++r) {
        const int64_t h = hk * c.group + r / c.Lq, i = r % c.Lq;
        const int64_t at = (b * c.ms[0] + h * c.ms[1] + i * c.ms[2] + j * c.ms[3]) * msz;
        if (load_float_element(c.mask + at, 0, c.mask_dtype) != -inf) return false;
      }
      return true;
    };
    while (keys > 0 && hidden(keys - 1)) --keys;
  }
  for (int64_t j = 0; j < keys; ++j) {
    rk.widen(c.k + (b * c.ks[0] + hk * c.ks[1] + j * c.ks[2]) * esz, c.E, c.dtype, row);
    for (int64_t r = 0; r < R; ++r) sc[r * c.Lk + j] = rk.dot(qf + r * c.E, row, c.E);
  }
  std::fill(of, of + R * c.Ev, 0.0f);
  for (int64_t r = 0; r < R; ++r) {
    const int64_t h = hk * c.group + r / c.Lq, i = r % c.Lq;
    float* s = sc + r * c.Lk;
    const char* mrow = c.mask ? c.mask + (b * c.ms[0] + h * c.ms[1] + i * c.ms[2]) * element_size(c.mask_dtype)
                              : nullptr;
    float max = -inf;
    for (int64_t j = 0; j < keys; ++j) {
      const float x = c.causal && j > i ? -inf
                                        : s[j] * c.scale + (mrow ? load_float_element(mrow, j * c.ms[3], c.mask_dtype) : 0.0f);
      s[j] = x;
      max = std::max(max, x);
    }
    float& lse = c.lse[(b * c.H + h) * c.Lq + i];
    if (max == -inf) {  // Note [A row that sees no key]: weights 0, output row 0
      std::fill(s, s + keys, 0.0f);
      sums[r] = 1.0f;
      lse = 0.0f;
      continue;
    }
    sums[r] = exp_weights(s, keys, max);
    lse = max + std::log(sums[r]);
  }
  for (int64_t j = 0; j < keys; ++j) {
    rk.widen(c.v + (b * c.vs[0] + hk * c.vs[1] + j * c.vs[2]) * esz, c.Ev, c.dtype, row);
    for (int64_t r = 0; r < R; ++r) {
      const float p = sc[r * c.Lk + j];
      if (p != 0.0f) rk.axpy(of + r * c.Ev, p, row, c.Ev);
    }
  }
  for (int64_t r = 0; r < R; ++r) {
    const int64_t h = hk * c.group + r / c.Lq, i = r % c.Lq;
    const float inv = 1.0f / sums[r];
    for (int64_t e = 0; e < c.Ev; ++e) {
      store_from_float(c.out, b * c.os[0] + h * c.os[1] + i * c.os[2] + e * c.os[3], c.dtype,
                       of[r * c.Ev + e] * inv);
    }
  }
}

void attend_decode(const DecodeCall& c) {
  const RowKernels rk = row_kernels();
  const int64_t Hk = c.H / c.group, R = c.group * c.Lq, tasks = c.B * Hk;
#pragma omp parallel if (tasks > 1 && R * c.Lk * (c.E + c.Ev) > 65536)
  {
    std::vector<float> qf(static_cast<size_t>(R * c.E)), sc(static_cast<size_t>(R * c.Lk)),
        of(static_cast<size_t>(R * c.Ev)), row(static_cast<size_t>(std::max(c.E, c.Ev))),
        sums(static_cast<size_t>(R));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      attend_decode_task(c, rk, t / Hk, t % Hk, qf.data(), sc.data(), of.data(), row.data(),
                         sums.data());
    }
  }
}

}  // namespace

SdpaResult scaled_dot_product_attention(const TensorImpl& q, const TensorImpl& k,
                                        const TensorImpl& v, const TensorImpl* mask,
                                        bool is_causal, std::optional<double> scale,
                                        const char* what) {
  AOTRT_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, kUnsupported, what,
              ": query, key and value must be 4-d [batch, heads, length, embed]; got ",
              q.dim(), ", ", k.dim(), ", ", v.dim(), " dims");
  AOTRT_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), kInvalidArgument, what,
              ": query, key and value must have one dtype");
  AOTRT_CHECK(is_floating(q.dtype()) && element_size(q.dtype()) >= 2, kUnsupported, what,
              ": dtype ", dtype_name(q.dtype()), " is not served");
  const int64_t B = q.sizes()[0], H = q.sizes()[1], Lq = q.sizes()[2], E = q.sizes()[3];
  const int64_t Hk = k.sizes()[1], Lk = k.sizes()[2], Ev = v.sizes()[3];
  // Key/value may have fewer heads than the query (GQA, as SDPA's enable_gqa
  // passes them): query head h reads key/value head h / (H / Hk), as ATen's.
  AOTRT_CHECK(k.sizes()[0] == B && v.sizes()[0] == B && v.sizes()[1] == Hk &&
                  k.sizes()[3] == E && v.sizes()[2] == Lk && Hk > 0 && H % Hk == 0,
              kInvalidArgument, what,
              ": query, key and value shapes do not agree (key/value heads must divide the "
              "query's)");
  const int64_t group = H / Hk;
  if (mask != nullptr) {
    AOTRT_CHECK(mask->dtype() == q.dtype(), kUnsupported, what,
                ": attn_mask must have the query's dtype (an additive mask), as ATen's "
                "CPU flash attention requires");
  }
  const std::vector<int64_t> out_sizes = {B, H, Lq, Ev};
  const std::vector<int64_t> out_strides = strides_in_order_of(out_sizes, q.strides());
  SdpaResult result;
  result.output = empty_strided(out_sizes, out_strides, q.dtype(), cpu_device(), what);
  // logsumexp in the accumulation dtype, as ATen's: float64 for float64, else float32.
  const ScalarType lse_dtype = q.dtype() == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
  const std::vector<int64_t> lse_sizes = {B, H, Lq}, lse_strides = {Lq * H, 1, H};
  result.logsumexp = empty_strided(lse_sizes, lse_strides, lse_dtype, cpu_device(), what);
  if (B * H * Lq == 0 || Ev == 0) return result;

  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(E)));
  const std::vector<int64_t> mask_sizes = {B, H, Lq, Lk};
  const float fscale = static_cast<float>(s);
  if (q.dtype() != ScalarType::Float64 && Lq <= kDecodeRows && k.strides()[3] == 1 &&
      v.strides()[3] == 1) {  // Note [Attention at decode]
    DecodeCall c{};
    c.q = static_cast<const char*>(q.data_ptr());
    c.k = static_cast<const char*>(k.data_ptr());
    c.v = static_cast<const char*>(v.data_ptr());
    c.dtype = q.dtype();
    std::copy_n(q.strides().begin(), 4, c.qs);
    std::copy_n(k.strides().begin(), 4, c.ks);
    std::copy_n(v.strides().begin(), 4, c.vs);
    std::copy_n(result.output->strides().begin(), 4, c.os);
    if (mask != nullptr) {
      c.mask = static_cast<const char*>(mask->data_ptr());
      c.mask_dtype = mask->dtype();
      const std::vector<int64_t> ms = broadcast_to(*mask, mask_sizes, what);
      std::copy_n(ms.begin(), 4, c.ms);
    }
    c.out = static_cast<char*>(result.output->data_ptr());
    std::vector<float> lse(static_cast<size_t>(B * H * Lq));
    c.lse = lse.data();
    c.B = B, c.H = H, c.group = group, c.Lq = Lq, c.Lk = Lk, c.E = E, c.Ev = Ev;
    c.causal = is_causal;
    c.scale = fscale;
    attend_decode(c);
    copy_strided(strided_view(*result.logsumexp),
                 StridedView{reinterpret_cast<char*>(lse.data()), lse_sizes, contiguous_strides(lse_sizes),
                             ScalarType::Float32, cpu_device()});
    return result;
  }
  if (q.dtype() != ScalarType::Float64) {  // Note [Attention through gemm]
    // float32 views are read, and a float32 output with unit column stride
    // written, in place; float16/bfloat16 go through float32 copies.
    const HeadMatrices qm = head_matrices(q), km = head_matrices(k), vm = head_matrices(v);
    std::optional<MaskRows> mm;
    if (mask != nullptr) mm = mask_rows(*mask, mask_sizes, what);
    TensorImpl& o = *result.output;
    const bool in_place = o.dtype() == ScalarType::Float32 && o.strides()[3] == 1 && o.strides()[2] >= Ev;
    HeadMatrices om;
    std::vector<float> dense_out;
    if (in_place) {
      om.data = static_cast<float*>(o.data_ptr());
      om.batch = o.strides()[0];
      om.head = o.strides()[1];
      om.ld = o.strides()[2];
    } else {
      dense_out.resize(static_cast<size_t>(B * H * Lq * Ev));
      om.data = dense_out.data();
      om.ld = Ev;
      om.head = Lq * Ev;
      om.batch = H * om.head;
    }
    std::vector<float> lse(static_cast<size_t>(B * H * Lq));
    attend_gemm(qm, km, vm, mm ? &*mm : nullptr, om, B, H, group, Lq, Lk, E, Ev, is_causal, fscale, lse,
                what);
    copy_strided(strided_view(*result.logsumexp),
                 StridedView{reinterpret_cast<char*>(lse.data()), lse_sizes, contiguous_strides(lse_sizes),
                             ScalarType::Float32, cpu_device()});
    if (!in_place) {
      copy_strided(strided_view(o), StridedView{reinterpret_cast<char*>(dense_out.data()), out_sizes,
                                                contiguous_strides(out_sizes), ScalarType::Float32, cpu_device()});
    }
    return result;
  }
  // float64: keys transposed to [B, H, E, Lk] (Note [Attention loop order]).
  const int64_t kt_sizes[] = {B, Hk, E, Lk};
  const int64_t kt_strides[] = {k.strides()[0], k.strides()[1], k.strides()[3], k.strides()[2]};
  std::vector<double> qd = dense_copy<double>(q, q.sizes(), q.strides());
  std::vector<double> kd = dense_copy<double>(k, kt_sizes, kt_strides);
  std::vector<double> vd = dense_copy<double>(v, v.sizes(), v.strides());
  std::vector<double> md;
  if (mask != nullptr) md = dense_copy<double>(*mask, mask_sizes, broadcast_to(*mask, mask_sizes, what));
  std::vector<double> out(static_cast<size_t>(B * H * Lq * Ev));
  std::vector<double> lse(static_cast<size_t>(B * H * Lq));
  attend<double>(qd, kd, vd, mask ? &md : nullptr, B, H, group, Lq, Lk, E, Ev, is_causal, s, out, lse);
  copy_strided(strided_view(*result.output),
               StridedView{reinterpret_cast<char*>(out.data()), out_sizes, contiguous_strides(out_sizes),
                           ScalarType::Float64, cpu_device()});
  copy_strided(strided_view(*result.logsumexp),
               StridedView{reinterpret_cast<char*>(lse.data()), lse_sizes, contiguous_strides(lse_sizes),
                           ScalarType::Float64, cpu_device()});
  return result;
}

}  // namespace aotrt::cpu
