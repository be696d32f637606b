// The CPU's linalg kernels: LAPACK from OpenBLAS (cpu/lapack.h), one call
// per matrix of the batch, in place on the batched column-major tensors the
// family made (Note [Linalg layout]).
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "cpu/elements.h"
#include "cpu/lapack.h"
#include "ops/dispatch.h"
#include "ops/linalg.h"

namespace aotrt::cpu {
namespace {
using ops::LinalgKernels;
using Batch = ops::MatrixBatch;
constexpr auto batch_of = ops::matrix_batch;

int lapack_int(int64_t v) {
  AOTRT_CHECK(v <= INT_MAX, kUnsupported, "LAPACK: a matrix dimension of ", v,
              " does not fit LAPACK's 32-bit integers");
  return static_cast<int>(v);
}

template <class T>
T* data(const TensorImpl& t) {
  return static_cast<T*>(t.data_ptr());
}

// Calls body<float> or body<double> for t's dtype.
template <class Body>
void on_real(const TensorImpl& t, Body&& body) {
  if (t.dtype() == ScalarType::Float32) {
    body(float{});
  } else {
    AOTRT_CHECK(t.dtype() == ScalarType::Float64, kInternal, "linalg kernel: dtype ",
                dtype_name(t.dtype()));
    body(double{});
  }
}

// LAPACK's workspace query (lwork = -1) answers in the first element.
template <class T>
int workspace(T query) {
  return std::max(1, static_cast<int>(query));
}

void lu_factor(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& info) {
  const Batch b = batch_of(lu);
  const int m = lapack_int(b.m), n = lapack_int(b.n), k = std::min(m, n);
  on_real(lu, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < b.count; ++i) {
      lapack::getrf(m, n, data<T>(lu) + i * b.step(), std::max(1, m), data<int>(pivots) + i * k,
                    data<int>(info) + i);
    }
  });
}

void lu_solve(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& rhs,
              bool transpose) {
  const Batch a = batch_of(lu), x = batch_of(rhs);
  const int n = lapack_int(a.n), nrhs = lapack_int(x.n);
  on_real(lu, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < x.count; ++i) {
      int info = 0;
      lapack::getrs(transpose ? 'T' : 'N', n, nrhs, data<T>(lu) + i * a.step(), std::max(1, n),
                    data<int>(pivots) + i * n, data<T>(rhs) + i * x.step(), std::max(1, n),
                    &info);
    }
  });
}

void cholesky(const TensorImpl& a, bool upper, const TensorImpl& info) {
  const Batch b = batch_of(a);
  const int n = lapack_int(b.n);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < b.count; ++i) {
      T* m = data<T>(a) + i * b.step();
      lapack::potrf(upper ? 'U' : 'L', n, m, std::max(1, n), data<int>(info) + i);
      // ATen returns the factor with the other triangle zeroed.
      for (int c = 0; c < n; ++c) {
        for (int r = 0; r < n; ++r) {
          if (upper ? r > c : r < c) m[r + static_cast<int64_t>(c) * n] = T(0);
        }
      }
    }
  });
}

void cholesky_solve(const TensorImpl& rhs, const TensorImpl& factor, bool upper) {
  const Batch f = batch_of(factor), x = batch_of(rhs);
  const int n = lapack_int(f.n), nrhs = lapack_int(x.n);
  on_real(rhs, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < x.count; ++i) {
      int info = 0;
      lapack::potrs(upper ? 'U' : 'L', n, nrhs, data<T>(factor) + i * f.step(), std::max(1, n),
                    data<T>(rhs) + i * x.step(), std::max(1, n), &info);
    }
  });
}

void cholesky_inverse(const TensorImpl& a, bool upper, const TensorImpl& info) {
  const Batch b = batch_of(a);
  const int n = lapack_int(b.n);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < b.count; ++i) {
      T* m = data<T>(a) + i * b.step();
      lapack::potri(upper ? 'U' : 'L', n, m, std::max(1, n), data<int>(info) + i);
      // potri fills one triangle of the symmetric inverse: mirror it.
      for (int c = 0; c < n; ++c) {
        for (int r = c + 1; r < n; ++r) {
          T& lower = m[r + static_cast<int64_t>(c) * n];
          T& up = m[c + static_cast<int64_t>(r) * n];
          if (upper) {
            lower = up;
          } else {
            up = lower;
          }
        }
      }
    }
  });
}

// As ATen (blasTriangularSolve): BLAS trsm, which divides by a zero
// diagonal (inf/nan) where LAPACK's trtrs would stop.
void triangular_solve(const TensorImpl& rhs, const TensorImpl& a, bool upper, bool transpose,
                      bool unitriangular, bool left) {
  const Batch t = batch_of(a), x = batch_of(rhs);
  const int n = lapack_int(t.n), m = lapack_int(x.m), nrhs = lapack_int(x.n);
  const CBLAS_SIDE side = left ? CblasLeft : CblasRight;
  const CBLAS_UPLO uplo = upper ? CblasUpper : CblasLower;
  const CBLAS_TRANSPOSE trans = transpose ? CblasTrans : CblasNoTrans;
  const CBLAS_DIAG diag = unitriangular ? CblasUnit : CblasNonUnit;
  for (int64_t i = 0; i < x.count; ++i) {
    if (rhs.dtype() == ScalarType::Float32) {
      cblas_strsm(CblasColMajor, side, uplo, trans, diag, m, nrhs, 1.0f,
                  data<float>(a) + i * t.step(), std::max(1, n), data<float>(rhs) + i * x.step(),
                  std::max(1, m));
    } else {
      cblas_dtrsm(CblasColMajor, side, uplo, trans, diag, m, nrhs, 1.0,
                  data<double>(a) + i * t.step(), std::max(1, n),
                  data<double>(rhs) + i * x.step(), std::max(1, m));
    }
  }
}

void geqrf(const TensorImpl& a, const TensorImpl& tau) {
  const Batch b = batch_of(a);
  const int m = lapack_int(b.m), n = lapack_int(b.n), k = std::min(m, n);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    T query{};
    int info = 0;
    lapack::geqrf(m, n, data<T>(a), std::max(1, m), data<T>(tau), &query, -1, &info);
    std::vector<T> work(workspace(query));
    for (int64_t i = 0; i < b.count; ++i) {
      lapack::geqrf(m, n, data<T>(a) + i * b.step(), std::max(1, m), data<T>(tau) + i * k,
                    work.data(), static_cast<int>(work.size()), &info);
    }
  });
}

// det = (-1)^swaps * prod(diag(U)), or its sign and log|.|, as ATen
// computes them from LU (a singular matrix: det 0, sign 0, log|det| -inf).
void lu_det(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& sign,
            const TensorImpl& value, bool log) {
  const Batch b = batch_of(lu);
  const int64_t n = b.n;
  on_real(lu, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < b.count; ++i) {
      const T* m = data<T>(lu) + i * b.step();
      const int* piv = data<int>(pivots) + i * n;
      T s = 1, prod = 1, logabs = 0;
      for (int64_t d = 0; d < n; ++d) {
        const T u = m[d + d * n];
        if (piv[d] != d + 1) s = -s;
        prod *= u;
        if (u < 0) s = -s;
        logabs += std::log(std::abs(u));
      }
      if (log) {
        data<T>(sign)[i] = logabs == -std::numeric_limits<T>::infinity() ? T(0) : s;
        data<T>(value)[i] = logabs;
      } else {
        // s holds the sign of prod times the swaps' parity: |prod| * s.
        data<T>(value)[i] = prod == 0 ? T(0) : std::abs(prod) * s;
      }
    }
  });
}

void ormqr(const TensorImpl& c, const TensorImpl& a, const TensorImpl& tau, bool left,
           bool transpose) {
  const Batch cb = batch_of(c), ab = batch_of(a);
  const int m = lapack_int(cb.m), n = lapack_int(cb.n);
  const int k = lapack_int(tau.sizes().back());
  const char side = left ? 'L' : 'R', trans = transpose ? 'T' : 'N';
  on_real(c, [&](auto zero) {
    using T = decltype(zero);
    T query{};
    int info = 0;
    const int lda = std::max<int>(1, lapack_int(ab.m));
    lapack::ormqr(side, trans, m, n, k, data<T>(a), lda, data<T>(tau), data<T>(c),
                  std::max(1, m), &query, -1, &info);
    std::vector<T> work(workspace(query));
    for (int64_t i = 0; i < cb.count; ++i) {
      lapack::ormqr(side, trans, m, n, k, data<T>(a) + i * ab.step(), lda, data<T>(tau) + i * k,
                    data<T>(c) + i * cb.step(), std::max(1, m), work.data(),
                    static_cast<int>(work.size()), &info);
    }
  });
}

// lu_unpack's pieces, element by element in LU's dtype (Note in ops/linalg.h).
void lu_unpack(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl* p,
               const TensorImpl* l, const TensorImpl* u, const char* fn) {
  const int64_t m = lu.sizes()[lu.dim() - 2], n = lu.sizes()[lu.dim() - 1];
  const int64_t k = std::min(m, n);
  int64_t batches = 1;
  for (int64_t d = 0; d + 2 < lu.dim(); ++d) batches *= lu.sizes()[d];
  const bool served = visit_dtype(lu.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T one = convert_value<T>(1), nil = convert_value<T>(0);
    for (int64_t b = 0; b < batches; ++b) {
      const char* src = static_cast<const char*>(lu.data_ptr()) + b * m * n * int64_t{sizeof(T)};
      if (l != nullptr) {
        char* dst = static_cast<char*>(l->data_ptr()) + b * m * k * int64_t{sizeof(T)};
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < k; ++j)
            write_elem<T>(dst, i * k + j,
                          i > j ? read_elem<T>(src, i * n + j) : i == j ? one : nil);
      }
      if (u != nullptr) {
        char* dst = static_cast<char*>(u->data_ptr()) + b * k * n * int64_t{sizeof(T)};
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < n; ++j)
            write_elem<T>(dst, i * n + j, i <= j ? read_elem<T>(src, i * n + j) : nil);
      }
      if (p != nullptr) {
        const auto* piv = static_cast<const int32_t*>(pivots.data_ptr()) + b * k;
        std::vector<int64_t> perm(static_cast<size_t>(m));
        for (int64_t i = 0; i < m; ++i) perm[static_cast<size_t>(i)] = i;
        for (int64_t i = 0; i < k; ++i) {
          AOTRT_CHECK(piv[i] >= 1 && piv[i] <= m, kInvalidArgument, fn,
                      ": LU_pivots must be between 1 and LU_data.size(-2) = ", m, ", got ",
                      piv[i], " (pass lu_factor's pivots)");
          std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(piv[i] - 1)]);
        }
        char* dst = static_cast<char*>(p->data_ptr()) + b * m * m * int64_t{sizeof(T)};
        for (int64_t i = 0; i < m * m; ++i) write_elem<T>(dst, i, nil);
        for (int64_t j = 0; j < m; ++j) {
          write_elem<T>(dst, perm[static_cast<size_t>(j)] * m + j, one);
        }
      }
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(lu.dtype()), " is not served");
}

void orgqr(const TensorImpl& q, const TensorImpl& tau) {
  const Batch b = batch_of(q);
  const int m = lapack_int(b.m), n = lapack_int(b.n);
  const int k = lapack_int(tau.sizes().back());
  on_real(q, [&](auto zero) {
    using T = decltype(zero);
    T query{};
    int info = 0;
    lapack::orgqr(m, n, k, data<T>(q), std::max(1, m), data<T>(tau), &query, -1, &info);
    std::vector<T> work(workspace(query));
    for (int64_t i = 0; i < b.count; ++i) {
      lapack::orgqr(m, n, k, data<T>(q) + i * b.step(), std::max(1, m), data<T>(tau) + i * k,
                    work.data(), static_cast<int>(work.size()), &info);
    }
  });
}

// Zeros below the diagonal (below the diagonal shifted down by `below` - 1:
// below = 1 keeps the diagonal).
template <class T>
void zero_lower(T* a, int64_t m, int64_t n, int64_t below) {
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t r = c + below; r < m; ++r) a[r + c * m] = T(0);
  }
}

void triu(const TensorImpl& a) {
  const Batch b = batch_of(a);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < b.count; ++i) zero_lower(data<T>(a) + i * b.step(), b.m, b.n, 1);
  });
}

void svd(const TensorImpl& a, const TensorImpl& s, const TensorImpl* u, const TensorImpl* vh,
         const TensorImpl& info) {
  const Batch b = batch_of(a);
  const int m = lapack_int(b.m), n = lapack_int(b.n), k = std::min(m, n);
  const Batch ub = u != nullptr ? batch_of(*u) : Batch{};
  const Batch vb = vh != nullptr ? batch_of(*vh) : Batch{};
  // Full matrices when U is m x m and Vh n x n (the same as reduced when
  // m == n).
  const char jobz = u == nullptr ? 'N' : (ub.n == m && vb.m == n ? 'A' : 'S');
  const int ldu = std::max(1, m), ldvt = std::max(1, lapack_int(vb.m));
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    T query{};
    T* u0 = u != nullptr ? data<T>(*u) : nullptr;
    T* v0 = vh != nullptr ? data<T>(*vh) : nullptr;
    std::vector<int> iwork(static_cast<size_t>(8) * std::max(1, k));
    lapack::gesdd(jobz, m, n, data<T>(a), std::max(1, m), data<T>(s), u0, ldu, v0, ldvt, &query,
                  -1, iwork.data(), data<int>(info));
    std::vector<T> work(workspace(query));
    for (int64_t i = 0; i < b.count; ++i) {
      lapack::gesdd(jobz, m, n, data<T>(a) + i * b.step(), std::max(1, m), data<T>(s) + i * k,
                    u0 != nullptr ? u0 + i * ub.step() : nullptr, ldu,
                    v0 != nullptr ? v0 + i * vb.step() : nullptr, ldvt, work.data(),
                    static_cast<int>(work.size()), iwork.data(), data<int>(info) + i);
    }
  });
}

void eigh(const TensorImpl& a, const TensorImpl& w, bool upper, bool compute_v,
          const TensorImpl& info) {
  const Batch b = batch_of(a);
  const int n = lapack_int(b.n);
  const char jobz = compute_v ? 'V' : 'N', uplo = upper ? 'U' : 'L';
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    T query{};
    int iquery = 0;
    lapack::syevd(jobz, uplo, n, data<T>(a), std::max(1, n), data<T>(w), &query, -1, &iquery,
                  -1, data<int>(info));
    std::vector<T> work(workspace(query));
    std::vector<int> iwork(static_cast<size_t>(std::max(1, iquery)));
    for (int64_t i = 0; i < b.count; ++i) {
      lapack::syevd(jobz, uplo, n, data<T>(a) + i * b.step(), std::max(1, n),
                    data<T>(w) + i * n, work.data(), static_cast<int>(work.size()), iwork.data(),
                    static_cast<int>(iwork.size()), data<int>(info) + i);
    }
  });
}

void eig(const TensorImpl& a, const TensorImpl& values, const TensorImpl& vectors,
         const TensorImpl& info) {
  const Batch b = batch_of(a);
  const int n = lapack_int(b.n);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
    std::vector<T> vr(static_cast<size_t>(n) * n);
    T query{}, unused{};
    lapack::geev('N', 'V', n, data<T>(a), std::max(1, n), wr.data(), wi.data(), &unused, 1,
                 vr.data(), std::max(1, n), &query, -1, data<int>(info));
    std::vector<T> work(workspace(query));
    for (int64_t i = 0; i < b.count; ++i) {
      lapack::geev('N', 'V', n, data<T>(a) + i * b.step(), std::max(1, n), wr.data(), wi.data(),
                   &unused, 1, vr.data(), std::max(1, n), work.data(),
                   static_cast<int>(work.size()), data<int>(info) + i);
      // Complex elements as (re, im) pairs of T.
      T* val = data<T>(values) + 2 * i * n;
      T* vec = data<T>(vectors) + 2 * i * b.step();
      for (int j = 0; j < n; ++j) {
        val[2 * j] = wr[j];
        val[2 * j + 1] = wi[j];
      }
      for (int j = 0; j < n; ++j) {
        const T* re = vr.data() + static_cast<int64_t>(j) * n;
        T* out = vec + 2 * static_cast<int64_t>(j) * n;
        if (wi[j] == T(0)) {
          for (int r = 0; r < n; ++r) {
            out[2 * r] = re[r];
            out[2 * r + 1] = T(0);
          }
        } else {
          // A conjugate pair: columns j, j + 1 hold re and im of the vector
          // of the eigenvalue with positive imaginary part, first.
          const T* im = re + n;
          T* next = out + 2 * n;
          for (int r = 0; r < n; ++r) {
            out[2 * r] = re[r];
            out[2 * r + 1] = im[r];
            next[2 * r] = re[r];
            next[2 * r + 1] = -im[r];
          }
          ++j;
        }
      }
    }
  });
}

void ldl_factor(const TensorImpl& a, const TensorImpl& pivots, const TensorImpl& info) {
  const Batch b = batch_of(a);
  const int n = lapack_int(b.n);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    T query{};
    lapack::sytrf('L', n, data<T>(a), std::max(1, n), data<int>(pivots), &query, -1,
                  data<int>(info));
    std::vector<T> work(workspace(query));
    for (int64_t i = 0; i < b.count; ++i) {
      T* m = data<T>(a) + i * b.step();
      lapack::sytrf('L', n, m, std::max(1, n), data<int>(pivots) + i * n, work.data(),
                    static_cast<int>(work.size()), data<int>(info) + i);
      for (int64_t c = 1; c < n; ++c) {
        for (int64_t r = 0; r < c; ++r) m[r + c * n] = T(0);
      }
    }
  });
}

void ldl_solve(const TensorImpl& ld, const TensorImpl& pivots, const TensorImpl& rhs) {
  const Batch f = batch_of(ld), x = batch_of(rhs);
  const int n = lapack_int(f.n), nrhs = lapack_int(x.n);
  on_real(rhs, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < x.count; ++i) {
      int info = 0;
      lapack::sytrs('L', n, nrhs, data<T>(ld) + i * f.step(), std::max(1, n),
                    data<int>(pivots) + i * n, data<T>(rhs) + i * x.step(), std::max(1, n),
                    &info);
    }
  });
}

void pinv_scale(const TensorImpl& u, const TensorImpl& s, const TensorImpl& atol,
                const TensorImpl& rtol, bool default_rtol) {
  const Batch b = batch_of(u);
  const int64_t k = b.n;
  on_real(u, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < b.count; ++i) {
      const T* sv = data<T>(s) + i * k;
      T largest = 0;
      for (int64_t j = 0; j < k; ++j) largest = std::max(largest, std::abs(sv[j]));
      // In float64, as ATen's tolerance tensors are (S > tol promotes).
      const double at = data<double>(atol)[i];
      const double rt = default_rtol && at > 0 ? 0.0 : data<double>(rtol)[i];
      const double tol = std::max(at, rt * static_cast<double>(largest));
      T* col = data<T>(u) + i * b.step();
      for (int64_t j = 0; j < k; ++j, col += b.m) {
        const T scale = static_cast<double>(std::abs(sv[j])) > tol ? T(1) / sv[j] : T(0);
        for (int64_t r = 0; r < b.m; ++r) col[r] *= scale;
      }
    }
  });
}

void one_norm(const TensorImpl& a, const TensorImpl& norms) {
  const Batch b = batch_of(a);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < b.count; ++i) {
      // Row-major: column c of matrix i is a[i][r][c].
      const T* m = data<T>(a) + i * b.step();
      T best = 0;
      bool nan = false;
      for (int64_t c = 0; c < b.n; ++c) {
        T sum = 0;
        for (int64_t r = 0; r < b.m; ++r) sum += std::abs(m[r * b.n + c]);
        nan = nan || std::isnan(sum);
        best = std::max(best, sum);
      }
      data<double>(norms)[i] = nan ? std::numeric_limits<double>::quiet_NaN() : best;
    }
  });
}

void combine(const TensorImpl& out, const TensorImpl* const* xs, const double* coeffs,
             int count) {
  const int64_t n = out.numel();
  on_real(out, [&](auto zero) {
    using T = decltype(zero);
    std::vector<const T*> in(static_cast<size_t>(count));
    std::vector<T> c(static_cast<size_t>(count));
    for (int j = 0; j < count; ++j) {
      in[j] = data<T>(*xs[j]);
      c[j] = static_cast<T>(coeffs[j]);
    }
    T* o = data<T>(out);
    for (int64_t e = 0; e < n; ++e) {
      T sum = in[0][e] * c[0];
      for (int j = 1; j < count; ++j) sum += in[j][e] * c[j];
      o[e] = sum;
    }
  });
}

constexpr LinalgKernels kLinalg{
    .lu_factor = lu_factor,
    .lu_solve = lu_solve,
    .cholesky = cholesky,
    .cholesky_solve = cholesky_solve,
    .cholesky_inverse = cholesky_inverse,
    .triangular_solve = triangular_solve,
    .geqrf = geqrf,
    .lu_det = lu_det,
    .ormqr = ormqr,
    .lu_unpack = lu_unpack,
    .orgqr = orgqr,
    .triu = triu,
    .svd = svd,
    .eigh = eigh,
    .eig = eig,
    .ldl_factor = ldl_factor,
    .ldl_solve = ldl_solve,
    .pinv_scale = pinv_scale,
    .one_norm = one_norm,
    .combine = combine,
    // The CPU raises at once (check_errors reads info on the host).
    .record_errors = nullptr,
    .take_error = nullptr,
};
AOTRT_REGISTER_KERNELS(LinalgKernels, cpu, kLinalg);

}  // namespace
}  // namespace aotrt::cpu
