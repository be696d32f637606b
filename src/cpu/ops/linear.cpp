// CPU kernels of the linear family (ops/linear.h): the activation after
// _addmm_activation's gemm, RMS norm rows, and _trilinear's sum of products
// (Note [Linear semantics]); the fused oneDNN linear is cpu/linear.cpp's.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "core/view.h"
#include "cpu/elements.h"
#include "cpu/lines.h"
#include "cpu/ops.h"
#include "ops/dispatch.h"
#include "ops/linear.h"

namespace aotrt::cpu {
namespace {
using ops::Activation;
using ops::LinearKernels;

template <typename T>
constexpr bool is_float_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                            std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Calls f(T{}) for the four floating dtypes; refuses the rest naming fn.
template <typename F>
void visit_float(ScalarType t, const char* fn, F&& f) {
  const bool served = visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_float_v<T>) {
      f(tag);
    } else {
      AOTRT_FAIL(kUnsupported, fn, ": dtype ", dtype_name(t), " is not served");
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(t), " is not served");
}

// Element offsets of every index of `sizes` in row-major order, through
// `strides` (elements).
template <typename F>
void for_each_index(std::span<const int64_t> sizes, F&& f) {
  const size_t nd = sizes.size();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  while (true) {
    f(idx);
    size_t d = nd;
    while (d > 0) {
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (nd == 0) return;
  }
}

int64_t offset_of(const std::vector<int64_t>& idx, std::span<const int64_t> strides) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
  return off;
}

// The dim whose stride in v is the smallest (of those longer than 1): the
// lines the epilogues walk, so that each runs through adjacent memory.
int64_t innermost_dim(const StridedView& v) {
  int64_t best = v.dim() - 1;
  for (int64_t d = 0; d < v.dim(); ++d) {
    if (v.sizes[d] > 1 && (v.sizes[best] <= 1 || std::abs(v.strides[d]) < std::abs(v.strides[best]))) {
      best = d;
    }
  }
  return best;
}

// A view whose elements fill numel() adjacent slots from its data pointer.
bool dense(const StridedView& v) {
  for (int64_t st : v.strides) {
    if (st < 0) return false;
  }
  return is_non_overlapping_and_dense(v.sizes, v.strides);
}

// v[e] = f(v[e]) in the op math type A, line by line (f inlined in the loop).
template <typename T, typename A, typename F>
void map_in_place(const StridedView& v, F f) {
  if (v.dim() == 0) {
    write_elem<T>(v.data, 0, convert_value<T>(f(static_cast<A>(load(read_elem<T>(v.data, 0))))));
    return;
  }
  if (dense(v)) {  // numel elements from v.data, in any order
    T* p = reinterpret_cast<T*>(v.data);
    const int64_t n = v.numel();
#pragma omp simd  // vectorized: no data-dependent branch in the loop
    for (int64_t i = 0; i < n; ++i) p[i] = convert_value<T>(f(static_cast<A>(load(p[i]))));
    return;
  }
  const int64_t dim = innermost_dim(v), n = v.sizes[dim], step = v.strides[dim];
  for_each_line(v.sizes, dim, v.strides, v.strides, [&](int64_t off, int64_t) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = off + i * step;
      write_elem<T>(v.data, at, convert_value<T>(f(static_cast<A>(load(read_elem<T>(v.data, at))))));
    }
  });
}

void activation(const ops::PostOp& op, const StridedView& v, const char* fn) {
  visit_float(v.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const A a = static_cast<A>(op.a), b = static_cast<A>(op.b);
    auto hard = [](A x) { return std::min(std::max(x + A(3), A(0)), A(6)) / A(6); };
    switch (op.act) {
      case Activation::kRelu:
        // One compare, no branch (a data-dependent branch mispredicted on half of a
        // conv output's elements cost 10x the loop); NaN < 0 is false, so NaN stays.
        return map_in_place<T, A>(v, [](A x) { return x < A(0) ? A(0) : x; });
      case Activation::kGelu:
        return map_in_place<T, A>(v, [](A x) { return x * A(0.5) * (A(1) + std::erf(x * A(M_SQRT1_2))); });
      case Activation::kGeluTanh:
        return map_in_place<T, A>(v, [](A x) {
          const A inner = A(M_2_SQRTPI * M_SQRT1_2) * (x + A(0.044715) * x * x * x);
          return A(0.5) * x * (A(1) + std::tanh(inner));
        });
      case Activation::kSilu: return map_in_place<T, A>(v, [](A x) { return x / (A(1) + std::exp(-x)); });
      case Activation::kHardswish: return map_in_place<T, A>(v, [&](A x) { return x * hard(x); });
      case Activation::kHardsigmoid: return map_in_place<T, A>(v, hard);
      case Activation::kLeakyRelu: return map_in_place<T, A>(v, [&](A x) { return x > A(0) ? x : x * a; });
      case Activation::kHardtanh:
        return map_in_place<T, A>(v, [&](A x) { return x < a ? a : (x > b ? b : x); });  // NaN stays
      case Activation::kSigmoid: return map_in_place<T, A>(v, [](A x) { return A(1) / (A(1) + std::exp(-x)); });
      case Activation::kTanh: return map_in_place<T, A>(v, [](A x) { return std::tanh(x); });
    }
  });
}

void binary(ops::BinaryPost op, const StridedView& v, const StridedView& other, const char* fn) {
  visit_float(v.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    visit_float(other.dtype, fn, [&](auto otag) {
      using O = decltype(otag);
      auto apply = [&](int64_t at, int64_t ot) {
        const A x = static_cast<A>(load(read_elem<T>(v.data, at)));
        const A y = static_cast<A>(load(read_elem<O>(other.data, ot)));
        const A r = op == ops::BinaryPost::kAdd   ? x + y
                    : op == ops::BinaryPost::kSub ? x - y
                    : op == ops::BinaryPost::kMul ? x * y
                                                  : x / y;
        write_elem<T>(v.data, at, convert_value<T>(r));
      };
      if (v.dim() == 0) {
        apply(0, 0);
        return;
      }
      if (dense(v) && std::equal(v.strides.begin(), v.strides.end(), other.strides.begin(),
                                 other.strides.end())) {
        const int64_t n = v.numel();
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) apply(i, i);
        return;
      }
      const int64_t dim = innermost_dim(v), n = v.sizes[dim];
      const int64_t vs = v.strides[dim], os = other.strides[dim];
      for_each_line(v.sizes, dim, v.strides, other.strides, [&](int64_t off, int64_t ooff) {
        for (int64_t i = 0; i < n; ++i) apply(off + i * vs, ooff + i * os);
      });
    });
  });
}

void rms_norm(const StridedView& x, const StridedView* w, const StridedView& out,
              const StridedView& rstd, double eps, const char* fn) {
  visit_float(x.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const int64_t rows = x.sizes[0], inner = x.sizes[1];
#pragma omp parallel for schedule(static) if (rows * inner >= 32768 && rows > 1)
    for (int64_t r = 0; r < rows; ++r) {
      A sum = 0;
      for (int64_t i = 0; i < inner; ++i) {
        const A v = static_cast<A>(load(read_elem<T>(x.data, r * x.strides[0] + i * x.strides[1])));
        sum += v * v;
      }
      const A rs = A(1) / std::sqrt(sum / static_cast<A>(inner) + static_cast<A>(eps));
      write_elem<A>(rstd.data, r * rstd.strides[0], rs);
      for (int64_t i = 0; i < inner; ++i) {
        const A v = static_cast<A>(load(read_elem<T>(x.data, r * x.strides[0] + i * x.strides[1])));
        T y = convert_value<T>(v * rs);
        if (w != nullptr) {
          visit_float(w->dtype, fn, [&](auto wtag) {
            using W = decltype(wtag);
            using M = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<W, double>,
                                         double, float>;
            const M wv = static_cast<M>(load(read_elem<W>(w->data, i * w->strides[0])));
            y = convert_value<T>(static_cast<M>(load(y)) * wv);
          });
        }
        write_elem<T>(out.data, r * out.strides[0] + i * out.strides[1], y);
      }
    }
  });
}

template <typename T, typename A>
T acc_to(A acc) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(acc);  // the low bits, as ATen's integer result
  } else {
    return convert_value<T>(acc);
  }
}

// acc + x * y; integers wrap (Note [Integer wraparound]), as ATen's integer bmm.
template <typename A>
A wrap_mul_add(A acc, A x, A y) {
  return wrapping_add(acc, wrapping_mul(x, y));
}

// Note [Trilinear rounding]: per result element, for each index of the
// unrolled dim (once when there is none), the first stage's sums rounded to
// T, the second stage's sum of those times c rounded to T, added up in T.
void sum_of_products(const StridedView& a, const StridedView& b, const StridedView& c,
                     const StridedView& out, std::span<const ops::TrilinearDim> roles,
                     const char* fn) {
  using ops::TrilinearDim;
  const bool served = visit_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T> || std::is_same_v<T, bool>) {
      AOTRT_FAIL(kUnsupported, fn, ": dtype ", dtype_name(a.dtype), " is not served");
    } else {
    using A = std::conditional_t<
        std::is_integral_v<T>, int64_t,
        std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float,
                           double>>;
    auto value = [](const StridedView& v, const std::vector<int64_t>& at) {
      return static_cast<A>(load(read_elem<T>(v.data, offset_of(at, v.strides))));
    };
    auto rounded = [](A v) { return static_cast<A>(load(acc_to<T>(v))); };
    // The dims of each role, and where each sits in the full index.
    std::vector<int64_t> sizes[4];
    std::vector<size_t> dims[4];
    for (size_t d = 0; d < roles.size(); ++d) {
      const auto r = static_cast<size_t>(roles[d]);
      sizes[r].push_back(a.sizes[d]);
      dims[r].push_back(d);
    }
    auto place = [&](TrilinearDim r, const std::vector<int64_t>& idx, std::vector<int64_t>& full) {
      const auto& ds = dims[static_cast<size_t>(r)];
      for (size_t i = 0; i < ds.size(); ++i) full[ds[i]] = idx[i];
    };
    std::vector<int64_t> full(roles.size(), 0);
    for_each_index(sizes[static_cast<size_t>(TrilinearDim::kKept)], [&](const std::vector<int64_t>& k) {
      place(TrilinearDim::kKept, k, full);
      A total = 0;  // a value of T: rounded after every addition
      for_each_index(sizes[static_cast<size_t>(TrilinearDim::kUnrolled)], [&](const std::vector<int64_t>& u) {
        place(TrilinearDim::kUnrolled, u, full);
        A second = 0;
        for_each_index(sizes[static_cast<size_t>(TrilinearDim::kSecond)], [&](const std::vector<int64_t>& s2) {
          place(TrilinearDim::kSecond, s2, full);
          A first = 0;
          for_each_index(sizes[static_cast<size_t>(TrilinearDim::kFirst)], [&](const std::vector<int64_t>& s1) {
            place(TrilinearDim::kFirst, s1, full);
            first = wrap_mul_add(first, value(a, full), value(b, full));
          });
          // c is expanded along the first stage's dims: any index of them reads it.
          second = wrap_mul_add(second, rounded(first), value(c, full));
        });
        total = rounded(wrapping_add(total, rounded(second)));
      });
      // out's strides are 0 on the summed dims: the kept ones place the result.
      write_elem<T>(out.data, offset_of(full, out.strides), acc_to<T>(total));
    });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(a.dtype), " is not served");
}

// Note [Linear semantics], linear_cross_entropy: per row in double, then
// the reduction.
void cross_entropy(const StridedView& logits, const StridedView& target, const StridedView* weight,
                   int64_t ignore_index, double eps, int reduction, const StridedView& out,
                   const char* fn) {
  const int64_t n = logits.sizes[0], c = logits.sizes[1];
  const auto* tg = reinterpret_cast<const char*>(target.data);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = read_elem<int64_t>(tg, i * target.strides[0]);
    AOTRT_CHECK(t == ignore_index || (t >= 0 && t < c), kInvalidArgument, fn, ": target ", t,
                " of row ", i, " is out of bounds (", c, " classes)");
  }
  const bool served = visit_dtype(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      auto w = [&](int64_t k) {
        return weight == nullptr ? 1.0 : static_cast<double>(read_elem<T>(weight->data, k * weight->strides[0]));
      };
      std::vector<double> nll(static_cast<size_t>(n)), wt(static_cast<size_t>(n)),
          smooth(static_cast<size_t>(n));
#pragma omp parallel for if (n * c > 32768)
      for (int64_t i = 0; i < n; ++i) {
        const int64_t t = read_elem<int64_t>(tg, i * target.strides[0]);
        if (t == ignore_index) continue;  // zeros
        const char* row = logits.data + i * c * int64_t{sizeof(T)};
        double mx = -INFINITY;
        for (int64_t k = 0; k < c; ++k) mx = std::max(mx, static_cast<double>(read_elem<T>(row, k)));
        double sum = 0;
        for (int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(read_elem<T>(row, k)) - mx);
        const double lse = mx + std::log(sum);
        nll[i] = w(t) * (lse - static_cast<double>(read_elem<T>(row, t)));
        wt[i] = w(t);
        if (eps > 0) {
          double s = 0;
          for (int64_t k = 0; k < c; ++k) s += w(k) * (lse - static_cast<double>(read_elem<T>(row, k)));
          smooth[i] = s;
        }
      }
      const double keep = 1.0 - eps, spread = c > 0 ? eps / static_cast<double>(c) : 0.0;
      if (reduction == ops::kLossNone) {
        for (int64_t i = 0; i < n; ++i) {
          write_elem<T>(out.data, i * out.strides[0], static_cast<T>(keep * nll[i] + spread * smooth[i]));
        }
        return;
      }
      double total_nll = 0, total_w = 0, total_smooth = 0;
      for (int64_t i = 0; i < n; ++i) {
        total_nll += nll[i];
        total_w += wt[i];
        total_smooth += smooth[i];
      }
      double loss = keep * total_nll + spread * total_smooth;
      if (reduction == ops::kLossMean) {
        loss = (keep * total_nll + spread * total_smooth) / total_w;
      }
      write_elem<T>(out.data, 0, static_cast<T>(loss));
    }
  });
  AOTRT_CHECK(served && (logits.dtype == ScalarType::Float32 || logits.dtype == ScalarType::Float64),
              kUnsupported, fn, ": dtype ", dtype_name(logits.dtype), " is not served");
}

constexpr LinearKernels kLinear{.activation = activation,
                                .binary = binary,
                                .rms_norm = rms_norm,
                                .sum_of_products = sum_of_products,
                                .cross_entropy = cross_entropy,
                                .linear_fused = linear_fused};
AOTRT_REGISTER_KERNELS(LinearKernels, cpu, kLinear);

}  // namespace
}  // namespace aotrt::cpu
