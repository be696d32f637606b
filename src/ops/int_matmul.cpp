// The integer matmul family's semantics: see Note [Integer matmul semantics].
#include "ops/int_matmul.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {
namespace {

// t as a contiguous tensor of dtype: t itself (a new handle on its memory)
// when it already is one, else a packed copy. The kernels only read it.
std::unique_ptr<TensorImpl> dense(const TensorImpl& t, ScalarType dtype, const char* fn) {
  const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  if (t.dtype() == dtype && t.is_contiguous()) {
    return make_tensor(t.storage(), sizes, t.strides(), t.storage_offset(), dtype, fn);
  }
  auto out = empty_strided(sizes, contiguous_strides(sizes), dtype, t.device(), fn);
  copy_tensor(*out, t, fn);
  return out;
}

void check_dtype(const TensorImpl& t, ScalarType want, const char* name, const char* fn) {
  AOTRT_CHECK(t.dtype() == want, kInvalidArgument, fn, ": expected '", name, "' to be ",
              dtype_name(want), ", but got ", dtype_name(t.dtype()));
}

bool is_float_dtype(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::BFloat16 || t == ScalarType::Float16;
}

// ATen's capability choice (DispatchStub's): the environment's when it names
// one, else AVX512 with VL, BW, DQ and FMA, else AVX2 with FMA, else DEFAULT.
Int4PackLayout detect_int4_pack_layout() {
#if defined(__x86_64__)
  if (const char* env = std::getenv("ATEN_CPU_CAPABILITY"); env != nullptr) {
    const std::string v(env);  // ATen compares case-sensitively and ignores other values
    if (v == "default") return kInt4PackDefault;
    if (v == "avx2") return kInt4PackAvx2;
    if (v == "avx512") return kInt4PackAvx512;
  }
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("fma");
  if (fma && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq")) {
    return kInt4PackAvx512;
  }
  if (fma && __builtin_cpu_supports("avx2")) return kInt4PackAvx2;
  return kInt4PackDefault;
#else
  return kInt4PackNeon;
#endif
}

thread_local const Int4PackLayout* t_int4_layout_override = nullptr;

}  // namespace

Int4PackLayout host_int4_pack_layout() {
  if (t_int4_layout_override != nullptr) return *t_int4_layout_override;
  static const Int4PackLayout host = detect_int4_pack_layout();
  return host;
}

Int4PackLayoutOverride::Int4PackLayoutOverride(Int4PackLayout layout)
    : previous_(t_int4_layout_override), layout_(layout) {
  t_int4_layout_override = &layout_;
}

Int4PackLayoutOverride::~Int4PackLayoutOverride() { t_int4_layout_override = previous_; }

void int_mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                const char* fn) {
  AOTRT_CHECK(self.dim() == 2 && mat2.dim() == 2, kInvalidArgument, fn,
              ": Expected self and mat2 to be 2D, got ", self.dim(), "D and ", mat2.dim(), "D");
  AOTRT_CHECK(self.sizes()[1] == mat2.sizes()[0], kInvalidArgument, fn,
              ": self.size(1) needs to match mat2.size(0) but got ", self.sizes()[1], " and ",
              mat2.sizes()[0]);
  check_dtype(self, ScalarType::Int8, "self", fn);
  check_dtype(mat2, ScalarType::Int8, "mat2", fn);
  check_dtype(out, ScalarType::Int32, "out", fn);
  const int64_t m = self.sizes()[0], n = mat2.sizes()[1];
  AOTRT_CHECK(out.dim() == 2 && out.sizes()[0] == m && out.sizes()[1] == n, kInvalidArgument, fn,
              ": 'out' must be [", m, ", ", n, "]; aotrt does not resize outputs");
  if (out.numel() == 0) return;
  const int64_t sizes[] = {m, n};
  auto result =
      empty_strided(sizes, contiguous_strides(sizes), ScalarType::Int32, out.device(), fn);
  kernel(&IntMatmulKernels::int_mm, out.device(), fn)(*result, *dense(self, ScalarType::Int8, fn),
                                                      *dense(mat2, ScalarType::Int8, fn));
  copy_tensor(out, *result, fn);
}

std::unique_ptr<TensorImpl> int_gemm(const TensorImpl& a, const TensorImpl& b, const char* fn) {
  AOTRT_CHECK(a.dim() == 2 && b.dim() == 2 && a.sizes()[1] == b.sizes()[0], kInvalidArgument, fn,
              ": integer matmul of ", sizes_text(a.sizes()), " and ", sizes_text(b.sizes()));
  AOTRT_CHECK(a.dtype() == ScalarType::Int32 || a.dtype() == ScalarType::Int64, kUnsupported, fn,
              ": the integer matmul serves int32 and int64 (and int8 x int8 into int32), not ",
              dtype_name(a.dtype()));
  check_dtype(b, a.dtype(), "mat2", fn);
  const int64_t sizes[] = {a.sizes()[0], b.sizes()[1]};
  auto out = empty_strided(sizes, contiguous_strides(sizes), a.dtype(), a.device(), fn);
  if (out->numel() == 0) return out;
  kernel(&IntMatmulKernels::int_mm, a.device(), fn)(*out, *dense(a, a.dtype(), fn),
                                                    *dense(b, b.dtype(), fn));
  return out;
}

std::unique_ptr<TensorImpl> weight_int8pack_mm(const TensorImpl& self, const TensorImpl& mat2,
                                               const TensorImpl& scales, const char* fn) {
  AOTRT_CHECK(self.dtype() == ScalarType::Float32 || self.dtype() == ScalarType::BFloat16 ||
                  self.dtype() == ScalarType::Float16,
              kInvalidArgument, fn, ": expected A to be f32, f16 or bf16 tensor, got ",
              dtype_name(self.dtype()));
  check_dtype(mat2, ScalarType::Int8, "B", fn);
  check_dtype(scales, self.dtype(), "scales", fn);
  AOTRT_CHECK(self.dim() == 2 && mat2.dim() == 2 && scales.dim() == 1, kInvalidArgument, fn,
              ": expected A and B 2D and scales 1D");
  const int64_t M = self.sizes()[0], K = self.sizes()[1], N = mat2.sizes()[0];
  AOTRT_CHECK(mat2.sizes()[1] == K, kInvalidArgument, fn, ": expected B.size(1) == ", K);
  AOTRT_CHECK(scales.sizes()[0] == N, kInvalidArgument, fn, ": expected scales.size(0) == ", N);
  const int64_t sizes[] = {M, N};
  auto out = empty_strided(sizes, contiguous_strides(sizes), self.dtype(), self.device(), fn);
  if (out->numel() == 0) return out;
  auto acc =
      empty_strided(sizes, contiguous_strides(sizes), ScalarType::Float32, self.device(), fn);
  kernel(&IntMatmulKernels::int8_weight_mm, self.device(), fn)(
      *acc, *dense(self, ScalarType::Float32, fn), *dense(mat2, ScalarType::Int8, fn),
      *dense(scales, ScalarType::Float32, fn));
  copy_tensor(*out, *acc, fn);
  return out;
}

std::unique_ptr<TensorImpl> convert_weight_to_int4pack(const TensorImpl& self, const char* fn) {
  AOTRT_CHECK(self.dim() == 2, kInvalidArgument, fn, ": expect weight to be 2D tensor, got ",
              sizes_text(self.sizes()));
  check_dtype(self, ScalarType::Int32, "weight", fn);
  const int64_t N = self.sizes()[0], K = self.sizes()[1];
  AOTRT_CHECK(N % 16 == 0, kInvalidArgument, fn, ": expect N to be dividable by 16, got ", N);
  AOTRT_CHECK(K % 2 == 0, kInvalidArgument, fn, ": expect K to be dividable by 2, got ", K);
  const int64_t sizes[] = {N, K / 2};
  auto out = empty_strided(sizes, contiguous_strides(sizes), ScalarType::UInt8, self.device(), fn);
  if (out->numel() == 0) return out;
  kernel(&IntMatmulKernels::int4_pack, self.device(), fn)(
      *out, *dense(self, ScalarType::Int32, fn), host_int4_pack_layout());
  return out;
}

std::unique_ptr<TensorImpl> weight_int4pack_mm(const TensorImpl& self, const TensorImpl& mat2,
                                               const TensorImpl& group_size,
                                               const TensorImpl& scale_zeros, const char* fn) {
  AOTRT_CHECK(is_float_dtype(self.dtype()), kInvalidArgument, fn,
              ": expect A to be either 32-bit or 16-bit float tensor, got ",
              dtype_name(self.dtype()));
  AOTRT_CHECK(self.dim() == 2, kInvalidArgument, fn, ": expect A to be 2D tensor, got ",
              sizes_text(self.sizes()));
  check_dtype(mat2, ScalarType::UInt8, "B", fn);
  AOTRT_CHECK(mat2.dim() == 2, kInvalidArgument, fn, ": expect B to be 2D tensor, got ",
              sizes_text(mat2.sizes()));
  const int64_t M = self.sizes()[0], K = self.sizes()[1], N = mat2.sizes()[0];
  AOTRT_CHECK(K % 2 == 0 && mat2.sizes()[1] == K / 2, kInvalidArgument, fn,
              ": expect B.size(1) to be K/2 with K = A.size(1) = ", K, " even, got B ",
              sizes_text(mat2.sizes()));
  AOTRT_CHECK(N % 16 == 0, kInvalidArgument, fn,
              ": expect N = B.size(0) to be a multiple of 16 (the packed blocks), got ", N);
  AOTRT_CHECK(group_size.numel() == 1 && group_size.device().is_cpu() &&
                  (group_size.dtype() == ScalarType::Int64 ||
                   group_size.dtype() == ScalarType::Int32),
              kInvalidArgument, fn,
              ": expect qGroupSize to be one int64 on the CPU, got a ", dtype_name(group_size.dtype()),
              " tensor of ", sizes_text(group_size.sizes()));
  const int64_t g =
      *static_cast<const int64_t*>(dense(group_size, ScalarType::Int64, fn)->data_ptr());
  AOTRT_CHECK(g == 32 || g == 64 || g == 128 || g == 256, kInvalidArgument, fn,
              ": expect qGroupSize to be 32, 64, 128 or 256, got ", g);
  AOTRT_CHECK(K % g == 0, kInvalidArgument, fn,
              ": expect K to be divisible by qGroupSize, got K:", K, ", qGroupSize:", g);
  check_dtype(scale_zeros, self.dtype(), "qScaleAndZeros", fn);
  AOTRT_CHECK(scale_zeros.dim() == 3 && scale_zeros.sizes()[0] == K / g &&
                  scale_zeros.sizes()[1] == N && scale_zeros.sizes()[2] == 2,
              kInvalidArgument, fn, ": expect qScaleAndZeros to be [", K / g, ", ", N,
              ", 2] (K/qGroupSize, N, 2), got ", sizes_text(scale_zeros.sizes()));
  const int64_t sizes[] = {M, N};
  auto out = empty_strided(sizes, contiguous_strides(sizes), self.dtype(), self.device(), fn);
  if (out->numel() == 0) return out;
  auto acc =
      empty_strided(sizes, contiguous_strides(sizes), ScalarType::Float32, self.device(), fn);
  kernel(&IntMatmulKernels::int4_weight_mm, self.device(), fn)(
      *acc, *dense(self, ScalarType::Float32, fn), *dense(mat2, ScalarType::UInt8, fn), g,
      *dense(scale_zeros, ScalarType::Float32, fn), host_int4_pack_layout(), fn);
  copy_tensor(*out, *acc, fn);
  return out;
}

}  // namespace aotrt::ops
