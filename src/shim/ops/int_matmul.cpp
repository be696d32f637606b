// Entry points of the integer matmul family (ops/int_matmul.h). Handles are
// borrowed; _int_mm_out writes into out, ret0 gets a new owning handle. See
// Note [Op rows].
#include "ops/int_matmul.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using runtime::kProxyCpu;
using runtime::ProxyCall;

// _int_mm_out and _weight_int8pack_mm on both devices (Note [Integer matmul on
// CUDA] in cuda/ops/int_matmul.cu); the int4 ones of the CPU's layouts on the CPU only,
// CUDA's _weight_int4pack_mm on CUDA only.
AOTRT_OP(_int_mm_out, (AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2),
         ops::int_mm_out(args.tensor(out, "out"), args.tensor(self, "self"),
                         args.tensor(mat2, "mat2"), fn))

AOTRT_OP(_weight_int8pack_mm,
         (AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scales,
          AtenTensorHandle* ret0),
         give(ret0, ops::weight_int8pack_mm(args.tensor(self, "self"), args.tensor(mat2, "mat2"),
                                            args.tensor(scales, "scales"), fn)))

// CUDA's tinygemm layout (Note [Int4 tinygemm layout]); torch declares it for CUDA only.
AOTRT_OP_CUDA(_weight_int4pack_mm,
              (AtenTensorHandle self, AtenTensorHandle mat2, int64_t qGroupSize,
               AtenTensorHandle qScaleAndZeros, AtenTensorHandle* ret0),
              give(ret0, ops::weight_int4pack_mm_tinygemm(
                             args.tensor(self, "self"), args.tensor(mat2, "mat2"), qGroupSize,
                             args.tensor(qScaleAndZeros, "qScaleAndZeros"), fn)))

// Declared in torch's hand-written c/shim_cpu.h: qGroupSize comes as a 0-d
// int64 constant tensor (Note [Int4 packed weights]).
AOTRT_OP_CPU(_weight_int4pack_mm_cpu_tensor,
             (AtenTensorHandle X, AtenTensorHandle w, AtenTensorHandle qGroupSize,
              AtenTensorHandle qScaleAndZeros, AtenTensorHandle* ret0),
             give(ret0, ops::weight_int4pack_mm(args.tensor(X, "X"), args.tensor(w, "w"),
                                                args.tensor(qGroupSize, "qGroupSize"),
                                                args.tensor(qScaleAndZeros, "qScaleAndZeros"),
                                                fn)))

// Note [Dynamic int4 matmul]: ATen's x86 layout of the packed weight.
AOTRT_OP_CPU(_dyn_quant_pack_4bit_weight,
             (AtenTensorHandle weights, AtenTensorHandle scales_zeros, AtenTensorHandle* bias,
              int64_t block_size, int64_t in_features, int64_t out_features,
              AtenTensorHandle* ret0),
             give(ret0, ops::dyn_quant_pack_4bit_weight(
                            args.tensor(weights, "weights"), args.tensor(scales_zeros, "scales_zeros"),
                            args.optional_tensor(bias, "bias"), block_size, in_features,
                            out_features, fn)))

AOTRT_OP_CPU(_dyn_quant_matmul_4bit,
             (AtenTensorHandle inp, AtenTensorHandle packed_weights, int64_t block_size,
              int64_t in_features, int64_t out_features, AtenTensorHandle* ret0),
             give(ret0, ops::dyn_quant_matmul_4bit(args.tensor(inp, "inp"),
                                                   args.tensor(packed_weights, "packed_weights"),
                                                   block_size, in_features, out_features, fn)))

// No C shim in torch: a package that packs its int4 weight in forward calls it
// through the proxy executor. Argument names from ATen's schema.
AOTRT_PROXY_OP("aten::_convert_weight_to_int4pack_for_cpu", {"self", "innerKTiles"}, kProxyCpu,
               [](ProxyCall& c) {
                 c.set_output(0, ops::convert_weight_to_int4pack(c.tensor("self"), c.what()));
               });
