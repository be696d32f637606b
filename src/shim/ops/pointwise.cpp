// Entry points of the pointwise family (ops/pointwise.h), both devices, and
// its ops without a C shim through the proxy executor (complex, _conj and
// _conj_physical on both devices; convert_element_type on the CPU). Handles are
// borrowed; ret0 gets a new owning handle. See Note [Op rows].
#include "ops/pointwise.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using runtime::ProxyCall;

AOTRT_OP(abs, (AtenTensorHandle self, AtenTensorHandle* ret0),
         give(ret0, ops::abs(args.tensor(self, "self"), fn)))

AOTRT_OP(angle, (AtenTensorHandle self, AtenTensorHandle* ret0),
         give(ret0, ops::angle(args.tensor(self, "self"), fn)))

AOTRT_OP(add_Tensor,
         (AtenTensorHandle self, AtenTensorHandle other, double alpha, AtenTensorHandle* ret0),
         give(ret0, ops::add(args.tensor(self, "self"), args.tensor_any_device(other, "other"),
                             alpha, fn)))

AOTRT_OP(add_Scalar, (AtenTensorHandle self, double other, double alpha, AtenTensorHandle* ret0),
         give(ret0, ops::add(args.tensor(self, "self"), other, alpha, fn)))

AOTRT_OP(mul_Tensor, (AtenTensorHandle self, AtenTensorHandle other, AtenTensorHandle* ret0),
         give(ret0, ops::mul(args.tensor(self, "self"), args.tensor_any_device(other, "other"),
                             fn)))

AOTRT_OP(mul_Scalar, (AtenTensorHandle self, double other, AtenTensorHandle* ret0),
         give(ret0, ops::mul(args.tensor(self, "self"), other, fn)))

AOTRT_OP(pow_Tensor_Tensor,
         (AtenTensorHandle self, AtenTensorHandle exponent, AtenTensorHandle* ret0),
         give(ret0, ops::pow(args.tensor(self, "self"),
                             args.tensor_any_device(exponent, "exponent"), fn)))

AOTRT_OP(pow_Tensor_Scalar, (AtenTensorHandle self, double exponent, AtenTensorHandle* ret0),
         give(ret0, ops::pow(args.tensor(self, "self"), exponent, fn)))

AOTRT_OP(pow_Scalar, (double self, AtenTensorHandle exponent, AtenTensorHandle* ret0),
         give(ret0, ops::pow(self, args.tensor(exponent, "exponent"), fn)))

AOTRT_OP(polar, (AtenTensorHandle abs, AtenTensorHandle angle, AtenTensorHandle* ret0),
         give(ret0, ops::polar(args.tensor(abs, "abs"), args.tensor(angle, "angle"), fn)))

AOTRT_OP(gcd, (AtenTensorHandle self, AtenTensorHandle other, AtenTensorHandle* ret0),
         give(ret0, ops::gcd(args.tensor(self, "self"), args.tensor(other, "other"), fn)))

// c_shim_aten.h's subtract.Tensor (the sub.Tensor alias): self - alpha * other.
AOTRT_OP_ATEN(subtract_Tensor,
              (AtenTensorHandle self, AtenTensorHandle other, double alpha,
               AtenTensorHandle* ret0),
              give(ret0, ops::sub(args.tensor(self, "self"),
                                  args.tensor_any_device(other, "other"), alpha, fn)))

// Ops inductor leaves to the proxy executor because they make or read
// complex tensors (it has no complex codegen); see Note [Conjugate views].
// complex(Tensor real, Tensor imag).
AOTRT_PROXY_OP("aten::complex", {"real", "imag"}, runtime::kProxyCpu | runtime::kProxyCuda,
               [](ProxyCall& c) {
                 c.set_output(0, ops::complex(c.tensor("real"), c.tensor("imag"), c.what()));
               });

// _conj(Tensor(a) self): a conjugated copy laid out as the view.
AOTRT_PROXY_OP("aten::_conj", {"self"}, runtime::kProxyCpu | runtime::kProxyCuda,
               [](ProxyCall& c) { c.set_output(0, ops::conj(c.tensor("self"), c.what())); });

// _conj_physical(Tensor self).
AOTRT_PROXY_OP("aten::_conj_physical", {"self"}, runtime::kProxyCpu | runtime::kProxyCuda,
               [](ProxyCall& c) {
                 c.set_output(0, ops::conj_physical(c.tensor("self"), c.what()));
               });

// prims::convert_element_type(Tensor a, ScalarType dtype).
AOTRT_PROXY_OP("prims::convert_element_type", {"a", "dtype"},
               runtime::kProxyCpu | runtime::kProxyCuda,
               [](ProxyCall& c) {
                 c.set_output(0, ops::convert_element_type(c.tensor("a"), c.dtype("dtype"),
                                                           c.what()));
               });
