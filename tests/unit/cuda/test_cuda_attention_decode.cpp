// Decode attention (cuda/attention_decode.cu, Note [Decode attention]) through the
// attention shims, against a double-precision softmax on the host: query lengths 1 to
// 8, GQA and MQA, head dims 64, 128 and 256, caches from 5 to 32768 keys, the three
// dtypes, each flavor's output and logsumexp conventions (padding rows included), a
// static cache's mask (-inf past the filled positions, causal among the new queries),
// a per-head bias, top-left and bottom-right causal masks, and rows that see no key.
// Key and value rows of whole masked units hold NaN: the kernel must not read them
// (a read would poison the output). Each case also checks that the decode path served
// it (decode_attention_calls()); the auto mode's test, which path did (Note [Decode
// attention or cuDNN]).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda/library_ops.h"
#include "library_test_util.h"

namespace aotrt::cuda_test {
namespace {

enum class Flavor { kCudnn, kEfficient, kForward, kFlash };

enum class Mask {
  kNone,
  kStaticCache,  // [B, 1, Lq, Lk]: key j seen by query i when j < filled[b] + i
  kPerHead,      // [B, H, Lq, Lk]: random finite values, -inf on every third key
  kAllMasked,    // [B, 1, Lq, Lk]: -inf everywhere for batch 0, the static cache's for the rest
};

struct DecodeCase {
  Flavor flavor = Flavor::kCudnn;
  int32_t dtype = kBF16;
  int64_t B = 1, H = 8, Hk = 8, Lq = 1, Lk = 64, E = 128;
  Mask mask = Mask::kNone;
  std::vector<int64_t> filled;  // per batch (kStaticCache, kAllMasked)
  bool causal = false;          // is_causal (efficient/cudnn: top-left; forward: custom_mask_type)
  bool bottom_right = false;    // forward only: custom_mask_type 2
  bool blhe = false;            // q, k, v as [B, L, H, E] memory viewed transposed
  bool compute_lse = true;
  // The decode path's mode for the call; kOn: it must serve the call, whose key and value
  // rows of whole masked units hold NaN. kAuto: served by the decode path only if
  // `decode_serves`; no NaN (cuDNN reads every key).
  cuda::DecodeAttentionMode mode = cuda::DecodeAttentionMode::kOn;
  bool decode_serves = true;
  std::string label;
};

ViewSpec layout(bool blhe, int64_t B, int64_t H, int64_t L, int64_t E) {
  if (blhe) return {{B, H, L, E}, {L * H * E, E, H * E, 1}, 0};
  return {{B, H, L, E}, {H * L * E, L * E, E, 1}, 0};
}

// A [B, H, L, E] view's memory seen as [B, L, H, E].
Handle bmhk(AtenTensorHandle t) {
  const std::vector<int64_t> z = sizes_of(t), st = strides_of(t);
  const int64_t sizes[] = {z[0], z[2], z[1], z[3]}, strides[] = {st[0], st[2], st[1], st[3]};
  Handle h;
  EXPECT_EQ(aoti_torch__reinterpret_tensor(t, 4, sizes, strides, 0, h.out()), 0);
  return h;
}

void run(const DecodeCase& c) {
  SCOPED_TRACE(c.label);
  const int64_t B = c.B, H = c.H, Hk = c.Hk, Lq = c.Lq, Lk = c.Lk, E = c.E, G = H / Hk;
  const bool flash = c.flavor == Flavor::kFlash;
  Rng rng(std::hash<std::string>{}(c.label));
  const ViewSpec qs = layout(c.blhe, B, H, Lq, E), ks = layout(c.blhe, B, Hk, Lk, E);
  // The mask, as the host sees it: bias[b][h][i][j] (-inf hidden), causal included.
  std::vector<double> bias;  // [B, Hb, Lq, Lk]
  const int64_t Hb = c.mask == Mask::kPerHead ? H : 1;
  if (c.mask != Mask::kNone) {
    bias.assign(static_cast<size_t>(B * Hb * Lq * Lk), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hb; ++h)
        for (int64_t i = 0; i < Lq; ++i)
          for (int64_t j = 0; j < Lk; ++j) {
            double v = 0.0;
            if (c.mask == Mask::kPerHead) {
              v = j % 3 == 1 ? -INFINITY : round_to(c.dtype, rng.next() * 2);
            } else if (c.mask == Mask::kAllMasked && b == 0) {
              v = -INFINITY;
            } else {
              v = j < c.filled[static_cast<size_t>(b)] + i ? 0.0 : -INFINITY;
            }
            bias[static_cast<size_t>(((b * Hb + h) * Lq + i) * Lk + j)] = v;
          }
  }
  auto hidden = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    if (c.causal) {
      const int64_t offset = (flash || c.bottom_right) ? Lk - Lq : 0;
      if (j > i + offset) return true;
    }
    if (c.mask == Mask::kNone) return false;
    return bias[static_cast<size_t>(((b * Hb + (Hb == 1 ? 0 : h)) * Lq + i) * Lk + j)] == -INFINITY;
  };
  // Keys no query of a (b, kv head) sees, in whole units of 8: NaN in k and v.
  std::vector<double> kst(static_cast<size_t>(extent(ks))), vst(kst.size());
  int64_t poisoned = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hk = 0; hk < Hk; ++hk)
      for (int64_t u = 0; u * 8 < Lk; ++u) {
        bool dead = true;
        for (int64_t j = u * 8; j < std::min(Lk, u * 8 + 8) && dead; ++j)
          for (int64_t g = 0; g < G && dead; ++g)
            for (int64_t i = 0; i < Lq && dead; ++i) dead = hidden(b, hk * G + g, i, j);
        for (int64_t j = u * 8; j < std::min(Lk, u * 8 + 8); ++j)
          for (int64_t e = 0; e < E; ++e) {
            const size_t at = static_cast<size_t>(b * ks.strides[0] + hk * ks.strides[1] +
                                                  j * ks.strides[2] + e);
            const bool poison = dead && c.mode == cuda::DecodeAttentionMode::kOn;
            kst[at] = poison ? NAN : rng.next();
            vst[at] = poison ? NAN : rng.next();
          }
        poisoned += dead && c.mode == cuda::DecodeAttentionMode::kOn ? 1 : 0;
      }
  DeviceView q(c.dtype, qs, extent(qs), rng);
  DeviceView k(c.dtype, ks, kst), v(c.dtype, ks, vst);
  std::unique_ptr<DeviceView> bias_view;
  if (c.mask != Mask::kNone) {
    const ViewSpec bs{{B, Hb, Lq, Lk}, contiguous({B, Hb, Lq, Lk}), 0};
    bias_view = std::make_unique<DeviceView>(c.dtype, bs, bias);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(E));

  // The reference: [B, H, Lq, E] and lse [B, H, Lq].
  std::vector<double> want(static_cast<size_t>(B * H * Lq * E), 0.0), want_lse(static_cast<size_t>(B * H * Lq));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t hk = h / G;
        std::vector<double> s(static_cast<size_t>(Lk), -INFINITY);
        double m = -INFINITY;
        for (int64_t j = 0; j < Lk; ++j) {
          if (hidden(b, h, i, j)) continue;
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += q.at({b, h, i, e}) * k.at({b, hk, j, e});
          double x = dot * scale;
          if (c.mask != Mask::kNone) x += bias[static_cast<size_t>(((b * Hb + (Hb == 1 ? 0 : h)) * Lq + i) * Lk + j)];
          s[static_cast<size_t>(j)] = x;
          m = std::max(m, x);
        }
        double l = 0;
        for (int64_t j = 0; j < Lk; ++j) {
          if (s[static_cast<size_t>(j)] != -INFINITY) l += std::exp(s[static_cast<size_t>(j)] - m);
        }
        const size_t row = static_cast<size_t>((b * H + h) * Lq + i);
        want_lse[row] = l > 0 ? m + std::log(l) : (flash ? INFINITY : 0.0);
        for (int64_t j = 0; j < Lk && l > 0; ++j) {
          if (s[static_cast<size_t>(j)] == -INFINITY) continue;
          const double p = std::exp(s[static_cast<size_t>(j)] - m) / l;
          for (int64_t e = 0; e < E; ++e) want[row * static_cast<size_t>(E) + static_cast<size_t>(e)] += p * v.at({b, hk, j, e});
        }
      }

  cuda::set_decode_attention_mode(c.mode);
  const int64_t calls_before = cuda::decode_attention_calls();
  AtenTensorHandle bias_h = bias_view ? bias_view->get() : nullptr;
  Handle out, lse, r2, r3, r6, r7, r8;
  int64_t max_q = -1, max_k = -1;
  if (c.flavor == Flavor::kCudnn) {
    AOTRT_OK(aoti_torch_cuda__scaled_dot_product_cudnn_attention(
        q.get(), k.get(), v.get(), bias_view ? &bias_h : nullptr, c.compute_lse, 0.0, c.causal, 0,
        nullptr, out.out(), lse.out(), r2.out(), r3.out(), &max_q, &max_k, r6.out(), r7.out(),
        r8.out()));
  } else if (c.flavor == Flavor::kEfficient) {
    AOTRT_OK(aoti_torch_cuda__scaled_dot_product_efficient_attention(
        q.get(), k.get(), v.get(), bias_view ? &bias_h : nullptr, c.compute_lse, 0.0, c.causal,
        nullptr, out.out(), lse.out(), r2.out(), r3.out()));
  } else if (c.flavor == Flavor::kForward) {
    Handle qf = bmhk(q.get()), kf = bmhk(k.get()), vf = bmhk(v.get()), out_bmhk;
    AOTRT_OK(aoti_torch_cuda__efficient_attention_forward(
        qf.get(), kf.get(), vf.get(), bias_view ? &bias_h : nullptr, nullptr, nullptr, nullptr,
        nullptr, 0.0, c.causal ? (c.bottom_right ? 2 : 1) : 0, c.compute_lse, nullptr, nullptr,
        nullptr, out_bmhk.out(), lse.out(), r2.out(), r3.out(), &max_q, &max_k));
    out = bmhk(out_bmhk.get());
  } else {
    AOTRT_OK(aoti_torch_cuda__scaled_dot_product_flash_attention(
        q.get(), k.get(), v.get(), 0.0, c.causal, 0, nullptr, out.out(), lse.out(), r2.out(),
        r3.out(), &max_q, &max_k, r6.out(), r7.out(), r8.out()));
  }
  cuda::set_decode_attention_mode(cuda::DecodeAttentionMode::kAuto);
  EXPECT_EQ(cuda::decode_attention_calls(), calls_before + (c.decode_serves ? 1 : 0))
      << (c.decode_serves ? "the decode path did not serve it" : "the decode path served it");

  const double atol = c.dtype == kF32 ? 1e-4 : c.dtype == kF16 ? 2e-3 : 4e-3;
  const double rtol = c.dtype == kF32 ? 1e-4 : c.dtype == kF16 ? 1.0 / 512 : 1.0 / 128;
  ASSERT_EQ(sizes_of(out.get()), (std::vector<int64_t>{B, H, Lq, E}));
  expect_close(read(out.get()), want, atol, rtol, c.label + ": output");

  bool defined = false;
  EXPECT_EQ(aoti_torch_is_defined(lse.get(), &defined), 0);
  const bool want_lse_out = c.compute_lse || flash;
  ASSERT_EQ(defined, want_lse_out || c.flavor != Flavor::kCudnn) << "logsumexp defined";
  if (!want_lse_out) return;
  const double lse_tol = c.dtype == kF32 ? 1e-4 : 2e-3;
  const std::vector<double> got_lse = read(lse.get());
  if (c.flavor == Flavor::kEfficient || c.flavor == Flavor::kForward) {
    const int64_t padded = (Lq + 31) / 32 * 32;  // +inf past Lq
    ASSERT_EQ(sizes_of(lse.get()), (std::vector<int64_t>{B, H, padded}));
    std::vector<double> full(static_cast<size_t>(B * H * padded), INFINITY);
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t i = 0; i < Lq; ++i) full[static_cast<size_t>(bh * padded + i)] = want_lse[static_cast<size_t>(bh * Lq + i)];
    expect_close(got_lse, full, lse_tol, 0.0, c.label + ": lse");
  } else {
    expect_close(got_lse, want_lse, lse_tol, 0.0, c.label + ": lse");
  }
  std::printf("  %s: %lld of %lld key units poisoned (never read)\n", c.label.c_str(),
              static_cast<long long>(poisoned), static_cast<long long>(B * Hk * ((Lk + 7) / 8)));
}

// Note [Decode attention or cuDNN]: in the auto mode cuDNN gets one fp16/bf16 query row
// against up to 4096 keys; the decode path keeps longer caches, several query rows and fp32.
TEST(CudaDecodeAttention, AutoModeOffersShortCachesToCudnnFirst) {
  AOTRT_REQUIRE_GPU();
  DecodeCase c;
  c.mode = cuda::DecodeAttentionMode::kAuto;
  c.H = 32;
  c.Hk = 32;
  c.E = 64;
  c.mask = Mask::kStaticCache;
  c.Lk = 1024;
  c.filled = {540};
  c.decode_serves = false;
  c.label = "auto: bf16 cudnn, Lq 1, Lk 1024 filled 540, 32 over 32, E 64 (cuDNN)";
  run(c);
  c.Lk = 4096;
  c.filled = {4000};
  c.dtype = kF16;
  c.label = "auto: fp16 cudnn, Lq 1, Lk 4096 (cuDNN)";
  run(c);
  c.dtype = kBF16;
  c.Lk = 4104;
  c.label = "auto: bf16 cudnn, Lq 1, Lk 4104 (the decode path)";
  c.decode_serves = true;
  run(c);
  c.Lk = 1024;
  c.Lq = 4;
  c.filled = {500};
  c.label = "auto: bf16 cudnn, Lq 4, Lk 1024 (the decode path)";
  run(c);
  c.Lq = 1;
  c.dtype = kF32;
  c.flavor = Flavor::kEfficient;
  c.label = "auto: fp32 efficient, Lq 1, Lk 1024 (the decode path: cuDNN has no fp32)";
  run(c);
}

TEST(CudaDecodeAttention, StaticCacheGqaBf16) {
  AOTRT_REQUIRE_GPU();
  DecodeCase c;
  c.B = 2;
  c.H = 32;
  c.Hk = 8;
  c.Lk = 4096;
  c.mask = Mask::kStaticCache;
  c.filled = {1000, 4096};
  c.label = "bf16 cudnn, B 2, H 32 over 8, Lq 1, Lk 4096 filled 1000 and 4096, E 128";
  run(c);
  c.Lq = 8;
  c.Lk = 1024;
  c.filled = {500, 17};
  c.label = "bf16 cudnn, 8 new queries (causal among them), Lk 1024 filled 500 and 17";
  run(c);
  c.Lq = 1;
  c.E = 64;
  c.B = 1;
  c.Lk = 32768;
  c.filled = {1};
  c.label = "bf16 cudnn, Lk 32768 with one key filled, E 64";
  run(c);
  c.E = 256;
  c.H = 4;
  c.Hk = 1;
  c.Lq = 3;
  c.Lk = 777;
  c.filled = {600};
  c.blhe = true;
  c.label = "bf16 cudnn, MQA (4 heads over 1), Lq 3, Lk 777, E 256, [B, L, H, E] memory";
  run(c);
  c.compute_lse = false;
  c.label = "bf16 cudnn without logsumexp";
  run(c);
}

TEST(CudaDecodeAttention, Float16AndPerHeadBias) {
  AOTRT_REQUIRE_GPU();
  DecodeCase c;
  c.dtype = kF16;
  c.flavor = Flavor::kFlash;
  c.H = 8;
  c.Hk = 8;
  c.Lk = 300;
  c.E = 64;
  c.label = "fp16 flash, no GQA, Lk 300 (not a multiple of 8), E 64";
  run(c);
  c.causal = true;
  c.Lq = 5;
  c.label = "fp16 flash, Lq 5, causal (bottom-right)";
  run(c);
  c.flavor = Flavor::kCudnn;
  c.causal = false;
  c.mask = Mask::kPerHead;
  c.H = 6;
  c.Hk = 2;
  c.Lq = 2;
  c.Lk = 513;
  c.E = 128;
  c.label = "fp16 cudnn, per-head bias with -inf columns, H 6 over 2, Lq 2";
  run(c);
  c.Lk = 5;
  c.label = "fp16 cudnn, 5 keys";
  run(c);
}

TEST(CudaDecodeAttention, Float32Flavors) {
  AOTRT_REQUIRE_GPU();
  DecodeCase c;
  c.dtype = kF32;
  c.flavor = Flavor::kEfficient;
  c.H = 8;
  c.Hk = 2;
  c.Lk = 2048;
  c.mask = Mask::kStaticCache;
  c.filled = {1500};
  c.label = "fp32 efficient, H 8 over 2, Lk 2048 filled 1500 (lse padded to 32 rows)";
  run(c);
  c.flavor = Flavor::kForward;
  c.mask = Mask::kNone;
  c.causal = true;
  c.bottom_right = true;
  c.Lq = 4;
  c.Lk = 100;
  c.E = 64;
  c.label = "fp32 _efficient_attention_forward, bottom-right causal, Lq 4, Lk 100, E 64";
  run(c);
  c.flavor = Flavor::kEfficient;
  c.bottom_right = false;
  c.Lq = 2;
  c.Lk = 50;
  c.E = 256;
  c.label = "fp32 efficient, top-left causal (query i sees keys 0 .. i), E 256";
  run(c);
}

TEST(CudaDecodeAttention, RowsThatSeeNoKey) {
  AOTRT_REQUIRE_GPU();
  for (const int32_t dt : {kBF16, kF32}) {
    DecodeCase c;
    c.dtype = dt;
    c.flavor = dt == kF32 ? Flavor::kEfficient : Flavor::kCudnn;
    c.B = 2;
    c.H = 4;
    c.Hk = 2;
    c.Lq = 2;
    c.Lk = 256;
    c.mask = Mask::kAllMasked;
    c.filled = {0, 100};
    c.label = std::string(dt == kF32 ? "fp32" : "bf16") + ": batch 0 sees no key (output 0, logsumexp 0)";
    run(c);
  }
}

}  // namespace
}  // namespace aotrt::cuda_test
