// The CUDA linalg kernels: cuSOLVER's dense routines and cuBLAS's trsm, one
// call per matrix of the batch (trsm: one batched call), in place on the
// batched column-major tensors the family made (Note [Linalg layout]), plus
// aotrt's own kernels for the element work around them (triangles, lu_det,
// lu_unpack, pinv_scale, one_norm, combine). Everything runs on the current
// stream of the tensors' device; workspaces come from the caching allocator
// (sized by each routine's *_bufferSize), host workspaces from the thread's
// SolverHandle, and info stays in device memory: no kernel reads it (Note
// [Linalg errors on CUDA]).
#include <cuda_runtime.h>
#include <math_constants.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "cuda/handles.h"
#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/linalg.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::LinalgKernels;
using ops::MatrixBatch;
using ops::matrix_batch;

int solver_int(int64_t v) {
  AOTRT_CHECK(v <= INT_MAX, kUnsupported, "cuSOLVER: a matrix dimension of ", v,
              " does not fit cuSOLVER's 32-bit integers");
  return static_cast<int>(std::max<int64_t>(v, 1));
}

template <class T>
T* data(const TensorImpl& t) {
  return static_cast<T*>(t.data_ptr());
}

// The device of a kernel's tensors made current, and its current stream.
struct OnDevice {
  explicit OnDevice(const TensorImpl& t)
      : index(t.device().index), guard(index), stream(current_cuda_stream(index)) {}
  SolverHandle& solver() const { return cusolver_handle(index, stream); }
  cublasHandle_t blas() const { return cublas_handle(index, stream); }
  const int index;
  DeviceGuard guard;
  const cudaStream_t stream;
};

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

// The float (S) or double (D) form of a cuSOLVER / cuBLAS routine.
template <class T, class FS, class FD>
constexpr auto pick(FS fs, FD fd) {
  if constexpr (std::is_same_v<T, float>) {
    return fs;
  } else {
    return fd;
  }
}
#define AOTRT_SOLVER(T, name) pick<T>(cusolverDnS##name, cusolverDnD##name)

template <class T>
constexpr cudaDataType_t real_type() {
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
}

cublasFillMode_t fill(bool upper) {
  return upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
}

// |v|, log v and std::max's larger-of (the first when unordered), for float
// and double in device code.
template <class T>
__device__ __forceinline__ T magnitude(T v) {
  return v < T(0) ? -v : v;
}
template <class T>
__device__ __forceinline__ T log_of(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return logf(v);
  } else {
    return log(v);
  }
}
template <class T>
__device__ __forceinline__ T larger(T a, T b) {
  return a < b ? b : a;
}

// --- Element kernels -------------------------------------------------------------------

// Zeros the strictly lower (lower) or strictly upper triangle of every
// column-major m x n matrix.
template <class T>
__global__ void zero_triangle_kernel(T* a, int64_t total, IntDivider<uint64_t> m,
                                     IntDivider<uint64_t> n, bool lower) {
  AOTRT_GRID_STRIDE(e, total) {
    const DivMod<uint64_t> rc = m.divmod(static_cast<uint64_t>(e));
    const int64_t r = static_cast<int64_t>(rc.mod);
    const int64_t c = static_cast<int64_t>(n.divmod(rc.div).mod);
    if (lower ? r > c : r < c) a[e] = T(0);
  }
}

template <class T>
void zero_triangle(const OnDevice& d, const TensorImpl& a, bool lower) {
  const MatrixBatch b = matrix_batch(a);
  const int64_t total = b.count * b.step();
  if (total == 0) return;
  zero_triangle_kernel<T><<<blocks_for(total), kThreads, 0, d.stream>>>(
      data<T>(a), total, IntDivider<uint64_t>(static_cast<uint64_t>(b.m)),
      IntDivider<uint64_t>(static_cast<uint64_t>(b.n)), lower);
  AOTRT_CUDA_CHECK_LAUNCH();
}

// Every square n x n matrix made symmetric from its upper (upper) or lower
// triangle: each off-diagonal pair is handled by the thread of its lower
// element.
template <class T>
__global__ void mirror_kernel(T* a, int64_t total, IntDivider<uint64_t> n, bool upper) {
  AOTRT_GRID_STRIDE(e, total) {
    const DivMod<uint64_t> rc = n.divmod(static_cast<uint64_t>(e));
    const DivMod<uint64_t> cb = n.divmod(rc.div);
    const int64_t r = static_cast<int64_t>(rc.mod), c = static_cast<int64_t>(cb.mod);
    if (r <= c) continue;
    const int64_t nn = static_cast<int64_t>(n.divisor);
    T* m = a + static_cast<int64_t>(cb.div) * nn * nn;
    if (upper) {
      m[r + c * nn] = m[c + r * nn];
    } else {
      m[c + r * nn] = m[r + c * nn];
    }
  }
}

// One thread a matrix: the determinant (or its sign and log|det|) from LU's
// diagonal and the pivots' swaps, as the CPU kernel computes it.
template <class T>
__global__ void lu_det_kernel(const T* lu, const int* pivots, T* sign, T* value, int64_t count,
                              int64_t n, bool log) {
  AOTRT_GRID_STRIDE(i, count) {
    const T* m = lu + i * n * n;
    const int* piv = pivots + i * n;
    T s = 1, prod = 1, logabs = 0;
    for (int64_t d = 0; d < n; ++d) {
      const T u = m[d + d * n];
      if (piv[d] != d + 1) s = -s;
      prod *= u;
      if (u < 0) s = -s;
      logabs += log_of(magnitude(u));
    }
    if (log) {
      sign[i] = logabs == -T(CUDART_INF) ? T(0) : s;
      value[i] = logabs;
    } else {
      value[i] = prod == T(0) ? T(0) : magnitude(prod) * s;
    }
  }
}

// lu_unpack's permutation, one thread a matrix: perm[b] <- the rows the
// pivots' swaps send each row to, or all -1 when a pivot lies outside [1, m]
// (Note [Linalg errors on CUDA]: its P comes out zero).
__global__ void lu_permutation_kernel(const int32_t* pivots, int32_t* perm, int64_t count,
                                      int64_t m, int64_t k) {
  AOTRT_GRID_STRIDE(b, count) {
    int32_t* p = perm + b * m;
    const int32_t* piv = pivots + b * k;
    for (int64_t i = 0; i < m; ++i) p[i] = static_cast<int32_t>(i);
    bool bad = false;
    for (int64_t i = 0; i < k && !bad; ++i) {
      const int32_t to = piv[i];
      bad = to < 1 || to > m;
      if (!bad) {
        const int32_t t = p[i];
        p[i] = p[to - 1];
        p[to - 1] = t;
      }
    }
    if (bad) {
      for (int64_t i = 0; i < m; ++i) p[i] = -1;
    }
  }
}

// P[b][i][j] = 1 where perm[b][j] == i (the CPU kernel's P[perm[j], j] = 1).
template <class T>
__global__ void lu_p_kernel(T* p, const int32_t* perm, int64_t total, IntDivider<uint64_t> m) {
  AOTRT_GRID_STRIDE(e, total) {
    const DivMod<uint64_t> ij = m.divmod(static_cast<uint64_t>(e));
    const DivMod<uint64_t> bi = m.divmod(ij.div);
    const int64_t j = static_cast<int64_t>(ij.mod), i = static_cast<int64_t>(bi.mod);
    const int64_t mm = static_cast<int64_t>(m.divisor);
    const bool one = perm[static_cast<int64_t>(bi.div) * mm + j] == i;
    p[e] = from_acc<T>(acc_t<T>(one ? 1 : 0));
  }
}

// L [B, m, k] (unit lower) or U [B, k, n] (upper) from the dense row-major
// lu [B, m, n]: out has r x c matrices.
template <class T>
__global__ void lu_part_kernel(T* out, const T* lu, int64_t total, IntDivider<uint64_t> r,
                               IntDivider<uint64_t> c, int64_t m, int64_t n, bool lower) {
  AOTRT_GRID_STRIDE(e, total) {
    const DivMod<uint64_t> jc = c.divmod(static_cast<uint64_t>(e));
    const DivMod<uint64_t> ib = r.divmod(jc.div);
    const int64_t j = static_cast<int64_t>(jc.mod), i = static_cast<int64_t>(ib.mod);
    const T src = lu[static_cast<int64_t>(ib.div) * m * n + i * n + j];
    const T zero = from_acc<T>(acc_t<T>(0));
    if (lower) {
      out[e] = i > j ? src : i == j ? from_acc<T>(acc_t<T>(1)) : zero;
    } else {
      out[e] = i <= j ? src : zero;
    }
  }
}

// scales[b][j] <- 1 / s_j where |s_j| > tol of matrix b, else 0 (the tolerance of
// pinv_scale in ops/linalg.h, in float64 as the CPU kernel's).
template <class T>
__global__ void pinv_scales_kernel(const T* s, const double* atol, const double* rtol, T* scales,
                                   int64_t count, int64_t k, bool default_rtol) {
  AOTRT_GRID_STRIDE(i, count) {
    const T* sv = s + i * k;
    T largest = 0;
    for (int64_t j = 0; j < k; ++j) largest = larger(largest, magnitude(sv[j]));
    const double at = atol[i];
    const double rt = default_rtol && at > 0 ? 0.0 : rtol[i];
    const double tol = larger(at, rt * static_cast<double>(largest));
    for (int64_t j = 0; j < k; ++j) {
      scales[i * k + j] = static_cast<double>(magnitude(sv[j])) > tol ? T(1) / sv[j] : T(0);
    }
  }
}

// Column j of every column-major r x k matrix of u times scales[b][j].
template <class T>
__global__ void scale_columns_kernel(T* u, const T* scales, int64_t total,
                                     IntDivider<uint64_t> r) {
  AOTRT_GRID_STRIDE(e, total) {
    u[e] *= scales[r.div(static_cast<uint64_t>(e))];
  }
}

// One thread a matrix: the largest column sum of |a_ij| of the dense row-major
// n x n matrix, NaN when a column sum is.
template <class T>
__global__ void one_norm_kernel(const T* a, double* norms, int64_t count, int64_t rows,
                                int64_t cols) {
  AOTRT_GRID_STRIDE(i, count) {
    const T* m = a + i * rows * cols;
    T best = 0;
    bool nan = false;
    for (int64_t c = 0; c < cols; ++c) {
      T sum = 0;
      for (int64_t r = 0; r < rows; ++r) sum += magnitude(m[r * cols + c]);
      nan = nan || sum != sum;
      best = larger(best, sum);
    }
    norms[i] = nan ? CUDART_NAN : static_cast<double>(best);
  }
}

constexpr int kMaxTerms = 8;
template <class T>
struct Terms {
  const T* x[kMaxTerms];
  T c[kMaxTerms];
  int count;
};

template <class T>
__global__ void combine_kernel(T* out, Terms<T> terms, int64_t total) {
  AOTRT_GRID_STRIDE(e, total) {
    T sum = terms.x[0][e] * terms.c[0];
    for (int j = 1; j < terms.count; ++j) sum += terms.x[j][e] * terms.c[j];
    out[e] = sum;
  }
}

__global__ void fill_pointers_kernel(void** out, char* base, int64_t step_bytes, int64_t count) {
  AOTRT_GRID_STRIDE(i, count) { out[i] = base + i * step_bytes; }
}

// Device pointers to each matrix of a batch (cuBLAS's batched calls), in a
// temporary filled on the stream.
class MatrixPointers {
 public:
  template <class T>
  MatrixPointers(const OnDevice& d, const TensorImpl& t, T)
      : buffer_(d.index, static_cast<size_t>(std::max<int64_t>(matrix_batch(t).count, 1)) *
                             sizeof(void*)) {
    const MatrixBatch b = matrix_batch(t);
    fill_pointers_kernel<<<blocks_for(b.count), kThreads, 0, d.stream>>>(
        static_cast<void**>(buffer_.data()), static_cast<char*>(t.data_ptr()),
        b.step() * static_cast<int64_t>(sizeof(T)), b.count);
    AOTRT_CUDA_CHECK_LAUNCH();
  }
  template <class T>
  T** get() const {
    return static_cast<T**>(buffer_.data());
  }

 private:
  DeviceBuffer buffer_;
};

// --- Kernels of the table ----------------------------------------------------------------

void lu_factor(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& info) {
  const OnDevice d(lu);
  const MatrixBatch b = matrix_batch(lu);
  const int m = solver_int(b.m), n = solver_int(b.n), k = std::min(m, n);
  on_real(lu, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = d.solver().handle;
    int lwork = 0;
    AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, getrf_bufferSize)(h, m, n, data<T>(lu), m, &lwork));
    Temp<T> work(d.index, lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, getrf)(h, m, n, data<T>(lu) + i * b.step(), m,
                                                  work.get(), data<int>(pivots) + i * k,
                                                  data<int>(info) + i));
    }
  });
}

void lu_solve(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& rhs,
              bool transpose) {
  const OnDevice d(lu);
  const MatrixBatch a = matrix_batch(lu), x = matrix_batch(rhs);
  const int n = solver_int(a.n), nrhs = solver_int(x.n);
  on_real(lu, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = d.solver().handle;
    Temp<int> info(d.index, 1);  // getrs' info only reports a bad argument
    for (int64_t i = 0; i < x.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, getrs)(
          h, transpose ? CUBLAS_OP_T : CUBLAS_OP_N, n, nrhs, data<T>(lu) + i * a.step(), n,
          data<int>(pivots) + i * a.n, data<T>(rhs) + i * x.step(), n, info.get()));
    }
  });
}

// Every n x n matrix of a through a routine of potrf's signature (uplo, n, A,
// lda, work, lwork, info [B]), its workspace sized by `size`.
template <class T, class Size, class Run>
void each_triangle(const OnDevice& d, const TensorImpl& a, bool upper, const TensorImpl& info,
                   Size size, Run run) {
  const MatrixBatch b = matrix_batch(a);
  const int n = solver_int(b.n);
  cusolverDnHandle_t h = d.solver().handle;
  int lwork = 0;
  AOTRT_CUSOLVER_CHECK(size(h, fill(upper), n, data<T>(a), n, &lwork));
  Temp<T> work(d.index, lwork);
  for (int64_t i = 0; i < b.count; ++i) {
    AOTRT_CUSOLVER_CHECK(run(h, fill(upper), n, data<T>(a) + i * b.step(), n, work.get(), lwork,
                             data<int>(info) + i));
  }
}

void cholesky(const TensorImpl& a, bool upper, const TensorImpl& info) {
  const OnDevice d(a);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    each_triangle<T>(d, a, upper, info, AOTRT_SOLVER(T, potrf_bufferSize), AOTRT_SOLVER(T, potrf));
    // ATen returns the factor with the other triangle zeroed.
    zero_triangle<T>(d, a, upper);
  });
}

void cholesky_solve(const TensorImpl& rhs, const TensorImpl& factor, bool upper) {
  const OnDevice d(rhs);
  const MatrixBatch f = matrix_batch(factor), x = matrix_batch(rhs);
  const int n = solver_int(f.n), nrhs = solver_int(x.n);
  on_real(rhs, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = d.solver().handle;
    Temp<int> info(d.index, 1);
    for (int64_t i = 0; i < x.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, potrs)(h, fill(upper), n, nrhs,
                                                  data<T>(factor) + i * f.step(), n,
                                                  data<T>(rhs) + i * x.step(), n, info.get()));
    }
  });
}

void cholesky_inverse(const TensorImpl& a, bool upper, const TensorImpl& info) {
  const OnDevice d(a);
  const MatrixBatch b = matrix_batch(a);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    each_triangle<T>(d, a, upper, info, AOTRT_SOLVER(T, potri_bufferSize), AOTRT_SOLVER(T, potri));
    // potri fills one triangle of the symmetric inverse: mirror it.
    const int64_t total = b.count * b.step();
    mirror_kernel<T><<<blocks_for(total), kThreads, 0, d.stream>>>(
        data<T>(a), total, IntDivider<uint64_t>(static_cast<uint64_t>(b.n)), upper);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

// As ATen (and the CPU kernel): BLAS trsm, which divides by a zero diagonal
// (inf/nan) where LAPACK's trtrs would stop; one batched call.
void triangular_solve(const TensorImpl& rhs, const TensorImpl& a, bool upper, bool transpose,
                      bool unitriangular, bool left) {
  const OnDevice d(rhs);
  const MatrixBatch t = matrix_batch(a), x = matrix_batch(rhs);
  AOTRT_CHECK(x.count <= INT_MAX, kUnsupported, "cuBLAS trsm: a batch of ", x.count,
              " matrices does not fit its 32-bit count");
  const int n = solver_int(t.n), m = solver_int(x.m), nrhs = solver_int(x.n);
  on_real(rhs, [&](auto zero) {
    using T = decltype(zero);
    const MatrixPointers as(d, a, zero), bs(d, rhs, zero);
    const T one = 1;
    AOTRT_CUBLAS_CHECK(pick<T>(cublasStrsmBatched, cublasDtrsmBatched)(
        d.blas(), left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT, fill(upper),
        transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
        unitriangular ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, m, nrhs, &one,
        as.get<T>(), n, bs.get<T>(), m, static_cast<int>(x.count)));
  });
}

void geqrf(const TensorImpl& a, const TensorImpl& tau) {
  const OnDevice d(a);
  const MatrixBatch b = matrix_batch(a);
  const int m = solver_int(b.m), n = solver_int(b.n), k = std::min(m, n);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = d.solver().handle;
    int lwork = 0;
    AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, geqrf_bufferSize)(h, m, n, data<T>(a), m, &lwork));
    Temp<T> work(d.index, lwork);
    Temp<int> info(d.index, 1);
    for (int64_t i = 0; i < b.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, geqrf)(h, m, n, data<T>(a) + i * b.step(), m,
                                                  data<T>(tau) + i * k, work.get(), lwork,
                                                  info.get()));
    }
  });
}

void lu_det(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl& sign,
            const TensorImpl& value, bool log) {
  const OnDevice d(lu);
  const MatrixBatch b = matrix_batch(lu);
  on_real(lu, [&](auto zero) {
    using T = decltype(zero);
    lu_det_kernel<T><<<blocks_for(b.count), kThreads, 0, d.stream>>>(
        data<T>(lu), data<int>(pivots), data<T>(sign), data<T>(value), b.count, b.n, log);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

void ormqr(const TensorImpl& c, const TensorImpl& a, const TensorImpl& tau, bool left,
           bool transpose) {
  const OnDevice d(c);
  const MatrixBatch cb = matrix_batch(c), ab = matrix_batch(a);
  const int m = solver_int(cb.m), n = solver_int(cb.n);
  const int k = solver_int(tau.sizes().back());
  const int lda = solver_int(ab.m);
  const cublasSideMode_t side = left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
  const cublasOperation_t trans = transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  on_real(c, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = d.solver().handle;
    int lwork = 0;
    AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, ormqr_bufferSize)(
        h, side, trans, m, n, k, data<T>(a), lda, data<T>(tau), data<T>(c), m, &lwork));
    Temp<T> work(d.index, lwork);
    Temp<int> info(d.index, 1);
    const int64_t tau_step = tau.sizes().back();
    for (int64_t i = 0; i < cb.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, ormqr)(
          h, side, trans, m, n, k, data<T>(a) + i * ab.step(), lda, data<T>(tau) + i * tau_step,
          data<T>(c) + i * cb.step(), m, work.get(), lwork, info.get()));
    }
  });
}

// See Note [Linalg errors on CUDA]: a pivot outside [1, m] gives that
// matrix a zero P instead of a refusal (which would need the pivots on the
// host).
void lu_unpack(const TensorImpl& lu, const TensorImpl& pivots, const TensorImpl* p,
               const TensorImpl* l, const TensorImpl* u, const char* fn) {
  const OnDevice d(lu);
  const int64_t m = lu.sizes()[lu.dim() - 2], n = lu.sizes()[lu.dim() - 1];
  const int64_t k = std::min(m, n);
  int64_t count = 1;
  for (int64_t dim = 0; dim + 2 < lu.dim(); ++dim) count *= lu.sizes()[dim];
  if (count == 0) return;
  auto div = [](int64_t v) { return IntDivider<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(v, 1))); };
  visit_dtype(lu.dtype(), fn, "LU_data", [&](auto zero) {
    using T = decltype(zero);
    const T* src = data<T>(lu);
    if (l != nullptr && m * k > 0) {
      const int64_t total = count * m * k;
      lu_part_kernel<T><<<blocks_for(total), kThreads, 0, d.stream>>>(data<T>(*l), src, total,
                                                                      div(m), div(k), m, n, true);
      AOTRT_CUDA_CHECK_LAUNCH();
    }
    if (u != nullptr && k * n > 0) {
      const int64_t total = count * k * n;
      lu_part_kernel<T><<<blocks_for(total), kThreads, 0, d.stream>>>(data<T>(*u), src, total,
                                                                      div(k), div(n), m, n, false);
      AOTRT_CUDA_CHECK_LAUNCH();
    }
    if (p != nullptr && m > 0) {
      Temp<int32_t> perm(d.index, count * m);
      lu_permutation_kernel<<<blocks_for(count), kThreads, 0, d.stream>>>(
          data<int32_t>(pivots), perm.get(), count, m, k);
      AOTRT_CUDA_CHECK_LAUNCH();
      const int64_t total = count * m * m;
      lu_p_kernel<T><<<blocks_for(total), kThreads, 0, d.stream>>>(data<T>(*p), perm.get(), total,
                                                                   div(m));
      AOTRT_CUDA_CHECK_LAUNCH();
    }
  });
}

void orgqr(const TensorImpl& q, const TensorImpl& tau) {
  const OnDevice d(q);
  const MatrixBatch b = matrix_batch(q);
  const int m = solver_int(b.m), n = solver_int(b.n);
  const int64_t k64 = tau.sizes().back();
  const int k = static_cast<int>(k64);
  on_real(q, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = d.solver().handle;
    int lwork = 0;
    AOTRT_CUSOLVER_CHECK(
        AOTRT_SOLVER(T, orgqr_bufferSize)(h, m, n, k, data<T>(q), m, data<T>(tau), &lwork));
    Temp<T> work(d.index, lwork);
    Temp<int> info(d.index, 1);
    for (int64_t i = 0; i < b.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, orgqr)(h, m, n, k, data<T>(q) + i * b.step(), m,
                                                  data<T>(tau) + i * k64, work.get(), lwork,
                                                  info.get()));
    }
  });
}

void triu(const TensorImpl& a) {
  const OnDevice d(a);
  on_real(a, [&](auto zero) { zero_triangle<decltype(zero)>(d, a, true); });
}

// gesvdj (Jacobi, as ATen's default CUDA driver): singular values descending;
// it returns V (column-major n x k), which is Vh row-major: written in place
// into vh, whose layout is ATen's cuSOLVER one (Note [Vh's layout]); any
// other vh would get it through a temporary.
void svd(const TensorImpl& a, const TensorImpl& s, const TensorImpl* u, const TensorImpl* vh,
         const TensorImpl& info) {
  const OnDevice d(a);
  const MatrixBatch b = matrix_batch(a);
  const int m = solver_int(b.m), n = solver_int(b.n);
  const int64_t k = std::min(b.m, b.n);
  const MatrixBatch ub = u != nullptr ? matrix_batch(*u) : MatrixBatch{};
  const MatrixBatch vb = vh != nullptr ? matrix_batch(*vh) : MatrixBatch{};
  const bool vectors = u != nullptr;
  // Full matrices when U is m x m and Vh n x n (the same as reduced when m == n).
  // Without vectors gesvdj still needs U and V to point at memory (the H200 run failed
  // with CUSOLVER_STATUS_EXECUTION_FAILED and an illegal address for null ones): the
  // reduced m x k and n x k of a scratch buffer then, unread.
  const int econ = !vectors || !(ub.n == b.m && vb.m == b.n) ? 1 : 0;
  const int64_t vcols = vectors ? vb.m : k;  // V is n x vcols
  const cusolverEigMode_t jobz = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  const bool in_place = vectors && vh->numel() > 0 && vh->is_contiguous();
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    SolverHandle& sh = d.solver();
    Temp<T> v(d.index, in_place ? 0 : b.count * b.n * vcols);
    T* v0 = in_place ? data<T>(*vh) : v.get();
    Temp<T> scratch_u(d.index, vectors ? 0 : b.m * k);
    T* u0 = vectors ? data<T>(*u) : scratch_u.get();
    int lwork = 0;
    AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, gesvdj_bufferSize)(sh.handle, jobz, econ, m, n,
                                                            data<T>(a), m, data<T>(s), u0, m,
                                                            v0, n, &lwork, sh.gesvdj));
    Temp<T> work(d.index, lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, gesvdj)(
          sh.handle, jobz, econ, m, n, data<T>(a) + i * b.step(), m, data<T>(s) + i * k,
          vectors ? u0 + i * ub.step() : u0, m, v0 + i * b.n * vcols, n, work.get(), lwork,
          data<int>(info) + i, sh.gesvdj));
    }
    if (!vectors || vh->numel() == 0 || in_place) return;
    // vh[i][j] = V[j][i]: V's column-major n x vcols read as row-major vcols x n.
    const int64_t src_strides[] = {b.n * vcols, b.n, 1};
    const int64_t sizes[] = {b.count, vcols, b.n};
    const int64_t dst_strides[] = {vb.step(), vh->strides()[vh->dim() - 2],
                                   vh->strides()[vh->dim() - 1]};
    copy_device(StridedView{data<char>(*vh), sizes, dst_strides, vh->dtype(), vh->device()},
                StridedView{reinterpret_cast<char*>(v.get()), sizes, src_strides, vh->dtype(),
                            vh->device()},
                d.stream);
  });
}

void eigh(const TensorImpl& a, const TensorImpl& w, bool upper, bool compute_v,
          const TensorImpl& info) {
  const OnDevice d(a);
  const MatrixBatch b = matrix_batch(a);
  const int n = solver_int(b.n);
  const cusolverEigMode_t jobz = compute_v ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = d.solver().handle;
    int lwork = 0;
    AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, syevd_bufferSize)(h, jobz, fill(upper), n, data<T>(a),
                                                           n, data<T>(w), &lwork));
    Temp<T> work(d.index, lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, syevd)(h, jobz, fill(upper), n,
                                                  data<T>(a) + i * b.step(), n,
                                                  data<T>(w) + i * b.n, work.get(), lwork,
                                                  data<int>(info) + i));
    }
  });
}

// geev's real eigenvectors (LAPACK's layout: a conjugate pair w_j, w_j+1 =
// conj(w_j), imag(w_j) > 0, has columns j, j + 1 holding re and im of v_j,
// and v_j+1 = conj(v_j)) as complex columns of vec (re, im pairs of T), as
// the CPU kernel writes them. w holds the complex eigenvalues.
template <class T>
__global__ void eig_vectors_kernel(const T* vr, const T* w, T* vec, int64_t total,
                                   IntDivider<uint64_t> n) {
  AOTRT_GRID_STRIDE(e, total) {
    // e = r + n (j + n b): row r of column j of matrix b.
    const DivMod<uint64_t> rj = n.divmod(static_cast<uint64_t>(e));
    const DivMod<uint64_t> jb = n.divmod(rj.div);
    const int64_t nn = static_cast<int64_t>(n.divisor);
    const int64_t r = static_cast<int64_t>(rj.mod), j = static_cast<int64_t>(jb.mod);
    const int64_t b = static_cast<int64_t>(jb.div);
    const T* cols = vr + b * nn * nn;
    const T imag = w[2 * (b * nn + j) + 1];
    T re, im;
    if (imag == T(0)) {
      re = cols[r + j * nn];
      im = 0;
    } else if (imag > T(0)) {
      re = cols[r + j * nn];
      im = cols[r + (j + 1) * nn];
    } else {
      re = cols[r + (j - 1) * nn];
      im = -cols[r + j * nn];
    }
    vec[2 * e] = re;
    vec[2 * e + 1] = im;
  }
}

// cusolverDnXgeev (CUDA 12.6+) with complex eigenvalues and real right
// eigenvectors, expanded as above.
void eig(const TensorImpl& a, const TensorImpl& values, const TensorImpl& vectors,
         const TensorImpl& info) {
  const OnDevice d(a);
  const MatrixBatch b = matrix_batch(a);
  const int64_t n = b.n;
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    constexpr cudaDataType_t real = real_type<T>();
    constexpr cudaDataType_t complex = std::is_same_v<T, float> ? CUDA_C_32F : CUDA_C_64F;
    SolverHandle& sh = d.solver();
    Temp<T> vr(d.index, b.count * n * n);
    size_t device_bytes = 0, host_bytes = 0;
    AOTRT_CUSOLVER_CHECK(cusolverDnXgeev_bufferSize(
        sh.handle, sh.params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, real,
        data<T>(a), n, complex, data<T>(values), real, nullptr, 1, real, vr.get(), n, real,
        &device_bytes, &host_bytes));
    DeviceBuffer work(d.index, std::max<size_t>(device_bytes, 1));
    void* host = sh.host_workspace(host_bytes);
    for (int64_t i = 0; i < b.count; ++i) {
      AOTRT_CUSOLVER_CHECK(cusolverDnXgeev(
          sh.handle, sh.params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, real,
          data<T>(a) + i * b.step(), n, complex, data<T>(values) + 2 * i * n, real, nullptr, 1,
          real, vr.get() + i * b.step(), n, real, work.data(), device_bytes, host, host_bytes,
          data<int>(info) + i));
    }
    const int64_t total = b.count * b.step();
    eig_vectors_kernel<T><<<blocks_for(total), kThreads, 0, d.stream>>>(
        vr.get(), data<T>(values), data<T>(vectors), total,
        IntDivider<uint64_t>(static_cast<uint64_t>(n)));
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

void ldl_factor(const TensorImpl& a, const TensorImpl& pivots, const TensorImpl& info) {
  const OnDevice d(a);
  const MatrixBatch b = matrix_batch(a);
  const int n = solver_int(b.n);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = d.solver().handle;
    int lwork = 0;
    AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, sytrf_bufferSize)(h, n, data<T>(a), n, &lwork));
    Temp<T> work(d.index, lwork);
    for (int64_t i = 0; i < b.count; ++i) {
      AOTRT_CUSOLVER_CHECK(AOTRT_SOLVER(T, sytrf)(h, CUBLAS_FILL_MODE_LOWER, n,
                                                  data<T>(a) + i * b.step(), n,
                                                  data<int>(pivots) + i * b.n, work.get(), lwork,
                                                  data<int>(info) + i));
    }
    zero_triangle<T>(d, a, false);  // ATen's LD has its upper triangle zeroed
  });
}

// Xsytrs takes 64-bit pivots: sytrf's int32 ones are widened on the stream.
void ldl_solve(const TensorImpl& ld, const TensorImpl& pivots, const TensorImpl& rhs) {
  const OnDevice d(ld);
  const MatrixBatch f = matrix_batch(ld), x = matrix_batch(rhs);
  Temp<int64_t> piv64(d.index, pivots.numel());
  {
    const StridedView src = strided_view(pivots);
    copy_device(StridedView{reinterpret_cast<char*>(piv64.get()), src.sizes, src.strides,
                            ScalarType::Int64, src.device},
                src, d.stream);
  }
  on_real(rhs, [&](auto zero) {
    using T = decltype(zero);
    SolverHandle& sh = d.solver();
    size_t device_bytes = 0, host_bytes = 0;
    AOTRT_CUSOLVER_CHECK(cusolverDnXsytrs_bufferSize(
        sh.handle, CUBLAS_FILL_MODE_LOWER, f.n, x.n, real_type<T>(), data<T>(ld),
        std::max<int64_t>(f.n, 1), piv64.get(), real_type<T>(), data<T>(rhs),
        std::max<int64_t>(f.n, 1), &device_bytes, &host_bytes));
    DeviceBuffer work(d.index, std::max<size_t>(device_bytes, 1));
    void* host = sh.host_workspace(host_bytes);
    Temp<int> info(d.index, 1);
    for (int64_t i = 0; i < x.count; ++i) {
      AOTRT_CUSOLVER_CHECK(cusolverDnXsytrs(
          sh.handle, CUBLAS_FILL_MODE_LOWER, f.n, x.n, real_type<T>(),
          data<T>(ld) + i * f.step(), std::max<int64_t>(f.n, 1), piv64.get() + i * f.n,
          real_type<T>(), data<T>(rhs) + i * x.step(), std::max<int64_t>(f.n, 1), work.data(),
          device_bytes, host, host_bytes, info.get()));
    }
  });
}

void pinv_scale(const TensorImpl& u, const TensorImpl& s, const TensorImpl& atol,
                const TensorImpl& rtol, bool default_rtol) {
  const OnDevice d(u);
  const MatrixBatch b = matrix_batch(u);
  const int64_t k = b.n;
  on_real(u, [&](auto zero) {
    using T = decltype(zero);
    Temp<T> scales(d.index, b.count * k);
    pinv_scales_kernel<T><<<blocks_for(b.count), kThreads, 0, d.stream>>>(
        data<T>(s), data<double>(atol), data<double>(rtol), scales.get(), b.count, k,
        default_rtol);
    AOTRT_CUDA_CHECK_LAUNCH();
    const int64_t total = b.count * b.step();
    if (total == 0) return;
    // Column (b, j) of the column-major u holds elements [(b k + j) m, (b k + j + 1) m).
    scale_columns_kernel<T><<<blocks_for(total), kThreads, 0, d.stream>>>(
        data<T>(u), scales.get(), total, IntDivider<uint64_t>(static_cast<uint64_t>(b.m)));
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

void one_norm(const TensorImpl& a, const TensorImpl& norms) {
  const OnDevice d(a);
  const MatrixBatch b = matrix_batch(a);
  on_real(a, [&](auto zero) {
    using T = decltype(zero);
    one_norm_kernel<T><<<blocks_for(b.count), kThreads, 0, d.stream>>>(
        data<T>(a), data<double>(norms), b.count, b.m, b.n);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

void combine(const TensorImpl& out, const TensorImpl* const* xs, const double* coeffs,
             int count) {
  AOTRT_CHECK(count >= 1 && count <= kMaxTerms, kInternal, "linalg combine: ", count,
              " terms; the CUDA kernel takes 1 to ", kMaxTerms);
  const OnDevice d(out);
  const int64_t total = out.numel();
  if (total == 0) return;
  on_real(out, [&](auto zero) {
    using T = decltype(zero);
    Terms<T> terms{};
    terms.count = count;
    for (int j = 0; j < count; ++j) {
      terms.x[j] = data<T>(*xs[j]);
      terms.c[j] = static_cast<T>(coeffs[j]);
    }
    combine_kernel<T><<<blocks_for(total), kThreads, 0, d.stream>>>(data<T>(out), terms, total);
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

// --- Deferred errors ---------------------------------------------------------------------
// See Note [Linalg errors on CUDA] (ops/linalg.h): one record per device in
// mapped pinned host memory, written by a one-thread kernel, read by the host
// after a synchronize (no copy, no sync of its own).

struct alignas(16) ErrorSlot {
  int32_t set;
  int32_t tag;
  int32_t code;
  int32_t pad;
  int64_t batch;
};

__global__ void record_errors_kernel(const int32_t* info, int64_t count, int32_t tag,
                                     volatile ErrorSlot* slot) {
  if (slot->set != 0) return;  // the first error stands until it is taken
  for (int64_t i = 0; i < count; ++i) {
    if (info[i] != 0) {
      slot->tag = tag;
      slot->code = info[i];
      slot->batch = i;
      __threadfence_system();
      slot->set = 1;
      return;
    }
  }
}

struct ErrorSlots {
  std::mutex mutex;
  std::vector<ErrorSlot*> host;  // by device; null until that device's first check
};
ErrorSlots& error_slots() {
  static ErrorSlots* slots = new ErrorSlots;  // never freed: read at any exit
  return *slots;
}

ErrorSlot* error_slot(int device, bool create) {
  ErrorSlots& slots = error_slots();
  std::lock_guard<std::mutex> lock(slots.mutex);
  if (slots.host.size() <= static_cast<size_t>(device)) {
    if (!create) return nullptr;
    slots.host.resize(static_cast<size_t>(device) + 1, nullptr);
  }
  ErrorSlot*& s = slots.host[static_cast<size_t>(device)];
  if (s == nullptr && create) {
    // Once per device for the process (never in a steady state).
    void* p = nullptr;
    AOTRT_CUDA_CHECK(cudaHostAlloc(&p, sizeof(ErrorSlot), cudaHostAllocMapped | cudaHostAllocPortable));
    s = static_cast<ErrorSlot*>(p);
    *s = ErrorSlot{};
  }
  return s;
}

void record_errors(const TensorImpl& info, int32_t tag) {
  const OnDevice d(info);
  ErrorSlot* host = error_slot(d.index, true);
  void* dev = nullptr;
  AOTRT_CUDA_CHECK(cudaHostGetDevicePointer(&dev, host, 0));
  record_errors_kernel<<<1, 1, 0, d.stream>>>(data<int32_t>(info), info.numel(), tag,
                                              static_cast<volatile ErrorSlot*>(dev));
  AOTRT_CUDA_CHECK_LAUNCH();
}

bool take_error(int device, ops::LinalgError* out) {
  ErrorSlot* s = error_slot(device, false);
  if (s == nullptr) return false;
  volatile ErrorSlot* v = s;
  if (v->set == 0) return false;
  out->tag = v->tag;
  out->code = v->code;
  out->batch = v->batch;
  v->set = 0;
  return true;
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
    .record_errors = record_errors,
    .take_error = take_error,
};
AOTRT_REGISTER_KERNELS(LinalgKernels, cuda, kLinalg);

}  // namespace
}  // namespace aotrt::cuda
