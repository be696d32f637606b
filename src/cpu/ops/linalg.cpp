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

// One batch of m x n column-major matrices.
struct Batch {
  int64_t count = 0, m = 0, n = 0;
  int64_t step() const { return m * n; }
};

Batch batch_of(const TensorImpl& t) {
  Batch b;
  b.m = t.sizes()[t.dim() - 2];
  b.n = t.sizes()[t.dim() - 1];
  b.count = b.m * b.n == 0 ? 0 : t.numel() / (b.m * b.n);
  return b;
}

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
};
AOTRT_REGISTER_KERNELS(LinalgKernels, cpu, kLinalg);

}  // namespace
}  // namespace aotrt::cpu
