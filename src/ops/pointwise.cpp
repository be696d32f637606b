#include "ops/pointwise.h"

#include <cmath>
#include <optional>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/indexing.h"  // scalar_tensor
#include "ops/promote.h"

namespace aotrt::ops {
namespace {

enum class Category { kBool, kInt, kFloat, kComplex };

Category category_of(ScalarType t) {
  if (t == ScalarType::Bool) return Category::kBool;
  if (is_complex(t)) return Category::kComplex;
  return is_floating(t) ? Category::kFloat : Category::kInt;
}

ScalarType complex_of(ScalarType t) {
  return t == ScalarType::Float64 ? ScalarType::Complex128 : ScalarType::Complex64;
}
ScalarType real_of(ScalarType t) {
  if (t == ScalarType::Complex128) return ScalarType::Float64;
  if (t == ScalarType::Complex64) return ScalarType::Float32;
  return t;
}

// promoteTypes with complex: complex with a float gives the complex of the
// wider float.
ScalarType promote(ScalarType a, ScalarType b, const char* fn) {
  if (!is_complex(a) && !is_complex(b)) return promote_types(a, b, fn);
  const ScalarType ra = is_complex(a) ? real_of(a) : (is_floating(a) ? a : ScalarType::Float32);
  const ScalarType rb = is_complex(b) ? real_of(b) : (is_floating(b) ? b : ScalarType::Float32);
  const bool wide = ra == ScalarType::Float64 || rb == ScalarType::Float64;
  return wide ? ScalarType::Complex128 : ScalarType::Complex64;
}

// A lower-priority group joins: it changes the dtype only with a higher
// category (Note [Pointwise semantics]).
ScalarType join_lower(ScalarType so_far, ScalarType lower) {
  const Category c = category_of(so_far), l = category_of(lower);
  if (l <= c) return so_far;
  if (l == Category::kComplex && c == Category::kFloat) return complex_of(so_far);
  return lower;
}

void check_served(ScalarType t, const char* what, const char* fn) {
  AOTRT_CHECK(t != ScalarType::Complex32, kUnsupported, fn, ": ", what,
              " is complex32, which is not served");
}

// The dtype a Scalar passed as a double stands for.
ScalarType scalar_dtype(double v) {
  return std::isfinite(v) && v == std::floor(v) ? ScalarType::Int64 : ScalarType::Float64;
}
ScalarType result_type(const TensorImpl& a, double s) {
  const ScalarType t = a.dtype();
  if (scalar_dtype(s) == ScalarType::Float64 && category_of(t) < Category::kFloat) {
    return ScalarType::Float32;
  }
  if (category_of(t) == Category::kBool && scalar_dtype(s) == ScalarType::Int64) {
    return ScalarType::Int64;
  }
  return t;
}

// ATen's alpha_check, as far as a double tells: an integral result takes an
// integral alpha.
void check_alpha(ScalarType t, double alpha, const char* fn) {
  AOTRT_CHECK(category_of(t) != Category::kInt || scalar_dtype(alpha) == ScalarType::Int64,
              kInvalidArgument, fn,
              ": For integral input tensors, argument alpha must not be a floating point number.");
}

// out = conj(src) (same sizes); complex32 goes through complex64, which holds
// its values exactly.
void conj_into(const TensorImpl& src, const TensorImpl& out, const char* fn) {
  if (src.numel() == 0) return;
  if (src.dtype() != ScalarType::Complex32) {
    kernel(&PointwiseKernels::unary, src.device(), fn)(UnaryOp::kConj, strided_view(src),
                                                       strided_view(out), fn);
    return;
  }
  auto wide = empty_strided(src.sizes(), contiguous_strides(src.sizes()), ScalarType::Complex64,
                            src.device(), fn);
  copy_tensor(*wide, src, fn);
  kernel(&PointwiseKernels::unary, src.device(), fn)(UnaryOp::kConj, strided_view(*wide),
                                                     strided_view(*wide), fn);
  copy_tensor(out, *wide, fn);
}

// t as `dtype` (itself when it already is).
const TensorImpl& as_dtype(const TensorImpl& t, ScalarType dtype,
                           std::vector<std::unique_ptr<TensorImpl>>& keep, const char* fn) {
  if (t.dtype() == dtype) return t;
  keep.push_back(empty_strided(t.sizes(), contiguous_strides(t.sizes()), dtype, t.device(), fn));
  copy_tensor(*keep.back(), t, fn);
  return *keep.back();
}

// a op b over their broadcast shape, the result of dtype out_dtype.
std::unique_ptr<TensorImpl> binary(BinaryOp op, const TensorImpl& a0, const TensorImpl& b0,
                                   ScalarType compute, ScalarType out_dtype, double alpha,
                                   const char* fn) {
  BinaryOperands v = binary_operands(a0, b0, compute, out_dtype, fn);
  if (v.out->numel() > 0) {
    kernel(&PointwiseKernels::binary, v.out->device(), fn)(op, v.a, v.b, strided_view(*v.out),
                                                           alpha, fn);
  }
  return std::move(v.out);
}

std::unique_ptr<TensorImpl> with_scalar(BinaryOp op, const TensorImpl& self, double s,
                                        double alpha, const char* fn) {
  check_served(self.dtype(), "self", fn);
  const ScalarType t = result_type(self, s);
  auto scalar = scalar_tensor(s, t, self.device(), fn);
  return binary(op, self, *scalar, t, t, alpha, fn);
}

std::unique_ptr<TensorImpl> unary(UnaryOp op, const TensorImpl& self, ScalarType in_dtype,
                                  ScalarType out_dtype, const char* fn) {
  std::vector<std::unique_ptr<TensorImpl>> keep;
  const TensorImpl& x = as_dtype(self, in_dtype, keep, fn);
  const std::vector<int64_t> st(self.strides().begin(), self.strides().end());
  auto out = empty_strided(x.sizes(), iterator_output_strides(x.sizes(), {st}), out_dtype,
                           x.device(), fn);
  if (out->numel() > 0) {
    kernel(&PointwiseKernels::unary, x.device(), fn)(op, strided_view(x), strided_view(*out), fn);
  }
  return out;
}

}  // namespace

ScalarType result_type(const TensorImpl& a, const TensorImpl& b, const char* fn) {
  check_served(a.dtype(), "self", fn);
  check_served(b.dtype(), "other", fn);
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote(a.dtype(), b.dtype(), fn);
  return a0 ? join_lower(b.dtype(), a.dtype()) : join_lower(a.dtype(), b.dtype());
}

BinaryOperands binary_operands(const TensorImpl& a0, const TensorImpl& b0, ScalarType compute,
                               ScalarType out_dtype, const char* fn, bool host_scalars) {
  Device device = a0.device();
  if (a0.device() != b0.device()) {
    // As in ATen, a CPU 0-d tensor goes with a tensor on another device.
    const bool a_cpu_scalar = a0.dim() == 0 && a0.device().is_cpu();
    const bool b_cpu_scalar = b0.dim() == 0 && b0.device().is_cpu();
    AOTRT_CHECK(a_cpu_scalar || b_cpu_scalar, kInvalidArgument, fn, ": other is on ",
                b0.device().str(), ", self on ", a0.device().str());
    device = a_cpu_scalar ? b0.device() : a0.device();
  }
  BinaryOperands v;
  auto operand = [&](const TensorImpl& t) -> const TensorImpl& {
    const TensorImpl* p = &as_dtype(t, compute, v.keep, fn);
    if (p->device() != device && !host_scalars) {
      v.keep.push_back(empty_strided({}, {}, compute, device, fn));
      copy_tensor(*v.keep.back(), *p, fn);
      p = v.keep.back().get();
    }
    return *p;
  };
  const TensorImpl& a = operand(a0);
  const TensorImpl& b = operand(b0);
  v.shape = broadcast_shapes(a.sizes(), b.sizes(), fn);
  v.a_strides = expand_strides(a.sizes(), a.strides(), v.shape, fn);
  v.b_strides = expand_strides(b.sizes(), b.strides(), v.shape, fn);
  // The layout follows the operands as given, before any dtype conversion.
  const std::vector<int64_t> layout = iterator_output_strides(
      v.shape, {expand_strides(a0.sizes(), a0.strides(), v.shape, fn),
                expand_strides(b0.sizes(), b0.strides(), v.shape, fn)});
  v.out = empty_strided(v.shape, layout, out_dtype, device, fn);
  v.a = strided_view(a);
  v.b = strided_view(b);
  v.a.sizes = v.b.sizes = v.shape;
  v.a.strides = v.a_strides;
  v.b.strides = v.b_strides;
  return v;
}

std::unique_ptr<TensorImpl> abs(const TensorImpl& self, const char* fn) {
  check_served(self.dtype(), "self", fn);
  AOTRT_CHECK(self.dtype() != ScalarType::Bool, kInvalidArgument, fn,
              ": abs is not implemented for bool tensors (as ATen)");
  return unary(UnaryOp::kAbs, self, self.dtype(), real_of(self.dtype()), fn);
}

std::unique_ptr<TensorImpl> angle(const TensorImpl& self, const char* fn) {
  check_served(self.dtype(), "self", fn);
  const ScalarType t = category_of(self.dtype()) <= Category::kInt ? ScalarType::Float32
                                                                   : self.dtype();
  return unary(UnaryOp::kAngle, self, t, real_of(t), fn);
}

std::unique_ptr<TensorImpl> add(const TensorImpl& self, const TensorImpl& other, double alpha,
                                const char* fn) {
  const ScalarType t = result_type(self, other, fn);
  AOTRT_CHECK(t != ScalarType::Bool || alpha == 1.0 || alpha == 0.0, kInvalidArgument, fn,
              ": for bool tensors alpha must be a bool");
  check_alpha(t, alpha, fn);
  return binary(BinaryOp::kAdd, self, other, t, t, alpha, fn);
}

std::unique_ptr<TensorImpl> sub(const TensorImpl& self, const TensorImpl& other, double alpha,
                                const char* fn) {
  const bool sb = self.dtype() == ScalarType::Bool, ob = other.dtype() == ScalarType::Bool;
  AOTRT_CHECK(!(sb && ob), kInvalidArgument, fn,
              ": Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
              "`^` or `logical_xor()` operator instead.");
  AOTRT_CHECK(!sb && !ob, kInvalidArgument, fn,
              ": Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
              "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  const ScalarType t = result_type(self, other, fn);
  check_alpha(t, alpha, fn);
  return binary(BinaryOp::kAdd, self, other, t, t, -alpha, fn);
}

std::unique_ptr<TensorImpl> add(const TensorImpl& self, double other, double alpha,
                                const char* fn) {
  return with_scalar(BinaryOp::kAdd, self, other, alpha, fn);
}

std::unique_ptr<TensorImpl> mul(const TensorImpl& self, const TensorImpl& other, const char* fn) {
  const ScalarType t = result_type(self, other, fn);
  return binary(BinaryOp::kMul, self, other, t, t, 1.0, fn);
}

std::unique_ptr<TensorImpl> mul(const TensorImpl& self, double other, const char* fn) {
  return with_scalar(BinaryOp::kMul, self, other, 1.0, fn);
}

std::unique_ptr<TensorImpl> pow(const TensorImpl& self, const TensorImpl& exponent,
                                const char* fn) {
  const ScalarType t = result_type(self, exponent, fn);
  AOTRT_CHECK(t != ScalarType::Bool, kInvalidArgument, fn,
              ": pow is not implemented for bool tensors");
  return binary(BinaryOp::kPow, self, exponent, t, t, 1.0, fn);
}

std::unique_ptr<TensorImpl> pow(const TensorImpl& self, double exponent, const char* fn) {
  check_served(self.dtype(), "self", fn);
  const ScalarType t = result_type(self, exponent);
  AOTRT_CHECK(category_of(t) != Category::kInt || exponent >= 0, kInvalidArgument, fn,
              ": Integers to negative integer powers are not allowed (exponent ", exponent, ")");
  AOTRT_CHECK(t != ScalarType::Bool, kInvalidArgument, fn,
              ": pow is not implemented for bool tensors");
  auto e = scalar_tensor(exponent, t, self.device(), fn);
  return binary(BinaryOp::kPowScalarExponent, self, *e, t, t, 1.0, fn);
}

std::unique_ptr<TensorImpl> pow(double self, const TensorImpl& exponent, const char* fn) {
  check_served(exponent.dtype(), "exponent", fn);
  const ScalarType t = result_type(exponent, self);
  AOTRT_CHECK(t != ScalarType::Bool, kInvalidArgument, fn,
              ": pow is not implemented for bool tensors");
  auto base = scalar_tensor(self, t, exponent.device(), fn);
  return binary(BinaryOp::kPow, *base, exponent, t, t, 1.0, fn);
}

std::unique_ptr<TensorImpl> polar(const TensorImpl& abs, const TensorImpl& angle,
                                  const char* fn) {
  AOTRT_CHECK(abs.dtype() == ScalarType::Float32 || abs.dtype() == ScalarType::Float64,
              kInvalidArgument, fn, ": abs must be float32 or float64, not ",
              dtype_name(abs.dtype()));
  AOTRT_CHECK(angle.dtype() == abs.dtype(), kInvalidArgument, fn, ": angle is ",
              dtype_name(angle.dtype()), ", abs ", dtype_name(abs.dtype()),
              " (ATen wants one dtype)");
  return binary(BinaryOp::kPolar, abs, angle, abs.dtype(), complex_of(abs.dtype()), 1.0, fn);
}

std::unique_ptr<TensorImpl> complex(const TensorImpl& real, const TensorImpl& imag,
                                    const char* fn) {
  auto floating = [](ScalarType t) {
    return t == ScalarType::Float16 || t == ScalarType::Float32 || t == ScalarType::Float64;
  };
  AOTRT_CHECK(floating(real.dtype()) && floating(imag.dtype()), kInvalidArgument, fn,
              ": Expected both inputs to be Half, Float or Double tensors but got ",
              dtype_name(real.dtype()), " and ", dtype_name(imag.dtype()));
  AOTRT_CHECK(real.dtype() == imag.dtype(), kInvalidArgument, fn,
              ": Expected object of scalar type ", dtype_name(real.dtype()),
              " but got scalar type ", dtype_name(imag.dtype()), " for second argument");
  if (real.dtype() != ScalarType::Float16) {
    return binary(BinaryOp::kComplex, real, imag, real.dtype(), complex_of(real.dtype()), 1.0,
                  fn);
  }
  auto wide = binary(BinaryOp::kComplex, real, imag, ScalarType::Float32, ScalarType::Complex64,
                     1.0, fn);
  auto out = empty_strided(wide->sizes(), wide->strides(), ScalarType::Complex32, wide->device(),
                           fn);
  if (out->numel() > 0) copy_tensor(*out, *wide, fn);
  return out;
}

std::unique_ptr<TensorImpl> conj(const TensorImpl& self, const char* fn) {
  AOTRT_CHECK(is_complex(self.dtype()), kInvalidArgument, fn, ": _conj of a ",
              dtype_name(self.dtype()), " tensor (ATen takes complex ones only)");
  auto out = clone_preserve_strides(self, fn);
  if (out->numel() > 0) {
    // Conjugate the copy's whole memory once, flat: an overlapping view
    // (an expanded dim) would meet its shared elements more than once.
    const int64_t n = static_cast<int64_t>(out->storage()->nbytes() / out->itemsize()), one = 1;
    auto flat = make_tensor(out->storage(), std::span(&n, 1), std::span(&one, 1), 0,
                            out->dtype(), fn);
    conj_into(*flat, *flat, fn);
  }
  return out;
}

std::unique_ptr<TensorImpl> conj_physical(const TensorImpl& self, const char* fn) {
  auto out = empty_strided(self.sizes(), preserve_format_strides(self.sizes(), self.strides()),
                           self.dtype(), self.device(), fn);
  if (is_complex(self.dtype())) {
    conj_into(self, *out, fn);
  } else if (out->numel() > 0) {
    copy_tensor(*out, self, fn);
  }
  return out;
}

std::unique_ptr<TensorImpl> convert_element_type(const TensorImpl& self, ScalarType dtype,
                                                 const char* fn) {
  auto out = empty_strided(self.sizes(), preserve_format_strides(self.sizes(), self.strides()),
                           dtype, self.device(), fn);
  if (out->numel() > 0) copy_tensor(*out, self, fn);
  return out;
}

std::unique_ptr<TensorImpl> gcd(const TensorImpl& self, const TensorImpl& other, const char* fn) {
  const ScalarType t = result_type(self, other, fn);
  AOTRT_CHECK(category_of(t) == Category::kInt, kInvalidArgument, fn,
              ": gcd takes integer tensors, not ", dtype_name(t));
  return binary(BinaryOp::kGcd, self, other, t, t, 1.0, fn);
}

}  // namespace aotrt::ops
