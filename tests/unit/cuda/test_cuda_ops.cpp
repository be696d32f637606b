// The CUDA op kernels (src/cuda/ops/) beyond the device-generic rows of
// tests/unit/ops/: results where ATen's CUDA kernels differ from its CPU ones
// (the running value of a scan held in the result dtype), long rows and many
// rows against host references, and the contract of a kernel inside a run:
// everything on the current stream, no host wait and no cudaMalloc once the
// allocator is warm, which a CUDA graph capture of the call proves (a capture
// fails on a sync, on another stream's work and on a cache miss).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "cuda/cuda.h"
#include "op_test_util.h"
#include "ops/ops_testing.h"

namespace aotrt::test {
namespace {

using CumsumFn = AOTITorchError (*)(AtenTensorHandle, int64_t, int32_t*, AtenTensorHandle*);
using TwoOutFn = AOTITorchError (*)(AtenTensorHandle, int64_t, AtenTensorHandle*,
                                    AtenTensorHandle*);
using SortFn = AOTITorchError (*)(AtenTensorHandle, int64_t, int32_t, AtenTensorHandle*,
                                  AtenTensorHandle*);
using TopkFn = AOTITorchError (*)(AtenTensorHandle, int64_t, int64_t, int32_t, int32_t,
                                  AtenTensorHandle*, AtenTensorHandle*);
using KthFn = AOTITorchError (*)(AtenTensorHandle, int64_t, int64_t, int32_t, AtenTensorHandle*,
                                 AtenTensorHandle*);
using IndexPutFn = AOTITorchError (*)(AtenTensorHandle, const AtenTensorHandle**, int64_t,
                                      AtenTensorHandle, int32_t, AtenTensorHandle*);
using UnaryFn = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);
using RandFn = AOTITorchError (*)(const int64_t*, int64_t, int32_t*, int32_t*, int32_t*, int32_t,
                                  int32_t*, AtenTensorHandle*);
using RandpermFn = AOTITorchError (*)(int64_t, int32_t*, int32_t*, int32_t*, int32_t, int32_t*,
                                      AtenTensorHandle*);

// ATen's CUDA cumsum scans in the result dtype (std::plus<scalar_t> through
// CUB): float32 [1e8, 1, 1, -1e8] ends at 0, where ATen's CPU kernel (double
// accumulator) gives 2.
TEST(CudaOpsScan, Float32RunsInFloat32AsAtenCuda) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(cumsum, CumsumFn, b, "cumsum");
  Tensor x = make_tensor(b, Values{kF32, {4}, {1}, 0, {1e8, 1, 1, -1e8}});
  Tensor out;
  CALL_OK(cumsum(x.get(), 0, nullptr, out.out()));
  expect_matches(out.get(), Values{kF32, {4}, {1}, 0, {1e8, 1e8, 1e8, 0}}, "cumsum");
}

// float16: the running sum is a float16 (65504 + 10 rounds to 65504), so
// [65504, 10, -65504] gives [65504, 65504, 0]; ATen's CPU kernel gives 10.
TEST(CudaOpsScan, Float16RoundsEveryStepAsAtenCuda) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(cumsum, CumsumFn, b, "cumsum");
  Tensor x = make_tensor(b, Values{kF16, {3}, {1}, 0, {65504, 10, -65504}});
  Tensor out;
  CALL_OK(cumsum(x.get(), 0, nullptr, out.out()));
  expect_matches(out.get(), Values{kF16, {3}, {1}, 0, {65504, 65504, 0}}, "cumsum");
}

// Long rows (CUB's multi-tile scan with decoupled look-back) and many short
// rows (one key per row): int64 small integers, exact, against a serial sum.
TEST(CudaOpsScan, LongAndManyRowsMatchASerialScan) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(cumsum, CumsumFn, b, "cumsum");
  for (const Dims& sizes : {Dims{3, 200003}, Dims{50000, 7}}) {
    const int64_t R = sizes[0], C = sizes[1];
    Values v{kI64, sizes, row_major(sizes), 0, {}};
    for (int64_t i = 0; i < R * C; ++i) v.values.push_back(static_cast<double>((i * 13 + 5) % 9) - 4);
    Tensor x = make_tensor(b, v);
    Tensor out;
    CALL_OK(cumsum(x.get(), 1, nullptr, out.out()));
    std::vector<double> want(v.values);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t k = 1; k < C; ++k) want[r * C + k] += want[r * C + k - 1];
    expect_matches(out.get(), Values{kI64, sizes, row_major(sizes), 0, want},
                   "cumsum of " + std::to_string(R) + " x " + std::to_string(C));
  }
}

// cummax over long rows: the pair scan's ties (later index) and NaN (sticks,
// each later NaN moves the index) across CUB tiles.
TEST(CudaOpsScan, CummaxLongRowMatchesASerialScan) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(cummax, TwoOutFn, b, "cummax");
  const int64_t n = 100000;
  Values v{kF32, {n}, {1}, 0, {}};
  for (int64_t i = 0; i < n; ++i) v.values.push_back(static_cast<double>((i * 7919) % 1000));
  v.values[70001] = kNaN;
  v.values[90000] = kNaN;
  Tensor x = make_tensor(b, v);
  Tensor values, indices;
  CALL_OK(cummax(x.get(), 0, values.out(), indices.out()));
  std::vector<double> want_v(n), want_i(n);
  double best = v.values[0];
  int64_t best_i = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x_i = v.values[i];
    if (std::isnan(x_i) || (!std::isnan(best) && x_i >= best)) {
      best = x_i;
      best_i = i;
    }
    want_v[i] = best;
    want_i[i] = static_cast<double>(best_i);
  }
  expect_matches(values.get(), Values{kF32, {n}, {1}, 0, want_v}, "values");
  expect_matches(indices.get(), Values{kI64, {n}, {1}, 0, want_i}, "indices");
}

// One long row (CUB's large-segment path) and many short rows, with NaN,
// -0.0 and ties: a stable sort with NaN last against std::stable_sort.
TEST(CudaOpsSort, LongAndManyRowsMatchAStableSort) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(sort, SortFn, b, "sort");
  for (const Dims& sizes : {Dims{1, 300007}, Dims{20000, 9}}) {
    for (int descending : {0, 1}) {
      const int64_t R = sizes[0], C = sizes[1];
      Values v{kF32, sizes, row_major(sizes), 0, {}};
      for (int64_t i = 0; i < R * C; ++i) {
        const int64_t m = (i * 7919 + 3) % 101;
        v.values.push_back(m == 0 ? kNaN : m == 1 ? -0.0 : m == 2 ? 0.0 : static_cast<double>(m % 37) - 18);
      }
      Tensor x = make_tensor(b, v);
      Tensor values, indices;
      CALL_OK(sort(x.get(), 1, descending, values.out(), indices.out()));
      std::vector<double> want_v, want_i;
      for (int64_t r = 0; r < R; ++r) {
        std::vector<int64_t> order(C);
        std::iota(order.begin(), order.end(), 0);
        const double* row = v.values.data() + r * C;
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) {
          const double x_a = row[a], x_c = row[c];
          if (descending) return std::isnan(x_c) ? false : std::isnan(x_a) || x_a > x_c;
          return std::isnan(x_a) ? false : std::isnan(x_c) || x_a < x_c;
        });
        for (int64_t k : order) {
          want_v.push_back(row[k]);
          want_i.push_back(static_cast<double>(k));
        }
      }
      const std::string what = std::to_string(R) + " x " + std::to_string(C) +
                               (descending ? " descending" : " ascending");
      expect_matches(values.get(), Values{kF32, sizes, row_major(sizes), 0, want_v}, what);
      expect_matches(indices.get(), Values{kI64, sizes, row_major(sizes), 0, want_i}, what);
    }
  }
}

// topk of long rows keeps the k extremes in order; kthvalue the k-th.
TEST(CudaOpsSort, TopkAndKthvalueOfLongRows) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(topk, TopkFn, b, "topk");
  AOTRT_FIND_OP(kth, KthFn, b, "kthvalue");
  const int64_t R = 4, C = 65537, k = 100;
  Values v{kF64, {R, C}, {C, 1}, 0, {}};
  for (int64_t i = 0; i < R * C; ++i) v.values.push_back(static_cast<double>((i * 104729) % 1000003));
  Tensor x = make_tensor(b, v);
  Tensor tv, ti, kv, ki;
  CALL_OK(topk(x.get(), k, 1, 1, 1, tv.out(), ti.out()));
  CALL_OK(kth(x.get(), 17, 1, 0, kv.out(), ki.out()));
  std::vector<double> want_tv, want_kv;
  for (int64_t r = 0; r < R; ++r) {
    std::vector<double> row(v.values.begin() + r * C, v.values.begin() + (r + 1) * C);
    std::sort(row.begin(), row.end());
    for (int64_t j = 0; j < k; ++j) want_tv.push_back(row[C - 1 - j]);
    want_kv.push_back(row[16]);
  }
  expect_matches(tv.get(), Values{kF64, {R, k}, {k, 1}, 0, want_tv}, "topk values");
  expect_matches(kv.get(), Values{kF64, {R}, {1}, 0, want_kv}, "kthvalue values");
  const std::vector<double> idx = values_of(ti.get()), got = values_of(tv.get());
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t p = static_cast<int64_t>(idx[r * k + j]);
      ASSERT_TRUE(p >= 0 && p < C);
      EXPECT_EQ(v.values[r * C + p], got[r * k + j]) << "row " << r << " rank " << j;
    }
}

// A scan and a sort captured into a CUDA graph on aotrt's private stream: the
// capture fails if a kernel path waits for the host, uses another stream or
// calls cudaMalloc (the warm-up call filled the allocator's cache). Replays
// give the eager results.
TEST(CudaOpsContract, CumsumAndSortCaptureIntoAGraph) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(cumsum, CumsumFn, b, "cumsum");
  AOTRT_FIND_OP(sort, SortFn, b, "sort");
  // A transposed input: both ops gather rows into a temporary and write back.
  const Dims sizes{64, 33};
  Values v{kF32, sizes, {1, 64}, 0, {}};
  for (int64_t i = 0; i < 64 * 33; ++i) v.values.push_back(static_cast<double>((i * 31) % 17) - 8);
  Tensor x = make_tensor(b, v);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  cuda::Graph graph(0);
  Tensor sum, values, indices;  // declared after the graph: freed before its pool goes
  {
    cuda::Graph::OnPrivateStream on(graph);
    for (int warm = 0; warm < 2; ++warm) {
      CALL_OK(cumsum(x.get(), 1, nullptr, sum.out()));
      CALL_OK(sort(x.get(), 1, 0, values.out(), indices.out()));
    }
    sum.reset();
    values.reset();
    indices.reset();
    capture_warm_calls(
        graph,
        [&] {
          const AOTITorchError rc1 = cumsum(x.get(), 1, nullptr, sum.out());
          const AOTITorchError rc2 = sort(x.get(), 1, 0, values.out(), indices.out());
          return rc1 == AOTI_TORCH_SUCCESS && rc2 == AOTI_TORCH_SUCCESS;
        },
        "test_cuda_ops");
    if (::testing::Test::HasFatalFailure()) return;
  }
  graph.prepare(nullptr);
  graph.replay(nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<double> want_sum(v.values.size());
  const Dims dense = row_major(sizes);
  for (int64_t r = 0; r < 64; ++r) {
    double acc = 0;
    for (int64_t c = 0; c < 33; ++c) {
      acc += v.values[r * 33 + c];
      want_sum[r * 33 + c] = acc;
    }
  }
  expect_matches(sum.get(), Values{kF32, sizes, dense, 0, want_sum}, "cumsum in the graph",
                 /*check_strides=*/false);
  std::vector<double> want_sorted = v.values;
  for (int64_t r = 0; r < 64; ++r) std::sort(want_sorted.begin() + r * 33, want_sorted.begin() + (r + 1) * 33);
  const Meta m = meta(values.get());
  std::vector<double> got = values_of(values.get());
  EXPECT_EQ(m.sizes, sizes);
  EXPECT_TRUE(same_values(got, want_sorted, 0)) << "sort in the graph";
}

// index_put without accumulate: where two values go to one place, CUDA keeps
// one of them (which one is unspecified, Note [Indexing on CUDA]); with
// accumulate, 200000 atomic adds of 1 into 10 places count exactly.
TEST(CudaOpsIndexing, IndexPutDuplicates) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(index_put, IndexPutFn, b, "index_put");
  Tensor t = make_tensor(b, Values{kF32, {3, 3}, {3, 1}, 0, std::vector<double>(9, 0.0)});
  Tensor rows = make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 0}});
  Tensor cols = make_tensor(b, Values{kI64, {2}, {1}, 0, {1, 1}});
  Tensor v = make_tensor(b, Values{kF32, {2}, {1}, 0, {7, 8}});
  AtenTensorHandle rh = rows.get(), ch = cols.get();
  const AtenTensorHandle* ix[] = {&rh, &ch};
  Tensor out;
  CALL_OK(index_put(t.get(), ix, 2, v.get(), 0, out.out()));
  std::vector<double> got = values_of(out.get());
  EXPECT_TRUE(got[1] == 7 || got[1] == 8) << "element (0, 1) is " << got[1];
  got[1] = 0;
  EXPECT_TRUE(same_values(got, std::vector<double>(9, 0.0), 0)) << "elements not indexed";

  const int64_t n = 200000;
  Values many{kI64, {n}, {1}, 0, {}};
  for (int64_t i = 0; i < n; ++i) many.values.push_back(static_cast<double>((i * 7) % 10));
  Tensor acc = make_tensor(b, Values{kF64, {10}, {1}, 0, std::vector<double>(10, 0.5)});
  Tensor where = make_tensor(b, many);
  Tensor one = make_tensor(b, Values{kF64, {}, {}, 0, {1.0}});
  AtenTensorHandle wh = where.get();
  const AtenTensorHandle* ix1[] = {&wh};
  Tensor sum;
  CALL_OK(index_put(acc.get(), ix1, 1, one.get(), 1, sum.out()));
  expect_matches(sum.get(), Values{kF64, {10}, {1}, 0, std::vector<double>(10, n / 10 + 0.5)},
                 "accumulated counts");
}

// nonzero over a large strided input: CUB's stream compaction keeps row-major
// order; the count is read back (Note [Data-dependent sizes on CUDA]).
TEST(CudaOpsIndexing, NonzeroOfALargeTransposedInput) {
  REQUIRE_CUDA_DEVICE();
  const Backend b = cuda_backend();
  AOTRT_FIND_OP(nonzero, UnaryFn, b, "nonzero");
  const int64_t R = 300, C = 1001;
  Values v{kF32, {R, C}, {1, R}, 0, {}};
  for (int64_t i = 0; i < R * C; ++i) v.values.push_back((i * 2654435761u) % 7 == 0 ? 1.0 : 0.0);
  Tensor x = make_tensor(b, v);
  Tensor out;
  CALL_OK(nonzero(x.get(), out.out()));
  std::vector<double> want_rows, want_cols;
  for (int64_t i = 0; i < R * C; ++i) {
    if (v.values[i] != 0) {
      want_rows.push_back(static_cast<double>(i / C));
      want_cols.push_back(static_cast<double>(i % C));
    }
  }
  const int64_t k = static_cast<int64_t>(want_rows.size());
  std::vector<double> want;
  for (int64_t i = 0; i < k; ++i) {
    want.push_back(want_rows[i]);
    want.push_back(want_cols[i]);
  }
  expect_matches(out.get(), Values{kI64, {k, 2}, {1, k}, 0, want}, "nonzero");
}

// The random ops draw the same numbers on both devices for one seed (Note
// [Random streams]): uniform and integer draws exactly, normal draws within
// the last bits of the device's log / cos.
TEST(CudaOpsRandom, SameStreamAsTheCpu) {
  REQUIRE_CUDA_DEVICE();
  const Backend cpu = built_backends()[0], gpu = cuda_backend();
  const int64_t size[] = {4099};
  for (const char* op : {"rand", "randn"}) {
    for (int32_t dtype : {kF32, kF64}) {
      std::vector<double> got[2];
      for (int side = 0; side < 2; ++side) {
        const Backend& b = side == 0 ? cpu : gpu;
        AOTRT_FIND_OP(f, RandFn, b, op);
        aotrt::manual_seed(1234);
        Tensor t;
        CALL_OK(f(size, 1, &dtype, nullptr, nullptr, b.is_cpu() ? -1 : 0, nullptr, t.out()));
        got[side] = values_of(t.get());
      }
      const double tol = std::string(op) == "rand" ? 0.0 : (dtype == kF32 ? 1e-6 : 1e-12);
      EXPECT_TRUE(same_values(got[1], got[0], tol)) << op << " dtype " << dtype;
    }
  }
  std::vector<double> perm[2];
  for (int side = 0; side < 2; ++side) {
    const Backend& b = side == 0 ? cpu : gpu;
    AOTRT_FIND_OP(f, RandpermFn, b, "randperm");
    aotrt::manual_seed(99);
    Tensor t;
    CALL_OK(f(1000, nullptr, nullptr, nullptr, b.is_cpu() ? -1 : 0, nullptr, t.out()));
    perm[side] = values_of(t.get());
  }
  EXPECT_TRUE(same_values(perm[1], perm[0], 0)) << "randperm";
}

}  // namespace
}  // namespace aotrt::test
