// Pointwise ops inductor calls as fallbacks (it emits them for complex
// dtypes, which its C++ codegen does not vectorize): abs, angle, add.Tensor,
// add.Scalar, sub.Tensor (c_shim_aten.h's subtract_Tensor), mul.Tensor,
// mul.Scalar, pow (Tensor_Scalar, Tensor_Tensor, Scalar), polar, gcd, and,
// through the proxy executor, complex, _conj, _conj_physical and
// prims.convert_element_type.
//
// Note [Pointwise semantics]
// ATen's CPU rules, checked against torch 2.13 eager (gen_ops_reference.py's
// pointwise cases):
// - Result dtype (ATen's result_type): categories bool < integer < floating
//   < complex; tensors of one or more dims decide first, then 0-d tensors,
//   then the Scalar; a later group changes the dtype only when its category
//   is higher: to its own dtype (a 0-d tensor), to float32 (a floating
//   Scalar), or to the complex of the floating dtype so far (a complex 0-d
//   tensor with float tensors: complex64 for float32). The C shims pass a
//   Scalar as a double, so an integral value stands for a Python int (the
//   dtype stays integral) and any other for a float.
// - abs: the input's dtype, the real one for complex. angle: floating
//   (integers give float32) atan2(imag, real): pi for negative reals, 0
//   otherwise, NaN kept. add: self + alpha * other; mul: self * other.
// - pow: integers by repeated squaring (a negative Scalar exponent with an
//   integer tensor is refused as in ATen; tensor exponents give 0, 1 or -1
//   as ATen does); floating std::pow, with ATen's special Tensor_Scalar
//   exponents (2, 3, 0.5, -0.5, -1, -2 as products, sqrt and reciprocals);
//   complex exp(exponent * log(base)), so 0 ** 0 is NaN as in ATen.
// - polar(abs, angle): float32/float64, one dtype, complex of it:
//   abs * (cos(angle), sin(angle)). gcd: integers, non-negative, gcd(0, 0) 0.
// - sub: self - alpha * other, refused for a bool operand as ATen does. add
//   and sub refuse a non-integral alpha with an integral result ("For
//   integral input tensors, argument alpha must not be a floating point
//   number"); the C shims pass alpha as a double, so an integral 2.0 that
//   Python gave as a float is taken as the int 2 (eager would refuse it).
// - complex(real, imag): both float16, float32 or float64 of one dtype
//   (ATen's two messages), the result complex32/64/128; float16 is computed
//   in float32 and stored as complex32 (exact: each half is kept).
// - Inputs broadcast; the result is laid out as TensorIterator lays it out
//   (Note [Iterator output layout] in ops/dims.h). Complex32 is refused, but
//   by complex, conj, conj_physical and convert_element_type.
//
// Note [Conjugate views]
// ATen's _conj is a lazy view: the same memory with the conj bit set, read
// conjugated by whatever consumes it (copy_, clone, _fft_c2r resolve it).
// aotrt has no conj bit, so _conj returns a conjugated copy with self's
// sizes and strides (the layout the view has, which inductor asserts: new
// memory spanning the view, as clone_preserve_strides makes it). What the
// graph sees is the same: inductor's code is functional (no op writes into
// the view, so losing the alias is not observable), and every consumer in
// the FFT decompositions (fft.ifft/ihfft return it; fft.hfft* clone it and
// pass it to _fft_c2r) reads conj(self)'s values, which the copy holds.
// Reading the conj bit itself (torch.is_conj) is not something a package
// can do. _conj of a real self is refused (ATen asserts it is complex);
// _conj_physical of a real self copies it. _conj_physical
// (conj_physical of a complex tensor) is ATen's empty_like(self) (preserve
// format) filled with conj(self).
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"

namespace aotrt::ops {

enum class UnaryOp { kAbs, kAngle, kConj };
enum class BinaryOp { kAdd, kMul, kPow, kPowScalarExponent, kPolar, kComplex, kGcd };

// See Note [Op dispatch] in ops/dispatch.h. Views of the output's shape (0
// strides where broadcast). unary: out has `in`'s dtype or its real one.
// kConj: complex64/128 only, out of in's dtype.
// binary: a, b and out share the compute dtype (polar, complex: out is its
// complex);
// alpha scales b in kAdd; kPowScalarExponent is pow with b a 0-d exponent
// (ATen's special exponents apply).
struct PointwiseKernels {
  void (*unary)(UnaryOp op, const StridedView& in, const StridedView& out, const char* fn);
  void (*binary)(BinaryOp op, const StridedView& a, const StridedView& b, const StridedView& out,
                 double alpha, const char* fn);
};

// ATen's result_type of two tensors (Note [Pointwise semantics]): beside a
// tensor of one or more dims, a 0-d one changes the dtype only with a higher
// category.
ScalarType result_type(const TensorImpl& a, const TensorImpl& b, const char* fn);

// The operands of an elementwise binary op: a0 and b0 in dtype `compute` on
// one device (a CPU 0-d tensor joins the other's; with host_scalars it stays
// on the host, for kernels that take it by value), broadcast together, as
// views of the output's shape (0 strides where broadcast), and a new output
// of `out_dtype` on that device, laid out as TensorIterator lays it out from
// the operands as given (Note [Iterator output layout]). The views live as
// long as this.
struct BinaryOperands {
  std::vector<std::unique_ptr<TensorImpl>> keep;  // converted copies
  std::vector<int64_t> shape, a_strides, b_strides;
  StridedView a, b;
  std::unique_ptr<TensorImpl> out;
};
BinaryOperands binary_operands(const TensorImpl& a0, const TensorImpl& b0, ScalarType compute,
                               ScalarType out_dtype, const char* fn, bool host_scalars = false);

std::unique_ptr<TensorImpl> abs(const TensorImpl& self, const char* fn);
std::unique_ptr<TensorImpl> angle(const TensorImpl& self, const char* fn);
std::unique_ptr<TensorImpl> add(const TensorImpl& self, const TensorImpl& other, double alpha,
                                const char* fn);
std::unique_ptr<TensorImpl> add(const TensorImpl& self, double other, double alpha,
                                const char* fn);
std::unique_ptr<TensorImpl> sub(const TensorImpl& self, const TensorImpl& other, double alpha,
                                const char* fn);
std::unique_ptr<TensorImpl> mul(const TensorImpl& self, const TensorImpl& other, const char* fn);
std::unique_ptr<TensorImpl> mul(const TensorImpl& self, double other, const char* fn);
std::unique_ptr<TensorImpl> pow(const TensorImpl& self, const TensorImpl& exponent,
                                const char* fn);
std::unique_ptr<TensorImpl> pow(const TensorImpl& self, double exponent, const char* fn);
std::unique_ptr<TensorImpl> pow(double self, const TensorImpl& exponent, const char* fn);
std::unique_ptr<TensorImpl> polar(const TensorImpl& abs, const TensorImpl& angle,
                                  const char* fn);
std::unique_ptr<TensorImpl> complex(const TensorImpl& real, const TensorImpl& imag,
                                    const char* fn);
// _conj and _conj_physical: see Note [Conjugate views].
std::unique_ptr<TensorImpl> conj(const TensorImpl& self, const char* fn);
std::unique_ptr<TensorImpl> conj_physical(const TensorImpl& self, const char* fn);
// prims.convert_element_type: empty_like(self, dtype) (preserve format), then
// a converting copy (ATen's cast rules, core/copy.h).
std::unique_ptr<TensorImpl> convert_element_type(const TensorImpl& self, ScalarType dtype,
                                                 const char* fn);
std::unique_ptr<TensorImpl> gcd(const TensorImpl& self, const TensorImpl& other, const char* fn);

}  // namespace aotrt::ops
