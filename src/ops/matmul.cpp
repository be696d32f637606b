#include "ops/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/float8.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/views.h"

namespace aotrt::ops {

// The device of `out` picks the kernels; the backends refuse operands on
// another device, naming them.
void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
            const char* fn) {
  kernel(&MatmulKernels::mm_out, out.device(), fn)(out, self, mat2, fn);
}

void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha, const char* fn) {
  kernel(&MatmulKernels::addmm_out, out.device(), fn)(out, self, mat1, mat2, beta, alpha, fn);
}

// See Note [Matmul with an output dtype].
void mm_dtype_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                  ScalarType out_dtype, const char* fn) {
  AOTRT_CHECK(self.dim() == 2, kInvalidArgument, fn, ": self must be a matrix, got ", self.dim(),
              "-D tensor");
  AOTRT_CHECK(mat2.dim() == 2, kInvalidArgument, fn, ": mat2 must be a matrix, got ", mat2.dim(),
              "-D tensor");
  AOTRT_CHECK(self.sizes()[1] == mat2.sizes()[0], kInvalidArgument, fn,
              ": mat1 and mat2 shapes cannot be multiplied (", self.sizes()[0], "x",
              self.sizes()[1], " and ", mat2.sizes()[0], "x", mat2.sizes()[1], ")");
  AOTRT_CHECK(out_dtype == out.dtype(), kInvalidArgument, fn,
              ": out_dtype must be the same as the dtype of the provided out tensor (out_dtype ",
              dtype_name(out_dtype), ", out ", dtype_name(out.dtype()), ")");
  const ScalarType in = self.dtype();
  AOTRT_CHECK(in == mat2.dtype(), kInvalidArgument, fn, ": input dtypes must be the same (self ",
              dtype_name(in), ", mat2 ", dtype_name(mat2.dtype()), ")");
  const bool widening = out_dtype == ScalarType::Float32 &&
                        (in == ScalarType::Float16 || in == ScalarType::BFloat16);
  AOTRT_CHECK(out_dtype == in || widening, kInvalidArgument, fn,
              ": out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs (inputs ",
              dtype_name(in), ", out_dtype ", dtype_name(out_dtype), ")");
  if (!widening) return mm_out(out, self, mat2, fn);
  kernel(&MatmulKernels::mm_widening_out, out.device(), fn)(out, self, mat2, fn);
}

void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
             const char* fn) {
  kernel(&MatmulKernels::bmm_out, out.device(), fn)(out, self, mat2, fn);
}

void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn) {
  kernel(&MatmulKernels::baddbmm_out, out.device(), fn)(out, self, batch1, batch2, beta, alpha,
                                                         fn);
}

namespace {

bool is_float32_scalar(const TensorImpl& t) {
  return t.dtype() == ScalarType::Float32 && t.numel() == 1;
}

// ATen's rowwise scale of an [outer, K] operand: float32 [outer, 1], contiguous.
bool is_rowwise_scale(const TensorImpl& scale, int64_t outer) {
  return scale.dtype() == ScalarType::Float32 && scale.dim() == 2 &&
         scale.sizes()[0] == outer && scale.sizes()[1] == 1 &&
         (outer <= 1 || scale.strides()[0] == 1);
}

// Which scaling the operands and scales ask for (Note [Scaled matmul]): false
// for tensorwise, true for rowwise; anything else is refused as ATen refuses it.
bool scaled_mm_scaling(const TensorImpl& self, const TensorImpl& mat2, const TensorImpl& scale_a,
                       const TensorImpl& scale_b, const char* fn) {
  const bool fp8 = is_float8(self.dtype()) && is_float8(mat2.dtype());
  if (fp8 && is_float32_scalar(scale_a) && is_float32_scalar(scale_b)) return false;
  const int64_t M = self.sizes()[0], N = mat2.sizes()[1];
  // scale_b [1, N] is the rowwise scale of mat2^T [N, K], transposed.
  const bool b_rowwise = scale_b.dtype() == ScalarType::Float32 && scale_b.dim() == 2 &&
                         scale_b.sizes()[0] == 1 && scale_b.sizes()[1] == N &&
                         (N <= 1 || scale_b.strides()[1] == 1);
  if (fp8 && is_rowwise_scale(scale_a, M) && b_rowwise) return true;
  AOTRT_FAIL(kInvalidArgument, fn,
             ": Invalid scaling configuration. For TensorWise scaling, a and b should be float8, "
             "scales should be float and singletons. For RowWise scaling, a and b should be "
             "float8, scales should be float, scale_a should be (", M, ", 1) and scale_b should be "
             "(1, ", N, "), and both should be contiguous (blockwise and MX scales are not served). "
             "Got mat_a.dtype()=", dtype_name(self.dtype()), ", scale_a.dtype()=",
             dtype_name(scale_a.dtype()), ", scale_a.size()=", sizes_text(scale_a.sizes()),
             ", scale_a.stride()=", sizes_text(scale_a.strides()), ", mat_b.dtype()=",
             dtype_name(mat2.dtype()), ", scale_b.dtype()=", dtype_name(scale_b.dtype()),
             ", scale_b.size()=", sizes_text(scale_b.sizes()), " and scale_b.stride()=",
             sizes_text(scale_b.strides()));
}

void check_scaled_mm_matrices(const TensorImpl& self, const TensorImpl& mat2, const char* fn) {
  AOTRT_CHECK(self.dim() == 2, kInvalidArgument, fn, ": mat1 must be a matrix, got ",
              sizes_text(self.sizes()));
  AOTRT_CHECK(mat2.dim() == 2, kInvalidArgument, fn, ": mat2 must be a matrix, got ",
              sizes_text(mat2.sizes()));
  AOTRT_CHECK(self.sizes()[1] == mat2.sizes()[0], kInvalidArgument, fn,
              ": mat_a and mat_b shapes cannot be multiplied (", self.sizes()[0], "x",
              self.sizes()[1], " and ", mat2.sizes()[0], "x", mat2.sizes()[1], ")");
}

bool grouped_dtype(ScalarType t) {
  return t == ScalarType::BFloat16 || t == ScalarType::Float32 || t == ScalarType::Float16;
}

// The group ends of offs (int32, 1-d), read on the host.
std::vector<int64_t> group_ends(const TensorImpl& offs, const char* fn) {
  AOTRT_CHECK(offs.device().is_cpu(), kUnsupported, fn, ": offs on ", offs.device().str(),
              ": the grouped matmul reads its offsets on the host");
  std::vector<int64_t> ends(static_cast<size_t>(offs.sizes()[0]));
  const auto* base = static_cast<const char*>(offs.data_ptr());
  for (size_t g = 0; g < ends.size(); ++g) {
    int32_t v = 0;
    std::memcpy(&v, base + static_cast<int64_t>(g) * offs.strides()[0] * 4, sizeof v);
    ends[g] = v;
  }
  return ends;
}

std::unique_ptr<TensorImpl> select0(const TensorImpl& t, int64_t g, const char* fn) {
  return squeeze_dim(*narrow(t, 0, g, 1, fn), 0, fn);
}

// ATen's check_valid_strides_and_return_transposed: whether the last two dims
// are column-major (transposed); refuses strides with neither layout.
bool grouped_transposed(const TensorImpl& m, const char* fn) {
  const int64_t d = m.dim() - 1;
  const int64_t alignment = 16 / static_cast<int64_t>(m.itemsize());
  const auto sizes = m.sizes();
  const auto strides = m.strides();
  if (strides[d - 1] == 1 && strides[d] >= std::max<int64_t>(1, sizes[d - 1])) {
    AOTRT_CHECK(strides[d] % alignment == 0, kInvalidArgument, fn,
                ": strides should be multiple of 16 bytes");
    return true;
  }
  if (strides[d] == 1 && strides[d - 1] >= std::max<int64_t>(1, sizes[d])) {
    AOTRT_CHECK(strides[d - 1] % alignment == 0, kInvalidArgument, fn,
                ": strides should be multiple of 16 bytes");
    return false;
  }
  AOTRT_FAIL(kInvalidArgument, fn, ": Invalid strides/sizes, got ", sizes_text(strides),
             " for strides and ", sizes_text(sizes), " for sizes");
}

// ATen's _check_scales_fp8_rowwise: scale of `mat` along its dim `dim` (0: rows of
// mat_a, 1: columns of mat_b), `multiplier` groups of them for 2d x 2d.
void check_rowwise_group_scale(const TensorImpl& mat, const TensorImpl& scale, int dim,
                               int arg, int64_t multiplier, const char* fn) {
  if (mat.dim() == 2) {
    AOTRT_CHECK(scale.dim() == 1, kInvalidArgument, fn, ": scale must be a 1D tensor, but got ",
                scale.dim(), "D, arg ", arg);
    AOTRT_CHECK(scale.is_contiguous(), kInvalidArgument, fn,
                ": scale must be contiguous for arg ", arg);
    AOTRT_CHECK(scale.sizes()[0] == mat.sizes()[dim] * multiplier, kInvalidArgument, fn,
                ": scale must have the same length as mat for arg ", arg, " (", scale.sizes()[0],
                " elements, expected ", mat.sizes()[dim] * multiplier, ")");
  } else {
    AOTRT_CHECK(scale.dim() == 2, kInvalidArgument, fn, ": scale must be a 2D tensor, but got ",
                scale.dim(), "D for arg ", arg);
    AOTRT_CHECK(scale.strides()[1] == 1 || scale.sizes()[1] <= 1, kInvalidArgument, fn,
                ": scale must be contiguous in the last dimension for arg ", arg);
    AOTRT_CHECK(scale.sizes()[0] == mat.sizes()[0], kInvalidArgument, fn,
                ": scale must have the same batch dimension as mat for arg ", arg);
    AOTRT_CHECK(scale.sizes()[1] == mat.sizes()[1 + dim], kInvalidArgument, fn,
                ": scale must have the same first dimension as mat for arg ", arg);
  }
}

// ATen's create_grouped_gemm_output_tensor: sizes, and strides padded to 16 bytes.
std::unique_ptr<TensorImpl> grouped_output(const TensorImpl& mat_a, const TensorImpl& mat_b,
                                           int64_t groups, ScalarType dtype, const char* fn) {
  const bool a2 = mat_a.dim() == 2, b2 = mat_b.dim() == 2;
  std::vector<int64_t> sizes;
  if (a2 && b2) {
    sizes = {groups, mat_a.sizes()[0], mat_b.sizes()[1]};
  } else if (a2) {
    sizes = {mat_a.sizes()[0], mat_b.sizes().back()};
  } else if (b2) {
    sizes = {mat_a.sizes()[1], mat_b.sizes()[1]};
  } else {
    sizes = {mat_a.sizes()[0], mat_a.sizes()[1], mat_b.sizes().back()};
  }
  const int64_t alignment = 16 / static_cast<int64_t>(element_size(dtype));
  const int64_t padded =
      checked_mul(checked_add(sizes.back(), alignment - 1, fn) / alignment, alignment, fn);
  const std::vector<int64_t> strides =
      sizes.size() == 2 ? std::vector<int64_t>{padded, 1}
                        : std::vector<int64_t>{checked_mul(sizes[1], padded, fn), padded, 1};
  return empty_strided(sizes, strides, dtype, mat_a.device(), fn);
}

}  // namespace

// See Note [Scaled matmul].
void scaled_mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                   const TensorImpl& scale_a, const TensorImpl& scale_b, const TensorImpl* bias,
                   const TensorImpl* scale_result, std::optional<ScalarType> out_dtype,
                   bool use_fast_accum, const char* fn) {
  check_scaled_mm_matrices(self, mat2, fn);
  const bool rowwise = scaled_mm_scaling(self, mat2, scale_a, scale_b, fn);
  const int64_t M = self.sizes()[0], N = mat2.sizes()[1];
  AOTRT_CHECK(scale_result == nullptr || is_float32_scalar(*scale_result), kInvalidArgument, fn,
              ": scale_result must be a float scalar, got a ", dtype_name(scale_result->dtype()),
              " tensor of ", sizes_text(scale_result->sizes()));
  AOTRT_CHECK(bias == nullptr || bias->numel() == N, kInvalidArgument, fn, ": Bias must be size ",
              N, " but got ", bias == nullptr ? 0 : bias->numel());
  AOTRT_CHECK(!out_dtype || *out_dtype == out.dtype(), kInvalidArgument, fn,
              ": out_dtype must match output matrix type (out_dtype ", dtype_name(*out_dtype),
              ", out ", dtype_name(out.dtype()), ")");
  AOTRT_CHECK(out.dim() == 2 && out.sizes()[0] == M && out.sizes()[1] == N, kInvalidArgument, fn,
              ": 'out' must be [", M, ", ", N, "], got ", sizes_text(out.sizes()),
              "; aotrt does not resize outputs");
  const ScaledMmArgs args{self,         mat2,      scale_a,        scale_b, bias,
                          scale_result, out_dtype, use_fast_accum, rowwise};
  kernel(&MatmulKernels::scaled_mm_out, out.device(), fn)(out, args, fn);
}

std::unique_ptr<TensorImpl> scaled_mm(const TensorImpl& self, const TensorImpl& mat2,
                                      const TensorImpl& scale_a, const TensorImpl& scale_b,
                                      const TensorImpl* bias, const TensorImpl* scale_result,
                                      std::optional<ScalarType> out_dtype, bool use_fast_accum,
                                      const char* fn) {
  check_scaled_mm_matrices(self, mat2, fn);
  const int64_t sizes[] = {self.sizes()[0], mat2.sizes()[1]};
  auto out = empty_strided(sizes, contiguous_strides(sizes), out_dtype.value_or(self.dtype()),
                           self.device(), fn);
  scaled_mm_out(*out, self, mat2, scale_a, scale_b, bias, scale_result, out_dtype,
                use_fast_accum, fn);
  return out;
}

// See Note [Scaled grouped matmul].
std::unique_ptr<TensorImpl> scaled_grouped_mm(const TensorImpl& mat_a, const TensorImpl& mat_b,
                                              const TensorImpl& scale_a,
                                              const TensorImpl& scale_b, const TensorImpl* offs,
                                              const TensorImpl* bias,
                                              const TensorImpl* scale_result,
                                              std::optional<ScalarType> out_dtype,
                                              bool /*use_fast_accum: float32 sums always*/,
                                              const char* fn) {
  AOTRT_CHECK(mat_a.dim() == 2 || mat_a.dim() == 3, kInvalidArgument, fn, ": mat_a has to be 2 or 3d");
  AOTRT_CHECK(mat_b.dim() == 2 || mat_b.dim() == 3, kInvalidArgument, fn, ": mat_b has to be 2 or 3d");
  AOTRT_CHECK(!grouped_transposed(mat_a, fn), kInvalidArgument, fn,
              ": Expected mat1 to not be transposed");
  AOTRT_CHECK(grouped_transposed(mat_b, fn), kInvalidArgument, fn,
              ": Expected mat2 to be transposed");
  const bool a2 = mat_a.dim() == 2, b2 = mat_b.dim() == 2;
  if (!a2 || !b2) {
    AOTRT_CHECK(mat_a.sizes().back() == mat_b.sizes()[mat_b.dim() - 2], kInvalidArgument, fn,
                ": contraction dimension of mat_a and mat_b must match");
  }
  AOTRT_CHECK(mat_a.sizes().back() % 16 == 0, kInvalidArgument, fn,
              ": Expected trailing dimension of mat_a to be divisible by 16 but got mat1 shape: (",
              sizes_text(mat_a.sizes()), ").");
  AOTRT_CHECK(mat_b.sizes()[mat_b.dim() - 2] % 16 == 0 && mat_b.sizes().back() % 16 == 0,
              kInvalidArgument, fn,
              ": Expected mat_b shape to be divisible by 16 but got mat_b shape: (",
              sizes_text(mat_b.sizes()), ").");
  AOTRT_CHECK(bias == nullptr, kInvalidArgument, fn, ": Bias not supported yet");
  AOTRT_CHECK(scale_result == nullptr, kInvalidArgument, fn, ": Scale result not supported yet");
  AOTRT_CHECK((offs != nullptr) == (a2 || b2), kInvalidArgument, fn,
              ": Have to provide offsets if there is a 2d matrix");
  if (offs != nullptr) {
    AOTRT_CHECK(offs->dim() == 1, kInvalidArgument, fn, ": offs has to be 1D");
    AOTRT_CHECK(offs->dtype() == ScalarType::Int32, kInvalidArgument, fn,
                ": Offsets have to be int32");
  }
  // float8_e8m0fnu (MXFP8's scales) is no dtype of aotrt's tensors: only float32 reaches here.
  AOTRT_CHECK(scale_a.dtype() == ScalarType::Float32 && scale_b.dtype() == ScalarType::Float32,
              kInvalidArgument, fn,
              ": For FP8 tensorwise and rowwise, both scales must both be float32 tensors. For "
              "MXFP8, scales must both be float8_e8m0fnu tensors.");
  const int64_t multiplier = a2 && b2 ? offs->sizes()[0] : 1;
  check_rowwise_group_scale(mat_a, scale_a, 0, 0, multiplier, fn);
  check_rowwise_group_scale(mat_b, scale_b, 1, 1, multiplier, fn);
  const ScalarType dtype = out_dtype.value_or(ScalarType::BFloat16);
  AOTRT_CHECK(dtype == ScalarType::BFloat16, kInvalidArgument, fn,
              ": Only bf16 high precision output types are supported for grouped gemm");
  AOTRT_CHECK(mat_a.dtype() == ScalarType::Float8_e4m3fn &&
                  mat_b.dtype() == ScalarType::Float8_e4m3fn,
              kInvalidArgument, fn, ": Expected inputs of E4M3 FP8 type but got mat_a.dtype=",
              dtype_name(mat_a.dtype()), " and mat_b.dtype=", dtype_name(mat_b.dtype()), ".");
  const int64_t groups = a2 && b2 ? offs->sizes()[0] : a2 ? mat_b.sizes()[0] : mat_a.sizes()[0];
  if (a2 != b2) {
    AOTRT_CHECK(offs->sizes()[0] == groups, kInvalidArgument, fn,
                ": matrix batch sizes have to match (", groups, " groups, offs has ",
                offs->sizes()[0], ")");
  } else if (!a2) {
    AOTRT_CHECK(mat_a.sizes()[0] == mat_b.sizes()[0], kInvalidArgument, fn,
                ": batched dimension has to match");
  }
  AOTRT_CHECK(groups < 1024, kInvalidArgument, fn, ": Can't process more than 1024 groups");
  for (const auto& [t, name] : {std::pair{&mat_b, "mat_b"}, {&scale_a, "scale_a"},
                                {&scale_b, "scale_b"}, {offs, "offs"}}) {
    AOTRT_CHECK(t == nullptr || t->device() == mat_a.device(), kInvalidArgument, fn, ": '", name,
                "' is on ", t->device().str(), ", mat_a on ", mat_a.device().str(),
                " (offs stays on the operands' device: the kernel reads it there)");
  }
  auto out = grouped_output(mat_a, mat_b, groups, dtype, fn);
  zero_tensor(*out, fn);
  if (out->numel() == 0 || groups == 0) return out;
  // The kernels read offs as dense int32 ends: a strided one is copied on the device
  // (a copy queued on the stream, no host wait).
  std::unique_ptr<TensorImpl> dense_offs;
  if (offs != nullptr && !offs->is_contiguous()) {
    dense_offs = empty_strided(offs->sizes(), contiguous_strides(offs->sizes()),
                               ScalarType::Int32, offs->device(), fn);
    copy_tensor(*dense_offs, *offs, fn);
    offs = dense_offs.get();
  }
  kernel(&MatmulKernels::scaled_grouped_mm, mat_a.device(), fn)(*out, mat_a, mat_b, scale_a,
                                                                scale_b, offs, fn);
  return out;
}

// See Note [Grouped matmul].
std::unique_ptr<TensorImpl> grouped_mm(const TensorImpl& mat_a, const TensorImpl& mat_b,
                                       const TensorImpl* offs, const TensorImpl* bias,
                                       std::optional<ScalarType> out_dtype, const char* fn) {
  AOTRT_CHECK(grouped_dtype(mat_a.dtype()), kInvalidArgument, fn,
              ": Expected mat_a to be Float32, BFloat16 or Float16 matrix, got ",
              dtype_name(mat_a.dtype()));
  AOTRT_CHECK(grouped_dtype(mat_b.dtype()), kInvalidArgument, fn,
              ": Expected mat_b to be Float32, BFloat16 or Float16 matrix, got ",
              dtype_name(mat_b.dtype()));
  AOTRT_CHECK(mat_a.dim() == 2 || mat_a.dim() == 3, kInvalidArgument, fn, ": mat_a has to be 2 or 3d");
  AOTRT_CHECK(mat_b.dim() == 2 || mat_b.dim() == 3, kInvalidArgument, fn, ": mat_b has to be 2 or 3d");
  const bool a2 = mat_a.dim() == 2, b2 = mat_b.dim() == 2;
  if (!a2 || !b2) {
    AOTRT_CHECK(mat_a.sizes().back() == mat_b.sizes()[mat_b.dim() - 2], kInvalidArgument, fn,
                ": contraction dimension of mat_a and mat_b must match");
  }
  (void)grouped_transposed(mat_a, fn);  // either layout; refuses the rest
  (void)grouped_transposed(mat_b, fn);
  AOTRT_CHECK((offs != nullptr) == (a2 || b2), kInvalidArgument, fn,
              ": Have to provide offsets if there is a 2d matrix, or no offset if both matrices "
              "are 3d");
  if (offs != nullptr) {
    AOTRT_CHECK(offs->dim() == 1, kInvalidArgument, fn, ": offs has to be 1D");
    AOTRT_CHECK(offs->dtype() == ScalarType::Int32, kInvalidArgument, fn,
                ": Offsets have to be int32");
  }
  AOTRT_CHECK(bias == nullptr, kInvalidArgument, fn, ": Bias not supported yet");
  const ScalarType dtype = out_dtype.value_or(mat_a.dtype());
  AOTRT_CHECK(dtype == mat_a.dtype(), kInvalidArgument, fn,
              ": Grouped gemm output dtype must match `mat_a` dtype");
  AOTRT_CHECK(mat_b.dtype() == mat_a.dtype(), kInvalidArgument, fn,
              ": expected mat_a and mat_b to have the same dtype, but got: ",
              dtype_name(mat_a.dtype()), " != ", dtype_name(mat_b.dtype()));

  // ATen's create_grouped_gemm_output_tensor: sizes, and strides padded to 16 bytes.
  const int64_t groups = offs != nullptr ? offs->sizes()[0] : 0;
  std::vector<int64_t> sizes;
  if (a2 && b2) {
    sizes = {groups, mat_a.sizes()[0], mat_b.sizes()[1]};
  } else if (a2) {
    AOTRT_CHECK(groups == mat_b.sizes()[0], kInvalidArgument, fn, ": matrix batch sizes have to match");
    sizes = {mat_a.sizes()[0], mat_b.sizes().back()};
  } else if (b2) {
    AOTRT_CHECK(groups == mat_a.sizes()[0], kInvalidArgument, fn, ": matrix batch sizes have to match");
    sizes = {mat_a.sizes()[1], mat_b.sizes()[1]};
  } else {
    AOTRT_CHECK(mat_a.sizes()[0] == mat_b.sizes()[0], kInvalidArgument, fn,
                ": batched dimension has to match");
    sizes = {mat_a.sizes()[0], mat_a.sizes()[1], mat_b.sizes().back()};
  }
  const int64_t alignment = 16 / static_cast<int64_t>(element_size(dtype));
  const int64_t padded =
      checked_mul(checked_add(sizes.back(), alignment - 1, fn) / alignment, alignment, fn);
  const std::vector<int64_t> strides =
      sizes.size() == 2 ? std::vector<int64_t>{padded, 1}
                        : std::vector<int64_t>{checked_mul(sizes[1], padded, fn), padded, 1};
  if (!mat_a.device().is_cpu()) {  // the device kernel reads offs where it runs
    for (const auto& [t, name] : {std::pair{&mat_b, "mat_b"}, {offs, "offs"}}) {
      AOTRT_CHECK(t == nullptr || t->device() == mat_a.device(), kInvalidArgument, fn, ": '",
                  name, "' is on ", t->device().str(), ", mat_a on ", mat_a.device().str(),
                  " (offs stays on the operands' device: the kernel reads it there)");
    }
  }
  auto out = empty_strided(sizes, strides, dtype, mat_a.device(), fn);
  zero_tensor(*out, fn);
  if (!mat_a.device().is_cpu()) {
    if (out->numel() == 0) return out;
    // The kernel reads offs as dense int32 ends: a strided one is copied on the device
    // (a copy queued on the stream, no host wait).
    std::unique_ptr<TensorImpl> dense_offs;
    if (offs != nullptr && !offs->is_contiguous()) {
      dense_offs = empty_strided(offs->sizes(), contiguous_strides(offs->sizes()),
                                 ScalarType::Int32, offs->device(), fn);
      copy_tensor(*dense_offs, *offs, fn);
      offs = dense_offs.get();
    }
    kernel(&MatmulKernels::grouped_mm, mat_a.device(), fn)(*out, mat_a, mat_b, offs, fn);
    return out;
  }
  if (!a2 && !b2) {
    bmm_out(*out, mat_a, mat_b, fn);
    return out;
  }
  const std::vector<int64_t> ends = group_ends(*offs, fn);
  int64_t start = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t end = ends[static_cast<size_t>(g)];
    if (a2 && !b2) {
      mm_out(*slice(*out, 0, start, end, 1, fn), *slice(mat_a, 0, start, end, 1, fn),
             *select0(mat_b, g, fn), fn);
    } else if (b2 && !a2) {
      mm_out(*slice(*out, 1, start, end, 1, fn), *select0(mat_a, g, fn),
             *slice(mat_b, 1, start, end, 1, fn), fn);
    } else {
      mm_out(*select0(*out, g, fn), *slice(mat_a, 1, start, end, 1, fn),
             *slice(mat_b, 0, start, end, 1, fn), fn);
    }
    start = end;
  }
  return out;
}

}  // namespace aotrt::ops
