#include "ops/linear.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/int_matmul.h"
#include "ops/matmul.h"
#include "ops/pointwise.h"

namespace aotrt::ops {
namespace {

void check_dims(const TensorImpl& t, int64_t dims, const char* name, const char* fn) {
  AOTRT_CHECK(t.dim() == dims, kInvalidArgument, fn, ": ", name, " must be ", dims, "-d, not ",
              t.dim(), "-d");
}

void check_like(const TensorImpl& t, const TensorImpl& first, const char* name,
                const char* first_name, const char* fn) {
  AOTRT_CHECK(t.dtype() == first.dtype(), kInvalidArgument, fn, ": ", name, " is ",
              dtype_name(t.dtype()), ", ", first_name, " ", dtype_name(first.dtype()),
              " (ATen wants one dtype)");
  AOTRT_CHECK(t.device() == first.device(), kInvalidArgument, fn, ": ", name, " is on ",
              t.device().str(), ", ", first_name, " on ", first.device().str());
}

// self broadcast to `sizes` (numpy rules), refused naming it otherwise.
void check_broadcasts(const TensorImpl& self, std::span<const int64_t> sizes, const char* fn) {
  bool ok = self.dim() <= static_cast<int64_t>(sizes.size());
  for (int64_t i = 0; ok && i < self.dim(); ++i) {
    const int64_t s = self.sizes()[self.dim() - 1 - i];
    ok = s == 1 || s == sizes[sizes.size() - 1 - static_cast<size_t>(i)];
  }
  AOTRT_CHECK(ok, kInvalidArgument, fn, ": self of sizes ", sizes_text(self.sizes()),
              " cannot be broadcast to ", sizes_text(sizes));
}

std::unique_ptr<TensorImpl> empty_contiguous(std::span<const int64_t> sizes, ScalarType dtype,
                                             Device device, const char* fn) {
  return empty_strided(sizes, contiguous_strides(sizes), dtype, device, fn);
}

// A view of t's memory with other sizes and strides.
std::unique_ptr<TensorImpl> view_of(const TensorImpl& t, std::span<const int64_t> sizes,
                                    std::span<const int64_t> strides, const char* fn) {
  return make_tensor(t.storage(), sizes, strides, t.storage_offset(), t.dtype(), fn);
}

void check_gemm_dtype(const TensorImpl& t, const char* name, const char* fn) {
  AOTRT_CHECK(is_floating(t.dtype()), kUnsupported, fn, ": ", name, " is ",
              dtype_name(t.dtype()),
              "; the gemm serves float16, bfloat16, float32 and float64");
}

// The device's fused linear (LinearKernels::linear_fused), or null where it
// has none or declines this one.
std::unique_ptr<TensorImpl> linear_fused(const TensorImpl& x, const TensorImpl& weight,
                                         const TensorImpl* bias, const LinearFusion& fusion) {
  const LinearKernels* table = x.device().is_cpu() ? KernelRegistry<LinearKernels>::cpu
                                                    : KernelRegistry<LinearKernels>::cuda;
  if (table == nullptr || table->linear_fused == nullptr) return nullptr;
  return table->linear_fused(x, weight, bias, fusion);
}

}  // namespace

std::unique_ptr<TensorImpl> addmm_activation(const TensorImpl& self, const TensorImpl& mat1,
                                             const TensorImpl& mat2, double beta, double alpha,
                                             bool use_gelu, const char* fn) {
  check_dims(mat1, 2, "mat1", fn);
  check_dims(mat2, 2, "mat2", fn);
  check_like(mat2, mat1, "mat2", "mat1", fn);
  check_like(self, mat1, "self", "mat1", fn);
  check_gemm_dtype(mat1, "mat1", fn);
  AOTRT_CHECK(mat1.sizes()[1] == mat2.sizes()[0], kInvalidArgument, fn, ": mat1 ",
              sizes_text(mat1.sizes()), " and mat2 ", sizes_text(mat2.sizes()),
              " cannot be multiplied");
  const int64_t sizes[] = {mat1.sizes()[0], mat2.sizes()[1]};
  check_broadcasts(self, sizes, fn);
  auto out = empty_contiguous(sizes, mat1.dtype(), mat1.device(), fn);
  addmm_out(*out, self, mat1, mat2, beta, alpha, fn);
  if (out->numel() > 0) {
    kernel(&LinearKernels::activation, out->device(), fn)(
        PostOp{use_gelu ? Activation::kGelu : Activation::kRelu}, strided_view(*out), fn);
  }
  return out;
}

// --- Fused oneDNN ops (Note [Fused oneDNN ops]) -------------------------------------

std::optional<PostOp> parse_post_op(std::string_view attr,
                                    std::span<const std::optional<double>> scalars,
                                    std::optional<std::string_view> algorithm, const char* fn) {
  auto scalar = [&](size_t i) {
    AOTRT_CHECK(i < scalars.size() && scalars[i], kInvalidArgument, fn, ": attr '", attr,
                "' needs scalar ", i, ", which is ", i < scalars.size() ? "None" : "missing");
    return *scalars[i];
  };
  if (attr == "none") return std::nullopt;
  if (attr == "relu") return PostOp{Activation::kRelu};
  if (attr == "sigmoid") return PostOp{Activation::kSigmoid};
  if (attr == "tanh") return PostOp{Activation::kTanh};
  if (attr == "hardswish") return PostOp{Activation::kHardswish};
  if (attr == "hardsigmoid") return PostOp{Activation::kHardsigmoid};
  if (attr == "swish" || attr == "silu") return PostOp{Activation::kSilu};
  if (attr == "leaky_relu") return PostOp{Activation::kLeakyRelu, scalar(0)};
  if (attr == "hardtanh") return PostOp{Activation::kHardtanh, scalar(0), scalar(1)};
  if (attr == "gelu") {
    const std::string_view alg = algorithm.value_or("none");
    AOTRT_CHECK(alg == "none" || alg == "tanh", kInvalidArgument, fn, ": algorithm '", alg,
                "' of gelu is neither 'none' nor 'tanh'");
    return PostOp{alg == "tanh" ? Activation::kGeluTanh : Activation::kGelu};
  }
  AOTRT_FAIL(kUnsupported, fn, ": attr '", attr,
             "' is no fused activation aotrt serves (none, relu, sigmoid, tanh, hardswish, "
             "hardsigmoid, swish, silu, gelu, leaky_relu, hardtanh)");
}

BinaryPost parse_binary_post(std::string_view attr, std::optional<double> alpha, const char* fn) {
  AOTRT_CHECK(!alpha || *alpha == 1.0, kInvalidArgument, fn, ": alpha is ", alpha.value_or(1),
              "; ATen's fused binary takes None or 1");
  if (attr == "add") return BinaryPost::kAdd;
  if (attr == "sub") return BinaryPost::kSub;
  if (attr == "mul") return BinaryPost::kMul;
  if (attr == "div") return BinaryPost::kDiv;
  AOTRT_FAIL(kUnsupported, fn, ": binary_attr '", attr,
             "' is no fused binary op aotrt serves (add, sub, mul, div)");
}

void apply_post_ops(const TensorImpl& out, const TensorImpl* other, BinaryPost binary,
                    const std::optional<PostOp>& unary, const char* fn) {
  if (out.numel() == 0) return;
  if (other != nullptr) {
    AOTRT_CHECK(std::equal(other->sizes().begin(), other->sizes().end(), out.sizes().begin(),
                           out.sizes().end()),
                kInvalidArgument, fn, ": other has sizes ", sizes_text(other->sizes()),
                " but the result ", sizes_text(out.sizes()));
    AOTRT_CHECK(other->device() == out.device(), kInvalidArgument, fn, ": other is on ",
                other->device().str(), ", the result on ", out.device().str());
    kernel(&LinearKernels::binary, out.device(), fn)(binary, strided_view(out),
                                                     strided_view(*other), fn);
  }
  if (unary) kernel(&LinearKernels::activation, out.device(), fn)(*unary, strided_view(out), fn);
}

std::unique_ptr<TensorImpl> linear_pointwise(const TensorImpl& x, const TensorImpl& weight,
                                             const TensorImpl* bias, const TensorImpl* other,
                                             BinaryPost binary,
                                             const std::optional<PostOp>& unary, const char* fn) {
  AOTRT_CHECK(x.dim() >= 1, kInvalidArgument, fn, ": X is 0-d");
  check_dims(weight, 2, "W", fn);
  check_like(weight, x, "W", "X", fn);
  check_gemm_dtype(x, "X", fn);
  const int64_t k = x.sizes()[x.dim() - 1], n = weight.sizes()[0];
  AOTRT_CHECK(weight.sizes()[1] == k, kInvalidArgument, fn, ": X ", sizes_text(x.sizes()),
              " and W ", sizes_text(weight.sizes()), " cannot be multiplied (W is [N, K])");
  if (bias != nullptr) {
    check_like(*bias, x, "B", "X", fn);
    AOTRT_CHECK(bias->dim() == 1 && bias->sizes()[0] == n, kInvalidArgument, fn, ": B has sizes ",
                sizes_text(bias->sizes()), ", not [", n, "]");
  }
  if (auto fused = linear_fused(x, weight, bias, LinearFusion{other, binary, unary})) {
    return fused;
  }
  std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = n;
  auto out = empty_contiguous(out_sizes, x.dtype(), x.device(), fn);
  if (out->numel() > 0) {
    // M from X's leading dims, not numel / K: with K = 0 the result still has
    // M * N elements (the bias, or zeros); out's M * N > 0 bounds it.
    const int64_t m = std::accumulate(x.sizes().begin(), x.sizes().end() - 1, int64_t{1},
                                      std::multiplies<>());
    // X as [M, K]: a view when its layout allows, else a packed copy.
    std::unique_ptr<TensorImpl> packed;
    const TensorImpl* rows = &x;
    if (!is_contiguous(x.sizes(), x.strides())) {
      packed = clone_tensor(x, fn);
      rows = packed.get();
    }
    const int64_t x2_sizes[] = {m, k}, x2_strides[] = {k, 1};
    const int64_t w_sizes[] = {k, n}, w_strides[] = {weight.strides()[1], weight.strides()[0]};
    const int64_t o_sizes[] = {m, n}, o_strides[] = {n, 1};
    auto x2 = view_of(*rows, x2_sizes, x2_strides, fn);
    auto wt = view_of(weight, w_sizes, w_strides, fn);
    auto o2 = view_of(*out, o_sizes, o_strides, fn);
    if (bias != nullptr) {
      addmm_out(*o2, *bias, *x2, *wt, 1.0, 1.0, fn);
    } else {
      mm_out(*o2, *x2, *wt, fn);
    }
  }
  apply_post_ops(*out, other, binary, unary, fn);
  return out;
}

std::unique_ptr<TensorImpl> addmv(const TensorImpl& self, const TensorImpl& mat,
                                  const TensorImpl& vec, double beta, double alpha,
                                  const char* fn) {
  check_dims(mat, 2, "mat", fn);
  check_dims(vec, 1, "vec", fn);
  check_like(vec, mat, "vec", "mat", fn);
  check_like(self, mat, "self", "mat", fn);
  check_gemm_dtype(mat, "mat", fn);
  AOTRT_CHECK(mat.sizes()[1] == vec.sizes()[0], kInvalidArgument, fn, ": mat ",
              sizes_text(mat.sizes()), " and vec ", sizes_text(vec.sizes()),
              " cannot be multiplied");
  const int64_t n = mat.sizes()[0];
  const int64_t sizes[] = {n};
  check_broadcasts(self, sizes, fn);
  auto out = empty_contiguous(sizes, mat.dtype(), mat.device(), fn);
  // The product as addmm's: [n, k] @ [k, 1] into [n, 1], self as [n, 1] or 0-d.
  const int64_t col[] = {n, 1}, col_strides[] = {1, 1};
  const int64_t v_sizes[] = {vec.sizes()[0], 1}, v_strides[] = {vec.strides()[0], 1};
  auto out2 = view_of(*out, col, col_strides, fn);
  auto vec2 = view_of(vec, v_sizes, v_strides, fn);
  if (self.dim() == 1) {
    const int64_t s_sizes[] = {self.sizes()[0], 1}, s_strides[] = {self.strides()[0], 1};
    addmm_out(*out2, *view_of(self, s_sizes, s_strides, fn), mat, *vec2, beta, alpha, fn);
  } else {
    addmm_out(*out2, self, mat, *vec2, beta, alpha, fn);
  }
  return out;
}

std::unique_ptr<TensorImpl> addbmm(const TensorImpl& self, const TensorImpl& batch1,
                                   const TensorImpl& batch2, double beta, double alpha,
                                   const char* fn) {
  check_dims(batch1, 3, "batch1", fn);
  check_dims(batch2, 3, "batch2", fn);
  check_like(batch2, batch1, "batch2", "batch1", fn);
  check_like(self, batch1, "self", "batch1", fn);
  const bool integral = batch1.dtype() == ScalarType::Int32 || batch1.dtype() == ScalarType::Int64;
  if (integral) {
    // ATen: "For integral input tensors, argument beta must not be a
    // floating point number" (the shim's doubles stand for Python ints).
    AOTRT_CHECK(std::floor(beta) == beta, kInvalidArgument, fn,
                ": For integral input tensors, argument beta must not be a floating point number.");
    AOTRT_CHECK(std::floor(alpha) == alpha, kInvalidArgument, fn,
                ": For integral input tensors, argument alpha must not be a floating point number.");
  } else {
    check_gemm_dtype(batch1, "batch1", fn);
  }
  const int64_t b = batch1.sizes()[0], n = batch1.sizes()[1], k = batch1.sizes()[2];
  const int64_t p = batch2.sizes()[2];
  AOTRT_CHECK(batch2.sizes()[0] == b && batch2.sizes()[1] == k, kInvalidArgument, fn,
              ": batch1 ", sizes_text(batch1.sizes()), " and batch2 ",
              sizes_text(batch2.sizes()), " cannot be multiplied batch by batch");
  const int64_t sizes[] = {n, p};
  check_broadcasts(self, sizes, fn);
  auto out = empty_contiguous(sizes, batch1.dtype(), batch1.device(), fn);
  if (b > 0 && (batch1.dtype() == ScalarType::Float16 ||
                batch1.dtype() == ScalarType::BFloat16 || (batch1.device().is_cuda() && !integral))) {
    // float16/bfloat16 (and every dtype on CUDA, where ATen's addbmm is this
    // loop of cuBLAS addmm_) in ATen's order: out = beta * self + alpha *
    // batch1[0] @ batch2[0], then out += alpha * batch1[i] @ batch2[i],
    // rounded after each (the H200 OpInfo sweep saw the one-product order
    // differ from eager by 6e-5 on float32).
    const int64_t m1[] = {n, k}, m1s[] = {batch1.strides()[1], batch1.strides()[2]};
    const int64_t m2[] = {k, p}, m2s[] = {batch2.strides()[1], batch2.strides()[2]};
    for (int64_t i = 0; i < b; ++i) {
      auto x = make_tensor(batch1.storage(), m1, m1s,
                           batch1.storage_offset() + i * batch1.strides()[0], batch1.dtype(), fn);
      auto y = make_tensor(batch2.storage(), m2, m2s,
                           batch2.storage_offset() + i * batch2.strides()[0], batch2.dtype(), fn);
      addmm_out(*out, i == 0 ? self : *out, *x, *y, i == 0 ? beta : 1.0, alpha, fn);
    }
    return out;
  }
  // Otherwise one [n, b*k] @ [b*k, p] product, as ATen's float32 result sums.
  // batch1 packed as [n, b, k] (one copy), read as [n, b*k].
  const int64_t nbk[] = {n, b, k};
  auto a = empty_contiguous(nbk, batch1.dtype(), batch1.device(), fn);
  const int64_t perm_sizes[] = {n, b, k};
  const int64_t perm_strides[] = {batch1.strides()[1], batch1.strides()[0], batch1.strides()[2]};
  copy_tensor(*a, *view_of(batch1, perm_sizes, perm_strides, fn), fn);
  const int64_t bk = checked_mul(b, k, fn);
  const int64_t a_sizes[] = {n, bk}, a_strides[] = {bk, 1};
  auto a2 = view_of(*a, a_sizes, a_strides, fn);
  // batch2 read as [b*k, p] in place when its batches follow each other rows apart.
  std::unique_ptr<TensorImpl> packed;
  const TensorImpl* b2 = &batch2;
  if (batch2.strides()[0] != k * batch2.strides()[1] && b > 1 && k > 1) {
    packed = empty_contiguous(batch2.sizes(), batch2.dtype(), batch2.device(), fn);
    copy_tensor(*packed, batch2, fn);
    b2 = packed.get();
  }
  const int64_t b_sizes[] = {bk, p};
  const int64_t b_strides[] = {k > 1 || b == 1 ? b2->strides()[1] : b2->strides()[0],
                               b2->strides()[2]};
  if (integral) {
    // The integer matmul family's gemm (exact, wrapping), then beta * self +
    // alpha * product in the integer dtype (self not read when beta is 0).
    // Written into the contiguous out, ATen's layout whatever self's strides.
    auto product = int_gemm(*a2, *view_of(*b2, b_sizes, b_strides, fn), fn);
    copy_tensor(*out, beta == 0 ? *mul(*product, alpha, fn)
                                : *add(*mul(self, beta, fn), *product, alpha, fn),
                fn);
    return out;
  }
  addmm_out(*out, self, *a2, *view_of(*b2, b_sizes, b_strides, fn), beta, alpha, fn);
  return out;
}

NormResult fused_rms_norm(const TensorImpl& input, std::span<const int64_t> normalized_shape,
                          const TensorImpl* weight, std::optional<double> eps, const char* fn) {
  const ScalarType t = input.dtype();
  AOTRT_CHECK(is_floating(t), kInvalidArgument, fn,
              ": input must be a floating-point tensor, not ", dtype_name(t));
  const auto nn = static_cast<int64_t>(normalized_shape.size());
  AOTRT_CHECK(nn >= 1 && nn <= input.dim(), kInvalidArgument, fn,
              ": normalized_shape ", sizes_text(normalized_shape),
              " must name 1 to input.dim() trailing dims of input ", sizes_text(input.sizes()));
  for (int64_t i = 0; i < nn; ++i) {
    AOTRT_CHECK(input.sizes()[input.dim() - nn + i] == normalized_shape[i], kInvalidArgument, fn,
                ": normalized_shape ", sizes_text(normalized_shape),
                " is not the trailing sizes of input ", sizes_text(input.sizes()));
  }
  if (weight != nullptr) {
    AOTRT_CHECK(std::vector<int64_t>(weight->sizes().begin(), weight->sizes().end()) ==
                    std::vector<int64_t>(normalized_shape.begin(), normalized_shape.end()),
                kInvalidArgument, fn, ": weight of sizes ", sizes_text(weight->sizes()),
                " must have normalized_shape ", sizes_text(normalized_shape));
    AOTRT_CHECK(is_floating(weight->dtype()), kInvalidArgument, fn,
                ": weight must be floating-point, not ", dtype_name(weight->dtype()));
    AOTRT_CHECK(weight->device() == input.device(), kInvalidArgument, fn, ": weight is on ",
                weight->device().str(), ", input on ", input.device().str());
  }
  const ScalarType math = t == ScalarType::Float64 ? t : ScalarType::Float32;
  const double eps_v = eps.value_or(math == ScalarType::Float64
                                        ? std::numeric_limits<double>::epsilon()
                                        : double{std::numeric_limits<float>::epsilon()});
  NormResult r;
  r.output = empty_contiguous(input.sizes(), t, input.device(), fn);
  std::vector<int64_t> rstd_sizes(input.sizes().begin(), input.sizes().end());
  int64_t rows = 1, inner = 1;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d >= input.dim() - nn) {
      inner *= input.sizes()[d];
      rstd_sizes[d] = 1;
    } else {
      rows *= input.sizes()[d];
    }
  }
  r.rstd = empty_contiguous(rstd_sizes, math, input.device(), fn);
  if (input.numel() == 0) return r;
  // x as [rows, inner]: packed first unless its memory already reads so.
  std::unique_ptr<TensorImpl> packed;
  const TensorImpl* x = &input;
  if (!is_contiguous(input.sizes(), input.strides())) {
    packed = empty_contiguous(input.sizes(), t, input.device(), fn);
    copy_tensor(*packed, input, fn);
    x = packed.get();
  }
  const int64_t flat[] = {rows, inner}, flat_strides[] = {inner, 1};
  auto x2 = view_of(*x, flat, flat_strides, fn);
  auto out2 = view_of(*r.output, flat, flat_strides, fn);
  const int64_t rs[] = {rows}, rs_strides[] = {1};
  auto rstd2 = view_of(*r.rstd, rs, rs_strides, fn);
  std::unique_ptr<TensorImpl> w2;
  std::optional<StridedView> wv;
  if (weight != nullptr) {
    const int64_t ws[] = {inner};
    std::unique_ptr<TensorImpl> wpacked;
    const TensorImpl* w = weight;
    if (!is_contiguous(weight->sizes(), weight->strides())) {
      wpacked = empty_contiguous(weight->sizes(), weight->dtype(), weight->device(), fn);
      copy_tensor(*wpacked, *weight, fn);
      w = wpacked.get();
    }
    w2 = view_of(*w, ws, rs_strides, fn);
    wv = strided_view(*w2);
    kernel(&LinearKernels::rms_norm, input.device(), fn)(strided_view(*x2), &*wv,
                                                          strided_view(*out2),
                                                          strided_view(*rstd2), eps_v, fn);
    return r;
  }
  kernel(&LinearKernels::rms_norm, input.device(), fn)(strided_view(*x2), nullptr,
                                                        strided_view(*out2), strided_view(*rstd2),
                                                        eps_v, fn);
  return r;
}

std::unique_ptr<TensorImpl> trilinear(const TensorImpl& i1, const TensorImpl& i2,
                                      const TensorImpl& i3, std::span<const int64_t> expand1,
                                      std::span<const int64_t> expand2,
                                      std::span<const int64_t> expand3,
                                      std::span<const int64_t> sumdim, int64_t unroll_dim,
                                      const char* fn) {
  check_like(i2, i1, "i2", "i1", fn);
  check_like(i3, i1, "i3", "i1", fn);
  AOTRT_CHECK(!is_complex(i1.dtype()) && i1.dtype() != ScalarType::Bool, kUnsupported, fn,
              ": i1 is ", dtype_name(i1.dtype()),
              "; floating and integer dtypes are served");
  const int64_t total = i1.dim() + static_cast<int64_t>(expand1.size());
  AOTRT_CHECK(unroll_dim >= 0 && unroll_dim < total, kInvalidArgument, fn,
              ": unroll_dim must be in [0, ", total - 1, "], got ", unroll_dim);
  const TensorImpl* ins[] = {&i1, &i2, &i3};
  const std::span<const int64_t> expands[] = {expand1, expand2, expand3};
  const char* names[] = {"expand1", "expand2", "expand3"};
  // Each input's sizes and strides over the total dims (stride 0 where expanded).
  std::vector<int64_t> sizes[3], strides[3];
  std::vector<bool> i3_expanded;  // where i3 gets a size-1 dim (its expand list)
  for (int k = 0; k < 3; ++k) {
    const TensorImpl& t = *ins[k];
    AOTRT_CHECK(t.dim() + static_cast<int64_t>(expands[k].size()) == total, kInvalidArgument,
                fn, ": ", names[k], " gives i", k + 1, " ",
                t.dim() + static_cast<int64_t>(expands[k].size()), " dims, i1 has ", total);
    std::vector<bool> expanded(static_cast<size_t>(total), false);
    for (int64_t e : expands[k]) {
      const int64_t d = wrap_dim(e, total, fn);
      AOTRT_CHECK(d < total, kInvalidArgument, fn, ": ", names[k], " names dim ", e, " of ", total);
      AOTRT_CHECK(!expanded[static_cast<size_t>(d)], kInvalidArgument, fn, ": ", names[k],
                  " names dim ", d, " twice");
      expanded[static_cast<size_t>(d)] = true;
    }
    if (k == 2) i3_expanded = expanded;
    int64_t src = 0;
    for (int64_t d = 0; d < total; ++d) {
      if (expanded[static_cast<size_t>(d)]) {
        sizes[k].push_back(1);
        strides[k].push_back(0);
      } else {
        sizes[k].push_back(t.sizes()[src]);
        strides[k].push_back(t.strides()[src]);
        ++src;
      }
    }
  }
  std::vector<bool> summed(static_cast<size_t>(total), false);
  for (int64_t s : sumdim) {
    // wrap_dim takes 0 dims as 1 (a scalar's dim 0), which no input has here.
    const int64_t d = wrap_dim(s, total, fn);
    AOTRT_CHECK(d < total, kInvalidArgument, fn, ": sumdim names dim ", s, " of ", total);
    summed[static_cast<size_t>(d)] = true;
  }
  std::vector<int64_t> full(static_cast<size_t>(total)), out_sizes;
  for (int64_t d = 0; d < total; ++d) {
    int64_t size = 1;
    for (int k = 0; k < 3; ++k) {
      const int64_t s = sizes[k][static_cast<size_t>(d)];
      if (strides[k][static_cast<size_t>(d)] == 0 && s == 1) continue;  // expanded
      AOTRT_CHECK(size == 1 || s == size, kInvalidArgument, fn, ": the inputs' sizes at dim ",
                  d, " differ (", size, " and ", s, ")");
      size = s;
    }
    full[static_cast<size_t>(d)] = size;
    if (!summed[static_cast<size_t>(d)]) out_sizes.push_back(size);
  }
  for (int k = 0; k < 3; ++k) {
    for (int64_t d = 0; d < total; ++d) {
      if (sizes[k][static_cast<size_t>(d)] != full[static_cast<size_t>(d)]) {
        strides[k][static_cast<size_t>(d)] = 0;  // a size-1 dim read across the full size
      }
    }
  }
  auto out = empty_contiguous(out_sizes, i1.dtype(), i1.device(), fn);
  const std::vector<int64_t> out_contig = contiguous_strides(out_sizes);
  std::vector<int64_t> out_full_strides;
  for (int64_t d = 0, o = 0; d < total; ++d) {
    const bool s = summed[static_cast<size_t>(d)];
    out_full_strides.push_back(s ? 0 : out_contig[static_cast<size_t>(o++)]);
  }
  if (out->numel() == 0) return out;
  StridedView v[3];
  for (int k = 0; k < 3; ++k) {
    v[k] = strided_view(*ins[k]);
    v[k].sizes = full;
    v[k].strides = strides[k];
  }
  StridedView o = strided_view(*out);
  o.sizes = full;
  o.strides = out_full_strides;
  // Note [Trilinear rounding]: which stage sums each dim.
  AOTRT_CHECK(total <= 64, kUnsupported, fn, ": more than 64 dims");
  TrilinearDim roles[64] = {};
  for (int64_t d = 0; d < total; ++d) {
    const auto i = static_cast<size_t>(d);
    if (!summed[i]) {
      roles[i] = TrilinearDim::kKept;
    } else if (d == unroll_dim) {
      roles[i] = TrilinearDim::kUnrolled;
    } else {
      roles[i] = i3_expanded[i] ? TrilinearDim::kFirst : TrilinearDim::kSecond;
    }
  }
  kernel(&LinearKernels::sum_of_products, i1.device(), fn)(
      v[0], v[1], v[2], o, std::span<const TrilinearDim>(roles, static_cast<size_t>(total)), fn);
  return out;
}

std::unique_ptr<TensorImpl> linear_cross_entropy(const TensorImpl& input,
                                                 const TensorImpl& linear_weight,
                                                 const TensorImpl& target,
                                                 const TensorImpl* linear_bias,
                                                 const TensorImpl* weight,
                                                 std::string_view reduction, int64_t ignore_index,
                                                 double label_smoothing, const char* fn) {
  const ScalarType t = input.dtype();
  AOTRT_CHECK(t == ScalarType::Float32 || t == ScalarType::Float64, kUnsupported, fn,
              ": argument 'input' is ", dtype_name(t), "; aotrt serves float32 and float64 here");
  AOTRT_CHECK(input.dim() == 2 && linear_weight.dim() == 2, kInvalidArgument, fn,
              ": expected 2-d 'input' [N, H] and 'linear_weight' [C, H], got ", input.dim(),
              "-d and ", linear_weight.dim(), "-d");
  const int64_t n = input.sizes()[0], h = input.sizes()[1], c = linear_weight.sizes()[0];
  AOTRT_CHECK(linear_weight.sizes()[1] == h && linear_weight.dtype() == t, kInvalidArgument, fn,
              ": argument 'linear_weight' of sizes ", sizes_text(linear_weight.sizes()), " (",
              dtype_name(linear_weight.dtype()), ") does not match 'input' of sizes ",
              sizes_text(input.sizes()), " (", dtype_name(t), ")");
  AOTRT_CHECK(target.dim() == 1 && target.sizes()[0] == n && target.dtype() == ScalarType::Int64,
              kInvalidArgument, fn, ": argument 'target' must be int64 [", n, "], got ",
              dtype_name(target.dtype()), " of sizes ", sizes_text(target.sizes()));
  for (const auto& [vec, name] : {std::pair{linear_bias, "linear_bias"}, std::pair{weight, "weight"}}) {
    if (vec == nullptr) continue;
    AOTRT_CHECK(vec->dim() == 1 && vec->sizes()[0] == c && vec->dtype() == t, kInvalidArgument,
                fn, ": argument '", name, "' must be ", dtype_name(t), " [", c, "], got ",
                dtype_name(vec->dtype()), " of sizes ", sizes_text(vec->sizes()));
  }
  int r = kLossMean;
  if (reduction == "none") {
    r = kLossNone;
  } else if (reduction == "sum") {
    r = kLossSum;
  } else {
    AOTRT_CHECK(reduction == "mean", kInvalidArgument, fn, ": argument 'reduction' is '",
                reduction, "'; expected 'none', 'mean' or 'sum'");
  }
  AOTRT_CHECK(label_smoothing >= 0 && label_smoothing <= 1, kInvalidArgument, fn,
              ": label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
  const int64_t logit_sizes[] = {n, c}, logit_strides[] = {c, 1};
  auto logits = empty_strided(logit_sizes, logit_strides, t, input.device(), fn);
  if (n > 0 && c > 0) {
    // logits = input @ linear_weight^T (+ bias, broadcast over the rows).
    const int64_t wt_sizes[] = {h, c};
    const int64_t wt_strides[] = {linear_weight.strides()[1], linear_weight.strides()[0]};
    auto wt = make_tensor(linear_weight.storage(), wt_sizes, wt_strides,
                          linear_weight.storage_offset(), t, fn);
    if (h == 0) {
      zero_tensor(*logits, fn);
      if (linear_bias != nullptr) copy_tensor(*logits, *linear_bias, fn);
    } else {
      addmm_out(*logits, linear_bias != nullptr ? *linear_bias : *logits, input, *wt,
                linear_bias != nullptr ? 1.0 : 0.0, 1.0, fn);
    }
  }
  const int64_t rows[] = {n}, one[] = {1};
  auto out = r == kLossNone ? empty_strided(rows, one, t, input.device(), fn)
                            : empty_strided({}, {}, t, input.device(), fn);
  AOTRT_CHECK(c > 0 || n == 0, kInvalidArgument, fn, ": linear_weight has no classes");
  std::optional<StridedView> wv;
  if (weight != nullptr) wv = strided_view(*weight);
  kernel(&LinearKernels::cross_entropy, input.device(), fn)(
      strided_view(*logits), strided_view(target), wv ? &*wv : nullptr, ignore_index,
      label_smoothing, r, strided_view(*out), fn);
  return out;
}

}  // namespace aotrt::ops
