// CPU kernels of the sort family (ops/sort.h) on the C++ standard library's
// sorting and selection (Note [Sort semantics]).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cpu/elements.h"
#include "cpu/lines.h"
#include "ops/dispatch.h"
#include "ops/sort.h"

namespace aotrt::cpu {
namespace {
using ops::SortKernels;

// ATen's orders: NaN above every number.
template <typename V>
bool less_nan_last(V a, V b) {
  return (!is_nan(a) && is_nan(b)) || a < b;
}
template <typename V>
bool greater_nan_first(V a, V b) {
  return (is_nan(a) && !is_nan(b)) || a > b;
}

// The computable type of T (float for float16/bfloat16) and a line of it.
template <typename T>
using value_t = decltype(load(std::declval<T>()));
template <typename T>
using Line = std::vector<std::pair<value_t<T>, int64_t>>;

template <typename T>
void gather(Line<T>& line, const char* base, int64_t n, int64_t stride) {
  line.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) line[i] = {load(read_elem<T>(base, i * stride)), i};
}

template <typename F>
void visit_ordered(ScalarType dtype, const char* fn, F&& f) {
  const bool served = visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      AOTRT_FAIL(kInvalidArgument, fn, ": complex input has no order");
    } else {
      f(tag);
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(dtype), " is not served");
}

void sort(const StridedView& v, const StridedView& idx, int64_t dim, bool descending,
          const char* fn) {
  visit_ordered(v.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = v.sizes[dim], vs = v.strides[dim], is = idx.strides[dim];
    for_each_line(v.sizes, dim, v.strides, idx.strides, [&](int64_t off, int64_t ioff) {
      thread_local Line<T> line;
      char* vb = v.data + off * int64_t{sizeof(T)};
      char* ib = idx.data + ioff * int64_t{sizeof(int64_t)};
      gather<T>(line, vb, n, vs);
      if (descending) {
        std::stable_sort(line.begin(), line.end(),
                         [](const auto& a, const auto& b) { return greater_nan_first(a.first, b.first); });
      } else {
        std::stable_sort(line.begin(), line.end(),
                         [](const auto& a, const auto& b) { return less_nan_last(a.first, b.first); });
      }
      for (int64_t i = 0; i < n; ++i) {
        write_elem<T>(vb, i * vs, convert_value<T>(line[i].first));
        write_elem<int64_t>(ib, i * is, line[i].second);
      }
    });
  });
}

// ATen's CPU topk: partial_sort when k is small against n, else nth_element
// and (when sorted) a sort of the first k - 1, on (value, index) pairs in
// index order.
void topk(const StridedView& self, const StridedView& v, const StridedView& idx, int64_t k,
          int64_t dim, bool largest, bool sorted, const char* fn) {
  visit_ordered(self.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = self.sizes[dim], ss = self.strides[dim], vs = v.strides[dim],
                  is = idx.strides[dim];
    const auto greater = [](const auto& a, const auto& b) { return greater_nan_first(a.first, b.first); };
    const auto less = [](const auto& a, const auto& b) { return less_nan_last(a.first, b.first); };
    // Output lines are indexed through v's strides; idx has v's layout.
    for_each_line(self.sizes, dim, self.strides, v.strides, [&](int64_t off, int64_t voff) {
      thread_local Line<T> line;
      gather<T>(line, self.data + off * int64_t{sizeof(T)}, n, ss);
      auto select = [&](auto cmp) {
        if (k * 64 <= n) {
          std::partial_sort(line.begin(), line.begin() + k, line.end(), cmp);
        } else {
          std::nth_element(line.begin(), line.begin() + k - 1, line.end(), cmp);
          if (sorted) std::sort(line.begin(), line.begin() + k - 1, cmp);
        }
      };
      if (largest) {
        select(greater);
      } else {
        select(less);
      }
      char* vb = v.data + voff * int64_t{sizeof(T)};
      char* ib = idx.data + voff * int64_t{sizeof(int64_t)};
      for (int64_t i = 0; i < k; ++i) {
        write_elem<T>(vb, i * vs, convert_value<T>(line[i].first));
        write_elem<int64_t>(ib, i * is, line[i].second);
      }
    });
  });
}

void select(const StridedView& self, const StridedView& v, const StridedView& idx, int64_t dim,
            int64_t which, bool median, bool ignore_nan, const char* fn) {
  visit_ordered(self.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = self.sizes[dim], ss = self.strides[dim];
    for_each_line(self.sizes, dim, self.strides, v.strides, [&](int64_t off, int64_t voff) {
      thread_local Line<T> line;
      gather<T>(line, self.data + off * int64_t{sizeof(T)}, n, ss);
      std::stable_sort(line.begin(), line.end(),
                       [](const auto& a, const auto& b) { return less_nan_last(a.first, b.first); });
      int64_t rank = which;
      if (median) {
        const int64_t nans = std::count_if(line.begin(), line.end(),
                                           [](const auto& e) { return is_nan(e.first); });
        if (ignore_nan && nans == n) {
          // Every element NaN: ATen's nth_element over the indices, whose
          // comparator finds no NaN before another, leaves an index that
          // libstdc++'s introselect picks (0 0 0 2 2 3 5 for n = 1..7); the same
          // call here gives the same index.
          thread_local std::vector<int64_t> order;
          order.resize(static_cast<size_t>(n));
          std::iota(order.begin(), order.end(), int64_t{0});
          std::nth_element(order.begin(), order.begin(), order.end(),
                           [](int64_t, int64_t) { return false; });
          write_elem<T>(v.data, voff, read_elem<T>(self.data + off * int64_t{sizeof(T)}, 0));
          write_elem<int64_t>(idx.data, voff, order[0]);
          return;
        }
        if (ignore_nan) {
          rank = (n - nans - 1) / 2;
        } else {
          rank = nans > 0 ? n - nans : (n - 1) / 2;  // the first NaN, else the lower median
        }
      }
      write_elem<T>(v.data, voff, convert_value<T>(line[rank].first));
      write_elem<int64_t>(idx.data, voff, line[rank].second);
    });
  });
}

void mode(const StridedView& self, const StridedView& v, const StridedView& idx, int64_t dim,
          const char* fn) {
  visit_ordered(self.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = self.sizes[dim], ss = self.strides[dim];
    for_each_line(self.sizes, dim, self.strides, v.strides, [&](int64_t off, int64_t voff) {
      thread_local Line<T> line;
      gather<T>(line, self.data + off * int64_t{sizeof(T)}, n, ss);
      // ATen's CPU kernel, call for call (Note [Mode with NaN]): libstdc++'s
      // std::sort of (value, index) pairs by value with a plain <, then the
      // first longest run of equal neighbours, its last element's index.
      std::sort(line.begin(), line.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      size_t best = 0, best_len = 0;
      for (size_t i = 0; i < line.size();) {
        size_t j = i + 1;
        while (j < line.size() && line[j].first == line[i].first) ++j;
        if (j - i > best_len) {
          best_len = j - i;
          best = j - 1;
        }
        i = j;
      }
      write_elem<T>(v.data, voff, convert_value<T>(line[best].first));
      write_elem<int64_t>(idx.data, voff, line[best].second);
    });
  });
}

// Rows are compared element by element in less_nan_last's order (NaN last);
// equal rows have every element == (NaN never equal). Sorted unique: a
// stable sort of the row numbers, then runs of equal neighbours; consecutive:
// runs in the input's order. Note [Unique].
int64_t unique(const StridedView& rows, const StridedView& out, const StridedView* inverse,
               const StridedView* counts, bool consecutive, const char* fn) {
  int64_t groups = 0;
  visit_ordered(rows.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = rows.sizes[0], m = rows.sizes[1];
    auto at = [&](int64_t r, int64_t k) { return load(read_elem<T>(rows.data, r * m + k)); };
    auto equal = [&](int64_t a, int64_t b) {
      for (int64_t k = 0; k < m; ++k) {
        if (!(at(a, k) == at(b, k))) return false;
      }
      return true;
    };
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) perm[i] = i;
    if (!consecutive) {
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
        for (int64_t k = 0; k < m; ++k) {
          const auto x = at(a, k), y = at(b, k);
          if (less_nan_last(x, y)) return true;
          if (less_nan_last(y, x)) return false;
        }
        return false;
      });
    }
    for (int64_t i = 0; i < n;) {
      int64_t j = i + 1;
      while (j < n && equal(perm[i], perm[j])) ++j;
      for (int64_t k = 0; k < m; ++k) {
        write_elem<T>(out.data, groups * m + k, read_elem<T>(rows.data, perm[i] * m + k));
      }
      if (inverse) {
        for (int64_t k = i; k < j; ++k) write_elem<int64_t>(inverse->data, perm[k], groups);
      }
      if (counts) write_elem<int64_t>(counts->data, groups, j - i);
      ++groups;
      i = j;
    }
  });
  return groups;
}

constexpr SortKernels kSort{
    .sort = sort, .topk = topk, .select = select, .mode = mode, .unique = unique};
AOTRT_REGISTER_KERNELS(SortKernels, cpu, kSort);

}  // namespace
}  // namespace aotrt::cpu
