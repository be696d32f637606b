// The CPU's matmul kernels (cpu/matmul.cpp, on OpenBLAS) as the matmul family's
// table (Note [Op dispatch]). They name their own shim in messages. _scaled_mm
// is ATen's CPU emulation (Note [Scaled matmul]): float8 widened and scaled
// into float32 operands, the float32 gemm, the epilogue in float32.
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "core/copy.h"
#include "core/float8.h"
#include "core/view.h"
#include "cpu/elements.h"
#include "cpu/ops.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/grouped_math.h"
#include "ops/matmul.h"

namespace aotrt::cpu {
namespace {
using ops::MatmulKernels;
using ops::ScaledMmArgs;
using ops::sizes_text;

// Every code of a float8 dtype as float (Note [Float8 conversions]).
using Float8Table = std::array<float, 256>;
const Float8Table& float8_table(ScalarType t) {
  static const auto make = [](const Float8Format& f) {
    Float8Table table{};
    for (int c = 0; c < 256; ++c) table[c] = float8_to_float(static_cast<uint8_t>(c), f);
    return table;
  };
  static const Float8Table e4m3fn = make(kFloat8E4m3fn), e5m2 = make(kFloat8E5m2),
                           e4m3fnuz = make(kFloat8E4m3fnuz), e5m2fnuz = make(kFloat8E5m2fnuz);
  switch (t) {
    case ScalarType::Float8_e5m2: return e5m2;
    case ScalarType::Float8_e4m3fnuz: return e4m3fnuz;
    case ScalarType::Float8_e5m2fnuz: return e5m2fnuz;
    default: return e4m3fn;
  }
}

float float_at(const TensorImpl& t, int64_t i) {
  float v;
  std::memcpy(&v, static_cast<const char*>(t.data_ptr()) + i * 4, sizeof v);
  return v;
}

// dst (float32 [R, C], strides ds) = float(src[r, c]) * scale, where the scale is
// row_scale[r * row_step] * col_scale[c * col_step] with step 0 for a tensorwise
// scale (only one of them is a vector). One rounding, as ATen's mul.
void widen_scaled(const TensorImpl& dst, const TensorImpl& src, const TensorImpl& scale,
                  bool per_row, bool per_col) {
  const Float8Table& table = float8_table(src.dtype());
  const int64_t R = src.sizes()[0], C = src.sizes()[1];
  const int64_t rs = src.strides()[0], cs = src.strides()[1];
  const int64_t drs = dst.strides()[0], dcs = dst.strides()[1];
  const auto* in = static_cast<const uint8_t*>(src.data_ptr());
  auto* out = static_cast<float*>(dst.data_ptr());
  const float* scales = static_cast<const float*>(scale.data_ptr());
#pragma omp parallel for if (R * C > 65536)
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t c = 0; c < C; ++c) {
      const float s = per_row ? scales[r] : per_col ? scales[c] : scales[0];
      out[r * drs + c * dcs] = table[in[r * rs + c * cs]] * s;
    }
  }
}

// bias as ATen's out_tmp.add_(bias) reads it: broadcast to [M, N] (at most 2
// dims, right-aligned), its values as float32 - or float64 for a float64 bias,
// the common dtype then - in a dense float64 tensor of bias's own sizes.
struct BiasView {
  std::unique_ptr<TensorImpl> values;
  int64_t row_step = 0, col_step = 0;
};
BiasView bias_view(const TensorImpl& bias, int64_t M, int64_t N, const char* fn) {
  AOTRT_CHECK(bias.dim() <= 2 && !is_complex(bias.dtype()), kUnsupported, fn,
              ": a bias of ", sizes_text(bias.sizes()), " ", dtype_name(bias.dtype()),
              " is not served (ATen's in-place add needs at most 2 dims and a real dtype)");
  const std::vector<int64_t> sizes(bias.sizes().begin(), bias.sizes().end());
  const int64_t rows = bias.dim() == 2 ? sizes[0] : 1, cols = bias.dim() >= 1 ? sizes.back() : 1;
  AOTRT_CHECK((rows == M || rows == 1) && (cols == N || cols == 1), kInvalidArgument, fn,
              ": bias of ", sizes_text(bias.sizes()), " does not broadcast to the result's [", M,
              ", ", N, "]");
  BiasView v;
  const ScalarType as = bias.dtype() == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
  auto rounded = empty_strided(sizes, contiguous_strides(sizes), as, bias.device(), fn);
  copy_tensor(*rounded, bias, fn);
  v.values = empty_strided(sizes, contiguous_strides(sizes), ScalarType::Float64, bias.device(), fn);
  copy_tensor(*v.values, *rounded, fn);
  v.row_step = rows == 1 ? 0 : cols;
  v.col_step = cols == 1 ? 0 : 1;
  return v;
}

void scaled_mm_out(const TensorImpl& out, const ScaledMmArgs& a, const char* fn) {
  const int64_t M = a.self.sizes()[0], K = a.self.sizes()[1], N = a.mat2.sizes()[1];
  const Device cpu = out.device();
  // ATen's operands: self.to(float) keeps self's layout when it is dense (a
  // column-major self stays column-major), mat2.contiguous().to(float) is row-major.
  const bool self_col_major = M > 1 && K > 1 && a.self.strides()[0] == 1 && a.self.strides()[1] == M;
  const std::vector<int64_t> a_sizes{M, K}, b_sizes{K, N}, r_sizes{M, N};
  auto x = empty_strided(a_sizes, self_col_major ? std::vector<int64_t>{1, M} : contiguous_strides(a_sizes),
                         ScalarType::Float32, cpu, fn);
  auto y = empty_strided(b_sizes, contiguous_strides(b_sizes), ScalarType::Float32, cpu, fn);
  auto r = empty_strided(r_sizes, contiguous_strides(r_sizes), ScalarType::Float32, cpu, fn);
  widen_scaled(*x, a.self, a.scale_a, a.rowwise, false);
  widen_scaled(*y, a.mat2, a.scale_b, false, a.rowwise);
  mm_out(*r, *x, *y);
  // The epilogue: + bias, then / scale_result for an out_dtype of e4m3fn or e5m2.
  const bool rescale = a.scale_result != nullptr && a.out_dtype &&
                       (*a.out_dtype == ScalarType::Float8_e4m3fn ||
                        *a.out_dtype == ScalarType::Float8_e5m2);
  auto* v = static_cast<float*>(r->data_ptr());
  if (a.bias != nullptr) {
    const BiasView b = bias_view(*a.bias, M, N, fn);
    const auto* bv = static_cast<const double*>(b.values->data_ptr());
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        float& e = v[i * N + j];
        e = static_cast<float>(static_cast<double>(e) + bv[i * b.row_step + j * b.col_step]);
      }
    }
  }
  if (rescale) {
    const float inverse = 1.0f / float_at(*a.scale_result, 0);
    for (int64_t i = 0; i < M * N; ++i) v[i] *= inverse;
  }
  copy_tensor(out, *r, fn);  // Note [Float8 conversions] for a float8 out
}

// Note [Matmul with an output dtype]: the 16-bit operands widened to float32
// (exactly), then the float32 gemm: every product is exact in float32, and the
// sums are float32 as cuBLAS's CUBLAS_COMPUTE_32F makes them.
void mm_widening_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                     const char* fn) {
  auto widened = [&](const TensorImpl& t) {
    auto w = empty_strided(t.sizes(), contiguous_strides(t.sizes()), ScalarType::Float32,
                           t.device(), fn);
    copy_tensor(*w, t, fn);
    return w;
  };
  mm_out(out, *widened(self), *widened(mat2));
}

// Note [Scaled grouped matmul]: per group, its output elements, each a float32
// sum in k order (as the CUDA kernel's), times scale_a then scale_b, rounded
// once to bfloat16. offs is read here, on the host (CPU tensors).
void scaled_grouped_mm(const TensorImpl& out, const TensorImpl& mat_a, const TensorImpl& mat_b,
                       const TensorImpl& scale_a, const TensorImpl& scale_b,
                       const TensorImpl* offs, const char*) {
  using namespace ops::grouped_math;
  const int64_t groups = out.dim() == 3 ? out.sizes()[0] : offs->sizes()[0];
  const GroupedGemm d = describe(out, mat_a, mat_b, scale_a, scale_b, groups);
  const Float8Table& e4m3 = float8_table(ScalarType::Float8_e4m3fn);
  const auto* a = static_cast<const uint8_t*>(mat_a.data_ptr());
  const auto* b = static_cast<const uint8_t*>(mat_b.data_ptr());
  const auto* sa = static_cast<const float*>(scale_a.data_ptr());
  const auto* sb = static_cast<const float*>(scale_b.data_ptr());
  auto* o = static_cast<uint16_t*>(out.data_ptr());
  std::vector<int32_t> ends;
  if (offs != nullptr) {  // dense copy of the int32 ends
    ends.resize(static_cast<size_t>(offs->sizes()[0]));
    for (size_t g = 0; g < ends.size(); ++g) {
      std::memcpy(&ends[g],
                  static_cast<const char*>(offs->data_ptr()) +
                      static_cast<int64_t>(g) * offs->strides()[0] * 4,
                  4);
    }
  }
  for (int64_t g = 0; g < d.groups; ++g) {
    int64_t i0 = 0, i1 = d.M, j0 = 0, j1 = d.N, k0 = 0, k1 = d.K;
    if (d.mode == kRows) group_range(ends.data(), g, d.M, i0, i1);
    if (d.mode == kCols) group_range(ends.data(), g, d.N, j0, j1);
    if (d.mode == kK) group_range(ends.data(), g, d.K, k0, k1);
    if (i0 == i1 || j0 == j1 || k0 == k1) continue;  // computes nothing: out stays 0
#pragma omp parallel for if ((i1 - i0) * (j1 - j0) * (k1 - k0) > 65536)
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t j = j0; j < j1; ++j) {
        float acc = 0;
        for (int64_t k = k0; k < k1; ++k) {
          acc = std::fma(e4m3[a[g * d.a_g + i * d.a_m + k * d.a_k]],
                         e4m3[b[g * d.b_g + k * d.b_k + j * d.b_n]], acc);
        }
        const float v = (acc * sa[g * d.sa_g + i * d.sa_m]) * sb[g * d.sb_g + j * d.sb_n];
        o[g * d.o_g + i * d.o_m + j * d.o_n] = float_to_bfloat16(v);
      }
    }
  }
}

constexpr MatmulKernels kMatmul{
    .mm_out = [](const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                 const char*) { mm_out(out, self, mat2); },
    .addmm_out = [](const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
                    const TensorImpl& mat2, double beta, double alpha,
                    const char*) { addmm_out(out, self, mat1, mat2, beta, alpha); },
    .bmm_out = [](const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                  const char*) { bmm_out(out, self, mat2); },
    .baddbmm_out = [](const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                      const TensorImpl& batch2, double beta, double alpha,
                      const char*) { baddbmm_out(out, self, batch1, batch2, beta, alpha); },
    .scaled_mm_out = scaled_mm_out,
    .mm_widening_out = mm_widening_out,
    .scaled_grouped_mm = scaled_grouped_mm,
    .grouped_mm = nullptr,  // ops::grouped_mm's loop of mm reads offs on the host
};
AOTRT_REGISTER_KERNELS(MatmulKernels, cpu, kMatmul);

}  // namespace
}  // namespace aotrt::cpu
