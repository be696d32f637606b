// CPU kernels of the indexing family (ops/indexing.h; Note [Indexing
// semantics]): one element-wise pass in row-major order for gathers and
// scatters (serial where elements may meet, so the last write wins as in
// ATen's CPU kernel), counting and filling for nonzero, std::lower_bound /
// upper_bound for searchsorted.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/wraparound.h"
#include "cpu/elements.h"
#include "ops/dispatch.h"
#include "ops/indexing.h"

namespace aotrt::cpu {
namespace {
using ops::IndexedArgs;
using ops::IndexingKernels;
using ops::IndexMode;

// Calls f(k, offsets) for every element k of `shape` in row-major order, with
// the element offset of each view (strides[v][d] per view).
template <typename F>
void for_each_element(std::span<const int64_t> shape, const std::vector<std::span<const int64_t>>& strides,
                      F&& f) {
  const size_t nd = shape.size(), nv = strides.size();
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  if (total == 0) return;
  std::vector<int64_t> idx(nd, 0), off(nv, 0);
  for (int64_t k = 0; k < total; ++k) {
    f(k, off);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < shape[d]) {
        for (size_t v = 0; v < nv; ++v) off[v] += strides[v][d];
        break;
      }
      for (size_t v = 0; v < nv; ++v) off[v] -= strides[v][d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

int64_t read_index(const StridedView& v, int64_t off) {
  return v.dtype == ScalarType::Int32 ? read_elem<int32_t>(v.data, off) : read_elem<int64_t>(v.data, off);
}

template <typename T>
void indexed_typed(IndexMode mode, const IndexedArgs& a, const char* fn) {
  // Views: dst, src, counts?, then the index tensors.
  std::vector<std::span<const int64_t>> strides{a.dst.strides, a.src.strides};
  const size_t first_index = a.counts ? 3 : 2;
  if (a.counts) strides.push_back(a.counts->strides);
  for (const StridedView& ix : a.indices) strides.push_back(ix.strides);
  const bool gather = mode == IndexMode::kGather;
  std::vector<int64_t> touched;  // kMean: the places to divide
  for_each_element(a.shape, strides, [&](int64_t, const std::vector<int64_t>& off) {
    int64_t extra = 0;
    for (size_t k = 0; k < a.indices.size(); ++k) {
      int64_t i = read_index(a.indices[k], off[first_index + k]);
      const int64_t n = a.index_sizes[k];
      AOTRT_CHECK(i >= (a.negative_indices ? -n : 0) && i < n, kInvalidArgument, fn, ": index ",
                  i, " is out of bounds for dimension ", a.index_dims[k], " with size ", n,
                  a.negative_indices ? "" : " (index out of range in self)");
      if (i < 0) i += n;
      extra += i * a.index_strides[k];
    }
    if (gather) {
      write_elem<T>(a.dst.data, off[0], read_elem<T>(a.src.data, off[1] + extra));
      return;
    }
    const int64_t at = off[0] + extra;
    const T s = read_elem<T>(a.src.data, off[1]);
    int64_t count = 1;
    if (a.counts) {
      const int64_t c_at = off[2] + extra;
      count = read_elem<int64_t>(a.counts->data, c_at);
      write_elem<int64_t>(a.counts->data, c_at, count + 1);
      if (mode == IndexMode::kMean) touched.push_back(at);
    }
    if (mode == IndexMode::kAssign || count == 0) {
      write_elem<T>(a.dst.data, at, s);
      return;
    }
    const auto x = load(read_elem<T>(a.dst.data, at));
    const auto y = load(s);
    using V = std::remove_const_t<decltype(x)>;
    V r = x;
    if constexpr (std::is_same_v<V, bool>) {
      if (mode == IndexMode::kSum || mode == IndexMode::kMean || mode == IndexMode::kMax) r = x || y;
      else r = x && y;
    } else if constexpr (is_complex_v<V>) {
      AOTRT_CHECK(mode == IndexMode::kSum || mode == IndexMode::kProd, kUnsupported, fn,
                  ": this reduction of complex values is not served");
      r = mode == IndexMode::kSum ? x + y : x * y;
    } else {
      switch (mode) {
        case IndexMode::kSum:
        case IndexMode::kMean: r = static_cast<V>(wrapping_add(x, y)); break;
        case IndexMode::kProd: r = static_cast<V>(wrapping_mul(x, y)); break;
        case IndexMode::kMax: r = (is_nan(x) || is_nan(y)) ? (is_nan(x) ? x : y) : std::max(x, y); break;
        case IndexMode::kMin: r = (is_nan(x) || is_nan(y)) ? (is_nan(x) ? x : y) : std::min(x, y); break;
        default: break;
      }
    }
    write_elem<T>(a.dst.data, at, convert_value<T>(r));
  });
  if (mode != IndexMode::kMean) return;
  // Divide each place once by its count (an integer mean rounds down, as
  // ATen's floor division); a place divided is marked by a negated count.
  for_each_element(a.shape, strides, [&](int64_t, const std::vector<int64_t>& off) {
    int64_t extra = 0;
    for (size_t k = 0; k < a.indices.size(); ++k) {
      int64_t i = read_index(a.indices[k], off[first_index + k]);
      if (i < 0) i += a.index_sizes[k];
      extra += i * a.index_strides[k];
    }
    const int64_t c_at = off[2] + extra;
    const int64_t count = read_elem<int64_t>(a.counts->data, c_at);
    if (count <= 0) return;
    write_elem<int64_t>(a.counts->data, c_at, -count);
    const int64_t at = off[0] + extra;
    const auto x = load(read_elem<T>(a.dst.data, at));
    using V = std::remove_const_t<decltype(x)>;
    if constexpr (std::is_same_v<V, bool> || is_complex_v<V>) {
      AOTRT_FAIL(kUnsupported, fn, ": mean of bool or complex values is not served");
    } else if constexpr (std::is_integral_v<V>) {
      const int64_t q = static_cast<int64_t>(x) / count, rem = static_cast<int64_t>(x) % count;
      write_elem<T>(a.dst.data, at, convert_value<T>(static_cast<V>(rem != 0 && (x < 0) ? q - 1 : q)));
    } else {
      write_elem<T>(a.dst.data, at, convert_value<T>(static_cast<V>(x / static_cast<V>(count))));
    }
  });
}

void indexed(IndexMode mode, const IndexedArgs& a, const char* fn) {
  const bool served = visit_dtype(a.dst.dtype, [&](auto tag) { indexed_typed<decltype(tag)>(mode, a, fn); });
  if (!served) {
    AOTRT_CHECK(mode == IndexMode::kGather || mode == IndexMode::kAssign, kUnsupported, fn,
                ": dtype ", dtype_name(a.dst.dtype), " is not served");
    // Moving elements needs no arithmetic: any dtype by its bytes.
    switch (a.dst.itemsize()) {
      case 1: indexed_typed<uint8_t>(mode, a, fn); return;
      case 2: indexed_typed<uint16_t>(mode, a, fn); return;
      case 4: indexed_typed<uint32_t>(mode, a, fn); return;
      case 8: indexed_typed<uint64_t>(mode, a, fn); return;
      default: AOTRT_FAIL(kUnsupported, fn, ": dtype ", dtype_name(a.dst.dtype), " is not served");
    }
  }
}

// Whether element `off` of v is not zero.
bool nonzero_at(const StridedView& v, int64_t off, const char* fn) {
  bool nz = false;
  const bool served = visit_dtype(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto x = load(read_elem<T>(v.data, off));
    if constexpr (is_complex_v<decltype(x)>) {
      nz = x.real() != 0 || x.imag() != 0;
    } else {
      nz = x != decltype(x)(0);
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(v.dtype), " is not served");
  return nz;
}

int64_t count_nonzero(const StridedView& v, const char* fn) {
  int64_t n = 0;
  std::vector<std::span<const int64_t>> strides{v.strides};
  for_each_element(v.sizes, strides, [&](int64_t, const std::vector<int64_t>& off) {
    n += nonzero_at(v, off[0], fn) ? 1 : 0;
  });
  return n;
}

void nonzero(const StridedView& v, const StridedView& out, const char* fn) {
  const int64_t rows = out.sizes[0], nd = v.dim();
  int64_t row = 0;
  std::vector<int64_t> idx(nd, 0);
  std::vector<std::span<const int64_t>> strides{v.strides};
  for_each_element(v.sizes, strides, [&](int64_t k, const std::vector<int64_t>& off) {
    if (row >= rows || !nonzero_at(v, off[0], fn)) return;
    int64_t rest = k;
    for (int64_t d = nd - 1; d >= 0; --d) {
      idx[d] = rest % v.sizes[d];
      rest /= v.sizes[d];
    }
    for (int64_t d = 0; d < nd; ++d) write_elem<int64_t>(out.data, row * out.strides[0] + d * out.strides[1], idx[d]);
    ++row;
  });
}

template <typename V>
bool less_nan_last(V a, V b) {
  return (!is_nan(a) && is_nan(b)) || a < b;
}

void search(const StridedView& sorted, const StridedView& values, const StridedView& out,
            const StridedView* sorter, bool right, const char* fn) {
  const bool served = visit_dtype(values.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      AOTRT_FAIL(kInvalidArgument, fn, ": complex values have no order");
    } else {
      using V = decltype(load(std::declval<T>()));
      const int64_t n = sorted.sizes.back(), ss = sorted.strides.back();
      const bool one_line = sorted.dim() == 1;
      const int64_t vd = values.dim();
      const int64_t line_len = vd == 0 ? 1 : values.sizes[vd - 1];
      std::vector<std::span<const int64_t>> strides{values.strides, out.strides};
      for_each_element(values.sizes, strides, [&](int64_t k, const std::vector<int64_t>& off) {
        // The line of `sorted` this value searches: its leading-dims index.
        const int64_t line = one_line ? 0 : k / line_len;
        int64_t base = 0, sbase = 0;
        if (!one_line) {
          int64_t rest = line;
          for (int64_t d = sorted.dim() - 2; d >= 0; --d) {
            const int64_t i = rest % sorted.sizes[d];
            rest /= sorted.sizes[d];
            base += i * sorted.strides[d];
            if (sorter) sbase += i * sorter->strides[d];
          }
        }
        auto at = [&](int64_t j) {
          const int64_t p = sorter ? read_elem<int64_t>(sorter->data, sbase + j * sorter->strides.back()) : j;
          // The sorter is the caller's data: an index outside the line would read anywhere.
          AOTRT_CHECK(p >= 0 && p < n, kInvalidArgument, fn, ": sorter index ", p,
                      " out of range (the sorted dim has ", n, " elements)");
          return load(read_elem<T>(sorted.data, base + p * ss));
        };
        const V x = load(read_elem<T>(values.data, off[0]));
        int64_t lo = 0, hi = n;
        while (lo < hi) {  // first j with sorted[j] > x (right) or >= x (left)
          const int64_t mid = lo + (hi - lo) / 2;
          const V y = at(mid);
          const bool go_right = right ? !less_nan_last(x, y) : less_nan_last(y, x);
          if (go_right) lo = mid + 1; else hi = mid;
        }
        if (out.dtype == ScalarType::Int32) write_elem<int32_t>(out.data, off[1], static_cast<int32_t>(lo));
        else write_elem<int64_t>(out.data, off[1], lo);
      });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(values.dtype), " is not served");
}

// ATen's histc (histogramdd with linear interpolation): bin positions in the
// input's own arithmetic, the max edge in the last bin.
void histc(const StridedView& self, const StridedView& out, double min, double max,
           const char* fn) {
  const bool served = visit_dtype(self.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_floating_point_v<decltype(load(std::declval<T>()))>) {
      AOTRT_FAIL(kInvalidArgument, fn, ": histc takes floating-point input");
    } else {
      using V = decltype(load(std::declval<T>()));
      std::vector<std::span<const int64_t>> strides{self.strides};
      V lo = static_cast<V>(min), hi = static_cast<V>(max);
      if (lo == hi) {
        bool any = false;
        for_each_element(self.sizes, strides, [&](int64_t, const std::vector<int64_t>& off) {
          const V x = load(read_elem<T>(self.data, off[0]));
          if (!any) lo = hi = x;
          any = true;
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        });
        // An empty input keeps [min, max] as given.
      }
      if (lo == hi) {
        lo -= 1;
        hi += 1;
      }
      AOTRT_CHECK(std::isfinite(lo) && std::isfinite(hi), kInvalidArgument, fn, ": range of [",
                  lo, ", ", hi, "] is not finite");
      const int64_t bins = out.sizes[0];
      std::vector<double> counts(bins, 0.0);
      for_each_element(self.sizes, strides, [&](int64_t, const std::vector<int64_t>& off) {
        const V x = load(read_elem<T>(self.data, off[0]));
        if (!(x >= lo && x <= hi)) return;
        // In long double, whose range holds (x - lo) * bins for any float or double
        // range (a range of [-max, max] overflowed V to inf / inf = NaN, and its cast
        // to int64 was undefined: found by the op_shims fuzzer).
        using L = long double;
        const L where = (static_cast<L>(x) - static_cast<L>(lo)) * static_cast<L>(bins) /
                        (static_cast<L>(hi) - static_cast<L>(lo));
        int64_t pos = where >= static_cast<L>(bins) ? bins - 1 : where > 0 ? static_cast<int64_t>(where) : 0;
        counts[pos] += 1;
      });
      for (int64_t b = 0; b < bins; ++b) write_elem<T>(out.data, b * out.strides[0], convert_value<T>(counts[b]));
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(self.dtype), " is not served");
}

constexpr IndexingKernels kIndexing{.indexed = indexed,
                                    .count_nonzero = count_nonzero,
                                    .nonzero = nonzero,
                                    .search = search,
                                    .histc = histc};
AOTRT_REGISTER_KERNELS(IndexingKernels, cpu, kIndexing);

}  // namespace
}  // namespace aotrt::cpu
