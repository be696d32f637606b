// The pooling family (max/avg/adaptive/fractional pools, max_unpool, grid_sampler_3d, and
// _upsample_bilinear2d_aa through the proxy executor) on every built backend, against torch
// eager's values, dtypes and strides (reference_pooling.inc, from gen_ops_reference.py; Note
// [Pooling semantics]).
#include <sstream>
#include <string>
#include <vector>

#include "ops_testing.h"
#include "proxy_testing.h"
#include "runtime/proxy_executor.h"

namespace aotrt::test {
namespace {

#include "reference_pooling.inc"

// The case's ints as the generator wrote them: a list is its length then its elements.
class Ints {
 public:
  explicit Ints(const std::vector<int64_t>& v) : v_(v) {}
  std::vector<int64_t> list() {
    const int64_t n = v_.at(at_++);
    std::vector<int64_t> r(v_.begin() + static_cast<std::ptrdiff_t>(at_),
                           v_.begin() + static_cast<std::ptrdiff_t>(at_ + n));
    at_ += static_cast<size_t>(n);
    return r;
  }
  int64_t one() { return v_.at(at_++); }

 private:
  const std::vector<int64_t>& v_;
  size_t at_ = 0;
};

using L = const int64_t*;
using H = AtenTensorHandle;
using HP = AtenTensorHandle*;
using MaxPool = AOTITorchError (*)(H, L, int64_t, L, int64_t, L, int64_t, L, int64_t, int32_t,
                                   HP, HP);
using AvgPool = AOTITorchError (*)(H, L, int64_t, L, int64_t, L, int64_t, int32_t, int32_t,
                                   int64_t*, HP);
using AdaptiveAvg = AOTITorchError (*)(H, L, int64_t, HP);
using AdaptiveMax = AOTITorchError (*)(H, L, int64_t, HP, HP);
using Fractional = AOTITorchError (*)(H, L, int64_t, L, int64_t, H, HP, HP);
using Unpool2d = AOTITorchError (*)(H, H, L, int64_t, HP);
using Unpool3d = AOTITorchError (*)(H, H, L, int64_t, L, int64_t, L, int64_t, HP);
using GridSampler = AOTITorchError (*)(H, H, int64_t, int64_t, int32_t, HP);

int64_t len(const std::vector<int64_t>& v) { return static_cast<int64_t>(v.size()); }

class OpsPooling : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsPooling, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  std::vector<Tensor> outs(c.outputs.size());
  Ints ints(c.ints);
  AOTITorchError rc;
  if (op.starts_with("max_pool")) {
    AOTRT_FIND_OP(f, MaxPool, b, op);
    auto k = ints.list(), s = ints.list(), p = ints.list(), d = ints.list();
    const auto ceil = static_cast<int32_t>(ints.one());
    rc = f(in[0].get(), k.data(), len(k), s.data(), len(s), p.data(), len(p), d.data(), len(d),
           ceil, outs[0].out(), outs[1].out());
  } else if (op.starts_with("avg_pool")) {
    AOTRT_FIND_OP(f, AvgPool, b, op);
    auto k = ints.list(), s = ints.list(), p = ints.list();
    const auto ceil = static_cast<int32_t>(ints.one());
    const auto cip = static_cast<int32_t>(ints.one());
    int64_t div = ints.one();
    rc = f(in[0].get(), k.data(), len(k), s.data(), len(s), p.data(), len(p), ceil, cip,
           div == kNone ? nullptr : &div, outs[0].out());
  } else if (op.starts_with("_adaptive_avg")) {
    AOTRT_FIND_OP(f, AdaptiveAvg, b, op);
    auto size = ints.list();
    rc = f(in[0].get(), size.data(), len(size), outs[0].out());
  } else if (op.starts_with("adaptive_max")) {
    AOTRT_FIND_OP(f, AdaptiveMax, b, op);
    auto size = ints.list();
    rc = f(in[0].get(), size.data(), len(size), outs[0].out(), outs[1].out());
  } else if (op.starts_with("fractional")) {
    AOTRT_FIND_OP(f, Fractional, b, op);
    auto k = ints.list(), size = ints.list();
    rc = f(in[0].get(), k.data(), len(k), size.data(), len(size), in[1].get(), outs[0].out(),
           outs[1].out());
  } else if (op == "max_unpool2d") {
    AOTRT_FIND_OP(f, Unpool2d, b, op);
    auto size = ints.list();
    rc = f(in[0].get(), in[1].get(), size.data(), len(size), outs[0].out());
  } else if (op == "max_unpool3d") {
    AOTRT_FIND_OP(f, Unpool3d, b, op);
    auto size = ints.list(), s = ints.list(), p = ints.list();
    rc = f(in[0].get(), in[1].get(), size.data(), len(size), s.data(), len(s), p.data(), len(p),
           outs[0].out());
  } else {
    AOTRT_FIND_OP(f, GridSampler, b, op);
    rc = f(in[0].get(), in[1].get(), c.ints[0], c.ints[1], static_cast<int32_t>(c.ints[2]),
           outs[0].out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  for (size_t i = 0; i < outs.size(); ++i) {
    expect_matches(outs[i].get(), c.outputs[i], c.name + std::string(" output ") + std::to_string(i));
  }
}

// _upsample_bilinear2d_aa has no C shim: its rows run through the proxy executor below.
std::vector<OpCase> pooling_cases(bool aa) {
  return cases_where(
      kPoolingCases, [](const OpCase& c) { return std::string(c.op) == "_upsample_bilinear2d_aa"; },
      aa);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsPooling, ::testing::ValuesIn(all_backends(pooling_cases(false))),
                         backend_case_name);

std::string optional_float_json(double v) {
  if (std::isnan(v)) return R"("as_none": true)";
  std::ostringstream s;
  s.precision(17);
  s << R"("as_float": )" << v;
  return s.str();
}

class OpsPoolingUpsampleAa : public ::testing::TestWithParam<BackendCase> {};

// The node as torch 2.13 writes it for interpolate(..., "bilinear", antialias=True)
// (tests/e2e/test_ops_pooling.py runs such packages).
TEST_P(OpsPoolingUpsampleAa, MatchesTorchThroughTheProxyExecutor) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  Tensor x = make_tensor(b, c.inputs[0]);
  const std::string inputs =
      R"([{"name": "self", "arg": {"as_tensor": {"name": "arg0_1"}}},
          {"name": "output_size", "arg": {"as_ints": [)" + std::to_string(c.ints[0]) + ", " +
      std::to_string(c.ints[1]) + R"(]}},
          {"name": "align_corners", "arg": {"as_bool": )" + (c.ints[2] ? "true" : "false") +
      R"(}}, {"name": "scales_h", "arg": {)" + optional_float_json(c.floats[0]) +
      R"(}}, {"name": "scales_w", "arg": {)" + optional_float_json(c.floats[1]) + "}}]";
  ProxyResult r = run_proxy("aten::_upsample_bilinear2d_aa", inputs, {c.ints[0], c.ints[1]},
                            {x.get()}, 1, false, proxy_device(b));
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(r.outputs[0].get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsPoolingUpsampleAa,
                         ::testing::ValuesIn(all_backends(pooling_cases(true))), backend_case_name);

TEST(OpsPoolingUpsampleAaRefusals, NameTheOpAndTheArgument) {
  const Backend b = built_backends()[0];
  auto refused = [&](const Values& v, const std::string& size, const std::string& what) {
    Tensor x = make_tensor(b, v);
    const std::string inputs = R"([{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
        {"name": "output_size", "arg": {"as_ints": )" + size + R"(}},
        {"name": "align_corners", "arg": {"as_bool": false}}])";
    std::vector<int64_t> ints;
    for (char ch : size) {
      if (ch >= '0' && ch <= '9') ints.push_back(ch - '0');
    }
    ProxyResult r = run_proxy("aten::_upsample_bilinear2d_aa", inputs, ints, {x.get()}, 1);
    EXPECT_EQ(r.rc, AOTI_TORCH_FAILURE) << what;
    const std::string msg = aotrt_last_error();
    EXPECT_NE(msg.find("aten::_upsample_bilinear2d_aa"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  const Values four{kF32, {1, 1, 2, 2}, {4, 4, 2, 1}, 0, {1, 2, 3, 4}};
  refused(Values{kF32, {1, 2, 2}, {4, 2, 1}, 0, {1, 2, 3, 4}}, "[1, 1]",
          "it is expected input_size equals to 4, but got size 3");
  refused(four, "[1]", "it is expected output_size equals to 2, but got size 1");
  refused(four, "[0, 1]", "output (H: 0, W: 1)");
  refused(Values{kF16, {1, 1, 2, 2}, {4, 4, 2, 1}, 0, {1, 2, 3, 4}}, "[1, 1]",
          "argument 'self' is float16; aotrt serves float32 and float64 here");
}

// Enough planes for the parallel path: a [8, 64, 12, 12] max pool and an adaptive
// average of small integers, against a serial reference computed here.
TEST(OpsPoolingLarge, ParallelPlanesMatchASerialReference) {
  for (const Backend& b : built_backends()) {
    AOTRT_FIND_OP(maxp, MaxPool, b, "max_pool2d_with_indices");
    AOTRT_FIND_OP(aavg, AdaptiveAvg, b, "_adaptive_avg_pool2d");
    const int64_t P = 8 * 64, S = 12;
    Values v{kF64, {8, 64, S, S}, {64 * S * S, S * S, S, 1}, 0, {}};
    for (int64_t i = 0; i < P * S * S; ++i) v.values.push_back(static_cast<double>((i * 7 + 3) % 23));
    Tensor x = make_tensor(b, v);
    const int64_t k[] = {3, 3}, s[] = {3, 3}, p[] = {0, 0}, d[] = {1, 1}, o[] = {4, 4};
    Tensor mv, mi, av;
    AOTITorchError rc = maxp(x.get(), k, 2, s, 2, p, 2, d, 2, 0, mv.out(), mi.out());
    AOTRT_SKIP_IF_NO_KERNEL(b, rc);
    ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
    ASSERT_EQ(aavg(x.get(), o, 2, av.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    std::vector<double> want_max, want_idx, want_avg;
    for (int64_t pl = 0; pl < P; ++pl)
      for (int64_t oh = 0; oh < 4; ++oh)
        for (int64_t ow = 0; ow < 4; ++ow) {
          double best = -kInf, sum = 0;
          int64_t at = 0;
          for (int64_t h = oh * 3; h < oh * 3 + 3; ++h)
            for (int64_t w = ow * 3; w < ow * 3 + 3; ++w) {
              const double x = v.values[static_cast<size_t>(pl * S * S + h * S + w)];
              sum += x;
              if (x > best) {
                best = x;
                at = h * S + w;
              }
            }
          want_max.push_back(best);
          want_idx.push_back(static_cast<double>(at));
          want_avg.push_back(sum / 9);
        }
    const Dims sizes{8, 64, 4, 4}, strides{64 * 16, 16, 4, 1};
    expect_matches(mv.get(), Values{kF64, sizes, strides, 0, want_max}, "max values");
    expect_matches(mi.get(), Values{kI64, sizes, strides, 0, want_idx}, "max indices");
    expect_matches(av.get(), Values{kF64, sizes, strides, 0, want_avg}, "adaptive avg");
  }
}

// torch 2.11 has no grid_sampler_3d C shim: its packages call aten::grid_sampler_3d
// through the proxy executor, with this JSON (the ints take run-time slots). The
// result is the C shim's, which the rows above hold to eager.
void grid_sampler_3d_through_the_proxy_executor(const Backend& b) {
  const char* json = R"({"nodes": [{"name": "buf0", "node": {"target": "aten::grid_sampler_3d",
    "inputs": [{"name": "input", "arg": {"as_tensor": {"name": "arg0_1"}}, "kind": 1},
               {"name": "grid", "arg": {"as_tensor": {"name": "arg1_1"}}, "kind": 1},
               {"name": "interpolation_mode", "arg": {"as_int": 0}, "kind": 1},
               {"name": "padding_mode", "arg": {"as_int": 0}, "kind": 1},
               {"name": "align_corners", "arg": {"as_bool": false}, "kind": 1}],
    "outputs": [{"as_tensor": {"name": "buf1"}}]}}]})";
  runtime::ProxyExecutor ex(runtime::parse_extern_nodes(json, "t"), proxy_device(b), "test");
  const OpCase* c = nullptr;
  for (const OpCase& k : kPoolingCases) {
    if (std::string(k.name) == "grid3d_bilinear_reflection_align1") c = &k;
  }
  ASSERT_NE(c, nullptr);
  Tensor x = make_tensor(b, c->inputs[0]), g = make_tensor(b, c->inputs[1]);
  Tensor out;
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(out.out()), AOTI_TORCH_SUCCESS);
  int64_t ints[] = {0, 2};  // bilinear, reflection: the run-time values win over the JSON's
  AtenTensorHandle tensors[] = {x.get(), g.get(), out.get()};
  ASSERT_EQ(aoti_torch_proxy_executor_call_function(ex.handle(), 0, 2, ints, 3, tensors),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  // align_corners is static in the JSON (false); the reference row has true, so
  // compare with the shim called the same way.
  AOTRT_FIND_OP(f, GridSampler, b, "grid_sampler_3d");
  Tensor want;
  ASSERT_EQ(f(x.get(), g.get(), 0, 2, 0, want.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(want.get());
  expect_matches(out.get(), Values{kF32, m.sizes, m.strides, 0, values_of(want.get())},
                 "proxy grid_sampler_3d");
  // And the JSON's align_corners false matters: the align1 row differs from it.
  EXPECT_FALSE(same_values(values_of(out.get()), c->outputs[0].values, 1e-6));
}

TEST(OpsPoolingProxy, GridSampler3dThroughTheProxyExecutorIsTheShims) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    grid_sampler_3d_through_the_proxy_executor(b);
  }
}

// Note [cuDNN grid sampler]: aten::cudnn_grid_sampler through the proxy executor is 2-d
// grid_sample (bilinear, zeros, align_corners) computed here in double: points inside,
// on the corners and outside the input (zero padding), a non-contiguous input.
void cudnn_grid_sampler_through_the_proxy_executor(const Backend& b) {
  const char* json = R"({"nodes": [{"name": "buf0", "node": {"target": "aten::cudnn_grid_sampler",
    "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "arg0_1"}}, "kind": 1},
               {"name": "grid", "arg": {"as_tensor": {"name": "arg1_1"}}, "kind": 1}],
    "outputs": [{"as_tensor": {"name": "buf1"}}]}}]})";
  runtime::ProxyExecutor ex(runtime::parse_extern_nodes(json, "t"), proxy_device(b), "test");
  const int64_t N = 2, C = 3, H = 4, W = 5, Ho = 3, Wo = 4;
  // The input's values in [N, C, H, W] order, stored channels-last.
  std::vector<double> in(N * C * H * W);
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::sin(0.37 * static_cast<double>(i)) * 3.0;
  std::vector<double> g(N * Ho * Wo * 2);
  for (size_t i = 0; i < g.size(); ++i) g[i] = -1.3 + 2.6 * std::fmod(0.61803 * i, 1.0);
  g[0] = -1.0, g[1] = -1.0, g[2] = 1.0, g[3] = 1.0;  // the corners: exactly pixels
  Tensor x = make_tensor(b, Values{kF32, {N, C, H, W}, {H * W * C, 1, W * C, C}, 0, in});
  Tensor grid = make_tensor(b, Values{kF32, {N, Ho, Wo, 2}, row_major({N, Ho, Wo, 2}), 0, g});
  Tensor out;
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(out.out()), AOTI_TORCH_SUCCESS);
  AtenTensorHandle tensors[] = {x.get(), grid.get(), out.get()};
  ASSERT_EQ(aoti_torch_proxy_executor_call_function(ex.handle(), 0, 0, nullptr, 3, tensors),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  auto at = [&](int64_t n, int64_t c, int64_t y, int64_t xx) -> double {
    if (y < 0 || y >= H || xx < 0 || xx >= W) return 0.0;
    return static_cast<float>(in[((n * C + c) * H + y) * W + xx]);
  };
  std::vector<double> want;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t i = 0; i < Ho; ++i) {
        for (int64_t j = 0; j < Wo; ++j) {
          const double gx = static_cast<float>(g[((n * Ho + i) * Wo + j) * 2]);
          const double gy = static_cast<float>(g[((n * Ho + i) * Wo + j) * 2 + 1]);
          const double ix = (gx + 1) / 2 * (W - 1), iy = (gy + 1) / 2 * (H - 1);
          const auto x0 = static_cast<int64_t>(std::floor(ix)), y0 = static_cast<int64_t>(std::floor(iy));
          const double fx = ix - x0, fy = iy - y0;
          want.push_back(at(n, c, y0, x0) * (1 - fx) * (1 - fy) + at(n, c, y0, x0 + 1) * fx * (1 - fy) +
                         at(n, c, y0 + 1, x0) * (1 - fx) * fy + at(n, c, y0 + 1, x0 + 1) * fx * fy);
        }
      }
    }
  }
  const std::vector<double> got = values_of(out.get());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
  EXPECT_EQ(meta(out.get()).sizes, (Dims{N, C, Ho, Wo}));
  EXPECT_DOUBLE_EQ(got[0], at(0, 0, 0, 0));            // grid (-1, -1): the first pixel
  EXPECT_DOUBLE_EQ(got[1], at(0, 0, H - 1, W - 1));    // grid (1, 1): the last
}

TEST(OpsPoolingProxy, CudnnGridSamplerIsBilinearAlignCornersZeros) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    cudnn_grid_sampler_through_the_proxy_executor(b);
  }
}

::testing::AssertionResult refused_with(AOTITorchError rc, const std::string& text) {
  if (rc == AOTI_TORCH_SUCCESS) return ::testing::AssertionFailure() << "not refused";
  const std::string msg = aotrt_last_error();
  if (msg.find(text) == std::string::npos) {
    return ::testing::AssertionFailure() << "message '" << msg << "' lacks '" << text << "'";
  }
  return ::testing::AssertionSuccess();
}

TEST(OpsPoolingRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  if (!b.is_cpu()) GTEST_SKIP() << "the CPU's messages";
  AOTRT_FIND_OP(maxp, MaxPool, b, "max_pool2d_with_indices");
  AOTRT_FIND_OP(avgp, AvgPool, b, "avg_pool2d");
  AOTRT_FIND_OP(aavg, AdaptiveAvg, b, "_adaptive_avg_pool2d");
  AOTRT_FIND_OP(frac, Fractional, b, "fractional_max_pool2d");
  AOTRT_FIND_OP(unpool, Unpool2d, b, "max_unpool2d");
  AOTRT_FIND_OP(grid, GridSampler, b, "grid_sampler_3d");
  Tensor x = make_tensor(b, Values{kF32, {1, 1, 3, 3}, {9, 9, 3, 1}, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9}});
  Tensor v, i;
  const int64_t k2[] = {2, 2}, k3[] = {2, 2, 2}, big[] = {5, 5}, one[] = {1, 1}, zero[] = {0, 0},
                pad2[] = {2, 2}, neg[] = {-1, 1};
  const std::string mp = "aoti_torch_cpu_max_pool2d_with_indices: ";
  EXPECT_TRUE(refused_with(maxp(x.get(), k3, 3, k2, 2, zero, 2, one, 2, 0, v.out(), i.out()),
                           mp + "argument 'kernel_size' must be a single int or 2 ints"));
  EXPECT_TRUE(refused_with(maxp(x.get(), k2, 2, zero, 2, zero, 2, one, 2, 0, v.out(), i.out()),
                           mp + "argument 'stride' must be greater than zero"));
  EXPECT_TRUE(refused_with(maxp(x.get(), k2, 2, k2, 2, pad2, 2, one, 2, 0, v.out(), i.out()),
                           mp + "argument 'padding': pad should be at most half"));
  EXPECT_TRUE(refused_with(maxp(x.get(), big, 2, one, 2, zero, 2, one, 2, 0, v.out(), i.out()),
                           "Output size is too small"));
  EXPECT_TRUE(refused_with(maxp(x.get(), k2, 2, k2, 2, zero, 2, zero, 2, 0, v.out(), i.out()),
                           mp + "argument 'dilation' must be greater than zero"));
  EXPECT_TRUE(refused_with(maxp(nullptr, k2, 2, k2, 2, zero, 2, one, 2, 0, v.out(), i.out()),
                           mp + "argument 'self'"));
  Tensor flat = make_tensor(b, Values{kF32, {9}, {1}, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9}});
  EXPECT_TRUE(refused_with(maxp(flat.get(), k2, 2, k2, 2, zero, 2, one, 2, 0, v.out(), i.out()),
                           mp + "argument 'self': expected 3D or 4D"));
  int64_t div0 = 0;
  EXPECT_TRUE(refused_with(avgp(x.get(), k2, 2, k2, 2, zero, 2, 0, 1, &div0, v.out()),
                           "aoti_torch_cpu_avg_pool2d: argument 'divisor_override'"));
  EXPECT_TRUE(refused_with(aavg(x.get(), neg, 2, v.out()),
                           "aoti_torch_cpu__adaptive_avg_pool2d: argument 'output_size'"));
  EXPECT_TRUE(refused_with(aavg(x.get(), k3, 3, v.out()),
                           "aoti_torch_cpu__adaptive_avg_pool2d: argument 'output_size' must have 2"));
  Tensor samples = make_tensor(b, Values{kF32, {1, 1, 2}, {2, 2, 1}, 0, {0.5, 0.5}});
  Tensor samples64 = make_tensor(b, Values{kF64, {1, 1, 2}, {2, 2, 1}, 0, {0.5, 0.5}});
  EXPECT_TRUE(refused_with(frac(x.get(), k2, 2, pad2, 2, samples64.get(), v.out(), i.out()),
                           "aoti_torch_cpu_fractional_max_pool2d: argument 'random_samples'"));
  EXPECT_TRUE(refused_with(frac(x.get(), k2, 2, big, 2, samples.get(), v.out(), i.out()),
                           "aoti_torch_cpu_fractional_max_pool2d: argument 'output_size'"));
  Tensor bad_idx = make_tensor(b, Values{kI64, {1, 1, 1, 1}, {1, 1, 1, 1}, 0, {9}});
  Tensor one_val = make_tensor(b, Values{kF32, {1, 1, 1, 1}, {1, 1, 1, 1}, 0, {4}});
  const int64_t out3[] = {3, 3};
  EXPECT_TRUE(refused_with(unpool(one_val.get(), bad_idx.get(), out3, 2, v.out()),
                           "aoti_torch_cpu_max_unpool2d: argument 'indices': Found an invalid max index: 9"));
  EXPECT_TRUE(refused_with(unpool(one_val.get(), x.get(), out3, 2, v.out()),
                           "aoti_torch_cpu_max_unpool2d: argument 'indices' must be int64"));
  Tensor x5 = make_tensor(b, Values{kF32, {1, 1, 1, 1, 2}, {2, 2, 2, 2, 1}, 0, {1, 2}});
  Tensor g5 = make_tensor(b, Values{kF32, {1, 1, 1, 1, 3}, {3, 3, 3, 3, 1}, 0, {0, 0, 0}});
  EXPECT_TRUE(refused_with(grid(x5.get(), g5.get(), 2, 0, 0, v.out()),
                           "aoti_torch_cpu_grid_sampler_3d: argument 'interpolation_mode' 2 (bicubic)"));
  EXPECT_TRUE(refused_with(grid(x5.get(), g5.get(), 0, 3, 0, v.out()),
                           "aoti_torch_cpu_grid_sampler_3d: argument 'padding_mode' 3"));
  EXPECT_TRUE(refused_with(grid(x5.get(), x.get(), 0, 0, 0, v.out()),
                           "aoti_torch_cpu_grid_sampler_3d: expected 5D"));
  Tensor xi = make_tensor(b, Values{kI32, {1, 1, 3, 3}, {9, 9, 3, 1}, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9}});
  EXPECT_TRUE(refused_with(aavg(xi.get(), one, 2, v.out()),
                           "aoti_torch_cpu__adaptive_avg_pool2d: argument 'self' is int32"));
  EXPECT_EQ(v.get(), nullptr);  // nothing handed out on failure
  EXPECT_EQ(i.get(), nullptr);
}

// On CUDA an index outside the plane is skipped, not refused (a refusal would need the
// host to wait for the kernel): its place stays zero (Note [Max unpool on CUDA]).
TEST(OpsPoolingCuda, OutOfRangeUnpoolIndicesAreSkipped) {
  AOTRT_SKIP_WITHOUT_CUDA();
  for (const Backend& b : built_backends()) {
    if (b.is_cpu()) continue;
    AOTRT_FIND_OP(unpool, Unpool2d, b, "max_unpool2d");
    Tensor v = make_tensor(b, Values{kF32, {1, 1, 1, 4}, {4, 4, 4, 1}, 0, {1, 2, 3, 4}});
    Tensor i = make_tensor(b, Values{kI64, {1, 1, 1, 4}, {4, 4, 4, 1}, 0, {3, -1, 9, 0}});
    const int64_t size[] = {2, 2};
    Tensor out;
    ASSERT_EQ(unpool(v.get(), i.get(), size, 2, out.out()), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    expect_matches(out.get(), Values{kF32, {1, 1, 2, 2}, {4, 4, 2, 1}, 0, {4, 0, 0, 1}}, "output");
  }
}

}  // namespace
}  // namespace aotrt::test
