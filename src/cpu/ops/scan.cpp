// CPU kernels of the scan family (ops/scan.h): one pass per line, in ATen's
// CPU accumulation types (Note [Scan semantics]).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "cpu/elements.h"
#include "cpu/lines.h"
#include "ops/dispatch.h"
#include "ops/scan.h"

namespace aotrt::cpu {
namespace {
using ops::ScanKernels;
using ops::ScanOp;

// ATen's acc_type<T, /*is_cuda=*/false>.
template <typename T>
using acc_t = std::conditional_t<
    is_complex_v<T>, c128,
    std::conditional_t<std::is_floating_point_v<T>, double,
                       std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>,
                                          float, int64_t>>>;

// ATen's _log_add_exp_helper(x, y).
template <typename A>
A log_add_exp(A x, A y) {
  const A lo = std::isnan(y) ? y : std::min(x, y);
  const A hi = std::isnan(y) ? y : std::max(x, y);
  if (lo != hi || std::isfinite(lo)) return hi + std::log1p(std::exp(lo - hi));
  return x;  // both infinite, of one sign
}

template <typename T>
void scan_line(ScanOp op, char* base, int64_t n, int64_t stride) {
  using A = acc_t<T>;
  A acc = op == ScanOp::kProd ? A(1) : A(0);
  if constexpr (std::is_floating_point_v<A>) {
    if (op == ScanOp::kLogSumExp) acc = -std::numeric_limits<A>::infinity();
  }
  for (int64_t i = 0; i < n; ++i) {
    const A x = static_cast<A>(load(read_elem<T>(base, i * stride)));
    if (op == ScanOp::kSum) {
      acc = wrapping_add(acc, x);
    } else if (op == ScanOp::kProd) {
      acc = wrapping_mul(acc, x);
    } else if constexpr (std::is_floating_point_v<A>) {
      acc = log_add_exp(x, acc);
    }
    write_elem<T>(base, i * stride, convert_value<T>(acc));
  }
}

// Values are scanned in place (an element is read before its slot is written).
template <typename T>
void extreme_line(ScanOp op, char* values, int64_t vs, char* indices, int64_t is, int64_t n) {
  auto best = load(read_elem<T>(values, 0));
  int64_t best_i = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto x = load(read_elem<T>(values, i * vs));
    const bool take = is_nan(x) || (!is_nan(best) && (op == ScanOp::kMax ? x >= best : x <= best));
    if (take) {
      best = x;
      best_i = i;
    }
    write_elem<T>(values, i * vs, convert_value<T>(best));
    write_elem<int64_t>(indices, i * is, best_i);
  }
}

void scan(ScanOp op, const StridedView& v, int64_t dim, const char* fn) {
  const bool served = visit_dtype(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      AOTRT_CHECK(op != ScanOp::kLogSumExp, kUnsupported, fn, ": complex input is not served");
      for_each_line(v.sizes, dim, v.strides, v.strides, [&](int64_t off, int64_t) {
        scan_line<T>(op, v.data + off * int64_t{sizeof(T)}, v.sizes[dim], v.strides[dim]);
      });
    } else {
      AOTRT_CHECK(op != ScanOp::kLogSumExp || !std::is_integral_v<T>, kInternal, fn,
                  ": integer logcumsumexp");
      for_each_line(v.sizes, dim, v.strides, v.strides, [&](int64_t off, int64_t) {
        scan_line<T>(op, v.data + off * int64_t{sizeof(T)}, v.sizes[dim], v.strides[dim]);
      });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(v.dtype), " is not served");
}

void scan_with_indices(ScanOp op, const StridedView& v, const StridedView& idx, int64_t dim,
                       const char* fn) {
  const bool served = visit_dtype(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      AOTRT_FAIL(kInvalidArgument, fn, ": complex input has no order");
    } else {
      for_each_line(v.sizes, dim, v.strides, idx.strides, [&](int64_t off, int64_t ioff) {
        extreme_line<T>(op, v.data + off * int64_t{sizeof(T)}, v.strides[dim],
                        idx.data + ioff * int64_t{sizeof(int64_t)}, idx.strides[dim],
                        v.sizes[dim]);
      });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(v.dtype), " is not served");
}

constexpr ScanKernels kScan{.scan = scan, .scan_with_indices = scan_with_indices};
AOTRT_REGISTER_KERNELS(ScanKernels, cpu, kScan);

}  // namespace
}  // namespace aotrt::cpu
