// The linalg family's semantics: checks with ATen's rules, output shapes and
// layouts (Note [Linalg layout]), then the device's kernels.
#include "ops/linalg.h"

#include <algorithm>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "aotrt/aotrt.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

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
  int64_t step = strides[n - 1] * std::max<int64_t>(sizes[n - 1], 1);
  for (size_t i = n - 2; i-- > 0;) {
    strides[i] = step;
    step *= std::max<int64_t>(sizes[i], 1);
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
  TensorPtr lu = column_major_copy(a, fn);
  Sizes piv_sizes = batch_of(a);
  piv_sizes.push_back(std::min(rows(a), cols(a)));
  TensorPtr pivots = new_dense(piv_sizes, ScalarType::Int32, a.device(), fn);
  TensorPtr info = new_dense(batch_of(a), ScalarType::Int32, a.device(), fn);
  if (lu->numel() > 0) {
    linalg_kernel(&LinalgKernels::lu_factor, a, fn)(*lu, *pivots, *info);
  } else {
    zero_tensor(*info, fn);
  }
  if (check_errors_) check_errors(*info, "torch.linalg.lu_factor_ex", a.dim() == 2, fn);
  return {std::move(lu), std::move(pivots), std::move(info)};
}

std::tuple<TensorPtr, TensorPtr> inv_ex(const TensorImpl& a, bool check_errors_,
                                        const char* fn) {
  check_matrix(a, "A", true, fn);
  // As ATen: solve A X = I from A's LU factors.
  auto [lu, pivots, info] = lu_factor_ex(a, true, false, fn);
  const Sizes sizes = sizes_of(a);
  TensorPtr x = new_column_major(sizes, a.dtype(), a.device(), fn);
  zero_tensor(*x, fn);
  if (x->numel() > 0) {
    // The identity, written through a view of each diagonal.
    const int64_t n = rows(a);
    Sizes diag_sizes = batch_of(a);
    diag_sizes.push_back(n);
    Sizes diag_strides(x->strides().begin(), x->strides().end() - 2);
    diag_strides.push_back(x->strides()[a.dim() - 2] + x->strides()[a.dim() - 1]);
    fill_ones(*make_tensor(x->storage(), diag_sizes, diag_strides, 0, x->dtype(), fn), fn);
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
  const int64_t k = vector ? 1 : (left ? cols(b) : rows(b));
  const Sizes batch = broadcast_shapes(b_batch, a_batch, fn);

  // Factor A as it is (LU, pivots and info have A's batch, as ATen's), then
  // solve with factors broadcast to the common batch.
  auto [lu, pivots, info] = lu_factor_ex(a, true, false, fn);
  TensorPtr lu_full, piv_full;
  const TensorImpl* lu_use = lu.get();
  const TensorImpl* piv_use = pivots.get();
  if (batch != a_batch) {
    lu_full = column_major_copy(*lu, with_matrix(batch, n, n), fn);
    Sizes piv_sizes = batch;
    piv_sizes.push_back(n);
    piv_full = new_dense(piv_sizes, ScalarType::Int32, a.device(), fn);
    copy_tensor(*piv_full, *pivots, fn);
    lu_use = lu_full.get();
    piv_use = piv_full.get();
  }
  // X A = B is A^T X^T = B^T: solve with the transposed factors.
  TensorPtr x = new_column_major(with_matrix(batch, n, k), a.dtype(), a.device(), fn);
  {
    // x[..., n, k] <- B (or B^T, or B as a column).
    if (vector) {
      // A view of x as [..., n]: the column.
      Sizes vs(batch);
      vs.push_back(n);
      Sizes vst(x->strides().begin(), x->strides().end() - 1);
      auto col = make_tensor(x->storage(), vs, vst, 0, x->dtype(), fn);
      copy_tensor(*col, b, fn);
    } else if (left) {
      copy_tensor(*x, b, fn);
    } else {
      // x^T as a [..., k, n] view.
      Sizes ts = with_matrix(batch, k, n);
      Sizes tst(x->strides().begin(), x->strides().end());
      std::swap(tst[tst.size() - 1], tst[tst.size() - 2]);
      auto xt = make_tensor(x->storage(), ts, tst, 0, x->dtype(), fn);
      copy_tensor(*xt, b, fn);
    }
  }
  if (x->numel() > 0) {
    linalg_kernel(&LinalgKernels::lu_solve, a, fn)(*lu_use, *piv_use, *x, !left);
  }
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
  } else if (left) {
    result = std::move(x);
  } else {
    // Row-major [..., k, n] memory holding X: x (column-major n x k) read
    // as its transpose is exactly that layout.
    Sizes ts = with_matrix(batch, k, n);
    Sizes tst(x->strides().begin(), x->strides().end());
    std::swap(tst[tst.size() - 1], tst[tst.size() - 2]);
    result = make_tensor(x->storage(), ts, tst, 0, x->dtype(), fn);
  }
  return {std::move(result), std::move(lu), std::move(pivots), std::move(info)};
}

std::tuple<TensorPtr, TensorPtr> cholesky_ex(const TensorImpl& a, bool upper,
                                             bool check_errors_, const char* fn) {
  check_matrix(a, "A", true, fn);
  TensorPtr l = column_major_copy(a, fn);
  TensorPtr info = new_dense(batch_of(a), ScalarType::Int32, a.device(), fn);
  if (l->numel() > 0) {
    linalg_kernel(&LinalgKernels::cholesky, a, fn)(*l, upper, *info);
  } else {
    zero_tensor(*info, fn);
  }
  if (check_errors_) check_errors(*info, "torch.linalg.cholesky_ex", a.dim() == 2, fn);
  return {std::move(l), std::move(info)};
}

std::tuple<TensorPtr, TensorPtr, TensorPtr> det(const TensorImpl& a, const char* fn) {
  check_matrix(a, "A", true, fn);
  auto [lu, pivots, info] = lu_factor_ex(a, true, false, fn);
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
  auto [lu, pivots, info] = lu_factor_ex(a, true, false, fn);
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

void check_errors(const TensorImpl& info, const std::string& api_name, bool is_matrix,
                  const char* fn) {
  AOTRT_CHECK(info.dtype() == ScalarType::Int32, kInvalidArgument, fn,
              ": info must be int32, got ", dtype_name(info.dtype()));
  if (info.numel() == 0) return;
  // On the host, dense (a CUDA info is read back: the one sync this op has).
  const Sizes sizes = sizes_of(info);
  auto host = empty_strided(sizes, contiguous_strides(sizes), ScalarType::Int32,
                            cpu_device(), fn);
  copy_tensor(*host, info, fn);
  if (info.device().is_cuda()) aotrt::synchronize(info.device());
  const int32_t* v = static_cast<const int32_t*>(host->data_ptr());
  int64_t bad = -1;
  for (int64_t i = 0; i < host->numel() && bad < 0; ++i) {
    if (v[i] != 0) bad = i;
  }
  if (bad < 0) return;
  const int32_t code = v[bad];
  // ATen's _linalg_check_errors messages (singleCheckErrors); is_matrix is
  // false for a batch, whose message names the element.
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

}  // namespace aotrt::ops
