// aoti_torch_cpu__scaled_mm and _scaled_mm_out (Note [Scaled matmul]) against torch eager
// (reference_scaledmm.inc): every float8 pairing, tensorwise and rowwise scales, bias of
// each dtype and shape ATen's CPU takes, scale_result where it applies and where ATen ignores
// it, saturation and overflow of float8 outputs, operand and out layouts, K = 0 and M = 0.
// Rows of small integers and power-of-two scales are exact (any gemm order sums them to the
// same float32), so they are compared to the bit; rows of random values allow the float32
// sum's reordering and one rounding of the output dtype. Also the float8 conversions the op
// rests on (Note [Float8 conversions]): every code decoded, and encoding of every value,
// midpoint and edge against eager's bytes; a larger rowwise product against a float64
// reference; the refusals. CUDA's _scaled_mm is tests/unit/cuda/test_cuda_matmul.cpp's.
// _scaled_grouped_mm (Note [Scaled grouped matmul]) against its formula
// (reference_scaledgrouped.inc; torch's CPU has no kernel for it) on every backend: its C
// shim on CUDA (offs on the device), the family op on the CPU (torch declares the entry for
// CUDA only); and ATen's refusals.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/float8.h"
#include "core/handles.h"
#include "ops/matmul.h"
#include "ops_testing.h"
#include "shim/boundary.h"

namespace aotrt::test {
namespace {

#include "reference_scaledmm.inc"
#include "reference_scaledgrouped.inc"

using ScaledMm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                    AtenTensorHandle, AtenTensorHandle*, AtenTensorHandle*,
                                    int32_t*, int32_t, AtenTensorHandle*);
using ScaledMmOut = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                       AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*,
                                       AtenTensorHandle*, int32_t*, int32_t);
using ViewDtype = AOTITorchError (*)(AtenTensorHandle, int32_t, AtenTensorHandle*);

std::vector<BackendCase> cpu_cases(const std::string& prefix) {
  std::vector<BackendCase> out;
  for (const OpCase& c : kScaledmmCases) {
    if (std::string(c.op).rfind(prefix, 0) == 0) out.push_back({built_backends()[0], c});
  }
  return out;
}

// got against torch's values: exact when both tolerances are 0, else |got - want| <=
// atol * max(1, max |want|) + rtol * |want| (NaN and infinities where torch has them).
::testing::AssertionResult matches(const std::vector<double>& got, const std::vector<double>& want,
                                   double atol, double rtol) {
  double largest = 1;
  for (double w : want) {
    if (std::isfinite(w)) largest = std::max(largest, std::abs(w));
  }
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " elements, torch has " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const bool ok = std::isnan(w)   ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(g - w) <= atol * largest + rtol * std::abs(w);
    if (!ok) {
      return ::testing::AssertionFailure() << "element " << i << " is " << g << ", torch has " << w
                                           << " (atol " << atol << " of " << largest << ", rtol "
                                           << rtol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

void expect_result(AtenTensorHandle h, const OpCase& c) {
  ASSERT_NE(h, nullptr) << c.name << ": no output";
  const Values& want = c.outputs[0];
  const Meta m = meta(h);
  EXPECT_EQ(m.dtype, want.dtype) << c.name << ": dtype";
  EXPECT_EQ(m.sizes, want.sizes) << c.name << ": sizes";
  EXPECT_EQ(m.strides, want.strides) << c.name << ": strides";
  EXPECT_TRUE(matches(values_of(h), want.values, c.floats[0], c.floats[1])) << c.name;
}

class OpsScaledMm : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsScaledMm, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  size_t next = 4;
  AtenTensorHandle bias = c.ints[2] ? in[next++].get() : nullptr;
  AtenTensorHandle scale_result = c.ints[3] ? in[next++].get() : nullptr;
  int32_t out_dtype = static_cast<int32_t>(c.ints[0]);
  int32_t* out_dtype_arg = c.ints[0] == kNone ? nullptr : &out_dtype;
  const auto fast = static_cast<int32_t>(c.ints[1]);
  if (c.ints[4] != 0) {
    // The .out form: out has the layout of torch's out, filled with 13 beforehand.
    Values start = c.outputs[0];
    std::fill(start.values.begin(), start.values.end(), 13.0);
    Tensor out = make_tensor(b, start);
    AOTRT_FIND_OP(f, ScaledMmOut, b, "_scaled_mm_out");
    ASSERT_EQ(f(out.get(), in[0].get(), in[1].get(), in[2].get(), in[3].get(), &bias,
                &scale_result, out_dtype_arg, fast),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    expect_result(out.get(), c);
    return;
  }
  AOTRT_FIND_OP(f, ScaledMm, b, "_scaled_mm");
  Tensor out;
  ASSERT_EQ(f(in[0].get(), in[1].get(), in[2].get(), in[3].get(), &bias, &scale_result,
              out_dtype_arg, fast, out.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_result(out.get(), c);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsScaledMm, ::testing::ValuesIn(cpu_cases("_scaled_mm")),
                         backend_case_name);

// Note [Float8 conversions], through aoti_torch_copy_ (which the op's output and every
// float8 constant's host copy go through) and view_dtype.
class OpsFloat8 : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsFloat8, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  AOTRT_FIND_OP(view_dtype, ViewDtype, b, "view_dtype");
  const auto f8 = static_cast<int32_t>(c.ints[0]);
  Tensor in = make_tensor(b, c.inputs[0]);
  if (std::string(c.op) == "float8_decode") {
    Tensor values;
    ASSERT_EQ(view_dtype(in.get(), f8, values.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    EXPECT_EQ(meta(values.get()).dtype, c.outputs[0].dtype);
    EXPECT_TRUE(same_values(values_of(values.get()), c.outputs[0].values, 0)) << c.name;
    return;
  }
  const Dims sizes = c.inputs[0].sizes;
  Tensor encoded = empty(b, sizes, row_major(sizes), f8), bytes;
  ASSERT_EQ(aoti_torch_copy_(encoded.get(), in.get(), 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  ASSERT_EQ(view_dtype(encoded.get(), kU8, bytes.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const std::vector<double> got = values_of(bytes.get());
  const std::vector<double>& want = c.outputs[0].values;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << c.name << ": element " << i << " (" << c.inputs[0].values[i]
                               << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsFloat8, ::testing::ValuesIn(cpu_cases("float8")),
                         backend_case_name);

// [160, 512] e4m3fn x [512, 72] e5m2 (column-major, the weight's transpose), rowwise
// scales, a bfloat16 bias and float32 out, large enough for the parallel widening: against
// float64 sums of the float32 operands ATen makes (each value times its scale, rounded once).
TEST(OpsScaledMmLarge, RowwiseMatchesAFloat64Reference) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, ScaledMm, b, "_scaled_mm");
  const int64_t M = 160, K = 512, N = 72;
  std::mt19937 rng(11);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<float> uniform(0.25f, 2.0f);
  // Values float8 holds exactly, so the float64 copy into float8 keeps them.
  auto e4m3 = [](double v) { return static_cast<double>(float8_to_float(float_to_float8(static_cast<float>(v), kFloat8E4m3fn), kFloat8E4m3fn)); };
  auto e5m2 = [](double v) { return static_cast<double>(float8_to_float(float_to_float8(static_cast<float>(v), kFloat8E5m2), kFloat8E5m2)); };
  std::vector<double> a(static_cast<size_t>(M * K)), w(static_cast<size_t>(N * K)),
      sa(static_cast<size_t>(M)), sb(static_cast<size_t>(N)), bias(static_cast<size_t>(N));
  for (double& v : a) v = e4m3(normal(rng) * 3);
  for (double& v : w) v = e5m2(normal(rng));
  for (double& v : sa) v = uniform(rng);
  for (double& v : sb) v = uniform(rng);
  for (double& v : bias) v = bfloat16_to_float(float_to_bfloat16(static_cast<float>(normal(rng))));
  std::vector<double> want(static_cast<size_t>(M * N));
  double largest = 0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) {
        const float x = static_cast<float>(a[static_cast<size_t>(i * K + k)]) * static_cast<float>(sa[static_cast<size_t>(i)]);
        const float y = static_cast<float>(w[static_cast<size_t>(j * K + k)]) * static_cast<float>(sb[static_cast<size_t>(j)]);
        s += static_cast<double>(x) * y;
      }
      want[static_cast<size_t>(i * N + j)] = s + bias[static_cast<size_t>(j)];
      largest = std::max(largest, std::abs(s));
    }
  }
  Tensor ta = make_tensor(b, Values{kF8E4M3FN, {M, K}, {K, 1}, 0, a});
  std::vector<double> w_kn(w.size());  // Values list elements row-major over [K, N]
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t j = 0; j < N; ++j) w_kn[static_cast<size_t>(k * N + j)] = w[static_cast<size_t>(j * K + k)];
  }
  Tensor tb = make_tensor(b, Values{kF8E5M2, {K, N}, {1, K}, 0, w_kn});
  Tensor tsa = make_tensor(b, Values{kF32, {M, 1}, {1, 1}, 0, sa});
  Tensor tsb = make_tensor(b, Values{kF32, {1, N}, {N, 1}, 0, sb});
  Tensor tbias = make_tensor(b, Values{kBF16, {N}, {1}, 0, bias});
  AtenTensorHandle bias_h = tbias.get();
  int32_t f32 = kF32;
  Tensor out;
  ASSERT_EQ(f(ta.get(), tb.get(), tsa.get(), tsb.get(), &bias_h, nullptr, &f32, 0, out.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(meta(out.get()).strides, (Dims{N, 1}));
  EXPECT_TRUE(close_values(values_of(out.get()), want, 0, 1e-5 * largest));
}

TEST(OpsScaledMmRefusals, NameTheFunctionAndWhatIsWrong) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, ScaledMm, b, "_scaled_mm");
  AOTRT_FIND_OP(f_out, ScaledMmOut, b, "_scaled_mm_out");
  const std::string fn = "aoti_torch_cpu__scaled_mm";
  auto t = [&](int32_t dtype, Dims sizes) {
    return make_tensor(b, Values{dtype, sizes, row_major(sizes), 0,
                                 std::vector<double>(static_cast<size_t>(numel_of(sizes)), 1.0)});
  };
  Tensor a = t(kF8E4M3FN, {4, 16}), w = t(kF8E4M3FN, {16, 8}), one = t(kF32, {});
  Tensor out;
  auto refused = [&](AtenTensorHandle x, AtenTensorHandle y, AtenTensorHandle sa,
                     AtenTensorHandle sb, AtenTensorHandle bias, AtenTensorHandle sr,
                     const char* what) {
    expect_refused(f(x, y, sa, sb, &bias, &sr, nullptr, 0, out.out()), fn, what);
    EXPECT_EQ(out.get(), nullptr);  // nothing handed out on failure
  };
  Tensor af = t(kF32, {4, 16}), wf = t(kF32, {16, 8});
  refused(af.get(), wf.get(), one.get(), one.get(), nullptr, nullptr,
          "Invalid scaling configuration");
  Tensor sa1d = t(kF32, {4}), sb1d = t(kF32, {8});
  refused(a.get(), w.get(), sa1d.get(), sb1d.get(), nullptr, nullptr,
          "scale_a should be (4, 1) and scale_b should be (1, 8)");
  Tensor one_bf16 = t(kBF16, {});
  refused(a.get(), w.get(), one_bf16.get(), one_bf16.get(), nullptr, nullptr,
          "scale_a.dtype()=bfloat16");
  Tensor sa_gap = make_tensor(b, Values{kF32, {4, 1}, {2, 1}, 0, {1, 1, 1, 1}});
  Tensor sb_row = t(kF32, {1, 8});
  refused(a.get(), w.get(), sa_gap.get(), sb_row.get(), nullptr, nullptr,
          "both should be contiguous");
  Tensor a3 = t(kF8E4M3FN, {1, 4, 16});
  refused(a3.get(), w.get(), one.get(), one.get(), nullptr, nullptr, "mat1 must be a matrix");
  Tensor w_short = t(kF8E4M3FN, {12, 8});
  refused(a.get(), w_short.get(), one.get(), one.get(), nullptr, nullptr,
          "shapes cannot be multiplied (4x16 and 12x8)");
  Tensor two = t(kF32, {2});
  refused(a.get(), w.get(), one.get(), one.get(), nullptr, two.get(),
          "scale_result must be a float scalar");
  Tensor bias7 = t(kF32, {7});
  refused(a.get(), w.get(), one.get(), one.get(), bias7.get(), nullptr, "Bias must be size 8 but got 7");
  Tensor bias3d = t(kF32, {1, 1, 8});
  refused(a.get(), w.get(), one.get(), one.get(), bias3d.get(), nullptr, "is not served");
  refused(a.get(), nullptr, one.get(), one.get(), nullptr, nullptr, "argument 'mat2'");

  const std::string fn_out = "aoti_torch_cpu__scaled_mm_out";
  AtenTensorHandle none = nullptr;
  Tensor out_bf16 = t(kBF16, {4, 8});
  int32_t f32 = kF32;
  expect_refused(f_out(out_bf16.get(), a.get(), w.get(), one.get(), one.get(), &none, &none, &f32, 0),
                 fn_out, "out_dtype must match output matrix type");
  Tensor out_small = t(kF32, {4, 7});
  expect_refused(f_out(out_small.get(), a.get(), w.get(), one.get(), one.get(), &none, &none, &f32, 0),
                 fn_out, "aotrt does not resize outputs");
}

// --- _scaled_grouped_mm ---------------------------------------------------------------

using ScaledGroupedMm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                           AtenTensorHandle, AtenTensorHandle*, AtenTensorHandle*,
                                           AtenTensorHandle*, int32_t*, int32_t,
                                           AtenTensorHandle*);
constexpr const char* kCpuScaledGrouped = "cpu _scaled_grouped_mm";

// The CPU stand-in of aoti_torch_cuda__scaled_grouped_mm: the family op behind the same
// boundary.
AOTITorchError cpu_scaled_grouped_mm(AtenTensorHandle a, AtenTensorHandle b, AtenTensorHandle sa,
                                     AtenTensorHandle sb, AtenTensorHandle* offs,
                                     AtenTensorHandle* bias, AtenTensorHandle* scale_result,
                                     int32_t* out_dtype, int32_t fast, AtenTensorHandle* ret0) {
  return shim_boundary(kCpuScaledGrouped, [&] {
    auto optional = [](AtenTensorHandle* h, const char* what) -> const TensorImpl* {
      return h != nullptr && *h != nullptr ? &handle_get(*h, what) : nullptr;
    };
    *ret0 = handle_register(ops::scaled_grouped_mm(
        handle_get(a, "self"), handle_get(b, "mat2"), handle_get(sa, "scale_a"),
        handle_get(sb, "scale_b"), optional(offs, "offs"), optional(bias, "bias"),
        optional(scale_result, "scale_result"),
        out_dtype != nullptr ? std::optional<ScalarType>(static_cast<ScalarType>(*out_dtype))
                             : std::nullopt,
        fast != 0, kCpuScaledGrouped));
  });
}

ScaledGroupedMm scaled_grouped_of(const Backend& b) {
  return b.is_cpu() ? cpu_scaled_grouped_mm : find_op<ScaledGroupedMm>(b, "_scaled_grouped_mm");
}

class OpsScaledGroupedMm : public ::testing::TestWithParam<BackendCase> {};

// ints: whether offs (inputs[4]) is given.
TEST_P(OpsScaledGroupedMm, MatchesTheFormula) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const ScaledGroupedMm f = scaled_grouped_of(b);
  if (f == nullptr) GTEST_SKIP() << b.op_prefix << "_scaled_grouped_mm is missing";
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  AtenTensorHandle offs = c.ints[0] != 0 ? in[4].get() : nullptr;
  int32_t bf16 = kBF16;
  Tensor out;
  const AOTITorchError rc = f(in[0].get(), in[1].get(), in[2].get(), in[3].get(),
                              c.ints[0] != 0 ? &offs : nullptr, nullptr, nullptr, &bf16, 0,
                              out.out());
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Formula, OpsScaledGroupedMm,
                         ::testing::ValuesIn(all_backends(kScaledgroupedCases)),
                         backend_case_name);

// ATen's checks of _scaled_grouped_mm_cuda, with its messages.
TEST(OpsScaledGroupedMmRefusals, NameWhatIsWrong) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    const ScaledGroupedMm f = scaled_grouped_of(b);
    ASSERT_NE(f, nullptr) << b.op_prefix << "_scaled_grouped_mm is missing";
    const std::string fn = b.is_cpu() ? kCpuScaledGrouped : "aoti_torch_cuda__scaled_grouped_mm";
    // 2d x 3d: a [32, 16] row-major, b [2, 16, 32] column-major.
    Tensor a = empty(b, {32, 16}, kF8E4M3FN), w = empty(b, {2, 16, 32}, {512, 1, 16}, kF8E4M3FN);
    Tensor sa = empty(b, {32}, kF32), sb = empty(b, {2, 32}, kF32);
    Tensor offs = make_tensor(b, Values{kI32, {2}, {1}, 0, {8, 32}});
    Tensor out;
    auto call = [&](const Tensor& x, const Tensor& y, const Tensor& s0, const Tensor& s1,
                    const Tensor* o, const Tensor* bias, int32_t dtype) {
      AtenTensorHandle oh = o ? o->get() : nullptr, bh = bias ? bias->get() : nullptr;
      return f(x.get(), y.get(), s0.get(), s1.get(), o ? &oh : nullptr, bias ? &bh : nullptr,
               nullptr, &dtype, 0, out.out());
    };
    auto refused = [&](AOTITorchError rc, const std::string& what) {
      expect_refused(rc, fn, what);
      EXPECT_EQ(out.get(), nullptr);
    };
    Tensor a_t = empty(b, {32, 16}, {1, 32}, kF8E4M3FN);
    refused(call(a_t, w, sa, sb, &offs, nullptr, kBF16), "Expected mat1 to not be transposed");
    Tensor w_rows = empty(b, {2, 16, 32}, kF8E4M3FN);
    refused(call(a, w_rows, sa, sb, &offs, nullptr, kBF16), "Expected mat2 to be transposed");
    // Rows padded to 32 bytes: the strides pass, K = 24 does not.
    Tensor a24 = empty(b, {32, 24}, {32, 1}, kF8E4M3FN),
           w24 = empty(b, {2, 24, 32}, {1024, 1, 32}, kF8E4M3FN);
    refused(call(a24, w24, sa, sb, &offs, nullptr, kBF16),
            "Expected trailing dimension of mat_a to be divisible by 16");
    Tensor w_k = empty(b, {2, 32, 32}, {1024, 1, 32}, kF8E4M3FN);
    refused(call(a, w_k, sa, sb, &offs, nullptr, kBF16),
            "contraction dimension of mat_a and mat_b must match");
    refused(call(a, w, sa, sb, &offs, &sa, kBF16), "Bias not supported yet");
    refused(call(a, w, sa, sb, nullptr, nullptr, kBF16),
            "Have to provide offsets if there is a 2d matrix");
    Tensor offs64 = make_tensor(b, Values{kI64, {2}, {1}, 0, {8, 32}});
    refused(call(a, w, sa, sb, &offs64, nullptr, kBF16), "Offsets have to be int32");
    Tensor sa16 = empty(b, {32}, kF16);
    refused(call(a, w, sa16, sb, &offs, nullptr, kBF16),
            "both scales must both be float32 tensors");
    Tensor sa_short = empty(b, {31}, kF32), sb_n = empty(b, {2, 16}, kF32);
    refused(call(a, w, sa_short, sb, &offs, nullptr, kBF16),
            "scale must have the same length as mat for arg 0");
    refused(call(a, w, sa, sb_n, &offs, nullptr, kBF16),
            "scale must have the same first dimension as mat for arg 1");
    refused(call(a, w, sa, sb, &offs, nullptr, kF32),
            "Only bf16 high precision output types are supported for grouped gemm");
    Tensor a52 = empty(b, {32, 16}, kF8E5M2);
    refused(call(a52, w, sa, sb, &offs, nullptr, kBF16), "Expected inputs of E4M3 FP8 type");
    Tensor offs3 = make_tensor(b, Values{kI32, {3}, {1}, 0, {8, 16, 32}});
    refused(call(a, w, sa, sb, &offs3, nullptr, kBF16), "matrix batch sizes have to match");
    EXPECT_EQ(call(a, w, sa, sb, &offs, nullptr, kBF16), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  }
}

}  // namespace
}  // namespace aotrt::test
