// aten::_efficient_attention_forward (Note [Efficient attention forward] in
// ops/attention.cpp), CUDA only. On CUDA, through the C ABI against eager CPU
// attention in float64 (reference_attention.inc): values, dtypes, sizes and
// strides of the output and logsumexp, the philox seed and offset, and the
// max_seqlen ints. On every build, without a GPU: what the op refuses and in
// which order, through ops::efficient_attention_forward and (in CUDA builds)
// through the aoti_torch_cuda_ entry point with CPU tensors, which shows the
// entry point hands each argument to its place.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/handles.h"
#include "ops/attention.h"
#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_attention.inc"

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

// The op's own refusal, as an Error of `kind` whose message says `what`.
template <typename Call>
void expect_op_refuses(Call call, ErrorKind kind, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << "not refused: " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("_efficient_attention_forward"), std::string::npos)
        << e.what();
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

}  // namespace
}  // namespace aotrt::test
