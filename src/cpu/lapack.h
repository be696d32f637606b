// The LAPACK routines the CPU linear-algebra kernels call, from OpenBLAS
// (which carries reference LAPACK). Our own declarations of the Fortran
// interface (LAPACK's documented signatures): every argument by pointer,
// column-major matrices, and gfortran's hidden lengths of character
// arguments appended last. Templates pick s/d by element type.
#pragma once

#include <cstddef>

extern "C" {
// clang-format off
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv, float* b, const int* ldb, int* info, size_t);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv, double* b, const int* ldb, int* info, size_t);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void spotrs_(const char* uplo, const int* n, const int* nrhs, const float* a, const int* lda, float* b, const int* ldb, int* info, size_t);
void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, double* b, const int* ldb, int* info, size_t);
void spotri_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotri_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void strtrs_(const char* uplo, const char* trans, const char* diag, const int* n, const int* nrhs, const float* a, const int* lda, float* b, const int* ldb, int* info, size_t, size_t, size_t);
void dtrtrs_(const char* uplo, const char* trans, const char* diag, const int* n, const int* nrhs, const double* a, const int* lda, double* b, const int* ldb, int* info, size_t, size_t, size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work, const int* lwork, int* info);
void sormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k, const float* a, const int* lda, const float* tau, float* c, const int* ldc, float* work, const int* lwork, int* info, size_t, size_t);
void dormqr_(const char* side, const char* trans, const int* m, const int* n, const int* k, const double* a, const int* lda, const double* tau, double* c, const int* ldc, double* work, const int* lwork, int* info, size_t, size_t);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info, size_t);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr, float* wi, float* vl, const int* ldvl, float* vr, const int* ldvr, float* work, const int* lwork, int* info, size_t, size_t);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr, double* wi, double* vl, const int* ldvl, double* vr, const int* ldvr, double* work, const int* lwork, int* info, size_t, size_t);
void ssytrf_(const char* uplo, const int* n, float* a, const int* lda, int* ipiv, float* work, const int* lwork, int* info, size_t);
void dsytrf_(const char* uplo, const int* n, double* a, const int* lda, int* ipiv, double* work, const int* lwork, int* info, size_t);
void ssytrs_(const char* uplo, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv, float* b, const int* ldb, int* info, size_t);
void dsytrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv, double* b, const int* ldb, int* info, size_t);
// clang-format on
}

namespace aotrt::cpu::lapack {

// clang-format off
inline void getrf(int m, int n, float* a, int lda, int* ipiv, int* info) { sgetrf_(&m, &n, a, &lda, ipiv, info); }
inline void getrf(int m, int n, double* a, int lda, int* ipiv, int* info) { dgetrf_(&m, &n, a, &lda, ipiv, info); }
inline void getrs(char trans, int n, int nrhs, const float* a, int lda, const int* ipiv, float* b, int ldb, int* info) { sgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1); }
inline void getrs(char trans, int n, int nrhs, const double* a, int lda, const int* ipiv, double* b, int ldb, int* info) { dgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1); }
inline void potrf(char uplo, int n, float* a, int lda, int* info) { spotrf_(&uplo, &n, a, &lda, info, 1); }
inline void potrf(char uplo, int n, double* a, int lda, int* info) { dpotrf_(&uplo, &n, a, &lda, info, 1); }
inline void potrs(char uplo, int n, int nrhs, const float* a, int lda, float* b, int ldb, int* info) { spotrs_(&uplo, &n, &nrhs, a, &lda, b, &ldb, info, 1); }
inline void potrs(char uplo, int n, int nrhs, const double* a, int lda, double* b, int ldb, int* info) { dpotrs_(&uplo, &n, &nrhs, a, &lda, b, &ldb, info, 1); }
inline void potri(char uplo, int n, float* a, int lda, int* info) { spotri_(&uplo, &n, a, &lda, info, 1); }
inline void potri(char uplo, int n, double* a, int lda, int* info) { dpotri_(&uplo, &n, a, &lda, info, 1); }
inline void trtrs(char uplo, char trans, char diag, int n, int nrhs, const float* a, int lda, float* b, int ldb, int* info) { strtrs_(&uplo, &trans, &diag, &n, &nrhs, a, &lda, b, &ldb, info, 1, 1, 1); }
inline void trtrs(char uplo, char trans, char diag, int n, int nrhs, const double* a, int lda, double* b, int ldb, int* info) { dtrtrs_(&uplo, &trans, &diag, &n, &nrhs, a, &lda, b, &ldb, info, 1, 1, 1); }
inline void geqrf(int m, int n, float* a, int lda, float* tau, float* work, int lwork, int* info) { sgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info); }
inline void geqrf(int m, int n, double* a, int lda, double* tau, double* work, int lwork, int* info) { dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info); }
inline void orgqr(int m, int n, int k, float* a, int lda, const float* tau, float* work, int lwork, int* info) { sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info); }
inline void orgqr(int m, int n, int k, double* a, int lda, const double* tau, double* work, int lwork, int* info) { dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info); }
inline void ormqr(char side, char trans, int m, int n, int k, const float* a, int lda, const float* tau, float* c, int ldc, float* work, int lwork, int* info) { sormqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info, 1, 1); }
inline void ormqr(char side, char trans, int m, int n, int k, const double* a, int lda, const double* tau, double* c, int ldc, double* work, int lwork, int* info) { dormqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info, 1, 1); }
inline void gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt, int ldvt, float* work, int lwork, int* iwork, int* info) { sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1); }
inline void gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt, int ldvt, double* work, int lwork, int* iwork, int* info) { dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1); }
inline void syevd(char jobz, char uplo, int n, float* a, int lda, float* w, float* work, int lwork, int* iwork, int liwork, int* info) { ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1); }
inline void syevd(char jobz, char uplo, int n, double* a, int lda, double* w, double* work, int lwork, int* iwork, int liwork, int* info) { dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1); }
inline void geev(char jobvl, char jobvr, int n, float* a, int lda, float* wr, float* wi, float* vl, int ldvl, float* vr, int ldvr, float* work, int lwork, int* info) { sgeev_(&jobvl, &jobvr, &n, a, &lda, wr, wi, vl, &ldvl, vr, &ldvr, work, &lwork, info, 1, 1); }
inline void geev(char jobvl, char jobvr, int n, double* a, int lda, double* wr, double* wi, double* vl, int ldvl, double* vr, int ldvr, double* work, int lwork, int* info) { dgeev_(&jobvl, &jobvr, &n, a, &lda, wr, wi, vl, &ldvl, vr, &ldvr, work, &lwork, info, 1, 1); }
inline void sytrf(char uplo, int n, float* a, int lda, int* ipiv, float* work, int lwork, int* info) { ssytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1); }
inline void sytrf(char uplo, int n, double* a, int lda, int* ipiv, double* work, int lwork, int* info) { dsytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1); }
inline void sytrs(char uplo, int n, int nrhs, const float* a, int lda, const int* ipiv, float* b, int ldb, int* info) { ssytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1); }
inline void sytrs(char uplo, int n, int nrhs, const double* a, int lda, const int* ipiv, double* b, int ldb, int* info) { dsytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1); }
// clang-format on

}  // namespace aotrt::cpu::lapack
