// Entry points of the matmul family (ops/matmul.h), both devices. Handles
// are borrowed; the result is written into `out`. See Note [Op rows].
#include "ops/matmul.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP(mm_out, (AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2),
         ops::mm_out(args.tensor(out, "out"), args.tensor(self, "self"),
                     args.tensor(mat2, "mat2"), fn))

AOTRT_OP(addmm_out,
         (AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
          AtenTensorHandle mat2, double beta, double alpha),
         ops::addmm_out(args.tensor(out, "out"), args.tensor(self, "self"),
                        args.tensor(mat1, "mat1"), args.tensor(mat2, "mat2"), beta, alpha, fn))

AOTRT_OP(bmm_out, (AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2),
         ops::bmm_out(args.tensor(out, "out"), args.tensor(self, "self"),
                      args.tensor(mat2, "mat2"), fn))

AOTRT_OP(baddbmm_out,
         (AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle batch1,
          AtenTensorHandle batch2, double beta, double alpha),
         ops::baddbmm_out(args.tensor(out, "out"), args.tensor(self, "self"),
                          args.tensor(batch1, "batch1"), args.tensor(batch2, "batch2"), beta,
                          alpha, fn))

// mm.dtype_out (Note [Matmul with an output dtype]): torch's headers declare it for CUDA only.
AOTRT_OP_CUDA(mm_dtype_out,
              (AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2,
               int32_t out_dtype),
              ops::mm_dtype_out(args.tensor(out, "out"), args.tensor(self, "self"),
                                args.tensor(mat2, "mat2"),
                                *args.optional_dtype(&out_dtype, "out_dtype"), fn))

// _grouped_mm (Note [Grouped matmul]): the CPU's loop of mm reads offs on the host; on CUDA
// (torch 2.13's c_shim_cuda.h declares the entry, 2.11 generates none) the kernel of Note
// [Grouped tiles on the device] reads them on the device, as ATen's CUTLASS kernel does.
AOTRT_OP(_grouped_mm,
         (AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle* offs,
          AtenTensorHandle* bias, int32_t* out_dtype, AtenTensorHandle* ret0),
         give(ret0, ops::grouped_mm(args.tensor(self, "self"), args.tensor(mat2, "mat2"),
                                    args.optional_tensor(offs, "offs"),
                                    args.optional_tensor(bias, "bias"),
                                    args.optional_dtype(out_dtype, "out_dtype"), fn)))

// _scaled_grouped_mm (Note [Scaled grouped matmul]): torch declares it for CUDA only.
AOTRT_OP_CUDA(_scaled_grouped_mm,
              (AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,
               AtenTensorHandle scale_b, AtenTensorHandle* offs, AtenTensorHandle* bias,
               AtenTensorHandle* scale_result, int32_t* out_dtype, int32_t use_fast_accum,
               AtenTensorHandle* ret0),
              give(ret0, ops::scaled_grouped_mm(
                             args.tensor(self, "self"), args.tensor(mat2, "mat2"),
                             args.tensor(scale_a, "scale_a"), args.tensor(scale_b, "scale_b"),
                             args.optional_tensor(offs, "offs"), args.optional_tensor(bias, "bias"),
                             args.optional_tensor(scale_result, "scale_result"),
                             args.optional_dtype(out_dtype, "out_dtype"), use_fast_accum != 0,
                             fn)))

// _scaled_mm and its .out form (Note [Scaled matmul]): the fp8 GEMM, ATen's emulation on the
// CPU, cuBLASLt on CUDA.
AOTRT_OP(_scaled_mm,
         (AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a,
          AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result,
          int32_t* out_dtype, int32_t use_fast_accum, AtenTensorHandle* ret0),
         give(ret0, ops::scaled_mm(args.tensor(self, "self"), args.tensor(mat2, "mat2"),
                                   args.tensor(scale_a, "scale_a"), args.tensor(scale_b, "scale_b"),
                                   args.optional_tensor(bias, "bias"),
                                   args.optional_tensor(scale_result, "scale_result"),
                                   args.optional_dtype(out_dtype, "out_dtype"), use_fast_accum != 0,
                                   fn)))

AOTRT_OP(_scaled_mm_out,
         (AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2,
          AtenTensorHandle scale_a, AtenTensorHandle scale_b, AtenTensorHandle* bias,
          AtenTensorHandle* scale_result, int32_t* out_dtype, int32_t use_fast_accum),
         ops::scaled_mm_out(args.tensor(out, "out"), args.tensor(self, "self"),
                            args.tensor(mat2, "mat2"), args.tensor(scale_a, "scale_a"),
                            args.tensor(scale_b, "scale_b"), args.optional_tensor(bias, "bias"),
                            args.optional_tensor(scale_result, "scale_result"),
                            args.optional_dtype(out_dtype, "out_dtype"), use_fast_accum != 0, fn))
