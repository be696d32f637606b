// Entry points of the special family (ops/special.h): every op comes through
// the proxy executor (c_shim has none of them), on both devices. The
// tensors are borrowed; each output is a new tensor (Note [Proxy executor]).
#include "ops/special.h"
#include "runtime/proxy_executor.h"

using namespace aotrt;
using ops::SpecialOp;
using runtime::ProxyCall;

namespace {
constexpr unsigned kBoth = runtime::kProxyCpu | runtime::kProxyCuda;
// The schemas' argument names.
constexpr char kSelf[] = "self";
constexpr char kOther[] = "other";
constexpr char kX[] = "x";
constexpr char kN[] = "n";

template <SpecialOp op, const char* arg>
void unary(ProxyCall& c) {
  c.set_output(0, ops::special_unary(op, c.tensor(arg), c.what()));
}
// op(Tensor a, Tensor b)
template <SpecialOp op, const char* a, const char* b>
void binary(ProxyCall& c) {
  c.set_output(0, ops::special_binary(op, c.tensor(a), c.tensor(b), c.what()));
}
// op(Scalar a, Tensor b): the .self_scalar / .x_scalar overloads
template <SpecialOp op, const char* a, const char* b>
void scalar_first(ProxyCall& c) {
  c.set_output(0, ops::special_binary(op, c.scalar_arg(a), c.tensor(b), c.what()));
}
// op(Tensor a, Scalar b): the .other_scalar / .n_scalar overloads
template <SpecialOp op, const char* a, const char* b>
void scalar_second(ProxyCall& c) {
  c.set_output(0, ops::special_binary(op, c.tensor(a), c.scalar_arg(b), c.what()));
}
}  // namespace

// polygamma(int n, Tensor self)
AOTRT_PROXY_OP("aten::polygamma", {"n", "self"}, kBoth, [](ProxyCall& c) {
  c.set_output(0, ops::polygamma(c.int_arg("n"), c.tensor("self"), c.what()));
});

// op(Tensor self) / op(Tensor x)
AOTRT_PROXY_OP("aten::digamma", {"self"}, kBoth, unary<SpecialOp::kDigamma, kSelf>);
AOTRT_PROXY_OP("aten::special_airy_ai", {"x"}, kBoth, unary<SpecialOp::kAiryAi, kX>);
AOTRT_PROXY_OP("aten::special_i0e", {"self"}, kBoth, unary<SpecialOp::kI0e, kSelf>);
AOTRT_PROXY_OP("aten::special_i1e", {"self"}, kBoth, unary<SpecialOp::kI1e, kSelf>);
AOTRT_PROXY_OP("aten::special_ndtri", {"self"}, kBoth, unary<SpecialOp::kNdtri, kSelf>);
AOTRT_PROXY_OP("aten::special_modified_bessel_k0", {"self"}, kBoth,
               unary<SpecialOp::kBesselK0, kSelf>);
AOTRT_PROXY_OP("aten::special_modified_bessel_k1", {"self"}, kBoth,
               unary<SpecialOp::kBesselK1, kSelf>);
AOTRT_PROXY_OP("aten::special_scaled_modified_bessel_k0", {"x"}, kBoth,
               unary<SpecialOp::kScaledBesselK0, kX>);
AOTRT_PROXY_OP("aten::special_scaled_modified_bessel_k1", {"x"}, kBoth,
               unary<SpecialOp::kScaledBesselK1, kX>);
AOTRT_PROXY_OP("aten::special_spherical_bessel_j0", {"x"}, kBoth,
               unary<SpecialOp::kSphericalBesselJ0, kX>);

// igamma(Tensor self, Tensor other), igammac: P(a = self, x = other), Q
AOTRT_PROXY_OP("aten::igamma", {"self", "other"}, kBoth, binary<SpecialOp::kIgamma, kSelf, kOther>);
AOTRT_PROXY_OP("aten::igammac", {"self", "other"}, kBoth,
               binary<SpecialOp::kIgammac, kSelf, kOther>);

// special_zeta(x = self, q = other) and its Scalar overloads
AOTRT_PROXY_OP("aten::special_zeta", {"self", "other"}, kBoth,
               binary<SpecialOp::kZeta, kSelf, kOther>);
AOTRT_PROXY_OP("aten::special_zeta.self_scalar", {"self", "other"}, kBoth,
               scalar_first<SpecialOp::kZeta, kSelf, kOther>);
AOTRT_PROXY_OP("aten::special_zeta.other_scalar", {"self", "other"}, kBoth,
               scalar_second<SpecialOp::kZeta, kSelf, kOther>);

// The polynomials (Tensor x, Tensor n) and their .x_scalar / .n_scalar overloads
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_t", {"x", "n"}, kBoth,
               binary<SpecialOp::kChebyshevT, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_t.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kChebyshevT, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_t.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kChebyshevT, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_u", {"x", "n"}, kBoth,
               binary<SpecialOp::kChebyshevU, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_u.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kChebyshevU, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_u.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kChebyshevU, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_v", {"x", "n"}, kBoth,
               binary<SpecialOp::kChebyshevV, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_v.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kChebyshevV, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_v.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kChebyshevV, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_w", {"x", "n"}, kBoth,
               binary<SpecialOp::kChebyshevW, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_w.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kChebyshevW, kX, kN>);
AOTRT_PROXY_OP("aten::special_chebyshev_polynomial_w.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kChebyshevW, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_t", {"x", "n"}, kBoth,
               binary<SpecialOp::kShiftedChebyshevT, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_t.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kShiftedChebyshevT, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_t.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kShiftedChebyshevT, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_u", {"x", "n"}, kBoth,
               binary<SpecialOp::kShiftedChebyshevU, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_u.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kShiftedChebyshevU, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_u.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kShiftedChebyshevU, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_v", {"x", "n"}, kBoth,
               binary<SpecialOp::kShiftedChebyshevV, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_v.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kShiftedChebyshevV, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_v.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kShiftedChebyshevV, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_w", {"x", "n"}, kBoth,
               binary<SpecialOp::kShiftedChebyshevW, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_w.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kShiftedChebyshevW, kX, kN>);
AOTRT_PROXY_OP("aten::special_shifted_chebyshev_polynomial_w.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kShiftedChebyshevW, kX, kN>);
AOTRT_PROXY_OP("aten::special_hermite_polynomial_h", {"x", "n"}, kBoth,
               binary<SpecialOp::kHermiteH, kX, kN>);
AOTRT_PROXY_OP("aten::special_hermite_polynomial_h.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kHermiteH, kX, kN>);
AOTRT_PROXY_OP("aten::special_hermite_polynomial_h.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kHermiteH, kX, kN>);
AOTRT_PROXY_OP("aten::special_hermite_polynomial_he", {"x", "n"}, kBoth,
               binary<SpecialOp::kHermiteHe, kX, kN>);
AOTRT_PROXY_OP("aten::special_hermite_polynomial_he.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kHermiteHe, kX, kN>);
AOTRT_PROXY_OP("aten::special_hermite_polynomial_he.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kHermiteHe, kX, kN>);
AOTRT_PROXY_OP("aten::special_laguerre_polynomial_l", {"x", "n"}, kBoth,
               binary<SpecialOp::kLaguerreL, kX, kN>);
AOTRT_PROXY_OP("aten::special_laguerre_polynomial_l.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kLaguerreL, kX, kN>);
AOTRT_PROXY_OP("aten::special_laguerre_polynomial_l.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kLaguerreL, kX, kN>);
AOTRT_PROXY_OP("aten::special_legendre_polynomial_p", {"x", "n"}, kBoth,
               binary<SpecialOp::kLegendreP, kX, kN>);
AOTRT_PROXY_OP("aten::special_legendre_polynomial_p.x_scalar", {"x", "n"}, kBoth,
               scalar_first<SpecialOp::kLegendreP, kX, kN>);
AOTRT_PROXY_OP("aten::special_legendre_polynomial_p.n_scalar", {"x", "n"}, kBoth,
               scalar_second<SpecialOp::kLegendreP, kX, kN>);
