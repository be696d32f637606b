// The int8 oneDNN ops (Note [Quantized oneDNN ops]) through the C ABI on values worked out by
// hand: dequantized operands, per-output-channel weight scales, bias, activation, and the
// output quantized with round-half-to-even and clamping; the in-place "sum"; and the
// refusals. Then oneDNN's int8 primitives (Note [Int8 primitives] in cpu/quantized.cpp)
// against the float32 path on generated problems, the calls they leave to that path, and
// their steady state. Real X86InductorQuantizer packages against torch:
// tests/e2e/test_cpu_int8.py.
//
// Tolerance, int8 primitives against the float32 path: the int32 sum is exact and the float32
// one rounds, so float32 results agree to 1e-5 of the largest |result| (plus 1e-6), bfloat16
// ones to one bfloat16 rounding (2^-8 relative, plus that); a uint8/int8 result may land one
// step away where y / output_scale is that close to a half (at most 1% of the elements).
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/handles.h"
#include "core/storage.h"
#include "cpu/ops.h"
#include "ops_testing.h"

namespace aotrt::test {
namespace {

using QLinear = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                   AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                   AtenTensorHandle*, double, int64_t, const int32_t*,
                                   const char*, const double**, int64_t, const char*,
                                   AtenTensorHandle*);
using QLinearBinary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                         AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                         AtenTensorHandle*, AtenTensorHandle*, double, int64_t,
                                         const int32_t*, double, int64_t, const char*, double,
                                         const char*, const double**, int64_t, const char*,
                                         AtenTensorHandle*);

struct Operands {
  Tensor x, x_scale, x_zp, w, w_scale, w_zp, bias;
};

// x_f = ([10, 20] - 10) * 0.5 = [0, 5]; w [K=2, N=2] = [[1, 2], [3, -4]] scaled per column
// by [0.1, 0.2]; x_f @ w_f = [1.5, -4]; + bias [-0.25, 0.5] = [1.25, -3.5].
Operands operands(const Backend& b) {
  Operands o;
  o.x = make_tensor(b, Values{kU8, {1, 2}, {2, 1}, 0, {10, 20}});
  o.x_scale = make_tensor(b, Values{kF32, {}, {}, 0, {0.5}});
  o.x_zp = make_tensor(b, Values{kI32, {}, {}, 0, {10}});
  o.w = make_tensor(b, Values{kI8, {2, 2}, {2, 1}, 0, {1, 2, 3, -4}});
  o.w_scale = make_tensor(b, Values{kF32, {2}, {1}, 0, {0.1, 0.2}});
  o.w_zp = make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 0}});
  o.bias = make_tensor(b, Values{kF32, {2}, {1}, 0, {-0.25, 0.5}});
  return o;
}

TEST(OpsQuantized, LinearDequantizesScalesAndQuantizesHalfToEven) {
  const Backend b = built_backends()[0];  // CPU ops (torch's c/shim_cpu.h)
  AOTRT_FIND_OP(qlinear, QLinear, b, "_qlinear_pointwise_tensor");
  Operands o = operands(b);
  AtenTensorHandle bias = o.bias.get();
  const double* no_args[] = {nullptr};
  // Float output: relu([1.25, -3.5]).
  const int32_t f32 = kF32, u8 = kU8;
  Tensor y;
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &bias, 1.0, 0, &f32, "relu", no_args, 1, "", y.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_TRUE(close_values(values_of(y.get()), {1.25, 0.0}, 1e-6, 1e-7));
  // uint8 output, scale 0.5, zero point 3: 1.25 / 0.5 = 2.5 rounds to 2 (half to even), + 3;
  // 0 gives the zero point. Without relu, -3.5 / 0.5 + 3 = -4 clamps to 0.
  Tensor q, q_none;
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &bias, 0.5, 3, &u8, "relu", no_args, 1, "", q.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(meta(q.get()).dtype, kU8);
  EXPECT_EQ(values_of(q.get()), (std::vector<double>{5, 3}));
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &bias, 0.5, 3, nullptr, "none", no_args, 1, "", q_none.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(values_of(q_none.get()), (std::vector<double>{5, 0}));  // None: x's dtype, uint8
}

TEST(OpsQuantized, LinearSumWritesIntoOther) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(qlinear, QLinearBinary, b, "_qlinear_pointwise_binary_tensor");
  Operands o = operands(b);
  AtenTensorHandle bias = o.bias.get();
  Tensor other = make_tensor(b, Values{kF32, {1, 2}, {2, 1}, 0, {1.0, 10.0}});
  AtenTensorHandle other_h = other.get();
  const double* no_args[] = {nullptr};
  const int32_t f32 = kF32;
  Tensor y;
  // relu([1.25, -3.5] + [1, 10]) = [2.25, 6.5], written into other.
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &other_h, &bias, 1.0, 0, &f32, 1.0, 0, "sum", 1.0, "relu",
                    no_args, 1, "", y.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_TRUE(close_values(values_of(other.get()), {2.25, 6.5}, 1e-6, 1e-7));
  void *a = nullptr, *c = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(y.get(), &a), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_data_ptr(other.get(), &c), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(a, c) << "the sum's result is other itself";
}

TEST(OpsQuantized, RefusalsNameTheArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(qlinear, QLinear, b, "_qlinear_pointwise_tensor");
  Operands o = operands(b);
  const double* no_args[] = {nullptr};
  const std::string fn = std::string(b.op_prefix) + "_qlinear_pointwise_tensor";
  Tensor xf = make_tensor(b, Values{kF32, {1, 2}, {2, 1}, 0, {1, 2}});
  Tensor three = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 1, 1}});
  const int32_t f32 = kF32;
  Tensor y;
  expect_refused(qlinear(xf.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                         o.w_zp.get(), nullptr, 1.0, 0, &f32, "none", no_args, 1, "", y.out()),
                 fn, "x is float32");
  expect_refused(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), three.get(),
                         o.w_zp.get(), nullptr, 1.0, 0, &f32, "none", no_args, 1, "", y.out()),
                 fn, "one entry per output channel (2)");
  expect_refused(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                         o.w_zp.get(), nullptr, 0.5, 0, &f32, "none", no_args, 1, "", y.out()),
                 fn, "needs output_scale 1");
  expect_refused(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                         o.w_zp.get(), nullptr, 1.0, 0, &f32, "mish", no_args, 1, "", y.out()),
                 fn, "attr 'mish'");
  EXPECT_EQ(y.get(), nullptr);
}

// --- oneDNN's int8 primitives against the float32 path --------------------------------------

using QConv = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                 AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                 AtenTensorHandle*, const int64_t*, int64_t, const int64_t*,
                                 int64_t, const int64_t*, int64_t, int64_t, double, int64_t,
                                 const int32_t*, const char*, const double**, int64_t,
                                 const char**, AtenTensorHandle*);
using QConvBinary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                       AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                       AtenTensorHandle, AtenTensorHandle*, const int64_t*,
                                       int64_t, const int64_t*, int64_t, const int64_t*, int64_t,
                                       int64_t, double, int64_t, const int32_t*, double, int64_t,
                                       const char*, double*, const char**, const double**,
                                       int64_t, const char**, AtenTensorHandle*);

// A small deterministic generator (the problems must not change between runs).
struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
  int64_t in(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % (hi - lo + 1)); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * (next() / 4294967296.0); }
};

Dims channels_last(const Dims& sizes) {
  Dims st(sizes.size());
  int64_t step = 1;
  st[1] = step;
  step *= sizes[1];
  for (size_t d = sizes.size(); d-- > 2;) {
    st[d] = step;
    step *= sizes[d];
  }
  st[0] = step;
  return st;
}

// The activation: attr, its scalars, its algorithm.
struct Unary {
  const char* attr;
  std::vector<double> scalars;
  const char* algorithm;
};
const Unary kUnaries[] = {{"none", {}, ""},         {"relu", {}, ""},
                          {"hardswish", {}, ""},    {"gelu", {}, "none"},
                          {"gelu", {}, "tanh"},     {"swish", {}, ""},
                          {"hardtanh", {0, 6}, ""}, {"leaky_relu", {0.1}, ""},
                          {"sigmoid", {}, ""},      {"tanh", {}, ""},
                          {"hardsigmoid", {}, ""}};

// One generated problem's inputs (the binary's other made anew per run: a sum writes it).
struct QProblem {
  bool conv = true;
  Values x, w, bias, other;
  bool has_bias = false;
  float x_scale = 0.02f;
  int64_t x_zp = 0;
  std::vector<double> w_scales;
  std::vector<int64_t> stride{1}, padding{0}, dilation{1};
  int64_t groups = 1;
  int32_t out_dtype = kF32;
  double out_scale = 1;
  int64_t out_zp = 0;
  std::string binary = "none";  // "sum" or "add" with `other`
  double other_scale = 1, alpha = 1;
  int64_t other_zp = 0;
  Unary unary{"none", {}, ""};
  std::string what;
};

std::vector<double> random_values(Lcg& g, int64_t n, int32_t dtype) {
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) {
    e = dtype == kU8 ? g.in(0, 255) : dtype == kI8 ? g.in(-128, 127) : g.uniform(-2, 2);
  }
  return v;
}

QProblem generate(uint64_t seed, bool conv) {
  Lcg g{seed * 7919 + 17};
  QProblem p;
  p.conv = conv;
  const int32_t xt = g.in(0, 3) == 0 ? kI8 : kU8;
  p.x_zp = xt == kU8 ? g.in(0, 255) : (g.in(0, 1) ? 0 : g.in(-20, 20));
  p.x_scale = static_cast<float>(g.uniform(0.002, 0.05));
  Dims out_sizes;
  int64_t channels = 0;
  if (conv) {
    const int64_t n = g.in(1, 2), k = g.in(0, 1) ? 3 : 1;
    // Sizes the kernel fits in (span 5 at most).
    p.groups = g.in(0, 3) == 0 ? 2 : 1;
    const int64_t c = 8 * g.in(1, 3) * p.groups / (p.groups > 1 ? 2 : 1),
                  o = 8 * g.in(1, 4) * p.groups / (p.groups > 1 ? 2 : 1), h = g.in(5, 9),
                  w = g.in(5, 9);
    p.stride = {g.in(1, 2)};
    p.padding = {k == 3 ? g.in(0, 1) : 0};
    p.dilation = {k == 3 && g.in(0, 3) == 0 ? 2 : 1};
    const Dims xs{n, c, h, w};
    // Mostly channels-last, as inductor lays x out; sometimes plain (copied first).
    p.x = Values{xt, xs, g.in(0, 3) ? channels_last(xs) : row_major(xs), 0,
                 random_values(g, n * c * h * w, xt)};
    const Dims ws{o, c / p.groups, k, k};
    p.w = Values{kI8, ws, row_major(ws), 0, random_values(g, numel_of(ws), kI8)};
    const int64_t span = p.dilation[0] * (k - 1) + 1;
    out_sizes = {n, o, (h + 2 * p.padding[0] - span) / p.stride[0] + 1,
                 (w + 2 * p.padding[0] - span) / p.stride[0] + 1};
    channels = o;
  } else {
    const int64_t m = g.in(1, 20), k = 8 * g.in(1, 12), n = 8 * g.in(1, 10);
    const Dims xs = g.in(0, 1) ? Dims{m, k} : Dims{2, m, k};
    p.x = Values{xt, xs, row_major(xs), 0, random_values(g, numel_of(xs), xt)};
    p.w = Values{kI8, {k, n}, {n, 1}, 0, random_values(g, k * n, kI8)};
    out_sizes = xs;
    out_sizes.back() = n;
    channels = n;
  }
  for (int64_t c = 0; c < channels; ++c) p.w_scales.push_back(g.uniform(0.002, 0.02));
  p.has_bias = g.in(0, 2) != 0;
  p.bias = Values{kF32, {channels}, {1}, 0, random_values(g, channels, kF32)};
  const int64_t kind = g.in(0, 3);
  p.out_dtype = kind == 0 ? kF32 : kind == 1 ? kBF16 : kind == 2 ? kU8 : kI8;
  if (p.out_dtype == kU8 || p.out_dtype == kI8) {
    p.out_scale = g.uniform(0.01, 0.1);
    p.out_zp = p.out_dtype == kU8 ? g.in(0, 128) : g.in(-10, 10);
  }
  p.unary = kUnaries[g.in(0, static_cast<int64_t>(std::size(kUnaries)) - 1)];
  const Dims out_layout = conv ? channels_last(out_sizes) : row_major(out_sizes);
  const int64_t b = g.in(0, 2);
  if (b == 1) {  // a sum into other of the output dtype
    p.binary = "sum";
    const bool q = p.out_dtype == kU8 || p.out_dtype == kI8;
    p.other = Values{p.out_dtype, out_sizes, g.in(0, 3) ? out_layout : row_major(out_sizes), 0,
                     random_values(g, numel_of(out_sizes), p.out_dtype)};
    if (q) {
      p.other_scale = g.uniform(0.01, 0.1);
      p.other_zp = p.out_dtype == kU8 ? g.in(0, 128) : g.in(-10, 10);
    }
    p.alpha = g.in(0, 1) ? 1.0 : 0.5;
  } else if (b == 2) {  // an add of a float other
    p.binary = "add";
    p.other = Values{kF32, out_sizes, out_layout, 0, random_values(g, numel_of(out_sizes), kF32)};
  }
  p.what = std::string(conv ? "conv" : "linear") + " seed " + std::to_string(seed) + " x " +
           (xt == kU8 ? "u8" : "s8") + " zp " + std::to_string(p.x_zp) + " out dtype " +
           std::to_string(p.out_dtype) + " " + p.binary + " " + p.unary.attr + " " +
           p.unary.algorithm + (p.has_bias ? " bias" : "") + " x sizes " +
           ::testing::PrintToString(p.x.sizes) + " w sizes " + ::testing::PrintToString(p.w.sizes) +
           " stride " + std::to_string(p.stride[0]) + " padding " + std::to_string(p.padding[0]) +
           " dilation " + std::to_string(p.dilation[0]) + " groups " + std::to_string(p.groups);
  return p;
}

// Runs the problem once through the shims; the op's result and, for a sum, other.
struct QResult {
  std::vector<double> out;
  Dims out_strides;
  bool ok = false;
};

QResult run_problem(const QProblem& p, const std::function<void(AtenTensorHandle)>& before = {}) {
  const Backend b = built_backends()[0];
  Tensor x = make_tensor(b, p.x), w = make_tensor(b, p.w), bias = make_tensor(b, p.bias);
  if (before) before(w.get());
  Tensor xs = make_tensor(b, Values{kF32, {}, {}, 0, {p.x_scale}});
  Tensor xz = make_tensor(b, Values{kI64, {}, {}, 0, {static_cast<double>(p.x_zp)}});
  const int64_t c = static_cast<int64_t>(p.w_scales.size());
  Tensor ws = make_tensor(b, Values{kF32, {c}, {1}, 0, p.w_scales});
  Tensor wz = make_tensor(b, Values{kI64, {c}, {1}, 0, std::vector<double>(c, 0.0)});
  Tensor other;
  if (p.binary != "none") other = make_tensor(b, p.other);
  AtenTensorHandle bh = bias.get(), oh = other.get();
  AtenTensorHandle* bp = p.has_bias ? &bh : nullptr;
  std::vector<const double*> scalars;
  for (const double& v : p.unary.scalars) scalars.push_back(&v);
  if (scalars.empty()) scalars.push_back(nullptr);
  const int64_t nscalars = static_cast<int64_t>(scalars.size());
  const char* algorithm = p.unary.algorithm;
  auto missing = [](const char* name) {
    ADD_FAILURE() << name << " is missing";
    return QResult{};
  };
  Tensor y;
  AOTITorchError rc;
  if (p.conv && p.binary == "none") {
    const auto qconv = find_op<QConv>(b, "_qconv_pointwise_tensor");
    if (qconv == nullptr) return missing("_qconv_pointwise_tensor");
    rc = qconv(x.get(), xs.get(), xz.get(), w.get(), ws.get(), wz.get(), bp, p.stride.data(), 1,
               p.padding.data(), 1, p.dilation.data(), 1, p.groups, p.out_scale, p.out_zp,
               &p.out_dtype, p.unary.attr, scalars.data(), nscalars, &algorithm, y.out());
  } else if (p.conv) {
    const auto qconv = find_op<QConvBinary>(b, "_qconv2d_pointwise_binary_tensor");
    if (qconv == nullptr) return missing("_qconv2d_pointwise_binary_tensor");
    double alpha = p.alpha;
    const char* unary = p.unary.attr;
    rc = qconv(x.get(), xs.get(), xz.get(), w.get(), ws.get(), wz.get(), other.get(), bp,
               p.stride.data(), 1, p.padding.data(), 1, p.dilation.data(), 1, p.groups,
               p.out_scale, p.out_zp, &p.out_dtype, p.other_scale, p.other_zp,
               p.binary.c_str(), &alpha, &unary, scalars.data(), nscalars, &algorithm, y.out());
  } else if (p.binary == "none") {
    const auto qlinear = find_op<QLinear>(b, "_qlinear_pointwise_tensor");
    if (qlinear == nullptr) return missing("_qlinear_pointwise_tensor");
    rc = qlinear(x.get(), xs.get(), xz.get(), w.get(), ws.get(), wz.get(), bp, p.out_scale,
                 p.out_zp, &p.out_dtype, p.unary.attr, scalars.data(), nscalars, algorithm,
                 y.out());
  } else {
    const auto qlinear = find_op<QLinearBinary>(b, "_qlinear_pointwise_binary_tensor");
    if (qlinear == nullptr) return missing("_qlinear_pointwise_binary_tensor");
    rc = qlinear(x.get(), xs.get(), xz.get(), w.get(), ws.get(), wz.get(), &oh, bp, p.out_scale,
                 p.out_zp, &p.out_dtype, p.other_scale, p.other_zp, p.binary.c_str(), p.alpha,
                 p.unary.attr, scalars.data(), nscalars, algorithm, y.out());
  }
  QResult r;
  EXPECT_EQ(rc, AOTI_TORCH_SUCCESS) << p.what << ": " << aotrt_last_error();
  if (rc != AOTI_TORCH_SUCCESS) return r;
  r.out = values_of(y.get());
  r.out_strides = meta(y.get()).strides;
  if (p.binary == "sum") {
    void *a = nullptr, *o = nullptr;
    EXPECT_EQ(aoti_torch_get_data_ptr(y.get(), &a), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(aoti_torch_get_data_ptr(other.get(), &o), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(a, o) << p.what << ": the sum's result is other itself";
  }
  r.ok = true;
  return r;
}

// The int8 primitives' result against the float32 path's (see the tolerance above).
void expect_agree(const QProblem& p, const QResult& int8, const QResult& f32, int64_t& steps) {
  ASSERT_TRUE(int8.ok && f32.ok) << p.what;
  ASSERT_EQ(int8.out.size(), f32.out.size()) << p.what;
  EXPECT_EQ(int8.out_strides, f32.out_strides) << p.what;
  double largest = 0;
  for (double v : f32.out) largest = std::max(largest, std::abs(v));
  const bool quantized = p.out_dtype == kU8 || p.out_dtype == kI8;
  const double tol = p.out_dtype == kBF16 ? std::ldexp(1.0, -8) : 1e-5;
  int64_t off = 0;
  for (size_t i = 0; i < f32.out.size(); ++i) {
    const double d = std::abs(int8.out[i] - f32.out[i]);
    if (quantized) {
      EXPECT_LE(d, 1) << p.what << " element " << i;
      off += d != 0;
    } else {
      ASSERT_LE(d, tol * std::max(largest, std::abs(f32.out[i])) + 1e-6)
          << p.what << " element " << i << ": " << int8.out[i] << " vs " << f32.out[i];
    }
  }
  EXPECT_LE(off, static_cast<int64_t>(f32.out.size()) / 100 + 1) << p.what;
  steps += off;
}

// Every generated problem agrees with the float32 path, and the int8 primitives serve all
// but hardsigmoid into a quantized output and the few grouped convolutions oneDNN has only
// its reference kernel for (Note [Int8 primitives]).
TEST(OpsQuantized, Int8PrimitivesAgreeWithTheFloat32Path) {
  int64_t served = 0, steps = 0, elements = 0;
  for (bool conv : {true, false}) {
    for (uint64_t seed = 0; seed < 120; ++seed) {
      const QProblem p = generate(seed, conv);
      const auto before = cpu::quantized_cache_stats();
      const QResult int8 = run_problem(p);
      const auto after = cpu::quantized_cache_stats();
      // Without VNNI the int8 primitives serve nothing (Note [oneDNN's ISA]).
      const bool expect_int8 = cpu::onednn_int8_exact() &&
                               !((p.out_dtype == kU8 || p.out_dtype == kI8) &&
                                 std::string(p.unary.attr) == "hardsigmoid");
      // One path or the other; oneDNN 2.6 also has only its reference kernel for some
      // grouped convolutions of few channels per group (then the float32 path).
      EXPECT_EQ(after.fused_calls - before.fused_calls + after.float32_calls -
                    before.float32_calls,
                1)
          << p.what;
      if (!expect_int8) EXPECT_EQ(after.fused_calls, before.fused_calls) << p.what;
      served += after.fused_calls - before.fused_calls;
      cpu::set_quantized_int8(false);
      const QResult f32 = run_problem(p);
      cpu::set_quantized_int8(true);
      expect_agree(p, int8, f32, steps);
      if (p.out_dtype == kU8 || p.out_dtype == kI8) {
        elements += static_cast<int64_t>(f32.out.size());
      }
    }
  }
  if (cpu::onednn_int8_exact()) {
    EXPECT_GT(served, 200);
  } else {
    EXPECT_EQ(served, 0);
  }
  std::printf("int8 primitives served %lld of 240 problems; %lld of %lld quantized results one "
              "step from the float32 path's\n",
              static_cast<long long>(served), static_cast<long long>(steps),
              static_cast<long long>(elements));
}

// A weight zero point other than 0 leaves the call to the float32 path, which serves it.
TEST(OpsQuantized, Int8PrimitivesLeaveWeightZeroPointsToTheFloat32Path) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(qlinear, QLinear, b, "_qlinear_pointwise_tensor");
  Operands o = operands(b);
  o.w_zp = make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 1}});
  const double* no_args[] = {nullptr};
  const int32_t f32 = kF32;
  AtenTensorHandle bias = o.bias.get();
  const auto before = cpu::quantized_cache_stats();
  Tensor y;
  ASSERT_EQ(qlinear(o.x.get(), o.x_scale.get(), o.x_zp.get(), o.w.get(), o.w_scale.get(),
                    o.w_zp.get(), &bias, 1.0, 0, &f32, "none", no_args, 1, "", y.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  const auto after = cpu::quantized_cache_stats();
  EXPECT_EQ(after.fused_calls, before.fused_calls);
  EXPECT_EQ(after.float32_calls, before.float32_calls + 1);
  // x_f = [0, 5]; w column 1 is (w - 1) * 0.2 = [0.2, -1]: [1.5, -5] + bias.
  EXPECT_TRUE(close_values(values_of(y.get()), {1.25, -4.5}, 1e-6, 1e-6));
}

// Note [Int8 primitives]: a constant weight is reordered once; later calls make no
// primitive and reorder nothing.
TEST(OpsQuantized, Int8PrimitivesReorderAConstantWeightOnce) {
  if (!cpu::onednn_int8_exact()) {
    GTEST_SKIP() << "this CPU has no VNNI: the int8 primitives serve nothing (Note [oneDNN's ISA])";
  }
  for (bool conv : {true, false}) {
    const QProblem p = generate(3, conv);
    auto constant = [](AtenTensorHandle w) {
      handle_get(w, "test").storage().get()->mark_constant();
    };
    // The weight is a new storage per run: each run reorders it once.
    const auto s0 = cpu::quantized_cache_stats();
    const QResult first = run_problem(p, constant);
    const auto s1 = cpu::quantized_cache_stats();
    EXPECT_EQ(s1.fused_calls - s0.fused_calls, 1) << p.what;
    EXPECT_EQ(s1.weights_cached - s0.weights_cached, 1) << p.what;
    const QResult second = run_problem(p, constant);
    const auto s2 = cpu::quantized_cache_stats();
    EXPECT_EQ(s2.misses, s1.misses) << p.what << ": a second primitive";
    EXPECT_EQ(s2.fused_calls - s1.fused_calls, 1) << p.what;
    EXPECT_EQ(first.out, second.out) << p.what;
  }
}

}  // namespace
}  // namespace aotrt::test
