// The special functions inductor leaves to ATen on CUDA (triton has no
// lowering for them; c_shim has no entry either, so they come through the
// proxy executor): digamma, polygamma, igamma, igammac, special_airy_ai,
// special_i0e, special_i1e, special_ndtri, special_modified_bessel_k0/k1,
// special_scaled_modified_bessel_k0/k1, special_spherical_bessel_j0,
// special_zeta and the orthogonal polynomials (chebyshev t/u/v/w and their
// shifted kinds, hermite h/he, laguerre l, legendre p), with the Scalar
// overloads the exported graph keeps (zeta.self_scalar / .other_scalar,
// <polynomial>.x_scalar / .n_scalar). The math is ops/special_math.h (Note
// [Special function math]), shared by the CPU and CUDA kernels.
//
// Note [Special semantics]
// ATen's rules, checked against torch 2.13 eager (gen_ops_reference.py's
// special cases):
// - Result dtype: the unary ops take self's dtype, integers and bool giving
//   float32; the binary ones ATen's result_type of both (0-d tensors at
//   lower priority), then integers and bool float32, except igamma and
//   igammac, which refuse an integral result ("igamma_cpu" not implemented
//   for 'Long'). A Scalar operand (the *_scalar overloads) is a wrapped
//   number: the tensor's dtype decides alone (integers: float32).
// - float16 and bfloat16 are served by digamma, polygamma, i0e, i1e, igamma
//   and igammac only; the others refuse them as ATen does ("zeta" not
//   implemented for 'Half'). Complex dtypes are refused.
// - polygamma refuses n < 0 ("polygamma(n, x) does not support negative n.").
// - Inputs broadcast; the output is laid out as TensorIterator lays it out
//   (Note [Iterator output layout] in ops/dims.h); a CPU 0-d tensor may go
//   with a CUDA one (ATen passes it to its CUDA kernel by value, as aotrt
//   does, and a Scalar likewise).
#pragma once

#include <cstdint>
#include <memory>

#include "core/tensor.h"
#include "ops/special_math.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. x, a, b and out share out's
// dtype (float16, bfloat16, float32 or float64) and shape (a and b with 0
// strides where broadcast); every element is computed in double (Note
// [Special function math]). unary: out = op(x), polygamma's order n beside.
// binary: out = op(a, b); a or b may be a 0-d tensor in host memory (a
// Scalar, or a CPU 0-d tensor beside a CUDA one), which a CUDA kernel takes
// by value: no copy to the device.
struct SpecialKernels {
  void (*unary)(SpecialOp op, int64_t n, const StridedView& x, const StridedView& out,
                const char* fn);
  void (*binary)(SpecialOp op, const StridedView& a, const StridedView& b, const StridedView& out,
                 const char* fn);
};

// The unary ops but polygamma.
std::unique_ptr<TensorImpl> special_unary(SpecialOp op, const TensorImpl& self, const char* fn);
std::unique_ptr<TensorImpl> polygamma(int64_t n, const TensorImpl& self, const char* fn);
// The binary ops, Tensor-Tensor and the Scalar overloads.
std::unique_ptr<TensorImpl> special_binary(SpecialOp op, const TensorImpl& a, const TensorImpl& b,
                                           const char* fn);
std::unique_ptr<TensorImpl> special_binary(SpecialOp op, double a, const TensorImpl& b,
                                           const char* fn);
std::unique_ptr<TensorImpl> special_binary(SpecialOp op, const TensorImpl& a, double b,
                                           const char* fn);

}  // namespace aotrt::ops
