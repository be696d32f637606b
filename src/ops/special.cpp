#include "ops/special.h"

#include <vector>

#include "core/error.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/indexing.h"   // scalar_tensor
#include "ops/pointwise.h"  // result_type, binary_operands, convert_element_type

namespace aotrt::ops {
namespace {

// ATen's name of the op, for messages.
const char* aten_name(SpecialOp op) {
  switch (op) {
    case SpecialOp::kDigamma: return "digamma";
    case SpecialOp::kPolygamma: return "polygamma";
    case SpecialOp::kAiryAi: return "airy_ai";
    case SpecialOp::kI0e: return "i0e";
    case SpecialOp::kI1e: return "i1e";
    case SpecialOp::kNdtri: return "ndtri";
    case SpecialOp::kBesselK0: return "modified_bessel_k0";
    case SpecialOp::kBesselK1: return "modified_bessel_k1";
    case SpecialOp::kScaledBesselK0: return "scaled_modified_bessel_k0";
    case SpecialOp::kScaledBesselK1: return "scaled_modified_bessel_k1";
    case SpecialOp::kSphericalBesselJ0: return "spherical_bessel_j0";
    case SpecialOp::kIgamma: return "igamma";
    case SpecialOp::kIgammac: return "igammac";
    case SpecialOp::kZeta: return "zeta";
    case SpecialOp::kChebyshevT: return "chebyshev_polynomial_t";
    case SpecialOp::kChebyshevU: return "chebyshev_polynomial_u";
    case SpecialOp::kChebyshevV: return "chebyshev_polynomial_v";
    case SpecialOp::kChebyshevW: return "chebyshev_polynomial_w";
    case SpecialOp::kShiftedChebyshevT: return "shifted_chebyshev_polynomial_t";
    case SpecialOp::kShiftedChebyshevU: return "shifted_chebyshev_polynomial_u";
    case SpecialOp::kShiftedChebyshevV: return "shifted_chebyshev_polynomial_v";
    case SpecialOp::kShiftedChebyshevW: return "shifted_chebyshev_polynomial_w";
    case SpecialOp::kHermiteH: return "hermite_polynomial_h";
    case SpecialOp::kHermiteHe: return "hermite_polynomial_he";
    case SpecialOp::kLaguerreL: return "laguerre_polynomial_l";
    case SpecialOp::kLegendreP: return "legendre_polynomial_p";
  }
  return "special";
}

bool is_unary(SpecialOp op) { return op <= SpecialOp::kSphericalBesselJ0; }

// The ops ATen serves in float16 and bfloat16 (Note [Special semantics]).
bool serves_half(SpecialOp op) {
  return op == SpecialOp::kDigamma || op == SpecialOp::kPolygamma || op == SpecialOp::kI0e ||
         op == SpecialOp::kI1e || op == SpecialOp::kIgamma || op == SpecialOp::kIgammac;
}

// The dtype op computes and returns for operands of common dtype t.
ScalarType compute_dtype(SpecialOp op, ScalarType t, const char* fn) {
  AOTRT_CHECK(!is_complex(t), kUnsupported, fn, ": \"", aten_name(op),
              "\" is not implemented for ", dtype_name(t), " (as in ATen)");
  if (!is_floating(t)) {
    const bool integral_refused = op == SpecialOp::kIgamma || op == SpecialOp::kIgammac;
    AOTRT_CHECK(!integral_refused, kInvalidArgument, fn, ": \"", aten_name(op),
                "\" is not implemented for ", dtype_name(t), " (as in ATen)");
    return ScalarType::Float32;
  }
  const bool half = t == ScalarType::Float16 || t == ScalarType::BFloat16;
  AOTRT_CHECK(t == ScalarType::Float32 || t == ScalarType::Float64 || (half && serves_half(op)),
              kInvalidArgument, fn, ": \"", aten_name(op), "\" is not implemented for ",
              dtype_name(t), " (as in ATen)");
  return t;
}

std::unique_ptr<TensorImpl> unary(SpecialOp op, int64_t n, const TensorImpl& self,
                                  const char* fn) {
  const ScalarType t = compute_dtype(op, self.dtype(), fn);
  std::unique_ptr<TensorImpl> converted;
  if (self.dtype() != t) converted = convert_element_type(self, t, fn);
  const TensorImpl& x = converted ? *converted : self;
  const std::vector<int64_t> st(self.strides().begin(), self.strides().end());
  auto out = empty_strided(self.sizes(), iterator_output_strides(self.sizes(), {st}), t,
                           self.device(), fn);
  if (out->numel() > 0) {
    kernel(&SpecialKernels::unary, self.device(), fn)(op, n, strided_view(x), strided_view(*out),
                                                      fn);
  }
  return out;
}

// op(a0, b0) in dtype t over their broadcast shape.
std::unique_ptr<TensorImpl> binary(SpecialOp op, const TensorImpl& a0, const TensorImpl& b0,
                                   ScalarType t, const char* fn) {
  BinaryOperands v = binary_operands(a0, b0, t, t, fn, /*host_scalars=*/true);
  if (v.out->numel() > 0) {
    kernel(&SpecialKernels::binary, v.out->device(), fn)(op, v.a, v.b, strided_view(*v.out), fn);
  }
  return std::move(v.out);
}

void check_binary(SpecialOp op, const char* fn) {
  AOTRT_CHECK(!is_unary(op), kInternal, fn, ": ", aten_name(op), " is not a binary op");
}

}  // namespace

std::unique_ptr<TensorImpl> special_unary(SpecialOp op, const TensorImpl& self, const char* fn) {
  AOTRT_CHECK(is_unary(op) && op != SpecialOp::kPolygamma, kInternal, fn, ": ", aten_name(op),
              " is not a unary op");
  return unary(op, 0, self, fn);
}

std::unique_ptr<TensorImpl> polygamma(int64_t n, const TensorImpl& self, const char* fn) {
  AOTRT_CHECK(n >= 0, kInvalidArgument, fn,
              ": polygamma(n, x) does not support negative n (n is ", n, ")");
  return unary(SpecialOp::kPolygamma, n, self, fn);
}

std::unique_ptr<TensorImpl> special_binary(SpecialOp op, const TensorImpl& a, const TensorImpl& b,
                                           const char* fn) {
  check_binary(op, fn);
  return binary(op, a, b, compute_dtype(op, result_type(a, b, fn), fn), fn);
}

std::unique_ptr<TensorImpl> special_binary(SpecialOp op, double a, const TensorImpl& b,
                                           const char* fn) {
  check_binary(op, fn);
  const ScalarType t = compute_dtype(op, b.dtype(), fn);
  return binary(op, *scalar_tensor(a, t, cpu_device(), fn), b, t, fn);
}

std::unique_ptr<TensorImpl> special_binary(SpecialOp op, const TensorImpl& a, double b,
                                           const char* fn) {
  check_binary(op, fn);
  const ScalarType t = compute_dtype(op, a.dtype(), fn);
  return binary(op, a, *scalar_tensor(b, t, cpu_device(), fn), t, fn);
}

}  // namespace aotrt::ops
