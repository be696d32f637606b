// Attention for decode steps: a few query rows against a long key/value cache
// (attention.cu offers it every call with Lq <= 8 first).
//
// Note [Decode attention]
// Flash-decoding: the keys are split between many blocks, each block keeps
// the online-softmax state (running max m, sum l, unnormalised output) of
// its keys, and the blocks' states of a query row are combined
// (o = sum_s e^(m_s - M) o_s / sum_s e^(m_s - M) l_s, M the largest m_s);
// with one split the block writes the output itself. On sm_90 and later,
// 2 to 8 splits of a (batch, kv head, row group) are one thread-block
// cluster and combine in the kernel, through distributed shared memory:
// each block leaves its state in its shared memory, and after a cluster
// barrier each writes a slice of the rows' outputs (and logsumexps) from
// every rank's state, in rank order; a second barrier keeps every block
// until the others have read it. One launch, no partial buffer, no atomics:
// the bits do not depend on timing. More splits (long caches) or an older
// device: the blocks write their states to a partial buffer and a second
// kernel combines them, one block a query row. A block takes up to 8
// query rows that share one key/value head (GQA: the H / Hk query heads of a
// kv head times the Lq positions), so each key is read once for all of them.
// Keys go in units of 8; the units of a (batch, kv head) are dealt out to
// the splits round robin (unit u to split u % S), so whatever part of the
// cache is filled, every split gets its share of it. On tensor cores each
// warp streams its units through a ring of shared memory (cp.async, 16 KiB
// a warp: 4 units at E 128), the copies of the next ones in flight while one
// is multiplied; a lane reads back only the 16-byte pieces it copied, so the
// ring needs no barrier. (Loading two units into registers and then
// multiplying them, loads and math took turns: 1.2-1.4x cuDNN's time on a
// full cache.)
// Masked units are skipped: before reading keys, a block reads the mask
// (the bias) of its units - Lq rows of Lk values when the bias is the same
// for every head, as a boolean mask made additive is - and reads key and
// value only for units where some row sees some key: a key is hidden where
// the bias is -inf (what a boolean mask becomes; a finite large negative
// bias such as finfo.min is read and added like any other) or the causal
// mask hides it. A static cache's decode step thus reads the filled part of
// the cache, plus Lk bias values a row.
// Tensor cores for fp16 and bf16 (mma.sync, Note [mma fragments]): S = Q
// K^T with the block's rows as M (rows 8-15 zero) and the unit's keys as N;
// then O^T = V^T P^T, whose B fragment is S's C fragment converted to 16
// bits and whose A fragment is V's 8 x 8 blocks transposed in registers
// (movmatrix). Head dims are permuted inside each 32 (consistently for q
// and k, and for v and the output), so that a lane reads 16 contiguous
// bytes of a key or value row at a time. fp32 runs on CUDA cores in the
// same frame (q in shared memory, a lane a key for the scores and 1/32 of
// the head dim for the output). Everything accumulates in fp32; P is
// rounded to the input dtype for the product with V (as FlashAttention and
// cuDNN do). Served: Lq 1 .. 8, E == Ev in {64, 128, 256}, Hk dividing H,
// key and value rows of unit stride, 16-byte aligned; any strides for q,
// the bias and the output. Anything else goes to the existing kernels.
// A row that sees no key gets output 0 and the flavor's masked logsumexp
// (Note [Attention outputs]); padding rows of the efficient flavor's
// logsumexp get +inf.
// Splits (plan_splits): a cache of at most 8 x 64 units (4096 keys) on sm_90
// gets, for latency, the fewest splits that leave each block at most 16 units
// (4 a warp), 8 where the units are more, never past one wave of blocks; a
// longer cache, or an older device, gets the wave's worth (the device's
// resident blocks over the (batch, kv head, row group) blocks, each split at
// least 4 units) and the two-kernel combine past 8. The 16 and 64 are a
// hypothesis, measured only as a whole against the two-kernel path (1.7-1.8
// us less at 1024 keys on an H100), not tuned: at these sizes the call is latency (1-2 MB
// is under 1 us of HBM), and a block's time is its warps' dependent chains
// of units plus the mask scan and the combine, so more splits shorten the
// chains until the cluster's barriers and the DSMEM reads cost more than a
// unit's step (a few hundred cycles); past 16 units a warp (64 a block) the
// second launch of the two-kernel path, at about a wave of short blocks,
// should cost less than the cluster's longer chains. splits_for_testing
// forces a count (at most the units): 1 the one-split path, 2 to 8 on sm_90
// the cluster, more the two-kernel path.
// AOTRT_DECODE_ATTENTION=0 (read once) turns this path off; Note [Decode
// attention or cuDNN] says which calls cuDNN is offered first.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "cuda/kernel_switch.h"
#include "cuda/library_ops.h"
#include "cuda/ops/launch.cuh"
#include "cuda/ops/mma.cuh"
#include "cuda/runtime.h"

namespace aotrt::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kRows = 8;      // query rows a block
constexpr int kUnit = 8;      // keys a warp step
constexpr int kWindow = 1024; // units a block lists at once
constexpr int kMaxCluster = 8;  // the portable cluster size: splits combined in one launch

struct DecodeParams {
  const void* q;
  const void* k;
  const void* v;
  const void* bias;  // null: none
  void* out;
  float* lse;        // null: not written
  float* partial;    // [splits][B * H * Lq][E + 2]; null with one split or a cluster
  int64_t H, Hk, G, Lq, Lk, E;
  int64_t rows;        // G * Lq: query rows of one kv head
  int64_t row_groups;  // ceil(rows / kRows)
  int64_t units;       // ceil(Lk / kUnit)
  int64_t splits;
  int64_t rows_all;    // B * H * Lq: the rows of the partial states
  int64_t qs[4], ks[4], vs[4], bs[4], os[4], ls[3];
  int64_t lse_rows;    // logsumexp rows per (b, h): Lq, or more (padding, +inf)
  int64_t causal_offset;
  float scale;
  float masked_row_lse;
  bool causal;
  bool cluster;        // the splits (2 .. kMaxCluster) are one cluster: combined in the kernel
};

template <typename T>
__device__ __forceinline__ float to_f(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(x);
  } else {
    return __bfloat162float(x);
  }
}
template <typename T>
__device__ __forceinline__ T from_f(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(x);
  } else {
    return __float2bfloat16_rn(x);
  }
}

// Where a block's row r lands: its query head and position, or invalid.
struct RowAt {
  int64_t h = 0, i = 0;
  bool valid = false;
};
__device__ __forceinline__ RowAt row_at(const DecodeParams& p, int64_t hk, int64_t rg, int r) {
  RowAt a;
  const int64_t rho = rg * kRows + r;
  a.valid = rho < p.rows;
  if (a.valid) {
    a.h = hk * p.G + rho / p.Lq;
    a.i = rho % p.Lq;
  }
  return a;
}

// The additive mask of row (b, h, i) at key j (causal and bias), -inf where hidden.
template <typename T>
__device__ __forceinline__ float mask_at(const DecodeParams& p, const T* bias_row, int64_t i,
                                         int64_t j) {
  if (j >= p.Lk || (p.causal && j > i + p.causal_offset)) return -INFINITY;
  return bias_row != nullptr ? to_f(bias_row[j * p.bs[3]]) : 0.0f;
}

// A state's weight in a merge of online-softmax states (Note [Decode attention]):
// e^(m - M) against the merged max M; a state that saw no key (m = -inf) weighs 0,
// also where every state is empty and M is -inf too. The warps' states of a block,
// the ranks of a cluster and the splits of the combine kernel all merge so.
__device__ __forceinline__ float state_weight(float m, float merged_max) {
  return m == -INFINITY ? 0.0f : __expf(m - merged_max);
}

// The per-warp online-softmax state, stored canonically for the block's combine.
struct StateSlots {
  float* m;    // [kWarps][kRows]
  float* l;    // [kWarps][kRows]
  float* acc;  // [kWarps][kRows][E]
};

// --- fp16 / bf16 on tensor cores ------------------------------------------------------------

// kE / 32 chunks of 32 head dims; within a chunk lane (g, c) reads dims 8c .. 8c + 7.
template <typename T, int kE>
struct MmaWarp {
  static constexpr int kC = kE / 32;
  uint32_t qa[kC][4];     // Q's A fragments, rows 0-7 (a[1], a[3] zero): [chunk][u32]
  float acc[kE / 16][4];  // O^T's D fragments: [16 dims][rows 2c, 2c+1 at dims g and g + 8]
  float m = -INFINITY;    // row g's running max (same in the 4 lanes of g)
  float l = 0.0f;         // this lane's part of row g's sum

  __device__ void init(const DecodeParams& p, const T* q_base, const RowAt& row, float*) {
    const int lane = threadIdx.x % 32, c = lane % 4;
#pragma unroll
    for (int t = 0; t < kC; ++t) {
      float v[8];
#pragma unroll
      for (int x = 0; x < 8; ++x) {
        const int64_t e = 32 * t + 8 * c + x;
        v[x] = row.valid ? to_f(q_base[row.h * p.qs[1] + row.i * p.qs[2] + e * p.qs[3]]) : 0.0f;
      }
#pragma unroll
      for (int x = 0; x < 4; ++x) qa[t][x] = mma::pack2<T>(v[2 * x], v[2 * x + 1]);
    }
#pragma unroll
    for (int i = 0; i < kE / 16; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
  }

  struct Loaded {
    uint4 k[kC], v[kC];
  };
  // A stage of the warp's ring: [2 kC][32 lanes] of 16 bytes, each lane's own
  // (so a lane reads back only what it copied: no barrier, no bank conflict).
  static constexpr int kStageWords = 2 * kC * 32;
  // Starts copying key and value rows j0 + g (zeros past Lk) into `stage`; one cp.async group.
  __device__ __forceinline__ void issue(const DecodeParams& p, const T* k_base, const T* v_base,
                                       int64_t j0, uint4* stage) const {
    const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
    const int64_t j = j0 + g;
    const bool in = j < p.Lk;
    const T* kr = in ? k_base + j * p.ks[2] + 8 * c : k_base;
    const T* vr = in ? v_base + j * p.vs[2] + 8 * c : v_base;
#pragma unroll
    for (int t = 0; t < kC; ++t) {
      mma::cp_async16(stage + t * 32 + lane, in ? kr + 32 * t : kr, in ? 16 : 0);
      mma::cp_async16(stage + (kC + t) * 32 + lane, in ? vr + 32 * t : vr, in ? 16 : 0);
    }
  }
  __device__ __forceinline__ void read(const uint4* stage, Loaded& d) const {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int t = 0; t < kC; ++t) {
      d.k[t] = stage[t * 32 + lane];
      d.v[t] = stage[(kC + t) * 32 + lane];
    }
  }

  __device__ __forceinline__ void step(const DecodeParams& p, const T* bias_row, const RowAt& row,
                                       int64_t j0, const Loaded& d) {
    const int lane = threadIdx.x % 32, c = lane % 4;
    // Two chains of kC products each (the tensor cores' latency), then their sum.
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int t = 0; t < kC; ++t) {
      const uint32_t a0[4] = {qa[t][0], 0u, qa[t][1], 0u}, a1[4] = {qa[t][2], 0u, qa[t][3], 0u};
      mma::m16n8k16<T>(s, a0, d.k[t].x, d.k[t].y);
      mma::m16n8k16<T>(s2, a1, d.k[t].z, d.k[t].w);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) s[e] += s2[e];
    // Row g's scores of keys j0 + 2c, j0 + 2c + 1.
    float x0 = -INFINITY, x1 = -INFINITY;
    if (row.valid) {
      x0 = mask_at(p, bias_row, row.i, j0 + 2 * c);
      x1 = mask_at(p, bias_row, row.i, j0 + 2 * c + 1);
      x0 = x0 == -INFINITY ? x0 : fmaf(s[0], p.scale, x0);
      x1 = x1 == -INFINITY ? x1 : fmaf(s[1], p.scale, x1);
    }
    float mx = fmaxf(x0, x1);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m, mx);
    float p0 = 0.0f, p1 = 0.0f, corr = 1.0f;
    if (m_new != -INFINITY) {
      p0 = __expf(x0 - m_new);
      p1 = __expf(x1 - m_new);
      corr = __expf(m - m_new);  // 0 while m is -inf (nothing accumulated yet)
    }
    l = l * corr + p0 + p1;
    m = m_new;
    // acc holds rows 2c and 2c + 1: their rows' corrections.
    const float ca = __shfl_sync(0xffffffffu, corr, 8 * c);
    const float cb = __shfl_sync(0xffffffffu, corr, 8 * c + 4);
    if (__any_sync(0xffffffffu, ca != 1.0f || cb != 1.0f)) {
#pragma unroll
      for (int i = 0; i < kE / 16; ++i) {
        acc[i][0] *= ca;
        acc[i][1] *= cb;
        acc[i][2] *= ca;
        acc[i][3] *= cb;
      }
    }
    const uint32_t pb = mma::pack2<T>(p0, p1);  // P^T's B fragment: row g, keys 2c, 2c + 1
    // V^T's A fragments: block b = 4t + x of 8 (permuted) dims is u32 x of chunk t, transposed.
#pragma unroll
    for (int i = 0; i < kE / 16; ++i) {
      const int b0 = 2 * i, b1 = 2 * i + 1;
      const uint4& v0 = d.v[b0 / 4];
      const uint4& v1 = d.v[b1 / 4];
      const uint32_t w0 = (b0 % 4 == 0) ? v0.x : (b0 % 4 == 1) ? v0.y : (b0 % 4 == 2) ? v0.z : v0.w;
      const uint32_t w1 = (b1 % 4 == 0) ? v1.x : (b1 % 4 == 1) ? v1.y : (b1 % 4 == 2) ? v1.z : v1.w;
      mma::m16n8k8<T>(acc[i], mma::transpose8x8(w0), mma::transpose8x8(w1), pb);
    }
  }

  // Physical head dim of permuted dim 8 b + y (b: a block of 8, y < 8).
  static __device__ __forceinline__ int dim_of(int b, int y) {
    return 32 * (b / 4) + 8 * (y / 2) + 2 * (b % 4) + (y % 2);
  }

  __device__ void store(const StateSlots& st) const {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
    float lsum = l;
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
    if (c == 0) {
      st.m[warp * kRows + g] = m;
      st.l[warp * kRows + g] = lsum;
    }
    float* a = st.acc + static_cast<int64_t>(warp) * kRows * kE;
#pragma unroll
    for (int i = 0; i < kE / 16; ++i) {
      const int e0 = dim_of(2 * i, g), e1 = dim_of(2 * i + 1, g);
      a[(2 * c) * kE + e0] = acc[i][0];
      a[(2 * c + 1) * kE + e0] = acc[i][1];
      a[(2 * c) * kE + e1] = acc[i][2];
      a[(2 * c + 1) * kE + e1] = acc[i][3];
    }
  }
};

// --- fp32 on CUDA cores ---------------------------------------------------------------------

template <int kE>
struct SimtWarp {
  static constexpr int kC = kE / 32;   // chunks of the head dim a key's lane reads (8 each)
  static constexpr int kPer = kE / 32; // output dims a lane owns: kPer * lane ...
  const float* q_s = nullptr;          // [kRows][kE] in shared memory
  float* p_s = nullptr;                // this warp's [kRows][kUnit] probabilities
  float acc[kRows][kPer];
  float m[kRows], l[kRows];            // the same in every lane (l: this lane's key's part)

  __device__ void init(const DecodeParams&, const float*, const RowAt&, float* scratch) {
    const int warp = threadIdx.x / 32;
    q_s = scratch;
    p_s = scratch + kRows * kE + warp * kRows * kUnit;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      m[r] = -INFINITY;
      l[r] = 0.0f;
#pragma unroll
      for (int x = 0; x < kPer; ++x) acc[r][x] = 0.0f;
    }
  }

  // The key row of this lane (its 8c .. 8c + 7 of each 32 dims); the value rows are
  // read in step(), key by key (all of them at once would spill registers).
  struct Loaded {
    float4 k[kC][2];
    const float* v_rows;  // value row j0, this lane's dims
  };
  __device__ __forceinline__ void load(const DecodeParams& p, const float* k_base,
                                       const float* v_base, int64_t j0, Loaded& d) const {
    const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
    const int64_t j = j0 + g;
#pragma unroll
    for (int t = 0; t < kC; ++t) {
      if (j < p.Lk) {
        const float* kr = k_base + j * p.ks[2] + 32 * t + 8 * c;
        d.k[t][0] = __ldg(reinterpret_cast<const float4*>(kr));
        d.k[t][1] = __ldg(reinterpret_cast<const float4*>(kr + 4));
      } else {
        d.k[t][0] = d.k[t][1] = make_float4(0, 0, 0, 0);
      }
    }
    d.v_rows = v_base + j0 * p.vs[2] + kPer * lane;
  }

  // Value row j0 + u, this lane's kPer dims (zeros past Lk).
  __device__ __forceinline__ void value(const DecodeParams& p, const Loaded& d, int64_t j0, int u,
                                        float (&out)[kPer]) const {
    if (j0 + u >= p.Lk) {
#pragma unroll
      for (int x = 0; x < kPer; ++x) out[x] = 0.0f;
      return;
    }
    const float* vr = d.v_rows + u * p.vs[2];
    if constexpr (kPer == 2) {
      const float2 f = __ldg(reinterpret_cast<const float2*>(vr));
      out[0] = f.x, out[1] = f.y;
    } else {
#pragma unroll
      for (int x = 0; x < kPer / 4; ++x) {
        const float4 f = __ldg(reinterpret_cast<const float4*>(vr) + x);
        out[4 * x] = f.x, out[4 * x + 1] = f.y, out[4 * x + 2] = f.z, out[4 * x + 3] = f.w;
      }
    }
  }

  __device__ __forceinline__ void step(const DecodeParams& p, const float* const* bias_rows,
                                       const RowAt* rows, int64_t j0, const Loaded& d) {
    const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
    float s[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float acc_s = 0.0f;
#pragma unroll
      for (int t = 0; t < kC; ++t) {
        const float4 q0 = *reinterpret_cast<const float4*>(q_s + r * kE + 32 * t + 8 * c);
        const float4 q1 = *reinterpret_cast<const float4*>(q_s + r * kE + 32 * t + 8 * c + 4);
        acc_s = fmaf(q0.x, d.k[t][0].x, acc_s);
        acc_s = fmaf(q0.y, d.k[t][0].y, acc_s);
        acc_s = fmaf(q0.z, d.k[t][0].z, acc_s);
        acc_s = fmaf(q0.w, d.k[t][0].w, acc_s);
        acc_s = fmaf(q1.x, d.k[t][1].x, acc_s);
        acc_s = fmaf(q1.y, d.k[t][1].y, acc_s);
        acc_s = fmaf(q1.z, d.k[t][1].z, acc_s);
        acc_s = fmaf(q1.w, d.k[t][1].w, acc_s);
      }
      acc_s += __shfl_xor_sync(0xffffffffu, acc_s, 1);
      acc_s += __shfl_xor_sync(0xffffffffu, acc_s, 2);
      s[r] = acc_s;  // row r, key j0 + g
    }
    float corr[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float x = -INFINITY;
      if (rows[r].valid) {
        x = mask_at(p, bias_rows[r], rows[r].i, j0 + g);
        x = x == -INFINITY ? x : fmaf(s[r], p.scale, x);
      }
      float mx = x;
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
      const float m_new = fmaxf(m[r], mx);
      float pr = 0.0f;
      corr[r] = 1.0f;
      if (m_new != -INFINITY) {
        pr = __expf(x - m_new);
        corr[r] = __expf(m[r] - m_new);
      }
      l[r] = l[r] * corr[r] + (c == 0 ? pr : 0.0f);
      m[r] = m_new;
      if (c == (r % 4)) p_s[r * kUnit + g] = pr;
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int x = 0; x < kPer; ++x) acc[r][x] *= corr[r];
    }
#pragma unroll
    for (int u = 0; u < kUnit; ++u) {
      float vx[kPer];
      value(p, d, j0, u, vx);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float pr = p_s[r * kUnit + u];  // a broadcast read
#pragma unroll
        for (int x = 0; x < kPer; ++x) acc[r][x] = fmaf(pr, vx[x], acc[r][x]);
      }
    }
    __syncwarp();  // p_s is rewritten by the next unit
  }

  __device__ void store(const StateSlots& st) const {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float lsum = l[r];
      lsum += __shfl_xor_sync(0xffffffffu, lsum, 4);
      lsum += __shfl_xor_sync(0xffffffffu, lsum, 8);
      lsum += __shfl_xor_sync(0xffffffffu, lsum, 16);
      if (lane == 0) {
        st.m[warp * kRows + r] = m[r];
        st.l[warp * kRows + r] = lsum;
      }
      float* a = st.acc + (static_cast<int64_t>(warp) * kRows + r) * kE + kPer * lane;
#pragma unroll
      for (int x = 0; x < kPer; ++x) a[x] = acc[r][x];
    }
  }
};

// Units each warp of the tensor-core path has in its ring (copies in flight:
// all but the one being multiplied): 16 KiB a warp.
template <int kE>
inline constexpr int kRingStages = kE <= 64 ? 8 : kE <= 128 ? 4 : 2;

// Shared memory of the decode kernel: the unit lists and, while the keys
// stream, fp32's q and probabilities or the tensor-core path's rings of
// keys and values; the warps' states after, and the cluster's weights.
template <typename T, int kE>
constexpr size_t decode_smem_bytes() {
  constexpr bool kMma = !std::is_same_v<T, float>;
  const size_t per_path = kMma ? size_t{kWarps} * kRingStages<kE> * 2 * (kE / 32) * 32 * 16
                               : 4 * (kRows * kE + kWarps * kRows * kUnit);
  const size_t stream_phase = kWindow + 4 * (kWindow + 32) + per_path;
  const size_t state_phase = 4 * (2 * kWarps * kRows + kWarps * kRows * kE) + 4 * 3 * kRows +
                             4 * (kRows * kMaxCluster + 2 * kRows);
  return stream_phase > state_phase ? stream_phase : state_phase;
}

// The efficient flavor's padding rows of the logsumexp (+inf) of kv head hk's query heads.
__device__ __forceinline__ void write_lse_padding(const DecodeParams& p, int64_t b, int64_t hk) {
  const int64_t pad = p.lse_rows - p.Lq;
  for (int64_t idx = threadIdx.x; idx < p.G * pad; idx += kWarps * 32) {
    const int64_t h = hk * p.G + idx / pad, i = p.Lq + idx % pad;
    p.lse[b * p.ls[0] + h * p.ls[1] + i * p.ls[2]] = INFINITY;
  }
}

// The splits of a cluster combined through distributed shared memory (Note
// [Decode attention]): each block holds its state - o (over its warps, not yet
// divided by l) in block_o [kRows][kE], its rows' m and l - and writes a slice
// of the rows' outputs from every rank's state, in rank order. `scratch`:
// kRows * (kMaxCluster + 2) floats of this block's own.
template <typename T, int kE>
__device__ __forceinline__ void cluster_combine(const DecodeParams& p, const float* block_o,
                                                const float* row_m, const float* row_l,
                                                float* scratch, int64_t b, int64_t hk,
                                                int64_t rg) {
#if defined(_CG_HAS_CLUSTER_GROUP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int ranks = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  const int tid = static_cast<int>(threadIdx.x);
  float* weight = scratch;                        // [kRows][kMaxCluster]: e^(m_s - M), 0 if empty
  float* total_m = weight + kRows * kMaxCluster;  // [kRows] M, the largest m_s
  float* total_l = total_m + kRows;               // [kRows] sum_s e^(m_s - M) l_s
  // The remote loads of a loop over the ranks are all issued before their sum
  // (unrolled to kMaxCluster, predicated): one DSMEM latency, not one a rank.
  cluster.sync();  // every block's state is in its shared memory
  if (tid < kRows) {
    float rank_m[kMaxCluster], rank_l[kMaxCluster];
#pragma unroll
    for (int s = 0; s < kMaxCluster; ++s) {
      rank_m[s] = s < ranks ? *cluster.map_shared_rank(row_m + tid, s) : -INFINITY;
      rank_l[s] = s < ranks ? *cluster.map_shared_rank(row_l + tid, s) : 0.0f;
    }
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < kMaxCluster; ++s) mx = fmaxf(mx, rank_m[s]);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < kMaxCluster; ++s) {
      const float f = state_weight(rank_m[s], mx);
      weight[tid * kMaxCluster + s] = f;  // 0 past the ranks
      sum += rank_l[s] * f;
    }
    total_m[tid] = mx;
    total_l[tid] = sum;
  }
  __syncthreads();
  // This rank's share of the valid rows' kE outputs each (row-major: one row's
  // dims are contiguous in every rank's block_o, so a warp's remote reads are too).
  const int valid = static_cast<int>(min(static_cast<int64_t>(kRows), p.rows - rg * kRows));
  const int count = valid * kE;
  const int begin = count * rank / ranks, end = count * (rank + 1) / ranks;
  for (int idx = begin + tid; idx < end; idx += kWarps * 32) {
    const int r = idx / kE, e = idx % kE;
    float rank_o[kMaxCluster];
#pragma unroll
    for (int s = 0; s < kMaxCluster; ++s) {
      rank_o[s] = s < ranks ? *cluster.map_shared_rank(block_o + idx, s) : 0.0f;
    }
    float o = 0.0f;
#pragma unroll
    for (int s = 0; s < kMaxCluster; ++s) o += rank_o[s] * weight[r * kMaxCluster + s];
    const RowAt at = row_at(p, hk, rg, r);  // valid: r < valid
    const float l = total_l[r];
    T* out = static_cast<T*>(p.out) + b * p.os[0] + at.h * p.os[1] + at.i * p.os[2];
    out[e * p.os[3]] = from_f<T>(o * (l > 0.0f ? 1.0f / l : 0.0f));
    if (e == 0 && p.lse != nullptr) {
      p.lse[b * p.ls[0] + at.h * p.ls[1] + at.i * p.ls[2]] =
          l > 0.0f ? total_m[r] + logf(l) : p.masked_row_lse;
    }
  }
  if (p.lse != nullptr && rg == 0 && rank == 0) write_lse_padding(p, b, hk);
  cluster.sync();  // no block leaves while another reads its shared memory
#else
  (void)p, (void)block_o, (void)row_m, (void)row_l, (void)scratch, (void)b, (void)hk, (void)rg;
  __trap();  // clusters are launched on sm_90 and later only
#endif
}

// Grid: x the split, y (b, kv head, row group); with p.cluster the splits of
// a y are one cluster. 128 threads.
template <typename T, int kE>
__global__ void __launch_bounds__(kWarps * 32) decode_kernel(const DecodeParams p) {
  extern __shared__ float4 smem4[];
  char* smem = reinterpret_cast<char*>(smem4);
  // Streaming phase.
  auto* live = reinterpret_cast<uint8_t*>(smem);                     // [kWindow]
  auto* list = reinterpret_cast<int*>(smem + kWindow);               // [kWindow]
  auto* counts = list + kWindow;                                     // [32] scan scratch
  auto* scratch = reinterpret_cast<float*>(counts + 32);             // fp32: q, probabilities
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;

  const int64_t split = blockIdx.x;
  int64_t y = blockIdx.y;
  const int64_t rg = y % p.row_groups;
  y /= p.row_groups;
  const int64_t hk = y % p.Hk, b = y / p.Hk;
  const T* q_base = static_cast<const T*>(p.q) + b * p.qs[0];
  const T* k_base = static_cast<const T*>(p.k) + b * p.ks[0] + hk * p.ks[1];
  const T* v_base = static_cast<const T*>(p.v) + b * p.vs[0] + hk * p.vs[1];
  const T* bias_b = p.bias != nullptr ? static_cast<const T*>(p.bias) + b * p.bs[0] : nullptr;
  RowAt rows[kRows];
  const T* bias_rows[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    rows[r] = row_at(p, hk, rg, r);
    bias_rows[r] = bias_b != nullptr && rows[r].valid
                       ? bias_b + rows[r].h * p.bs[1] + rows[r].i * p.bs[2]
                       : nullptr;
  }
  // Rows whose mask another row of the block repeats (the bias the same for every head).
  const int check_rows =
      p.bs[1] == 0 ? static_cast<int>(min(static_cast<int64_t>(kRows), p.Lq)) : kRows;
  const bool all_live = p.bias == nullptr && !p.causal;

  constexpr bool kMma = !std::is_same_v<T, float>;
  using Warp = std::conditional_t<kMma, MmaWarp<T, kE>, SimtWarp<kE>>;
  // The mma path's lane works on row g = lane / 4.
  const RowAt my_row = row_at(p, hk, rg, lane / 4);
  const T* my_bias = bias_b != nullptr && my_row.valid
                         ? bias_b + my_row.h * p.bs[1] + my_row.i * p.bs[2]
                         : nullptr;
  Warp w;
  if constexpr (kMma) {
    w.init(p, q_base, my_row, nullptr);
  } else {
    for (int idx = tid; idx < kRows * kE; idx += kWarps * 32) {
      const int r = idx / kE, e = idx % kE;
      const RowAt at = row_at(p, hk, rg, r);
      scratch[idx] = at.valid ? to_f(q_base[at.h * p.qs[1] + at.i * p.qs[2] + e * p.qs[3]]) : 0.0f;
    }
    w.init(p, nullptr, my_row, scratch);
  }

  // This split's units: split, split + S, ...; a window of kWindow of them at a time.
  const int64_t my_units = p.units > split ? (p.units - split + p.splits - 1) / p.splits : 0;
  for (int64_t w0 = 0; w0 < my_units; w0 += kWindow) {
    const int n = static_cast<int>(min(static_cast<int64_t>(kWindow), my_units - w0));
    __syncthreads();  // the previous window's list is consumed (and q is in place)
    for (int idx = tid; idx < n; idx += kWarps * 32) {
      const int64_t j0 = (split + (w0 + idx) * p.splits) * kUnit;
      bool any = all_live;
      for (int r = 0; r < check_rows && !any; ++r) {
        const RowAt at = row_at(p, hk, rg, r);
        if (!at.valid) continue;
        const T* bias_row = bias_b != nullptr ? bias_b + at.h * p.bs[1] + at.i * p.bs[2] : nullptr;
#pragma unroll
        for (int u = 0; u < kUnit; ++u) any |= mask_at(p, bias_row, at.i, j0 + u) != -INFINITY;
      }
      live[idx] = any ? 1 : 0;
    }
    __syncthreads();
    // Deterministic compaction: thread t lists units [8t, 8t + 8) of the window.
    int mine = 0;
    for (int x = 0; x < 8; ++x) mine += 8 * tid + x < n ? live[8 * tid + x] : 0;
    int incl = mine;
    for (int o = 1; o < 32; o *= 2) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += v;
    }
    if (lane == 31) counts[warp] = incl;
    __syncthreads();
    int before = incl - mine, total = 0;
    for (int v = 0; v < kWarps; ++v) {
      if (v < warp) before += counts[v];
      total += counts[v];
    }
    for (int x = 0; x < 8; ++x) {
      const int at = 8 * tid + x;
      if (at < n && live[at]) list[before++] = at;
    }
    __syncthreads();
    // The warps take the live units in turn: unit warp + x kWarps of the list is the warp's x-th.
    auto unit_j0 = [&](int at) { return (split + (w0 + list[at]) * p.splits) * kUnit; };
    const int mine_n = total > warp ? (total - warp + kWarps - 1) / kWarps : 0;
    if constexpr (kMma) {
      // A ring of kStages units a warp (cp.async): the copies of the next kStages - 1
      // units are in flight while one is multiplied.
      constexpr int kStages = kRingStages<kE>;
      uint4* ring = reinterpret_cast<uint4*>(scratch) + warp * kStages * Warp::kStageWords;
      auto issue = [&](int x) {  // the warp's x-th unit into stage x % kStages; one group
        if (x < mine_n) {
          w.issue(p, k_base, v_base, unit_j0(warp + x * kWarps),
                  ring + (x % kStages) * Warp::kStageWords);
        }
        mma::cp_async_commit();
      };
#pragma unroll
      for (int x = 0; x < kStages - 1; ++x) issue(x);
      for (int x = 0; x < mine_n; ++x) {
        issue(x + kStages - 1);  // its stage was read (by this lane) in step x - 1
        mma::cp_async_wait<kStages - 1>();  // unit x's group has landed
        typename Warp::Loaded d;
        w.read(ring + (x % kStages) * Warp::kStageWords, d);
        w.step(p, my_bias, my_row, unit_j0(warp + x * kWarps), d);
      }
      mma::cp_async_wait<0>();
    } else {
      for (int x = 0; x < mine_n; ++x) {
        const int64_t j0 = unit_j0(warp + x * kWarps);
        typename Warp::Loaded d;
        w.load(p, k_base, v_base, j0, d);
        w.step(p, bias_rows, rows, j0, d);
      }
    }
  }
  __syncthreads();  // the streaming phase's shared memory becomes the states'

  // Combine the warps' states, then write the output (one split), combine the
  // cluster's blocks, or write the partial state.
  float* sm = reinterpret_cast<float*>(smem);
  const StateSlots st{sm, sm + kWarps * kRows, sm + 2 * kWarps * kRows};
  float* row_m = st.acc + kWarps * kRows * kE;  // [kRows] combined max
  float* row_l = row_m + kRows;                 // [kRows] combined sum
  float* factor = row_l + kRows;                // [kRows] 1 / l, or 0
  w.store(st);
  __syncthreads();
  if (tid < kRows) {
    float mx = -INFINITY;
    for (int v = 0; v < kWarps; ++v) mx = fmaxf(mx, st.m[v * kRows + tid]);
    float sum = 0.0f;
    for (int v = 0; v < kWarps; ++v) {
      const float mv = st.m[v * kRows + tid];
      const float f = state_weight(mv, mx);
      st.m[v * kRows + tid] = f;  // now the warp's weight
      sum += st.l[v * kRows + tid] * f;
    }
    row_m[tid] = mx;
    row_l[tid] = sum;
    factor[tid] = sum > 0.0f ? 1.0f / sum : 0.0f;
  }
  __syncthreads();
  if (p.cluster) {
    // The block's o into warp 0's slots: element idx is read and rewritten by one thread.
    for (int idx = tid; idx < kRows * kE; idx += kWarps * 32) {
      const int r = idx / kE, e = idx % kE;
      float o = 0.0f;
      for (int v = 0; v < kWarps; ++v) o += st.acc[(v * kRows + r) * kE + e] * st.m[v * kRows + r];
      st.acc[idx] = o;
    }
    cluster_combine<T, kE>(p, st.acc, row_m, row_l, factor + kRows, b, hk, rg);
    return;
  }
  const int64_t row_stride = p.E + 2;
  for (int idx = tid; idx < kRows * kE; idx += kWarps * 32) {
    const int r = idx / kE, e = idx % kE;
    const RowAt at = row_at(p, hk, rg, r);
    if (!at.valid) continue;
    float o = 0.0f;
    for (int v = 0; v < kWarps; ++v) o += st.acc[(v * kRows + r) * kE + e] * st.m[v * kRows + r];
    const int64_t h = at.h, i = at.i;
    if (p.splits == 1) {
      T* out = static_cast<T*>(p.out) + b * p.os[0] + h * p.os[1] + i * p.os[2];
      out[e * p.os[3]] = from_f<T>(o * factor[r]);
      if (e == 0 && p.lse != nullptr) {
        p.lse[b * p.ls[0] + h * p.ls[1] + i * p.ls[2]] =
            row_l[r] > 0.0f ? row_m[r] + logf(row_l[r]) : p.masked_row_lse;
      }
    } else {
      const int64_t row_id = (b * p.H + h) * p.Lq + i;
      float* dst = p.partial + (split * p.rows_all + row_id) * row_stride;
      dst[e] = o;
      if (e == 0) {
        dst[p.E] = row_m[r];
        dst[p.E + 1] = row_l[r];
      }
    }
  }
  // The efficient flavor's padding rows of the logsumexp: by the first row group.
  if (p.splits == 1 && p.lse != nullptr && rg == 0) write_lse_padding(p, b, hk);
}

// One block per query row (b, h, i): its splits' states combined. 128 threads.
template <typename T>
__global__ void __launch_bounds__(128) decode_combine_kernel(const DecodeParams p) {
  extern __shared__ float weights[];  // [splits]
  __shared__ float total_l, total_m;
  const int64_t row_id = blockIdx.x;  // (b * H + h) * Lq + i
  const int64_t i = row_id % p.Lq, bh = row_id / p.Lq, h = bh % p.H, b = bh / p.H;
  const int64_t row_stride = p.E + 2, rows_all = p.rows_all;
  const float* part = p.partial + row_id * row_stride;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid < 32) {
    float mx = -INFINITY;
    for (int64_t s = tid; s < p.splits; s += 32) {
      mx = fmaxf(mx, part[s * rows_all * row_stride + p.E]);
    }
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.0f;
    for (int64_t s = tid; s < p.splits; s += 32) {
      const float* ps = part + s * rows_all * row_stride;
      const float f = state_weight(ps[p.E], mx);
      weights[s] = f;
      sum += ps[p.E + 1] * f;
    }
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (tid == 0) {
      total_l = sum;
      total_m = mx;
    }
  }
  __syncthreads();
  const float inv = total_l > 0.0f ? 1.0f / total_l : 0.0f;
  T* out = static_cast<T*>(p.out) + b * p.os[0] + h * p.os[1] + i * p.os[2];
  for (int64_t e = tid; e < p.E; e += blockDim.x) {
    float o = 0.0f;
    for (int64_t s = 0; s < p.splits; ++s) o += part[s * rows_all * row_stride + e] * weights[s];
    out[e * p.os[3]] = from_f<T>(o * inv);
  }
  if (tid == 0 && p.lse != nullptr) {
    float* lse = p.lse + b * p.ls[0] + h * p.ls[1];
    lse[i * p.ls[2]] = total_l > 0.0f ? total_m + logf(total_l) : p.masked_row_lse;
    if (i == 0) {  // the padding rows of (b, h)
      for (int64_t x = p.Lq; x < p.lse_rows; ++x) lse[x * p.ls[2]] = INFINITY;
    }
  }
}

KernelSwitch g_decode{"AOTRT_DECODE_ATTENTION", SwitchMode::kAuto};

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }

// Note [Decode attention or cuDNN]
// In the auto mode (AOTRT_DECODE_ATTENTION unset) attention() offers a call to
// cuDNN first where cuDNN is measured faster, and to the decode path after it
// only if cuDNN does not serve it: one query row (Lq 1) of fp16/bf16 against at
// most kCudnnFirstMaxKeys keys. Measured (bench/results/decode-h100-2026-12-07.md):
// a Llama decode step at a 1024-key cache (repeat_kv's 32 key heads, E 64) took
// 1.831 ms with cuDNN against 1.918 with the decode path on an H100; alone, a
// full 1024- and 4096-key cache (8 key heads, E 128) took cuDNN 10.9 and 15.6 us
// against 15.9 and 22.1 on an H200. The decode path wins where it can skip what
// cuDNN reads: several query rows (Lq 4 and 8: 5x), or a long cache mostly
// unfilled (32768 keys, 1024 filled: 20.7 against 41.6 us), which the host
// cannot see; so past kCudnnFirstMaxKeys, and for Lq > 1, it comes first.
// These times are the two-kernel path's (partial states, then a combine
// kernel). With the cluster path (Note [Decode attention]) on an H100
// (bench/results/decode-h100-gqa-2026-12-07.md) the decode kernel gained
// 1.7-1.8 us at 1024 keys, but cuDNN still wins Lq 1 on the unrepeated
// cache's shapes: 32 over 4 at E 64, 540 of 1024 keys filled, 8.75 us
// against 11.14; 32 over 8 at E 128, 11.57 against 12.31; and the 1B step
// took 1.609 ms through cuDNN against 1.688 forced through the kernel. So
// the rule stands.
// AOTRT_DECODE_ATTENTION=1 gives it every call it serves, =0 none.
constexpr int64_t kCudnnFirstMaxKeys = 4096;

// The kernel's shared memory past the default 48 KiB (the tensor-core path's
// rings): set per device on every launch, as attention.cu does.
template <typename T, int kE>
void allow_smem() {
  constexpr size_t smem = decode_smem_bytes<T, kE>();
  static_assert(smem <= 100 * 1024, "decode attention: two blocks an SM");
  if (smem > 48 * 1024) {
    AOTRT_CUDA_CHECK(cudaFuncSetAttribute(decode_kernel<T, kE>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
  }
}

// Units a block of a cluster is meant to have, and the most it may have
// before the two-kernel path takes the call (Note [Decode attention]).
constexpr int64_t kClusterBlockUnits = 16;
constexpr int64_t kClusterMaxBlockUnits = 64;

// Splits (Note [Decode attention]). sm_90 and later, up to kMaxCluster *
// kClusterMaxBlockUnits units (4096 keys): for latency, the fewest splits that
// give each block at most kClusterBlockUnits units (kMaxCluster past that),
// within a wave. Otherwise: the device's wave of blocks (as many as its SMs
// hold at once) over the (batch, kv head, row group) blocks, each split at
// least 4 units. Any 2 .. kMaxCluster splits on sm_90 are one cluster.
template <typename T, int kE>
void plan_splits(DecodeParams& p, int64_t blocks_y, int64_t splits_wanted, int device) {
  constexpr size_t smem = decode_smem_bytes<T, kE>();
  allow_smem<T, kE>();
  const launch::DeviceFacts facts = launch::device_facts(device);
  if (splits_wanted > 0) {
    p.splits = std::min<int64_t>(splits_wanted, p.units);
  } else {
    const int64_t wave = int64_t{facts.sms} *
                         launch::resident_blocks<decode_kernel<T, kE>>(kWarps * 32, smem, device);
    if (facts.capability >= 90 && p.units <= kMaxCluster * kClusterMaxBlockUnits) {
      const int64_t latency = (p.units + kClusterBlockUnits - 1) / kClusterBlockUnits;
      p.splits = std::clamp<int64_t>(std::min<int64_t>(latency, wave / blocks_y), 1, kMaxCluster);
    } else {
      p.splits = std::clamp<int64_t>(std::min(wave / blocks_y, (p.units + 3) / 4), 1, 1024);
    }
  }
  p.cluster = facts.capability >= 90 && p.splits >= 2 && p.splits <= kMaxCluster;
}

template <typename T, int kE>
void run_decode(const DecodeParams& p, int64_t blocks_y, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.splits), static_cast<unsigned>(blocks_y));
  if (p.cluster) {
    launch::launch_with_clusters(decode_kernel<T, kE>, grid, kWarps * 32,
                                 decode_smem_bytes<T, kE>(),
                                 dim3(static_cast<unsigned>(p.splits), 1, 1), false, 0, stream, p);
    return;
  }
  decode_kernel<T, kE><<<grid, kWarps * 32, decode_smem_bytes<T, kE>(), stream>>>(p);
  AOTRT_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void plan_typed(DecodeParams& p, int64_t blocks_y, int64_t splits_wanted, int device) {
  p.E == 64    ? plan_splits<T, 64>(p, blocks_y, splits_wanted, device)
  : p.E == 128 ? plan_splits<T, 128>(p, blocks_y, splits_wanted, device)
               : plan_splits<T, 256>(p, blocks_y, splits_wanted, device);
}

void plan(DecodeParams& p, ScalarType dtype, int64_t blocks_y, int64_t splits_wanted,
          int device) {
  switch (dtype) {
    case ScalarType::Float32: plan_typed<float>(p, blocks_y, splits_wanted, device); break;
    case ScalarType::Float16: plan_typed<__half>(p, blocks_y, splits_wanted, device); break;
    default: plan_typed<__nv_bfloat16>(p, blocks_y, splits_wanted, device); break;
  }
}

// Queues the planned call: the decode kernel, and the combine kernel after it
// where the splits are neither one nor a cluster.
template <typename T>
void launch_typed(DecodeParams& p, int64_t blocks_y, int device, cudaStream_t stream) {
  auto by_dim = [&](auto run64, auto run128, auto run256) {
    p.E == 64 ? run64() : p.E == 128 ? run128() : run256();
  };
  DeviceBuffer partial;
  if (p.splits > 1 && !p.cluster) {
    partial = DeviceBuffer(
        device, static_cast<size_t>(p.splits * p.rows_all * (p.E + 2)) * sizeof(float));
    p.partial = static_cast<float*>(partial.data());
  }
  by_dim([&] { run_decode<T, 64>(p, blocks_y, stream); },
         [&] { run_decode<T, 128>(p, blocks_y, stream); },
         [&] { run_decode<T, 256>(p, blocks_y, stream); });
  if (p.splits > 1 && !p.cluster) {
    decode_combine_kernel<T><<<static_cast<unsigned>(p.rows_all), 128, sizeof(float) * p.splits,
                               stream>>>(p);
    AOTRT_CUDA_CHECK(cudaGetLastError());
  }
}

// The kernel's parameters for `c` on `device`, and its blocks along y; false
// where the decode path does not serve the call.
bool decode_params(const DecodeAttentionCall& c, int device, DecodeParams& p, int64_t& blocks_y) {
  const int64_t B = c.sizes[0], H = c.sizes[1], Hk = c.sizes[2], Lq = c.sizes[3], Lk = c.sizes[4],
                E = c.sizes[5], Ev = c.sizes[6];
  if (Lq < 1 || Lq > 8 || Lk < 1 || B < 1 || E != Ev) return false;
  if (E != 64 && E != 128 && E != 256) return false;
  if (Hk < 1 || H % Hk != 0) return false;
  if (c.dtype != ScalarType::Float16 && c.dtype != ScalarType::BFloat16 &&
      c.dtype != ScalarType::Float32) {
    return false;
  }
  if (launch::device_facts(device).capability < 80) return false;
  // Key and value rows: unit stride, 16-byte aligned (the vector loads).
  const int64_t vec = c.dtype == ScalarType::Float32 ? 4 : 8;
  if (c.k_strides[3] != 1 || c.v_strides[3] != 1 || !aligned16(c.k) || !aligned16(c.v)) {
    return false;
  }
  for (int d = 0; d < 3; ++d) {
    if (c.k_strides[d] % vec != 0 || c.v_strides[d] % vec != 0) return false;
  }
  p = DecodeParams{};
  p.q = c.q;
  p.k = c.k;
  p.v = c.v;
  p.bias = c.bias;
  p.out = c.out;
  p.lse = c.lse;
  p.H = H;
  p.Hk = Hk;
  p.G = H / Hk;
  p.Lq = Lq;
  p.Lk = Lk;
  p.E = E;
  p.rows = p.G * Lq;
  p.row_groups = (p.rows + kRows - 1) / kRows;
  p.units = (Lk + kUnit - 1) / kUnit;
  p.rows_all = B * H * Lq;
  for (int d = 0; d < 4; ++d) {
    p.qs[d] = c.q_strides[d];
    p.ks[d] = c.k_strides[d];
    p.vs[d] = c.v_strides[d];
    p.bs[d] = c.bias_strides[d];
    p.os[d] = c.out_strides[d];
  }
  for (int d = 0; d < 3; ++d) p.ls[d] = c.lse_strides[d];
  p.lse_rows = c.lse_rows;
  p.causal = c.causal;
  p.causal_offset = c.causal_offset;
  p.scale = c.scale;
  p.masked_row_lse = c.masked_row_lse;
  blocks_y = B * Hk * p.row_groups;
  return blocks_y <= 65535 && p.rows_all <= 0x7fffffff;
}

}  // namespace

bool decode_attention(const DecodeAttentionCall& c, int device, cudaStream_t stream,
                      const char* fn) {
  if (!g_decode.enabled()) return false;
  DecodeParams p{};
  int64_t blocks_y = 0;
  if (!decode_params(c, device, p, blocks_y)) return false;
  plan(p, c.dtype, blocks_y, c.splits_for_testing, device);
  switch (c.dtype) {
    case ScalarType::Float32: launch_typed<float>(p, blocks_y, device, stream); break;
    case ScalarType::Float16: launch_typed<__half>(p, blocks_y, device, stream); break;
    default: launch_typed<__nv_bfloat16>(p, blocks_y, device, stream); break;
  }
  (void)fn;
  g_decode.served();
  return true;
}

// For tests, declared there rather than in library_ops.h (which 18 files
// include): the splits decode_attention() takes for `c` on `device` and
// whether they are one cluster; false where it does not serve the call.
bool decode_attention_plan_for_testing(const DecodeAttentionCall& c, int device,
                                       int64_t* splits, bool* cluster);
bool decode_attention_plan_for_testing(const DecodeAttentionCall& c, int device,
                                       int64_t* splits, bool* cluster) {
  DecodeParams p{};
  int64_t blocks_y = 0;
  if (!decode_params(c, device, p, blocks_y)) return false;
  plan(p, c.dtype, blocks_y, c.splits_for_testing, device);
  *splits = p.splits;
  *cluster = p.cluster;
  return true;
}

bool decode_attention_prefers_cudnn(const DecodeAttentionCall& c) {
  if (g_decode.mode() != SwitchMode::kAuto) return false;
  const int64_t Lq = c.sizes[3], Lk = c.sizes[4];
  return (c.dtype == ScalarType::Float16 || c.dtype == ScalarType::BFloat16) && Lq == 1 &&
         Lk <= kCudnnFirstMaxKeys;
}

void set_decode_attention_mode(DecodeAttentionMode mode) {
  g_decode.set(mode == DecodeAttentionMode::kOff  ? SwitchMode::kOff
               : mode == DecodeAttentionMode::kOn ? SwitchMode::kOn
                                                  : SwitchMode::kAuto);
}

int64_t decode_attention_calls() { return g_decode.calls(); }

}  // namespace aotrt::cuda
