// aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu against a
// double-precision reference, on the layouts inductor passes (q/k/v as
// permuted views of one projection), with causal masking and additive masks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "aotrt/shim.h"

namespace {

struct Owned {
  AtenTensorHandle h = nullptr;
  ~Owned() {
    if (h) aoti_torch_delete_tensor_object(h);
  }
};

float at(const float* base, const int64_t* strides, int64_t b, int64_t h, int64_t l, int64_t e) {
  return base[b * strides[0] + h * strides[1] + l * strides[2] + e * strides[3]];
}

// The reference: softmax(q k^T * scale + mask, causal) v, in double.
void reference(const std::vector<float>& buf, const int64_t* qs, int64_t qo, const int64_t* ks,
               int64_t ko, const int64_t* vs, int64_t vo, const float* mask, int64_t B,
               int64_t H, int64_t L, int64_t E, bool causal, std::vector<double>& out,
               std::vector<double>& lse) {
  out.assign(B * H * L * E, 0);
  lse.assign(B * H * L, 0);
  const double scale = 1.0 / std::sqrt(double(E));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> s(L);
        double mx = -INFINITY;
        for (int64_t j = 0; j < L; ++j) {
          double d = 0;
          for (int64_t e = 0; e < E; ++e)
            d += double(at(buf.data() + qo, qs, b, h, i, e)) * at(buf.data() + ko, ks, b, h, j, e);
          s[j] = (causal && j > i) ? -INFINITY : d * scale + (mask ? mask[i * L + j] : 0.0);
          mx = std::max(mx, s[j]);
        }
        if (mx == -INFINITY) continue;  // Note [A row that sees no key]: output 0, logsumexp 0
        double sum = 0;
        for (int64_t j = 0; j < L; ++j) sum += std::exp(s[j] - mx);
        for (int64_t e = 0; e < E; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < L; ++j)
            acc += std::exp(s[j] - mx) / sum * at(buf.data() + vo, vs, b, h, j, e);
          out[((b * H + h) * L + i) * E + e] = acc;
        }
        lse[(b * H + h) * L + i] = mx + std::log(sum);
      }
}

// L <= 8 query rows take the decode kernel (Note [Attention at decode]), more the gemms.
// hide_row: the mask hides every key from that query row (Note [A row that sees no key]).
void run_case(bool causal, bool with_mask, int64_t L = 7, int64_t hide_row = -1) {
  // One projection buffer [L, B, 3*H*E]; q, k, v are permuted views of it,
  // as nn.MultiheadAttention's in_proj output is handed to SDPA.
  const int64_t B = 2, H = 3, E = 5;
  std::vector<float> buf(L * B * 3 * H * E);
  std::mt19937 rng(42);
  std::normal_distribution<float> nd;
  for (float& x : buf) x = nd(rng);
  const int64_t sizes[] = {B, H, L, E};
  const int64_t strides[] = {3 * H * E, E, B * 3 * H * E, 1};
  int64_t buf_sizes[] = {int64_t(buf.size())}, one[] = {1};
  Owned base, q, k, v, mask, out, lse;
  ASSERT_EQ(aoti_torch_create_tensor_from_blob(buf.data(), 1, buf_sizes, one, 0, 6, 0, 0, &base.h), 0);
  ASSERT_EQ(aoti_torch__reinterpret_tensor(base.h, 4, sizes, strides, 0, &q.h), 0);
  ASSERT_EQ(aoti_torch__reinterpret_tensor(base.h, 4, sizes, strides, H * E, &k.h), 0);
  ASSERT_EQ(aoti_torch__reinterpret_tensor(base.h, 4, sizes, strides, 2 * H * E, &v.h), 0);
  std::vector<float> mask_data(L * L);
  for (float& x : mask_data) x = nd(rng);
  if (hide_row >= 0) std::fill_n(mask_data.begin() + hide_row * L, L, -INFINITY);
  if (with_mask) {
    // [L, L] additive mask broadcast over batch and heads.
    int64_t ms[] = {L, L}, mst[] = {L, 1};
    ASSERT_EQ(aoti_torch_create_tensor_from_blob(mask_data.data(), 2, ms, mst, 0, 6, 0, 0, &mask.h), 0);
  }
  ASSERT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
                q.h, k.h, v.h, 0.0, causal, with_mask ? &mask.h : nullptr, nullptr, &out.h, &lse.h),
            0)
      << aotrt_last_error();
  std::vector<double> ref, ref_lse;
  reference(buf, strides, 0, strides, H * E, strides, 2 * H * E,
            with_mask ? mask_data.data() : nullptr, B, H, L, E, causal, ref, ref_lse);

  float* o = nullptr;
  int64_t* os = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(out.h, reinterpret_cast<void**>(&o)), 0);
  ASSERT_EQ(aoti_torch_get_strides(out.h, &os), 0);
  // Output lies dense in the query's stride order: [L, B, H, E] in memory.
  EXPECT_EQ(os[0], H * E);
  EXPECT_EQ(os[1], E);
  EXPECT_EQ(os[2], B * H * E);
  EXPECT_EQ(os[3], 1);
  double worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t e = 0; e < E; ++e)
          worst = std::max(worst, std::abs(at(o, os, b, h, i, e) - ref[((b * H + h) * L + i) * E + e]));
  EXPECT_LT(worst, 1e-5);

  float* l = nullptr;
  int64_t* ls = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(lse.h, reinterpret_cast<void**>(&l)), 0);
  ASSERT_EQ(aoti_torch_get_strides(lse.h, &ls), 0);
  EXPECT_EQ(ls[0], L * H);  // ATen's [B, H, L] logsumexp, laid out as [B, L, H]
  EXPECT_EQ(ls[1], 1);
  EXPECT_EQ(ls[2], H);
  double worst_lse = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        worst_lse = std::max(worst_lse, std::abs(l[b * ls[0] + h * ls[1] + i * ls[2]] -
                                                 ref_lse[(b * H + h) * L + i]));
  EXPECT_LT(worst_lse, 1e-5);
}

}  // namespace

TEST(CpuSdpa, PermutedViews) { run_case(false, false); }
TEST(CpuSdpa, Causal) { run_case(true, false); }
TEST(CpuSdpa, BroadcastAdditiveMask) { run_case(false, true); }
TEST(CpuSdpa, CausalWithMask) { run_case(true, true); }
TEST(CpuSdpa, ThroughGemms) {
  run_case(false, false, 12);
  run_case(true, true, 12);
}
// A padded query row: zeros and a zero logsumexp, as ATen's; the decode kernel, the gemms.
TEST(CpuSdpa, ARowThatSeesNoKey) {
  run_case(false, true, 7, 3);
  run_case(true, true, 7, 6);
  run_case(false, true, 12, 5);
  run_case(true, true, 12, 11);
}

TEST(CpuSdpa, RefusesDropoutAndBadShapes) {
  int64_t s4[] = {1, 1, 2, 2}, st4[] = {4, 4, 2, 1}, s3[] = {1, 2, 2}, st3[] = {4, 2, 1};
  Owned q, bad, out, lse;
  ASSERT_EQ(aoti_torch_empty_strided(4, s4, st4, 6, 0, 0, &q.h), 0);
  ASSERT_EQ(aoti_torch_empty_strided(3, s3, st3, 6, 0, 0, &bad.h), 0);
  EXPECT_NE(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q.h, q.h, q.h, 0.1, 0, nullptr, nullptr, &out.h, &lse.h), 0);
  EXPECT_NE(std::string(aotrt_last_error()).find("dropout_p"), std::string::npos);
  EXPECT_NE(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q.h, bad.h, q.h, 0.0, 0, nullptr, nullptr, &out.h, &lse.h), 0);
  EXPECT_EQ(out.h, nullptr);
  EXPECT_EQ(lse.h, nullptr);
}

// Key/value with fewer heads than the query (SDPA's enable_gqa hands them to the op as
// they are): query head h reads key/value head h / (H / Hk), in float32 (the gemm path)
// and float64 (the loop), with and without the causal mask.
TEST(CpuSdpa, GroupedKeyValueHeads) {
  const int64_t B = 2, H = 6, Hk = 2, Lq = 9, Lk = 11, E = 8;
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  std::vector<double> q(B * H * Lq * E), k(B * Hk * Lk * E), v(B * Hk * Lk * E);
  for (auto* t : {&q, &k, &v})
    for (double& x : *t) x = static_cast<float>(nd(rng));  // exact in float32 too
  for (int32_t dtype : {6, 7}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(dtype == 6 ? "float32" : "float64") + (causal ? " causal" : ""));
      std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), vf(v.begin(), v.end());
      auto blob = [&](std::vector<double>& d, std::vector<float>& f, int64_t heads, int64_t L,
                      Owned& t) {
        const int64_t sizes[] = {B, heads, L, E};
        const int64_t strides[] = {heads * L * E, L * E, E, 1};
        void* data = dtype == 6 ? static_cast<void*>(f.data()) : static_cast<void*>(d.data());
        ASSERT_EQ(aoti_torch_create_tensor_from_blob(data, 4, sizes, strides, 0, dtype, 0, 0, &t.h), 0);
      };
      Owned qt, kt, vt, out, lse;
      blob(q, qf, H, Lq, qt);
      blob(k, kf, Hk, Lk, kt);
      blob(v, vf, Hk, Lk, vt);
      ASSERT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
                    qt.h, kt.h, vt.h, 0.0, causal, nullptr, nullptr, &out.h, &lse.h),
                0)
          << aotrt_last_error();
      void* o = nullptr;
      int64_t* os = nullptr;
      ASSERT_EQ(aoti_torch_get_data_ptr(out.h, &o), 0);
      ASSERT_EQ(aoti_torch_get_strides(out.h, &os), 0);
      double worst = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < Lq; ++i) {
            const int64_t hk = h / (H / Hk);
            std::vector<double> s(Lk);
            double mx = -INFINITY;
            for (int64_t j = 0; j < Lk; ++j) {
              double d = 0;
              for (int64_t e = 0; e < E; ++e)
                d += q[((b * H + h) * Lq + i) * E + e] * k[((b * Hk + hk) * Lk + j) * E + e];
              s[j] = causal && j > i ? -INFINITY : d / std::sqrt(double(E));
              mx = std::max(mx, s[j]);
            }
            double sum = 0;
            for (double x : s) sum += std::exp(x - mx);
            for (int64_t e = 0; e < E; ++e) {
              double acc = 0;
              for (int64_t j = 0; j < Lk; ++j)
                acc += std::exp(s[j] - mx) / sum * v[((b * Hk + hk) * Lk + j) * E + e];
              const int64_t off = b * os[0] + h * os[1] + i * os[2] + e * os[3];
              const double got = dtype == 6 ? static_cast<float*>(o)[off] : static_cast<double*>(o)[off];
              worst = std::max(worst, std::abs(got - acc));
            }
          }
      EXPECT_LT(worst, dtype == 6 ? 1e-5 : 1e-12);
    }
  }
  // Key heads that do not divide the query's are refused.
  int64_t s4[] = {1, 4, 2, 2}, st4[] = {16, 4, 2, 1}, s3[] = {1, 3, 2, 2}, st3[] = {12, 4, 2, 1};
  Owned q4, k3, out, lse;
  ASSERT_EQ(aoti_torch_empty_strided(4, s4, st4, 6, 0, 0, &q4.h), 0);
  ASSERT_EQ(aoti_torch_empty_strided(4, s3, st3, 6, 0, 0, &k3.h), 0);
  EXPECT_NE(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q4.h, k3.h, k3.h, 0.0, 0, nullptr, nullptr, &out.h, &lse.h), 0);
  EXPECT_NE(std::string(aotrt_last_error()).find("key/value heads must divide"), std::string::npos)
      << aotrt_last_error();
}
