// Linear algebra (LAPACK on the CPU, cuSOLVER on CUDA): the C-shim ops
// triangular_solve, cholesky_solve, cholesky_inverse, geqrf, ormqr, and the
// proxy-executor ops (no C shim) linalg_solve_triangular, linalg_inv_ex, _linalg_solve_ex,
// linalg_lu_factor_ex, linalg_cholesky_ex, _linalg_det, _linalg_slogdet and
// _linalg_check_errors.
//
// Note [Linalg layout]
// As ATen does (cloneBatchedColumnMajor), the family copies each matrix
// operand into new memory laid out batched column-major: batch dims dense
// and outermost, each matrix column-major (strides ..., 1, rows). Kernels
// work in place on such tensors only, so they never see a view, and
// results come out in ATen's own layout for these ops (inductor asserts
// those strides). Float32 and float64 are served; complex matrices are
// refused by name. Pivots and info are int32, as in ATen.
#pragma once

#include <memory>
#include <string>
#include <tuple>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. Every tensor is batched
// column-major (Note [Linalg layout]) with the same batch sizes; info and
// pivots are int32 and dense. Kernels do not check results: they write
// LAPACK's info per matrix.
struct LinalgKernels {
  // getrf: lu <- P L U; pivots [B, min(m, n)] (1-based, LAPACK's); info [B].
  void (*lu_factor)(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& info);
  // getrs: b <- A^-1 b (A^-T b when transpose) from getrf's lu and pivots.
  void (*lu_solve)(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& b,
                   bool transpose);
  // potrf: the lower (upper) triangle of a <- L (U); the other is left as is.
  void (*cholesky)(const TensorImpl& a, bool upper, const TensorImpl& info);
  // potrs: b <- A^-1 b with A = L L^T (U^T U) given its factor.
  void (*cholesky_solve)(const TensorImpl& b, const TensorImpl& factor, bool upper);
  // potri, then the other triangle mirrored: a (a factor) <- (F F^T)^-1.
  void (*cholesky_inverse)(const TensorImpl& a, bool upper, const TensorImpl& info);
  // trsm: b <- op(A)^-1 b (left) or b op(A)^-1 for triangular A (op:
  // transpose or not).
  void (*triangular_solve)(const TensorImpl& b, const TensorImpl& a, bool upper, bool transpose,
                           bool unitriangular, bool left);
  // geqrf: a <- R and the reflectors below it; tau [B, min(m, n)].
  void (*geqrf)(const TensorImpl& a, const TensorImpl& tau);
  // From getrf's lu and pivots: sign [B] <- the determinant's sign and
  // value [B] <- log|det| (log) or det.
  void (*lu_det)(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& sign,
                 const TensorImpl& value, bool log);
  // ormqr: c <- op(Q) c (left) or c op(Q) from reflectors a and tau.
  void (*ormqr)(const TensorImpl& c, const TensorImpl& a, const TensorImpl& tau, bool left,
                bool transpose);
  // lu_unpack from a dense (row-major) lu [B, m, n] and int32 pivots [B, k]:
  // p [B, m, m], l [B, m, k], u [B, k, n], dense, each written when not null
  // (any dtype: a copy of elements). Pivots out of [1, m] are refused.
  void (*lu_unpack)(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl* p,
                    const TensorImpl* l, const TensorImpl* u, const char* fn);
};

using TensorPtr = std::unique_ptr<TensorImpl>;

// aten.triangular_solve(self (B), A, upper, transpose, unitriangular) ->
// (solution, cloned_coefficient).
std::tuple<TensorPtr, TensorPtr> triangular_solve(const TensorImpl& b, const TensorImpl& a,
                                                  bool upper, bool transpose,
                                                  bool unitriangular, const char* fn);
// linalg_solve_triangular(A, B, upper, left, unitriangular): X with A X = B
// (X A = B when not left), batched column-major as ATen's.
TensorPtr solve_triangular(const TensorImpl& a, const TensorImpl& b, bool upper, bool left,
                           bool unitriangular, const char* fn);
TensorPtr cholesky_solve(const TensorImpl& b, const TensorImpl& factor, bool upper,
                         const char* fn);
TensorPtr cholesky_inverse(const TensorImpl& factor, bool upper, const char* fn);
std::tuple<TensorPtr, TensorPtr> geqrf(const TensorImpl& a, const char* fn);
TensorPtr ormqr(const TensorImpl& a, const TensorImpl& tau, const TensorImpl& c, bool left,
                bool transpose, const char* fn);
// linalg_lu_factor_ex(A, pivot, check_errors) -> (LU, pivots, info).
std::tuple<TensorPtr, TensorPtr, TensorPtr> lu_factor_ex(const TensorImpl& a, bool pivot,
                                                         bool check_errors, const char* fn);
// linalg_inv_ex(A, check_errors) -> (inverse, info).
std::tuple<TensorPtr, TensorPtr> inv_ex(const TensorImpl& a, bool check_errors,
                                        const char* fn);
// _linalg_solve_ex(A, B, left, check_errors) -> (result, LU, pivots, info).
std::tuple<TensorPtr, TensorPtr, TensorPtr, TensorPtr> solve_ex(const TensorImpl& a,
                                                                const TensorImpl& b, bool left,
                                                                bool check_errors,
                                                                const char* fn);
// linalg_cholesky_ex(A, upper, check_errors) -> (L, info).
std::tuple<TensorPtr, TensorPtr> cholesky_ex(const TensorImpl& a, bool upper,
                                             bool check_errors, const char* fn);
// _linalg_det(A) -> (det, LU, pivots).
std::tuple<TensorPtr, TensorPtr, TensorPtr> det(const TensorImpl& a, const char* fn);
// _linalg_slogdet(A) -> (sign, logabsdet, LU, pivots).
std::tuple<TensorPtr, TensorPtr, TensorPtr, TensorPtr> slogdet(const TensorImpl& a,
                                                               const char* fn);
// lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots) -> (P, L, U):
// A = P L U for lu_factor's output. L unit lower [.., m, k], U upper
// [.., k, n] (k = min(m, n)), P the permutation of the pivots' row swaps
// applied in order; all contiguous, LU's dtype (any dtype, as ATen). What is
// not unpacked comes back as an empty [0] tensor, as in ATen. Pivots must be
// int32 with LU's batch sizes and k entries, each in [1, m].
std::tuple<TensorPtr, TensorPtr, TensorPtr> lu_unpack(const TensorImpl& lu,
                                                      const TensorImpl& pivots, bool unpack_data,
                                                      bool unpack_pivots, const char* fn);
// _linalg_check_errors(info, api_name, is_matrix): throws ATen's message
// for the first nonzero info. Reads info on the host (a sync on CUDA).
void check_errors(const TensorImpl& info, const std::string& api_name, bool is_matrix,
                  const char* fn);

}  // namespace aotrt::ops
