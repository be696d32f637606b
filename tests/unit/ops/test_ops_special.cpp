// The special family (ops/special.h; Notes [Special semantics], [Special function math])
// against torch eager's values, dtypes and strides (reference_special.inc), on every built
// backend: each row runs through the proxy executor's JSON path (the extern node a package's
// wrapper.json holds, the run-time ints and tensors its wrapper passes) and through the
// family's function, as the executor calls it; then the refusals ATen makes.
//
// Tolerances, |aotrt - torch| <= max(atol, rtol |torch|) (NaN where torch has NaN,
// infinities equal): float64 rtol 1e-10, float32 rtol 1e-5 (torch's OpInfo bar), float16 1e-3 and
// bfloat16 8e-3 (one rounding of the dtype), atol 1e-12 / 1e-6 / 1e-5. aotrt computes every
// dtype in double (Note [Special function math]); where ATen's own float64 values are off the
// true value (mpmath, 30 digits) the op's tolerance is ATen's measured error and says so:
//  - igamma/igammac: ATen errs by up to 2e-9 relative for a >= 20 (a = 25, x = 20: ATen
//    0.15677262160714, true 0.15677262182624); rtol 5e-9;
//  - polygamma(1, x < 0): ATen's pi^2 / sin^2(pi x) of an unreduced pi x errs by up to
//    3e-9 relative in float64 (x = -6.0000005), 1.8e-5 in float32 (x = -30.1: ATen 103.32050,
//    true 103.32240); rtol 5e-9 and 3e-5;
//  - airy_ai: ATen errs by up to 2.8e-6 absolute just below x = -2.09 (x = -2.1: ATen
//    0.16348733, true 0.16348451), in float64 and float32 alike; atol 3e-6;
//  - the polynomials at n = 30: both sides round the recurrence (or cos n acos x) in their
//    own order; rtol 1e-9 for float64, atol 1e-9 (float32: 5e-6) relative to the row's
//    largest value, since a value near a root keeps the absolute error of the large terms it
//    cancels, and ATen's float trigonometric forms lose n ulps of the angle (V_30(0.375):
//    ATen 0.0685542, true 0.0685518).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "aotrt/error.h"
#include "core/handles.h"
#include "ops/special.h"
#include "proxy_testing.h"

namespace aotrt::test {
namespace {

#include "reference_special.inc"

using ops::SpecialOp;

struct Target {
  const char* aten;  // the op's name after aten::, without the overload
  SpecialOp op;
  const char* first;  // the schema's argument names
  const char* second;
};
constexpr Target kTargets[] = {
    {"digamma", SpecialOp::kDigamma, "self", nullptr},
    {"polygamma", SpecialOp::kPolygamma, "n", "self"},
    {"special_airy_ai", SpecialOp::kAiryAi, "x", nullptr},
    {"special_i0e", SpecialOp::kI0e, "self", nullptr},
    {"special_i1e", SpecialOp::kI1e, "self", nullptr},
    {"special_ndtri", SpecialOp::kNdtri, "self", nullptr},
    {"special_modified_bessel_k0", SpecialOp::kBesselK0, "self", nullptr},
    {"special_modified_bessel_k1", SpecialOp::kBesselK1, "self", nullptr},
    {"special_scaled_modified_bessel_k0", SpecialOp::kScaledBesselK0, "x", nullptr},
    {"special_scaled_modified_bessel_k1", SpecialOp::kScaledBesselK1, "x", nullptr},
    {"special_spherical_bessel_j0", SpecialOp::kSphericalBesselJ0, "x", nullptr},
    {"igamma", SpecialOp::kIgamma, "self", "other"},
    {"igammac", SpecialOp::kIgammac, "self", "other"},
    {"special_zeta", SpecialOp::kZeta, "self", "other"},
    {"special_chebyshev_polynomial_t", SpecialOp::kChebyshevT, "x", "n"},
    {"special_chebyshev_polynomial_u", SpecialOp::kChebyshevU, "x", "n"},
    {"special_chebyshev_polynomial_v", SpecialOp::kChebyshevV, "x", "n"},
    {"special_chebyshev_polynomial_w", SpecialOp::kChebyshevW, "x", "n"},
    {"special_shifted_chebyshev_polynomial_t", SpecialOp::kShiftedChebyshevT, "x", "n"},
    {"special_shifted_chebyshev_polynomial_u", SpecialOp::kShiftedChebyshevU, "x", "n"},
    {"special_shifted_chebyshev_polynomial_v", SpecialOp::kShiftedChebyshevV, "x", "n"},
    {"special_shifted_chebyshev_polynomial_w", SpecialOp::kShiftedChebyshevW, "x", "n"},
    {"special_hermite_polynomial_h", SpecialOp::kHermiteH, "x", "n"},
    {"special_hermite_polynomial_he", SpecialOp::kHermiteHe, "x", "n"},
    {"special_laguerre_polynomial_l", SpecialOp::kLaguerreL, "x", "n"},
    {"special_legendre_polynomial_p", SpecialOp::kLegendreP, "x", "n"},
};

// A case's op: its target and overload ("", "x_scalar", "n_scalar", "self_scalar",
// "other_scalar").
struct Parsed {
  const Target* target = nullptr;
  std::string overload;
};
Parsed parse(const std::string& op) {
  const size_t dot = op.find('.');
  const std::string name = op.substr(0, dot);
  Parsed p;
  p.overload = dot == std::string::npos ? "" : op.substr(dot + 1);
  for (const Target& t : kTargets) {
    if (name == t.aten) p.target = &t;
  }
  return p;
}
bool scalar_first(const Parsed& p) {
  return p.overload == "x_scalar" || p.overload == "self_scalar";
}
bool scalar_second(const Parsed& p) {
  return p.overload == "n_scalar" || p.overload == "other_scalar";
}
bool is_polynomial(SpecialOp op) { return op >= SpecialOp::kChebyshevT; }

struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance_for(const OpCase& c, const Parsed& p) {
  const int32_t dtype = c.outputs[0].dtype;
  Tolerance t = dtype == kF64 ? Tolerance{1e-10, 1e-12}
                : dtype == kF32 ? Tolerance{1e-5, 1e-6}
                : dtype == kF16 ? Tolerance{1e-3, 1e-5}
                                : Tolerance{8e-3, 1e-5};
  const SpecialOp op = p.target->op;
  if (dtype == kF64 && (op == SpecialOp::kIgamma || op == SpecialOp::kIgammac ||
                        op == SpecialOp::kPolygamma)) {
    t.rtol = 5e-9;
  }
  if (dtype == kF32 && op == SpecialOp::kPolygamma) t.rtol = 3e-5;
  if (op == SpecialOp::kAiryAi) t.atol = std::max(t.atol, 3e-6);
  if (is_polynomial(op)) {
    double scale = 1;
    for (double v : c.outputs[0].values) {
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    }
    if (dtype == kF64) t.rtol = 1e-9;
    t.atol = std::max(t.atol, (dtype == kF64 ? 1e-9 : 5e-6) * scale);
  }
  return t;
}

void expect_close(AtenTensorHandle h, const OpCase& c, const Parsed& p, const std::string& what) {
  ASSERT_NE(h, nullptr) << what << ": no output";
  const Values& want = c.outputs[0];
  const Meta m = meta(h);
  EXPECT_EQ(m.dtype, want.dtype) << what << ": dtype";
  EXPECT_EQ(m.sizes, want.sizes) << what << ": sizes";
  EXPECT_EQ(m.strides, want.strides) << what << ": strides";
  const Tolerance t = tolerance_for(c, p);
  EXPECT_TRUE(close_values(values_of(h), want.values, t.rtol, t.atol)) << what;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string tensor_arg(const char* name, int k) {
  return std::string(R"({"name": ")") + name + R"(", "arg": {"as_tensor": {"name": "in)" +
         std::to_string(k) + "\"}}}";
}

// The node's "inputs" and its run-time ints for case c: a Scalar passes an integral value
// as an int (at run time), any other as a float (in the JSON), as torch serialises them.
std::string inputs_json(const OpCase& c, const Parsed& p, std::vector<int64_t>& ints) {
  const Target& t = *p.target;
  if (t.op == SpecialOp::kPolygamma) {
    ints.push_back(c.ints[0]);
    return std::string(R"([{"name": "n", "arg": {"as_int": )") + std::to_string(c.ints[0]) +
           "}}, " + tensor_arg("self", 0) + "]";
  }
  if (t.second == nullptr) return "[" + tensor_arg(t.first, 0) + "]";
  if (!scalar_first(p) && !scalar_second(p)) {
    return "[" + tensor_arg(t.first, 0) + ", " + tensor_arg(t.second, 1) + "]";
  }
  const double s = c.floats[0];
  std::string scalar;
  if (s == std::floor(s)) {
    ints.push_back(static_cast<int64_t>(s));
    scalar = R"({"as_int": )" + number(s) + "}";
  } else {
    scalar = R"({"as_float": )" + number(s) + "}";
  }
  const char* sname = scalar_first(p) ? t.first : t.second;
  const std::string s_arg = std::string(R"({"name": ")") + sname + R"(", "arg": )" + scalar + "}";
  const std::string t_arg = tensor_arg(scalar_first(p) ? t.second : t.first, 0);
  return scalar_first(p) ? "[" + s_arg + ", " + t_arg + "]" : "[" + t_arg + ", " + s_arg + "]";
}

// The family's function for case c, as the executor's row calls it.
std::unique_ptr<TensorImpl> run_family(const OpCase& c, const Parsed& p,
                                       const std::vector<Tensor>& in) {
  const char* fn = "proxy executor: test";
  const SpecialOp op = p.target->op;
  const TensorImpl& a = *handle_lookup(in[0].get());
  if (op == SpecialOp::kPolygamma) return ops::polygamma(c.ints[0], a, fn);
  if (p.target->second == nullptr) return ops::special_unary(op, a, fn);
  if (scalar_first(p)) return ops::special_binary(op, c.floats[0], a, fn);
  if (scalar_second(p)) return ops::special_binary(op, a, c.floats[0], fn);
  return ops::special_binary(op, a, *handle_lookup(in[1].get()), fn);
}

class OpsSpecial : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsSpecial, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const Parsed p = parse(c.op);
  ASSERT_NE(p.target, nullptr) << "no target for " << c.op;
  std::vector<Tensor> in;
  std::vector<AtenTensorHandle> handles;
  for (const Values& v : c.inputs) {
    in.push_back(make_tensor(b, v));
    handles.push_back(in.back().get());
  }
  std::vector<int64_t> ints;
  const std::string json = inputs_json(c, p, ints);
  const std::string target = "aten::" + std::string(c.op);
  ProxyResult r = run_proxy(target, json, ints, handles, 1, false, proxy_device(b));
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << target << ": " << aotrt_last_error();
  expect_close(r.outputs[0].get(), c, p, std::string(c.name) + " (proxy executor)");

  std::unique_ptr<TensorImpl> direct;
  try {
    direct = run_family(c, p, in);
  } catch (const ::aotrt::Error& e) {
    FAIL() << e.what();
  }
  Tensor out(handle_register(std::move(direct)));
  expect_close(out.get(), c, p, std::string(c.name) + " (family function)");
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsSpecial, ::testing::ValuesIn(all_backends(kSpecialCases)),
                         backend_case_name);

// Every op and overload the family serves answers to its target on both devices.
TEST(OpsSpecialRows, EveryTargetIsServedOnBothDevices) {
  for (const Target& t : kTargets) {
    std::vector<std::string> names = {std::string("aten::") + t.aten};
    if (is_polynomial(t.op)) {
      names.push_back(names[0] + ".x_scalar");
      names.push_back(names[0] + ".n_scalar");
    }
    if (t.op == SpecialOp::kZeta) {
      names.push_back(names[0] + ".self_scalar");
      names.push_back(names[0] + ".other_scalar");
    }
    for (const std::string& name : names) {
      const runtime::ProxyOp* op = runtime::find_proxy_op(name);
      ASSERT_NE(op, nullptr) << name;
      EXPECT_EQ(op->devices, runtime::kProxyCpu | runtime::kProxyCuda) << name;
    }
  }
}

// A CPU 0-d tensor beside a CUDA tensor (as ATen allows) is read on the host and passed to
// the CUDA kernel by value; the result matches the CPU's.
TEST(OpsSpecialDevices, HostZeroDimTensorJoinsACudaTensor) {
  const Backend cpu = built_backends()[0];
  AOTRT_SKIP_WITHOUT_CUDA();
  for (const Backend& b : built_backends()) {
    if (b.is_cpu()) continue;
    const Values x{kF32, {2, 3}, {1, 2}, 1, {1.5, 2, 3, 0.5, 7, -2.5}};
    const Values q{kF64, {}, {}, 0, {2.5}};
    Tensor xd = make_tensor(b, x), xc = make_tensor(cpu, x), qc = make_tensor(cpu, q);
    const char* fn = "special test";
    try {
      for (const bool first : {true, false}) {
        const TensorImpl& host = *handle_lookup(qc.get());
        const TensorImpl& dev = *handle_lookup(xd.get());
        const TensorImpl& ref = *handle_lookup(xc.get());
        auto got = first ? ops::special_binary(SpecialOp::kZeta, host, dev, fn)
                         : ops::special_binary(SpecialOp::kZeta, dev, host, fn);
        auto want = first ? ops::special_binary(SpecialOp::kZeta, host, ref, fn)
                          : ops::special_binary(SpecialOp::kZeta, ref, host, fn);
        EXPECT_TRUE(got->device().is_cuda());
        Tensor g(handle_register(std::move(got))), w(handle_register(std::move(want)));
        EXPECT_EQ(meta(g.get()).dtype, kF32);
        EXPECT_EQ(meta(g.get()).strides, meta(w.get()).strides);
        EXPECT_TRUE(close_values(values_of(g.get()), values_of(w.get()), 1e-6, 1e-7));
      }
    } catch (const ::aotrt::Error& e) {
      FAIL() << e.what();
    }
  }
}

// The family function's error names `fn` and contains `what`.
template <class Call>
void expect_error(Call call, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << "no error; expected: " << what;
  } catch (const ::aotrt::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("special test"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(OpsSpecialRefusals, AsATenRefuses) {
  const Backend b = built_backends()[0];
  const char* fn = "special test";
  Tensor f16 = make_tensor(b, Values{kF16, {2}, {1}, 0, {1, 2}});
  Tensor bf16 = make_tensor(b, Values{kBF16, {2}, {1}, 0, {1, 2}});
  Tensor i64 = make_tensor(b, Values{kI64, {2}, {1}, 0, {1, 2}});
  Tensor f32 = make_tensor(b, Values{kF32, {2}, {1}, 0, {1, 2}});
  Tensor f32x3 = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 2, 3}});
  const TensorImpl& h = *handle_lookup(f16.get());
  const TensorImpl& bh = *handle_lookup(bf16.get());
  const TensorImpl& i = *handle_lookup(i64.get());
  const TensorImpl& f = *handle_lookup(f32.get());
  const TensorImpl& f3 = *handle_lookup(f32x3.get());
  expect_error([&] { ops::special_unary(SpecialOp::kAiryAi, h, fn); },
               "\"airy_ai\" is not implemented for float16");
  expect_error([&] { ops::special_unary(SpecialOp::kNdtri, bh, fn); },
               "\"ndtri\" is not implemented for bfloat16");
  expect_error([&] { ops::special_binary(SpecialOp::kZeta, h, h, fn); },
               "\"zeta\" is not implemented for float16");
  expect_error([&] { ops::special_binary(SpecialOp::kChebyshevT, h, 3.0, fn); },
               "\"chebyshev_polynomial_t\" is not implemented for float16");
  expect_error([&] { ops::special_binary(SpecialOp::kIgamma, i, i, fn); },
               "\"igamma\" is not implemented for int64");
  expect_error([&] { ops::special_binary(SpecialOp::kIgammac, i, i, fn); },
               "\"igammac\" is not implemented for int64");
  expect_error([&] { ops::polygamma(-1, f, fn); }, "does not support negative n");
  expect_error([&] { ops::special_binary(SpecialOp::kZeta, f, f3, fn); },
               "must match the size");
}

// A node naming an argument the schema does not have is refused when the package loads.
TEST(OpsSpecialRefusals, UnknownArgumentAtLoad) {
  const std::string json =
      R"({"nodes": [{"name": "buf0", "node": {"target": "aten::special_zeta", "inputs": [)"
      R"({"name": "self", "arg": {"as_tensor": {"name": "a"}}}, )"
      R"({"name": "q", "arg": {"as_tensor": {"name": "b"}}}], )"
      R"("outputs": [{"as_tensor": {"name": "out"}}]}}]})";
  try {
    runtime::ProxyExecutor ex(runtime::parse_extern_nodes(json, "test"), "cuda", "test");
    ADD_FAILURE() << "the executor took an argument zeta does not have";
  } catch (const ::aotrt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("argument 'q'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace aotrt::test
