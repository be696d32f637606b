// aten::_efficient_attention_forward (Note [Efficient attention forward] in
// ops/attention.cpp) and the flash ops, _scaled_dot_product_flash_attention and
// _flash_attention_forward with its _v2 and _no_dropout_inplace forms (Note
// [Flash attention]), CUDA only. On CUDA, through the C ABI against eager CPU
// attention in float64 (reference_attention.inc, reference_flash.inc): values,
// dtypes, sizes and strides of the output and logsumexp, the philox state,
// and the returned ints. On every build, without a GPU: what the ops refuse
// and in which order, through the ops layer and (in CUDA builds) through the
// aoti_torch_cuda_ entry points with CPU tensors, which shows each entry
// point hands each argument to its place; the flash ops' output layouts
// against torch's meta functions; the flash rows against a host reference.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/handles.h"
#include "ops/attention.h"
#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_attention.inc"
#include "reference_flash.inc"

using EfficientForward = AOTITorchError (*)(
    AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*, AtenTensorHandle*,
    AtenTensorHandle*, int64_t*, int64_t*, double, int64_t, int32_t, double*, AtenTensorHandle*,
    int64_t*, AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*,
    int64_t*, int64_t*);

// Attention accumulates in fp32 (cuDNN rounds the probabilities to the input
// dtype for fp16/bf16): tolerances of the attention tests in tests/unit/cuda/.
double output_rtol(int32_t dtype) {
  return dtype == kBF16 ? 1.0 / 128 : dtype == kF16 ? 1.0 / 512 : 5e-5;
}
double output_atol(int32_t dtype) {
  return dtype == kBF16 ? 8e-3 : dtype == kF16 ? 2e-3 : 5e-5;
}

// [B, H, M, N] of a row: from its query [B, M, H, K] and key [B, N, Hk, K].
Dims bias_sizes(const OpCase& c) {
  const Dims& q = c.inputs[0].sizes;
  return {q[0], q[2], q[1], c.inputs[1].sizes[1]};
}

// The row's bias as the op is given it: [B, H, M, N], expanded (stride 0)
// where the row's tensor has size 1, as sdpa expands a broadcast mask.
Tensor expanded_bias(const Tensor& t, const OpCase& c) {
  const Values& v = c.inputs[3];
  const Dims sizes = bias_sizes(c);
  Dims strides = v.strides;
  for (size_t d = 0; d < 4; ++d) {
    if (v.sizes[d] != sizes[d]) strides[d] = 0;
  }
  return reinterpret(t.get(), sizes, strides, 0);
}

class OpsAttention : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsAttention, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  AOTRT_FIND_OP(f, EfficientForward, b, c.op);
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor bias_t = in.size() > 3 ? expanded_bias(in[3], c) : Tensor();
  AtenTensorHandle bias = bias_t.get();
  int64_t max_seqlen_k = c.ints[2];
  double scale = c.floats.empty() ? 0.0 : c.floats[0];
  Tensor out, lse, seed, offset;
  int64_t max_q = -1, max_k = -1;
  const AOTITorchError rc =
      f(in[0].get(), in[1].get(), in[2].get(), bias ? &bias : nullptr, nullptr, nullptr, nullptr,
        max_seqlen_k == kNone ? nullptr : &max_seqlen_k, 0.0, c.ints[0],
        static_cast<int32_t>(c.ints[1]), c.floats.empty() ? nullptr : &scale, nullptr, nullptr,
        out.out(), lse.out(), seed.out(), offset.out(), &max_q, &max_k);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();

  const Values& want_out = c.outputs[0];
  const Meta mo = meta(out.get());
  EXPECT_EQ(mo.dtype, want_out.dtype);
  EXPECT_EQ(mo.sizes, want_out.sizes);
  EXPECT_EQ(mo.strides, want_out.strides) << "the generated code reads the meta function's strides";
  EXPECT_TRUE(close_values(values_of(out.get()), want_out.values, output_rtol(want_out.dtype),
                           output_atol(want_out.dtype)))
      << c.name << ": output";

  const Values& want_lse = c.outputs[1];
  const Meta ml = meta(lse.get());
  EXPECT_EQ(ml.dtype, kF32);
  EXPECT_EQ(ml.sizes, want_lse.sizes);
  EXPECT_EQ(ml.strides, want_lse.strides);
  const double lse_tol = want_out.dtype == kF32 ? 5e-5 : 1e-3;
  EXPECT_TRUE(close_values(values_of(lse.get()), want_lse.values, lse_tol, lse_tol))
      << c.name << ": logsumexp (padding rows +inf)";

  for (const Tensor* t : {&seed, &offset}) {
    const Meta m = meta(t->get());
    EXPECT_EQ(m.sizes, Dims{});
    EXPECT_EQ(m.dtype, kI64);
    EXPECT_EQ(m.device_type, 0) << "ATen returns the seed and offset on the CPU";
    EXPECT_EQ(values_of(t->get()), std::vector<double>{0.0});
  }
  EXPECT_EQ(max_q, c.ints[3]);
  EXPECT_EQ(max_k, c.ints[4]);
}

// The op has no CPU entry point (ATen has no CPU kernel): CUDA rows only.
std::vector<BackendCase> cuda_rows() {
  std::vector<BackendCase> rows = all_backends(kAttentionCases);
  std::erase_if(rows, [](const BackendCase& r) { return r.backend.is_cpu(); });
  return rows;
}
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpsAttention);
INSTANTIATE_TEST_SUITE_P(Torch, OpsAttention, ::testing::ValuesIn(cuda_rows()), backend_case_name);

// The float32 rows' references against aotrt's CPU attention (the _for_cpu op)
// on the same inputs viewed as [B, H, M, K], the bias and the causal mask
// (either corner) given as one additive mask: checks the rows themselves (the
// BMHK layouts, the diagonal of each mask type, the logsumexp rows) where no
// GPU is.
TEST(OpsAttentionForward, Float32RowsAgreeWithCpuAttention) {
  const Backend cpu = built_backends()[0];
  int checked = 0;
  for (const OpCase& c : kAttentionCases) {
    if (c.inputs[0].dtype != kF32) continue;
    SCOPED_TRACE(c.name);
    std::vector<Tensor> in;
    for (const Values& v : c.inputs) in.push_back(make_tensor(cpu, v));
    std::vector<Tensor> bhmk;
    for (size_t i = 0; i < 3; ++i) {
      const Values& v = c.inputs[i];
      bhmk.push_back(reinterpret(in[i].get(), {v.sizes[0], v.sizes[2], v.sizes[1], v.sizes[3]},
                                 {v.strides[0], v.strides[2], v.strides[1], v.strides[3]}, 0));
    }
    const Dims sizes = bias_sizes(c);
    const int64_t H = sizes[1], M = sizes[2], N = sizes[3];
    std::vector<double> mask(static_cast<size_t>(numel_of(sizes)), 0.0);
    if (c.inputs.size() > 3) mask = values_of(expanded_bias(in[3], c).get());
    const int64_t offset = c.ints[0] == 2 ? N - M : 0;
    for (size_t e = 0; e < mask.size(); ++e) {
      const int64_t j = static_cast<int64_t>(e) % N, i = static_cast<int64_t>(e) / N % M;
      if (c.ints[0] != 0 && j > i + offset) mask[e] = -kInf;
    }
    HostTensor<double> mask64(mask, sizes);
    Tensor mask32 = empty(cpu, sizes, kF32);
    ASSERT_EQ(aoti_torch_copy_(mask32.get(), mask64.get(), 0), AOTI_TORCH_SUCCESS);
    AtenTensorHandle mask_h = mask32.get();
    double scale = c.floats.empty() ? 0.0 : c.floats[0];
    Tensor out, lse;
    ASSERT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
                  bhmk[0].get(), bhmk[1].get(), bhmk[2].get(), 0.0, 0, &mask_h,
                  c.floats.empty() ? nullptr : &scale, out.out(), lse.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    // out is [B, H, M, Kv]; the row's output is [B, M, H, Kv].
    const Meta mo = meta(out.get());
    Tensor out_bmhk = reinterpret(out.get(), {mo.sizes[0], mo.sizes[2], mo.sizes[1], mo.sizes[3]},
                                  {mo.strides[0], mo.strides[2], mo.strides[1], mo.strides[3]}, 0);
    EXPECT_TRUE(close_values(values_of(out_bmhk.get()), c.outputs[0].values, 1e-5, 1e-5));
    if (c.ints[1] != 0) {
      const std::vector<double> got = values_of(lse.get());  // [B, H, M]
      const Values& want = c.outputs[1];                     // [B, H, padded]
      const int64_t padded = want.sizes[2];
      ASSERT_EQ(padded, (M + 31) / 32 * 32);
      std::vector<double> rows;
      for (int64_t bh = 0; bh < sizes[0] * H; ++bh) {
        for (int64_t i = 0; i < padded; ++i) {
          rows.push_back(i < M ? got[static_cast<size_t>(bh * M + i)] : kInf);
        }
      }
      EXPECT_TRUE(close_values(rows, want.values, 1e-5, 1e-5));
    }
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

// --- Refusals, on every build and without a GPU ------------------------------------------

struct Inputs {
  Tensor q, k, v, other;  // other: an int32 [3] tensor (cu_seqlens, seqlen_k)
};
Inputs cpu_inputs() {
  const Backend cpu = built_backends()[0];
  Inputs in;
  in.q = make_tensor(cpu, Values{kF32, {1, 4, 2, 8}, {64, 16, 8, 1}, 0, std::vector<double>(64, 0.5)});
  in.k = make_tensor(cpu, Values{kF32, {1, 6, 2, 8}, {96, 16, 8, 1}, 0, std::vector<double>(96, 0.25)});
  in.v = make_tensor(cpu, Values{kF32, {1, 6, 2, 8}, {96, 16, 8, 1}, 0, std::vector<double>(96, 1.0)});
  in.other = make_tensor(cpu, Values{kI32, {3}, {1}, 0, {0, 4, 8}});
  return in;
}

// The op's own refusal, as an Error of `kind` whose message names `fn` and says `what`.
template <typename Call>
void expect_op_refuses(Call call, ErrorKind kind, const std::string& what,
                       const std::string& fn = "_efficient_attention_forward") {
  try {
    call();
    ADD_FAILURE() << "not refused: " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fn), std::string::npos) << e.what();
  }
}

TEST(OpsAttentionForward, RefusesWhatItDoesNotServeInOrder) {
  Inputs in = cpu_inputs();
  const TensorImpl& q = handle_get(in.q.get(), "q");
  const TensorImpl& k = handle_get(in.k.get(), "k");
  const TensorImpl& v = handle_get(in.v.get(), "v");
  const TensorImpl& other = handle_get(in.other.get(), "other");
  const char* fn = "_efficient_attention_forward";
  auto args = [&] {
    return ops::EfficientAttentionForwardArgs{q,       k,   v,   nullptr, nullptr, nullptr,
                                              {},      {},  0.0, 0,       false,   {},
                                              nullptr, {}};
  };
  auto run = [&](const ops::EfficientAttentionForwardArgs& a) {
    return [&a, fn] { ops::efficient_attention_forward(a, fn); };
  };
  // Each refusal comes before the next one's cause and before the device.
  auto a = args();
  a.dropout_p = 0.5;
  a.cu_seqlens_q = &other;
  a.custom_mask_type = 7;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "dropout_p 0.5");
  a.dropout_p = 0.0;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "cu_seqlens_q/cu_seqlens_k");
  a.cu_seqlens_q = nullptr;
  a.cu_seqlens_k = &other;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "cu_seqlens_q/cu_seqlens_k");
  a.cu_seqlens_k = nullptr;
  a.seqlen_k = &other;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "seqlen_k (per-batch key counts)");
  a.seqlen_k = nullptr;
  a.window_size = 4;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "window_size 4 (sliding-window");
  a.window_size.reset();
  expect_op_refuses(run(a), ErrorKind::kInvalidArgument, "custom_mask_type 7 is none of");
  a.custom_mask_type = -1;
  expect_op_refuses(run(a), ErrorKind::kInvalidArgument, "custom_mask_type -1 is none of");
  // What it serves, on the CPU: refused by device, naming it.
  for (int64_t mask : {0, 1, 2}) {
    a.custom_mask_type = mask;
    expect_op_refuses(run(a), ErrorKind::kUnsupported, "is on cpu; _efficient_attention_forward is served on CUDA only");
  }
  // A 3-d query (BMK) is no BMHK tensor.
  Tensor q3 = make_tensor(built_backends()[0], Values{kF32, {4, 2, 8}, {16, 8, 1}, 0, std::vector<double>(64, 0.5)});
  const ops::EfficientAttentionForwardArgs bad{handle_get(q3.get(), "q3"), k, v, nullptr, nullptr,
                                               nullptr, {}, {}, 0.0, 0, false, {}, nullptr, {}};
  expect_op_refuses(run(bad), ErrorKind::kInvalidArgument, "must be 4-d [batch, seq, heads, dim], got 3-d");
}

#ifdef AOTRT_WITH_CUDA
// The entry point with CPU tensors: each refusal quotes the value it was
// given in that argument's place, so a swapped or dropped argument shows.
TEST(OpsAttentionForward, EntryPointDecodesAndRefuses) {
  const Backend cuda = built_backends()[1];
  AOTRT_FIND_OP(f, EfficientForward, cuda, "_efficient_attention_forward");
  const std::string fn = "aoti_torch_cuda__efficient_attention_forward";
  Inputs in = cpu_inputs();
  AtenTensorHandle other = in.other.get(), null_handle = nullptr;
  int64_t window = 9, max_q = 5, max_k = 6;
  double scale = 0.5;
  AtenTensorHandle r0 = nullptr, r1 = nullptr, r2 = nullptr, r3 = nullptr;
  int64_t r4 = -1, r5 = -1;
  auto call = [&](double dropout, AtenTensorHandle* cu_q, AtenTensorHandle* cu_k,
                  int64_t mask, AtenTensorHandle* seqlen_k, int64_t* window_size) {
    return f(in.q.get(), in.k.get(), in.v.get(), &null_handle, cu_q, cu_k, &max_q, &max_k,
             dropout, mask, 1, &scale, seqlen_k, window_size, &r0, &r1, &r2, &r3, &r4, &r5);
  };
  expect_refused(call(0.25, nullptr, nullptr, 0, nullptr, nullptr), fn, "dropout_p 0.25 is not served");
  expect_refused(call(0.0, &other, nullptr, 0, nullptr, nullptr), fn, "cu_seqlens_q/cu_seqlens_k");
  expect_refused(call(0.0, nullptr, &other, 0, nullptr, nullptr), fn, "cu_seqlens_q/cu_seqlens_k");
  expect_refused(call(0.0, nullptr, nullptr, 0, &other, nullptr), fn, "seqlen_k (per-batch");
  expect_refused(call(0.0, nullptr, nullptr, 0, nullptr, &window), fn, "window_size 9");
  expect_refused(call(0.0, nullptr, nullptr, 3, nullptr, nullptr), fn, "custom_mask_type 3");
  // None given as a null pointer or a null handle is None: the device is next.
  expect_refused(call(0.0, &null_handle, &null_handle, 2, &null_handle, nullptr), fn,
                 "'query' is on cpu; _efficient_attention_forward is served on CUDA only");
  for (AtenTensorHandle h : {r0, r1, r2, r3}) EXPECT_EQ(h, nullptr) << "a refusal hands out nothing";
  EXPECT_EQ(r4, -1);
  EXPECT_EQ(r5, -1);
  EXPECT_EQ(f(nullptr, in.k.get(), in.v.get(), nullptr, nullptr, nullptr, nullptr, nullptr, 0.0,
              0, 0, nullptr, nullptr, nullptr, &r0, &r1, &r2, &r3, &r4, &r5),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("'query'"), std::string::npos)
      << aotrt_last_error();
}
#endif

// --- Flash attention (Note [Flash attention] in ops/attention.cpp) -----------------------

using SdpaFlash = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, double,
                                     int32_t, int32_t, double*, AtenTensorHandle*,
                                     AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*,
                                     int64_t*, int64_t*, AtenTensorHandle*, AtenTensorHandle*,
                                     AtenTensorHandle*);
using FlashForward = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                        AtenTensorHandle*, AtenTensorHandle*, int64_t, int64_t,
                                        double, int32_t, int32_t, double*, int64_t*, int64_t*,
                                        AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*,
                                        AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*,
                                        AtenTensorHandle*);
using FlashForwardV2 = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                          AtenTensorHandle*, AtenTensorHandle*, int64_t, int64_t,
                                          double, int32_t, int32_t, double*, int64_t*, int64_t*,
                                          AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*,
                                          int64_t*, AtenTensorHandle*, AtenTensorHandle*,
                                          AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*);
using FlashInplace = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                        AtenTensorHandle, AtenTensorHandle*, AtenTensorHandle*,
                                        int64_t, int64_t, double, int32_t, int32_t, double*,
                                        int64_t*, int64_t*, AtenTensorHandle*, AtenTensorHandle*,
                                        AtenTensorHandle*, AtenTensorHandle*);
using FlashInplaceV2 = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                          AtenTensorHandle, AtenTensorHandle*, AtenTensorHandle*,
                                          int64_t, int64_t, double, int32_t, int32_t, double*,
                                          int64_t*, int64_t*, AtenTensorHandle*,
                                          AtenTensorHandle*, AtenTensorHandle*, int64_t*,
                                          AtenTensorHandle*);

bool is_sdpa(const OpCase& c) {
  return std::string(c.op) == "_scaled_dot_product_flash_attention";
}
std::optional<int64_t> row_window(int64_t w) {
  return w == kNone ? std::nullopt : std::optional<int64_t>(w);
}

// A flash row's element at [b, h, l, e] of a [B, H, L, E] (SDPA) or [B, L, H, E]
// (forward) tensor, from its row-major values.
double flash_at(const OpCase& c, const Values& v, int64_t b, int64_t h, int64_t l, int64_t e) {
  const Dims& z = v.sizes;
  const int64_t i1 = is_sdpa(c) ? h : l, i2 = is_sdpa(c) ? l : h;
  return v.values[static_cast<size_t>(((b * z[1] + i1) * z[2] + i2) * z[3] + e)];
}

// The row's output and logsumexp outputs written by the CUDA op `out`/`lse` (the output
// may be an `out` the inplace form wrote, in any layout: compared by value).
void expect_flash_values(const OpCase& c, AtenTensorHandle out, AtenTensorHandle lse) {
  const Values& want_out = c.outputs[0];
  EXPECT_TRUE(close_values(values_of(out), want_out.values, output_rtol(want_out.dtype),
                           output_atol(want_out.dtype)))
      << c.name << ": output";
  const double lse_tol = want_out.dtype == kF32 ? 5e-5 : 1e-3;
  EXPECT_TRUE(close_values(values_of(lse), c.outputs[1].values, lse_tol, lse_tol))
      << c.name << ": logsumexp";
}

class OpsFlashAttention : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsFlashAttention, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  double scale = c.floats.empty() ? 0.0 : c.floats[0];
  double* scale_p = c.floats.empty() ? nullptr : &scale;
  Tensor out, lse, rng, unused, debug;
  if (is_sdpa(c)) {
    AOTRT_FIND_OP(f, SdpaFlash, b, c.op);
    Tensor cum_q, cum_k;
    int64_t max_q = -1, max_k = -1;
    ASSERT_EQ(f(in[0].get(), in[1].get(), in[2].get(), 0.0, static_cast<int32_t>(c.ints[0]), 0,
                scale_p, out.out(), lse.out(), cum_q.out(), cum_k.out(), &max_q, &max_k,
                rng.out(), unused.out(), debug.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(max_q, c.ints[1]);
    EXPECT_EQ(max_k, c.ints[2]);
    for (const Tensor* t : {&cum_q, &cum_k}) {
      bool defined = true;
      EXPECT_EQ(aoti_torch_is_defined(t->get(), &defined), AOTI_TORCH_SUCCESS);
      EXPECT_FALSE(defined) << "cum_seq_q/k are undefined, as ATen returns them";
    }
  } else {
    AOTRT_FIND_OP(f, FlashForward, b, c.op);
    int64_t wl = c.ints[1], wr = c.ints[2];
    ASSERT_EQ(f(in[0].get(), in[1].get(), in[2].get(), nullptr, nullptr, /*max_q=*/0,
                /*max_k=*/0, 0.0, static_cast<int32_t>(c.ints[0]), 0, scale_p,
                wl == kNone ? nullptr : &wl, wr == kNone ? nullptr : &wr, nullptr, nullptr,
                out.out(), lse.out(), rng.out(), unused.out(), debug.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
  }

  for (size_t i = 0; i < 2; ++i) {
    const Meta m = meta(i == 0 ? out.get() : lse.get());
    const Values& want = c.outputs[i];
    EXPECT_EQ(m.dtype, want.dtype) << i;
    EXPECT_EQ(m.sizes, want.sizes) << i;
    EXPECT_EQ(m.strides, want.strides) << i << ": the generated code reads the meta function's strides";
    EXPECT_EQ(m.device_type, 1) << i;
  }
  expect_flash_values(c, out.get(), lse.get());
  // The philox state of torch 2.7 on (uint64 [2] and []), on the query's device; zeros.
  const Meta mr = meta(rng.get()), mu = meta(unused.get()), md = meta(debug.get());
  EXPECT_EQ(mr.sizes, Dims{2});
  EXPECT_EQ(mr.dtype, kU64);
  EXPECT_EQ(mr.device_type, 1);
  EXPECT_EQ(values_of(rng.get()), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(mu.sizes, Dims{});
  EXPECT_EQ(mu.dtype, kU64);
  EXPECT_EQ(mu.device_type, 1);
  EXPECT_EQ(values_of(unused.get()), std::vector<double>{0.0});
  EXPECT_EQ(md.sizes, Dims{0}) << "the debug mask is empty unless asked (and that is refused)";
  EXPECT_EQ(md.dtype, c.outputs[0].dtype);
  EXPECT_EQ(md.device_type, 1);
}

// _v2 and the inplace forms on the forward rows: the same values; the inplace forms
// write an `out` laid out as [B, H, L, E] memory (not the op's own layout) in place.
class OpsFlashAttentionForms : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsFlashAttentionForms, MatchTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  double scale = c.floats.empty() ? 0.0 : c.floats[0];
  double* scale_p = c.floats.empty() ? nullptr : &scale;
  int64_t wl = c.ints[1], wr = c.ints[2], splits = 3;
  int64_t* wl_p = wl == kNone ? nullptr : &wl;
  int64_t* wr_p = wr == kNone ? nullptr : &wr;
  const int32_t causal = static_cast<int32_t>(c.ints[0]);
  AOTRT_FIND_OP(v2, FlashForwardV2, b, "_flash_attention_forward_v2");
  Tensor out, lse, rng, unused, debug;
  ASSERT_EQ(v2(in[0].get(), in[1].get(), in[2].get(), nullptr, nullptr, 0, 0, 0.0, causal, 0,
               scale_p, wl_p, wr_p, nullptr, nullptr, nullptr, &splits, out.out(), lse.out(),
               rng.out(), unused.out(), debug.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(meta(out.get()).strides, c.outputs[0].strides);
  expect_flash_values(c, out.get(), lse.get());

  const Dims& z = c.outputs[0].sizes;  // [B, L, H, E]
  for (int form = 0; form < 2; ++form) {
    SCOPED_TRACE(form == 0 ? "_no_dropout_inplace" : "_no_dropout_inplace_v2");
    Tensor bhle = empty(b, {z[0], z[2], z[1], z[3]}, c.outputs[0].dtype);
    Tensor written = reinterpret(bhle.get(), z, {z[1] * z[2] * z[3], z[3], z[1] * z[3], 1}, 0);
    Tensor lse_only;
    if (form == 0) {
      AOTRT_FIND_OP(f, FlashInplace, b, "_flash_attention_forward_no_dropout_inplace");
      ASSERT_EQ(f(written.get(), in[0].get(), in[1].get(), in[2].get(), nullptr, nullptr, 0, 0,
                  0.0, causal, 0, scale_p, wl_p, wr_p, nullptr, nullptr, nullptr,
                  lse_only.out()),
                AOTI_TORCH_SUCCESS)
          << aotrt_last_error();
    } else {
      AOTRT_FIND_OP(f, FlashInplaceV2, b, "_flash_attention_forward_no_dropout_inplace_v2");
      ASSERT_EQ(f(written.get(), in[0].get(), in[1].get(), in[2].get(), nullptr, nullptr, 0, 0,
                  0.0, causal, 0, scale_p, wl_p, wr_p, nullptr, nullptr, nullptr, &splits,
                  lse_only.out()),
                AOTI_TORCH_SUCCESS)
          << aotrt_last_error();
    }
    EXPECT_EQ(meta(lse_only.get()).sizes, c.outputs[1].sizes);
    expect_flash_values(c, written.get(), lse_only.get());
  }
}

// The ops have no CPU entry point (ATen has no CPU kernel): CUDA rows only; the
// forward forms take the _flash_attention_forward rows.
std::vector<BackendCase> cuda_flash_rows(bool forward_only) {
  std::vector<BackendCase> rows = all_backends(kFlashCases);
  std::erase_if(rows, [&](const BackendCase& r) {
    return r.backend.is_cpu() || (forward_only && is_sdpa(r.c));
  });
  return rows;
}
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpsFlashAttention);
INSTANTIATE_TEST_SUITE_P(Torch, OpsFlashAttention, ::testing::ValuesIn(cuda_flash_rows(false)),
                         backend_case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpsFlashAttentionForms);
INSTANTIATE_TEST_SUITE_P(Torch, OpsFlashAttentionForms, ::testing::ValuesIn(cuda_flash_rows(true)),
                         backend_case_name);

// Every row's layouts as ops::flash_attention_layouts gives them for CPU tensors of the
// row's sizes and strides, against torch's meta functions: the output and logsumexp
// against the row's (written from the meta functions), the philox state and debug mask
// against what those functions return in torch 2.13 (uint64 [2] and [], and [0] of the
// query's dtype, all on the query's device).
TEST(OpsFlashAttentionLayouts, AreTheMetaFunctions) {
  const Backend cpu = built_backends()[0];
  int checked = 0;
  for (const OpCase& c : kFlashCases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> in;
    for (const Values& v : c.inputs) in.push_back(make_tensor(cpu, v));
    const TensorImpl& q = handle_get(in[0].get(), "q");
    ops::FlashAttentionArgs a{.layout = is_sdpa(c) ? ops::FlashLayout::kBHLE : ops::FlashLayout::kBLHE,
                              .query = q,
                              .key = handle_get(in[1].get(), "k"),
                              .value = handle_get(in[2].get(), "v"),
                              .is_causal = c.ints[0] != 0};
    if (!is_sdpa(c)) {
      a.window_size_left = row_window(c.ints[1]);
      a.window_size_right = row_window(c.ints[2]);
    }
    const ops::FlashAttentionLayouts l = ops::flash_attention_layouts(a, "test");
    const std::vector<std::pair<const ops::OutputLayout*, const Values*>> rows{
        {&l.output, &c.outputs[0]}, {&l.logsumexp, &c.outputs[1]}};
    for (const auto& [got, want] : rows) {
      EXPECT_EQ(got->sizes, want->sizes);
      EXPECT_EQ(got->strides, want->strides);
      EXPECT_EQ(static_cast<int32_t>(got->dtype), want->dtype);
    }
    EXPECT_EQ(l.rng_state.sizes, Dims{2});
    EXPECT_EQ(l.rng_state.strides, Dims{1});
    EXPECT_EQ(l.rng_state.dtype, ScalarType::UInt64);
    EXPECT_EQ(l.unused.sizes, Dims{});
    EXPECT_EQ(l.unused.dtype, ScalarType::UInt64);
    EXPECT_EQ(l.debug_mask.sizes, Dims{0});
    EXPECT_EQ(l.debug_mask.dtype, q.dtype());
    for (const ops::OutputLayout* t : {&l.output, &l.logsumexp, &l.rng_state, &l.unused, &l.debug_mask}) {
      EXPECT_EQ(t->device, q.device());
    }
    if (is_sdpa(c)) {
      EXPECT_EQ(l.max_q, c.ints[1]);
      EXPECT_EQ(l.max_k, c.ints[2]);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// The rows' values against attention computed here in double, with FlashAttention's
// bottom-right causal mask and query head h reading key/value head h / (H / Hk): checks
// the rows themselves (the mask's corner, the heads, the layouts) where no GPU is.
TEST(OpsFlashAttentionLayouts, RowsAgreeWithAHostReference) {
  int checked = 0;
  for (const OpCase& c : kFlashCases) {
    SCOPED_TRACE(c.name);
    const Values &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2];
    const size_t seq = is_sdpa(c) ? 2 : 1, heads = is_sdpa(c) ? 1 : 2;
    const int64_t B = q.sizes[0], H = q.sizes[heads], Lq = q.sizes[seq], E = q.sizes[3];
    const int64_t Hk = k.sizes[heads], Lk = k.sizes[seq];
    const double scale = c.floats.empty() ? 1.0 / std::sqrt(static_cast<double>(E)) : c.floats[0];
    const bool causal = c.ints[0] != 0;
    std::vector<double> got_out, got_lse;
    std::vector<double> s(static_cast<size_t>(Lk));
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        const int64_t hk = h / (H / Hk);
        for (int64_t i = 0; i < Lq; ++i) {
          double m = -kInf;
          for (int64_t j = 0; j < Lk; ++j) {
            double dot = 0;
            for (int64_t e = 0; e < E; ++e) dot += flash_at(c, q, b, h, i, e) * flash_at(c, k, b, hk, j, e);
            s[static_cast<size_t>(j)] = causal && j > i + Lk - Lq ? -kInf : dot * scale;
            m = std::max(m, s[static_cast<size_t>(j)]);
          }
          double l = 0;
          for (double x : s) l += std::exp(x - m);
          got_lse.push_back(m + std::log(l));
        }
      }
    }
    // The output, in the row-major order of the row's output sizes ([B, H, Lq, E] or [B, Lq, H, E]).
    const Dims& oz = c.outputs[0].sizes;
    for (int64_t i0 = 0; i0 < oz[0]; ++i0)
      for (int64_t i1 = 0; i1 < oz[1]; ++i1)
        for (int64_t i2 = 0; i2 < oz[2]; ++i2)
          for (int64_t d = 0; d < oz[3]; ++d) {
            const int64_t b = i0, h = is_sdpa(c) ? i1 : i2, i = is_sdpa(c) ? i2 : i1;
            const int64_t hk = h / (H / Hk);
            const double lse = got_lse[static_cast<size_t>((b * H + h) * Lq + i)];
            double acc = 0;
            for (int64_t j = 0; j < Lk; ++j) {
              if (causal && j > i + Lk - Lq) continue;
              double dot = 0;
              for (int64_t e = 0; e < E; ++e) dot += flash_at(c, q, b, h, i, e) * flash_at(c, k, b, hk, j, e);
              acc += std::exp(dot * scale - lse) * flash_at(c, v, b, hk, j, d);
            }
            got_out.push_back(acc);
          }
    const int32_t dtype = c.outputs[0].dtype;
    // The rows' outputs are rounded to their dtype once.
    const double rtol = dtype == kBF16 ? 1.0 / 256 : dtype == kF16 ? 1.0 / 2048 : 1e-6;
    EXPECT_TRUE(close_values(c.outputs[0].values, got_out, rtol, rtol * 1e-2)) << "output";
    EXPECT_TRUE(close_values(c.outputs[1].values, got_lse, 1e-6, 1e-6)) << "logsumexp";
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// What the flash ops refuse, in order, each before the next one's cause and before the
// device; with CPU tensors, which they serve in no form.
TEST(OpsFlashAttentionLayouts, RefusesWhatItDoesNotServeInOrder) {
  Inputs in = cpu_inputs();  // [1, 4, 2, 8] and [1, 6, 2, 8]: [B, L, H, E]
  const TensorImpl& q = handle_get(in.q.get(), "q");
  const TensorImpl& k = handle_get(in.k.get(), "k");
  const TensorImpl& v = handle_get(in.v.get(), "v");
  const TensorImpl& other = handle_get(in.other.get(), "other");
  const std::string fn = "_flash_attention_forward";
  auto run = [&](const ops::FlashAttentionArgs& a) {
    return [&a, &fn] { ops::flash_attention(a, fn.c_str()); };
  };
  ops::FlashAttentionArgs a{.layout = ops::FlashLayout::kBLHE, .query = q, .key = k, .value = v};
  a.dropout_p = 0.5;
  a.return_debug_mask = true;
  a.cum_seq_q = &other;
  a.seqused_k = &other;
  a.alibi_slopes = &other;
  a.block_table = &other;
  a.window_size_left = 2;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "dropout_p 0.5", fn);
  a.dropout_p = 0.0;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "return_debug_mask is not served", fn);
  a.return_debug_mask = false;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "cum_seq_q/cum_seq_k", fn);
  a.cum_seq_q = nullptr;
  a.cum_seq_k = &other;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "cum_seq_q/cum_seq_k", fn);
  a.cum_seq_k = nullptr;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "seqused_k (per-batch key counts)", fn);
  a.seqused_k = nullptr;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "alibi_slopes (ALiBi", fn);
  a.alibi_slopes = nullptr;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "block_table (a paged key/value cache)", fn);
  a.block_table = nullptr;
  expect_op_refuses(run(a), ErrorKind::kUnsupported,
                    "window_size_left 2, window_size_right None (sliding-window", fn);
  a.window_size_left.reset();
  a.window_size_right = 5;  // 6 keys: a window of 5 to the right limits something
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "window_size_left None, window_size_right 5", fn);
  // Windows that limit nothing are served: the device is next.
  for (auto [left, right] : std::vector<std::pair<int64_t, int64_t>>{{-1, -1}, {6, 100}, {-7, 6}}) {
    a.window_size_left = left;
    a.window_size_right = right;
    expect_op_refuses(run(a), ErrorKind::kUnsupported,
                      "'query' is on cpu; flash attention is served on CUDA only", fn);
  }
  a.window_size_left.reset();
  a.window_size_right.reset();
  a.is_causal = true;
  expect_op_refuses(run(a), ErrorKind::kUnsupported, "served on CUDA only", fn);

  // Shapes: a value head dim other than the query's, key heads not dividing the query's.
  const Backend cpu = built_backends()[0];
  Tensor v16 = make_tensor(cpu, Values{kF32, {1, 6, 2, 16}, {192, 32, 16, 1}, 0, std::vector<double>(192, 1.0)});
  Tensor k3 = make_tensor(cpu, Values{kF32, {1, 6, 3, 8}, {144, 24, 8, 1}, 0, std::vector<double>(144, 1.0)});
  ops::FlashAttentionArgs bad{.layout = ops::FlashLayout::kBLHE, .query = q, .key = k,
                              .value = handle_get(v16.get(), "v16")};
  expect_op_refuses(run(bad), ErrorKind::kInvalidArgument, "shapes do not fit flash attention", fn);
  const TensorImpl& k3_t = handle_get(k3.get(), "k3");
  ops::FlashAttentionArgs bad_heads{.layout = ops::FlashLayout::kBLHE, .query = q, .key = k3_t, .value = k3_t};
  expect_op_refuses(run(bad_heads), ErrorKind::kInvalidArgument, "value [1, 6, 3, 8]", fn);
  Tensor q3 = make_tensor(cpu, Values{kF32, {4, 2, 8}, {16, 8, 1}, 0, std::vector<double>(64, 0.5)});
  ops::FlashAttentionArgs bad_dims{.layout = ops::FlashLayout::kBHLE, .query = handle_get(q3.get(), "q3"),
                                   .key = k, .value = v};
  expect_op_refuses(run(bad_dims), ErrorKind::kInvalidArgument,
                    "must be 4-d [batch, heads, seq, dim], got 3-d", fn);

  // The inplace forms' out: the query's shape, dtype and device, no two elements at one address.
  Tensor wide = make_tensor(cpu, Values{kF32, {1, 4, 2, 16}, {128, 32, 16, 1}, 0, std::vector<double>(128, 0.0)});
  Tensor half = empty(cpu, {1, 4, 2, 8}, kF16);
  Tensor broadcast = reinterpret(in.q.get(), {1, 4, 2, 8}, {64, 0, 8, 1}, 0);
  ops::FlashAttentionArgs inplace{.layout = ops::FlashLayout::kBLHE, .query = q, .key = k, .value = v};
  inplace.out = &handle_get(wide.get(), "wide");
  expect_op_refuses(run(inplace), ErrorKind::kInvalidArgument,
                    "out [1, 4, 2, 16] must have the query's shape [1, 4, 2, 8]", fn);
  inplace.out = &handle_get(half.get(), "half");
  expect_op_refuses(run(inplace), ErrorKind::kInvalidArgument,
                    "out is float16 on cpu; it must be the query's float32 on cpu", fn);
  inplace.out = &handle_get(broadcast.get(), "broadcast");
  expect_op_refuses(run(inplace), ErrorKind::kInvalidArgument, "dim 1 has stride 0", fn);
  inplace.out = &q;  // an out of the query's layout is served: the device is next
  expect_op_refuses(run(inplace), ErrorKind::kUnsupported, "served on CUDA only", fn);
}

#ifdef AOTRT_WITH_CUDA
// The five entry points with CPU tensors: each refusal quotes the value given in that
// argument's place, so a swapped or dropped argument shows; None as a null pointer or a
// null handle is None; a refusal hands nothing out.
TEST(OpsFlashAttentionLayouts, EntryPointsDecodeAndRefuse) {
  const Backend cuda = built_backends()[1];
  const auto sdpa = find_op<SdpaFlash>(cuda, "_scaled_dot_product_flash_attention");
  const auto fwd = find_op<FlashForward>(cuda, "_flash_attention_forward");
  const auto fwd2 = find_op<FlashForwardV2>(cuda, "_flash_attention_forward_v2");
  const auto inpl = find_op<FlashInplace>(cuda, "_flash_attention_forward_no_dropout_inplace");
  const auto inpl2 = find_op<FlashInplaceV2>(cuda, "_flash_attention_forward_no_dropout_inplace_v2");
  ASSERT_TRUE(sdpa && fwd && fwd2 && inpl && inpl2) << "a flash entry point is missing";
  Inputs in = cpu_inputs();
  AtenTensorHandle other = in.other.get(), null_handle = nullptr;
  double scale = 0.5;
  int64_t two = 2, five = 5, none_left = -1, splits = 4;
  AtenTensorHandle r[9] = {};
  int64_t m4 = -1, m5 = -1;

  // The SDPA op takes [B, H, L, E]: the same memory transposed.
  Tensor qt = reinterpret(in.q.get(), {1, 2, 4, 8}, {64, 8, 16, 1}, 0);
  Tensor kt = reinterpret(in.k.get(), {1, 2, 6, 8}, {96, 8, 16, 1}, 0);
  Tensor vt = reinterpret(in.v.get(), {1, 2, 6, 8}, {96, 8, 16, 1}, 0);
  const std::string sfn = "aoti_torch_cuda__scaled_dot_product_flash_attention";
  auto call_sdpa = [&](double dropout, int32_t debug) {
    return sdpa(qt.get(), kt.get(), vt.get(), dropout, 1, debug, &scale, &r[0], &r[1], &r[2],
                &r[3], &m4, &m5, &r[6], &r[7], &r[8]);
  };
  expect_refused(call_sdpa(0.25, 0), sfn, "dropout_p 0.25 is not served");
  expect_refused(call_sdpa(0.0, 1), sfn, "return_debug_mask is not served");
  expect_refused(call_sdpa(0.0, 0), sfn, "'query' is on cpu; flash attention is served on CUDA only");

  const std::string ffn = "aoti_torch_cuda__flash_attention_forward";
  auto call_fwd = [&](AtenTensorHandle* cum_q, AtenTensorHandle* cum_k, int64_t* wl, int64_t* wr,
                      AtenTensorHandle* seqused, AtenTensorHandle* alibi) {
    return fwd(in.q.get(), in.k.get(), in.v.get(), cum_q, cum_k, 4, 6, 0.0, 1, 0, &scale, wl, wr,
               seqused, alibi, &r[0], &r[1], &r[2], &r[3], &r[4]);
  };
  expect_refused(call_fwd(&other, nullptr, nullptr, nullptr, nullptr, nullptr), ffn, "cum_seq_q/cum_seq_k");
  expect_refused(call_fwd(nullptr, &other, nullptr, nullptr, nullptr, nullptr), ffn, "cum_seq_q/cum_seq_k");
  expect_refused(call_fwd(nullptr, nullptr, nullptr, nullptr, &other, nullptr), ffn, "seqused_k");
  expect_refused(call_fwd(nullptr, nullptr, nullptr, nullptr, nullptr, &other), ffn, "alibi_slopes");
  expect_refused(call_fwd(nullptr, nullptr, &two, nullptr, nullptr, nullptr), ffn,
                 "window_size_left 2, window_size_right None");
  expect_refused(call_fwd(nullptr, nullptr, &none_left, &five, nullptr, nullptr), ffn,
                 "window_size_left -1, window_size_right 5");
  expect_refused(call_fwd(&null_handle, &null_handle, &none_left, nullptr, &null_handle, &null_handle),
                 ffn, "'query' is on cpu; flash attention is served on CUDA only");
  EXPECT_EQ(fwd(in.q.get(), in.k.get(), in.v.get(), nullptr, nullptr, 4, 6, 0.3, 0, 0, nullptr,
                nullptr, nullptr, nullptr, nullptr, &r[0], &r[1], &r[2], &r[3], &r[4]),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("dropout_p 0.3"), std::string::npos) << aotrt_last_error();
  EXPECT_EQ(fwd(in.q.get(), in.k.get(), in.v.get(), nullptr, nullptr, 4, 6, 0.0, 0, 1, nullptr,
                nullptr, nullptr, nullptr, nullptr, &r[0], &r[1], &r[2], &r[3], &r[4]),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("return_debug_mask"), std::string::npos) << aotrt_last_error();

  const std::string f2 = "aoti_torch_cuda__flash_attention_forward_v2";
  expect_refused(fwd2(in.q.get(), in.k.get(), in.v.get(), nullptr, nullptr, 4, 6, 0.0, 1, 0,
                      nullptr, nullptr, &five, nullptr, nullptr, nullptr, &splits, &r[0], &r[1],
                      &r[2], &r[3], &r[4]),
                 f2, "window_size_left None, window_size_right 5");
  expect_refused(fwd2(in.q.get(), in.k.get(), in.v.get(), nullptr, nullptr, 4, 6, 0.0, 1, 0,
                      nullptr, nullptr, nullptr, nullptr, nullptr, &other, &splits, &r[0], &r[1],
                      &r[2], &r[3], &r[4]),
                 f2, "block_table (a paged key/value cache)");
  expect_refused(fwd2(in.q.get(), in.k.get(), in.v.get(), nullptr, nullptr, 4, 6, 0.0, 1, 0,
                      nullptr, nullptr, nullptr, nullptr, nullptr, &null_handle, &splits, &r[0],
                      &r[1], &r[2], &r[3], &r[4]),
                 f2, "served on CUDA only");

  const Backend cpu = built_backends()[0];
  Tensor wide = make_tensor(cpu, Values{kF32, {1, 4, 2, 16}, {128, 32, 16, 1}, 0, std::vector<double>(128, 0.0)});
  Tensor fits = empty(cpu, {1, 4, 2, 8}, kF32);
  const std::string i1 = "aoti_torch_cuda__flash_attention_forward_no_dropout_inplace";
  auto call_inpl = [&](AtenTensorHandle out, AtenTensorHandle* alibi, AtenTensorHandle* block) {
    return inpl(out, in.q.get(), in.k.get(), in.v.get(), nullptr, nullptr, 4, 6, 0.0, 0, 0,
                nullptr, nullptr, nullptr, nullptr, alibi, block, &r[0]);
  };
  expect_refused(call_inpl(fits.get(), &other, nullptr), i1, "alibi_slopes");
  expect_refused(call_inpl(fits.get(), nullptr, &other), i1, "block_table");
  expect_refused(call_inpl(wide.get(), nullptr, nullptr), i1,
                 "out [1, 4, 2, 16] must have the query's shape [1, 4, 2, 8]");
  expect_refused(call_inpl(nullptr, nullptr, nullptr), i1, "'out'");
  expect_refused(call_inpl(fits.get(), &null_handle, &null_handle), i1, "served on CUDA only");
  const std::string i2 = "aoti_torch_cuda__flash_attention_forward_no_dropout_inplace_v2";
  expect_refused(inpl2(wide.get(), in.q.get(), in.k.get(), in.v.get(), nullptr, nullptr, 4, 6,
                       0.0, 0, 0, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &splits,
                       &r[0]),
                 i2, "out [1, 4, 2, 16] must have the query's shape");
  expect_refused(inpl2(fits.get(), in.q.get(), in.k.get(), in.v.get(), nullptr, nullptr, 4, 6,
                       0.0, 1, 0, &scale, &none_left, nullptr, nullptr, nullptr, nullptr, &splits,
                       &r[0]),
                 i2, "served on CUDA only");

  for (AtenTensorHandle h : r) EXPECT_EQ(h, nullptr) << "a refusal hands out nothing";
  EXPECT_EQ(m4, -1);
  EXPECT_EQ(m5, -1);
}
#endif

}  // namespace
}  // namespace aotrt::test
