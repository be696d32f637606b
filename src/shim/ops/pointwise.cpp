// Entry points of the pointwise family (ops/pointwise.h), both devices.
// Handles are borrowed; ret0 gets a new owning handle. See Note [Op rows].
#include "ops/pointwise.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

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
