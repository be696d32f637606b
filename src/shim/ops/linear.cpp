// Entry points of the linear family (ops/linear.h), both devices. Handles are
// borrowed; ret* get new owning handles, dropped when null (Note [Unused op
// outputs]). See Note [Op rows].
#include "ops/linear.h"
#include "runtime/proxy_executor.h"
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
         give(ret0, ops::trilinear(args.tensor(i1, "i1"), args.tensor(i2, "i2"),
                                   args.tensor(i3, "i3"),
                                   args.ints(expand1, expand1_len_, "expand1"),
                                   args.ints(expand2, expand2_len_, "expand2"),
                                   args.ints(expand3, expand3_len_, "expand3"),
                                   args.ints(sumdim, sumdim_len_, "sumdim"), unroll_dim, fn)))

// The fused oneDNN linears of torch's aoti_torch/c/shim_cpu.h (Note [Fused
// oneDNN ops]); W is a _mkldnn constant (Note [Opaque constants] in
// shim/tensor_shims.cpp).
AOTRT_OP_CPU(_linear_pointwise,
             (AtenTensorHandle X, AtenTensorHandle W, AtenTensorHandle* B, const char* attr,
              const double** scalars, int64_t scalars_len_, const char** algorithm,
              AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             AOTRT_CHECK(attr != nullptr, kInvalidArgument, fn, ": attr is null");
             const auto unary = ops::parse_post_op(
                 attr, args.optional_scalar_list(scalars, scalars_len_, "scalars"),
                 args.optional_string(algorithm, "algorithm"), fn);
             give(ret0, ops::linear_pointwise(args.tensor(X, "X"), args.tensor(W, "W"),
                                              args.optional_tensor(B, "B"), nullptr,
                                              ops::BinaryPost::kAdd, unary, fn)))

// out = linear(X) attr other (attr add, sub, mul, div).
AOTRT_OP_CPU(_linear_pointwise_binary,
             (AtenTensorHandle X, AtenTensorHandle other, AtenTensorHandle W,
              AtenTensorHandle* B, const char* attr, AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             AOTRT_CHECK(attr != nullptr, kInvalidArgument, fn, ": attr is null");
             const TensorImpl& o = args.tensor(other, "other");
             give(ret0, ops::linear_pointwise(args.tensor(X, "X"), args.tensor(W, "W"),
                                              args.optional_tensor(B, "B"), &o,
                                              ops::parse_binary_post(attr, std::nullopt, fn),
                                              std::nullopt, fn)))

// W is MKL's packed form of origin_W (cblas_sgemm_pack, opaque bytes, not
// read); the product runs on origin_W, the plain weight the op also gets.
// torch 2.13's inductor disables MKL prepacking in AOT mode (its packed
// matrix cannot move; fx_passes/mkldnn_fusion.py), so packages call
// _linear_pointwise instead; this entry serves the declared symbol.
AOTRT_OP_CPU(_mkl_linear,
             (AtenTensorHandle X, AtenTensorHandle W, AtenTensorHandle origin_W,
              AtenTensorHandle* B, int64_t prepack_batch_size, AtenTensorHandle* ret0),
             AOTRT_CHECK_OUT(ret0, fn);
             (void)args.tensor(W, "W");
             (void)prepack_batch_size;
             give(ret0, ops::linear_pointwise(args.tensor(X, "X"), args.tensor(origin_W, "origin_W"),
                                              args.optional_tensor(B, "B"), nullptr,
                                              ops::BinaryPost::kAdd, std::nullopt, fn)))

// F.linear_cross_entropy with chunking options lowers to these custom ops
// (torch/nn/modules/linear_cross_entropy.py); Note [Linear semantics].
namespace {
using runtime::ProxyCall;

std::unique_ptr<TensorImpl> linear_cross_entropy(const ProxyCall& c, std::string_view reduction,
                                                 double label_smoothing) {
  AOTRT_CHECK(c.int_arg("batch_chunk_size") > 0, kInvalidArgument, c.what(),
              ": batch_chunk_size must be positive, got ", c.int_arg("batch_chunk_size"));
  return ops::linear_cross_entropy(c.tensor("input"), c.tensor("linear_weight"), c.tensor("target"),
                                   c.optional_tensor("linear_bias"), c.optional_tensor("weight"),
                                   reduction, c.int_arg("ignore_index"), label_smoothing,
                                   c.what());
}

// An empty output of the rank the op's fake kernel gives a gradient it was
// not asked for.
std::unique_ptr<TensorImpl> no_gradient(const TensorImpl& like, int64_t rank, const char* fn) {
  const std::vector<int64_t> zeros(static_cast<size_t>(rank), 0);
  const std::vector<int64_t> ones(static_cast<size_t>(rank), 1);
  return empty_strided(zeros, ones, like.dtype(), like.device(), fn);
}
}  // namespace

// _linear_cross_entropy_batch_chunked(Tensor input, Tensor linear_weight,
// Tensor target, Tensor? linear_bias, Tensor? weight, str reduction,
// SymInt ignore_index, float label_smoothing, SymInt batch_chunk_size,
// str acc_policy, ScalarType acc_dtype, bool allow_retain_graph,
// bool compute_input_grad, bool compute_linear_weight_grad,
// bool compute_linear_bias_grad) -> (Tensor, Tensor, Tensor, Tensor)
AOTRT_PROXY_OP("torch_nn::_linear_cross_entropy_batch_chunked",
               {"input", "linear_weight", "target", "linear_bias", "weight", "reduction",
                "ignore_index", "label_smoothing", "batch_chunk_size", "acc_policy", "acc_dtype",
                "allow_retain_graph", "compute_input_grad", "compute_linear_weight_grad",
                "compute_linear_bias_grad"},
               runtime::kProxyCpu | runtime::kProxyCuda, [](ProxyCall& c) {
                 for (const char* g : {"compute_input_grad", "compute_linear_weight_grad",
                                       "compute_linear_bias_grad"}) {
                   AOTRT_CHECK(!c.bool_arg(g), kUnsupported, c.what(), ": argument '", g,
                               "' is true: the gradients are backward work, which aotrt does "
                               "not serve");
                 }
                 const std::string reduction = c.string_arg("reduction");
                 AOTRT_CHECK(reduction == "mean" || reduction == "sum", kInvalidArgument,
                             c.what(), ": argument 'reduction' is '", reduction,
                             "'; this op takes 'mean' or 'sum'");
                 auto loss = linear_cross_entropy(c, reduction, c.float_arg("label_smoothing"));
                 const TensorImpl& input = c.tensor("input");
                 c.set_output(0, std::move(loss));
                 c.set_output(1, no_gradient(input, 2, c.what()));
                 c.set_output(2, no_gradient(input, 2, c.what()));
                 c.set_output(3, no_gradient(input, 1, c.what()));
               });

// _linear_cross_entropy_batch_chunked_no_reduction(Tensor input,
// Tensor linear_weight, Tensor target, Tensor? linear_bias, Tensor? weight,
// SymInt ignore_index, SymInt batch_chunk_size, str acc_policy,
// ScalarType acc_dtype) -> Tensor: the per-row loss [N].
AOTRT_PROXY_OP("torch_nn::_linear_cross_entropy_batch_chunked_no_reduction",
               {"input", "linear_weight", "target", "linear_bias", "weight", "ignore_index",
                "batch_chunk_size", "acc_policy", "acc_dtype"},
               runtime::kProxyCpu | runtime::kProxyCuda, [](ProxyCall& c) {
                 c.set_output(0, linear_cross_entropy(c, "none", 0.0));
               });
