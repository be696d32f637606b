// Scaled dot-product attention for the fallbacks torch 2.11 emits
// (_scaled_dot_product_efficient_attention, _scaled_dot_product_cudnn_attention,
// and through ops/attention.cpp _efficient_attention_forward and the flash
// ops, _scaled_dot_product_flash_attention and _flash_attention_forward):
// decode steps (at most 8 query rows against a cache) on flash-decoding
// (attention_decode.cu, Note [Decode attention]) where it serves the call,
// fp16 and bf16 on cuDNN's fused tensor-core kernels where cuDNN serves the
// call (attention_cudnn.cpp), everything else - fp32 exactly, and any layout
// cuDNN refuses - on aotrt's own tiled kernel below.
//
// Note [Attention kernel]
// One block of 4 warps takes 32 query rows of one (batch, head); each warp
// owns 8 of them. Keys and values stream through shared memory 32 at a time
// (one key per lane), and each row keeps the online-softmax state of
// flash attention - running max m, running sum l, unnormalised output acc -
// so the [Lq, Lk] score matrix never exists. Everything accumulates in fp32
// whatever the input dtype; q, k, v, the bias and the output are read and
// written through their own strides (generated code passes permuted views),
// and the causal mask skips key tiles wholly above the diagonal (which starts
// at the top-left corner, or at the bottom-right one: key j is hidden from
// query i when j > i + causal_offset, the offset 0 or Lk - Lq). Head dims up
// to 256 are served (each lane keeps up to 8 output columns per row). This
// is a CUDA-core kernel: correct for every layout and shape, not tuned to
// tensor-core speed (fp16/bf16 reach it only when cuDNN declines).
//
// Note [Attention outputs]
// The outputs match what ATen's CUDA kernels return, because the generated
// code that reads them was compiled against ATen's meta functions:
// - efficient attention: output [B, H, Lq, Ev] with the strides of a
//   contiguous [B, Lq, H, Ev] tensor transposed (1, 2) (viewed back, the
//   contiguous [B, M, H, Kv] output of _efficient_attention_forward: Note
//   [Efficient attention forward] in ops/attention.cpp); logsumexp float32
//   [B, H, ceil(Lq / 32) * 32] when asked (the padding rows hold +inf, as
//   the memory-efficient kernel writes them), else [B, H, 0]; philox seed and
//   offset are 0-d int64 tensors on the CPU (what ATen returns without
//   dropout), here holding 0.
// - cuDNN attention: output laid out like the query (ATen's
//   alloc_with_matching_layout: empty_like(query) when the shapes agree,
//   else the query's dim order by stride); logsumexp float32 [B, H, Lq, 1]
//   when asked, else undefined; cum_seq_q/k and the debug mask undefined;
//   max_q = Lq, max_k = Lk; seed and offset 0-d int64 CUDA tensors holding 0.
// - flash attention: the output is written into the view its op lays out
//   (`out`; Note [Flash attention] in ops/attention.cpp, which makes the other
//   outputs); logsumexp float32 [B, H, Lq], always.
// A row that every key is masked from (all -inf bias) gets output 0 and
// logsumexp 0, as the memory-efficient kernel returns them; so does a row a
// bottom-right causal mask hides every key from (query i < Lq - Lk), which
// was not checked against ATen. The flash flavor gives such a row (bottom-right
// causal with Lq > Lk, or no keys at all) logsumexp +inf, as FlashAttention
// writes it.
// All of this but the flash flavor was checked against eager torch 2.11 on an
// H200.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/view.h"
#include "cuda/library_ops.h"
#include "cuda/runtime.h"

namespace aotrt::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 8;
constexpr int kBlockRows = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kBlockKeys = 32;                     // keys per tile: one per lane
constexpr int kKtPitch = kBlockKeys + 1;           // K^T row pitch, conflict-free
constexpr int kMaxHeadDim = 256;

struct AttentionParams {
  const void* q;
  const void* k;
  const void* v;
  const void* bias;  // null: no bias
  void* out;
  float* lse;        // null: not asked
  int64_t H, Lq, Lk, E, Ev;
  int64_t heads_per_kv;  // H / Hk
  int64_t q_tiles;       // ceil(Lq / kBlockRows)
  int64_t lse_rows;      // rows of lse per (b, h): Lq, or Lq padded
  int64_t qs[4], ks[4], vs[4], bs[4], os[4], ls[3];
  int64_t causal_offset;  // causal: key j is hidden from query i when j > i + causal_offset
  float scale;
  float masked_row_lse;   // the logsumexp of a row that sees no key
  bool causal;
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// DV: 32-column chunks of the value head dim each lane accumulates.
template <typename T, int DV>
__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const AttentionParams p) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int e4 = static_cast<int>((p.E + 3) / 4 * 4);  // E padded with zeros
  const int ev = static_cast<int>(p.Ev);
  float* p_s = smem;                          // [kBlockRows][kBlockKeys]: probabilities
  float* q_s = p_s + kBlockRows * kBlockKeys;  // [kBlockRows][e4]
  float* kt_s = q_s + kBlockRows * e4;         // [e4][kKtPitch]: K transposed
  float* v_s = kt_s + e4 * kKtPitch;           // [kBlockKeys][Ev]

  int64_t block = blockIdx.x;
  const int64_t tile = block % p.q_tiles;
  block /= p.q_tiles;
  const int64_t h = block % p.H;
  const int64_t b = block / p.H;
  const int64_t hk = h / p.heads_per_kv;
  const int64_t row0 = tile * kBlockRows;
  const T* q = static_cast<const T*>(p.q) + b * p.qs[0] + h * p.qs[1];
  const T* k = static_cast<const T*>(p.k) + b * p.ks[0] + hk * p.ks[1];
  const T* v = static_cast<const T*>(p.v) + b * p.vs[0] + hk * p.vs[1];
  const T* bias = p.bias ? static_cast<const T*>(p.bias) + b * p.bs[0] + h * p.bs[1] : nullptr;

  const int tid = threadIdx.x, nthreads = blockDim.x;
  for (int idx = tid; idx < kBlockRows * e4; idx += nthreads) {
    const int r = idx / e4, e = idx % e4;
    const int64_t i = row0 + r;
    q_s[idx] = (i < p.Lq && e < p.E) ? to_float(q[i * p.qs[2] + e * p.qs[3]]) : 0.0f;
  }

  const int warp = tid / 32, lane = tid % 32;
  const int64_t first_row = row0 + warp * kRowsPerWarp;
  float* p_rows = p_s + warp * kRowsPerWarp * kBlockKeys;  // this warp's rows
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][DV];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < DV; ++c) acc[r][c] = 0.0f;
  }

  // Causal mask: row i sees keys j <= i + causal_offset, so no key past the
  // block's last row's matters.
  const int64_t key_end =
      p.causal ? min(p.Lk, max(int64_t{0}, row0 + kBlockRows + p.causal_offset)) : p.Lk;
  for (int64_t j0 = 0; j0 < key_end; j0 += kBlockKeys) {
    __syncthreads();  // Q is loaded; the previous tile is consumed
    for (int idx = tid; idx < kBlockKeys * e4; idx += nthreads) {
      const int jj = idx / e4, e = idx % e4;
      const int64_t j = j0 + jj;
      kt_s[e * kKtPitch + jj] =
          (j < p.Lk && e < p.E) ? to_float(k[j * p.ks[2] + e * p.ks[3]]) : 0.0f;
    }
    for (int idx = tid; idx < kBlockKeys * ev; idx += nthreads) {
      const int jj = idx / ev, d = idx % ev;
      const int64_t j = j0 + jj;
      v_s[idx] = j < p.Lk ? to_float(v[j * p.vs[2] + d * p.vs[3]]) : 0.0f;
    }
    __syncthreads();

    // Scores of this lane's key against the warp's rows.
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.0f;
    const float* q_rows = q_s + (warp * kRowsPerWarp) * e4;
    for (int e = 0; e < e4; e += 4) {
      const float k0 = kt_s[(e + 0) * kKtPitch + lane];
      const float k1 = kt_s[(e + 1) * kKtPitch + lane];
      const float k2 = kt_s[(e + 2) * kKtPitch + lane];
      const float k3 = kt_s[(e + 3) * kKtPitch + lane];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 qv = *reinterpret_cast<const float4*>(q_rows + r * e4 + e);
        s[r] = fmaf(qv.x, k0, fmaf(qv.y, k1, fmaf(qv.z, k2, fmaf(qv.w, k3, s[r]))));
      }
    }
    const int64_t j = j0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t i = first_row + r;
      const bool valid = j < p.Lk && i < p.Lq && !(p.causal && j > i + p.causal_offset);
      float x = -INFINITY;
      if (valid) {
        x = s[r] * p.scale;
        if (bias) x += to_float(bias[i * p.bs[2] + j * p.bs[3]]);
      }
      // Online softmax: rescale what was accumulated to the new max.
      const float m_new = fmaxf(m[r], warp_max(x));
      const float prob = x == -INFINITY ? 0.0f : __expf(x - m_new);
      const float correction = m[r] == -INFINITY ? 0.0f : __expf(m[r] - m_new);
      l[r] = l[r] * correction + warp_sum(prob);
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < DV; ++c) acc[r][c] *= correction;
      p_rows[r * kBlockKeys + lane] = prob;
    }
    __syncwarp();

    // acc += P V, four keys at a time: the probabilities come from shared
    // memory as broadcast float4s (shuffles would bound this loop).
    for (int jj = 0; jj < kBlockKeys; jj += 4) {
      float vv[4][DV];
#pragma unroll
      for (int t = 0; t < 4; ++t) {
#pragma unroll
        for (int c = 0; c < DV; ++c) {
          const int d = lane + 32 * c;
          vv[t][c] = d < ev ? v_s[(jj + t) * ev + d] : 0.0f;
        }
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 pj = *reinterpret_cast<const float4*>(p_rows + r * kBlockKeys + jj);
#pragma unroll
        for (int c = 0; c < DV; ++c) {
          acc[r][c] = fmaf(pj.x, vv[0][c], fmaf(pj.y, vv[1][c], fmaf(pj.z, vv[2][c],
                      fmaf(pj.w, vv[3][c], acc[r][c]))));
        }
      }
    }
    __syncwarp();  // p_rows is rewritten by the next tile
  }

  T* out = static_cast<T*>(p.out) + b * p.os[0] + h * p.os[1];
  float* lse = p.lse ? p.lse + b * p.ls[0] + h * p.ls[1] : nullptr;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = first_row + r;
    if (i >= p.Lq) {
      if (lse && lane == 0 && i < p.lse_rows) lse[i * p.ls[2]] = INFINITY;  // padding rows
      continue;
    }
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;  // a fully masked row gives 0
#pragma unroll
    for (int c = 0; c < DV; ++c) {
      const int d = lane + 32 * c;
      if (d < ev) out[i * p.os[2] + d * p.os[3]] = from_float<T>(acc[r][c] * inv);
    }
    if (lse && lane == 0) lse[i * p.ls[2]] = l[r] > 0.0f ? m[r] + logf(l[r]) : p.masked_row_lse;
  }
}

template <typename T, int DV>
void launch_typed(const AttentionParams& p, int64_t blocks, size_t smem, cudaStream_t stream) {
  auto* kernel = attention_kernel<T, DV>;
  if (smem > 48 * 1024) {
    AOTRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
  }
  kernel<<<static_cast<unsigned>(blocks), kWarps * 32, smem, stream>>>(p);
  AOTRT_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_dv(const AttentionParams& p, int64_t blocks, size_t smem, cudaStream_t stream) {
  if (p.Ev <= 32) return launch_typed<T, 1>(p, blocks, smem, stream);
  if (p.Ev <= 64) return launch_typed<T, 2>(p, blocks, smem, stream);
  if (p.Ev <= 128) return launch_typed<T, 4>(p, blocks, smem, stream);
  return launch_typed<T, 8>(p, blocks, smem, stream);
}

std::string shape_str(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// ATen's alloc_with_matching_layout (Note [Attention outputs]).
std::vector<int64_t> matching_layout_strides(const TensorImpl& q,
                                             const std::vector<int64_t>& sizes) {
  if (std::equal(q.sizes().begin(), q.sizes().end(), sizes.begin(), sizes.end())) {
    return preserve_format_strides(q.sizes(), q.strides());  // empty_like(query)
  }
  std::vector<int> order(sizes.size());  // innermost first
  std::iota(order.begin(), order.end(), 0);
  const auto qs = q.strides();
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (qs[a] != qs[b]) return qs[a] < qs[b];
    return a > b;  // on a tie the later dim is inner
  });
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (int d : order) {
    strides[static_cast<size_t>(d)] = running;
    running = checked_mul(running, sizes[static_cast<size_t>(d)], "attention strides");
  }
  return strides;
}

}  // namespace

AttentionOutputs attention(const TensorImpl& query, const TensorImpl& key,
                           const TensorImpl& value, const TensorImpl* attn_bias,
                           bool is_causal, bool causal_bottom_right,
                           std::optional<double> scale, bool compute_log_sumexp,
                           AttentionFlavor flavor, const TensorImpl* out, const char* fn) {
  // --- Arguments.
  const Device device = query.device();
  AOTRT_CHECK(device.is_cuda(), kInvalidArgument, fn, ": 'query' is on ", device.str(),
              ", not on a CUDA device");
  AOTRT_CHECK(key.device() == device && value.device() == device, kInvalidArgument, fn,
              ": query, key and value must be on one device (", device.str(), ", ",
              key.device().str(), ", ", value.device().str(), ")");
  const ScalarType dtype = query.dtype();
  AOTRT_CHECK(dtype == ScalarType::Float32 || dtype == ScalarType::Float16 ||
                  dtype == ScalarType::BFloat16,
              kUnsupported, fn, ": dtype ", dtype_name(dtype),
              " is not served (float32, float16 and bfloat16 are)");
  AOTRT_CHECK(key.dtype() == dtype && value.dtype() == dtype, kInvalidArgument, fn,
              ": query, key and value must have one dtype (", dtype_name(dtype), ", ",
              dtype_name(key.dtype()), ", ", dtype_name(value.dtype()), ")");
  AOTRT_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4, kInvalidArgument, fn,
              ": query, key and value must be 4-d [batch, heads, seq, dim], got ",
              shape_str(query.sizes()), ", ", shape_str(key.sizes()), ", ",
              shape_str(value.sizes()));
  const auto qz = query.sizes(), kz = key.sizes(), vz = value.sizes();
  const int64_t B = qz[0], H = qz[1], Lq = qz[2], E = qz[3];
  const int64_t Hk = kz[1], Lk = kz[2], Ev = vz[3];
  AOTRT_CHECK(kz[0] == B && vz[0] == B && vz[1] == Hk && vz[2] == Lk && kz[3] == E &&
                  Hk > 0 && H % Hk == 0,
              kInvalidArgument, fn, ": shapes do not fit attention: query ", shape_str(qz),
              ", key ", shape_str(kz), ", value ", shape_str(vz));
  AOTRT_CHECK(E <= kMaxHeadDim && Ev <= kMaxHeadDim, kUnsupported, fn, ": head dims ", E,
              " (query/key) and ", Ev, " (value) must be at most ", kMaxHeadDim);

  int64_t bias_strides[4] = {0, 0, 0, 0};
  const void* bias_data = nullptr;
  if (attn_bias != nullptr && attn_bias->defined()) {
    const TensorImpl& bias = *attn_bias;
    AOTRT_CHECK(bias.device() == device, kInvalidArgument, fn, ": attn_bias is on ",
                bias.device().str(), " but query is on ", device.str());
    AOTRT_CHECK(bias.dtype() == dtype, kUnsupported, fn, ": attn_bias has dtype ",
                dtype_name(bias.dtype()), "; it must have the query's dtype ",
                dtype_name(dtype), " (a boolean mask is converted by sdpa before this op)");
    AOTRT_CHECK(bias.dim() <= 4, kInvalidArgument, fn, ": attn_bias has ", bias.dim(),
                " dims");
    const int64_t want[4] = {B, H, Lq, Lk};
    const int shift = 4 - static_cast<int>(bias.dim());
    for (int d = shift; d < 4; ++d) {
      const int64_t size = bias.sizes()[d - shift];
      AOTRT_CHECK(size == want[d] || size == 1, kInvalidArgument, fn, ": attn_bias ",
                  shape_str(bias.sizes()), " does not broadcast to [", B, ", ", H, ", ", Lq,
                  ", ", Lk, "]");
      bias_strides[d] = size == want[d] ? bias.strides()[d - shift] : 0;
    }
    bias_data = bias.data_ptr();
  }

  // --- Outputs (Note [Attention outputs]).
  AttentionOutputs result;
  const std::vector<int64_t> out_sizes{B, H, Lq, Ev};
  std::vector<int64_t> out_strides;
  std::vector<int64_t> lse_sizes, lse_strides;
  int64_t lse_rows = 0;
  if (flavor == AttentionFlavor::kEfficient) {
    out_strides = {Lq * H * Ev, Ev, H * Ev, 1};
    lse_rows = compute_log_sumexp ? (Lq + 31) / 32 * 32 : 0;
    lse_sizes = {B, H, lse_rows};
  } else if (flavor == AttentionFlavor::kFlash) {
    out_strides = matching_layout_strides(query, out_sizes);
    lse_rows = Lq;
    lse_sizes = {B, H, Lq};
  } else {
    out_strides = matching_layout_strides(query, out_sizes);
    lse_rows = compute_log_sumexp ? Lq : 0;
    lse_sizes = {B, H, Lq, 1};
  }
  lse_strides = contiguous_strides(lse_sizes);
  if (out != nullptr) {
    AOTRT_CHECK(std::equal(out->sizes().begin(), out->sizes().end(), out_sizes.begin(),
                           out_sizes.end()) &&
                    out->dtype() == dtype && out->device() == device,
                kInvalidArgument, fn, ": out ", shape_str(out->sizes()), " ",
                dtype_name(out->dtype()), " on ", out->device().str(), " must be ",
                shape_str(out_sizes), " ", dtype_name(dtype), " on ", device.str());
    out_strides.assign(out->strides().begin(), out->strides().end());
  } else {
    result.output = empty_strided(out_sizes, out_strides, dtype, device, fn);
  }
  const TensorImpl& output = out != nullptr ? *out : *result.output;
  if (flavor != AttentionFlavor::kCudnn || compute_log_sumexp) {
    result.logsumexp = empty_strided(lse_sizes, lse_strides, ScalarType::Float32, device, fn);
  } else {
    result.logsumexp = std::make_unique<TensorImpl>();  // undefined, as ATen returns None
  }
  if (output.numel() == 0 && lse_rows == 0) return result;

  // --- Launch.
  AttentionParams p{};
  p.q = query.data_ptr();
  p.k = key.data_ptr();
  p.v = value.data_ptr();
  p.bias = bias_data;
  p.out = output.data_ptr();
  p.lse = lse_rows > 0 ? static_cast<float*>(result.logsumexp->data_ptr()) : nullptr;
  p.H = H;
  p.Lq = Lq;
  p.Lk = Lk;
  p.E = E;
  p.Ev = Ev;
  p.heads_per_kv = H / Hk;
  p.q_tiles = (std::max(Lq, lse_rows) + kBlockRows - 1) / kBlockRows;
  p.lse_rows = lse_rows;
  for (int d = 0; d < 4; ++d) {
    p.qs[d] = query.strides()[d];
    p.ks[d] = key.strides()[d];
    p.vs[d] = value.strides()[d];
    p.bs[d] = bias_strides[d];
    p.os[d] = out_strides[d];
  }
  for (int d = 0; d < 3; ++d) p.ls[d] = lse_strides[d];
  p.scale = static_cast<float>(scale.has_value() ? *scale : 1.0 / std::sqrt(double(E)));
  p.causal = is_causal;
  p.causal_offset = is_causal && causal_bottom_right ? Lk - Lq : 0;
  p.masked_row_lse = flavor == AttentionFlavor::kFlash ? INFINITY : 0.0f;

  const int64_t blocks = p.q_tiles * H * B;
  if (blocks == 0) return result;
  AOTRT_CHECK(blocks <= INT32_MAX, kUnsupported, fn, ": ", blocks,
              " thread blocks exceed one launch");
  const int64_t e4 = (E + 3) / 4 * 4;
  const size_t smem = sizeof(float) * static_cast<size_t>(kBlockRows * kBlockKeys + kBlockRows * e4 +
                                                         e4 * kKtPitch + kBlockKeys * Ev);
  DeviceGuard guard(device.index);
  cudaStream_t stream = current_cuda_stream(device.index);
  // A decode step (a few query rows): flash-decoding over the cache (Note [Decode attention]),
  // before cuDNN or after it (Note [Decode attention or cuDNN]).
  DecodeAttentionCall decode{};
  bool decode_after_cudnn = false;
  if (Lq <= 8) {
    DecodeAttentionCall& call = decode;
    call.dtype = dtype;
    call.q = p.q;
    call.k = p.k;
    call.v = p.v;
    call.bias = p.bias;
    call.out = p.out;
    call.lse = p.lse;
    const int64_t sizes[7] = {B, H, Hk, Lq, Lk, E, Ev};
    std::copy(sizes, sizes + 7, call.sizes);
    std::copy(p.qs, p.qs + 4, call.q_strides);
    std::copy(p.ks, p.ks + 4, call.k_strides);
    std::copy(p.vs, p.vs + 4, call.v_strides);
    std::copy(p.bs, p.bs + 4, call.bias_strides);
    std::copy(p.os, p.os + 4, call.out_strides);
    std::copy(p.ls, p.ls + 3, call.lse_strides);
    call.lse_rows = lse_rows;
    call.causal = is_causal;
    call.causal_offset = p.causal_offset;
    call.scale = p.scale;
    call.masked_row_lse = p.masked_row_lse;
    decode_after_cudnn = decode_attention_prefers_cudnn(call);
    if (!decode_after_cudnn && decode_attention(call, device.index, stream, fn)) return result;
  }
  // fp16/bf16 go to cuDNN's tensor-core kernels when it serves the call (Note
  // [cuDNN attention]); the memory-efficient flavour's padded logsumexp rows
  // are aotrt's kernel's to write, and so are the rows a bottom-right causal
  // mask hides every key from (cuDNN refuses Lq > Lk with that mask anyway)
  // and, in the flash flavor, the +inf logsumexp of rows without keys (Lk 0).
  if (dtype != ScalarType::Float32 && (lse_rows == 0 || lse_rows == Lq) &&
      p.causal_offset >= 0 && (flavor != AttentionFlavor::kFlash || Lk > 0)) {
    int64_t bias_sizes[4] = {1, 1, 1, 1}, bias_view_strides[4] = {0, 0, 0, 0};
    if (bias_data != nullptr) {
      const int64_t want[4] = {B, H, Lq, Lk};
      for (int d = 3; d >= 0; --d) {
        const bool broadcast = bias_strides[d] == 0 && (d < 4 - attn_bias->dim() ||
                                                         attn_bias->sizes()[d - (4 - attn_bias->dim())] == 1);
        bias_sizes[d] = broadcast ? 1 : want[d];
        bias_view_strides[d] = broadcast ? (d == 3 ? 1 : bias_sizes[d + 1] * bias_view_strides[d + 1])
                                         : bias_strides[d];
      }
    }
    CudnnAttentionCall call{};
    call.dtype = dtype;
    call.q = strided_view(query);
    call.k = strided_view(key);
    call.v = strided_view(value);
    call.out = strided_view(output);
    call.bias.data = static_cast<char*>(const_cast<void*>(bias_data));
    call.bias.sizes = bias_sizes;
    call.bias.strides = bias_view_strides;
    call.bias.dtype = dtype;
    call.bias.device = device;
    call.lse = p.lse;
    call.lse_strides = p.ls;
    call.causal = is_causal;
    call.causal_bottom_right = is_causal && causal_bottom_right && Lq != Lk;
    call.scale = p.scale;
    if (cudnn_attention(call, device.index, stream, fn)) return result;
  }
  if (decode_after_cudnn && decode_attention(decode, device.index, stream, fn)) return result;
  switch (dtype) {
    case ScalarType::Float32: launch_dv<float>(p, blocks, smem, stream); break;
    case ScalarType::Float16: launch_dv<__half>(p, blocks, smem, stream); break;
    default: launch_dv<__nv_bfloat16>(p, blocks, smem, stream); break;
  }
  return result;
}

}  // namespace aotrt::cuda
