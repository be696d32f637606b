// mm, addmm, bmm and baddbmm on cuBLASLt plans cached per configuration
// (Note [GEMM plans]; addmm with a bias vector on the bias epilogue, cuBLAS's
// cublasGemmEx where cuBLASLt refuses), reading every operand in place that
// cuBLAS can address and packing only the rest.
//
// Note [Matmul layouts]
// cuBLAS reads a matrix column-major: element (i, j) at i + j * ld, with
// ld >= rows. A [rows, cols] view is therefore addressable in place when
//   - its column stride is 1 and its row stride >= cols ("row-major": the
//     memory holds its transpose column-major, ld = row stride), or
//   - its row stride is 1 and its column stride >= rows ("column-major",
//     ld = column stride);
// a size-1 dim's stride does not matter. The batch stride of bmm is free
// (cuBLAS takes any, 0 included). For C = A @ B we pick the orientation of
// the output: a row-major C is computed as C^T = B^T A^T (cuBLAS sees
// C^T column-major), a column-major C directly; each input then enters as
// op N when it has the output's orientation and as op T when it has the
// other. Only an input with neither orientation is packed (gathered into a
// dense buffer), and only an output with neither is computed into a dense
// temporary and scattered back.
//
// Note [Interleaved batches]
// A bmm operand such as [2, 64, 400] with strides [1, 800, 2] (two heads
// interleaved element by element, as Inductor lays out YOLO11's attention)
// cannot be read in place by any cuBLAS or cuBLASLt call, and is packed. The
// proof: every cuBLAS/cuBLASLt matrix layout of a matrix with at least two
// rows and two columns places two of its elements next to each other in
// memory (the unit stride of its leading dimension: cuBLASLt's row and column
// orders both have one; it has no element-stride attribute). The elements of
// batch b sit at b + 800 i + 2 j, all congruent to b mod 2, so no two of them
// are adjacent; a layout covering them must cover the other batch's elements
// too, which either mixes the batches in the contraction (wrong) or computes
// both batches' products for each and throws half away into a temporary (a
// copy and twice the work). Splitting into one-row matrices (ld = 2) would
// be readable but turns the GEMM into GEMVs that re-read the other operand
// for every row. Packing costs one read and one write of that operand -
// which the GEMM itself reads anyway - and leaves a single efficient call.
#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/float8.h"
#include "core/plan_key.h"
#include "core/view.h"
#include "cuda/call_graphs.h"
#include "cuda/handles.h"
#include "cuda/library_ops.h"
#include "shim/profile.h"

namespace aotrt::cuda {
namespace {

// --- Views as batches of matrices -----------------------------------------------------------

// A view of up to 3 dims whose sizes and strides it owns (StridedView only
// borrows them).
struct OwnedView {
  char* data = nullptr;
  ScalarType dtype = ScalarType::Float32;
  Device device;
  int ndim = 0;
  int64_t sizes[3] = {0, 0, 0};
  int64_t strides[3] = {0, 0, 0};

  StridedView strided() const {
    return StridedView{data, std::span<const int64_t>(sizes, static_cast<size_t>(ndim)),
                       std::span<const int64_t>(strides, static_cast<size_t>(ndim)), dtype,
                       device};
  }
};

OwnedView own(const StridedView& v) {
  OwnedView o;
  o.data = v.data;
  o.dtype = v.dtype;
  o.device = v.device;
  o.ndim = static_cast<int>(v.dim());
  for (int d = 0; d < o.ndim; ++d) {
    o.sizes[d] = v.sizes[static_cast<size_t>(d)];
    o.strides[d] = v.strides[static_cast<size_t>(d)];
  }
  return o;
}

// One operand of a (batched) GEMM: `batch` matrices of [rows, cols].
struct Matrices {
  char* data = nullptr;
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
};

Matrices matrices_of(const OwnedView& v) {
  Matrices m;
  m.data = v.data;
  const int r = v.ndim - 2;
  if (v.ndim == 3) {
    m.batch = v.sizes[0];
    m.batch_stride = v.strides[0];
  }
  m.rows = v.sizes[r];
  m.cols = v.sizes[r + 1];
  m.row_stride = v.strides[r];
  m.col_stride = v.strides[r + 1];
  return m;
}

// The ld cuBLAS reads one matrix with, in each orientation (Note [Matmul layouts]).
std::optional<int64_t> row_major_ld(const Matrices& m) {
  if (m.cols > 1 && m.col_stride != 1) return std::nullopt;
  const int64_t min_ld = std::max<int64_t>(m.cols, 1);
  if (m.rows <= 1) return min_ld;
  if (m.row_stride < min_ld) return std::nullopt;
  return m.row_stride;
}

std::optional<int64_t> col_major_ld(const Matrices& m) {
  if (m.rows > 1 && m.row_stride != 1) return std::nullopt;
  const int64_t min_ld = std::max<int64_t>(m.rows, 1);
  if (m.cols <= 1) return min_ld;
  if (m.col_stride < min_ld) return std::nullopt;
  return m.col_stride;
}

// An operand as cuBLAS will read it.
struct Addressed {
  Matrices m;
  bool row_major = true;
  int64_t ld = 1;
};

std::optional<Addressed> address(const Matrices& m, bool prefer_row_major) {
  const auto r = row_major_ld(m);
  const auto c = col_major_ld(m);
  if (r && (prefer_row_major || !c)) return Addressed{m, true, *r};
  if (c) return Addressed{m, false, *c};
  return std::nullopt;
}

// [lo, hi) bytes a view touches; empty for an empty view.
std::pair<uintptr_t, uintptr_t> byte_range(const StridedView& v) {
  const auto lo = reinterpret_cast<uintptr_t>(v.data);
  int64_t last = 0;
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] == 0) return {lo, lo};
    last += (v.sizes[d] - 1) * v.strides[d];
  }
  return {lo, lo + static_cast<uintptr_t>((last + 1) * static_cast<int64_t>(v.itemsize()))};
}

bool overlaps(const StridedView& a, const StridedView& b) {
  const auto [alo, ahi] = byte_range(a);
  const auto [blo, bhi] = byte_range(b);
  return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

bool same_view(const StridedView& a, const StridedView& b) {
  return a.data == b.data && a.dtype == b.dtype &&
         std::equal(a.sizes.begin(), a.sizes.end(), b.sizes.begin(), b.sizes.end()) &&
         std::equal(a.strides.begin(), a.strides.end(), b.strides.begin(), b.strides.end());
}

// self broadcast to `sizes` (ATen's expand), or throws naming the shapes.
OwnedView expand_to(const TensorImpl& self, const int64_t* sizes, int ndim, const char* fn) {
  const StridedView s = strided_view(self);
  AOTRT_CHECK(s.dim() <= ndim, kInvalidArgument, fn, ": 'self' has ", s.dim(),
              " dims, more than the result's ", ndim);
  OwnedView o;
  o.data = s.data;
  o.dtype = s.dtype;
  o.device = s.device;
  o.ndim = ndim;
  const int shift = ndim - static_cast<int>(s.dim());
  for (int d = 0; d < ndim; ++d) {
    o.sizes[d] = sizes[d];
    if (d < shift) {
      o.strides[d] = 0;
      continue;
    }
    const int64_t size = s.sizes[static_cast<size_t>(d - shift)];
    AOTRT_CHECK(size == sizes[d] || size == 1, kInvalidArgument, fn, ": 'self' of size ",
                size, " in dim ", d - shift, " does not broadcast to the result's ", sizes[d]);
    o.strides[d] = size == sizes[d] ? s.strides[static_cast<size_t>(d - shift)] : 0;
  }
  return o;
}

int to_int(int64_t v, const char* what, const char* fn) {
  AOTRT_CHECK(v >= 0 && v <= INT_MAX, kUnsupported, fn, ": ", what, " ", v,
              " exceeds cuBLAS's 32-bit limit");
  return static_cast<int>(v);
}

// --- The GEMM ---------------------------------------------------------------------------

// One GEMM: C (m x n, column-major) = alpha op(A) op(B) + beta C, per batch.
struct GemmCall {
  cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void* a = nullptr;
  int64_t lda = 1, stride_a = 0;
  const void* b = nullptr;
  int64_t ldb = 1, stride_b = 0;
  void* c = nullptr;
  int64_t ldc = 1, stride_c = 0;
};

// The call computing out = x @ y for an addressable output (Note [Matmul layouts]).
GemmCall plan_gemm(const Addressed& out, const Addressed& x, const Addressed& y) {
  GemmCall g;
  g.batch = out.m.batch;
  g.c = out.m.data;
  g.ldc = out.ld;
  g.stride_c = out.m.batch_stride;
  const Addressed* first = out.row_major ? &y : &x;   // cuBLAS's A
  const Addressed* second = out.row_major ? &x : &y;  // cuBLAS's B
  g.m = out.row_major ? out.m.cols : out.m.rows;
  g.n = out.row_major ? out.m.rows : out.m.cols;
  g.k = x.m.cols;
  g.a = first->m.data;
  g.lda = first->ld;
  g.stride_a = first->m.batch > 1 ? first->m.batch_stride : 0;
  g.op_a = first->row_major == out.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  g.b = second->m.data;
  g.ldb = second->ld;
  g.stride_b = second->m.batch > 1 ? second->m.batch_stride : 0;
  g.op_b = second->row_major == out.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  return g;
}

// `tf32`: whether an fp32 product may round its inputs to TF32 (Note [TF32]):
// the matmul policy for matmuls, the convolution policy for the 1x1
// convolutions conv.cpp runs as GEMMs.
// float64 computes in float64 (ATen's DGEMM); the others accumulate in float32.
// `in`: the operands' dtype, `t` the output's (they differ only for
// mm.dtype_out's float16/bfloat16 operands into float32, Note [Matmul with an
// output dtype], which never rounds to TF32).
cublasComputeType_t compute_type(ScalarType t, ScalarType in, bool tf32) {
  if (t == ScalarType::Float64) return CUBLAS_COMPUTE_64F;
  return t == ScalarType::Float32 && in == ScalarType::Float32 && tf32
             ? CUBLAS_COMPUTE_32F_FAST_TF32
             : CUBLAS_COMPUTE_32F;
}

// alpha and beta in the compute type's scale type (double for CUBLAS_COMPUTE_64F,
// float otherwise), as cuBLAS reads them through void pointers.
// int32 for the integer GEMM's CUBLAS_COMPUTE_32I (Note [Int8 matmul on CUDA]).
struct GemmScalars {
  double d[2];
  float f[2];
  int32_t i[2];
  bool wide;
  bool integer;
  GemmScalars(ScalarType t, double alpha, double beta)
      : d{alpha, beta},
        f{static_cast<float>(alpha), static_cast<float>(beta)},
        i{static_cast<int32_t>(alpha), static_cast<int32_t>(beta)},
        wide(t == ScalarType::Float64),
        integer(t == ScalarType::Int32) {}
  const void* alpha() const { return pick(0); }
  const void* beta() const { return pick(1); }
  const void* pick(int which) const {
    if (integer) return &i[which];
    return wide ? static_cast<const void*>(&d[which]) : &f[which];
  }
  cudaDataType_t type() const { return integer ? CUDA_R_32I : wide ? CUDA_R_64F : CUDA_R_32F; }
};

// Note [GEMM plans]
// Every GEMM runs through cublasLtMatmul with a plan made once per
// configuration: the matmul descriptor (compute and scale type, transposes,
// epilogue), the A, B and C layouts (batch count and strides included) and
// the algorithm cuBLASLt's heuristic ranks first for them, for the operands'
// alignment and for the workspace Note [cuBLASLt workspace] provides.
// cublasGemmEx runs cuBLAS's heuristic on every call (10-14 us of host time
// per call on the H200); a planned call costs a hash lookup and
// cublasLtMatmul's own launch work.
// - The key (GemmConfig, as a PlanKey) is everything the plan depends on, a
//   fixed-size value: looking it up allocates nothing. The pointers enter
//   only through their alignment (ATen sets
//   CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_* the same way).
// - Plans are per thread: the bias pointer is written into the cached
//   descriptor on each call, and a thread's own table needs no lock. A thread
//   holds at most kMaxGemmPlans; one more configuration drops them all and
//   starts over (only a run with ever-new shapes gets there).
// - Fallback: when cuBLASLt refuses the configuration (a descriptor or
//   layout it rejects, no algorithm from the heuristic, or NOT_SUPPORTED from
//   cublasLtMatmul itself), the plan remembers it and every call of that
//   configuration goes to cublasGemmEx / cublasGemmStridedBatchedEx as
//   before; a bias plan falls back to copying self into C.
// - Numerics: the compute types of compute_type() (TF32 only where Note
//   [TF32] allows it, float64 in float64, float16/bfloat16 accumulating in
//   float32). Split-K reductions in the output's precision stay allowed for
//   float16/bfloat16, as ATen's defaults have it
//   (allow_fp16/bf16_reduced_precision_reduction = True: its cuBLAS path
//   keeps CUBLAS_DEFAULT_MATH and its cuBLASLt path leaves
//   CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK at "all schemes"); the
//   fallback's handle runs with CUBLAS_DEFAULT_MATH too.

constexpr size_t kMaxGemmPlans = 1024;

enum class Epilogue : int32_t { kNone = 0, kBias = 1 };

// Note [Scaled GEMM plans]
// _scaled_mm's float8 GEMMs (Note [Scaled matmul] in ops/matmul.h) take the
// same plans: their configuration adds A's and B's own types, C's type (D's
// for the other GEMMs; for a float8 D it is the bias's type, or float16, as
// ATen sets it: beta is 0 and C is never read), the bias's type, the scale
// mode (cuBLASLt's scalar or outer-vector, the rowwise scales) and whether D
// has a scale and fast accumulation. The scale pointers, like the bias
// pointer, are written into the cached descriptor on every call. A float8 D
// is written with no C pointer (C == D would need equal layouts). cuBLASLt's
// float8 kernels have no algorithm for some output layouts (a leading
// dimension that is not 16-byte aligned, seen on the H200): those outputs are
// written through a dense temporary. A float8 configuration cuBLASLt refuses
// even then has no cublasGemmEx to fall back to: it is refused, naming it.
struct GemmConfig {
  int32_t device = 0, dtype = 0, compute = 0, epilogue = 0, op_a = 0, op_b = 0;
  int64_t m = 0, n = 0, k = 0, batch = 1, lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // 0 unless batch > 1
  uint32_t align_a = 0, align_b = 0, align_c = 0, align_bias = 0;
  // Scaled (float8) GEMMs only (Note [Scaled GEMM plans]); -1 or 0 for the others.
  int32_t a_type = -1, b_type = -1, c_type = -1, bias_type = -1, scale_mode = -1;
  int32_t d_scale = 0, fast_accum = 0;

  bool scaled() const { return scale_mode >= 0; }
  PlanKey key() const {
    PlanKey key;
    for (int64_t v : {int64_t{device}, int64_t{dtype}, int64_t{compute}, int64_t{epilogue},
                      int64_t{op_a}, int64_t{op_b}, m, n, k, batch, lda, ldb, ldc, stride_a,
                      stride_b, stride_c, int64_t{align_a}, int64_t{align_b}, int64_t{align_c},
                      int64_t{align_bias}, int64_t{a_type}, int64_t{b_type}, int64_t{c_type},
                      int64_t{bias_type}, int64_t{scale_mode}, int64_t{d_scale},
                      int64_t{fast_accum}}) {
      key.push(v);
    }
    return key;
  }
};

// The device pointers of a scaled GEMM's scales (d null: none).
struct LtScales {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* d = nullptr;
};

// Owners of cuBLASLt descriptors (created by the plan that holds them).
template <typename T, cublasStatus_t (*destroy)(T)>
struct LtOwned {
  T handle = nullptr;
  LtOwned() = default;
  LtOwned(const LtOwned&) = delete;
  LtOwned& operator=(const LtOwned&) = delete;
  ~LtOwned() {
    if (handle) (void)destroy(handle);
  }
};
using LtMatmulDesc = LtOwned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = LtOwned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = LtOwned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// A configuration's descriptors and algorithm, or usable == false: it falls back.
struct GemmPlan {
  uint64_t id = next_library_plan_id();  // Note [Library call graphs]
  LtMatmulDesc op;
  LtLayout a, b, c;
  LtLayout d;  // only when D's type is not C's (a float8 D); else C's layout serves
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;  // what the algorithm needs (Note [cuBLASLt workspace])
  bool usable = false;
};

struct ThreadPlans {
  std::unordered_map<PlanKey, GemmPlan, PlanKeyHash> plans;
  GemmPlanStats stats;
  bool refuse_for_testing = false;
};
thread_local ThreadPlans t_plans;

GemmConfig config_of(const GemmCall& g, cudaDataType_t t, cublasComputeType_t compute,
                     const void* bias, int device) {
  GemmConfig cfg;
  cfg.device = device;
  cfg.dtype = static_cast<int32_t>(t);
  cfg.compute = static_cast<int32_t>(compute);
  cfg.epilogue = static_cast<int32_t>(bias != nullptr ? Epilogue::kBias : Epilogue::kNone);
  cfg.op_a = static_cast<int32_t>(g.op_a);
  cfg.op_b = static_cast<int32_t>(g.op_b);
  cfg.m = g.m;
  cfg.n = g.n;
  cfg.k = g.k;
  cfg.batch = g.batch;
  cfg.lda = g.lda;
  cfg.ldb = g.ldb;
  cfg.ldc = g.ldc;
  if (g.batch > 1) {
    cfg.stride_a = g.stride_a;
    cfg.stride_b = g.stride_b;
    cfg.stride_c = g.stride_c;
  }
  cfg.align_a = pointer_alignment(g.a);
  cfg.align_b = pointer_alignment(g.b);
  cfg.align_c = pointer_alignment(g.c);
  cfg.align_bias = bias != nullptr ? pointer_alignment(bias) : 0;
  return cfg;
}

// Fills `plan` for `cfg`; returns the first status cuBLASLt refused with
// (the plan then stays unusable), or SUCCESS once the heuristic gave an
// algorithm that fits the workspace.
cublasStatus_t build_plan(GemmPlan& plan, const GemmConfig& cfg, const void* bias,
                          const LtScales* scales, size_t workspace_bytes, bool refuse,
                          cublasLtHandle_t lt) {
  const auto t = static_cast<cudaDataType_t>(cfg.dtype);
  const auto compute = static_cast<cublasComputeType_t>(cfg.compute);
  const cudaDataType_t scale = compute == CUBLAS_COMPUTE_64F   ? CUDA_R_64F
                              : compute == CUBLAS_COMPUTE_32I ? CUDA_R_32I
                                                              : CUDA_R_32F;
  cublasStatus_t s = cublasLtMatmulDescCreate(&plan.op.handle, compute, scale);
  auto set_op = [&](cublasLtMatmulDescAttributes_t attr, const auto& value) {
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = cublasLtMatmulDescSetAttribute(plan.op.handle, attr, &value, sizeof value);
    }
  };
  const auto op_a = static_cast<cublasOperation_t>(cfg.op_a);
  const auto op_b = static_cast<cublasOperation_t>(cfg.op_b);
  set_op(CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  set_op(CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  if (cfg.epilogue == static_cast<int32_t>(Epilogue::kBias)) {
    set_op(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    set_op(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    if (cfg.scaled()) set_op(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cfg.bias_type);
  }
  if (cfg.scaled()) {  // Note [Scaled GEMM plans]
    set_op(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales->a);
    set_op(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales->b);
    set_op(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, cfg.scale_mode);
    set_op(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, cfg.scale_mode);
    if (cfg.d_scale != 0) set_op(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, scales->d);
    set_op(CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<int8_t>(cfg.fast_accum));
  }
  // A is stored op_a(A)'s transpose when op_a is T, and so on.
  auto layout = [&](LtLayout& l, cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld,
                    int64_t stride) {
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatrixLayoutCreate(&l.handle, type, rows, cols, ld);
    if (cfg.batch <= 1) return;
    const auto count = static_cast<int32_t>(cfg.batch);
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = cublasLtMatrixLayoutSetAttribute(l.handle, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                           sizeof count);
    }
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = cublasLtMatrixLayoutSetAttribute(l.handle, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &stride, sizeof stride);
    }
  };
  const auto m = static_cast<uint64_t>(cfg.m), n = static_cast<uint64_t>(cfg.n),
             k = static_cast<uint64_t>(cfg.k);
  const auto type_or = [&](int32_t own) { return own >= 0 ? static_cast<cudaDataType_t>(own) : t; };
  layout(plan.a, type_or(cfg.a_type), op_a == CUBLAS_OP_N ? m : k, op_a == CUBLAS_OP_N ? k : m,
         cfg.lda, cfg.stride_a);
  layout(plan.b, type_or(cfg.b_type), op_b == CUBLAS_OP_N ? k : n, op_b == CUBLAS_OP_N ? n : k,
         cfg.ldb, cfg.stride_b);
  layout(plan.c, type_or(cfg.c_type), m, n, cfg.ldc, cfg.stride_c);
  if (type_or(cfg.c_type) != t) layout(plan.d, t, m, n, cfg.ldc, cfg.stride_c);
  const cublasLtMatrixLayout_t d_layout = plan.d.handle != nullptr ? plan.d.handle : plan.c.handle;

  LtPreference pref;
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceCreate(&pref.handle);
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, const auto& value) {
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = cublasLtMatmulPreferenceSetAttribute(pref.handle, attr, &value, sizeof value);
    }
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_bytes));
  // Views at an offset are not 256-byte aligned, which the heuristic
  // assumes unless told. C and D are the same buffer.
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, cfg.align_a);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, cfg.align_b);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, cfg.align_c);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, cfg.align_c);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  if (refuse) return CUBLAS_STATUS_NOT_SUPPORTED;  // set_gemm_lt_refusal_for_testing

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  s = cublasLtMatmulAlgoGetHeuristic(lt, plan.op.handle, plan.a.handle, plan.b.handle,
                                     plan.c.handle, d_layout, pref.handle, 1, &result, &found);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  if (found < 1 || result.workspaceSize > workspace_bytes) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (result.state != CUBLAS_STATUS_SUCCESS) return result.state;
  plan.algo = result.algo;
  plan.workspace = result.workspaceSize;
  plan.usable = true;
  return CUBLAS_STATUS_SUCCESS;
}

// The sizes cuBLAS takes as int (cublasLtMatmul takes the same batch count).
void check_gemm_sizes(const GemmCall& g, const char* fn) {
  (void)to_int(g.m, "size", fn);
  (void)to_int(g.n, "size", fn);
  (void)to_int(g.k, "size", fn);
  (void)to_int(g.lda, "leading dimension", fn);
  (void)to_int(g.ldb, "leading dimension", fn);
  (void)to_int(g.ldc, "leading dimension", fn);
  (void)to_int(g.batch, "batch count", fn);
}

// C = alpha op(A) op(B) + beta C, plus `bias` (when not null) along C's
// columns, through the configuration's plan (Note [GEMM plans]). Returns
// false, having queued nothing, when the configuration falls back.
// `scalars`: alpha and beta in the compute type's scale type; `scales`: a scaled
// GEMM's scale pointers (null for the others).
bool lt_gemm_planned(const GemmCall& g, const GemmConfig& config, const GemmScalars& scalars,
                     const void* bias, const LtScales* scales, int device, cudaStream_t stream) {
  const PlanKey key = config.key();
  ThreadPlans& tp = t_plans;
  cublasLtHandle_t lt = cublaslt_handle(device);
  auto it = tp.plans.find(key);
  if (it == tp.plans.end()) {
    if (tp.plans.size() >= kMaxGemmPlans) tp.plans.clear();
    it = tp.plans.try_emplace(key).first;
    ++tp.stats.plans_built;
    try {
      (void)build_plan(it->second, config, bias, scales, cublaslt_workspace_bytes(device),
                       tp.refuse_for_testing, lt);
    } catch (...) {
      tp.plans.erase(it);
      throw;
    }
  }
  GemmPlan& plan = it->second;
  if (!plan.usable) return false;
  DeviceBuffer scratch;
  const LtWorkspace workspace = cublaslt_workspace(device, stream, plan.workspace, scratch);
  // Note [Library call graphs]: the plan, every address it reads or writes,
  // the scalars' bits.
  PlanKey call;
  int64_t alpha_bits = 0, beta_bits = 0;
  std::memcpy(&alpha_bits, &scalars.d[0], sizeof alpha_bits);
  std::memcpy(&beta_bits, &scalars.d[1], sizeof beta_bits);
  for (int64_t v : {int64_t{kLtMatmulCall}, int64_t{device}, static_cast<int64_t>(plan.id), address_value(g.a),
                    address_value(g.b), address_value(g.c), address_value(bias),
                    address_value(scales ? scales->a : nullptr), address_value(scales ? scales->b : nullptr),
                    address_value(scales ? scales->d : nullptr), alpha_bits, beta_bits,
                    int64_t{scalars.wide}, address_value(workspace.data),
                    static_cast<int64_t>(workspace.bytes)}) {
    call.push(v);
  }
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  const bool ran = replay_or_call(call, device, stream, [&](cudaStream_t on) {
    if (bias != nullptr) {
      AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          plan.op.handle, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    if (scales != nullptr) {
      AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          plan.op.handle, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scales->a, sizeof scales->a));
      AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          plan.op.handle, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scales->b, sizeof scales->b));
      if (config.d_scale != 0) {
        AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            plan.op.handle, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &scales->d, sizeof scales->d));
      }
    }
    profiling::LibraryCallTimer timer("cublasLtMatmul");
    // A D of another type than C (a float8 out) is never C's memory: beta is 0, C is
    // not read and has no pointer, as ATen calls it (cuBLASLt refuses C == D with
    // different layouts).
    const bool own_d = plan.d.handle != nullptr;
    status = cublasLtMatmul(lt, plan.op.handle, scalars.alpha(), g.a, plan.a.handle, g.b,
                            plan.b.handle, scalars.beta(), own_d ? nullptr : g.c, plan.c.handle,
                            g.c, own_d ? plan.d.handle : plan.c.handle, &plan.algo,
                            workspace.data, workspace.bytes, on);
    return status == CUBLAS_STATUS_SUCCESS;
  });
  if (ran) {
    ++tp.stats.lt_calls;
    return true;
  }
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) {
    plan.usable = false;
    return false;
  }
  if (status != CUBLAS_STATUS_SUCCESS) {
    detail::cublas_fail(status, "cublasLtMatmul(...)", __FILE__, __LINE__);
  }
  ++tp.stats.lt_calls;
  return true;
}

// `dtype`: C's (and D's); `in_dtype`: A's and B's.
bool lt_gemm(const GemmCall& g, ScalarType dtype, ScalarType in_dtype, bool tf32, double alpha,
             double beta, const void* bias, int device, cudaStream_t stream, const char* fn) {
  check_gemm_sizes(g, fn);
  const cudaDataType_t t = cuda_data_type(dtype, fn);
  GemmConfig config = config_of(g, t, compute_type(dtype, in_dtype, tf32), bias, device);
  if (in_dtype != dtype) {
    config.a_type = config.b_type = static_cast<int32_t>(cuda_data_type(in_dtype, fn));
  }
  return lt_gemm_planned(g, config, GemmScalars(dtype, alpha, beta), bias, nullptr, device,
                         stream);
}

// The fallback: cuBLAS's own heuristic, on every call.
void cublas_gemm(const GemmCall& g, ScalarType dtype, ScalarType in_dtype, bool tf32,
                 double alpha_arg, double beta_arg, int device, cudaStream_t stream,
                 const char* fn) {
  const cudaDataType_t t = cuda_data_type(dtype, fn);
  const cudaDataType_t in = cuda_data_type(in_dtype, fn);
  const cublasComputeType_t compute = compute_type(dtype, in_dtype, tf32);
  const GemmScalars scalars(dtype, alpha_arg, beta_arg);
  const void* alpha = scalars.alpha();
  const void* beta = scalars.beta();
  cublasHandle_t h = cublas_handle(device, stream);
  const int m = to_int(g.m, "size", fn), n = to_int(g.n, "size", fn),
            k = to_int(g.k, "size", fn);
  const int lda = to_int(g.lda, "leading dimension", fn),
            ldb = to_int(g.ldb, "leading dimension", fn),
            ldc = to_int(g.ldc, "leading dimension", fn);
  ++t_plans.stats.fallback_calls;
  profiling::LibraryCallTimer timer("cublasGemmEx");
  if (g.batch == 1) {
    AOTRT_CUBLAS_CHECK(cublasGemmEx(h, g.op_a, g.op_b, m, n, k, alpha, g.a, in, lda, g.b, in,
                                    ldb, beta, g.c, t, ldc, compute, CUBLAS_GEMM_DEFAULT));
  } else {
    AOTRT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, g.op_a, g.op_b, m, n, k, alpha, g.a, in, lda, g.stride_a, g.b, in, ldb, g.stride_b,
        beta, g.c, t, ldc, g.stride_c, to_int(g.batch, "batch count", fn), compute,
        CUBLAS_GEMM_DEFAULT));
  }
}

void run_gemm(const GemmCall& g, ScalarType dtype, ScalarType in_dtype, bool tf32,
              double alpha, double beta, int device, cudaStream_t stream, const char* fn) {
  if (!lt_gemm(g, dtype, in_dtype, tf32, alpha, beta, nullptr, device, stream, fn)) {
    cublas_gemm(g, dtype, in_dtype, tf32, alpha, beta, device, stream, fn);
  }
}

// --- The op ------------------------------------------------------------------------------

// A decode step's mm, or addmm with a bias vector, on the GEMV kernel when its operands
// fit it (Note [Decode GEMV]): x's rows and y's columns (the weight's rows) of unit
// stride, self broadcast along the rows and apart from the output. False: nothing queued.
bool decode_gemv_served(const StridedView& out, const OwnedView* self, const StridedView& x,
                        const StridedView& y, double beta, double alpha, int device,
                        cudaStream_t stream) {
  const int64_t M = x.sizes[0], K = x.sizes[1], N = y.sizes[1];
  if (x.dtype != out.dtype || y.dtype != out.dtype) return false;
  if ((K > 1 && (x.strides[1] != 1 || y.strides[0] != 1))) return false;
  DecodeGemvCall c{};
  c.dtype = out.dtype;
  c.M = M;
  c.N = N;
  c.K = K;
  c.x = x.data;
  c.ldx = M > 1 ? x.strides[0] : K;
  c.w = y.data;
  c.ldw = N > 1 ? y.strides[1] : K;
  c.out = out.data;
  c.out_row_stride = out.strides[0];
  c.out_col_stride = out.strides[1];
  c.alpha = static_cast<float>(alpha);
  if (self != nullptr) {
    const StridedView s = self->strided();
    if (beta != 1.0 || s.dtype != out.dtype || (M > 1 && s.strides[0] != 0) ||
        (N > 1 && s.strides[1] != 1) || overlaps(s, out)) {
      return false;
    }
    c.bias = s.data;
  }
  return decode_gemv(c, device, stream);
}

// Everything past argument checking, on views: out [batch,] M x N, x
// [batch,] M x K, y [batch,] K x N, self already broadcast to out's sizes
// (null when beta * self is not wanted).
void run_matmul(const StridedView& out_view, const OwnedView* self, const StridedView& x_view,
                const StridedView& y_view, double beta_arg, double alpha_arg, bool tf32,
                const char* fn) {
  const int64_t numel = out_view.numel();
  if (numel == 0) return;
  const int ndim = static_cast<int>(out_view.dim());
  const int64_t M = x_view.sizes[ndim - 2], K = x_view.sizes[ndim - 1],
                N = y_view.sizes[ndim - 1];
  const ScalarType dtype = out_view.dtype;
  const int device = out_view.device.index;
  const bool use_self = self != nullptr;
  OwnedView self_view;
  if (use_self) self_view = *self;
  const size_t out_bytes = static_cast<size_t>(numel) * out_view.itemsize();

  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const double beta = use_self ? beta_arg : 0.0;

  // K == 0: the product is empty, so out = beta * self (ATen special-cases it too).
  if (K == 0) {
    if (!use_self) {
      fill_zero_device(out_view, stream);
      return;
    }
    DeviceBuffer tmp(device, out_bytes);
    OwnedView dense = own(out_view);
    dense.data = static_cast<char*>(tmp.data());
    const auto strides = contiguous_strides(out_view.sizes);
    std::copy(strides.begin(), strides.end(), dense.strides);
    copy_device(dense.strided(), self_view.strided(), stream);
    if (beta != 1.0) {
      const cudaDataType_t t = cuda_data_type(dtype, fn);
      const GemmScalars scalars(dtype, 1.0, beta);
      AOTRT_CUBLAS_CHECK(cublasScalEx(cublas_handle(device, stream),
                                      to_int(numel, "element count", fn), scalars.beta(),
                                      scalars.type(), tmp.data(), t, 1, scalars.type()));
    }
    scatter_for_library(out_view, tmp.data(), stream);
    return;
  }

  const bool out_aliases_input = overlaps(out_view, x_view) || overlaps(out_view, y_view);
  if (ndim == 2 && M <= kMaxDecodeGemvRows && !out_aliases_input &&
      decode_gemv_served(out_view, use_self ? &self_view : nullptr, x_view, y_view, beta_arg,
                         alpha_arg, device, stream)) {
    return;
  }

  // The output: in place when addressable and not read as an input, else a
  // dense row-major temporary scattered back at the end.
  OwnedView out_owned = own(out_view);
  std::optional<Addressed> out_addr = address(matrices_of(out_owned), true);
  DeviceBuffer out_tmp;
  OwnedView target = out_owned;
  if (!out_addr || out_aliases_input) {
    out_tmp = DeviceBuffer(device, out_bytes);
    target.data = static_cast<char*>(out_tmp.data());
    const auto strides = contiguous_strides(out_view.sizes);
    std::copy(strides.begin(), strides.end(), target.strides);
    out_addr = address(matrices_of(target), true);
  }
  // The inputs: in place when addressable, else packed (Note [Interleaved batches]).
  std::vector<PackedInput> packs;
  auto addressed_input = [&](const StridedView& v) -> Addressed {
    OwnedView o = own(v);
    Matrices m = matrices_of(o);
    if (auto addr = address(m, out_addr->row_major)) return *addr;
    // A broadcast batch (stride 0) packs one matrix and stays broadcast.
    const bool broadcast = o.ndim == 3 && m.batch > 1 && m.batch_stride == 0;
    OwnedView src = o;
    if (broadcast) {
      src.ndim = 2;
      src.sizes[0] = o.sizes[1];
      src.sizes[1] = o.sizes[2];
      src.strides[0] = o.strides[1];
      src.strides[1] = o.strides[2];
    }
    packs.push_back(pack_for_library(src.strided(), stream));
    OwnedView dense = own(packs.back().view);
    Matrices pm = matrices_of(dense);
    if (broadcast) {
      pm.batch = m.batch;
      pm.batch_stride = 0;
    }
    auto addr = address(pm, true);
    AOTRT_CHECK(addr.has_value(), kInternal, fn, ": a packed operand is not addressable");
    return *addr;
  };
  const Addressed x_addr = addressed_input(x_view);
  const Addressed y_addr = addressed_input(y_view);
  const GemmCall call = plan_gemm(*out_addr, x_addr, y_addr);

  // addmm with a bias vector: the cuBLASLt epilogue adds it, no copy of self.
  // PyTorch uses the same path with the same guards (sizes > 1; cuBLASLt
  // has had bugs with degenerate shapes).
  bool done = false;
  if (use_self && ndim == 2 && beta_arg == 1.0 && out_addr->row_major &&
      dtype != ScalarType::Float64 && x_view.dtype == dtype &&
      self_view.dtype == dtype && self_view.strides[0] == 0 &&
      (self_view.strides[1] == 1 || N == 1) && M > 1 && N > 1 && K > 1 &&
      !overlaps(self_view.strided(), target.strided())) {
    done = lt_gemm(call, dtype, dtype, tf32, alpha_arg, 0.0, self_view.data, device, stream,
                   fn);
  }
  if (!done) {
    if (use_self) {
      // beta * self enters through C: copy the broadcast self into the target
      // first, unless it already is the target.
      const StridedView self_strided = self_view.strided();
      const StridedView target_strided = target.strided();
      if (!same_view(self_strided, target_strided)) {
        if (overlaps(self_strided, target_strided)) {
          // Partly the target's own memory: take a copy before writing it.
          DeviceBuffer staged(device, out_bytes);
          gather_for_library(staged.data(), self_strided, stream);
          OwnedView dense = target;
          dense.data = static_cast<char*>(staged.data());
          const auto strides = contiguous_strides(out_view.sizes);
          std::copy(strides.begin(), strides.end(), dense.strides);
          copy_device(target_strided, dense.strided(), stream);
        } else {
          copy_device(target_strided, self_strided, stream);
        }
      }
    }
    run_gemm(call, dtype, x_view.dtype, tf32, alpha_arg, beta, device, stream, fn);
  }
  if (out_tmp.data() != nullptr) scatter_for_library(out_view, out_tmp.data(), stream);
}

struct MatmulArgs {
  const TensorImpl* out;
  const TensorImpl* self;  // the addend; null for mm and bmm
  const TensorImpl* x;     // [batch,] M x K
  const TensorImpl* y;     // [batch,] K x N
  double beta = 0.0;
  double alpha = 1.0;
  int ndim = 2;
  const char* fn;
  // float16/bfloat16 operands into a float32 out (Note [Matmul with an output dtype]).
  bool widen = false;
};

void check_operand(const TensorImpl& t, int ndim, const char* name, const char* fn) {
  AOTRT_CHECK(t.device().is_cuda(), kInvalidArgument, fn, ": '", name,
              "' is on ", t.device().str(), ", not on a CUDA device");
  AOTRT_CHECK(t.dim() == ndim, kInvalidArgument, fn, ": '", name, "' must have ", ndim,
              " dims but has ", t.dim());
}

void matmul(const MatmulArgs& a) {
  const char* fn = a.fn;
  const TensorImpl& out = *a.out;
  const char* x_name = a.ndim == 2 ? (a.self ? "mat1" : "self") : (a.self ? "batch1" : "self");
  const char* y_name = a.ndim == 2 ? "mat2" : (a.self ? "batch2" : "mat2");
  check_operand(out, a.ndim, "out", fn);
  check_operand(*a.x, a.ndim, x_name, fn);
  check_operand(*a.y, a.ndim, y_name, fn);
  AOTRT_CHECK(a.x->device() == out.device() && a.y->device() == out.device(),
              kInvalidArgument, fn, ": operands are on different devices (out on ",
              out.device().str(), ", ", x_name, " on ", a.x->device().str(), ", ", y_name,
              " on ", a.y->device().str(), ")");
  const ScalarType dtype = out.dtype();
  // cuBLAS has no GEMM for these: Note [Integer matmul on CUDA] (ops/int_matmul.cu).
  const bool integral = dtype == ScalarType::UInt8 || dtype == ScalarType::Int8 ||
                        dtype == ScalarType::Int16 || dtype == ScalarType::Int32 ||
                        dtype == ScalarType::Int64;
  if (!integral) (void)cuda_data_type(dtype, fn);
  const ScalarType in_dtype = a.x->dtype();
  const bool widened = a.widen && dtype == ScalarType::Float32 &&
                       (in_dtype == ScalarType::Float16 || in_dtype == ScalarType::BFloat16);
  AOTRT_CHECK((in_dtype == dtype || widened) && a.y->dtype() == in_dtype, kInvalidArgument, fn,
              ": dtypes differ (out ", dtype_name(dtype), ", ", x_name, " ",
              dtype_name(a.x->dtype()), ", ", y_name, " ", dtype_name(a.y->dtype()), ")");

  const auto xs = a.x->sizes();
  const auto ys = a.y->sizes();
  const int r = a.ndim - 2;
  const int64_t batch = a.ndim == 3 ? xs[0] : 1;
  const int64_t M = xs[r], K = xs[r + 1], N = ys[r + 1];
  AOTRT_CHECK(ys[r] == K && (a.ndim == 2 || ys[0] == batch), kInvalidArgument, fn, ": ",
              x_name, " and ", y_name, " shapes cannot be multiplied (",
              a.ndim == 3 ? std::to_string(batch) + "x" : "", M, "x", K, " and ",
              a.ndim == 3 ? std::to_string(ys[0]) + "x" : "", ys[r], "x", N, ")");
  int64_t want[3];
  if (a.ndim == 3) {
    want[0] = batch;
    want[1] = M;
    want[2] = N;
  } else {
    want[0] = M;
    want[1] = N;
  }
  AOTRT_CHECK(std::equal(out.sizes().begin(), out.sizes().end(), want), kInvalidArgument, fn,
              ": 'out' has the wrong shape for the result (", a.ndim == 3 ? batch : M, "x",
              a.ndim == 3 ? M : N, a.ndim == 3 ? "x" + std::to_string(N) : "",
              "); aotrt does not resize out= tensors");
  for (int d = 0; d < a.ndim; ++d) {
    AOTRT_CHECK(out.strides()[d] != 0 || out.sizes()[d] <= 1, kUnsupported, fn,
                ": 'out' has stride 0 in dim ", d,
                ", so its elements overlap (ATen refuses such out= tensors too)");
  }

  const bool use_self = a.self != nullptr && a.beta != 0.0;
  OwnedView self_view;
  if (use_self) {
    const TensorImpl& s = *a.self;
    AOTRT_CHECK(s.device() == out.device(), kInvalidArgument, fn, ": 'self' is on ",
                s.device().str(), " but out is on ", out.device().str());
    AOTRT_CHECK(integral ? s.dtype() == dtype : is_floating(s.dtype()), kInvalidArgument, fn,
                ": 'self' has dtype ", dtype_name(s.dtype()),
                integral ? ", not out's" : ", not a floating dtype");
    self_view = expand_to(s, want, a.ndim, fn);
  }
  if (integral) {
    const StridedView self_strided = use_self ? self_view.strided() : StridedView{};
    integer_matmul(strided_view(out), use_self ? &self_strided : nullptr, strided_view(*a.x),
                   strided_view(*a.y), a.beta, a.alpha, fn);
    return;
  }
  run_matmul(strided_view(out), use_self ? &self_view : nullptr, strided_view(*a.x),
             strided_view(*a.y), a.beta, a.alpha, matmul_allows_tf32(), fn);
}

// --- _scaled_mm (Note [Scaled matmul] in ops/matmul.h) ---------------------------------

// A scale's first element (a one-element tensor, or the contiguous vector of a
// rowwise scale), as cuBLASLt reads it from the device.
const void* scale_ptr(const TensorImpl& scale) { return scale.data_ptr(); }

// The cudaDataType of a float8 GEMM's operand or output.
cudaDataType_t scaled_gemm_type(ScalarType t, const char* what, const char* fn) {
  switch (t) {
    case ScalarType::Float8_e4m3fn: return CUDA_R_8F_E4M3;
    case ScalarType::Float8_e5m2: return CUDA_R_8F_E5M2;
    case ScalarType::Float32: return CUDA_R_32F;
    case ScalarType::BFloat16: return CUDA_R_16BF;
    case ScalarType::Float16: return CUDA_R_16F;
    default:
      AOTRT_FAIL(kUnsupported, fn, ": '", what, "' is ", dtype_name(t),
                 "; cuBLASLt's float8 GEMM takes float8_e4m3fn and float8_e5m2 operands (the "
                 "fnuz formats are AMD's) and writes float32, bfloat16, float16, float8_e4m3fn "
                 "or float8_e5m2");
  }
}

// ATen's check: compute capability 8.9 or later, read once per device.
void check_float8_device(int device, const char* fn) {
  static std::array<std::atomic<int>, 64> capabilities{};  // 10 * major + minor; 0: unread
  int cap = device >= 0 && device < 64 ? capabilities[static_cast<size_t>(device)].load(std::memory_order_relaxed) : 0;
  if (cap == 0) {
    int major = 0, minor = 0;
    AOTRT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    AOTRT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    cap = 10 * major + minor;
    if (device >= 0 && device < 64) {
      capabilities[static_cast<size_t>(device)].store(cap, std::memory_order_relaxed);
    }
  }
  AOTRT_CHECK(cap >= 89, kUnsupported, fn,
              ": torch._scaled_mm is only supported on CUDA devices with compute capability >= "
              "9.0 or 8.9; device ", device, " has ", cap / 10, ".", cap % 10);
}

// Everything of _scaled_mm past the device-independent checks (ops/matmul.cpp): ATen's
// CUDA checks, then one cuBLASLt call through the GEMM plans (Note [Scaled GEMM plans]).
void scaled_matmul(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                   const TensorImpl& scale_a, const TensorImpl& scale_b, const TensorImpl* bias,
                   const TensorImpl* scale_result, bool rowwise, bool fast_accum,
                   const char* fn) {
  const std::pair<const TensorImpl*, const char*> operands[] = {
      {&self, "self"},       {&mat2, "mat2"}, {&scale_a, "scale_a"},
      {&scale_b, "scale_b"}, {bias, "bias"},  {scale_result, "scale_result"}};
  for (const auto& [t, name] : operands) {
    AOTRT_CHECK(t == nullptr || t->device() == out.device(), kInvalidArgument, fn,
                ": expected all tensors on ", out.device().str(), ", but '", name, "' is on ",
                t->device().str());
  }
  const int device = out.device().index;
  check_float8_device(device, fn);
  const int64_t M = self.sizes()[0], K = self.sizes()[1], N = mat2.sizes()[1];
  AOTRT_CHECK(K % 16 == 0, kInvalidArgument, fn,
              ": Expected trailing dimension of mat1 to be divisible by 16 but got mat1 shape: (",
              M, "x", K, ").");
  AOTRT_CHECK(N % 16 == 0, kInvalidArgument, fn, ": mat2 shape (", K, "x", N,
              ") must be divisible by 16");
  const cudaDataType_t a_type = scaled_gemm_type(self.dtype(), "self", fn);
  const cudaDataType_t b_type = scaled_gemm_type(mat2.dtype(), "mat2", fn);
  AOTRT_CHECK(is_float8(self.dtype()) && is_float8(mat2.dtype()), kInvalidArgument, fn,
              ": Expected mat1 and mat2 to be Float8 matrices, got ", dtype_name(self.dtype()),
              " and ", dtype_name(mat2.dtype()));
  AOTRT_CHECK(self.dtype() != ScalarType::Float8_e5m2 || mat2.dtype() != ScalarType::Float8_e5m2,
              kInvalidArgument, fn, ": Multiplication of two Float8_e5m2 matrices is not supported");
  const ScalarType out_dtype = out.dtype();
  const cudaDataType_t d_type = scaled_gemm_type(out_dtype, "out", fn);
  if (bias != nullptr) {
    const ScalarType b = bias->dtype();
    AOTRT_CHECK(out_dtype != ScalarType::Float32, kInvalidArgument, fn,
                ": Bias is not supported when out_dtype is set to Float32");
    AOTRT_CHECK(b == ScalarType::BFloat16 || b == ScalarType::Float16, kInvalidArgument, fn,
                ": Bias must be BFloat16 or Half, but got ", dtype_name(b));
    AOTRT_CHECK(out_dtype != ScalarType::BFloat16 || b == ScalarType::BFloat16, kInvalidArgument,
                fn, ": Bias must be BFloat16 to compute ", dtype_name(out_dtype),
                " output, but got ", dtype_name(b));
    AOTRT_CHECK(out_dtype != ScalarType::Float16 || b == ScalarType::Float16, kInvalidArgument,
                fn, ": Bias must be Float16 to compute ", dtype_name(out_dtype),
                " output, but got ", dtype_name(b));
  }
  // cuBLASLt's float8 GEMMs on Hopper read A transposed and B not ("TN"): self
  // row-major and mat2 column-major, whatever out's layout (Note [Matmul layouts]).
  const StridedView out_view = strided_view(out), x_view = strided_view(self),
                    y_view = strided_view(mat2);
  const OwnedView x_owned = own(x_view), y_owned = own(y_view);
  const std::optional<int64_t> x_ld = row_major_ld(matrices_of(x_owned));
  const std::optional<int64_t> y_ld = col_major_ld(matrices_of(y_owned));
  AOTRT_CHECK(x_ld && y_ld, kInvalidArgument, fn,
              ": Only multiplication of row-major and column-major matrices is supported by "
              "cuBLASLt (self strides ", self.strides()[0], ", ", self.strides()[1],
              ", mat2 strides ", mat2.strides()[0], ", ", mat2.strides()[1], ")");
  if (M == 0 || N == 0) return;
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  if (K == 0) {  // ATen returns zeros, without the bias
    fill_zero_device(out_view, stream);
    return;
  }

  // The bias, dense and 16-byte aligned as the epilogue reads it.
  PackedInput bias_pack;
  const void* bias_ptr = nullptr;
  cudaDataType_t bias_type = CUDA_R_16F;
  if (bias != nullptr) {
    bias_type = scaled_gemm_type(bias->dtype(), "bias", fn);
    const StridedView bv = strided_view(*bias);
    bias_ptr = bv.data;
    if (!bias->is_contiguous() || pointer_alignment(bias_ptr) < 16) {
      bias_pack = pack_for_library(bv, stream);
      if (bias_pack.view.data == bv.data) {  // dense already, but misaligned: copy anyway
        bias_pack.buffer = DeviceBuffer(device, static_cast<size_t>(N) * bv.itemsize());
        gather_for_library(bias_pack.buffer.data(), bv, stream);
        bias_pack.view.data = static_cast<char*>(bias_pack.buffer.data());
      }
      bias_ptr = bias_pack.view.data;
    }
  }
  const Addressed x_addr{matrices_of(x_owned), true, *x_ld};
  const Addressed y_addr{matrices_of(y_owned), false, *y_ld};
  GemmCall call{};
  // One cuBLASLt call writing `out_addr`; false (nothing queued) when cuBLASLt has
  // no algorithm for it.
  auto gemm_into = [&](const Addressed& out_addr) {
    call = plan_gemm(out_addr, x_addr, y_addr);
    check_gemm_sizes(call, fn);
    // cuBLAS's A is mat2 for a row-major out (C^T = mat2^T self^T), self for a
    // column-major one; the scales follow their operands.
    const bool swapped = out_addr.row_major;
    LtScales scales;
    scales.a = swapped ? scale_ptr(scale_b) : scale_ptr(scale_a);
    scales.b = swapped ? scale_ptr(scale_a) : scale_ptr(scale_b);
    const bool d_scale = scale_result != nullptr && is_float8(out_dtype);
    if (d_scale) scales.d = scale_result->data_ptr();
    GemmConfig config = config_of(call, d_type, CUBLAS_COMPUTE_32F, bias_ptr, device);
    config.a_type = static_cast<int32_t>(swapped ? b_type : a_type);
    config.b_type = static_cast<int32_t>(swapped ? a_type : b_type);
    config.c_type = static_cast<int32_t>(bias != nullptr       ? bias_type
                                         : is_float8(out_dtype) ? CUDA_R_16F
                                                                : d_type);
    config.bias_type = bias != nullptr ? static_cast<int32_t>(bias_type) : -1;
    config.scale_mode = static_cast<int32_t>(rowwise ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F
                                                     : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F);
    config.d_scale = d_scale ? 1 : 0;
    config.fast_accum = fast_accum ? 1 : 0;
    return lt_gemm_planned(call, config, GemmScalars(ScalarType::Float32, 1.0, 0.0), bias_ptr,
                           &scales, device, stream);
  };

  // The output: in place when addressable, read by nothing, row-major when the
  // bias epilogue adds along its rows, and a layout cuBLASLt has an algorithm for
  // (its float8 kernels want 16-byte aligned leading dimensions); else a dense
  // row-major temporary scattered back.
  OwnedView target = own(out_view);
  std::optional<Addressed> out_addr = address(matrices_of(target), true);
  bool reads_out = overlaps(out_view, x_view) || overlaps(out_view, y_view);
  for (const TensorImpl* t : {&scale_a, &scale_b, bias, scale_result}) {
    if (t != nullptr) reads_out = reads_out || overlaps(out_view, strided_view(*t));
  }
  const bool in_place = out_addr && !reads_out && (bias == nullptr || out_addr->row_major);
  bool done = in_place && gemm_into(*out_addr);
  DeviceBuffer out_tmp;
  if (!done) {
    out_tmp = DeviceBuffer(device, static_cast<size_t>(M * N) * out_view.itemsize());
    target.data = static_cast<char*>(out_tmp.data());
    target.strides[0] = N;
    target.strides[1] = 1;
    out_addr = address(matrices_of(target), true);
    done = gemm_into(*out_addr);
  }
  AOTRT_CHECK(done, kUnsupported, fn, ": cuBLASLt has no algorithm for this float8 GEMM (", M,
              "x", K, " ", dtype_name(self.dtype()), " by ", K, "x", N, " ",
              dtype_name(mat2.dtype()), " into ", dtype_name(out_dtype),
              rowwise ? ", rowwise scales" : ", tensorwise scales",
              bias != nullptr ? ", with a bias" : "", "; lda ", call.lda, ", ldb ", call.ldb,
              ", ldc ", call.ldc, ")");
  if (out_tmp.data() != nullptr) scatter_for_library(out_view, out_tmp.data(), stream);
}

}  // namespace

void scaled_mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                   const TensorImpl& scale_a, const TensorImpl& scale_b, const TensorImpl* bias,
                   const TensorImpl* scale_result, bool rowwise, bool use_fast_accum,
                   const char* fn) {
  scaled_matmul(out, self, mat2, scale_a, scale_b, bias, scale_result, rowwise, use_fast_accum,
                fn);
}

void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
            const char* fn) {
  matmul(MatmulArgs{&out, nullptr, &self, &mat2, 0.0, 1.0, 2, fn});
}

void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha, const char* fn) {
  matmul(MatmulArgs{&out, &self, &mat1, &mat2, beta, alpha, 2, fn});
}

void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
             const char* fn) {
  matmul(MatmulArgs{&out, nullptr, &self, &mat2, 0.0, 1.0, 3, fn});
}

void mm_widening_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                     const char* fn) {
  matmul(MatmulArgs{&out, nullptr, &self, &mat2, 0.0, 1.0, 2, fn, /*widen=*/true});
}

void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn) {
  matmul(MatmulArgs{&out, &self, &batch1, &batch2, beta, alpha, 3, fn});
}

bool int8_mm_lt(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
                const char* fn) {
  const StridedView o = strided_view(out), x = strided_view(self), y = strided_view(mat2);
  if (o.numel() == 0 || x.sizes[1] == 0 || overlaps(o, x) || overlaps(o, y)) return false;
  const OwnedView oo = own(o), xo = own(x), yo = own(y);
  const std::optional<Addressed> out_addr = address(matrices_of(oo), true);
  if (!out_addr) return false;
  const std::optional<Addressed> x_addr = address(matrices_of(xo), out_addr->row_major);
  const std::optional<Addressed> y_addr = address(matrices_of(yo), out_addr->row_major);
  if (!x_addr || !y_addr) return false;
  const GemmCall call = plan_gemm(*out_addr, *x_addr, *y_addr);
  if (call.m > INT_MAX || call.n > INT_MAX || call.k > INT_MAX || call.lda > INT_MAX ||
      call.ldb > INT_MAX || call.ldc > INT_MAX) {
    return false;
  }
  const int device = o.device.index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  GemmConfig config = config_of(call, CUDA_R_32I, CUBLAS_COMPUTE_32I, nullptr, device);
  config.a_type = config.b_type = static_cast<int32_t>(CUDA_R_8I);
  (void)fn;
  return lt_gemm_planned(call, config, GemmScalars(ScalarType::Int32, 1.0, 0.0), nullptr,
                         nullptr, device, stream);
}

GemmPlanStats gemm_plan_stats() {
  GemmPlanStats stats = t_plans.stats;
  stats.plans_cached = t_plans.plans.size();
  stats.plan_capacity = kMaxGemmPlans;
  return stats;
}

void set_gemm_lt_refusal_for_testing(bool refuse) {
  t_plans.plans.clear();
  t_plans.refuse_for_testing = refuse;
}

bool cublas_addressable(const StridedView& m) {
  return m.dim() >= 2 && m.dim() <= 3 && address(matrices_of(own(m)), true).has_value();
}

void linear_views(const StridedView& out, const StridedView& x, const StridedView& y,
                  const StridedView* bias, bool tf32, const char* fn) {
  OwnedView b;
  if (bias != nullptr) {
    b.data = bias->data;
    b.dtype = bias->dtype;
    b.device = bias->device;
    b.ndim = 2;
    b.sizes[0] = out.sizes[0];
    b.sizes[1] = out.sizes[1];
    b.strides[0] = 0;
    b.strides[1] = bias->strides[0];
  }
  run_matmul(out, bias != nullptr ? &b : nullptr, x, y, 1.0, 1.0, tf32, fn);
}

}  // namespace aotrt::cuda
