// Linear algebra (LAPACK on the CPU, cuSOLVER on CUDA): the C-shim ops
// triangular_solve, cholesky_solve, cholesky_inverse, geqrf, ormqr, and the
// proxy-executor ops (no C shim) linalg_solve_triangular, linalg_inv_ex, _linalg_solve_ex,
// linalg_lu_factor_ex, linalg_cholesky_ex, _linalg_det, _linalg_slogdet,
// _linalg_check_errors, linalg_qr, _linalg_svd, _linalg_eigh, linalg_eig, linalg_lu,
// linalg_lu_solve, cholesky, linalg_householder_product, linalg_ldl_factor_ex,
// linalg_ldl_solve, linalg_pinv.atol_rtol_tensor and linalg_matrix_exp.
//
// Note [Linalg layout]
// As ATen does (cloneBatchedColumnMajor), the family copies each matrix
// operand into new memory laid out batched column-major: batch dims dense
// and outermost, each matrix column-major (strides ..., 1, rows). Kernels
// work in place on such tensors only, so they never see a view, and
// results come out in ATen's own layout for these ops (inductor asserts
// those strides). Float32 and float64 are served; complex matrices are
// refused by name. Pivots and info are int32, as in ATen.
//
// The output layouts below were read from eager (torch 2.13, CPU), which
// inductor's assert_size_stride checks: column-major Q and R (qr), U and Vh
// (svd, whatever the shape), eigenvectors (eigh, eig), LD (ldl), the
// left-solution of lu_solve and ldl_solve (a right one, X A = B, comes out
// row-major: the transpose of the column-major X^T solved for), cholesky and
// householder_product; dense row-major P, L, U of linalg_lu and pinv; dense
// S, eigenvalues, pivots and info. An output an op does not compute (Q in
// mode "r", U and Vh with compute_uv=False, eigenvectors with
// compute_v=False) is an empty [0] tensor, as in ATen. linalg_eig of a real
// matrix returns complex64 (complex128 for float64): LAPACK's geev gives a
// complex pair as two real columns (re, im), which the kernel writes as the
// vectors re + i im and re - i im, as ATen does. Singular vectors and
// eigenvectors are unique only up to sign (a phase for eig): aotrt's
// OpenBLAS and torch's MKL may pick different ones.
//
// Note [Vh's layout]
// _linalg_svd's Vh is a batch of column-major matrices on the CPU (LAPACK
// writes Vh) and of row-major ones on CUDA: cuSOLVER computes V, not Vh,
// and ATen's meta function gives Vh C-contiguous strides whenever the SVD
// runs on cuSOLVER. Generated code trusts those strides (svd_lowrank reads
// V = Vh.mH through a reinterpretation of them), so aotrt allocates Vh as
// ATen's meta says, per device; the CUDA kernel then writes V in place.
//
// Note [Linalg errors on CUDA]
// ATen raises a factorization's failure (a nonzero info: singular,
// not positive-definite, no convergence) by reading info on the host, a
// sync on CUDA. aotrt never syncs inside a run, so on CUDA check_errors
// (the _linalg_check_errors op, the _ex ops' check_errors=True, and the
// checks svd, eigh, eig and cholesky make) only queues a one-thread kernel
// that records the first nonzero info of the call, with its batch index,
// into the device's error record (mapped pinned host memory); the results
// are returned as cuSOLVER left them. The next aotrt::synchronize of that
// device, or Tensor::dense_host_copy of a tensor on it (after their wait),
// takes the record and throws ATen's message for it, naming the op that
// checked: errors surface where CUDA's own asynchronous errors do. The record keeps the first error until it is taken. The _ex
// ops with check_errors=False raise nothing, as ATen's. lu_unpack's pivot
// range check is the kernel's on CUDA: a matrix with a pivot outside [1, m]
// gets a zero P (no permutation has one), its L and U as usual; on the CPU
// it is refused. matrix_exp still reads its norms on the host (a sync on
// CUDA, as ATen's CPU path reads them), and cuSOLVER itself waits for the
// stream in linalg_eig (Xgeev's host workspace), the LDL factorization
// (sytrf), every SVD (gesvdj: full, reduced, values only, float32 and
// float64) and every symmetric eigendecomposition (syevd), so in pinv too,
// as measured on the H200 with cuSOLVER 12 (2026-12-01: each held its call
// until the stream it waited on was released, tests/unit/cuda/
// test_cuda_linalg.cpp). ATen's documentation says the same of
// torch.linalg.svd and eigh on CUDA ("synchronizes that device with the
// CPU"). A model that calls these on CUDA waits there once per call.
#pragma once

#include <memory>
#include <string>
#include <tuple>

#include "core/tensor.h"

namespace aotrt::ops {

// One batch of m x n column-major matrices (the family's tensors).
struct MatrixBatch {
  int64_t count = 0, m = 0, n = 0;
  int64_t step() const { return m * n; }
};
inline MatrixBatch matrix_batch(const TensorImpl& t) {
  MatrixBatch b;
  b.m = t.sizes()[t.dim() - 2];
  b.n = t.sizes()[t.dim() - 1];
  b.count = b.m * b.n == 0 ? 0 : t.numel() / (b.m * b.n);
  return b;
}

// A failure recorded on a device (Note [Linalg errors on CUDA]): the tag
// check_errors gave (which op, matrix or batch), the batch index, LAPACK's info.
struct LinalgError {
  int32_t tag = 0;
  int32_t code = 0;
  int64_t batch = 0;
};

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
  // (any dtype: a copy of elements). Pivots out of [1, m] are refused (CUDA:
  // see Note [Linalg errors on CUDA]).
  void (*lu_unpack)(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl* p,
                    const TensorImpl* l, const TensorImpl* u, const char* fn);
  // orgqr: q [B, m, nq] holds geqrf's reflectors in its first k columns (k:
  // tau's last size, k <= nq <= m) <- the first nq columns of Q.
  void (*orgqr)(const TensorImpl& q, const TensorImpl& tau);
  // a [B, m, n] <- its upper triangle, zeros below the diagonal.
  void (*triu)(const TensorImpl& a);
  // gesdd: a is destroyed; s [B, k] <- the singular values, descending; u
  // [B, m, m or k] and vh [B, n or k, n] (full or reduced), or both null for
  // none; info [B].
  void (*svd)(const TensorImpl& a, const TensorImpl& s, const TensorImpl* u,
              const TensorImpl* vh, const TensorImpl& info);
  // syevd on the lower (upper) triangle: w [B, n] <- eigenvalues ascending,
  // a <- the eigenvectors when compute_v (else destroyed); info [B].
  void (*eigh)(const TensorImpl& a, const TensorImpl& w, bool upper, bool compute_v,
               const TensorImpl& info);
  // geev: a is destroyed; values [B, n] and vectors [B, n, n] (column-major)
  // complex64 (float32 a) or complex128 (float64 a); info [B].
  void (*eig)(const TensorImpl& a, const TensorImpl& values, const TensorImpl& vectors,
              const TensorImpl& info);
  // sytrf on the lower triangle: a <- LD (its upper triangle zeroed, as
  // ATen's), pivots [B, n] (LAPACK's), info [B].
  void (*ldl_factor)(const TensorImpl& a, const TensorImpl& pivots, const TensorImpl& info);
  // sytrs: b <- A^-1 b from sytrf's lower LD and pivots.
  void (*ldl_solve)(const TensorImpl& ld, const TensorImpl& pivots, const TensorImpl& b);
  // The middle factor of a pseudo-inverse: with the values s [B, k] of one
  // matrix, tol = max(atol[b], rtol[b] * max_j |s_j|) (atol, rtol float64
  // [B]; rtol[b] taken as 0 where atol[b] > 0 when default_rtol, ATen's
  // rule for a given atol and no rtol); column j of u [B, r, k] <- u[:, j] /
  // s_j where |s_j| > tol, else 0.
  void (*pinv_scale)(const TensorImpl& u, const TensorImpl& s, const TensorImpl& atol,
                     const TensorImpl& rtol, bool default_rtol);
  // norms [B] float64 <- the 1-norm (largest column sum of |a_ij|, summed in
  // a's dtype) of each matrix of the dense a [B, n, n].
  void (*one_norm)(const TensorImpl& a, const TensorImpl& norms);
  // out <- sum_j coeffs[j] * xs[j] (coefficients rounded to the dtype; all
  // dense of out's sizes; out may be one of xs).
  void (*combine)(const TensorImpl& out, const TensorImpl* const* xs, const double* coeffs,
                  int count);
  // Devices that defer errors (Note [Linalg errors on CUDA]): queue the
  // recording of the first nonzero entry of the dense int32 info [B] with
  // `tag`; take (and clear) the device's record, false when there is none.
  void (*record_errors)(const TensorImpl& info, int32_t tag);
  bool (*take_error)(int device_index, LinalgError* out);
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
// linalg_qr(A, mode) -> (Q, R); mode "reduced", "complete" or "r".
std::tuple<TensorPtr, TensorPtr> qr(const TensorImpl& a, const std::string& mode,
                                    const char* fn);
// linalg_householder_product(input, tau): the first n columns of the product
// of k = tau.size(-1) Householder reflectors (orgqr).
TensorPtr householder_product(const TensorImpl& input, const TensorImpl& tau, const char* fn);
// _linalg_svd(A, full_matrices, compute_uv, driver) -> (U, S, Vh).
std::tuple<TensorPtr, TensorPtr, TensorPtr> svd(const TensorImpl& a, bool full_matrices,
                                                bool compute_uv, bool has_driver,
                                                const char* fn);
// _linalg_eigh(A, UPLO, compute_v) -> (eigenvalues, eigenvectors).
std::tuple<TensorPtr, TensorPtr> eigh(const TensorImpl& a, const std::string& uplo,
                                      bool compute_v, const char* fn);
// linalg_eig(A) -> (eigenvalues, eigenvectors), complex.
std::tuple<TensorPtr, TensorPtr> eig(const TensorImpl& a, const char* fn);
// linalg_lu(A, pivot) -> (P, L, U).
std::tuple<TensorPtr, TensorPtr, TensorPtr> lu(const TensorImpl& a, bool pivot, const char* fn);
// linalg_lu_solve(LU, pivots, B, left, adjoint): X with A X = B (A^H X = B
// when adjoint; X A = B, X A^H = B when not left), A = P L U.
TensorPtr lu_solve(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& b,
                   bool left, bool adjoint, const char* fn);
// cholesky(self, upper): linalg_cholesky_ex with its errors raised, under
// torch.cholesky's name.
TensorPtr cholesky(const TensorImpl& a, bool upper, const char* fn);
// linalg_ldl_factor_ex(self, hermitian, check_errors) -> (LD, pivots, info).
std::tuple<TensorPtr, TensorPtr, TensorPtr> ldl_factor_ex(const TensorImpl& a, bool hermitian,
                                                          bool check_errors, const char* fn);
// linalg_ldl_solve(LD, pivots, B, hermitian).
TensorPtr ldl_solve(const TensorImpl& ld, const TensorImpl& pivots, const TensorImpl& b,
                    bool hermitian, const char* fn);
// linalg_pinv.atol_rtol_tensor(self, atol, rtol, hermitian): through svd
// (eigh when hermitian) as ATen: singular values at most max(atol, rtol *
// the largest) count as zero; rtol defaults to eps * max(m, n) when neither
// is given, to 0 when atol is given and positive.
TensorPtr pinv(const TensorImpl& a, const TensorImpl* atol, const TensorImpl* rtol,
               bool hermitian, const char* fn);
// linalg_matrix_exp(self): ATen's Taylor approximations of degree 1, 2, 4,
// 8, 12 or 18 picked by each matrix's 1-norm, with scaling and squaring past
// degree 18's bound (Bader, Blanes and Casas 2019), on the matmul family's
// gemm; a 1 x 1 matrix is e^a (pointwise). A NaN or inf norm gives NaN, as
// ATen's. The norms are read on the host, as ATen reads them (a sync on
// CUDA).
TensorPtr matrix_exp(const TensorImpl& a, const char* fn);
// _linalg_check_errors(info, api_name, is_matrix): throws ATen's message
// for the first nonzero info. On CUDA the check is deferred to the next
// synchronize (Note [Linalg errors on CUDA]).
void check_errors(const TensorImpl& info, const std::string& api_name, bool is_matrix,
                  const char* fn);
// Throws the error a CUDA check recorded on `device` since the last call
// (Note [Linalg errors on CUDA]), naming `fn`; nothing when there is none.
// aotrt::synchronize and Tensor::dense_host_copy call it after their wait.
void raise_deferred_errors(Device device, const char* fn);

}  // namespace aotrt::ops
