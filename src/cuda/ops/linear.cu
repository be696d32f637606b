// CUDA kernels of the linear family (ops/linear.h; Note [Linear semantics]),
// each computing as the CPU kernel does: the activation and binary epilogues
// of _addmm_activation (one thread per element, in float, double for
// float64), _fused_rms_norm (a block per row, CUB's block sum of squares),
// and sum_of_products (_trilinear, F.bilinear: one thread per output element
// summing its products in the stages of Note [Trilinear rounding], in int64
// wrapping for integers, float for float16/bfloat16, double otherwise), and
// cross_entropy (a block per row in double, as the CPU's per-row loop, then
// one block for the reduction; Note [Cross-entropy targets on CUDA]).
//
// Note [Cross-entropy targets on CUDA]
// The CPU refuses a target outside [0, C) that is not ignore_index. Here the
// targets are on the device and refusing one would make the host wait for
// the kernel (ATen's CUDA kernel stops the process with a device-side assert
// instead): as Note [Indexing on CUDA], such a row is skipped, counted as an
// ignored row (loss 0, weight 0), so no memory outside the logits is read.
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/linear.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::LinearKernels;

using ops::Activation;
using ops::BinaryPost;
using ops::PostOp;

// The four floating dtypes; the rest are refused naming fn.
template <typename F>
void visit_float(ScalarType t, const char* fn, F&& f) {
  visit_dtype(t, fn, "self", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      f(tag);
    } else {
      AOTRT_FAIL(kUnsupported, fn, ": dtype ", dtype_name(t), " is not served");
    }
  });
}
// The epilogues' math type: double for float64, float otherwise.
template <typename T>
using math_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename A>
struct Act {
  PostOp op;
  __device__ __forceinline__ A operator()(A x) const {
    const A a = static_cast<A>(op.a), b = static_cast<A>(op.b);
    auto hard = [](A v) {
      const A lo = v + A(3) < A(0) ? A(0) : v + A(3);  // std::min(std::max(v + 3, 0), 6)
      return (A(6) < lo ? A(6) : lo) / A(6);
    };
    switch (op.act) {
      case Activation::kRelu: return x < A(0) ? A(0) : x;  // NaN stays
      case Activation::kGelu: return x * A(0.5) * (A(1) + erf(x * A(M_SQRT1_2)));
      case Activation::kGeluTanh: {
        const A inner = A(M_2_SQRTPI * M_SQRT1_2) * (x + A(0.044715) * x * x * x);
        return A(0.5) * x * (A(1) + tanh(inner));
      }
      case Activation::kSilu: return x / (A(1) + exp(-x));
      case Activation::kHardswish: return x * hard(x);
      case Activation::kHardsigmoid: return hard(x);
      case Activation::kLeakyRelu: return x > A(0) ? x : x * a;
      case Activation::kHardtanh: return x < a ? a : (x > b ? b : x);  // NaN stays
      case Activation::kSigmoid: return A(1) / (A(1) + exp(-x));
      case Activation::kTanh: return tanh(x);
    }
    return x;
  }
};

template <typename T>
__global__ void activation_kernel(T* data, ShapeIndexer<1> ix, int64_t n, Act<math_t<T>> act) {
  AOTRT_GRID_STRIDE(i, n) {
    int64_t off[1];
    ix.offsets(i, off);
    T* p = data + off[0];
    *p = from_acc<T>(act(static_cast<math_t<T>>(to_acc(*p))));
  }
}

void activation(const PostOp& op, const StridedView& v, const char* fn) {
  const int64_t n = v.numel();
  if (n == 0) return;
  const std::span<const int64_t> strides[1] = {v.strides};
  const ShapeIndexer<1> ix = make_indexer<1>(v.sizes, strides, fn);
  const OnDevice on(v.device);
  visit_float(v.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    activation_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(
        reinterpret_cast<T*>(v.data), ix, n, Act<math_t<T>>{op});
    AOTRT_CUDA_CHECK_LAUNCH();
  });
}

template <typename T, typename O>
__global__ void binary_kernel(T* data, const O* other, ShapeIndexer<2> ix, int64_t n,
                              BinaryPost op) {
  using A = math_t<T>;
  AOTRT_GRID_STRIDE(i, n) {
    int64_t off[2];
    ix.offsets(i, off);
    const A x = static_cast<A>(to_acc(data[off[0]]));
    const A y = static_cast<A>(to_acc(other[off[1]]));
    const A r = op == BinaryPost::kAdd   ? x + y
                : op == BinaryPost::kSub ? x - y
                : op == BinaryPost::kMul ? x * y
                                         : x / y;
    data[off[0]] = from_acc<T>(r);
  }
}

void binary(BinaryPost op, const StridedView& v, const StridedView& other, const char* fn) {
  const int64_t n = v.numel();
  if (n == 0) return;
  const std::span<const int64_t> strides[2] = {v.strides, other.strides};
  const ShapeIndexer<2> ix = make_indexer<2>(v.sizes, strides, fn);
  const OnDevice on(v.device);
  visit_float(v.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    visit_float(other.dtype, fn, [&](auto otag) {
      using O = decltype(otag);
      binary_kernel<T, O><<<blocks_for(n), kThreads, 0, on.stream>>>(
          reinterpret_cast<T*>(v.data), reinterpret_cast<const O*>(other.data), ix, n, op);
      AOTRT_CUDA_CHECK_LAUNCH();
    });
  });
}

// One block a row: rstd = 1 / sqrt(mean(x^2) + eps) in A, then
// out = (x * rstd) rounded to T, times the weight (rounded again).
template <typename T, typename W>
__global__ void rms_norm_kernel(const T* x, int64_t xs0, int64_t xs1, const W* w, int64_t ws0,
                                T* out, int64_t os0, int64_t os1, math_t<T>* rstd, int64_t rs0,
                                int64_t inner, double eps) {
  using A = math_t<T>;
  using Reduce = cub::BlockReduce<A, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ A row_rstd;
  const int64_t r = blockIdx.x;
  const T* row = x + r * xs0;
  A sum = 0;
  for (int64_t i = threadIdx.x; i < inner; i += kThreads) {
    const A v = static_cast<A>(to_acc(row[i * xs1]));
    sum += v * v;
  }
  const A total = Reduce(temp).Sum(sum);
  if (threadIdx.x == 0) {
    row_rstd = A(1) / sqrt(total / static_cast<A>(inner) + static_cast<A>(eps));
    rstd[r * rs0] = row_rstd;
  }
  __syncthreads();
  const A rs = row_rstd;
  for (int64_t i = threadIdx.x; i < inner; i += kThreads) {
    T y = from_acc<T>(static_cast<A>(to_acc(row[i * xs1])) * rs);
    if (w != nullptr) {
      using M = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<W, double>, double,
                                   float>;
      y = from_acc<T>(static_cast<M>(to_acc(y)) * static_cast<M>(to_acc(w[i * ws0])));
    }
    out[r * os0 + i * os1] = y;
  }
}

void rms_norm(const StridedView& x, const StridedView* w, const StridedView& out,
              const StridedView& rstd, double eps, const char* fn) {
  const int64_t rows = x.sizes[0], inner = x.sizes[1];
  if (rows == 0) return;
  AOTRT_CHECK(rows <= int64_t{0x7fffffff}, kUnsupported, fn, ": ", rows,
              " rows; the CUDA kernel serves at most 2^31 - 1");
  const OnDevice on(x.device);
  visit_float(x.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    auto launch = [&](auto wtag) {
      using W = decltype(wtag);
      rms_norm_kernel<T, W><<<static_cast<unsigned>(rows), kThreads, 0, on.stream>>>(
          reinterpret_cast<const T*>(x.data), x.strides[0], x.strides[1],
          w != nullptr ? reinterpret_cast<const W*>(w->data) : nullptr,
          w != nullptr ? w->strides[0] : 0, reinterpret_cast<T*>(out.data), out.strides[0],
          out.strides[1], reinterpret_cast<math_t<T>*>(rstd.data), rstd.strides[0], inner, eps);
      AOTRT_CUDA_CHECK_LAUNCH();
    };
    if (w == nullptr) return launch(T{});
    visit_float(w->dtype, fn, launch);
  });
}

template <typename T>
using sum_t = std::conditional_t<
    std::is_integral_v<T>, int64_t,
    std::conditional_t<std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, float,
                       double>>;

// Note [Trilinear rounding], one thread per result element: kept gives the
// offsets of a, b, c, out over the kept dims, unrolled / second / first those
// of a, b, c over the dims of each role.
template <typename T>
__global__ void sum_of_products_kernel(const T* a, const T* b, const T* c, T* out,
                                       ShapeIndexer<4> kept, ShapeIndexer<3> unrolled,
                                       ShapeIndexer<3> second, ShapeIndexer<3> first,
                                       int64_t n_out, int64_t n_unrolled, int64_t n_second,
                                       int64_t n_first) {
  using A = sum_t<T>;
  auto rounded = [](A v) { return static_cast<A>(to_acc(from_acc<T>(v))); };
  AOTRT_GRID_STRIDE(e, n_out) {
    int64_t k[4];
    kept.offsets(e, k);
    A total = 0;  // a value of T: rounded after every addition
    for (int64_t u = 0; u < n_unrolled; ++u) {
      int64_t ou[3];
      unrolled.offsets(u, ou);
      A sum2 = 0;
      for (int64_t s2 = 0; s2 < n_second; ++s2) {
        int64_t o2[3];
        second.offsets(s2, o2);
        const int64_t at_a = k[0] + ou[0] + o2[0], at_b = k[1] + ou[1] + o2[1];
        A sum1 = 0;
        for (int64_t s1 = 0; s1 < n_first; ++s1) {
          int64_t o1[3];
          first.offsets(s1, o1);
          const A x = static_cast<A>(to_acc(a[at_a + o1[0]]));
          const A y = static_cast<A>(to_acc(b[at_b + o1[1]]));
          sum1 = wrapping_add(sum1, wrapping_mul(x, y));  // Note [Integer wraparound]
        }
        // c is expanded along the first stage's dims (stride 0 there).
        const A z = static_cast<A>(to_acc(c[k[2] + ou[2] + o2[2]]));
        sum2 = wrapping_add(sum2, wrapping_mul(rounded(sum1), z));
      }
      total = rounded(wrapping_add(total, rounded(sum2)));
    }
    out[k[3]] = from_acc<T>(total);
  }
}

void sum_of_products(const StridedView& a, const StridedView& b, const StridedView& c,
                     const StridedView& out, std::span<const ops::TrilinearDim> roles,
                     const char* fn) {
  using ops::TrilinearDim;
  constexpr auto kRoles = 4;
  std::vector<int64_t> sizes[kRoles], ks[4], ss[kRoles][3];
  int64_t counts[kRoles] = {1, 1, 1, 1};
  const StridedView* views[4] = {&a, &b, &c, &out};
  for (size_t d = 0; d < roles.size(); ++d) {
    const auto r = static_cast<size_t>(roles[d]);
    sizes[r].push_back(a.sizes[d]);
    counts[r] *= a.sizes[d];
    if (roles[d] == TrilinearDim::kKept) {
      for (int v = 0; v < 4; ++v) ks[v].push_back(views[v]->strides[d]);
    } else {
      for (int v = 0; v < 3; ++v) ss[r][v].push_back(views[v]->strides[d]);
    }
  }
  const int64_t n_out = counts[static_cast<size_t>(TrilinearDim::kKept)];
  if (n_out == 0) return;
  const std::span<const int64_t> kspans[4] = {ks[0], ks[1], ks[2], ks[3]};
  const ShapeIndexer<4> kept =
      make_indexer<4>(sizes[static_cast<size_t>(TrilinearDim::kKept)], kspans, fn);
  auto summed = [&](TrilinearDim role) {
    const auto r = static_cast<size_t>(role);
    const std::span<const int64_t> spans[3] = {ss[r][0], ss[r][1], ss[r][2]};
    return make_indexer<3>(sizes[r], spans, fn);
  };
  const ShapeIndexer<3> unrolled = summed(TrilinearDim::kUnrolled);
  const ShapeIndexer<3> second = summed(TrilinearDim::kSecond);
  const ShapeIndexer<3> first = summed(TrilinearDim::kFirst);
  const OnDevice on(out.device);
  visit_dtype(a.dtype, fn, "i1", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      AOTRT_FAIL(kUnsupported, fn, ": dtype bool is not served");
    } else {
      sum_of_products_kernel<T><<<blocks_for(n_out), kThreads, 0, on.stream>>>(
          reinterpret_cast<const T*>(a.data), reinterpret_cast<const T*>(b.data),
          reinterpret_cast<const T*>(c.data), reinterpret_cast<T*>(out.data), kept, unrolled,
          second, first, n_out, counts[static_cast<size_t>(TrilinearDim::kUnrolled)],
          counts[static_cast<size_t>(TrilinearDim::kSecond)],
          counts[static_cast<size_t>(TrilinearDim::kFirst)]);
      AOTRT_CUDA_CHECK_LAUNCH();
    }
  });
}

struct MaxOf {
  __device__ __forceinline__ double operator()(double a, double b) const { return a < b ? b : a; }
};

// Row i of logits: nll = w[t] (lse - z[t]), weight w[t], and (smoothing) sum_k
// w[k] (lse - z[k]), all 0 for an ignored or out-of-range target (Note
// [Cross-entropy targets on CUDA]). The max skips NaN as the CPU's std::max.
template <typename T>
__global__ void cross_entropy_rows_kernel(const T* logits, int64_t ls0, int64_t ls1,
                                          const int64_t* target, int64_t ts0, const T* weight,
                                          int64_t ws0, int64_t c, int64_t ignore_index,
                                          bool smoothing, double* nll, double* wt,
                                          double* smooth) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ double broadcast;
  const int64_t i = blockIdx.x;
  const int64_t t = target[i * ts0];
  if (t == ignore_index || t < 0 || t >= c) {  // the same for every thread of the block
    if (threadIdx.x == 0) nll[i] = wt[i] = smooth[i] = 0;
    return;
  }
  const T* row = logits + i * ls0;
  auto z = [&](int64_t k) { return static_cast<double>(to_acc(row[k * ls1])); };
  auto w = [&](int64_t k) {
    return weight == nullptr ? 1.0 : static_cast<double>(to_acc(weight[k * ws0]));
  };
  double mx = -INFINITY;
  for (int64_t k = threadIdx.x; k < c; k += kThreads) mx = mx < z(k) ? z(k) : mx;
  mx = Reduce(temp).Reduce(mx, MaxOf{});
  if (threadIdx.x == 0) broadcast = mx;
  __syncthreads();
  mx = broadcast;
  double sum = 0;
  for (int64_t k = threadIdx.x; k < c; k += kThreads) sum += exp(z(k) - mx);
  __syncthreads();  // every thread has read broadcast; temp is free again
  sum = Reduce(temp).Sum(sum);
  if (threadIdx.x == 0) broadcast = mx + log(sum);
  __syncthreads();
  const double lse = broadcast;
  if (threadIdx.x == 0) {
    nll[i] = w(t) * (lse - z(t));
    wt[i] = w(t);
  }
  if (!smoothing) {
    if (threadIdx.x == 0) smooth[i] = 0;
    return;
  }
  double s = 0;
  for (int64_t k = threadIdx.x; k < c; k += kThreads) s += w(k) * (lse - z(k));
  __syncthreads();
  s = Reduce(temp).Sum(s);
  if (threadIdx.x == 0) smooth[i] = s;
}

template <typename T>
__global__ void cross_entropy_none_kernel(const double* nll, const double* smooth, int64_t n,
                                          double keep, double spread, T* out, int64_t os0) {
  AOTRT_GRID_STRIDE(i, n) { out[i * os0] = static_cast<T>(keep * nll[i] + spread * smooth[i]); }
}

// One block: the sums of the rows' nll, weights and smoothing terms, then the loss.
template <typename T>
__global__ void cross_entropy_total_kernel(const double* nll, const double* wt,
                                           const double* smooth, int64_t n, double keep,
                                           double spread, bool mean, T* out) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  double sums[3] = {0, 0, 0};
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    sums[0] += nll[i];
    sums[1] += wt[i];
    sums[2] += smooth[i];
  }
  double totals[3];
  for (int k = 0; k < 3; ++k) {
    totals[k] = Reduce(temp).Sum(sums[k]);
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  double loss = keep * totals[0] + spread * totals[2];
  if (mean) loss /= totals[1];
  out[0] = static_cast<T>(loss);
}

void cross_entropy(const StridedView& logits, const StridedView& target, const StridedView* weight,
                   int64_t ignore_index, double eps, int reduction, const StridedView& out,
                   const char* fn) {
  const int64_t n = logits.sizes[0], c = logits.sizes[1];
  AOTRT_CHECK(n <= int64_t{0x7fffffff}, kUnsupported, fn, ": ", n,
              " rows; the CUDA kernel serves at most 2^31 - 1");
  const OnDevice on(logits.device);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    Temp<double> rows(on.device, 3 * n);
    double* nll = rows.get();
    double* wt = nll + n;
    double* smooth = wt + n;
    if (n > 0) {
      cross_entropy_rows_kernel<T><<<static_cast<unsigned>(n), kThreads, 0, on.stream>>>(
          reinterpret_cast<const T*>(logits.data), logits.strides[0], logits.strides[1],
          reinterpret_cast<const int64_t*>(target.data), target.strides[0],
          weight != nullptr ? reinterpret_cast<const T*>(weight->data) : nullptr,
          weight != nullptr ? weight->strides[0] : 0, c, ignore_index, eps > 0, nll, wt, smooth);
      AOTRT_CUDA_CHECK_LAUNCH();
    }
    const double keep = 1.0 - eps, spread = c > 0 ? eps / static_cast<double>(c) : 0.0;
    T* o = reinterpret_cast<T*>(out.data);
    if (reduction == ops::kLossNone) {
      if (n == 0) return;
      cross_entropy_none_kernel<T><<<blocks_for(n), kThreads, 0, on.stream>>>(
          nll, smooth, n, keep, spread, o, out.strides[0]);
    } else {
      cross_entropy_total_kernel<T><<<1, kThreads, 0, on.stream>>>(
          nll, wt, smooth, n, keep, spread, reduction == ops::kLossMean, o);
    }
    AOTRT_CUDA_CHECK_LAUNCH();
  };
  if (logits.dtype == ScalarType::Float32) return run(float{});
  AOTRT_CHECK(logits.dtype == ScalarType::Float64, kUnsupported, fn, ": dtype ",
              dtype_name(logits.dtype), " is not served");
  run(double{});
}

constexpr LinearKernels kLinear{.activation = activation,
                                .binary = binary,
                                .rms_norm = rms_norm,
                                .sum_of_products = sum_of_products,
                                .cross_entropy = cross_entropy};
AOTRT_REGISTER_KERNELS(LinearKernels, cuda, kLinear);

}  // namespace
}  // namespace aotrt::cuda
