#include "ops/special.h"

#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/indexing.h"   // scalar_tensor
#include "ops/pointwise.h"  // result_type, convert_element_type

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

// t in `dtype` on `device` (t itself when it already is).
const TensorImpl& operand(const TensorImpl& t, ScalarType dtype, Device device,
                          std::vector<std::unique_ptr<TensorImpl>>& keep, const char* fn) {
  const TensorImpl* p = &t;
  if (p->dtype() != dtype) {
    keep.push_back(convert_element_type(*p, dtype, fn));
    p = keep.back().get();
  }
  if (p->device() != device) {  // a CPU 0-d tensor beside a CUDA one
    keep.push_back(empty_strided({}, {}, dtype, device, fn));
    copy_tensor(*keep.back(), *p, fn);
    p = keep.back().get();
  }
  return *p;
}

std::unique_ptr<TensorImpl> unary(SpecialOp op, int64_t n, const TensorImpl& self,
                                  const char* fn) {
  const ScalarType t = compute_dtype(op, self.dtype(), fn);
  std::vector<std::unique_ptr<TensorImpl>> keep;
  const TensorImpl& x = operand(self, t, self.device(), keep, fn);
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
  Device device = a0.device();
  if (a0.device() != b0.device()) {
    // As in ATen, a CPU 0-d tensor goes with a tensor on another device.
    const bool a_cpu_scalar = a0.dim() == 0 && a0.device().is_cpu();
    const bool b_cpu_scalar = b0.dim() == 0 && b0.device().is_cpu();
    AOTRT_CHECK(a_cpu_scalar || b_cpu_scalar, kInvalidArgument, fn, ": the operands are on ",
                a0.device().str(), " and ", b0.device().str());
    device = a_cpu_scalar ? b0.device() : a0.device();
  }
  std::vector<std::unique_ptr<TensorImpl>> keep;
  const TensorImpl& a = operand(a0, t, device, keep, fn);
  const TensorImpl& b = operand(b0, t, device, keep, fn);
  const std::vector<int64_t> shape = broadcast_shapes(a.sizes(), b.sizes(), fn);
  const std::vector<int64_t> as = expand_strides(a.sizes(), a.strides(), shape, fn);
  const std::vector<int64_t> bs = expand_strides(b.sizes(), b.strides(), shape, fn);
  // The layout follows the operands as given, before any conversion.
  const std::vector<int64_t> layout = iterator_output_strides(
      shape, {expand_strides(a0.sizes(), a0.strides(), shape, fn),
              expand_strides(b0.sizes(), b0.strides(), shape, fn)});
  auto out = empty_strided(shape, layout, t, device, fn);
  if (out->numel() == 0) return out;
  StridedView av = strided_view(a), bv = strided_view(b);
  av.sizes = bv.sizes = shape;
  av.strides = as;
  bv.strides = bs;
  kernel(&SpecialKernels::binary, device, fn)(op, av, bv, strided_view(*out), fn);
  return out;
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
  return binary(op, *scalar_tensor(a, t, b.device(), fn), b, t, fn);
}

std::unique_ptr<TensorImpl> special_binary(SpecialOp op, const TensorImpl& a, double b,
                                           const char* fn) {
  check_binary(op, fn);
  const ScalarType t = compute_dtype(op, a.dtype(), fn);
  return binary(op, a, *scalar_tensor(b, t, a.device(), fn), t, fn);
}

}  // namespace aotrt::ops
