// aoti_torch_cuda__scaled_dot_product_{efficient,cudnn,flash}_attention,
// aoti_torch_cuda__efficient_attention_forward and
// aoti_torch_cuda__flash_attention_forward with its inplace form
// (cuda/attention.cu) against a double-precision softmax(q k^T * scale +
// bias) v on the host, for permuted and padded views, causal masks from either
// corner, broadcast biases, head dims up to 256 and the three floating dtypes;
// and the shapes, layouts and extra outputs ATen returns (Note [Attention
// outputs], Note [Flash attention]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/handles.h"
#include "cuda/runtime.h"
#include "library_test_util.h"

namespace aotrt::cuda_test {
namespace {

// kForward: _efficient_attention_forward, given the case's [B, H, L, E] views
// transposed to [B, L, H, E] (the same memory), its output viewed back.
// kFlash: _scaled_dot_product_flash_attention; kFlashForward:
// _flash_attention_forward, given and giving back views as kForward. The flash
// ops' causal mask is always the bottom-right one.
enum class Flavor { kEfficient, kCudnn, kForward, kFlash, kFlashForward };
bool is_flash(Flavor f) { return f == Flavor::kFlash || f == Flavor::kFlashForward; }

constexpr int32_t kU64 = 29;

ViewSpec bhle(int64_t B, int64_t H, int64_t L, int64_t E) {
  return {{B, H, L, E}, {H * L * E, L * E, E, 1}, 0};
}
// [B, H, L, E] viewed out of a [B, L, H, E] buffer (linear -> view -> transpose).
ViewSpec blhe(int64_t B, int64_t H, int64_t L, int64_t E) {
  return {{B, H, L, E}, {L * H * E, E, H * E, 1}, 0};
}

struct AttentionCase {
  Flavor flavor = Flavor::kEfficient;
  int32_t dtype = kF32;
  ViewSpec q, k, v;
  bool has_bias = false;
  ViewSpec bias;
  double bias_fill = 0.0;  // used when bias_special
  bool bias_special = false;
  bool causal = false;
  bool bottom_right = false;  // kForward's custom_mask_type 2: key j hidden when j > i + Lk - Lq
  bool has_scale = false;
  double scale = 0.0;
  bool compute_lse = true;
  // Flash flavors: the [B, H, Lq, E] strides of the output ATen's meta function
  // gives (empty_like(query)); empty: the query's own (a dense query).
  std::vector<int64_t> want_out_strides;
  std::string label;
};

// A [B, H, L, E] view's memory seen as [B, L, H, E].
Handle bmhk_view(AtenTensorHandle t) {
  const std::vector<int64_t> z = sizes_of(t), st = strides_of(t);
  const int64_t sizes[] = {z[0], z[2], z[1], z[3]}, strides[] = {st[0], st[2], st[1], st[3]};
  Handle h;
  EXPECT_EQ(aoti_torch__reinterpret_tensor(t, 4, sizes, strides, 0, h.out()), 0);
  return h;
}

// The uint64 elements of a CUDA tensor.
std::vector<uint64_t> read_u64(AtenTensorHandle h, size_t n) {
  void* data = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &data), 0);
  std::vector<uint64_t> out(n);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (n > 0) EXPECT_EQ(cudaMemcpy(out.data(), data, n * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

// The philox state (rng_state uint64 [2], unused uint64 []), both zero, and the
// empty debug mask, all on the GPU, as the flash ops return them.
void expect_flash_extras(AtenTensorHandle rng, AtenTensorHandle unused, AtenTensorHandle debug,
                         int32_t dtype) {
  for (const auto& [h, sizes] : std::vector<std::pair<AtenTensorHandle, std::vector<int64_t>>>{
           {rng, {2}}, {unused, {}}}) {
    int32_t dt = -1, device = -1;
    EXPECT_EQ(aoti_torch_get_dtype(h, &dt), 0);
    EXPECT_EQ(aoti_torch_get_device_type(h, &device), 0);
    EXPECT_EQ(sizes_of(h), sizes);
    EXPECT_EQ(dt, kU64);
    EXPECT_EQ(device, kCUDA);
    EXPECT_EQ(read_u64(h, sizes.empty() ? 1 : 2), std::vector<uint64_t>(sizes.empty() ? 1 : 2, 0));
  }
  int32_t dt = -1, device = -1;
  EXPECT_EQ(aoti_torch_get_dtype(debug, &dt), 0);
  EXPECT_EQ(aoti_torch_get_device_type(debug, &device), 0);
  EXPECT_EQ(sizes_of(debug), (std::vector<int64_t>{0}));
  EXPECT_EQ(dt, dtype);
  EXPECT_EQ(device, kCUDA);
}

void check(const AttentionCase& c) {
  SCOPED_TRACE(c.label);
  Rng rng(std::hash<std::string>{}(c.label));
  // Storage for q, k and v may be shared (one packed qkv buffer): give each
  // its own storage big enough for its view.
  DeviceView q(c.dtype, c.q, extent(c.q), rng);
  DeviceView k(c.dtype, c.k, extent(c.k), rng);
  DeviceView v(c.dtype, c.v, extent(c.v), rng);
  std::unique_ptr<DeviceView> bias;
  if (c.has_bias) {
    bias = c.bias_special ? std::make_unique<DeviceView>(c.dtype, c.bias, extent(c.bias), c.bias_fill)
                          : std::make_unique<DeviceView>(c.dtype, c.bias, extent(c.bias), rng, 2.0);
  }
  const int64_t B = c.q.sizes[0], H = c.q.sizes[1], Lq = c.q.sizes[2], E = c.q.sizes[3];
  const int64_t Hk = c.k.sizes[1], Lk = c.k.sizes[2], Ev = c.v.sizes[3];
  const double scale = c.has_scale ? c.scale : 1.0 / std::sqrt(static_cast<double>(E));
  const bool flash = is_flash(c.flavor);
  const bool bottom_right = c.bottom_right || flash;

  // The reference, row-major [B, H, Lq, Ev], and lse [B, H, Lq].
  std::vector<double> want(static_cast<size_t>(B * H * Lq * Ev)), want_lse(static_cast<size_t>(B * H * Lq));
  std::vector<double> s(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t hk = h / (H / Hk);
        double m = -INFINITY;
        for (int64_t j = 0; j < Lk; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += q.at({b, h, i, e}) * k.at({b, hk, j, e});
          double x = dot * scale;
          if (bias) {
            const int64_t full[4] = {b, h, i, j};
            std::vector<int64_t> idx;
            const size_t shift = 4 - c.bias.sizes.size();
            for (size_t d = 0; d < c.bias.sizes.size(); ++d) {
              idx.push_back(c.bias.sizes[d] == 1 ? 0 : full[d + shift]);
            }
            x += bias->at(idx);
          }
          if (c.causal && j > i + (bottom_right ? Lk - Lq : 0)) x = -INFINITY;
          s[static_cast<size_t>(j)] = x;
          m = std::max(m, x);
        }
        double l = 0;
        for (int64_t j = 0; j < Lk; ++j) l += m == -INFINITY ? 0.0 : std::exp(s[j] - m);
        const size_t row = static_cast<size_t>((b * H + h) * Lq + i);
        // A row without keys: 0 for the memory-efficient kernel, +inf for FlashAttention.
        want_lse[row] = l > 0 ? m + std::log(l) : (flash ? INFINITY : 0.0);
        for (int64_t d = 0; d < Ev; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < Lk; ++j) {
            if (l > 0 && s[j] != -INFINITY) acc += std::exp(s[j] - m) / l * v.at({b, hk, j, d});
          }
          want[row * static_cast<size_t>(Ev) + static_cast<size_t>(d)] = acc;
        }
      }

  const uint64_t packs_before = aotrt::cuda::pack_count();
  AtenTensorHandle bias_h = bias ? bias->get() : nullptr;
  double scale_arg = c.scale;
  Handle out, lse, r2, r3, r6, r7, r8;
  int64_t max_q = -1, max_k = -1;
  if (c.flavor == Flavor::kForward) {
    Handle qf = bmhk_view(q.get()), kf = bmhk_view(k.get()), vf = bmhk_view(v.get()), out_bmhk;
    AOTRT_OK(aoti_torch_cuda__efficient_attention_forward(
        qf.get(), kf.get(), vf.get(), bias ? &bias_h : nullptr, nullptr, nullptr, nullptr,
        nullptr, 0.0, c.causal ? (c.bottom_right ? 2 : 1) : 0, c.compute_lse,
        c.has_scale ? &scale_arg : nullptr, nullptr, nullptr, out_bmhk.out(), lse.out(),
        r2.out(), r3.out(), &max_q, &max_k));
    EXPECT_EQ(sizes_of(out_bmhk.get()), (std::vector<int64_t>{B, Lq, H, Ev}));
    EXPECT_EQ(strides_of(out_bmhk.get()), (std::vector<int64_t>{Lq * H * Ev, H * Ev, Ev, 1}))
        << "the output is a contiguous [B, M, H, Kv] tensor";
    const int64_t sizes[] = {B, H, Lq, Ev}, strides[] = {Lq * H * Ev, Ev, H * Ev, 1};
    AOTRT_OK(aoti_torch__reinterpret_tensor(out_bmhk.get(), 4, sizes, strides, 0, out.out()));
    EXPECT_EQ(max_q, Lq);
    EXPECT_EQ(max_k, Lk);
  } else if (c.flavor == Flavor::kFlash) {
    AOTRT_OK(aoti_torch_cuda__scaled_dot_product_flash_attention(
        q.get(), k.get(), v.get(), 0.0, c.causal, /*return_debug_mask=*/0,
        c.has_scale ? &scale_arg : nullptr, out.out(), lse.out(), r2.out(), r3.out(), &max_q,
        &max_k, r6.out(), r7.out(), r8.out()));
    EXPECT_EQ(max_q, Lq);
    EXPECT_EQ(max_k, Lk);
    for (AtenTensorHandle h : {r2.get(), r3.get()}) {
      bool defined = true;
      EXPECT_EQ(aoti_torch_is_defined(h, &defined), 0);
      EXPECT_FALSE(defined) << "cum_seq_q/k are undefined";
    }
  } else if (c.flavor == Flavor::kFlashForward) {
    Handle qf = bmhk_view(q.get()), kf = bmhk_view(k.get()), vf = bmhk_view(v.get()), out_bmhk;
    AOTRT_OK(aoti_torch_cuda__flash_attention_forward(
        qf.get(), kf.get(), vf.get(), nullptr, nullptr, Lq, Lk, 0.0, c.causal,
        /*return_debug_mask=*/0, c.has_scale ? &scale_arg : nullptr, nullptr, nullptr, nullptr,
        nullptr, out_bmhk.out(), lse.out(), r6.out(), r7.out(), r8.out()));
    EXPECT_EQ(sizes_of(out_bmhk.get()), (std::vector<int64_t>{B, Lq, H, Ev}));
    out = bmhk_view(out_bmhk.get());
  } else if (c.flavor == Flavor::kEfficient) {
    AOTRT_OK(aoti_torch_cuda__scaled_dot_product_efficient_attention(
        q.get(), k.get(), v.get(), bias ? &bias_h : nullptr, c.compute_lse, 0.0, c.causal,
        c.has_scale ? &scale_arg : nullptr, out.out(), lse.out(), r2.out(), r3.out()));
  } else {
    AOTRT_OK(aoti_torch_cuda__scaled_dot_product_cudnn_attention(
        q.get(), k.get(), v.get(), bias ? &bias_h : nullptr, c.compute_lse, 0.0, c.causal,
        /*return_debug_mask=*/0, c.has_scale ? &scale_arg : nullptr, out.out(), lse.out(),
        r2.out(), r3.out(), &max_q, &max_k, r6.out(), r7.out(), r8.out()));
  }
  EXPECT_EQ(aotrt::cuda::pack_count(), packs_before) << "attention copied an operand";

  // Output: shape, ATen's layout, values.
  ASSERT_EQ(sizes_of(out.get()), (std::vector<int64_t>{B, H, Lq, Ev}));
  if (flash) {
    EXPECT_EQ(strides_of(out.get()), c.want_out_strides.empty() ? c.q.strides : c.want_out_strides)
        << "flash's output is empty_like(query) in the op's layout";
  } else if (c.flavor != Flavor::kCudnn) {
    EXPECT_EQ(strides_of(out.get()), (std::vector<int64_t>{Lq * H * Ev, Ev, H * Ev, 1}))
        << "efficient attention returns a [B, Lq, H, Ev] tensor transposed";
  }
  const double out_tol = c.dtype == kF32 ? 5e-5 : 2e-3;
  const double out_rel = c.dtype == kBF16 ? 1.0 / 128 : c.dtype == kF16 ? 1.0 / 512 : 0.0;
  std::vector<double> tol(want.size());
  for (size_t i = 0; i < want.size(); ++i) tol[i] = out_tol + out_rel * std::fabs(want[i]);
  expect_within(read(out.get()), want, tol, c.label + ": output");

  // Logsumexp.
  bool lse_defined = false;
  EXPECT_EQ(aoti_torch_is_defined(lse.get(), &lse_defined), 0);
  const std::vector<double> got_lse = lse_defined ? read(lse.get()) : std::vector<double>{};
  const double lse_tol = c.dtype == kF32 ? 5e-5 : 1e-3;
  if (flash) {
    ASSERT_TRUE(lse_defined) << "flash always returns the logsumexp";
    EXPECT_EQ(sizes_of(lse.get()), (std::vector<int64_t>{B, H, Lq}));
    EXPECT_EQ(strides_of(lse.get()), (std::vector<int64_t>{H * Lq, Lq, 1}));
    expect_within(got_lse, want_lse, std::vector<double>(want_lse.size(), lse_tol),
                  c.label + ": lse");
    expect_flash_extras(r6.get(), r7.get(), r8.get(), c.dtype);
  } else if (c.flavor != Flavor::kCudnn) {
    const int64_t padded = c.compute_lse ? (Lq + 31) / 32 * 32 : 0;
    ASSERT_EQ(sizes_of(lse.get()), (std::vector<int64_t>{B, H, padded}));
    if (c.compute_lse) {
      std::vector<double> full(static_cast<size_t>(B * H * padded), INFINITY);
      for (int64_t bh = 0; bh < B * H; ++bh)
        for (int64_t i = 0; i < Lq; ++i) full[bh * padded + i] = want_lse[bh * Lq + i];
      expect_within(got_lse, full, std::vector<double>(full.size(), lse_tol), c.label + ": lse");
    }
    // Seed and offset: 0-d int64 on the CPU.
    for (AtenTensorHandle h : {r2.get(), r3.get()}) {
      int64_t dim = -1;
      int32_t dtype = -1, device = -1;
      EXPECT_EQ(aoti_torch_get_dim(h, &dim), 0);
      EXPECT_EQ(aoti_torch_get_dtype(h, &dtype), 0);
      EXPECT_EQ(aoti_torch_get_device_type(h, &device), 0);
      EXPECT_EQ(dim, 0);
      EXPECT_EQ(dtype, kI64);
      EXPECT_EQ(device, kCPU);
    }
  } else {
    if (c.compute_lse) {
      ASSERT_EQ(sizes_of(lse.get()), (std::vector<int64_t>{B, H, Lq, 1}));
      expect_within(got_lse, want_lse, std::vector<double>(want_lse.size(), lse_tol),
                    c.label + ": lse");
    } else {
      EXPECT_FALSE(lse_defined) << "cuDNN attention returns no logsumexp unless asked";
    }
    EXPECT_EQ(max_q, Lq);
    EXPECT_EQ(max_k, Lk);
    for (AtenTensorHandle h : {r2.get(), r3.get(), r8.get()}) {
      bool defined = true;
      EXPECT_EQ(aoti_torch_is_defined(h, &defined), 0);
      EXPECT_FALSE(defined) << "cum_seq_q/k and the debug mask are undefined";
    }
    for (AtenTensorHandle h : {r6.get(), r7.get()}) {
      int64_t dim = -1;
      int32_t device = -1;
      EXPECT_EQ(aoti_torch_get_dim(h, &dim), 0);
      EXPECT_EQ(aoti_torch_get_device_type(h, &device), 0);
      EXPECT_EQ(dim, 0);
      EXPECT_EQ(device, kCUDA);
    }
  }
}

TEST(CudaAttention, EfficientPlain) {
  AOTRT_REQUIRE_GPU();
  AttentionCase c;
  c.q = bhle(2, 3, 37, 64);
  c.k = bhle(2, 3, 45, 64);
  c.v = bhle(2, 3, 45, 64);
  c.label = "efficient fp32 Lq 37 Lk 45 E 64";
  check(c);
  c.compute_lse = false;
  c.label = "efficient without logsumexp";
  check(c);
}

TEST(CudaAttention, CausalIsUpperLeft) {
  AOTRT_REQUIRE_GPU();
  for (const auto& [lq, lk] : std::vector<std::pair<int64_t, int64_t>>{{50, 50}, {20, 50}, {70, 40}}) {
    AttentionCase c;
    c.q = bhle(1, 2, lq, 32);
    c.k = bhle(1, 2, lk, 32);
    c.v = bhle(1, 2, lk, 32);
    c.causal = true;
    c.label = "causal Lq " + std::to_string(lq) + " Lk " + std::to_string(lk);
    check(c);
  }
}

TEST(CudaAttention, BroadcastAndPaddedBias) {
  AOTRT_REQUIRE_GPU();
  const int64_t B = 2, H = 2, Lq = 33, Lk = 29, E = 16;
  AttentionCase c;
  c.q = bhle(B, H, Lq, E);
  c.k = bhle(B, H, Lk, E);
  c.v = bhle(B, H, Lk, E);
  c.has_bias = true;
  c.bias = ViewSpec{{1, H, Lq, Lk}, {0, Lq * Lk, Lk, 1}, 0};
  c.label = "bias [1, H, Lq, Lk]";
  check(c);
  c.bias = ViewSpec{{Lq, Lk}, {Lk, 1}, 3};
  c.label = "bias [Lq, Lk]";
  check(c);
  // sdpa pads the bias' last dim for alignment and slices it back.
  const int64_t pitch = (Lk + 7) / 8 * 8;
  c.bias = ViewSpec{{B, H, Lq, Lk}, {H * Lq * pitch, Lq * pitch, pitch, 1}, 0};
  c.causal = true;
  c.label = "padded bias [B, H, Lq, Lk] with row pitch 32, causal";
  check(c);
  c.causal = false;
  c.bias = ViewSpec{{B, 1, 1, Lk}, {Lk, 0, 0, 1}, 0};
  c.label = "key-padding style bias [B, 1, 1, Lk]";
  check(c);
}

TEST(CudaAttention, PermutedViewsOfOnePackedQkv) {
  AOTRT_REQUIRE_GPU();
  // q, k, v as Inductor passes them after linear -> view(B, L, 3, H, E) -> permute.
  const int64_t B = 2, L = 40, H = 4, E = 32;
  const std::vector<int64_t> strides{L * 3 * H * E, E, 3 * H * E, 1};
  AttentionCase c;
  c.q = ViewSpec{{B, H, L, E}, strides, 0};
  c.k = ViewSpec{{B, H, L, E}, strides, H * E};
  c.v = ViewSpec{{B, H, L, E}, strides, 2 * H * E};
  c.causal = true;
  c.label = "q, k, v permuted out of one [B, L, 3, H, E] buffer";
  check(c);
  // A transposed head dim (E not innermost) is read as it is too.
  c.q = ViewSpec{{B, H, L, E}, {H * L * E, L * E, 1, L}, 0};
  c.label = "q with its head dim outermost";
  check(c);
}

TEST(CudaAttention, ScaleAndHeadDims) {
  AOTRT_REQUIRE_GPU();
  AttentionCase c;
  c.q = bhle(1, 2, 21, 32);
  c.k = bhle(1, 2, 35, 32);
  c.v = bhle(1, 2, 35, 80);
  c.has_scale = true;
  c.scale = 0.3;
  c.label = "scale 0.3, E 32, Ev 80";
  check(c);
  c.has_scale = false;
  c.q = bhle(1, 1, 40, 70);
  c.k = bhle(1, 1, 47, 70);
  c.v = bhle(1, 1, 47, 70);
  c.label = "E 70 (not a multiple of 4)";
  check(c);
  c.q = bhle(1, 2, 33, 256);
  c.k = bhle(1, 2, 70, 256);
  c.v = bhle(1, 2, 70, 256);
  c.causal = true;
  c.label = "E 256 (more than 48 KiB of shared memory)";
  check(c);
  c.q = bhle(2, 2, 1, 128);
  c.k = bhle(2, 2, 300, 128);
  c.v = bhle(2, 2, 300, 128);
  c.causal = false;
  c.label = "decode: one query row";
  check(c);
}

TEST(CudaAttention, GroupedKeyValueHeads) {
  AOTRT_REQUIRE_GPU();
  AttentionCase c;
  c.q = bhle(1, 4, 19, 16);
  c.k = bhle(1, 2, 23, 16);
  c.v = bhle(1, 2, 23, 16);
  c.label = "4 query heads over 2 key/value heads";
  check(c);
}

TEST(CudaAttention, HalfPrecisions) {
  AOTRT_REQUIRE_GPU();
  for (int32_t dt : {kBF16, kF16}) {
    const std::string name = dt == kBF16 ? "bf16" : "fp16";
    AttentionCase c;
    c.dtype = dt;
    c.q = blhe(2, 4, 45, 128);
    c.k = blhe(2, 4, 60, 128);
    c.v = blhe(2, 4, 60, 128);
    c.has_bias = true;
    c.bias = ViewSpec{{2, 1, 45, 60}, {45 * 60, 0, 60, 1}, 0};
    c.label = name + " efficient with bias, E 128";
    check(c);
    c.flavor = Flavor::kCudnn;
    c.has_bias = false;
    c.causal = true;
    c.label = name + " cudnn causal";
    check(c);
    c.compute_lse = false;
    c.label = name + " cudnn without logsumexp";
    check(c);
  }
}

TEST(CudaAttention, CudnnOutputFollowsTheQueryLayout) {
  AOTRT_REQUIRE_GPU();
  Rng rng(9);
  const int64_t B = 2, H = 3, L = 17, E = 24;
  for (const auto& [name, spec] : std::vector<std::pair<std::string, ViewSpec>>{
           {"q [B, H, L, E] contiguous", bhle(B, H, L, E)},
           {"q transposed from [B, L, H, E]", blhe(B, H, L, E)}}) {
    AttentionCase c;
    c.flavor = Flavor::kCudnn;
    c.q = spec;
    c.k = bhle(B, H, L, E);
    c.v = bhle(B, H, L, E);
    c.label = "cudnn, " + name;
    check(c);
    // Same shape as q: empty_like(q), so q's strides.
    DeviceView q(kF32, spec, extent(spec), rng);
    DeviceView k(kF32, c.k, extent(c.k), rng), v(kF32, c.v, extent(c.v), rng);
    Handle out, lse, r2, r3, r6, r7, r8;
    int64_t mq = 0, mk = 0;
    AOTRT_OK(aoti_torch_cuda__scaled_dot_product_cudnn_attention(
        q.get(), k.get(), v.get(), nullptr, 1, 0.0, 0, 0, nullptr, out.out(), lse.out(), r2.out(),
        r3.out(), &mq, &mk, r6.out(), r7.out(), r8.out()));
    EXPECT_EQ(strides_of(out.get()), spec.strides) << name;
  }
  // A value head dim different from q's: q's dim order, dense.
  DeviceView q(kF32, blhe(B, H, L, E), extent(blhe(B, H, L, E)), rng);
  DeviceView k(kF32, bhle(B, H, L, E), extent(bhle(B, H, L, E)), rng);
  DeviceView v(kF32, bhle(B, H, L, 40), extent(bhle(B, H, L, 40)), rng);
  Handle out, lse, r2, r3, r6, r7, r8;
  int64_t mq = 0, mk = 0;
  AOTRT_OK(aoti_torch_cuda__scaled_dot_product_cudnn_attention(
      q.get(), k.get(), v.get(), nullptr, 1, 0.0, 0, 0, nullptr, out.out(), lse.out(), r2.out(),
      r3.out(), &mq, &mk, r6.out(), r7.out(), r8.out()));
  EXPECT_EQ(strides_of(out.get()), (std::vector<int64_t>{L * H * 40, 40, H * 40, 1}));
}

TEST(CudaAttention, FullyMaskedRowGivesZero) {
  AOTRT_REQUIRE_GPU();
  AttentionCase c;
  c.q = bhle(1, 1, 5, 8);
  c.k = bhle(1, 1, 6, 8);
  c.v = bhle(1, 1, 6, 8);
  c.has_bias = true;
  c.bias_special = true;
  c.bias_fill = -INFINITY;
  c.bias = ViewSpec{{5, 6}, {6, 1}, 0};
  c.label = "every key masked";
  check(c);
}

// _efficient_attention_forward: the op of OpInfo's samples, on aotrt's kernel
// (fp32) and, for fp16/bf16, cuDNN's where it serves a bottom-right mask (no
// bias, Lq <= Lk). The rows of tests/unit/ops/test_ops_attention.cpp compare
// it with eager torch; these add layouts, tiles and GQA.
TEST(CudaAttention, EfficientForwardMaskCorners) {
  AOTRT_REQUIRE_GPU();
  for (const auto& [lq, lk] : std::vector<std::pair<int64_t, int64_t>>{{11, 32}, {50, 50}, {33, 100}}) {
    for (bool bottom_right : {false, true}) {
      AttentionCase c;
      c.flavor = Flavor::kForward;
      c.q = bhle(2, 2, lq, 32);
      c.k = bhle(2, 2, lk, 32);
      c.v = bhle(2, 2, lk, 32);
      c.causal = true;
      c.bottom_right = bottom_right;
      c.label = std::string(bottom_right ? "bottom-right" : "top-left") + " Lq " +
                std::to_string(lq) + " Lk " + std::to_string(lk);
      check(c);
    }
  }
  for (int32_t dt : {kF16, kBF16}) {
    AttentionCase c;
    c.flavor = Flavor::kForward;
    c.dtype = dt;
    c.q = blhe(1, 4, 64, 64);  // contiguous [B, L, H, E] memory, as the op is usually given
    c.k = blhe(1, 4, 128, 64);
    c.v = blhe(1, 4, 128, 64);
    c.causal = c.bottom_right = true;
    c.label = std::string(dt == kF16 ? "fp16" : "bf16") + " bottom-right, cuDNN's kernels";
    check(c);
    c.compute_lse = false;
    c.has_bias = true;
    c.bias = ViewSpec{{1, 4, 64, 128}, {4 * 64 * 128, 64 * 128, 128, 1}, 0};
    c.label = std::string(dt == kF16 ? "fp16" : "bf16") + " bottom-right with a bias (aotrt's kernel)";
    check(c);
  }
  AttentionCase c;
  c.flavor = Flavor::kForward;
  c.q = bhle(1, 4, 19, 16);
  c.k = bhle(1, 2, 40, 16);
  c.v = bhle(1, 2, 40, 24);
  c.has_scale = true;
  c.scale = 0.7;
  c.causal = c.bottom_right = true;
  c.label = "bottom-right, GQA, Ev 24, scale 0.7";
  check(c);
}

// With Lq > Lk a bottom-right mask hides every key from the first Lq - Lk
// queries: aotrt gives them output 0 and logsumexp 0, its convention for a
// fully masked row (Note [Attention outputs]); not checked against ATen.
TEST(CudaAttention, EfficientForwardBottomRightHiddenRows) {
  AOTRT_REQUIRE_GPU();
  for (int32_t dt : {kF32, kF16}) {
    AttentionCase c;
    c.flavor = Flavor::kForward;
    c.dtype = dt;
    c.q = bhle(1, 2, 45, 32);
    c.k = bhle(1, 2, 20, 32);
    c.v = bhle(1, 2, 20, 32);
    c.causal = c.bottom_right = true;
    c.label = std::string(dt == kF32 ? "fp32" : "fp16") + " bottom-right Lq 45 Lk 20";
    check(c);
  }
}

// The flash ops (Note [Flash attention]): FlashAttention's causal mask ends at the
// bottom-right corner, which is the top-left one when Lq == Lk; fp32 on aotrt's kernel,
// fp16/bf16 on cuDNN's where it serves the call; odd lengths over several tiles; a
// decode step. Each against the host reference, with ATen's layouts and extra outputs.
TEST(CudaAttention, FlashCausalCorners) {
  AOTRT_REQUIRE_GPU();
  for (int32_t dt : {kF32, kF16, kBF16}) {
    const std::string name = dt == kF32 ? "fp32" : dt == kF16 ? "fp16" : "bf16";
    for (Flavor flavor : {Flavor::kFlash, Flavor::kFlashForward}) {
      const std::string op = flavor == Flavor::kFlash ? "sdpa flash " : "flash forward ";
      for (const auto& [lq, lk] : std::vector<std::pair<int64_t, int64_t>>{{67, 67}, {37, 100}, {1, 77}}) {
        AttentionCase c;
        c.flavor = flavor;
        c.dtype = dt;
        c.q = blhe(2, 2, lq, 64);
        c.k = blhe(2, 2, lk, 64);
        c.v = blhe(2, 2, lk, 64);
        c.causal = true;
        c.label = op + name + " causal Lq " + std::to_string(lq) + " Lk " + std::to_string(lk) +
                  (lq == lk ? " (top-left = bottom-right)" : " (bottom-right)");
        check(c);
      }
      AttentionCase c;
      c.flavor = flavor;
      c.dtype = dt;
      c.q = blhe(1, 3, 45, 64);
      c.k = blhe(1, 3, 61, 64);
      c.v = blhe(1, 3, 61, 64);
      c.has_scale = true;
      c.scale = 0.2;
      c.label = op + name + " no mask, Lq 45 Lk 61, scale 0.2";
      check(c);
    }
  }
}

TEST(CudaAttention, FlashGroupedHeadsAndHeadDims) {
  AOTRT_REQUIRE_GPU();
  for (int32_t dt : {kF16, kBF16, kF32}) {
    const std::string name = dt == kF32 ? "fp32" : dt == kF16 ? "fp16" : "bf16";
    for (int64_t E : {64, 128}) {
      AttentionCase c;
      c.flavor = Flavor::kFlash;
      c.dtype = dt;
      c.q = blhe(1, 8, 129, E);
      c.k = blhe(1, 2, 129, E);
      c.v = blhe(1, 2, 129, E);
      c.causal = true;
      c.label = "sdpa flash " + name + " GQA 8 over 2 heads, causal L 129, E " + std::to_string(E);
      check(c);
      c.flavor = Flavor::kFlashForward;
      c.q = blhe(2, 8, 1, E);
      c.k = blhe(2, 1, 300, E);
      c.v = blhe(2, 1, 300, E);
      c.label = "flash forward " + name + " decode, 8 query heads over 1, E " + std::to_string(E);
      check(c);
    }
  }
  // A contiguous [B, H, L, E] query: its layout is the output's.
  AttentionCase c;
  c.flavor = Flavor::kFlash;
  c.dtype = kF16;
  c.q = bhle(2, 4, 33, 128);
  c.k = bhle(2, 4, 50, 128);
  c.v = bhle(2, 4, 50, 128);
  c.label = "sdpa flash fp16, contiguous [B, H, L, E] query";
  check(c);
}

// q, k and v sliced out of one packed [B, L, 3, H, E] projection: not dense, so the
// output is dense in the query's dim order, [B, L, H, E] memory (empty_like's rule).
TEST(CudaAttention, FlashPackedQkv) {
  AOTRT_REQUIRE_GPU();
  const int64_t B = 2, L = 40, H = 4, E = 64;
  const std::vector<int64_t> strides{L * 3 * H * E, E, 3 * H * E, 1};
  for (Flavor flavor : {Flavor::kFlash, Flavor::kFlashForward}) {
    AttentionCase c;
    c.flavor = flavor;
    c.dtype = kBF16;
    c.q = ViewSpec{{B, H, L, E}, strides, 0};
    c.k = ViewSpec{{B, H, L, E}, strides, H * E};
    c.v = ViewSpec{{B, H, L, E}, strides, 2 * H * E};
    c.causal = true;
    c.want_out_strides = {L * H * E, E, H * E, 1};
    c.label = std::string(flavor == Flavor::kFlash ? "sdpa flash" : "flash forward") +
              " bf16, q, k, v out of one [B, L, 3, H, E] buffer";
    check(c);
  }
}

// With Lq > Lk the bottom-right mask hides every key from the first Lq - Lk queries:
// output 0 and logsumexp +inf, as FlashAttention's kernel writes them (read from its
// code, not run against ATen here).
TEST(CudaAttention, FlashRowsWithoutKeys) {
  AOTRT_REQUIRE_GPU();
  for (int32_t dt : {kF32, kF16}) {
    AttentionCase c;
    c.flavor = Flavor::kFlashForward;
    c.dtype = dt;
    c.q = blhe(1, 2, 45, 32);
    c.k = blhe(1, 2, 20, 32);
    c.v = blhe(1, 2, 20, 32);
    c.causal = true;
    c.label = std::string(dt == kF32 ? "fp32" : "fp16") + " flash forward bottom-right Lq 45 Lk 20";
    check(c);
  }
}

// _flash_attention_forward_no_dropout_inplace(_v2) writes its output into `out`, here
// a [B, H, L, E] buffer seen as [B, L, H, E] (not the layout the op would choose), and
// returns only the logsumexp; nothing else is written or copied.
TEST(CudaAttention, FlashInplaceWritesOut) {
  AOTRT_REQUIRE_GPU();
  Rng rng(21);
  const int64_t B = 2, H = 4, Hk = 2, Lq = 37, Lk = 53, E = 64;
  for (int32_t dt : {kF16, kF32}) {
    for (bool v2 : {false, true}) {
      SCOPED_TRACE(std::string(dt == kF16 ? "fp16" : "fp32") + (v2 ? " _v2" : ""));
      DeviceView q(dt, blhe(B, H, Lq, E), extent(blhe(B, H, Lq, E)), rng);
      DeviceView k(dt, blhe(B, Hk, Lk, E), extent(blhe(B, Hk, Lk, E)), rng);
      DeviceView v(dt, blhe(B, Hk, Lk, E), extent(blhe(B, Hk, Lk, E)), rng);
      // out: [B, H, Lq, E] contiguous storage with a sentinel around it, seen as BLHE.
      const ViewSpec out_spec{{B, Lq, H, E}, {H * Lq * E, E, Lq * E, 1}, 5};
      DeviceView out(dt, out_spec, extent(out_spec) + 5, 7.0);
      Handle qf = bmhk_view(q.get()), kf = bmhk_view(k.get()), vf = bmhk_view(v.get()), lse;
      const uint64_t packs_before = aotrt::cuda::pack_count();
      int64_t splits = 2;
      if (v2) {
        AOTRT_OK(aoti_torch_cuda__flash_attention_forward_no_dropout_inplace_v2(
            out.get(), qf.get(), kf.get(), vf.get(), nullptr, nullptr, Lq, Lk, 0.0, 1, 0, nullptr,
            nullptr, nullptr, nullptr, nullptr, nullptr, &splits, lse.out()));
      } else {
        AOTRT_OK(aoti_torch_cuda__flash_attention_forward_no_dropout_inplace(
            out.get(), qf.get(), kf.get(), vf.get(), nullptr, nullptr, Lq, Lk, 0.0, 1, 0, nullptr,
            nullptr, nullptr, nullptr, nullptr, nullptr, lse.out()));
      }
      EXPECT_EQ(aotrt::cuda::pack_count(), packs_before) << "attention copied an operand";
      EXPECT_EQ(sizes_of(lse.get()), (std::vector<int64_t>{B, H, Lq}));
      // The reference of the first query row of every (b, h) and of the last: enough to
      // see each head read its own key/value head and the mask's corner.
      const std::vector<double> got = read(out.get());  // row-major [B, Lq, H, E]
      const std::vector<double> got_lse = read(lse.get());
      const double tol = dt == kF32 ? 5e-5 : 3e-3;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i : {int64_t{0}, Lq - 1}) {
            const int64_t hk = h / (H / Hk);
            std::vector<double> s;
            double m = -INFINITY;
            for (int64_t j = 0; j <= std::min(Lk - 1, i + Lk - Lq); ++j) {
              double dot = 0;
              for (int64_t e = 0; e < E; ++e) dot += q.at({b, h, i, e}) * k.at({b, hk, j, e});
              s.push_back(dot / std::sqrt(static_cast<double>(E)));
              m = std::max(m, s.back());
            }
            double l = 0;
            for (double x : s) l += std::exp(x - m);
            EXPECT_NEAR(got_lse[static_cast<size_t>((b * H + h) * Lq + i)], m + std::log(l), tol);
            for (int64_t d = 0; d < E; ++d) {
              double acc = 0;
              for (size_t j = 0; j < s.size(); ++j) acc += std::exp(s[j] - m) / l * v.at({b, hk, static_cast<int64_t>(j), d});
              EXPECT_NEAR(got[static_cast<size_t>(((b * Lq + i) * H + h) * E + d)], acc, tol + tol * std::fabs(acc))
                  << "b " << b << " h " << h << " i " << i << " d " << d;
            }
          }
      // Every element of out was written; the storage around it was not.
      const std::vector<double> storage = out.device_storage();
      std::vector<bool> in_view(storage.size(), false);
      for (int64_t off : out.offsets()) in_view[static_cast<size_t>(off)] = true;
      int untouched = 0, written_outside = 0;
      for (size_t i = 0; i < storage.size(); ++i) {
        if (in_view[i] && storage[i] == 7.0) ++untouched;
        if (!in_view[i] && storage[i] != 7.0) ++written_outside;
      }
      EXPECT_EQ(untouched, 0) << "elements of out left unwritten";
      EXPECT_EQ(written_outside, 0) << "elements outside out written";
    }
  }
}

TEST(CudaAttention, RefusesWhatItCannotServe) {
  AOTRT_REQUIRE_GPU();
  Rng rng(1);
  DeviceView q(kF32, bhle(1, 1, 4, 8), 32, rng), k(kF32, bhle(1, 1, 4, 8), 32, rng),
      v(kF32, bhle(1, 1, 4, 8), 32, rng);
  AtenTensorHandle r0 = nullptr, r1 = nullptr, r2 = nullptr, r3 = nullptr;
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_efficient_attention(
                q.get(), k.get(), v.get(), nullptr, 1, 0.1, 0, nullptr, &r0, &r1, &r2, &r3),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("dropout_p"), std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(r0, nullptr);
  DeviceView big(kF32, bhle(1, 1, 4, 300), 1200, rng);
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_efficient_attention(
                big.get(), big.get(), big.get(), nullptr, 1, 0.0, 0, nullptr, &r0, &r1, &r2, &r3),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("at most 256"), std::string::npos)
      << aotrt_last_error();
  DeviceView k16(kF16, bhle(1, 1, 4, 8), 32, rng);
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_efficient_attention(
                q.get(), k16.get(), v.get(), nullptr, 1, 0.0, 0, nullptr, &r0, &r1, &r2, &r3),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("one dtype"), std::string::npos)
      << aotrt_last_error();
  int64_t m4 = 0, m5 = 0;
  AtenTensorHandle r6 = nullptr, r7 = nullptr, r8 = nullptr;
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_cudnn_attention(
                q.get(), k.get(), v.get(), nullptr, 1, 0.0, 0, /*return_debug_mask=*/1, nullptr,
                &r0, &r1, &r2, &r3, &m4, &m5, &r6, &r7, &r8),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("return_debug_mask"), std::string::npos)
      << aotrt_last_error();
  // Flash: one head dim for q, k and v (ATen's kernel takes no other), no debug mask.
  DeviceView v16(kF32, bhle(1, 1, 4, 16), 64, rng);
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_flash_attention(
                q.get(), k.get(), v16.get(), 0.0, 0, 0, nullptr, &r0, &r1, &r2, &r3, &m4, &m5,
                &r6, &r7, &r8),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("shapes do not fit flash attention"),
            std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_flash_attention(
                q.get(), k.get(), v.get(), 0.0, 0, /*return_debug_mask=*/1, nullptr, &r0, &r1,
                &r2, &r3, &m4, &m5, &r6, &r7, &r8),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("return_debug_mask"), std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_flash_attention(
                q.get(), k16.get(), v.get(), 0.0, 0, 0, nullptr, &r0, &r1, &r2, &r3, &m4, &m5,
                &r6, &r7, &r8),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("one dtype"), std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(r0, nullptr);
  EXPECT_EQ(r6, nullptr);
}

// Generated code passes null for outputs it does not use (Note [Unused op
// outputs]): those results are dropped, the others handed out, nothing leaks.
TEST(CudaAttention, NullOutputsAreDropped) {
  AOTRT_REQUIRE_GPU();
  Rng rng(7);
  DeviceView q(kF32, bhle(1, 2, 4, 8), 64, rng), k(kF32, bhle(1, 2, 4, 8), 64, rng),
      v(kF32, bhle(1, 2, 4, 8), 64, rng);
  const int64_t live = aotrt::handle_live_count();
  AtenTensorHandle r0 = nullptr, r6 = nullptr;
  ASSERT_EQ(aoti_torch_cuda__scaled_dot_product_efficient_attention(
                q.get(), k.get(), v.get(), nullptr, 0, 0.0, 0, nullptr, &r0, nullptr, nullptr,
                nullptr),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_NE(r0, nullptr);
  EXPECT_EQ(aotrt::handle_live_count(), live + 1);
  ASSERT_EQ(aoti_torch_delete_tensor_object(r0), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_cuda__scaled_dot_product_cudnn_attention(
                q.get(), k.get(), v.get(), nullptr, 0, 0.0, 0, 0, nullptr, &r0, nullptr, nullptr,
                nullptr, nullptr, nullptr, &r6, nullptr, nullptr),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(aotrt::handle_live_count(), live + 2);
  ASSERT_EQ(aoti_torch_delete_tensor_object(r0), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_delete_tensor_object(r6), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aotrt::handle_live_count(), live);
  AtenTensorHandle lse = nullptr;
  ASSERT_EQ(aoti_torch_cuda__scaled_dot_product_flash_attention(
                q.get(), k.get(), v.get(), 0.0, 1, 0, nullptr, &r0, nullptr, nullptr, nullptr,
                nullptr, nullptr, nullptr, nullptr, nullptr),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(aotrt::handle_live_count(), live + 1);
  ASSERT_EQ(aoti_torch_delete_tensor_object(r0), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_cuda__flash_attention_forward(q.get(), k.get(), v.get(), nullptr, nullptr,
                                                     4, 4, 0.0, 0, 0, nullptr, nullptr, nullptr,
                                                     nullptr, nullptr, nullptr, &lse, nullptr,
                                                     nullptr, nullptr),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(aotrt::handle_live_count(), live + 1);
  ASSERT_EQ(aoti_torch_delete_tensor_object(lse), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aotrt::handle_live_count(), live);
}

}  // namespace
}  // namespace aotrt::cuda_test
