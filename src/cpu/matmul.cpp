// Matrix products on the CPU through OpenBLAS: mm, addmm, bmm, baddbmm.
//
// Note [BLAS-addressable views]
// gemm reads a matrix of R x C elements at row stride rs and column stride cs
// in place when one stride is 1 and the other is a valid leading dimension:
// row-major (cs == 1, ld = rs >= C) or column-major (rs == 1, ld = cs >= R);
// the stride of a dim of size 1 does not matter. That covers packed,
// transposed and row-strided views (a slice of columns, a chunk of a
// channels-last buffer) with no copy. Any other operand (both strides > 1,
// stride-0 rows, a leading dimension past int) is packed first, with one
// copy of the whole batched tensor into row- or column-major order, whichever
// lets the copy walk the source along its smaller stride. The permuted bmm
// input [2,64,400] with strides [1,800,2] is such a case: every batch matrix
// has strides [800,2], so it is packed row-major and the copy reads every
// other float of each source row. One copy of the whole tensor moves the same
// bytes as one per batch, with one temporary and one loop nest; no layout
// with the batch innermost (the source's own order) can be read by gemm.
//
// The result goes straight into out when out is addressable the same way,
// cannot overlap itself, and shares no memory with the operands; otherwise
// into a dense temporary that cpu::copy_strided then writes through out's
// strides. bfloat16 and float16 are computed in float32: operands are
// converted into float32 temporaries, the result is rounded once into out.
//
// Note [CPU gemm library]
// float32 gemms go to oneDNN's dnnl_sgemm, float64 ones to OpenBLAS. oneDNN
// generates its kernels for the CPU it runs on and takes its threads from the
// OpenMP pool the model's own loops use; OpenBLAS 0.3.21 picks its Haswell
// kernels on an AVX-512 AMD CPU and runs on a pthread pool of its own. One
// thread, this project's 2-core machine: 32x64 @ 64x192 took 8.8 us with
// OpenBLAS and 4.1 us with oneDNN, 32x128 @ 128x64 6.2 and 3.0, 256^3 324 and
// 153; only gemms under a microsecond were faster with OpenBLAS (by 0.1 us).
//
// Note [BLAS threads]
// For a small gemm, waking other threads costs more than they save, and a
// second pool (OpenBLAS's) fights the model's OpenMP threads, which keep
// spinning for a while after each parallel loop, for the cores: on 2 cores
// bmm_permuted's 2 x (64x400 @ 400x16) took 142 us p50 with OpenBLAS's
// threads and 32 us on the calling thread (aotrt bench). Gemms under
// kThreadedGemmMacs multiply-adds run on the calling thread; larger ones get
// the library's default. oneDNN's count is the calling thread's OpenMP one
// (set and restored around the call); OpenBLAS's is process-wide (0.3.21 has
// no per-thread setting), so concurrent runs may see each other's choice:
// that changes the speed of a gemm, never its result. A float32 gemm whose
// operands span more than kStreamedGemmBytes is threaded whatever its
// multiply-adds: it streams its operands from L3 or memory (a CNN's
// classifier, [1, K] @ [K, N], reads its weight once per run, after the
// convolutions have evicted it), and two cores stream them faster than one
// (aotrt bench --profile of freezing=True packages, this 2-core machine):
// resnet50's 1x2048 @ 2048x1000 took 412 us per run on one thread and 257 on
// two, resnet18's 1x512 @ 512x1000 128 and 80, mobilenet_v3_small's two
// linears 263 and 79.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/error.h"
#include "core/tensor.h"
#include "cpu/cpu.h"
#include "cpu/gemv.h"
#include "cpu/elements.h"
#include "cpu/onednn.h"
#include "cpu/ops.h"

namespace aotrt::cpu {
namespace {

constexpr int64_t kBlasIntMax = std::numeric_limits<blasint>::max();
using onednn::kThreadedGemmMacs;

// Note [BLAS threads]: OpenBLAS's count.
void use_blas_threads(double macs) {
  static const int all = std::max(openblas_get_num_threads(), 1);
  static std::atomic<int> current{all};
  const int want = macs < kThreadedGemmMacs ? 1 : all;
  if (current.exchange(want, std::memory_order_relaxed) != want) openblas_set_num_threads(want);
}

// cblas_sgemm's contract through oneDNN (Note [CPU gemm library]), whose
// dnnl_sgemm is row-major only: a column-major product is the row-major one
// of the transposes, C^T = op(B)^T op(A)^T, as OpenBLAS's own cblas does it.
void sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
           int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
           float beta, float* c, int64_t ldc, const char* fn) {
  const char ca = ta == CblasTrans ? 'T' : 'N', cb = tb == CblasTrans ? 'T' : 'N';
  const dnnl_status_t status =
      order == CblasRowMajor
          ? dnnl_sgemm(ca, cb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
          : dnnl_sgemm(cb, ca, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
  AOTRT_CHECK(status == dnnl_success, kBackend, fn, ": dnnl_sgemm of ", m, "x", k, " by ", k,
              "x", n, " failed with oneDNN status ", static_cast<int>(status));
}

// A batch of R x C matrices in memory, strides in elements. It borrows the
// memory; `owner` keeps a packed temporary alive when there is one.
struct Matrices {
  char* data = nullptr;
  ScalarType dtype = ScalarType::Float32;
  std::array<int64_t, 3> sizes{};    // batch, rows, cols
  std::array<int64_t, 3> strides{};  // batch, rows, cols
  std::shared_ptr<TensorImpl> owner;

  int64_t batch() const { return sizes[0]; }
  int64_t rows() const { return sizes[1]; }
  int64_t cols() const { return sizes[2]; }
  StridedView view() const {
    return StridedView{data, sizes, strides, dtype, cpu_device()};
  }
};

// A 2-d tensor is one batch of stride 0.
Matrices matrices_of(const TensorImpl& t) {
  Matrices m;
  m.data = static_cast<char*>(t.data_ptr());
  m.dtype = t.dtype();
  if (t.dim() == 2) {
    m.sizes = {1, t.sizes()[0], t.sizes()[1]};
    m.strides = {0, t.strides()[0], t.strides()[1]};
  } else {
    m.sizes = {t.sizes()[0], t.sizes()[1], t.sizes()[2]};
    m.strides = {t.strides()[0], t.strides()[1], t.strides()[2]};
  }
  return m;
}

// How gemm reads one matrix of a batch; see Note [BLAS-addressable views].
struct BlasLayout {
  bool addressable = false;
  bool col_major = false;
  int64_t ld = 0;
};

BlasLayout blas_layout(const Matrices& m) {
  const int64_t r = m.rows(), c = m.cols(), rs = m.strides[1], cs = m.strides[2];
  const int64_t r1 = std::max<int64_t>(r, 1), c1 = std::max<int64_t>(c, 1);
  if ((cs == 1 || c <= 1) && (r <= 1 || rs >= c1)) {
    const int64_t ld = r <= 1 ? c1 : rs;
    if (ld <= kBlasIntMax) return {true, false, ld};
  }
  if ((rs == 1 || r <= 1) && (c <= 1 || cs >= r1)) {
    const int64_t ld = c <= 1 ? r1 : cs;
    if (ld <= kBlasIntMax) return {true, true, ld};
  }
  return {};
}

// New dense memory for batch x rows x cols in `dtype`, row- or column-major.
Matrices dense_matrices(int64_t batch, int64_t rows, int64_t cols, ScalarType dtype,
                        bool col_major, const char* fn) {
  Matrices m;
  m.dtype = dtype;
  m.sizes = {batch, rows, cols};
  m.strides = col_major ? std::array<int64_t, 3>{rows * cols, 1, rows}
                        : std::array<int64_t, 3>{rows * cols, cols, 1};
  m.owner = empty_strided(m.sizes, m.strides, dtype, cpu_device(), fn);
  m.data = static_cast<char*>(m.owner->data_ptr());
  return m;
}

// A dense copy of m in `dtype`, ordered so the copy follows m's smaller stride.
Matrices pack(const Matrices& m, ScalarType dtype, const char* fn) {
  const bool col_major = m.rows() > 1 && m.cols() > 1 && m.strides[1] < m.strides[2];
  Matrices packed = dense_matrices(m.batch(), m.rows(), m.cols(), dtype, col_major, fn);
  copy_strided(packed.view(), m.view());
  return packed;
}

// m itself when gemm can read it in `dtype`, else a packed copy.
Matrices readable(const Matrices& m, ScalarType dtype, const char* fn) {
  if (m.dtype == dtype && blas_layout(m).addressable) return m;
  return pack(m, dtype, fn);
}

// Bytes [begin, end) a view can touch; empty for no elements.
struct AddressRange {
  uintptr_t begin = 0, end = 0;
};
AddressRange address_range(const StridedView& v) {
  if (v.numel() == 0 || v.data == nullptr) return {};
  int64_t last = 0;
  for (int64_t d = 0; d < v.dim(); ++d) last += (v.sizes[d] - 1) * v.strides[d];
  const auto begin = reinterpret_cast<uintptr_t>(v.data);
  return {begin, begin + static_cast<uintptr_t>((last + 1) * static_cast<int64_t>(v.itemsize()))};
}
bool may_overlap(const StridedView& a, const StridedView& b) {
  const AddressRange x = address_range(a), y = address_range(b);
  return x.begin < x.end && y.begin < y.end && x.begin < y.end && y.begin < x.end;
}
bool same_view(const StridedView& a, const StridedView& b) {
  return a.data == b.data && a.dtype == b.dtype &&
         std::equal(a.sizes.begin(), a.sizes.end(), b.sizes.begin(), b.sizes.end()) &&
         std::equal(a.strides.begin(), a.strides.end(), b.strides.begin(), b.strides.end());
}

// True when no two elements of the view can share memory: with the dims
// ordered by stride, each stride steps past everything the inner dims reach.
// (Sufficient, not necessary; a view it rejects is written through a temporary.)
bool surely_non_overlapping(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  std::array<int64_t, 64> order{};
  int n = 0;
  for (size_t d = 0; d < sizes.size() && n < 64; ++d) {
    if (sizes[d] > 1) order[n++] = static_cast<int>(d);
  }
  std::sort(order.begin(), order.begin() + n,
            [&](int a, int b) { return strides[a] < strides[b]; });
  int64_t reach = 0;  // furthest element offset the inner dims reach
  for (int k = 0; k < n; ++k) {
    const int64_t d = order[k];
    if (strides[d] <= reach) return false;
    reach += (sizes[d] - 1) * strides[d];
  }
  return true;
}

// One product's operands, resolved and checked by its entry point.
struct Gemm {
  const char* fn;
  Matrices out, a, b;  // out: B x M x N, a: B x M x K, b: B x K x N
  std::optional<Matrices> self;  // broadcast to out's sizes; none for mm and bmm
  double beta = 0, alpha = 1;
};

// Multiplies every element of a dense temporary by s.
void scale_dense(const Matrices& m, double s) {
  const int64_t n = m.batch() * m.rows() * m.cols();
  if (m.dtype == ScalarType::Float64) {
    auto* p = reinterpret_cast<double*>(m.data);
    for (int64_t i = 0; i < n; ++i) p[i] *= s;
  } else {
    auto* p = reinterpret_cast<float*>(m.data);
    const auto f = static_cast<float>(s);
    for (int64_t i = 0; i < n; ++i) p[i] *= f;
  }
}

void check_blas_dim(int64_t v, const char* what, const char* fn) {
  AOTRT_CHECK(v <= kBlasIntMax, kUnsupported, fn, ": ", what, " = ", v,
              " exceeds the BLAS integer range (", kBlasIntMax, ")");
}

// Note [Integer matmul on the CPU]
// ATen's CPU addmm serves uint8, int8, int16, int32 and int64 with its own
// loops (no BLAS), exactly in the integer type: products and sums wrap on
// overflow, and beta and alpha are cast to the integer type (truncating
// 1.5 to 1). Sums and products modulo 2^64 keep the low bits of any narrower
// type, so aotrt packs the operands into row-major int64, computes in uint64
// (wrap-around without signed overflow), and the copy into out truncates to
// out's dtype. Rows of the batch run in parallel (OpenMP) when there is
// enough work; the loop order i-k-j walks b and c along their rows.
void run_integer_gemm(const Gemm& g, const Matrices* self) {
  const int64_t B = g.out.batch(), M = g.out.rows(), N = g.out.cols(), K = g.a.cols();
  const Matrices a = dense_matrices(B, M, K, ScalarType::Int64, false, g.fn);
  const Matrices b = dense_matrices(B, K, N, ScalarType::Int64, false, g.fn);
  const Matrices c = dense_matrices(B, M, N, ScalarType::Int64, false, g.fn);
  copy_strided(a.view(), g.a.view());
  copy_strided(b.view(), g.b.view());
  if (self != nullptr) copy_strided(c.view(), self->view());
  const auto* pa = reinterpret_cast<const uint64_t*>(a.data);
  const auto* pb = reinterpret_cast<const uint64_t*>(b.data);
  auto* pc = reinterpret_cast<uint64_t*>(c.data);
  // beta and alpha become integers as ATen's Scalar does: refused when they do not fit
  // (a fuzzed alpha of -inf was cast to int64, which is undefined).
  const auto as_integer = [&](double v, const char* name) {
    AOTRT_CHECK(v >= -0x1p63 && v < 0x1p63, kInvalidArgument, g.fn, ": ", name, " ", v,
                " cannot be converted to an integer without overflow");
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  };
  const uint64_t beta = self != nullptr ? as_integer(g.beta, "beta") : 0;
  const uint64_t alpha = as_integer(g.alpha, "alpha");
  const int64_t rows = B * M;
#pragma omp parallel for schedule(static) if (rows > 1 && rows * N * K >= 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t batch = r / M;
    const uint64_t* ar = pa + r * K;
    const uint64_t* bb = pb + batch * K * N;
    uint64_t* cr = pc + r * N;
    for (int64_t j = 0; j < N; ++j) cr[j] *= beta;  // beta == 0 for mm, bmm
    for (int64_t k = 0; k < K; ++k) {
      const uint64_t x = alpha * ar[k];
      const uint64_t* br = bb + k * N;
      for (int64_t j = 0; j < N; ++j) cr[j] += x * br[j];
    }
  }
  copy_strided(g.out.view(), c.view());
}

ScalarType compute_dtype(ScalarType t, const char* fn) {
  switch (t) {
    case ScalarType::Float32:
    case ScalarType::Float64:
      return t;
    case ScalarType::BFloat16:
    case ScalarType::Float16:
      return ScalarType::Float32;
    default:
      AOTRT_FAIL(kUnsupported, fn, ": dtype ", dtype_name(t),
                 " is not served: the CPU matmul serves float32, float64, bfloat16, "
                 "float16, uint8, int8, int16, int32 and int64, as ATen's CPU addmm");
  }
}

void run_gemm(const Gemm& g) {
  const int64_t B = g.out.batch(), M = g.out.rows(), N = g.out.cols(), K = g.a.cols();
  if (is_aten_integral(g.out.dtype)) {
    if (B == 0 || M == 0 || N == 0) return;
    run_integer_gemm(g, g.self && g.beta != 0 ? &*g.self : nullptr);
    return;
  }
  const ScalarType ct = compute_dtype(g.out.dtype, g.fn);
  if (B == 0 || M == 0 || N == 0) return;
  check_blas_dim(M, "M", g.fn);
  check_blas_dim(N, "N", g.fn);
  check_blas_dim(K, "K", g.fn);
  // beta == 0: self is not read, so NaN in it cannot reach out.
  const Matrices* self = g.self && g.beta != 0 ? &*g.self : nullptr;
  const StridedView out_view = g.out.view();

  // An empty sum: out = beta * self, or zeros.
  if (K == 0) {
    if (self == nullptr) {
      fill_zero(out_view);
      return;
    }
    Matrices c = dense_matrices(B, M, N, ct, false, g.fn);
    copy_strided(c.view(), self->view());
    if (g.beta != 1) scale_dense(c, g.beta);
    copy_strided(out_view, c.view());
    return;
  }

  // Few rows of bfloat16/float16 against a weight whose columns lie along K
  // (a linear layer's [N, K] weight, transposed): read in place, widened in
  // registers (Note [Few-row products]), instead of a float32 copy of it.
  if (ct != g.out.dtype && M <= kMaxFewRows && g.b.strides[1] == 1 && g.b.dtype == g.out.dtype) {
    const Matrices x = dense_matrices(B, M, K, ScalarType::Float32, false, g.fn);
    copy_strided(x.view(), g.a.view());
    const Matrices c = dense_matrices(B, M, N, ScalarType::Float32, false, g.fn);
    const size_t wes = element_size(g.b.dtype);
    for (int64_t i = 0; i < B; ++i) {
      few_rows_product(reinterpret_cast<const float*>(x.data) + i * M * K, M, K,
                       g.b.data + i * g.b.strides[0] * static_cast<int64_t>(wes), g.b.dtype,
                       g.b.strides[2], N, reinterpret_cast<float*>(c.data) + i * M * N, N);
    }
    if (g.alpha != 1) scale_dense(c, g.alpha);
    if (self != nullptr) {  // out = beta * self + alpha * (a @ b), rounded once
      const Matrices sf = dense_matrices(B, M, N, ScalarType::Float32, false, g.fn);
      copy_strided(sf.view(), self->view());
      auto* cp = reinterpret_cast<float*>(c.data);
      const auto* sp = reinterpret_cast<const float*>(sf.data);
      const auto beta = static_cast<float>(g.beta);
      for (int64_t i = 0; i < B * M * N; ++i) cp[i] += beta * sp[i];
    }
    copy_strided(out_view, c.view());
    return;
  }

  // Where the result goes: out itself, or a temporary.
  const bool self_is_out = self != nullptr && same_view(self->view(), out_view);
  const bool direct = g.out.dtype == ct && blas_layout(g.out).addressable &&
                      surely_non_overlapping(g.out.sizes, g.out.strides) &&
                      !may_overlap(out_view, g.a.view()) && !may_overlap(out_view, g.b.view()) &&
                      (self == nullptr || self_is_out || !may_overlap(out_view, self->view()));
  Matrices c = direct ? g.out : dense_matrices(B, M, N, ct, false, g.fn);
  if (self != nullptr && !(direct && self_is_out)) copy_strided(c.view(), self->view());

  const Matrices a = readable(g.a, ct, g.fn);
  const Matrices b = readable(g.b, ct, g.fn);
  const BlasLayout la = blas_layout(a), lb = blas_layout(b), lc = blas_layout(c);
  AOTRT_CHECK(la.addressable && lb.addressable && lc.addressable, kInternal, g.fn,
              ": a packed operand is not BLAS-addressable");

  // gemm in the result's own order; an operand stored the other way is transposed.
  const CBLAS_ORDER order = lc.col_major ? CblasColMajor : CblasRowMajor;
  const CBLAS_TRANSPOSE ta = la.col_major == lc.col_major ? CblasNoTrans : CblasTrans;
  const CBLAS_TRANSPOSE tb = lb.col_major == lc.col_major ? CblasNoTrans : CblasTrans;
  const double beta = self != nullptr ? g.beta : 0.0;
  const auto m = static_cast<blasint>(M), n = static_cast<blasint>(N),
             k = static_cast<blasint>(K);
  const auto lda = static_cast<blasint>(la.ld), ldb = static_cast<blasint>(lb.ld),
             ldc = static_cast<blasint>(lc.ld);
  const size_t es = element_size(ct);
  const double macs = static_cast<double>(B) * static_cast<double>(M) *
                      static_cast<double>(N) * static_cast<double>(K);
  const double operand_bytes =
      static_cast<double>(B) * static_cast<double>(es) *
      (static_cast<double>(M) * static_cast<double>(K) + static_cast<double>(K) * static_cast<double>(N));
  const onednn::OneOmpThread one_thread(ct == ScalarType::Float32 &&
                                        onednn::gemm_on_calling_thread(macs, operand_bytes));
  if (ct == ScalarType::Float64) use_blas_threads(macs);
  for (int64_t i = 0; i < B; ++i) {
    const char* pa = a.data + i * a.strides[0] * static_cast<int64_t>(es);
    const char* pb = b.data + i * b.strides[0] * static_cast<int64_t>(es);
    char* pc = c.data + i * c.strides[0] * static_cast<int64_t>(es);
    if (ct == ScalarType::Float64) {
      cblas_dgemm(order, ta, tb, m, n, k, g.alpha, reinterpret_cast<const double*>(pa), lda,
                  reinterpret_cast<const double*>(pb), ldb, beta, reinterpret_cast<double*>(pc),
                  ldc);
    } else {
      sgemm(order, ta, tb, m, n, k, static_cast<float>(g.alpha),
            reinterpret_cast<const float*>(pa), lda, reinterpret_cast<const float*>(pb), ldb,
            static_cast<float>(beta), reinterpret_cast<float*>(pc), ldc, g.fn);
    }
  }
  if (!direct) copy_strided(out_view, c.view());
}

// --- Argument checks shared by the four entry points ---------------------------

void check_matrix_arg(const TensorImpl& t, int64_t dim, const char* fn, const char* name) {
  AOTRT_CHECK(t.device().is_cpu(), kInvalidArgument, fn, ": argument '", name, "' is on ",
              t.device().str(), "; expected cpu");
  AOTRT_CHECK(t.dim() == dim, kInvalidArgument, fn, ": argument '", name, "' must be ", dim,
              "-d, got ", t.dim(), " dims");
}

void check_same_dtype(const TensorImpl& t, const TensorImpl& ref, const char* fn,
                      const char* name, const char* ref_name) {
  AOTRT_CHECK(t.dtype() == ref.dtype(), kInvalidArgument, fn, ": argument '", name,
              "' has dtype ", dtype_name(t.dtype()), " but '", ref_name, "' has ",
              dtype_name(ref.dtype()), "; they must match");
}

std::string sizes_str(std::span<const int64_t> s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// ATen resizes a wrongly shaped out; aotrt refuses, since out may be a view
// that must stay where it is.
void check_out(const TensorImpl& out, std::span<const int64_t> expected, const char* fn) {
  AOTRT_CHECK(out.device().is_cpu(), kInvalidArgument, fn, ": argument 'out' is on ",
              out.device().str(), "; expected cpu");
  AOTRT_CHECK(std::equal(out.sizes().begin(), out.sizes().end(), expected.begin(),
                         expected.end()),
              kInvalidArgument, fn, ": argument 'out' has sizes ", sizes_str(out.sizes()),
              " but the result has sizes ", sizes_str(expected),
              "; aotrt does not resize out");
  for (int64_t d = 0; d < out.dim(); ++d) {
    AOTRT_CHECK(!(out.strides()[d] == 0 && out.sizes()[d] > 1), kInvalidArgument, fn,
                ": argument 'out' has stride 0 at dim ", d,
                ", so several results would land on one memory location");
  }
}

// self read with out's sizes (numpy broadcasting: missing or size-1 dims
// get stride 0), as batch x rows x cols like out.
Matrices broadcast_self(const TensorImpl& self, const TensorImpl& out, const char* fn) {
  const int64_t nd = out.dim(), sd = self.dim();
  AOTRT_CHECK(sd <= nd, kInvalidArgument, fn, ": argument 'self' of sizes ",
              sizes_str(self.sizes()), " cannot be broadcast to ", sizes_str(out.sizes()));
  Matrices m = matrices_of(out);
  m.data = static_cast<char*>(self.data_ptr());
  m.dtype = self.dtype();
  m.strides = {0, 0, 0};
  for (int64_t i = 0; i < sd; ++i) {
    const int64_t s = self.sizes()[sd - 1 - i];
    const int64_t o = out.sizes()[nd - 1 - i];
    AOTRT_CHECK(s == o || s == 1, kInvalidArgument, fn, ": argument 'self' of sizes ",
                sizes_str(self.sizes()), " cannot be broadcast to ", sizes_str(out.sizes()));
    m.strides[2 - i] = s == o ? self.strides()[sd - 1 - i] : 0;
  }
  return m;
}

void run(const char* fn, const TensorImpl& out, const TensorImpl* self, const TensorImpl& a,
         const TensorImpl& b, double beta, double alpha) {
  Gemm g;
  g.fn = fn;
  g.out = matrices_of(out);
  g.a = matrices_of(a);
  g.b = matrices_of(b);
  if (self != nullptr) g.self = broadcast_self(*self, out, fn);
  g.beta = beta;
  g.alpha = alpha;
  run_gemm(g);
}

}  // namespace

void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2) {
  const char* fn = "aoti_torch_cpu_mm_out";
  check_matrix_arg(self, 2, fn, "self");
  check_matrix_arg(mat2, 2, fn, "mat2");
  check_same_dtype(mat2, self, fn, "mat2", "self");
  check_same_dtype(out, self, fn, "out", "self");
  AOTRT_CHECK(self.sizes()[1] == mat2.sizes()[0], kInvalidArgument, fn,
              ": 'self' ", sizes_str(self.sizes()), " and 'mat2' ", sizes_str(mat2.sizes()),
              " cannot be multiplied");
  const int64_t expected[] = {self.sizes()[0], mat2.sizes()[1]};
  check_out(out, expected, fn);
  run(fn, out, nullptr, self, mat2, 0.0, 1.0);
}

void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha) {
  const char* fn = "aoti_torch_cpu_addmm_out";
  check_matrix_arg(mat1, 2, fn, "mat1");
  check_matrix_arg(mat2, 2, fn, "mat2");
  AOTRT_CHECK(self.device().is_cpu(), kInvalidArgument, fn, ": argument 'self' is on ",
              self.device().str(), "; expected cpu");
  check_same_dtype(mat2, mat1, fn, "mat2", "mat1");
  check_same_dtype(self, mat1, fn, "self", "mat1");
  check_same_dtype(out, mat1, fn, "out", "mat1");
  AOTRT_CHECK(mat1.sizes()[1] == mat2.sizes()[0], kInvalidArgument, fn,
              ": 'mat1' ", sizes_str(mat1.sizes()), " and 'mat2' ", sizes_str(mat2.sizes()),
              " cannot be multiplied");
  const int64_t expected[] = {mat1.sizes()[0], mat2.sizes()[1]};
  check_out(out, expected, fn);
  run(fn, out, &self, mat1, mat2, beta, alpha);
}

void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2) {
  const char* fn = "aoti_torch_cpu_bmm_out";
  check_matrix_arg(self, 3, fn, "self");
  check_matrix_arg(mat2, 3, fn, "mat2");
  check_same_dtype(mat2, self, fn, "mat2", "self");
  check_same_dtype(out, self, fn, "out", "self");
  AOTRT_CHECK(self.sizes()[0] == mat2.sizes()[0] && self.sizes()[2] == mat2.sizes()[1],
              kInvalidArgument, fn, ": 'self' ", sizes_str(self.sizes()), " and 'mat2' ",
              sizes_str(mat2.sizes()), " cannot be batch-multiplied");
  const int64_t expected[] = {self.sizes()[0], self.sizes()[1], mat2.sizes()[2]};
  check_out(out, expected, fn);
  run(fn, out, nullptr, self, mat2, 0.0, 1.0);
}

void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha) {
  const char* fn = "aoti_torch_cpu_baddbmm_out";
  check_matrix_arg(batch1, 3, fn, "batch1");
  check_matrix_arg(batch2, 3, fn, "batch2");
  AOTRT_CHECK(self.device().is_cpu(), kInvalidArgument, fn, ": argument 'self' is on ",
              self.device().str(), "; expected cpu");
  check_same_dtype(batch2, batch1, fn, "batch2", "batch1");
  check_same_dtype(self, batch1, fn, "self", "batch1");
  check_same_dtype(out, batch1, fn, "out", "batch1");
  AOTRT_CHECK(batch1.sizes()[0] == batch2.sizes()[0] && batch1.sizes()[2] == batch2.sizes()[1],
              kInvalidArgument, fn, ": 'batch1' ", sizes_str(batch1.sizes()), " and 'batch2' ",
              sizes_str(batch2.sizes()), " cannot be batch-multiplied");
  const int64_t expected[] = {batch1.sizes()[0], batch1.sizes()[1], batch2.sizes()[2]};
  check_out(out, expected, fn);
  run(fn, out, &self, batch1, batch2, beta, alpha);
}

void sgemm_row_major(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc, const char* fn) {
  sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n,
        k, alpha, a, lda, b, ldb, beta, c, ldc, fn);
}

}  // namespace aotrt::cpu
