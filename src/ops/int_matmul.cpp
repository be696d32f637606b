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
#include "ops/views.h"

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

// The device's table, or null (the optional entries are read from it directly).
const IntMatmulKernels* table_of(Device device) {
  return device.is_cpu() ? KernelRegistry<IntMatmulKernels>::cpu
                         : KernelRegistry<IntMatmulKernels>::cuda;
}

// Note [Dynamic int4 matmul]: the layout aotrt reads is ATen's fallback one,
// which an Arm host with KleidiAI replaces by its own.
void check_dyn_quant_host(const char* fn) {
#if !defined(__x86_64__)
  AOTRT_FAIL(kUnsupported, fn,
             ": on this architecture ATen packs the weight in KleidiAI's layout, which only "
             "torch's kernels read; aotrt serves the x86 layout (ATen's fallback) only");
#else
  (void)fn;
#endif
}

// ATen's rule: block_size is in_features, or a multiple of 32 that divides it.
void check_dyn_quant_block(int64_t block_size, int64_t in_features, int64_t out_features,
                           const char* fn) {
  AOTRT_CHECK(in_features >= 0 && out_features >= 0, kInvalidArgument, fn,
              ": in_features and out_features must not be negative, got ", in_features, " and ",
              out_features);
  AOTRT_CHECK(block_size > 0 && (block_size == in_features ||
                                 (block_size % 32 == 0 && in_features % block_size == 0)),
              kInvalidArgument, fn, ": Group size should be multiple of 32, in_features [",
              in_features, "]. Provided ", block_size);
}

}  // namespace

std::unique_ptr<TensorImpl> dyn_quant_pack_4bit_weight(const TensorImpl& weights,
                                                       const TensorImpl& scales_zeros,
                                                       const TensorImpl* bias, int64_t block_size,
                                                       int64_t in_features, int64_t out_features,
                                                       const char* fn) {
  check_dyn_quant_host(fn);
  check_dtype(weights, ScalarType::UInt8, "weights", fn);
  check_dyn_quant_block(block_size, in_features, out_features, fn);
  const TensorImpl* pieces[] = {&weights, &scales_zeros, bias};
  int64_t total = 0;
  for (const TensorImpl* p : pieces) total += p != nullptr ? p->numel() : 0;
  const int64_t sizes[] = {total};
  auto out = empty_strided(sizes, contiguous_strides(sizes), ScalarType::Float32, weights.device(), fn);
  int64_t at = 0;
  for (const TensorImpl* p : pieces) {
    if (p == nullptr || p->numel() == 0) continue;
    // The piece's elements in row-major order, converted to float32.
    const std::vector<int64_t> piece_sizes(p->sizes().begin(), p->sizes().end());
    auto dst = make_tensor(out->storage(), piece_sizes, contiguous_strides(piece_sizes),
                           out->storage_offset() + at, ScalarType::Float32, fn);
    copy_tensor(*dst, *p, fn);
    at += p->numel();
  }
  return out;
}

std::unique_ptr<TensorImpl> dyn_quant_matmul_4bit(const TensorImpl& inp,
                                                  const TensorImpl& packed_weights,
                                                  int64_t block_size, int64_t in_features,
                                                  int64_t out_features, const char* fn) {
  check_dyn_quant_host(fn);
  const int64_t K = in_features, N = out_features;
  AOTRT_CHECK(inp.dtype() == ScalarType::Float32 ||
                  (inp.dtype() == ScalarType::BFloat16 && block_size == K),
              kInvalidArgument, fn,
              ": expect input to be float32 or bfloat16 tensor (bfloat16 only with block_size "
              "== in_features), got ", dtype_name(inp.dtype()), " with block_size ", block_size,
              " and in_features ", K);
  check_dyn_quant_block(block_size, K, N, fn);
  AOTRT_CHECK(inp.dim() == 2 && inp.sizes()[1] == K, kInvalidArgument, fn,
              ": expect input to be [M, in_features = ", K, "], got ", sizes_text(inp.sizes()));
  AOTRT_CHECK(K % 2 == 0, kUnsupported, fn,
              ": in_features must be even (two int4 weights per byte), got ", K);
  AOTRT_CHECK(packed_weights.dim() == 1 && !is_complex(packed_weights.dtype()), kInvalidArgument,
              fn, ": expect packed_weights to be a 1-d real tensor (ATen's layout on this host), "
              "got a ", dtype_name(packed_weights.dtype()), " tensor of ",
              sizes_text(packed_weights.sizes()));
  // ATen's kernel reads inp's memory, and a float32 packed vector's, as dense rows whatever
  // their strides: another layout would give eager's result only by reading past the view.
  AOTRT_CHECK(inp.is_contiguous() && packed_weights.is_contiguous(), kUnsupported, fn,
              ": inp (strides ", sizes_text(inp.strides()), ") and packed_weights (strides ",
              sizes_text(packed_weights.strides()),
              ") must be contiguous: ATen's kernel reads their memory as dense rows");
  const int64_t weight_elements = checked_mul(N, K, fn) / 2,
                scale_elements = checked_mul(N, K / block_size, fn);
  const int64_t total = packed_weights.numel();
  AOTRT_CHECK(total >= weight_elements + scale_elements, kInvalidArgument, fn,
              ": Invalid packed weight tensor size: ", total, " elements, fewer than the ",
              weight_elements, " weight bytes and ", scale_elements, " scales");
  const int64_t bias_elements = total - weight_elements - scale_elements;
  AOTRT_CHECK(bias_elements == 0 || bias_elements == N, kInvalidArgument, fn,
              ": Expected bias length to match output dimension: ", bias_elements,
              " elements past the weights and scales, out_features ", N);
  const int64_t M = inp.sizes()[0];
  const int64_t sizes[] = {M, N};
  auto out = empty_strided(sizes, contiguous_strides(sizes), inp.dtype(), inp.device(), fn);
  if (out->numel() == 0) return out;
  auto weights = dense(*narrow(packed_weights, 0, 0, weight_elements, fn), ScalarType::UInt8, fn);
  auto scales = dense(*narrow(packed_weights, 0, weight_elements, scale_elements, fn),
                      ScalarType::Float32, fn);
  std::unique_ptr<TensorImpl> bias;
  if (bias_elements > 0) {
    bias = dense(*narrow(packed_weights, 0, weight_elements + scale_elements, N, fn),
                 ScalarType::Float32, fn);
  }
  kernel(&IntMatmulKernels::dyn_quant_mm, inp.device(), fn)(
      *out, *dense(inp, inp.dtype(), fn), *weights, *scales, bias.get(), block_size, fn);
  return out;
}

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
  AOTRT_CHECK(self.device() == out.device() && mat2.device() == out.device(), kInvalidArgument,
              fn, ": expected out, self and mat2 on one device, got ", out.device().str(), ", ",
              self.device().str(), " and ", mat2.device().str());
  // The operands as they lie, where the device serves them so (no copies).
  const IntMatmulKernels* table = table_of(out.device());
  if (table != nullptr && table->int_mm_views != nullptr && table->int_mm_views(out, self, mat2)) {
    return;
  }
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
  AOTRT_CHECK(mat2.device() == self.device() && scales.device() == self.device(),
              kInvalidArgument, fn, ": expected A, B and scales on one device, got ",
              self.device().str(), ", ", mat2.device().str(), " and ", scales.device().str());
  const int64_t sizes[] = {M, N};
  auto out = empty_strided(sizes, contiguous_strides(sizes), self.dtype(), self.device(), fn);
  if (out->numel() == 0) return out;
  // In A's own dtype where the device has that kernel: no conversions around it.
  const IntMatmulKernels* table = table_of(self.device());
  if (table != nullptr && table->int8_weight_mm_native != nullptr) {
    table->int8_weight_mm_native(*out, *dense(self, self.dtype(), fn),
                                 *dense(mat2, ScalarType::Int8, fn),
                                 *dense(scales, self.dtype(), fn));
    return out;
  }
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
  // The kernel reads float32 and bfloat16 scales in place (a bf16 model's: no copy of the
  // whole [K/g, N, 2] every call); float16 ones it is given as float32.
  const ScalarType sz_dtype =
      self.dtype() == ScalarType::BFloat16 ? ScalarType::BFloat16 : ScalarType::Float32;
  kernel(&IntMatmulKernels::int4_weight_mm, self.device(), fn)(
      *acc, *dense(self, ScalarType::Float32, fn), *dense(mat2, ScalarType::UInt8, fn), g,
      *dense(scale_zeros, sz_dtype, fn), host_int4_pack_layout(), fn);
  copy_tensor(*out, *acc, fn);
  return out;
}

// See Note [Int4 tinygemm layout].
std::unique_ptr<TensorImpl> weight_int4pack_mm_tinygemm(const TensorImpl& self,
                                                        const TensorImpl& mat2, int64_t group_size,
                                                        const TensorImpl& scale_zeros,
                                                        const char* fn) {
  AOTRT_CHECK(mat2.device() == self.device() && scale_zeros.device() == self.device(),
              kInvalidArgument, fn, ": expected A, B and qScaleAndZeros on one device, got ",
              self.device().str(), ", ", mat2.device().str(), " and ",
              scale_zeros.device().str());
  check_dtype(self, ScalarType::BFloat16, "A", fn);
  AOTRT_CHECK(self.dim() == 2, kInvalidArgument, fn, ": expect A to be 2D tensor, got ",
              sizes_text(self.sizes()));
  check_dtype(mat2, ScalarType::Int32, "B", fn);
  AOTRT_CHECK(mat2.dim() == 4 && mat2.sizes()[2] == 32, kInvalidArgument, fn,
              ": expect B to be the 4-d int4 pack [N/8, K/(innerKTiles*16), 32, innerKTiles/2] "
              "of _convert_weight_to_int4pack on CUDA, got ",
              sizes_text(mat2.sizes()));
  const int64_t inner = mat2.sizes()[3] * 2;
  AOTRT_CHECK(inner == 2 || inner == 4 || inner == 8, kInvalidArgument, fn,
              ": expect B.size(3) * 2 (innerKTiles) to be 2, 4 or 8, got ", inner);
  const int64_t M = self.sizes()[0], K = self.sizes()[1];
  const int64_t N = checked_mul(mat2.sizes()[0], 8, fn);
  AOTRT_CHECK(K % (inner * 16) == 0 && mat2.sizes()[1] == K / (inner * 16), kInvalidArgument, fn,
              ": expect K = A.size(1) = ", K, " to be B.size(1) * innerKTiles * 16 = ",
              mat2.sizes()[1], " * ", inner, " * 16");
  AOTRT_CHECK(group_size == 32 || group_size == 64 || group_size == 128 || group_size == 256,
              kInvalidArgument, fn, ": expect qGroupSize to be 32, 64, 128 or 256, got ",
              group_size);
  AOTRT_CHECK(K >= group_size && K % group_size == 0, kInvalidArgument, fn,
              ": expect K to be a multiple of qGroupSize, got K:", K, ", qGroupSize:", group_size);
  check_dtype(scale_zeros, ScalarType::BFloat16, "qScaleAndZeros", fn);
  AOTRT_CHECK(scale_zeros.dim() == 3 && scale_zeros.sizes()[0] == K / group_size &&
                  scale_zeros.sizes()[1] == N && scale_zeros.sizes()[2] == 2,
              kInvalidArgument, fn, ": expect qScaleAndZeros to be [", K / group_size, ", ", N,
              ", 2] (K/qGroupSize, N, 2), got ", sizes_text(scale_zeros.sizes()));
  const int64_t sizes[] = {M, N};
  auto out =
      empty_strided(sizes, contiguous_strides(sizes), ScalarType::BFloat16, self.device(), fn);
  if (out->numel() == 0) return out;
  kernel(&IntMatmulKernels::int4_tinygemm_mm, self.device(), fn)(
      *out, *dense(self, ScalarType::BFloat16, fn), *dense(mat2, ScalarType::Int32, fn),
      group_size, *dense(scale_zeros, ScalarType::BFloat16, fn), fn);
  return out;
}

}  // namespace aotrt::ops
