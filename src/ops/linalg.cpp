// The linalg family's semantics: checks with ATen's rules, output shapes and
// layouts (Note [Linalg layout]), then the device's kernels.
#include "ops/linalg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "aotrt/aotrt.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/matmul.h"
#include "ops/pointwise.h"

namespace aotrt::ops {
namespace {

using Sizes = std::vector<int64_t>;

template <class Fn>
Fn linalg_kernel(Fn LinalgKernels::*member, const TensorImpl& t, const char* fn) {
  return kernel(member, t.device(), fn);
}

// Batch dims dense, each matrix column-major (ATen's
// batched_matrix_contiguous_strides with f_contig).
Sizes column_major_strides(const Sizes& sizes) {
  Sizes strides(sizes.size(), 1);
  const size_t n = sizes.size();
  if (n < 2) return contiguous_strides(sizes);
  strides[n - 2] = 1;
  strides[n - 1] = std::max<int64_t>(sizes[n - 2], 1);
  int64_t step = checked_mul(strides[n - 1], std::max<int64_t>(sizes[n - 1], 1), "column-major strides");
  for (size_t i = n - 2; i-- > 0;) {
    strides[i] = step;
    step = checked_mul(step, std::max<int64_t>(sizes[i], 1), "column-major strides");
  }
  return strides;
}

TensorPtr new_column_major(const Sizes& sizes, ScalarType dtype, Device device, const char* fn) {
  return empty_strided(sizes, column_major_strides(sizes), dtype, device, fn);
}
TensorPtr new_dense(const Sizes& sizes, ScalarType dtype, Device device, const char* fn) {
  return empty_strided(sizes, contiguous_strides(sizes), dtype, device, fn);
}

// src broadcast to `sizes`, copied into new column-major memory.
TensorPtr column_major_copy(const TensorImpl& src, const Sizes& sizes, const char* fn) {
  TensorPtr out = new_column_major(sizes, src.dtype(), src.device(), fn);
  copy_tensor(*out, src, fn);
  return out;
}
TensorPtr column_major_copy(const TensorImpl& src, const char* fn) {
  return column_major_copy(src, Sizes(src.sizes().begin(), src.sizes().end()), fn);
}

Sizes sizes_of(const TensorImpl& t) { return Sizes(t.sizes().begin(), t.sizes().end()); }
Sizes batch_of(const TensorImpl& t) { return Sizes(t.sizes().begin(), t.sizes().end() - 2); }
int64_t rows(const TensorImpl& t) { return t.sizes()[t.dim() - 2]; }
int64_t cols(const TensorImpl& t) { return t.sizes()[t.dim() - 1]; }

void check_matrix(const TensorImpl& t, const char* name, bool square, const char* fn) {
  AOTRT_CHECK(t.dim() >= 2, kInvalidArgument, fn, ": argument '", name,
              "' must have at least 2 dimensions (a batch of matrices), got ", t.dim());
  if (square) {
    AOTRT_CHECK(rows(t) == cols(t), kInvalidArgument, fn, ": argument '", name,
                "' must be batches of square matrices, but they are ", rows(t), " by ", cols(t),
                " matrices");
  }
  AOTRT_CHECK(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64, kUnsupported,
              fn, ": argument '", name, "' is ", dtype_name(t.dtype()),
              "; aotrt's linear algebra serves float32 and float64");
}

void check_same(const TensorImpl& a, const TensorImpl& b, const char* an, const char* bn,
                const char* fn) {
  AOTRT_CHECK(a.dtype() == b.dtype(), kInvalidArgument, fn, ": expected '", an, "' and '", bn,
              "' to have the same dtype, but '", an, "' is ", dtype_name(a.dtype()), " and '", bn,
              "' is ", dtype_name(b.dtype()));
  AOTRT_CHECK(a.device() == b.device(), kInvalidArgument, fn, ": '", an, "' is on ",
              a.device().str(), " and '", bn, "' on ", b.device().str());
}

Sizes with_matrix(Sizes batch, int64_t m, int64_t n) {
  batch.push_back(m);
  batch.push_back(n);
  return batch;
}

// t <- 1 everywhere (a broadcast copy of a host scalar).
void fill_ones(const TensorImpl& t, const char* fn) {
  const int64_t one_size[] = {1}, one_stride[] = {1};
  auto one = empty_strided(one_size, one_stride, t.dtype(), cpu_device(), fn);
  if (t.dtype() == ScalarType::Float32) {
    *static_cast<float*>(one->data_ptr()) = 1.0f;
  } else {
    *static_cast<double*>(one->data_ptr()) = 1.0;
  }
  auto scalar = make_tensor(one->storage(), {}, {}, 0, one->dtype(), fn);
  copy_tensor(t, *scalar, fn);
}

// An empty [0] tensor: an output the op was asked not to compute.
TensorPtr empty_result(ScalarType dtype, Device device, const char* fn) {
  return new_dense(Sizes{0}, dtype, device, fn);
}

// The leading r x c block of every matrix of t: a view in t's memory.
TensorPtr leading_block(const TensorImpl& t, int64_t r, int64_t c, const char* fn) {
  Sizes sizes = with_matrix(batch_of(t), r, c);
  return make_tensor(t.storage(), sizes, t.strides(), t.storage_offset(), t.dtype(), fn);
}

// t with its last two dims swapped: a view in t's memory.
TensorPtr transposed(const TensorImpl& t, const char* fn) {
  Sizes sizes = with_matrix(batch_of(t), cols(t), rows(t));
  Sizes strides(t.strides().begin(), t.strides().end());
  std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  return make_tensor(t.storage(), sizes, strides, t.storage_offset(), t.dtype(), fn);
}

// t as [B, rows, cols] (its batch dims dense, as the family's tensors'
// are): a view for the 3-d bmm.
TensorPtr as_3d(const TensorImpl& t, const char* fn) {
  int64_t count = 1;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) count *= t.sizes()[d];
  const int64_t r = rows(t), c = cols(t);
  const int64_t rs = t.strides()[t.dim() - 2], cs = t.strides()[t.dim() - 1];
  const int64_t bs = t.dim() > 2 ? t.strides()[t.dim() - 3] : r * c;
  const int64_t sizes[] = {count, r, c}, strides[] = {bs, rs, cs};
  return make_tensor(t.storage(), sizes, strides, t.storage_offset(), t.dtype(), fn);
}

// Every matrix of the square x <- the identity (zeros, then ones written
// through a view of each diagonal).
void set_identity(const TensorImpl& x, const char* fn) {
  zero_tensor(x, fn);
  if (x.numel() == 0) return;
  Sizes diag_sizes = batch_of(x);
  diag_sizes.push_back(std::min(rows(x), cols(x)));
  Sizes diag_strides(x.strides().begin(), x.strides().end() - 2);
  diag_strides.push_back(x.strides()[x.dim() - 2] + x.strides()[x.dim() - 1]);
  fill_ones(*make_tensor(x.storage(), diag_sizes, diag_strides, x.storage_offset(), x.dtype(),
                         fn),
            fn);
}

// t's matrices (or rows: pivots, tau) broadcast from t's own batch to
// `batch`, copied into new column-major matrices (dense rows).
TensorPtr broadcast_matrices(const TensorImpl& t, const Sizes& batch, const char* fn) {
  return column_major_copy(t, with_matrix(batch, rows(t), cols(t)), fn);
}
TensorPtr broadcast_rows(const TensorImpl& t, const Sizes& batch, const char* fn) {
  Sizes sizes = batch;
  sizes.push_back(t.sizes().back());
  TensorPtr out = new_dense(sizes, t.dtype(), t.device(), fn);
  copy_tensor(*out, t, fn);
  return out;
}

// X with op(A) X = B (left) or X op(A) = B, from A's factors `lu` and
// `pivots` (getrf's, or sytrf's for ldl) and B [..., n, k] (left) or [..., k,
// n]; batches broadcast. op(A) is A^T when transpose. A left solution is
// column-major; a right one row-major, the transpose of the column-major X^T
// that A^T X^T = B^T (A X^T = B^T when transpose) solves for, as ATen's.
template <class Kernel>
TensorPtr solve_with_factors(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& b,
                             bool left, bool transpose, Kernel&& solve, const char* fn) {
  const int64_t n = rows(lu);
  const int64_t k = left ? cols(b) : rows(b);
  const Sizes batch = broadcast_shapes(batch_of(b), batch_of(lu), fn);
  TensorPtr lu_full, piv_full;
  const TensorImpl* lu_use = &lu;
  const TensorImpl* piv_use = &pivots;
  // The kernels read batched column-major factors and dense pivots: a
  // caller's LU of another layout (lu_solve's, ldl_solve's inputs) or a
  // smaller batch is copied so.
  const Sizes lu_sizes = sizes_of(lu), piv_sizes = sizes_of(pivots);
  const bool laid_out =
      std::equal(lu.strides().begin(), lu.strides().end(), column_major_strides(lu_sizes).begin()) &&
      std::equal(pivots.strides().begin(), pivots.strides().end(),
                 contiguous_strides(piv_sizes).begin());
  if (batch != batch_of(lu) || !laid_out) {
    lu_full = broadcast_matrices(lu, batch, fn);
    piv_full = broadcast_rows(pivots, batch, fn);
    lu_use = lu_full.get();
    piv_use = piv_full.get();
  }
  TensorPtr x = new_column_major(with_matrix(batch, n, k), b.dtype(), b.device(), fn);
  if (left) {
    copy_tensor(*x, b, fn);
  } else {
    copy_tensor(*transposed(*x, fn), b, fn);
  }
  if (x->numel() > 0) solve(*lu_use, *piv_use, *x, left ? transpose : !transpose);
  return left ? std::move(x) : transposed(*x, fn);
}

std::tuple<TensorPtr, TensorPtr> cholesky_named(const TensorImpl& a, bool upper,
                                                bool check_errors_, const char* api,
                                                const char* fn) {
  check_matrix(a, "A", true, fn);
  TensorPtr l = column_major_copy(a, fn);
  TensorPtr info = new_dense(batch_of(a), ScalarType::Int32, a.device(), fn);
  if (l->numel() > 0) {
    linalg_kernel(&LinalgKernels::cholesky, a, fn)(*l, upper, *info);
  } else {
    zero_tensor(*info, fn);
  }
  if (check_errors_) check_errors(*info, api, a.dim() == 2, fn);
  return {std::move(l), std::move(info)};
}

// (factors, pivots [..., k], info) of a's factorization by `member` (getrf,
// sytrf) in a's column-major copy; info checked when check_errors_.
std::tuple<TensorPtr, TensorPtr, TensorPtr> pivoted_factorization(
    const TensorImpl& a,
    void (*LinalgKernels::*member)(const TensorImpl&, const TensorImpl&, const TensorImpl&),
    int64_t k, bool check_errors_, const char* api, const char* fn) {
  TensorPtr factors = column_major_copy(a, fn);
  Sizes piv_sizes = batch_of(a);
  piv_sizes.push_back(k);
  TensorPtr pivots = new_dense(piv_sizes, ScalarType::Int32, a.device(), fn);
  TensorPtr info = new_dense(batch_of(a), ScalarType::Int32, a.device(), fn);
  if (factors->numel() > 0) {
    linalg_kernel(member, a, fn)(*factors, *pivots, *info);
  } else {
    zero_tensor(*info, fn);
  }
  if (check_errors_) check_errors(*info, api, a.dim() == 2, fn);
  return {std::move(factors), std::move(pivots), std::move(info)};
}

// Pivots of a factorization of `factors`: int32, the factors' batch and n.
void check_pivots(const TensorImpl& pivots, const TensorImpl& factors, const char* name,
                  const char* fn) {
  AOTRT_CHECK(pivots.dtype() == ScalarType::Int32, kInvalidArgument, fn, ": argument '", name,
              "' must be int32, got ", dtype_name(pivots.dtype()));
  Sizes want = batch_of(factors);
  want.push_back(cols(factors));
  AOTRT_CHECK(sizes_of(pivots) == want, kInvalidArgument, fn, ": argument '", name,
              "' of sizes ", sizes_text(pivots.sizes()), " does not match the factors' ",
              sizes_text(factors.sizes()), " (expected ", sizes_text(want), ")");
  AOTRT_CHECK(pivots.device() == factors.device(), kInvalidArgument, fn, ": '", name,
              "' is on ", pivots.device().str(), ", the factors on ", factors.device().str());
}

}  // namespace

std::tuple<TensorPtr, TensorPtr> triangular_solve(const TensorImpl& b, const TensorImpl& a,
                                                  bool upper, bool transpose,
                                                  bool unitriangular, const char* fn) {
  check_matrix(b, "self", false, fn);
  check_matrix(a, "A", true, fn);
  check_same(b, a, "self", "A", fn);
  AOTRT_CHECK(rows(a) == rows(b), kInvalidArgument, fn, ": incompatible matrix sizes for ",
              "triangular_solve: A is ", rows(a), " by ", cols(a), " and self is ", rows(b),
              " by ", cols(b));
  const Sizes batch = broadcast_shapes(batch_of(b), batch_of(a), fn);
  TensorPtr x = column_major_copy(b, with_matrix(batch, rows(b), cols(b)), fn);
  TensorPtr coeff = column_major_copy(a, with_matrix(batch, rows(a), cols(a)), fn);
  if (x->numel() > 0 && coeff->numel() > 0) {
    linalg_kernel(&LinalgKernels::triangular_solve, a, fn)(*x, *coeff, upper, transpose,
                                                          unitriangular, true);
  }
  return {std::move(x), std::move(coeff)};
}

TensorPtr solve_triangular(const TensorImpl& a, const TensorImpl& b, bool upper, bool left,
                           bool unitriangular, const char* fn) {
  check_matrix(a, "self", true, fn);
  check_matrix(b, "B", false, fn);
  check_same(a, b, "self", "B", fn);
  const int64_t n = rows(a);
  AOTRT_CHECK((left ? rows(b) : cols(b)) == n, kInvalidArgument, fn, ": incompatible shapes ",
              "of A and B for the equation ", left ? "AX = B" : "XA = B", " (A is ", n, " by ",
              n, ", B is ", rows(b), " by ", cols(b), ")");
  const Sizes batch = broadcast_shapes(batch_of(b), batch_of(a), fn);
  TensorPtr x = column_major_copy(b, with_matrix(batch, rows(b), cols(b)), fn);
  TensorPtr coeff = column_major_copy(a, with_matrix(batch, n, n), fn);
  if (x->numel() > 0) {
    linalg_kernel(&LinalgKernels::triangular_solve, a, fn)(*x, *coeff, upper, false,
                                                          unitriangular, left);
  }
  return x;
}

TensorPtr cholesky_solve(const TensorImpl& b, const TensorImpl& factor, bool upper,
                         const char* fn) {
  check_matrix(b, "self", false, fn);
  check_matrix(factor, "input2", true, fn);
  check_same(b, factor, "self", "input2", fn);
  AOTRT_CHECK(rows(factor) == rows(b), kInvalidArgument, fn, ": incompatible matrix sizes: ",
              "input2 is ", rows(factor), " by ", cols(factor), " and self is ", rows(b), " by ",
              cols(b));
  const Sizes batch = broadcast_shapes(batch_of(b), batch_of(factor), fn);
  TensorPtr x = column_major_copy(b, with_matrix(batch, rows(b), cols(b)), fn);
  TensorPtr f = column_major_copy(factor, with_matrix(batch, rows(factor), cols(factor)), fn);
  if (x->numel() > 0) linalg_kernel(&LinalgKernels::cholesky_solve, b, fn)(*x, *f, upper);
  return x;
}

TensorPtr cholesky_inverse(const TensorImpl& factor, bool upper, const char* fn) {
  check_matrix(factor, "self", true, fn);
  TensorPtr out = column_major_copy(factor, fn);
  TensorPtr info = new_dense(batch_of(factor), ScalarType::Int32, factor.device(), fn);
  if (out->numel() > 0) {
    linalg_kernel(&LinalgKernels::cholesky_inverse, factor, fn)(*out, upper, *info);
  }
  // ATen's cholesky_inverse does not check info either: a singular factor
  // gives inf, as there.
  return out;
}

std::tuple<TensorPtr, TensorPtr> geqrf(const TensorImpl& a, const char* fn) {
  check_matrix(a, "self", false, fn);
  TensorPtr qr = column_major_copy(a, fn);
  Sizes tau_sizes = batch_of(a);
  tau_sizes.push_back(std::min(rows(a), cols(a)));
  TensorPtr tau = new_dense(tau_sizes, a.dtype(), a.device(), fn);
  if (qr->numel() > 0) linalg_kernel(&LinalgKernels::geqrf, a, fn)(*qr, *tau);
  return {std::move(qr), std::move(tau)};
}

TensorPtr ormqr(const TensorImpl& a, const TensorImpl& tau, const TensorImpl& c, bool left,
                bool transpose, const char* fn) {
  check_matrix(a, "self", false, fn);
  check_matrix(c, "input3", false, fn);
  check_same(a, c, "self", "input3", fn);
  check_same(a, tau, "self", "input2", fn);
  const int64_t m = left ? rows(c) : cols(c);
  AOTRT_CHECK(rows(a) == m, kInvalidArgument, fn, ": input.shape[-2] must equal input3.shape[",
              left ? -2 : -1, "] (", rows(a), " vs ", m, ")");
  AOTRT_CHECK(tau.dim() == a.dim() - 1 && tau.sizes().back() <= std::min(rows(a), cols(a)),
              kInvalidArgument, fn, ": input2 (tau) must have shape [..., k] with k <= ",
              "min(input.shape[-2:])");
  AOTRT_CHECK(batch_of(a) == batch_of(c), kInvalidArgument, fn,
              ": self and input3 must have the same batch dimensions");
  TensorPtr out = column_major_copy(c, fn);
  // Reflectors: the first k columns of a.
  TensorPtr reflectors = column_major_copy(a, fn);
  Sizes tau_sizes(tau.sizes().begin(), tau.sizes().end());
  TensorPtr tau_dense = new_dense(tau_sizes, tau.dtype(), tau.device(), fn);
  copy_tensor(*tau_dense, tau, fn);
  if (out->numel() > 0 && tau.sizes().back() > 0) {
    linalg_kernel(&LinalgKernels::ormqr, a, fn)(*out, *reflectors, *tau_dense, left, transpose);
  }
  return out;
}

std::tuple<TensorPtr, TensorPtr, TensorPtr> lu_factor_ex(const TensorImpl& a, bool pivot,
                                                         bool check_errors_, const char* fn) {
  check_matrix(a, "A", false, fn);
  AOTRT_CHECK(pivot || !a.device().is_cpu(), kUnsupported, fn,
              ": LU without pivoting is refused on the CPU, as ATen refuses it (pivot=True is served)");
  AOTRT_CHECK(pivot, kUnsupported, fn, ": LU without pivoting is not served");
  return pivoted_factorization(a, &LinalgKernels::lu_factor, std::min(rows(a), cols(a)),
                               check_errors_, "torch.linalg.lu_factor_ex", fn);
}

std::tuple<TensorPtr, TensorPtr> inv_ex(const TensorImpl& a, bool check_errors_,
                                        const char* fn) {
  check_matrix(a, "A", true, fn);
  // As ATen: solve A X = I from A's LU factors.
  auto [lu, pivots, info] = lu_factor_ex(a, true, false, fn);
  const Sizes sizes = sizes_of(a);
  TensorPtr x = new_column_major(sizes, a.dtype(), a.device(), fn);
  set_identity(*x, fn);
  if (x->numel() > 0) {
    linalg_kernel(&LinalgKernels::lu_solve, a, fn)(*lu, *pivots, *x, false);
  }
  if (check_errors_) check_errors(*info, "linalg.inv_ex", a.dim() == 2, fn);
  return {std::move(x), std::move(info)};
}

std::tuple<TensorPtr, TensorPtr, TensorPtr, TensorPtr> solve_ex(const TensorImpl& a,
                                                                const TensorImpl& b, bool left,
                                                                bool check_errors_,
                                                                const char* fn) {
  check_matrix(a, "A", true, fn);
  check_same(a, b, "A", "B", fn);
  const int64_t n = rows(a);
  // ATen's linalg_solve_is_vector_rhs.
  const Sizes a_batch = batch_of(a);
  Sizes a_vec(a.sizes().begin(), a.sizes().end() - 1);
  const bool vector = b.dim() == 1 || (b.dim() == a.dim() - 1 && sizes_of(b) == a_vec);
  AOTRT_CHECK(!(vector && !left), kInvalidArgument, fn,
              ": vector B is only served with left=True, as in ATen");
  AOTRT_CHECK(vector || b.dim() >= 2, kInvalidArgument, fn,
              ": B must be a vector or a batch of matrices");
  const Sizes b_batch = vector ? Sizes(b.sizes().begin(), b.sizes().end() - 1) : batch_of(b);
  const int64_t b_rows = vector ? b.sizes().back() : (left ? rows(b) : cols(b));
  AOTRT_CHECK(b_rows == n, kInvalidArgument, fn, ": incompatible shapes of A and B for the ",
              "equation ", left ? "AX = B" : "XA = B", " (A is ", n, " by ", n, ")");
  const Sizes batch = broadcast_shapes(b_batch, a_batch, fn);

  // Factor A as it is (LU, pivots and info have A's batch, as ATen's), then
  // solve with factors broadcast to the common batch; a vector B is solved
  // as the one column [..., n, 1].
  auto [lu, pivots, info] = lu_factor_ex(a, true, false, fn);
  TensorPtr column;
  if (vector) {
    Sizes cs = b_batch;
    cs.push_back(n);
    cs.push_back(1);
    Sizes cst(b.strides().begin(), b.strides().end());
    cst.push_back(1);
    column = make_tensor(b.storage(), cs, cst, b.storage_offset(), b.dtype(), fn);
  }
  const auto solve = linalg_kernel(&LinalgKernels::lu_solve, a, fn);
  TensorPtr x = solve_with_factors(*lu, *pivots, vector ? *column : b, left, false, solve, fn);
  if (check_errors_) check_errors(*info, "torch.linalg.solve_ex", a.dim() == 2, fn);

  TensorPtr result;
  if (vector) {
    Sizes vs(batch);
    vs.push_back(n);
    Sizes vst(x->strides().begin(), x->strides().end() - 1);
    TensorPtr col = make_tensor(x->storage(), vs, vst, 0, x->dtype(), fn);
    // ATen's meta: make_contiguous_strides_for(shape, row_major=False), so a
    // batch of vectors [..., b, n] is laid out as b x n column-major.
    result = vs.size() >= 2 ? new_column_major(vs, x->dtype(), x->device(), fn)
                            : new_dense(vs, x->dtype(), x->device(), fn);
    copy_tensor(*result, *col, fn);
  } else {
    result = std::move(x);
  }
  return {std::move(result), std::move(lu), std::move(pivots), std::move(info)};
}

std::tuple<TensorPtr, TensorPtr> cholesky_ex(const TensorImpl& a, bool upper,
                                             bool check_errors_, const char* fn) {
  return cholesky_named(a, upper, check_errors_, "torch.linalg.cholesky_ex", fn);
}

namespace {
// What det and slogdet factor: as ATen's, A^T when A is contiguous (det(A^T) =
// det(A), and A^T is already column-major), so their LU and pivots are
// those of A^T then, as eager's.
TensorPtr det_operand(const TensorImpl& a, const char* fn) {
  if (a.is_contiguous()) return transposed(a, fn);
  return make_tensor(a.storage(), a.sizes(), a.strides(), a.storage_offset(), a.dtype(), fn);
}
}  // namespace

std::tuple<TensorPtr, TensorPtr, TensorPtr> det(const TensorImpl& a, const char* fn) {
  check_matrix(a, "A", true, fn);
  auto [lu, pivots, info] = lu_factor_ex(*det_operand(a, fn), true, false, fn);
  // A singular matrix has det 0 (a zero on U's diagonal): no error, as ATen.
  TensorPtr value = new_dense(batch_of(a), a.dtype(), a.device(), fn);
  TensorPtr sign = new_dense(batch_of(a), a.dtype(), a.device(), fn);
  if (rows(a) == 0) {
    // The determinant of a 0 x 0 matrix is 1.
    fill_ones(*value, fn);
  } else if (value->numel() > 0) {
    linalg_kernel(&LinalgKernels::lu_det, a, fn)(*lu, *pivots, *sign, *value, false);
  }
  return {std::move(value), std::move(lu), std::move(pivots)};
}

std::tuple<TensorPtr, TensorPtr, TensorPtr, TensorPtr> slogdet(const TensorImpl& a,
                                                               const char* fn) {
  check_matrix(a, "A", true, fn);
  auto [lu, pivots, info] = lu_factor_ex(*det_operand(a, fn), true, false, fn);
  TensorPtr sign = new_dense(batch_of(a), a.dtype(), a.device(), fn);
  TensorPtr logabs = new_dense(batch_of(a), a.dtype(), a.device(), fn);
  if (rows(a) == 0) {
    fill_ones(*sign, fn);
    zero_tensor(*logabs, fn);
  } else if (sign->numel() > 0) {
    linalg_kernel(&LinalgKernels::lu_det, a, fn)(*lu, *pivots, *sign, *logabs, true);
  }
  return {std::move(sign), std::move(logabs), std::move(lu), std::move(pivots)};
}

namespace {

// ATen's _linalg_check_errors message (singleCheckErrors) for info `code` of
// batch element `bad`; is_matrix is false for a batch, whose message names
// the element.
[[noreturn]] void raise_info(const std::string& api_name, bool is_matrix, int64_t bad,
                             int32_t code, const char* fn) {
  std::string prefix = api_name + ": ";
  if (!is_matrix) {
    prefix += "(Batch element " + std::to_string(bad) + "): ";
  }
  AOTRT_CHECK(code > 0, kInternal, fn, ": ", prefix, "Argument ", -code,
              " has illegal value. Most certainly there is a bug in the implementation calling "
              "the backend library.");
  auto has = [&](const char* s) { return api_name.find(s) != std::string::npos; };
  std::string why;
  if (has("inv")) {
    why = "The diagonal element " + std::to_string(code) +
          " is zero, the inversion could not be completed because the input matrix is singular.";
  } else if (has("solve")) {
    why = "The solver failed because the input matrix is singular.";
  } else if (has("cholesky")) {
    why = "The factorization could not be completed because the input is not positive-definite "
          "(the leading minor of order " + std::to_string(code) + " is not positive-definite).";
  } else if (has("svd")) {
    why = "The algorithm failed to converge because the input matrix is ill-conditioned or has "
          "too many repeated singular values (error code: " + std::to_string(code) + ").";
  } else if (has("eig") || has("syevd")) {
    why = "The algorithm failed to converge because the input matrix is ill-conditioned or has "
          "too many repeated eigenvalues (error code: " + std::to_string(code) + ").";
  } else if (has("lstsq")) {
    why = "The least squares solution could not be computed because the input matrix does not "
          "have full rank (error code: " + std::to_string(code) + ").";
  } else if (has("lu_factor")) {
    why = "U[" + std::to_string(code) + "," + std::to_string(code) +
          "] is zero and using it on lu_solve would result in a division by zero. If you still "
          "want to perform the factorization, consider calling linalg.lu(A, pivot) or "
          "linalg.lu_factor_ex(A, pivot)";
  } else {
    why = "failed with error code " + std::to_string(code) + ".";
  }
  AOTRT_FAIL(kInvalidArgument, fn, ": ", prefix, why);
}

// The checks a device deferred (Note [Linalg errors on CUDA]) are tagged
// with their api name's index here (times two, plus is_matrix) and the name
// of the op that checked; interned once per distinct pair.
struct DeferredChecks {
  std::mutex mutex;
  std::vector<std::pair<std::string, std::string>> names;  // (api_name, fn)
};
DeferredChecks& deferred_checks() {
  static DeferredChecks* checks = new DeferredChecks;  // never freed: read at any exit
  return *checks;
}

int32_t deferred_tag(const std::string& api_name, bool is_matrix, const char* fn) {
  DeferredChecks& d = deferred_checks();
  std::lock_guard<std::mutex> lock(d.mutex);
  size_t i = 0;
  while (i < d.names.size() && (d.names[i].first != api_name || d.names[i].second != fn)) ++i;
  if (i == d.names.size()) d.names.emplace_back(api_name, fn);
  return static_cast<int32_t>(i * 2 + (is_matrix ? 1 : 0));
}

}  // namespace

void check_errors(const TensorImpl& info, const std::string& api_name, bool is_matrix,
                  const char* fn) {
  AOTRT_CHECK(info.dtype() == ScalarType::Int32, kInvalidArgument, fn,
              ": info must be int32, got ", dtype_name(info.dtype()));
  if (info.numel() == 0) return;
  const Sizes sizes = sizes_of(info);
  if (info.device().is_cuda()) {
    const auto record = kernel(&LinalgKernels::record_errors, info.device(), fn);
    TensorPtr dense = new_dense(sizes, ScalarType::Int32, info.device(), fn);
    copy_tensor(*dense, info, fn);
    record(*dense, deferred_tag(api_name, is_matrix, fn));
    return;
  }
  auto host = empty_strided(sizes, contiguous_strides(sizes), ScalarType::Int32,
                            cpu_device(), fn);
  copy_tensor(*host, info, fn);
  const int32_t* v = static_cast<const int32_t*>(host->data_ptr());
  for (int64_t i = 0; i < host->numel(); ++i) {
    if (v[i] != 0) raise_info(api_name, is_matrix, i, v[i], fn);
  }
}

void raise_deferred_errors(Device device, const char* fn) {
  if (!device.is_cuda()) return;
  const auto take = KernelRegistry<LinalgKernels>::cuda == nullptr
                        ? nullptr
                        : KernelRegistry<LinalgKernels>::cuda->take_error;
  LinalgError e;
  if (take == nullptr || !take(device.index, &e)) return;
  std::pair<std::string, std::string> names;
  {
    DeferredChecks& d = deferred_checks();
    std::lock_guard<std::mutex> lock(d.mutex);
    names = d.names.at(static_cast<size_t>(e.tag / 2));
  }
  const std::string where = std::string(fn) + ": " + names.second;
  raise_info(names.first, (e.tag & 1) != 0, e.batch, e.code, where.c_str());
}

std::tuple<TensorPtr, TensorPtr, TensorPtr> lu_unpack(const TensorImpl& lu,
                                                      const TensorImpl& pivots, bool unpack_data,
                                                      bool unpack_pivots, const char* fn) {
  AOTRT_CHECK(lu.dim() >= 2, kInvalidArgument, fn,
              ": argument 'LU_data' must have at least 2 dimensions (a batch of matrices), got ",
              lu.dim());
  const int64_t m = rows(lu), n = cols(lu), k = std::min(m, n);
  const Sizes batch = batch_of(lu);
  AOTRT_CHECK(pivots.dtype() == ScalarType::Int32, kInvalidArgument, fn,
              ": argument 'LU_pivots' must be int32 (lu_factor's pivots), not ",
              dtype_name(pivots.dtype()));
  Sizes want_piv = batch;
  want_piv.push_back(k);
  AOTRT_CHECK(sizes_of(pivots) == want_piv, kInvalidArgument, fn,
              ": argument 'LU_pivots' of sizes ",
              sizes_text(pivots.sizes()), " does not match LU_data ", sizes_text(lu.sizes()),
              " (expected ", sizes_text(want_piv), ")");
  AOTRT_CHECK(pivots.device() == lu.device(), kInvalidArgument, fn, ": 'LU_pivots' is on ",
              pivots.device().str(), ", 'LU_data' on ", lu.device().str());
  const Sizes empty_sizes{0};
  TensorPtr p = unpack_pivots ? new_dense(with_matrix(batch, m, m), lu.dtype(), lu.device(), fn)
                              : new_dense(empty_sizes, lu.dtype(), lu.device(), fn);
  TensorPtr l = unpack_data ? new_dense(with_matrix(batch, m, k), lu.dtype(), lu.device(), fn)
                            : new_dense(empty_sizes, lu.dtype(), lu.device(), fn);
  TensorPtr u = unpack_data ? new_dense(with_matrix(batch, k, n), lu.dtype(), lu.device(), fn)
                            : new_dense(empty_sizes, lu.dtype(), lu.device(), fn);
  if (!unpack_data && !unpack_pivots) return {std::move(p), std::move(l), std::move(u)};
  TensorPtr lu_dense = new_dense(sizes_of(lu), lu.dtype(), lu.device(), fn);
  copy_tensor(*lu_dense, lu, fn);
  TensorPtr piv_dense = new_dense(sizes_of(pivots), ScalarType::Int32, lu.device(), fn);
  copy_tensor(*piv_dense, pivots, fn);
  linalg_kernel(&LinalgKernels::lu_unpack, lu, fn)(*lu_dense, *piv_dense,
                                                   unpack_pivots ? p.get() : nullptr,
                                                   unpack_data ? l.get() : nullptr,
                                                   unpack_data ? u.get() : nullptr, fn);
  return {std::move(p), std::move(l), std::move(u)};
}

std::tuple<TensorPtr, TensorPtr> qr(const TensorImpl& a, const std::string& mode,
                                    const char* fn) {
  check_matrix(a, "A", false, fn);
  AOTRT_CHECK(mode == "reduced" || mode == "complete" || mode == "r", kInvalidArgument, fn,
              ": qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  const bool complete = mode == "complete";
  // As ATen: geqrf, R the upper triangle of its first rows, Q from orgqr on
  // the reflectors.
  TensorPtr fact = column_major_copy(a, fn);
  Sizes tau_sizes = batch_of(a);
  tau_sizes.push_back(k);
  TensorPtr tau = new_dense(tau_sizes, a.dtype(), a.device(), fn);
  if (fact->numel() > 0) linalg_kernel(&LinalgKernels::geqrf, a, fn)(*fact, *tau);
  const int64_t r_rows = complete ? m : k;
  TensorPtr r = new_column_major(with_matrix(batch_of(a), r_rows, n), a.dtype(), a.device(), fn);
  copy_tensor(*r, *leading_block(*fact, r_rows, n, fn), fn);
  if (r->numel() > 0) linalg_kernel(&LinalgKernels::triu, a, fn)(*r);
  if (mode == "r") return {empty_result(a.dtype(), a.device(), fn), std::move(r)};
  const int64_t q_cols = complete ? m : k;
  TensorPtr q = new_column_major(with_matrix(batch_of(a), m, q_cols), a.dtype(), a.device(), fn);
  zero_tensor(*q, fn);
  const int64_t kept = std::min(q_cols, n);
  copy_tensor(*leading_block(*q, m, kept, fn), *leading_block(*fact, m, kept, fn), fn);
  if (q->numel() > 0) linalg_kernel(&LinalgKernels::orgqr, a, fn)(*q, *tau);
  return {std::move(q), std::move(r)};
}

TensorPtr householder_product(const TensorImpl& input, const TensorImpl& tau, const char* fn) {
  check_matrix(input, "input", false, fn);
  check_same(input, tau, "input", "tau", fn);
  AOTRT_CHECK(rows(input) >= cols(input), kInvalidArgument, fn,
              ": input.shape[-2] must be greater than or equal to input.shape[-1] (",
              rows(input), " < ", cols(input), ")");
  AOTRT_CHECK(tau.dim() == input.dim() - 1, kInvalidArgument, fn,
              ": input.dim() - tau.dim() must be equal to 1, but got ", input.dim() - tau.dim());
  AOTRT_CHECK(tau.sizes().back() <= cols(input), kInvalidArgument, fn,
              ": input.shape[-1] must be greater than or equal to tau.shape[-1] (",
              cols(input), " < ", tau.sizes().back(), ")");
  const Sizes tau_batch(tau.sizes().begin(), tau.sizes().end() - 1);
  AOTRT_CHECK(tau_batch == batch_of(input), kInvalidArgument, fn,
              ": expected batch dimensions of tau ", sizes_text(tau.sizes()),
              " to be equal to input's ", sizes_text(input.sizes()));
  TensorPtr q = column_major_copy(input, fn);
  TensorPtr tau_dense = broadcast_rows(tau, tau_batch, fn);
  if (q->numel() > 0) linalg_kernel(&LinalgKernels::orgqr, input, fn)(*q, *tau_dense);
  return q;
}

std::tuple<TensorPtr, TensorPtr, TensorPtr> svd(const TensorImpl& a, bool full_matrices,
                                                bool compute_uv, bool has_driver,
                                                const char* fn) {
  check_matrix(a, "A", false, fn);
  AOTRT_CHECK(!has_driver || !a.device().is_cpu(), kInvalidArgument, fn,
              ": torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs "
              "with cuSOLVER backend.");
  const int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  const bool full = compute_uv && full_matrices;
  TensorPtr work = column_major_copy(a, fn);
  Sizes s_sizes = batch_of(a);
  s_sizes.push_back(k);
  TensorPtr s = new_dense(s_sizes, a.dtype(), a.device(), fn);
  TensorPtr u = compute_uv ? new_column_major(with_matrix(batch_of(a), m, full ? m : k),
                                              a.dtype(), a.device(), fn)
                           : empty_result(a.dtype(), a.device(), fn);
  // Note [Vh's layout]: column-major on the CPU, row-major on CUDA, as ATen's meta function.
  const Sizes vh_sizes = with_matrix(batch_of(a), full ? n : k, n);
  TensorPtr vh = !compute_uv ? empty_result(a.dtype(), a.device(), fn)
                 : a.device().is_cpu() ? new_column_major(vh_sizes, a.dtype(), a.device(), fn)
                                       : new_dense(vh_sizes, a.dtype(), a.device(), fn);
  TensorPtr info = new_dense(batch_of(a), ScalarType::Int32, a.device(), fn);
  if (work->numel() > 0) {
    linalg_kernel(&LinalgKernels::svd, a, fn)(*work, *s, compute_uv ? u.get() : nullptr,
                                              compute_uv ? vh.get() : nullptr, *info);
    check_errors(*info, "linalg.svd", a.dim() == 2, fn);
  } else if (full) {
    // No singular values: the full U and Vh are identities, as ATen's.
    set_identity(*u, fn);
    set_identity(*vh, fn);
  }
  return {std::move(u), std::move(s), std::move(vh)};
}

std::tuple<TensorPtr, TensorPtr> eigh(const TensorImpl& a, const std::string& uplo,
                                      bool compute_v, const char* fn) {
  check_matrix(a, "A", true, fn);
  AOTRT_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u", kInvalidArgument, fn,
              ": Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  const int64_t n = rows(a);
  TensorPtr v = column_major_copy(a, fn);
  Sizes w_sizes = batch_of(a);
  w_sizes.push_back(n);
  TensorPtr w = new_dense(w_sizes, a.dtype(), a.device(), fn);
  TensorPtr info = new_dense(batch_of(a), ScalarType::Int32, a.device(), fn);
  if (v->numel() > 0) {
    linalg_kernel(&LinalgKernels::eigh, a, fn)(*v, *w, uplo == "U" || uplo == "u", compute_v,
                                               *info);
    check_errors(*info, "linalg.eigh", a.dim() == 2, fn);
  }
  if (!compute_v) v = empty_result(a.dtype(), a.device(), fn);
  return {std::move(w), std::move(v)};
}

std::tuple<TensorPtr, TensorPtr> eig(const TensorImpl& a, const char* fn) {
  check_matrix(a, "self", true, fn);
  const int64_t n = rows(a);
  const ScalarType complex =
      a.dtype() == ScalarType::Float32 ? ScalarType::Complex64 : ScalarType::Complex128;
  TensorPtr work = column_major_copy(a, fn);
  Sizes w_sizes = batch_of(a);
  w_sizes.push_back(n);
  TensorPtr values = new_dense(w_sizes, complex, a.device(), fn);
  TensorPtr vectors = new_column_major(sizes_of(a), complex, a.device(), fn);
  TensorPtr info = new_dense(batch_of(a), ScalarType::Int32, a.device(), fn);
  if (work->numel() > 0) {
    linalg_kernel(&LinalgKernels::eig, a, fn)(*work, *values, *vectors, *info);
    check_errors(*info, "linalg.eig", a.dim() == 2, fn);
  }
  return {std::move(values), std::move(vectors)};
}

std::tuple<TensorPtr, TensorPtr, TensorPtr> lu(const TensorImpl& a, bool pivot, const char* fn) {
  check_matrix(a, "A", false, fn);
  AOTRT_CHECK(pivot, kUnsupported, fn,
              ": linalg.lu_factor: LU without pivoting is not implemented on the CPU (as in ATen); "
              "pivot=True is served");
  auto [factors, pivots, info] = lu_factor_ex(a, true, false, fn);
  // ATen's linalg_lu does not check info: a singular A has a zero on U's
  // diagonal.
  return lu_unpack(*factors, *pivots, true, true, fn);
}

TensorPtr lu_solve(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& b,
                   bool left, bool adjoint, const char* fn) {
  check_matrix(lu, "LU", true, fn);
  check_matrix(b, "B", false, fn);
  check_same(lu, b, "LU", "B", fn);
  check_pivots(pivots, lu, "pivots", fn);
  const int64_t n = rows(lu);
  AOTRT_CHECK((left ? rows(b) : cols(b)) == n, kInvalidArgument, fn,
              ": linalg.lu_solve: Incompatible shapes of A and B for the equation ",
              left ? "AX = B" : "XA = B", " (", n, "x", n, " and ", rows(b), "x", cols(b), ")");
  return solve_with_factors(lu, pivots, b, left, adjoint,
                            linalg_kernel(&LinalgKernels::lu_solve, lu, fn), fn);
}

TensorPtr cholesky(const TensorImpl& a, bool upper, const char* fn) {
  return std::get<0>(cholesky_named(a, upper, true, "cholesky", fn));
}

std::tuple<TensorPtr, TensorPtr, TensorPtr> ldl_factor_ex(const TensorImpl& a, bool hermitian,
                                                          bool check_errors_, const char* fn) {
  // Real matrices only: hermitian is the same factorization (sytrf).
  (void)hermitian;
  check_matrix(a, "self", true, fn);
  return pivoted_factorization(a, &LinalgKernels::ldl_factor, rows(a), check_errors_,
                               "torch.linalg.ldl_factor_ex", fn);
}

TensorPtr ldl_solve(const TensorImpl& ld, const TensorImpl& pivots, const TensorImpl& b,
                    bool hermitian, const char* fn) {
  (void)hermitian;  // as in ldl_factor_ex
  check_matrix(ld, "LD", true, fn);
  check_matrix(b, "B", false, fn);
  check_same(ld, b, "LD", "B", fn);
  check_pivots(pivots, ld, "pivots", fn);
  AOTRT_CHECK(rows(b) == rows(ld), kInvalidArgument, fn,
              ": torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B (",
              rows(ld), "x", cols(ld), " and ", rows(b), "x", cols(b), ")");
  return solve_with_factors(
      ld, pivots, b, true, false,
      [k = linalg_kernel(&LinalgKernels::ldl_solve, ld, fn)](
          const TensorImpl& f, const TensorImpl& p, const TensorImpl& x, bool) { k(f, p, x); },
      fn);
}

TensorPtr pinv(const TensorImpl& a, const TensorImpl* atol, const TensorImpl* rtol,
               bool hermitian, const char* fn) {
  check_matrix(a, "self", hermitian, fn);
  const Sizes batch = batch_of(a);
  // The tolerances in float64 per matrix (ATen's get_atol_rtol: a tensor
  // broadcast against the batch).
  auto tolerance = [&](const TensorImpl* t, const char* name) {
    TensorPtr out = new_dense(batch, ScalarType::Float64, a.device(), fn);
    if (t == nullptr) {
      zero_tensor(*out, fn);
      return out;
    }
    AOTRT_CHECK(!is_complex(t->dtype()), kInvalidArgument, fn, ": linalg.pinv: ", name,
                " tensor of complex type is not supported.");
    AOTRT_CHECK(broadcast_shapes(batch, t->sizes(), fn) == batch, kUnsupported, fn,
                ": argument '", name, "' of sizes ", sizes_text(t->sizes()),
                " is served when it broadcasts to the batch ", sizes_text(batch));
    copy_tensor(*out, *t, fn);
    return out;
  };
  TensorPtr atol_t = tolerance(atol, "atol");
  TensorPtr rtol_t = tolerance(rtol, "rtol");
  if (rtol == nullptr) {
    // Default rtol: eps * max(m, n) (a float64 scalar broadcast), which the
    // kernel takes as 0 where atol > 0.
    const double eps = a.dtype() == ScalarType::Float32 ? std::numeric_limits<float>::epsilon()
                                                         : std::numeric_limits<double>::epsilon();
    const double value = eps * static_cast<double>(std::max(rows(a), cols(a)));
    const int64_t one_size[] = {1}, one_stride[] = {1};
    auto host = empty_strided(one_size, one_stride, ScalarType::Float64, cpu_device(), fn);
    *static_cast<double*>(host->data_ptr()) = value;
    copy_tensor(*rtol_t, *make_tensor(host->storage(), {}, {}, 0, ScalarType::Float64, fn), fn);
  }
  const auto scale = linalg_kernel(&LinalgKernels::pinv_scale, a, fn);
  const int64_t m = rows(a), n = cols(a);
  TensorPtr out = new_dense(with_matrix(batch, n, m), a.dtype(), a.device(), fn);
  if (out->numel() == 0) return out;
  TensorPtr left, right;  // out = left @ right
  if (hermitian) {
    // A = V diag(w) V^T: A+ = (V diag(1/w)) V^T.
    auto [w, v] = eigh(a, "L", true, fn);
    TensorPtr scaled = column_major_copy(*v, fn);
    scale(*scaled, *w, *atol_t, *rtol_t, rtol == nullptr);
    left = std::move(scaled);
    right = transposed(*v, fn);
  } else {
    // A = U diag(s) Vh: A+ = Vh^T (U diag(1/s))^T.
    auto [u, s, vh] = svd(a, false, true, false, fn);
    scale(*u, *s, *atol_t, *rtol_t, rtol == nullptr);
    left = transposed(*vh, fn);
    right = transposed(*u, fn);
  }
  bmm_out(*as_3d(*out, fn), *as_3d(*left, fn), *as_3d(*right, fn), fn);
  return out;
}

namespace {

// The matrix exponential of one dense n x n matrix, by the Taylor
// polynomials of ATen's matrix_exp (their coefficients, from Bader, Blanes
// and Casas, "Computing the Matrix Exponential with an Optimized Taylor
// Polynomial Approximation", Mathematics 2019; the evaluation schemes as
// ATen's, each product one gemm).
class MatrixExp {
 public:
  MatrixExp(const TensorImpl& like, const char* fn)
      : n_(rows(like)), dtype_(like.dtype()), device_(like.device()), fn_(fn),
        combine_(linalg_kernel(&LinalgKernels::combine, like, fn)) {}

  // out <- T_degree(a).
  void taylor(int degree, const TensorImpl& a, const TensorImpl& out) {
    TensorPtr id = identity();
    if (degree == 1) return lin(out, {id.get(), &a}, {1, 1});
    TensorPtr a2 = mm(a, a);
    if (degree == 2) return lin(out, {id.get(), &a, a2.get()}, {1, 1, 0.5});
    if (degree == 4) {
      TensorPtr t = fresh();
      lin(*t, {id.get(), &a, a2.get()}, {1 / 2.0, 1 / 6.0, 1 / 24.0});
      TensorPtr a3 = mm(*a2, *t);
      return lin(out, {id.get(), &a, a3.get()}, {1, 1, 1});
    }
    if (degree == 8) {
      const double sqrt_177 = 0.1330413469565007072504e+2;
      const double x3 = 2. / 3.;
      const double x1 = x3 * ((1. + sqrt_177) / 88.), x2 = x3 * ((1. + sqrt_177) / 352.);
      const double x4 = (-271. + 29. * sqrt_177) / (315. * x3);
      const double x5 = (-11. + 11. * sqrt_177) / (1260. * x3);
      const double x6 = (-99. + 11. * sqrt_177) / (5040. * x3);
      const double x7 = (89. - sqrt_177) / (5040. * x3);
      const double y2 = (857. - 58. * sqrt_177) / 630.;
      TensorPtr t = fresh(), u = fresh();
      lin(*t, {&a, a2.get()}, {rounded(x1), rounded(x2)});
      TensorPtr a4 = mm(*a2, *t);
      lin(*t, {a2.get(), a4.get()}, {rounded(x3), 1});
      lin(*u, {id.get(), &a, a2.get(), a4.get()},
          {rounded(x4), rounded(x5), rounded(x6), rounded(x7)});
      TensorPtr a8 = mm(*t, *u);
      return lin(out, {id.get(), &a, a2.get(), a8.get()}, {1, 1, rounded(y2), 1});
    }
    TensorPtr a3 = mm(a, *a2);
    if (degree == 12) {
      static constexpr double b[4][4] = {
          {9.0198e-16, 0.46932117595418237389, -0.20099424927047284052,
           -0.04623946134063071740},
          {5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
           0.01108844528519167989},
          {0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
           0.00610700528898058230},
          {-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
           -0.00675951846863086359}};
      // B_i = sum_j b[i][j] A^j; B2 += B3 B3 (A^6's part); out = B0 + (B1 + B2) B2.
      return products(out, {id.get(), &a, a2.get(), a3.get()}, b, {3, 3, 2, 1, 0});
    }
    static constexpr double b[5][5] = {
        {0., -1.00365581030144618291e-01, -8.02924648241156932449e-03,
         -8.92138498045729985177e-04, 0.},
        {0., 3.97849749499645077844e-01, 1.36783778460411720168e+00,
         4.98289622525382669416e-01, -6.37898194594723280150e-04},
        {-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
         -6.98210122488052056106e-03, 3.34975017086070470649e-05},
        {-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
         2.95552570429315521194e-02, -1.39180257516060693404e-05},
        {0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02,
         -1.40086798182036094347e-05}};
    TensorPtr a6 = mm(*a3, *a3);
    // B_i over {I, A, A^2, A^3, A^6}; B3 += B0 B4 (A^9's part); out = B1 + (B2 + B3) B3.
    products(out, {id.get(), &a, a2.get(), a3.get(), a6.get()}, b, {0, 4, 3, 2, 1});
  }

  // out <- T_18(a / 2^s) squared s times.
  void scaled_taylor18(const TensorImpl& a, int64_t s, const TensorImpl& out) {
    TensorPtr scaled = fresh();
    lin(*scaled, {&a}, {std::ldexp(1.0, static_cast<int>(-s))});
    TensorPtr cur = fresh();
    taylor(18, *scaled, *cur);
    for (int64_t p = 0; p < s; ++p) cur = mm(*cur, *cur);
    copy_tensor(out, *cur, fn_);
  }

  // The coefficient as the dtype holds it (ATen's constexpr scalar_t).
  double rounded(double v) const {
    return dtype_ == ScalarType::Float32 ? static_cast<double>(static_cast<float>(v)) : v;
  }

 private:
  TensorPtr fresh() { return new_dense(Sizes{n_, n_}, dtype_, device_, fn_); }
  TensorPtr identity() {
    TensorPtr id = fresh();
    set_identity(*id, fn_);
    return id;
  }
  TensorPtr mm(const TensorImpl& x, const TensorImpl& y) {
    TensorPtr out = fresh();
    mm_out(*out, x, y, fn_);
    return out;
  }
  void lin(const TensorImpl& out, std::initializer_list<const TensorImpl*> xs,
           std::initializer_list<double> coeffs) {
    combine_(out, xs.begin(), coeffs.begin(), static_cast<int>(xs.size()));
  }
  // The scheme of degrees 12 and 18 (indices s into B): B_i = sum_j b[i][j]
  // p_j; B[s2] += B[s0] B[s1]; B[s3] += B[s2]; out = B[s4] + B[s3] B[s2].
  template <size_t N>
  void products(const TensorImpl& out, const std::vector<const TensorImpl*>& p,
                const double (&b)[N][N], std::array<int, 5> s) {
    TensorPtr bs[N];
    for (size_t i = 0; i < N; ++i) {
      bs[i] = fresh();
      double c[N];
      for (size_t j = 0; j < N; ++j) c[j] = rounded(b[i][j]);
      combine_(*bs[i], p.data(), c, static_cast<int>(N));
    }
    TensorPtr high = mm(*bs[s[0]], *bs[s[1]]);
    lin(*bs[s[2]], {bs[s[2]].get(), high.get()}, {1, 1});
    lin(*bs[s[3]], {bs[s[3]].get(), bs[s[2]].get()}, {1, 1});
    TensorPtr prod = mm(*bs[s[3]], *bs[s[2]]);
    lin(out, {bs[s[4]].get(), prod.get()}, {1, 1});
  }

  int64_t n_;
  ScalarType dtype_;
  Device device_;
  const char* fn_;
  decltype(LinalgKernels::combine) combine_;
};

}  // namespace

TensorPtr matrix_exp(const TensorImpl& a, const char* fn) {
  check_matrix(a, "self", true, fn);
  const int64_t n = rows(a);
  if (n == 1) return pow(std::exp(1.0), a, fn);
  TensorPtr out = new_dense(sizes_of(a), a.dtype(), a.device(), fn);
  if (out->numel() == 0) return out;
  TensorPtr dense = new_dense(sizes_of(a), a.dtype(), a.device(), fn);
  copy_tensor(*dense, a, fn);
  const int64_t count = out->numel() / (n * n);
  const int64_t norm_sizes[] = {count}, norm_strides[] = {1};
  TensorPtr norms = empty_strided(norm_sizes, norm_strides, ScalarType::Float64, a.device(), fn);
  linalg_kernel(&LinalgKernels::one_norm, a, fn)(*dense, *norms);
  TensorPtr host = empty_strided(norm_sizes, norm_strides, ScalarType::Float64, cpu_device(), fn);
  copy_tensor(*host, *norms, fn);
  if (a.device().is_cuda()) aotrt::synchronize(a.device());
  // ATen's bounds of the degrees 1, 2, 4, 8, 12 and 18 (float32, float64).
  static constexpr double kThetaF[] = {1.192092800768788e-07, 5.978858893805233e-04,
                                       5.116619363445086e-02, 5.800524627688768e-01,
                                       1.461661507209034e+00, 3.010066362817634e+00};
  static constexpr double kThetaD[] = {2.220446049250313e-16, 2.580956802971767e-08,
                                       3.397168839976962e-04, 4.991228871115323e-02,
                                       2.996158913811580e-01, 1.090863719290036e+00};
  static constexpr int kDegree[] = {1, 2, 4, 8, 12};
  const bool f32 = a.dtype() == ScalarType::Float32;
  MatrixExp mexp(a, fn);
  double theta[6];
  for (int i = 0; i < 6; ++i) theta[i] = mexp.rounded(f32 ? kThetaF[i] : kThetaD[i]);
  const int64_t step = n * n;
  const int64_t mat_sizes[] = {n, n}, mat_strides[] = {n, 1};
  for (int64_t i = 0; i < count; ++i) {
    auto in = make_tensor(dense->storage(), mat_sizes, mat_strides,
                          dense->storage_offset() + i * step, a.dtype(), fn);
    auto res = make_tensor(out->storage(), mat_sizes, mat_strides, i * step, a.dtype(), fn);
    const double norm = static_cast<const double*>(host->data_ptr())[i];
    if (!std::isfinite(norm)) {
      // ATen: no degree's interval holds a NaN norm, and its result stays
      // NaN (an inf norm scales by 2^inf to NaN): NaN * x.
      const TensorImpl* src = in.get();
      const double nan = std::numeric_limits<double>::quiet_NaN();
      linalg_kernel(&LinalgKernels::combine, a, fn)(*res, &src, &nan, 1);
      continue;
    }
    if (norm >= theta[4]) {
      // Scaling and squaring: s = max(0, ceil(log2(norm / theta_18))).
      const double ratio = mexp.rounded(norm / theta[5]);
      const int64_t s = std::max<int64_t>(0, static_cast<int64_t>(std::ceil(std::log2(ratio))));
      mexp.scaled_taylor18(*in, s, *res);
      continue;
    }
    int d = 0;
    while (!(norm <= theta[d])) ++d;
    mexp.taylor(kDegree[d], *in, *res);
  }
  return out;
}

}  // namespace aotrt::ops
