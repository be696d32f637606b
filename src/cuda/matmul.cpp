// mm, addmm, bmm and baddbmm on cuBLAS (addmm with a bias vector on the
// cuBLASLt bias epilogue), reading every operand in place that cuBLAS can
// address and packing only the rest.
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
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/view.h"
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

// One cuBLAS call: C (m x n, column-major) = alpha op(A) op(B) + beta C, per batch.
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
cublasComputeType_t compute_type(ScalarType t, bool tf32) {
  if (t == ScalarType::Float64) return CUBLAS_COMPUTE_64F;
  return t == ScalarType::Float32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// alpha and beta in the compute type's scale type (double for CUBLAS_COMPUTE_64F,
// float otherwise), as cuBLAS reads them through void pointers.
struct GemmScalars {
  double d[2];
  float f[2];
  bool wide;
  GemmScalars(ScalarType t, double alpha, double beta)
      : d{alpha, beta},
        f{static_cast<float>(alpha), static_cast<float>(beta)},
        wide(t == ScalarType::Float64) {}
  const void* alpha() const { return wide ? static_cast<const void*>(&d[0]) : &f[0]; }
  const void* beta() const { return wide ? static_cast<const void*>(&d[1]) : &f[1]; }
  cudaDataType_t type() const { return wide ? CUDA_R_64F : CUDA_R_32F; }
};

void run_gemm(const GemmCall& g, ScalarType dtype, bool tf32, double alpha_arg, double beta_arg,
              int device, cudaStream_t stream, const char* fn) {
  const cudaDataType_t t = cuda_data_type(dtype, fn);
  const GemmScalars scalars(dtype, alpha_arg, beta_arg);
  const void* alpha = scalars.alpha();
  const void* beta = scalars.beta();
  cublasHandle_t h = cublas_handle(device, stream);
  const int m = to_int(g.m, "size", fn), n = to_int(g.n, "size", fn),
            k = to_int(g.k, "size", fn);
  const int lda = to_int(g.lda, "leading dimension", fn),
            ldb = to_int(g.ldb, "leading dimension", fn),
            ldc = to_int(g.ldc, "leading dimension", fn);
  profiling::LibraryCallTimer timer("cublasGemmEx");
  if (g.batch == 1) {
    AOTRT_CUBLAS_CHECK(cublasGemmEx(h, g.op_a, g.op_b, m, n, k, alpha, g.a, t, lda, g.b, t,
                                    ldb, beta, g.c, t, ldc, compute_type(dtype, tf32),
                                    CUBLAS_GEMM_DEFAULT));
  } else {
    AOTRT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, g.op_a, g.op_b, m, n, k, alpha, g.a, t, lda, g.stride_a, g.b, t, ldb, g.stride_b,
        beta, g.c, t, ldc, g.stride_c, to_int(g.batch, "batch count", fn),
        compute_type(dtype, tf32), CUBLAS_GEMM_DEFAULT));
  }
}

// --- The cuBLASLt bias epilogue (addmm with a bias vector) ---------------------------------

constexpr size_t kLtWorkspaceBytes = 4u << 20;

struct LtMatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  ~LtMatmulDesc() {
    if (desc) (void)cublasLtMatmulDescDestroy(desc);
  }
};
struct LtLayout {
  cublasLtMatrixLayout_t layout = nullptr;
  ~LtLayout() {
    if (layout) (void)cublasLtMatrixLayoutDestroy(layout);
  }
};
struct LtPreference {
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtPreference() {
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
  }
};

// A planned bias matmul: descriptors and the heuristic's algorithm, or
// `usable == false` when cuBLASLt offers none (the caller then falls back).
struct LtPlan {
  bool usable = false;
  LtMatmulDesc op;
  LtLayout a, b, c;
  cublasLtMatmulAlgo_t algo{};
};

using LtKey = std::tuple<int, int, int, int, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, uint32_t, uint32_t, uint32_t, uint32_t>;

// Per thread, because the bias pointer is set on the cached descriptor.
thread_local std::map<LtKey, std::unique_ptr<LtPlan>> t_lt_plans;

std::unique_ptr<LtPlan> make_lt_plan(const GemmCall& g, cudaDataType_t t,
                                     cublasComputeType_t compute, const void* bias,
                                     cublasLtHandle_t lt) {
  auto plan = std::make_unique<LtPlan>();
  AOTRT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op.desc, compute, CUDA_R_32F));
  AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      plan->op.desc, CUBLASLT_MATMUL_DESC_TRANSA, &g.op_a, sizeof g.op_a));
  AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      plan->op.desc, CUBLASLT_MATMUL_DESC_TRANSB, &g.op_b, sizeof g.op_b));
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      plan->op.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      plan->op.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  const bool ta = g.op_a != CUBLAS_OP_N, tb = g.op_b != CUBLAS_OP_N;
  AOTRT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a.layout, t, ta ? g.k : g.m,
                                                ta ? g.m : g.k, g.lda));
  AOTRT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b.layout, t, tb ? g.n : g.k,
                                                tb ? g.k : g.n, g.ldb));
  AOTRT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->c.layout, t, g.m, g.n, g.ldc));

  LtPreference pref;
  AOTRT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.pref));
  const uint64_t workspace = kLtWorkspaceBytes;
  AOTRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
  // Views at an offset are not 256-byte aligned, which the heuristic assumes
  // unless told.
  const uint32_t align_a = pointer_alignment(g.a), align_b = pointer_alignment(g.b),
                 align_c = pointer_alignment(g.c);
  AOTRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof align_a));
  AOTRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof align_b));
  AOTRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof align_c));
  AOTRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof align_c));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      lt, plan->op.desc, plan->a.layout, plan->b.layout, plan->c.layout, plan->c.layout,
      pref.pref, 1, &result, &found);
  if (status == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS &&
      result.workspaceSize <= kLtWorkspaceBytes) {
    plan->algo = result.algo;
    plan->usable = true;
  } else if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED) {
    AOTRT_CUBLAS_CHECK(status);
  }
  return plan;
}

// D = alpha op(A) op(B) + bias (broadcast along D's columns, i.e. along the
// rows of a row-major out). Returns false when cuBLASLt cannot serve it.
bool try_lt_bias(const GemmCall& g, const void* bias, ScalarType dtype, bool tf32, float alpha,
                 int device, cudaStream_t stream, const char* fn) {
  const cudaDataType_t t = cuda_data_type(dtype, fn);
  const cublasComputeType_t compute = compute_type(dtype, tf32);
  const LtKey key{device,
                  static_cast<int>(t),
                  static_cast<int>(compute),
                  static_cast<int>(g.op_a) * 4 + static_cast<int>(g.op_b),
                  g.m,
                  g.n,
                  g.k,
                  g.lda,
                  g.ldb,
                  g.ldc,
                  pointer_alignment(g.a),
                  pointer_alignment(g.b),
                  pointer_alignment(g.c),
                  pointer_alignment(bias)};
  cublasLtHandle_t lt = cublaslt_handle(device);
  auto& slot = t_lt_plans[key];
  if (!slot) slot = make_lt_plan(g, t, compute, bias, lt);
  LtPlan& plan = *slot;
  if (!plan.usable) return false;
  AOTRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      plan.op.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  DeviceBuffer workspace(device, kLtWorkspaceBytes);
  const float beta = 0.0f;
  profiling::LibraryCallTimer timer("cublasLtMatmul");
  const cublasStatus_t status =
      cublasLtMatmul(lt, plan.op.desc, &alpha, g.a, plan.a.layout, g.b, plan.b.layout, &beta,
                     g.c, plan.c.layout, g.c, plan.c.layout, &plan.algo, workspace.data(),
                     kLtWorkspaceBytes, stream);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
    plan.usable = false;
    return false;
  }
  AOTRT_CUBLAS_CHECK(status);
  return true;
}

// --- The op ------------------------------------------------------------------------------

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
  const float alpha = static_cast<float>(alpha_arg);  // the cuBLASLt path's (no float64)
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

  // The output: in place when addressable and not read as an input, else a
  // dense row-major temporary scattered back at the end.
  OwnedView out_owned = own(out_view);
  std::optional<Addressed> out_addr = address(matrices_of(out_owned), true);
  const bool out_aliases_input = overlaps(out_view, x_view) || overlaps(out_view, y_view);
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
      dtype != ScalarType::Float64 &&
      self_view.dtype == dtype && self_view.strides[0] == 0 &&
      (self_view.strides[1] == 1 || N == 1) && M > 1 && N > 1 && K > 1 &&
      !overlaps(self_view.strided(), target.strided())) {
    done = try_lt_bias(call, self_view.data, dtype, tf32, alpha, device, stream, fn);
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
    run_gemm(call, dtype, tf32, alpha_arg, beta, device, stream, fn);
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
  (void)cuda_data_type(dtype, fn);
  AOTRT_CHECK(a.x->dtype() == dtype && a.y->dtype() == dtype, kInvalidArgument, fn,
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
    AOTRT_CHECK(is_floating(s.dtype()), kInvalidArgument, fn, ": 'self' has dtype ",
                dtype_name(s.dtype()), ", not a floating dtype");
    self_view = expand_to(s, want, a.ndim, fn);
  }
  run_matmul(strided_view(out), use_self ? &self_view : nullptr, strided_view(*a.x),
             strided_view(*a.y), a.beta, a.alpha, matmul_allows_tf32(), fn);
}

}  // namespace

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

void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn) {
  matmul(MatmulArgs{&out, &self, &batch1, &batch2, beta, alpha, 3, fn});
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
