// Fused linear and normalization ops: _addmm_activation, addmv, addbmm,
// _fused_rms_norm, _trilinear (F.bilinear), and F.linear_cross_entropy's
// chunked custom ops (torch_nn::_linear_cross_entropy_batch_chunked and
// _no_reduction, through the proxy executor).
//
// Note [Linear semantics]
// ATen's CPU rules, checked against torch 2.13 eager (gen_ops_reference.py's
// linear cases):
// - _addmm_activation: addmm (beta * self + alpha * mat1 @ mat2, self
//   broadcast to [n, p]) then, in place, relu, or with use_gelu the exact
//   (erf) GELU: ATen's CPU kernel calls gelu without approximate="tanh" (its
//   CUDA cuBLASLt epilogue is the tanh one). Result [n, p] contiguous.
// - addmv: beta * self + alpha * mat @ vec, self broadcast to [n]; addbmm:
//   beta * self + alpha * sum_b batch1[b] @ batch2[b], self broadcast to
//   [n, p]. Both go through the matmul family's gemm (addmm_out): addmv with
//   vec as a [k, 1] view; addbmm as one [n, B*k] @ [B*k, p] product (batch1
//   packed to [n, B, k], batch2 viewed as [B*k, p] when its layout allows,
//   else packed), but float16/bfloat16 as ATen runs them: one addmm per
//   batch into the result, rounded after each (the OpInfo sweep tells the
//   two apart). beta == 0 does not read self. int32 and int64 addbmm take
//   the integer matmul's gemm (ops/int_matmul.h: exact, wrapping in the
//   dtype's width as ATen's does) and integral beta and alpha (a fractional
//   one is refused with ATen's message); other integer dtypes are refused.
// - _fused_rms_norm: over the trailing dims of normalized_shape, rstd =
//   1 / sqrt(mean(x^2) + eps) in the op math type (float for float16 and
//   bfloat16, else the input's), eps None meaning that type's epsilon;
//   output = (x * rstd) rounded to the input's dtype, then times weight
//   (rounded again); output contiguous of the input's dtype, rstd
//   contiguous [leading dims..., 1, ...] of the op math type.
// - _trilinear(i1, i2, i3, expand1..3, sumdim, unroll_dim): each input gets
//   size-1 dims inserted at its expand list (ascending), the three are
//   multiplied (sizes must agree where not expanded: ATen does not broadcast
//   other size-1 dims) and summed over sumdim, which leaves the result
//   (contiguous). F.bilinear calls it as
//   _trilinear(x1, W, x2, [1, 3], [0], [1, 2], [2, 3], unroll_dim=1).
//   Where the result rounds follows ATen (Note [Trilinear rounding]).
// - linear_cross_entropy (the chunked ops): exactly
//   F.cross_entropy(F.linear(input, linear_weight, linear_bias), target,
//   weight, ignore_index, reduction, label_smoothing), which torch 2.13's
//   eager op equals: logits [N, C] through the matmul family's gemm, then per
//   row lse = logsumexp(logits), nll = w[t] (lse - z[t]) and, for label
//   smoothing e, smooth = sum_c w[c] (lse - z[c]); a row whose target is
//   ignore_index counts 0 (its weight too); loss = (1 - e) nll + e / C smooth
//   per row ("none"), summed ("sum"), or for "mean" that sum divided by
//   sum(w[t]) over the rows not ignored (their count without a weight; NaN
//   when every row is ignored). Sums in double. The chunk size and the accumulation policy only
//   shape the eager op's loop; the gradients it can precompute are backward
//   work, refused when asked for (inference graphs ask for none: their
//   outputs are then empty, (0, 0), (0, 0) and (0), as the op's fake kernel).
//   A target outside [0, C) that is not ignore_index is refused (on CUDA
//   its row is skipped: Note [Cross-entropy targets on CUDA] in
//   cuda/ops/linear.cu).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "core/tensor.h"

namespace aotrt::ops {

// Note [Fused oneDNN ops]
// The ops of torch's aoti_torch/c/shim_cpu.h that freezing=True packages call
// (mkldnn._convolution_pointwise and its _binary, in-place binary_ and
// transposed siblings, _linear_pointwise, _linear_pointwise_binary,
// _mkl_linear), with ATen's mkldnn fusion semantics (checked against torch
// 2.13 eager by tests/e2e/test_cpu_freezing.py):
//   out = unary(binary(op(x, W) + bias, other))
// op the tree's convolution or gemm (on the CPU, oneDNN's convolution or
// matmul primitive with the bias, the binary and the activation as post-ops
// where oneDNN can: Note [Fused convolutions] in cpu/conv.cpp, Note [Fused
// linears] in cpu/linear.cpp); binary add, sub, mul or div
// with a same-shaped `other` (alpha None or 1, as ATen requires); unary
// attr "none", relu, sigmoid, tanh, hardswish, hardsigmoid, silu/swish,
// gelu (algorithm "none": erf, or "tanh"), leaky_relu (scalars [slope]),
// hardtanh (scalars [min, max]); anything else is refused naming attr.
// The weights are the plain copies of the package's _mkldnn constants
// (Note [Opaque constants] in shim/tensor_shims.cpp). Outputs: a conv's is
// channels-last (inductor's mkldnn_ir asks make_channels_last_strides_for),
// a linear's row-major [..., N].
enum class Activation {
  kRelu, kGelu, kGeluTanh, kSilu, kHardswish, kHardsigmoid, kLeakyRelu, kHardtanh, kSigmoid,
  kTanh
};
// An activation and its scalars: leaky_relu's slope (a), hardtanh's min and
// max (a, b).
struct PostOp {
  Activation act = Activation::kRelu;
  double a = 0, b = 0;
};
enum class BinaryPost { kAdd, kSub, kMul, kDiv };

// What a fused linear applies to its product (Note [Fused oneDNN ops]):
// unary(binary(x @ W^T + bias, other)).
struct LinearFusion {
  const TensorImpl* other = nullptr;  // the binary's operand, the result's sizes; or null
  BinaryPost binary = BinaryPost::kAdd;
  std::optional<PostOp> unary;
};

// Note [Trilinear rounding]
// ATen's _trilinear does not sum the three-way products at once: for each
// index k of unroll_dim it contracts i1 with i2 over the summed dims where i3
// is expanded (a matmul in the inputs' dtype: accumulated in float for
// float16/bfloat16, rounded to the dtype), contracts that with i3 over the
// other summed dims (rounded again), and adds the result into a zeroed
// output, so that a summed unroll_dim accumulates in the dtype, rounding at
// each k. In float16 the first rounding alone moves F.bilinear's result by an
// ulp or more (the H200's OpInfo sample: 0.0078 from eager when aotrt rounded
// once), so aotrt keeps the same stages, each summed in its accumulation type
// (float for float16/bfloat16, double for float32/float64, int64 wrapping for
// integers) and rounded where ATen's is. Not kept: inside a stage ATen first
// sums alone, in the dtype, a summed dim that only one of the stage's two
// operands has (sumproduct_pair); aotrt sums it with the products, a
// difference of one rounding in that case only.
enum class TrilinearDim : uint8_t {
  kKept,      // in the result
  kFirst,     // summed in the first stage (i3 expanded there)
  kSecond,    // summed in the second stage
  kUnrolled,  // unroll_dim when summed: the stages' results added in the dtype
};

// See Note [Op dispatch] in ops/dispatch.h.
struct LinearKernels {
  // values = act(values), in place (any strides).
  void (*activation)(const PostOp& op, const StridedView& values, const char* fn);
  // values = values op other, in place; other has values' sizes (any
  // strides, its dtype).
  void (*binary)(BinaryPost op, const StridedView& values, const StridedView& other,
                 const char* fn);
  // x and out [rows, inner] views (out contiguous), weight [inner] or null,
  // rstd [rows] (op math type).
  void (*rms_norm)(const StridedView& x, const StridedView* weight, const StridedView& out,
                   const StridedView& rstd, double eps, const char* fn);
  // out[e] = the sum of a[e'] * b[e'] * c[e'] over the summed dims, in the
  // stages and roundings of Note [Trilinear rounding]: a, b, c views of the
  // full shape (stride 0 where expanded), out the full shape with stride 0
  // on the summed dims; roles[d] says what dim d is.
  void (*sum_of_products)(const StridedView& a, const StridedView& b, const StridedView& c,
                          const StridedView& out, std::span<const TrilinearDim> roles,
                          const char* fn);
  // logits dense [N, C]; target int64 [N]; weight [C] (logits' dtype) or
  // null; out: [N] for kNone, else 0-d (logits' dtype). Note [Linear
  // semantics], linear_cross_entropy.
  void (*cross_entropy)(const StridedView& logits, const StridedView& target,
                        const StridedView* weight, int64_t ignore_index, double label_smoothing,
                        int reduction, const StridedView& out, const char* fn);
  // Optional (null: none): linear_pointwise's product and fusion in one
  // library call, x [..., K], weight [N, K], bias [N] or null (checked by
  // the family), the result new row-major [..., N]; null where the backend
  // cannot fuse this one, and the family then runs the gemm and the post-ops
  // apart.
  std::unique_ptr<TensorImpl> (*linear_fused)(const TensorImpl& x, const TensorImpl& weight,
                                              const TensorImpl* bias,
                                              const LinearFusion& fusion) = nullptr;
};

enum LossReduction : int { kLossNone = 0, kLossMean = 1, kLossSum = 2 };

// attr/scalars/algorithm of a fused op: nullopt for "none".
std::optional<PostOp> parse_post_op(std::string_view attr,
                                    std::span<const std::optional<double>> scalars,
                                    std::optional<std::string_view> algorithm, const char* fn);
BinaryPost parse_binary_post(std::string_view attr, std::optional<double> alpha, const char* fn);

// The fused op's epilogue on a fresh result: binary with other (when given),
// then the activation (when given), in place.
void apply_post_ops(const TensorImpl& out, const TensorImpl* other, BinaryPost binary,
                    const std::optional<PostOp>& unary, const char* fn);

// _linear_pointwise(_binary) and _mkl_linear: x [..., K], weight [N, K]
// (plain), bias [N] or null; result [..., N] row-major.
std::unique_ptr<TensorImpl> linear_pointwise(const TensorImpl& x, const TensorImpl& weight,
                                             const TensorImpl* bias, const TensorImpl* other,
                                             BinaryPost binary,
                                             const std::optional<PostOp>& unary, const char* fn);

std::unique_ptr<TensorImpl> addmm_activation(const TensorImpl& self, const TensorImpl& mat1,
                                             const TensorImpl& mat2, double beta, double alpha,
                                             bool use_gelu, const char* fn);
std::unique_ptr<TensorImpl> addmv(const TensorImpl& self, const TensorImpl& mat,
                                  const TensorImpl& vec, double beta, double alpha,
                                  const char* fn);
std::unique_ptr<TensorImpl> addbmm(const TensorImpl& self, const TensorImpl& batch1,
                                   const TensorImpl& batch2, double beta, double alpha,
                                   const char* fn);

struct NormResult {
  std::unique_ptr<TensorImpl> output, rstd;
};
NormResult fused_rms_norm(const TensorImpl& input, std::span<const int64_t> normalized_shape,
                          const TensorImpl* weight, std::optional<double> eps, const char* fn);

std::unique_ptr<TensorImpl> trilinear(const TensorImpl& i1, const TensorImpl& i2,
                                      const TensorImpl& i3, std::span<const int64_t> expand1,
                                      std::span<const int64_t> expand2,
                                      std::span<const int64_t> expand3,
                                      std::span<const int64_t> sumdim, int64_t unroll_dim,
                                      const char* fn);

// reduction "none", "mean" or "sum"; input [N, H], linear_weight [C, H],
// target int64 [N], linear_bias [C] and weight [C] optional.
std::unique_ptr<TensorImpl> linear_cross_entropy(const TensorImpl& input,
                                                 const TensorImpl& linear_weight,
                                                 const TensorImpl& target,
                                                 const TensorImpl* linear_bias,
                                                 const TensorImpl* weight,
                                                 std::string_view reduction, int64_t ignore_index,
                                                 double label_smoothing, const char* fn);

}  // namespace aotrt::ops
