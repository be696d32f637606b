// aoti_torch_cpu_* fallback ops: matrix products and convolution, served by
// the CPU backend's library ops (cpu/ops.h). Every handle argument is
// borrowed; the convolution returns a new owning handle in ret0.
#include <span>
#include <vector>

#include "core/error.h"
#include "core/handles.h"
#include "cpu/ops.h"
#include "shim/args.h"
#include "shim/boundary.h"

using namespace aotrt;


extern "C" {

AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                     AtenTensorHandle mat2) {
  return shim_boundary(__func__, [&] {
    cpu::mm_out(handle_get_defined(out, "aoti_torch_cpu_mm_out: argument 'out'"),
                handle_get_defined(self, "aoti_torch_cpu_mm_out: argument 'self'"),
                handle_get_defined(mat2, "aoti_torch_cpu_mm_out: argument 'mat2'"));
  });
}

AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                        AtenTensorHandle mat1, AtenTensorHandle mat2,
                                        double beta, double alpha) {
  return shim_boundary(__func__, [&] {
    cpu::addmm_out(handle_get_defined(out, "aoti_torch_cpu_addmm_out: argument 'out'"),
                   handle_get_defined(self, "aoti_torch_cpu_addmm_out: argument 'self'"),
                   handle_get_defined(mat1, "aoti_torch_cpu_addmm_out: argument 'mat1'"),
                   handle_get_defined(mat2, "aoti_torch_cpu_addmm_out: argument 'mat2'"), beta,
                   alpha);
  });
}

AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                      AtenTensorHandle mat2) {
  return shim_boundary(__func__, [&] {
    cpu::bmm_out(handle_get_defined(out, "aoti_torch_cpu_bmm_out: argument 'out'"),
                 handle_get_defined(self, "aoti_torch_cpu_bmm_out: argument 'self'"),
                 handle_get_defined(mat2, "aoti_torch_cpu_bmm_out: argument 'mat2'"));
  });
}

AOTITorchError aoti_torch_cpu_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                          AtenTensorHandle batch1, AtenTensorHandle batch2,
                                          double beta, double alpha) {
  return shim_boundary(__func__, [&] {
    cpu::baddbmm_out(
        handle_get_defined(out, "aoti_torch_cpu_baddbmm_out: argument 'out'"),
        handle_get_defined(self, "aoti_torch_cpu_baddbmm_out: argument 'self'"),
        handle_get_defined(batch1, "aoti_torch_cpu_baddbmm_out: argument 'batch1'"),
        handle_get_defined(batch2, "aoti_torch_cpu_baddbmm_out: argument 'batch2'"), beta,
        alpha);
  });
}

// bias is optional: a null pointer, a pointer to a null handle, or a handle
// to an undefined tensor all mean no bias.
AOTITorchError aoti_torch_cpu_convolution(AtenTensorHandle input, AtenTensorHandle weight,
                                          AtenTensorHandle* bias, const int64_t* stride,
                                          int64_t stride_len_, const int64_t* padding,
                                          int64_t padding_len_, const int64_t* dilation,
                                          int64_t dilation_len_, int32_t transposed,
                                          const int64_t* output_padding,
                                          int64_t output_padding_len_, int64_t groups,
                                          AtenTensorHandle* ret0) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_cpu_convolution";
    AOTRT_CHECK_OUT(ret0, fn);
    const TensorImpl& in =
        handle_get_defined(input, "aoti_torch_cpu_convolution: argument 'input'");
    const TensorImpl& w =
        handle_get_defined(weight, "aoti_torch_cpu_convolution: argument 'weight'");
    const TensorImpl* b = optional_tensor(bias, "aoti_torch_cpu_convolution: argument 'bias'");
    const ConvParams p = conv_params(stride, stride_len_, padding, padding_len_, dilation,
                                     dilation_len_, transposed, output_padding,
                                     output_padding_len_, groups, fn);
    *ret0 = handle_register(cpu::convolution(in, w, b, p));
  });
}

}  // extern "C"
