// Decode attention (cuda/attention_decode.cu, Note [Decode attention]) through the
// attention shims, against a double-precision softmax on the host: query lengths 1 to
// 8, GQA and MQA, head dims 64, 128 and 256, caches from 5 to 32768 keys, the three
// dtypes, each flavor's output and logsumexp conventions (padding rows included), a
// static cache's mask (-inf past the filled positions, causal among the new queries),
// a per-head bias, top-left and bottom-right causal masks, and rows that see no key.
// Key and value rows of whole masked units hold NaN: the kernel must not read them
// (a read would poison the output). Each case also checks that the decode path served
// it (decode_attention_calls()); the auto mode's test, which path did (Note [Decode
// attention or cuDNN]). The split tests call decode_attention() directly with a forced
// key split count, so that each path runs on each case: one split, a cluster of 2 to 8
// (sm_90), and partial states with a combine kernel (more than 8, or older devices).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda/library_ops.h"
#include "library_test_util.h"

namespace aotrt::cuda {
// attention_decode.cu: the splits decode_attention() takes for a call and whether they are
// one cluster (declared here, not in library_ops.h, which 18 files include).
bool decode_attention_plan_for_testing(const DecodeAttentionCall& c, int device,
                                       int64_t* splits, bool* cluster);
}  // namespace aotrt::cuda

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

// A case's inputs on the device (key and value rows of whole masked units NaN in
// the kOn mode) and the host's double-precision reference.
struct Problem {
  std::unique_ptr<DeviceView> q, k, v, bias;  // bias: null without a mask
  int64_t Hb = 1;                             // the bias's heads: H or 1 (broadcast)
  std::vector<double> want;                   // [B, H, Lq, E]
  std::vector<double> want_lse;               // [B, H, Lq]
  int64_t poisoned = 0;                       // key units holding NaN
};

// Query i sees keys up to i + this offset under the causal mask: the flash flavor's and
// _efficient_attention_forward's custom_mask_type 2 end at the bottom-right corner.
int64_t causal_offset(const DecodeCase& c) {
  return c.flavor == Flavor::kFlash || c.bottom_right ? c.Lk - c.Lq : 0;
}

Problem make_problem(const DecodeCase& c) {
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
    if (c.causal && j > i + causal_offset(c)) return true;
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
  Problem pb;
  pb.Hb = Hb;
  pb.poisoned = poisoned;
  pb.q = std::make_unique<DeviceView>(c.dtype, qs, extent(qs), rng);
  pb.k = std::make_unique<DeviceView>(c.dtype, ks, kst);
  pb.v = std::make_unique<DeviceView>(c.dtype, ks, vst);
  const DeviceView &q = *pb.q, &k = *pb.k, &v = *pb.v;
  if (c.mask != Mask::kNone) {
    const ViewSpec bs{{B, Hb, Lq, Lk}, contiguous({B, Hb, Lq, Lk}), 0};
    pb.bias = std::make_unique<DeviceView>(c.dtype, bs, bias);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(E));

  // The reference: [B, H, Lq, E] and lse [B, H, Lq].
  std::vector<double>& want = pb.want;
  std::vector<double>& want_lse = pb.want_lse;
  want.assign(static_cast<size_t>(B * H * Lq * E), 0.0);
  want_lse.assign(static_cast<size_t>(B * H * Lq), 0.0);
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
  return pb;
}

// Output tolerances of a dtype (atol, rtol) and the logsumexp's.
struct Tolerance {
  double atol, rtol, lse;
};
Tolerance tolerance(int32_t dtype) {
  return {dtype == kF32 ? 1e-4 : dtype == kF16 ? 2e-3 : 4e-3,
          dtype == kF32 ? 1e-4 : dtype == kF16 ? 1.0 / 512 : 1.0 / 128,
          dtype == kF32 ? 1e-4 : 2e-3};
}

// The efficient flavor's logsumexp rows: Lq padded to 32, +inf past Lq.
bool padded_lse(const DecodeCase& c) {
  return c.flavor == Flavor::kEfficient || c.flavor == Flavor::kForward;
}
int64_t lse_rows(const DecodeCase& c) { return padded_lse(c) ? (c.Lq + 31) / 32 * 32 : c.Lq; }

// The reference logsumexp as the flavor lays it out: [B, H, lse_rows(c)].
std::vector<double> want_lse_rows(const DecodeCase& c, const Problem& pb) {
  const int64_t rows = lse_rows(c);
  std::vector<double> full(static_cast<size_t>(c.B * c.H * rows), INFINITY);
  for (int64_t bh = 0; bh < c.B * c.H; ++bh)
    for (int64_t i = 0; i < c.Lq; ++i)
      full[static_cast<size_t>(bh * rows + i)] = pb.want_lse[static_cast<size_t>(bh * c.Lq + i)];
  return full;
}

void run(const DecodeCase& c) {
  SCOPED_TRACE(c.label);
  const int64_t B = c.B, H = c.H, Lq = c.Lq, Lk = c.Lk, E = c.E;
  const bool flash = c.flavor == Flavor::kFlash;
  const Problem pb = make_problem(c);
  const DeviceView &q = *pb.q, &k = *pb.k, &v = *pb.v;
  const DeviceView* bias_view = pb.bias.get();
  const std::vector<double>& want = pb.want;

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

  const Tolerance tol = tolerance(c.dtype);
  ASSERT_EQ(sizes_of(out.get()), (std::vector<int64_t>{B, H, Lq, E}));
  expect_close(read(out.get()), want, tol.atol, tol.rtol, c.label + ": output");

  bool defined = false;
  EXPECT_EQ(aoti_torch_is_defined(lse.get(), &defined), 0);
  const bool want_lse_out = c.compute_lse || flash;
  ASSERT_EQ(defined, want_lse_out || c.flavor != Flavor::kCudnn) << "logsumexp defined";
  if (!want_lse_out) return;
  // torch's cuDNN flavor returns the logsumexp as [B, H, Lq, 1]
  const std::vector<int64_t> lse_sizes = c.flavor == Flavor::kCudnn
                                             ? std::vector<int64_t>{B, H, Lq, 1}
                                             : std::vector<int64_t>{B, H, lse_rows(c)};
  ASSERT_EQ(sizes_of(lse.get()), lse_sizes);
  expect_close(read(lse.get()), want_lse_rows(c, pb), tol.lse, 0.0, c.label + ": lse");
  std::printf("  %s: %lld of %lld key units poisoned (never read)\n", c.label.c_str(),
              static_cast<long long>(pb.poisoned),
              static_cast<long long>(B * c.Hk * ((Lk + 7) / 8)));
}

int capability() {
  int major = 0, minor = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  return 10 * major + minor;
}

void* data_of(AtenTensorHandle h) {
  void* p = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(h, &p), 0);
  return p;
}

// The call attention() would build for case c (its flavor's logsumexp conventions), with
// `splits` key splits forced (0: the decode path's own choice).
cuda::DecodeAttentionCall make_call(const DecodeCase& c, const Problem& pb, AtenTensorHandle out,
                                    AtenTensorHandle lse, int64_t splits) {
  cuda::DecodeAttentionCall call{};
  call.dtype = static_cast<ScalarType>(c.dtype);
  call.q = data_of(pb.q->get());
  call.k = data_of(pb.k->get());
  call.v = data_of(pb.v->get());
  call.bias = pb.bias ? data_of(pb.bias->get()) : nullptr;
  call.out = data_of(out);
  call.lse = lse != nullptr ? static_cast<float*>(data_of(lse)) : nullptr;
  const int64_t sizes[7] = {c.B, c.H, c.Hk, c.Lq, c.Lk, c.E, c.E};
  std::copy(sizes, sizes + 7, call.sizes);
  const std::vector<int64_t> qs = strides_of(pb.q->get()), ks = strides_of(pb.k->get()),
                             vs = strides_of(pb.v->get()), os = strides_of(out);
  std::copy(qs.begin(), qs.end(), call.q_strides);
  std::copy(ks.begin(), ks.end(), call.k_strides);
  std::copy(vs.begin(), vs.end(), call.v_strides);
  std::copy(os.begin(), os.end(), call.out_strides);
  if (pb.bias) {  // [B, Hb, Lq, Lk] contiguous, broadcast over the heads when Hb is 1
    const int64_t bs[4] = {pb.Hb * c.Lq * c.Lk, pb.Hb == 1 ? 0 : c.Lq * c.Lk, c.Lk, 1};
    std::copy(bs, bs + 4, call.bias_strides);
  }
  const int64_t rows = lse_rows(c);
  const int64_t ls[3] = {c.H * rows, rows, 1};
  std::copy(ls, ls + 3, call.lse_strides);
  call.lse_rows = lse != nullptr ? rows : 0;
  call.causal = c.causal;
  call.causal_offset = causal_offset(c);
  call.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.E)));
  call.masked_row_lse = c.flavor == Flavor::kFlash ? INFINITY : 0.0f;
  call.splits_for_testing = splits;
  return call;
}

struct Outputs {
  std::vector<double> out;  // [B, H, Lq, E]
  std::vector<double> lse;  // [B, H, lse_rows(c)]; empty when not asked
};

// One direct decode_attention() call with `splits` forced; NaN fills the outputs first,
// so an element the call does not write fails the comparisons.
Outputs call_decode(const DecodeCase& c, const Problem& pb, int64_t splits) {
  const bool want_lse = c.compute_lse || c.flavor == Flavor::kFlash;
  const ViewSpec os{{c.B, c.H, c.Lq, c.E}, contiguous({c.B, c.H, c.Lq, c.E}), 0};
  const ViewSpec ls{{c.B, c.H, lse_rows(c)}, contiguous({c.B, c.H, lse_rows(c)}), 0};
  DeviceView out(c.dtype, os, extent(os), NAN);
  std::unique_ptr<DeviceView> lse;
  if (want_lse) lse = std::make_unique<DeviceView>(kF32, ls, extent(ls), NAN);
  const cuda::DecodeAttentionCall call =
      make_call(c, pb, out.get(), lse ? lse->get() : nullptr, splits);
  cuda::set_decode_attention_mode(cuda::DecodeAttentionMode::kOn);
  const bool served = cuda::decode_attention(call, 0, nullptr, "test_cuda_attention_decode");
  cuda::set_decode_attention_mode(cuda::DecodeAttentionMode::kAuto);
  EXPECT_TRUE(served) << "the decode path refused the call";
  Outputs r;
  r.out = read(out.get());
  if (lse) r.lse = read(lse->get());
  return r;
}

// Case c with each forced split count (0: the decode path's own): the plan (one split, a
// cluster of 2 to 8 on sm_90, the two-kernel path past 8 or before sm_90), the output and
// logsumexp against the reference, a second call's bits (no timing in the result), and
// each count's result against the first count's (the one-split path in the tests below)
// and the last's (the two-kernel path). Between two paths the tolerance is the
// reference's: they differ only in the order of the fp32 sums (about 2^-24 relative a
// term), in the running max each probability is rounded to fp16/bf16 against (rounding
// errors of 2^-11/2^-8 relative, independent between the paths, that average over the
// keys as they do against the reference) and in the final rounding of each output.
void run_splits(const DecodeCase& c, const std::vector<int64_t>& splits) {
  SCOPED_TRACE(c.label);
  const int cap = capability();
  const Problem pb = make_problem(c);
  const Tolerance tol = tolerance(c.dtype);
  const std::vector<double> want_lse = want_lse_rows(c, pb);
  const int64_t units = (c.Lk + 7) / 8;
  std::vector<Outputs> results;
  for (const int64_t s : splits) {
    const int64_t want_splits = std::min(s, units);
    const bool want_cluster = cap >= 90 && want_splits >= 2 && want_splits <= 8;
    const char* path = s == 0                ? "auto"
                       : want_splits == 1    ? "one split"
                       : want_cluster        ? "cluster"
                                             : "two kernels";
    const std::string what = c.label + ", splits " + std::to_string(s) + " (" + path + ")";
    if (s > 0) {
      DeviceView out(c.dtype, {{c.B, c.H, c.Lq, c.E}, contiguous({c.B, c.H, c.Lq, c.E}), 0},
                     c.B * c.H * c.Lq * c.E, 0.0);
      int64_t got_splits = 0;
      bool cluster = false;
      ASSERT_TRUE(cuda::decode_attention_plan_for_testing(make_call(c, pb, out.get(), nullptr, s),
                                                          0, &got_splits, &cluster))
          << what;
      EXPECT_EQ(got_splits, want_splits) << what;
      EXPECT_EQ(cluster, want_cluster) << what;
    }
    const int64_t calls_before = cuda::decode_attention_calls();
    Outputs r = call_decode(c, pb, s);
    const Outputs again = call_decode(c, pb, s);
    EXPECT_EQ(cuda::decode_attention_calls(), calls_before + 2) << what;
    EXPECT_TRUE(r.out == again.out && r.lse == again.lse)
        << what << ": a second call's bits differ";
    expect_close(r.out, pb.want, tol.atol, tol.rtol, what + ": output");
    if (!r.lse.empty()) expect_close(r.lse, want_lse, tol.lse, 0.0, what + ": lse");
    results.push_back(std::move(r));
  }
  for (size_t x = 1; x < results.size(); ++x) {
    const std::string what = c.label + ", splits " + std::to_string(splits[x]);
    for (const size_t y : {size_t{0}, results.size() - 1}) {
      if (y == x) continue;
      const std::string against = what + " against splits " + std::to_string(splits[y]);
      expect_close(results[x].out, results[y].out, tol.atol, tol.rtol, against + ": output");
      if (!results[x].lse.empty()) {
        expect_close(results[x].lse, results[y].lse, tol.lse, 0.0, against + ": lse");
      }
    }
  }
  std::printf("  %s: %lld of %lld key units poisoned (never read)\n", c.label.c_str(),
              static_cast<long long>(pb.poisoned), static_cast<long long>(c.B * c.Hk * units));
}

#define AOTRT_REQUIRE_SM80()                                                     \
  do {                                                                           \
    AOTRT_REQUIRE_GPU();                                                         \
    if (capability() < 80) GTEST_SKIP() << "the decode path needs sm_80 or later"; \
  } while (0)

// One split, a cluster of 2, 3 and 8 (sm_90; the two-kernel path before it), and 12
// splits (two kernels), on the step's GQA shapes: 32 query heads over 4 key heads at E 64
// (TinyLlama on the unrepeated cache) and over 8 at E 128 (Llama-3-8B).
const std::vector<int64_t> kPaths = {1, 2, 3, 8, 12};

TEST(CudaDecodeAttentionSplits, Bf16StaticCache) {
  AOTRT_REQUIRE_SM80();
  DecodeCase c;
  c.H = 32;
  c.Hk = 4;
  c.E = 64;
  c.Lk = 1024;
  c.mask = Mask::kStaticCache;
  c.filled = {540};
  c.label = "bf16, 32 over 4, E 64, Lq 1, Lk 1024 filled 540 (TinyLlama's step)";
  run_splits(c, kPaths);
  c.B = 2;
  c.Hk = 8;
  c.E = 128;
  c.filled = {540, 1024};
  c.label = "bf16, B 2, 32 over 8, E 128, Lq 1, Lk 1024 filled 540 and 1024";
  run_splits(c, kPaths);
  c.B = 1;
  c.Hk = 4;
  c.E = 64;
  c.Lq = 4;
  c.filled = {700};
  c.compute_lse = false;
  c.label = "bf16, 32 over 4, E 64, Lq 4 (4 row groups), Lk 1024 filled 700, no logsumexp";
  run_splits(c, kPaths);
}

TEST(CudaDecodeAttentionSplits, Fp16CausalAndPerHeadBias) {
  AOTRT_REQUIRE_SM80();
  DecodeCase c;
  c.dtype = kF16;
  c.flavor = Flavor::kFlash;
  c.H = 32;
  c.Hk = 4;
  c.E = 64;
  c.Lq = 4;
  c.Lk = 600;
  c.mask = Mask::kStaticCache;
  c.filled = {300};
  c.causal = true;
  c.label = "fp16 flash, 32 over 4, E 64, Lq 4, Lk 600 filled 300, causal (bottom-right)";
  run_splits(c, kPaths);
  c.flavor = Flavor::kEfficient;
  c.Hk = 8;
  c.E = 128;
  c.Lq = 1;
  c.Lk = 777;
  c.mask = Mask::kPerHead;
  c.causal = false;
  c.label = "fp16 efficient, 32 over 8, E 128, Lq 1, Lk 777, a bias per head (lse padded)";
  run_splits(c, kPaths);
  c.H = 6;
  c.Hk = 2;
  c.Lq = 3;
  c.label = "fp16 efficient, 6 over 2, Lq 3: 9 rows, a second row group of one row";
  run_splits(c, kPaths);
}

TEST(CudaDecodeAttentionSplits, Fp32) {
  AOTRT_REQUIRE_SM80();
  DecodeCase c;
  c.dtype = kF32;
  c.flavor = Flavor::kEfficient;
  c.H = 32;
  c.Hk = 4;
  c.E = 64;
  c.Lq = 4;
  c.Lk = 1024;
  c.mask = Mask::kStaticCache;
  c.filled = {540};
  c.label = "fp32 efficient, 32 over 4, E 64, Lq 4, Lk 1024 filled 540 (lse padded)";
  run_splits(c, kPaths);
  c.flavor = Flavor::kForward;
  c.Hk = 8;
  c.E = 128;
  c.mask = Mask::kPerHead;
  c.causal = true;
  c.bottom_right = true;
  c.Lk = 500;
  c.label = "fp32 forward, 32 over 8, E 128, Lq 4, Lk 500, a bias per head, causal (bottom-right)";
  run_splits(c, kPaths);
}

TEST(CudaDecodeAttentionSplits, RowsThatSeeNoKey) {
  AOTRT_REQUIRE_SM80();
  for (const int32_t dt : {kBF16, kF32}) {
    DecodeCase c;
    c.dtype = dt;
    c.flavor = dt == kF32 ? Flavor::kFlash : Flavor::kEfficient;
    c.B = 2;
    c.H = 32;
    c.Hk = 4;
    c.E = dt == kF32 ? 128 : 64;
    c.Lq = 4;
    c.Lk = 256;
    c.mask = Mask::kAllMasked;
    c.filled = {0, 100};
    c.label = std::string(dt == kF32 ? "fp32 flash (logsumexp +inf)"
                                     : "bf16 efficient (logsumexp 0)") +
              ": batch 0 sees no key";
    run_splits(c, kPaths);
  }
}

// The decode path's own split count (Note [Decode attention]): on sm_90, up to 4096 keys,
// the fewest splits that leave a block at most 16 key units, 8 at most, one cluster;
// longer caches the two-kernel path. Before sm_90 no cluster.
TEST(CudaDecodeAttentionSplits, AutoChoiceOnShortCaches) {
  AOTRT_REQUIRE_SM80();
  const int cap = capability();
  DecodeCase c;
  c.H = 32;
  c.Hk = 4;
  c.E = 64;
  c.mask = Mask::kStaticCache;
  struct Want {
    int64_t Lk, splits;  // splits on sm_90: -1 more than 8
  };
  for (const Want w : {Want{100, 1}, Want{200, 2}, Want{1024, 8}, Want{4096, 8}, Want{4104, -1}}) {
    c.Lk = w.Lk;
    c.filled = {std::min<int64_t>(w.Lk, 540)};
    c.label = "auto splits, bf16, 32 over 4, E 64, Lk " + std::to_string(w.Lk);
    const Problem pb = make_problem(c);
    DeviceView out(c.dtype, {{c.B, c.H, c.Lq, c.E}, contiguous({c.B, c.H, c.Lq, c.E}), 0},
                   c.B * c.H * c.Lq * c.E, 0.0);
    int64_t splits = 0;
    bool cluster = false;
    ASSERT_TRUE(cuda::decode_attention_plan_for_testing(make_call(c, pb, out.get(), nullptr, 0),
                                                        0, &splits, &cluster))
        << c.label;
    std::printf("  %s: %lld splits%s\n", c.label.c_str(), static_cast<long long>(splits),
                cluster ? ", one cluster" : "");
    if (cap >= 90) {
      if (w.splits > 0) {
        EXPECT_EQ(splits, w.splits) << c.label;
      } else {
        EXPECT_GT(splits, 8) << c.label;
      }
      EXPECT_EQ(cluster, splits >= 2 && splits <= 8) << c.label;
    } else {
      EXPECT_FALSE(cluster) << c.label;
    }
  }
  // The choice's results: TinyLlama's step, and Llama-3-8B's at a 1024-key cache.
  c.Lk = 1024;
  c.filled = {540};
  c.label = "auto splits, bf16, 32 over 4, E 64, Lk 1024 filled 540";
  run_splits(c, {1, 0});
  c.Hk = 8;
  c.E = 128;
  c.Lq = 4;
  c.label = "auto splits, bf16, 32 over 8, E 128, Lq 4, Lk 1024 filled 540";
  run_splits(c, {1, 0});
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
