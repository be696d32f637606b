// Entry points of the linear family (ops/linear.h), both devices. Handles are
// borrowed; ret* get new owning handles, dropped when null (Note [Unused op
// outputs]). See Note [Op rows].
#include "ops/linear.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP(_addmm_activation,
         (AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
          double alpha, int32_t use_gelu, AtenTensorHandle* ret0),
         give(ret0, ops::addmm_activation(args.tensor(self, "self"), args.tensor(mat1, "mat1"),
                                          args.tensor(mat2, "mat2"), beta, alpha, use_gelu != 0,
                                          fn)))

AOTRT_OP(addmv,
         (AtenTensorHandle self, AtenTensorHandle mat, AtenTensorHandle vec, double beta,
          double alpha, AtenTensorHandle* ret0),
         give(ret0, ops::addmv(args.tensor(self, "self"), args.tensor(mat, "mat"),
                               args.tensor(vec, "vec"), beta, alpha, fn)))

AOTRT_OP(addbmm,
         (AtenTensorHandle self, AtenTensorHandle batch1, AtenTensorHandle batch2, double beta,
          double alpha, AtenTensorHandle* ret0),
         give(ret0, ops::addbmm(args.tensor(self, "self"), args.tensor(batch1, "batch1"),
                                args.tensor(batch2, "batch2"), beta, alpha, fn)))

AOTRT_OP(_fused_rms_norm,
         (AtenTensorHandle input, const int64_t* normalized_shape,
          int64_t normalized_shape_len_, AtenTensorHandle* weight, double* eps,
          AtenTensorHandle* ret0, AtenTensorHandle* ret1),
         ops::NormResult r = ops::fused_rms_norm(
             args.tensor(input, "input"),
             args.ints(normalized_shape, normalized_shape_len_, "normalized_shape"),
             args.optional_tensor(weight, "weight"), OpArgs::optional(eps), fn);
         give(ret0, ret1, std::move(r.output), std::move(r.rstd)))

AOTRT_OP(_trilinear,
         (AtenTensorHandle i1, AtenTensorHandle i2, AtenTensorHandle i3, const int64_t* expand1,
          int64_t expand1_len_, const int64_t* expand2, int64_t expand2_len_,
          const int64_t* expand3, int64_t expand3_len_, const int64_t* sumdim,
          int64_t sumdim_len_, int64_t unroll_dim, AtenTensorHandle* ret0),
         (void)unroll_dim;  // ATen's loop order only
         give(ret0, ops::trilinear(args.tensor(i1, "i1"), args.tensor(i2, "i2"),
                                   args.tensor(i3, "i3"),
                                   args.ints(expand1, expand1_len_, "expand1"),
                                   args.ints(expand2, expand2_len_, "expand2"),
                                   args.ints(expand3, expand3_len_, "expand3"),
                                   args.ints(sumdim, sumdim_len_, "sumdim"), fn)))
