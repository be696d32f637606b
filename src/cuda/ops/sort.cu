// CUDA kernels of the sort family (ops/sort.h): sort, topk, kthvalue,
// median, nanmedian and mode, all on one primitive: every row's positions in
// stable sorted order, from CUB's radix sort (Note [Segmented sort without
// a host wait]) over the dense rows of Note [Rows along a dim].
//
// Note [Sort keys on CUDA]
// ATen orders NaN above +inf (first when descending) and -0.0 equal to
// +0.0 (stable order among them). A radix sort orders bit patterns: a NaN
// with its sign bit set would sort below -inf, and -0.0 below +0.0. So the
// keys CUB sorts are a canonical copy: every NaN made the positive quiet NaN
// (above +inf), -0.0 made +0.0, bool as uint8. The values of the results are
// then gathered from the input by the sorted positions, so they keep their
// exact bits (NaN payloads, the sign of zero).
// topk takes the first k positions of a full sort (largest: descending), so
// its results are always in sorted order, which ATen's sorted=False allows.
// kthvalue takes position k-1 of the ascending order; median position
// (n - 1) / 2 unless the row holds a NaN (then its first NaN, as NaN sorts
// last); nanmedian position (m - 1) / 2 of the m non-NaN values (NaN when
// m is 0); mode walks each sorted row (one thread a row) for its first
// longest run, as the CPU kernel does.
#include "cuda/ops/common.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "ops/dispatch.h"
#include "ops/sort.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;

template <typename T>
using key_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <typename T>
__device__ __forceinline__ key_t<T> canonical_key(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (is_float_v<T>) {
    const auto a = to_acc(v);
    using A = decltype(a);
    if (a != a) return from_acc<T>(A(NAN));  // the positive quiet NaN
    if (a == A(0)) return from_acc<T>(A(0));  // -0.0 -> +0.0
    return v;
  } else {
    return v;
  }
}

template <typename T>
__global__ void make_keys(const T* rows, key_t<T>* keys, int64_t* order, int64_t n) {
  AOTRT_GRID_STRIDE(i, n) {
    keys[i] = canonical_key(rows[i]);
    order[i] = i;
  }
}

__global__ void row_of_each(const int64_t* order, int64_t* rows_of, int64_t n,
                            IntDivider<uint64_t> length) {
  AOTRT_GRID_STRIDE(i, n) { rows_of[i] = static_cast<int64_t>(length.div(static_cast<uint64_t>(order[i]))); }
}

__global__ void position_in_row(const int64_t* order, int64_t* positions, int64_t n,
                                IntDivider<uint64_t> length) {
  AOTRT_GRID_STRIDE(i, n) {
    positions[i] = static_cast<int64_t>(length.divmod(static_cast<uint64_t>(order[i])).mod);
  }
}

// Bits that hold every row number below `count`.
int bits_for(int64_t count) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) < count) ++bits;
  return bits;
}

// Note [Segmented sort without a host wait]
// CUB's DeviceSegmentedSort copies its partition of the segments to the host
// and waits for it (above 500 segments), and DeviceSegmentedRadixSort sorts
// each segment with one block (slow for a few long rows). Instead, as ATen
// does for large inputs, two stable device-wide radix sorts: every element
// by its key, carrying its linear index; then that order by row number
// (only the bits the rows need). The second sort is stable, so each row's
// elements stay in key order, ties in index order.
//
// positions[r, j]: the position in row r of its j-th element in stable
// sorted order.
template <typename T>
void sorted_positions(const T* rows, int64_t count, int64_t length, bool descending,
                      int64_t* positions, int device, cudaStream_t stream) {
  using K = key_t<T>;
  const int64_t n = count * length;
  Temp<K> keys(device, n), sorted_keys(device, n);
  Temp<int64_t> order(device, n), by_key(device, n);
  make_keys<T><<<blocks_for(n), kThreads, 0, stream>>>(rows, keys.get(), order.get(), n);
  AOTRT_CUDA_CHECK_LAUNCH();
  cub_call(device, [&](void* temp, size_t& bytes) {
    return descending ? cub::DeviceRadixSort::SortPairsDescending(
                            temp, bytes, keys.get(), sorted_keys.get(), order.get(),
                            by_key.get(), n, 0, static_cast<int>(sizeof(K) * 8), stream)
                      : cub::DeviceRadixSort::SortPairs(temp, bytes, keys.get(), sorted_keys.get(),
                                                        order.get(), by_key.get(), n, 0,
                                                        static_cast<int>(sizeof(K) * 8), stream);
  });
  const IntDivider<uint64_t> len(static_cast<uint64_t>(length));
  const int64_t* final_order = by_key.get();
  if (count > 1) {
    Temp<int64_t> row_keys(device, n), sorted_rows(device, n);
    row_of_each<<<blocks_for(n), kThreads, 0, stream>>>(by_key.get(), row_keys.get(), n, len);
    AOTRT_CUDA_CHECK_LAUNCH();
    cub_call(device, [&](void* temp, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(temp, bytes, row_keys.get(), sorted_rows.get(),
                                             by_key.get(), order.get(), n, 0, bits_for(count),
                                             stream);
    });
    final_order = order.get();
    position_in_row<<<blocks_for(n), kThreads, 0, stream>>>(final_order, positions, n, len);
  } else {
    position_in_row<<<blocks_for(n), kThreads, 0, stream>>>(final_order, positions, n, len);
  }
  AOTRT_CUDA_CHECK_LAUNCH();
}

// The first k sorted elements of every row: values[r, j] = rows[r, p] and
// indices[r, j] = p for p = positions[r, j].
template <typename T>
__global__ void take_first(const T* rows, const int64_t* positions, int64_t length, int64_t n_out,
                           IntDivider<uint64_t> k, T* values, int64_t* indices) {
  AOTRT_GRID_STRIDE(i, n_out) {
    const DivMod<uint64_t> rj = k.divmod(static_cast<uint64_t>(i));
    const int64_t base = static_cast<int64_t>(rj.div) * length;
    const int64_t p = positions[base + static_cast<int64_t>(rj.mod)];
    values[i] = rows[base + p];
    indices[i] = p;
  }
}

// One element of every ascending-sorted row (Note [Sort keys on CUDA]):
// rank `which`, or for a median the rank the row's NaN count gives.
template <typename T>
__global__ void pick_one(const T* rows, const int64_t* positions, int64_t count, int64_t length,
                         int64_t which, bool median, bool ignore_nan, T* values,
                         int64_t* indices) {
  AOTRT_GRID_STRIDE(r, count) {
    const T* row = rows + r * length;
    const int64_t* pos = positions + r * length;
    int64_t j = which;
    if (median) {
      int64_t lo = 0, hi = length;  // NaN sorts last: the first NaN by bisection
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (is_nan(row[pos[mid]])) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      if (ignore_nan) {
        j = lo == 0 ? 0 : (lo - 1) / 2;  // every element NaN: the first NaN
      } else {
        j = lo < length ? lo : (length - 1) / 2;  // the first NaN, else the lower median
      }
    }
    values[r] = row[pos[j]];
    indices[r] = pos[j];
  }
}

template <typename T>
__device__ __forceinline__ bool same_value(T a, T b) {
  return to_acc(a) == to_acc(b);  // NaN equals nothing, as in ATen's mode
}

// The most frequent value of every ascending-sorted row: the first longest
// run of equal values (the smallest value among the most frequent), and
// the last element of that run (its last occurrence, the sort being stable).
// One thread walks one row.
template <typename T>
__global__ void mode_of_rows(const T* rows, const int64_t* positions, int64_t count,
                             int64_t length, T* values, int64_t* indices) {
  AOTRT_GRID_STRIDE(r, count) {
    const T* row = rows + r * length;
    const int64_t* pos = positions + r * length;
    int64_t best = 0, best_len = 0;
    for (int64_t i = 0; i < length;) {
      int64_t j = i + 1;
      while (j < length && same_value(row[pos[j]], row[pos[i]])) ++j;
      if (j - i > best_len) {
        best_len = j - i;
        best = j - 1;
      }
      i = j;
    }
    values[r] = row[pos[best]];
    indices[r] = pos[best];
  }
}

using Context = OnDevice;

// The rows of `self` along dim, dense, with their stable sorted positions.
template <typename T>
struct SortedRows {
  Rows rows;
  Temp<int64_t> positions;
  SortedRows(const StridedView& self, int64_t dim, bool descending, const Context& c)
      : rows(self, dim, self.dtype, c.stream, /*read=*/true), positions(c.device, rows.numel()) {
    sorted_positions(rows.data<T>(), rows.count(), rows.length(), descending, positions.get(),
                     c.device, c.stream);
  }
};

// The first k of every sorted row into values/indices (views of self's sizes
// with k along dim). `own`: values is also self (sort in place).
template <typename T>
void take_first_k(const SortedRows<T>& sorted, const StridedView& values,
                  const StridedView& indices, int64_t dim, int64_t k, bool own,
                  const Context& c) {
  Rows out_values(values, dim, values.dtype, c.stream, /*read=*/false, own);
  Rows out_indices(indices, dim, ScalarType::Int64, c.stream, /*read=*/false);
  const int64_t n_out = sorted.rows.count() * k;
  take_first<T><<<blocks_for(n_out), kThreads, 0, c.stream>>>(
      sorted.rows.template data<T>(), sorted.positions.get(), sorted.rows.length(), n_out,
      IntDivider<uint64_t>(static_cast<uint64_t>(k)), out_values.data<T>(),
      out_indices.data<int64_t>());
  AOTRT_CUDA_CHECK_LAUNCH();
  out_values.write_back(c.stream);
  out_indices.write_back(c.stream);
}

template <typename F>
void visit_ordered(ScalarType t, const char* fn, F&& f) {
  visit_dtype(t, fn, "self", std::forward<F>(f));
}

void sort(const StridedView& values, const StridedView& indices, int64_t dim, bool descending,
          const char* fn) {
  const Context c(values.device);
  visit_ordered(values.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const SortedRows<T> sorted(values, dim, descending, c);
    take_first_k(sorted, values, indices, dim, sorted.rows.length(), /*own=*/true, c);
  });
}

void topk(const StridedView& self, const StridedView& values, const StridedView& indices,
          int64_t k, int64_t dim, bool largest, bool sorted_output, const char* fn) {
  const Context c(self.device);
  visit_ordered(self.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const SortedRows<T> sorted(self, dim, /*descending=*/largest, c);
    take_first_k(sorted, values, indices, dim, k, /*own=*/false, c);
  });
}

// One element of every ascending-sorted row of self into values/indices
// (dim of size 1): launch(sorted, count, values, indices) queues the kernel.
template <typename Launch>
void one_per_row(const StridedView& self, const StridedView& values, const StridedView& indices,
                 int64_t dim, const char* fn, Launch&& launch) {
  const Context c(self.device);
  visit_ordered(self.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const SortedRows<T> sorted(self, dim, /*descending=*/false, c);
    Rows out_values(values, dim, values.dtype, c.stream, /*read=*/false);
    Rows out_indices(indices, dim, ScalarType::Int64, c.stream, /*read=*/false);
    launch(sorted, c.stream, out_values.data<T>(), out_indices.data<int64_t>());
    AOTRT_CUDA_CHECK_LAUNCH();
    out_values.write_back(c.stream);
    out_indices.write_back(c.stream);
  });
}

void select(const StridedView& self, const StridedView& values, const StridedView& indices,
            int64_t dim, int64_t which, bool median, bool ignore_nan, const char* fn) {
  one_per_row(self, values, indices, dim, fn,
              [&](const auto& sorted, cudaStream_t stream, auto* v, int64_t* i) {
                using T = std::remove_pointer_t<decltype(v)>;
                const int64_t count = sorted.rows.count();
                pick_one<T><<<blocks_for(count), kThreads, 0, stream>>>(
                    sorted.rows.template data<T>(), sorted.positions.get(), count,
                    sorted.rows.length(), which, median, ignore_nan, v, i);
              });
}

void mode(const StridedView& self, const StridedView& values, const StridedView& indices,
          int64_t dim, const char* fn) {
  one_per_row(self, values, indices, dim, fn,
              [&](const auto& sorted, cudaStream_t stream, auto* v, int64_t* i) {
                using T = std::remove_pointer_t<decltype(v)>;
                const int64_t count = sorted.rows.count();
                mode_of_rows<T><<<blocks_for(count), kThreads, 0, stream>>>(
                    sorted.rows.template data<T>(), sorted.positions.get(), count,
                    sorted.rows.length(), v, i);
              });
}

// Note [Unique on CUDA]
// The rows' order, for _unique2 and unique_dim, is their lexicographic
// ascending order as the CPU's stable sort gives it (Note [Sort keys on
// CUDA]: NaN last, -0.0 equal to 0.0): one stable radix sort of the row
// numbers per column, last column first. A row starts a group when it is not
// == to the row before it in that order (NaN equals nothing); a scan of those
// flags numbers the groups, whose count is read back to the host (Note
// [Data-dependent sizes on CUDA]: one wait, the one ATen's CUDA unique makes).
template <typename T>
__global__ void column_keys(const T* rows, const int64_t* perm, int64_t n, int64_t m,
                            int64_t col, key_t<T>* keys) {
  AOTRT_GRID_STRIDE(i, n) { keys[i] = canonical_key(rows[perm[i] * m + col]); }
}

__global__ void iota(int64_t* v, int64_t n) {
  AOTRT_GRID_STRIDE(i, n) { v[i] = i; }
}

template <typename T>
__global__ void group_starts(const T* rows, const int64_t* perm, int64_t n, int64_t m,
                             int64_t* flags) {
  AOTRT_GRID_STRIDE(i, n) {
    bool same = i > 0;
    for (int64_t k = 0; same && k < m; ++k) {
      same = to_acc(rows[perm[i] * m + k]) == to_acc(rows[perm[i - 1] * m + k]);
    }
    flags[i] = same ? 0 : 1;
  }
}

// group[i] (1-based, the inclusive scan of the flags): row perm[i]'s group.
template <typename T>
__global__ void write_groups(const T* rows, const int64_t* perm, const int64_t* flags,
                             const int64_t* group, int64_t n, int64_t m, T* out,
                             int64_t* inverse, int64_t* starts) {
  AOTRT_GRID_STRIDE(i, n) {
    const int64_t g = group[i] - 1;
    if (inverse != nullptr) inverse[perm[i]] = g;
    if (flags[i] == 0) continue;
    starts[g] = i;
    for (int64_t k = 0; k < m; ++k) out[g * m + k] = rows[perm[i] * m + k];
  }
}

__global__ void group_counts(const int64_t* starts, const int64_t* group, int64_t n,
                             int64_t* counts) {
  const int64_t groups = group[n - 1];
  AOTRT_GRID_STRIDE(g, groups) { counts[g] = (g + 1 < groups ? starts[g + 1] : n) - starts[g]; }
}

int64_t unique(const StridedView& rows, const StridedView& out, const StridedView* inverse,
               const StridedView* counts, bool consecutive, const char* fn) {
  const int64_t n = rows.sizes[0], m = rows.sizes[1];
  if (n == 0) return 0;
  const Context c(rows.device);
  int64_t groups = 0;
  visit_ordered(rows.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    using K = key_t<T>;
    const T* data = reinterpret_cast<const T*>(rows.data);
    Temp<int64_t> perm(c.device, n), flags(c.device, n), group(c.device, n), starts(c.device, n);
    iota<<<blocks_for(n), kThreads, 0, c.stream>>>(perm.get(), n);
    AOTRT_CUDA_CHECK_LAUNCH();
    if (!consecutive) {
      Temp<K> keys(c.device, n), sorted_keys(c.device, n);
      Temp<int64_t> next(c.device, n);
      for (int64_t col = m; col-- > 0;) {
        column_keys<T><<<blocks_for(n), kThreads, 0, c.stream>>>(data, perm.get(), n, m, col,
                                                                 keys.get());
        AOTRT_CUDA_CHECK_LAUNCH();
        cub_call(c.device, [&](void* temp, size_t& bytes) {
          return cub::DeviceRadixSort::SortPairs(temp, bytes, keys.get(), sorted_keys.get(),
                                                 perm.get(), next.get(), n, 0,
                                                 static_cast<int>(sizeof(K) * 8), c.stream);
        });
        AOTRT_CUDA_CHECK(cudaMemcpyAsync(perm.get(), next.get(), n * sizeof(int64_t),
                                         cudaMemcpyDeviceToDevice, c.stream));
      }
    }
    group_starts<T><<<blocks_for(n), kThreads, 0, c.stream>>>(data, perm.get(), n, m,
                                                              flags.get());
    AOTRT_CUDA_CHECK_LAUNCH();
    cub_call(c.device, [&](void* temp, size_t& bytes) {
      return cub::DeviceScan::InclusiveSum(temp, bytes, flags.get(), group.get(), n, c.stream);
    });
    write_groups<T><<<blocks_for(n), kThreads, 0, c.stream>>>(
        data, perm.get(), flags.get(), group.get(), n, m, reinterpret_cast<T*>(out.data),
        inverse != nullptr ? reinterpret_cast<int64_t*>(inverse->data) : nullptr, starts.get());
    AOTRT_CUDA_CHECK_LAUNCH();
    if (counts != nullptr) {
      group_counts<<<blocks_for(n), kThreads, 0, c.stream>>>(
          starts.get(), group.get(), n, reinterpret_cast<int64_t*>(counts->data));
      AOTRT_CUDA_CHECK_LAUNCH();
    }
    read_back(group.get() + (n - 1), &groups, 1, c.stream, fn);
  });
  return groups;
}

constexpr ops::SortKernels kSort{
    .sort = sort, .topk = topk, .select = select, .mode = mode, .unique = unique};
using ops::SortKernels;
AOTRT_REGISTER_KERNELS(SortKernels, cuda, kSort);

}  // namespace

namespace op_common {
void sorted_row_positions(const double* rows, int64_t count, int64_t length, bool descending,
                          int64_t* positions, int device, cudaStream_t stream) {
  sorted_positions<double>(rows, count, length, descending, positions, device, stream);
}
}  // namespace op_common
}  // namespace aotrt::cuda
