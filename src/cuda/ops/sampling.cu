// CUDA kernel of token sampling (ops/sampling.h, Note [Token sampling]).
//
// Note [Sampling on CUDA]
// One cooperative launch per call (cudaLaunchAttributeCooperative, which a
// graph captures as one kernel node): each row is cut into `parts` chunks
// of about kChunk logits, one block of kBlock threads a chunk, every block
// of the grid resident at once, and the phases meet at grid-wide barriers
// (cooperative_groups grid.sync) instead of kernel boundaries or host waits.
// Per row:
// 1. Each block: the packed argmax and the largest sampling key of its
//    chunk, as partials; zeroes its share of the row's histograms. [sync]
//    Every block reduces the partials; a greedy row, or one with nothing to
//    draw, is written here by its block 0.
// 2. top-k: a radix select on the keys, digits of 11, 11 and 10 bits from the
//    top: each block counts its keys that match the prefix found so far into
//    a shared histogram and adds it to the row's global one (integer
//    atomics); [sync]; every block then finds the same bucket, the one where
//    the count from the top reaches the rank still sought.
// 3. top-p: the same descent over the top-k kept keys with the weights W of
//    Note [Token sampling] instead of counts, to the bucket where the weight
//    from the top first reaches p * Z (Z: the first digit's total). It ends at
//    the key `cut` of the last kept run, the weight above it and how many of
//    the run stay (kept_in_run); without top-p, cut is top-k's key and the
//    whole run stays.
// 4. Each block: its weight above cut and its count of keys equal to cut, as
//    partials. [sync] Every block derives each block's kept weight (the run's
//    members kept in index order, so block by block), the total and the
//    target; the block holding the target scans its chunk in index order and
//    writes the token and the step.
// A phase no row of the launch needs is skipped by every block alike (the
// barriers must pair up). Integer atomics and integer sums make the token the
// same on every run. Every logit is read again in each phase, from L1/L2
// (one row of 128k float32 is 0.5 MB). Scratch, per row: 3 count and 3 weight
// histograms and the partials, one DeviceBuffer from the caching allocator
// (a graph's capture reuses its warm-up's block); data other blocks wrote is
// read with __ldcg (L2), never through a stale L1 line.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/sampling.h"
#include "ops/sampling_math.h"

namespace aotrt::cuda {
namespace {
using namespace ops::sampling_math;
using op_common::OnDevice;
using op_common::to_acc;
using ops::SampleArgs;
using ops::SamplingKernels;
namespace cg = cooperative_groups;

constexpr int kBlock = 512;                // threads a block
constexpr int64_t kChunk = 4096;           // logits a block, the aim
constexpr int kItems = 8;                  // per thread in the final scan's tiles
constexpr int kBins = 2048;                // of the widest digit
constexpr int kDigits = 3;
__host__ __device__ constexpr int digit_shift(int d) { return d == 0 ? 21 : d == 1 ? 10 : 0; }
__host__ __device__ constexpr int digit_bins(int d) { return d == 2 ? 1024 : 2048; }
// Whether `key` has the bits of `prefix` above digit d.
__device__ __forceinline__ bool matches(uint32_t key, uint32_t prefix, int d) {
  return d == 0 || (key >> digit_shift(d - 1)) == (prefix >> digit_shift(d - 1));
}

// One row's scratch, `bytes(parts)` of it: histograms first (zeroed as one
// span of 64-bit words), then the per-block partials.
struct RowScratch {
  uint64_t* weight_hist;  // [kDigits][kBins]
  uint32_t* count_hist;   // [kDigits][kBins]
  uint64_t* part_arg;     // [parts]: packed argmax
  uint64_t* part_weight;  // [parts]: weight above cut
  uint32_t* part_max;     // [parts]: largest sampling key
  uint32_t* part_run;     // [parts]: keys equal to cut
  static constexpr int64_t kHistWords = int64_t{kDigits} * kBins * 12 / 8;
  static size_t bytes(int parts) {
    const size_t b = static_cast<size_t>(kHistWords) * 8 + static_cast<size_t>(parts) * 24;
    return (b + 255) / 256 * 256;
  }
  __device__ RowScratch(char* base, int parts) {
    weight_hist = reinterpret_cast<uint64_t*>(base);
    count_hist = reinterpret_cast<uint32_t*>(weight_hist + kDigits * kBins);
    part_arg = reinterpret_cast<uint64_t*>(count_hist + kDigits * kBins);
    part_weight = part_arg + parts;
    part_max = reinterpret_cast<uint32_t*>(part_weight + parts);
    part_run = part_max + parts;
  }
};

// The rows one launch serves and how it cuts them.
struct Launch {
  int64_t row0 = 0, rows = 0;
  int parts = 1;      // blocks a row
  int64_t chunk = 0;  // logits a block
  int bits = 0;       // F of Note [Token sampling]
  char* scratch = nullptr;
  size_t row_bytes = 0;
};

// Which phases some row of the launch needs.
enum : int { kAnySample = 1, kAnyTopK = 2, kAnyTopP = 4 };

using BlockReduce = cub::BlockReduce<uint64_t, kBlock>;
using BlockScan = cub::BlockScan<uint64_t, kBlock>;
struct Shared {
  union {
    BlockReduce::TempStorage reduce;
    BlockScan::TempStorage scan;
  } temp;
  uint64_t hist[kBins];
  uint64_t value[2];
  int bucket;
  int flags;
  int owner;
};

__device__ __forceinline__ void add64(uint64_t* p, uint64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
// Loads of what other blocks wrote, from L2 (an L1 line of this SM may be stale).
__device__ __forceinline__ uint64_t load_l2(const uint64_t* p) {
  return __ldcg(reinterpret_cast<const unsigned long long*>(p));
}
__device__ __forceinline__ uint64_t load_l2(const uint32_t* p) {
  return __ldcg(reinterpret_cast<const unsigned int*>(p));
}

__device__ uint64_t block_max(Shared& sh, uint64_t v) {
  __syncthreads();
  const uint64_t m = BlockReduce(sh.temp.reduce).Reduce(v, ::cuda::maximum<>{});
  if (threadIdx.x == 0) sh.value[0] = m;
  __syncthreads();
  return sh.value[0];
}
__device__ uint64_t block_sum(Shared& sh, uint64_t v) {
  __syncthreads();
  const uint64_t m = BlockReduce(sh.temp.reduce).Sum(v);
  if (threadIdx.x == 0) sh.value[0] = m;
  __syncthreads();
  return sh.value[0];
}
// Exclusive prefix sum over the block's threads; `total` gets the sum of all.
__device__ uint64_t block_exclusive(Shared& sh, uint64_t v, uint64_t& total) {
  __syncthreads();
  uint64_t before = 0;
  BlockScan(sh.temp.scan).ExclusiveSum(v, before, total);
  return before;
}

__device__ void clear_hist(Shared& sh) {
  for (int b = threadIdx.x; b < kBins; b += kBlock) sh.hist[b] = 0;
  __syncthreads();
}
// Adds the block's histogram to the row's (only its nonzero buckets).
template <typename G>
__device__ void flush_hist(const Shared& sh, int bins, G* global) {
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += kBlock) {
    const uint64_t h = sh.hist[b];
    if (h == 0) continue;
    if constexpr (sizeof(G) == 8) {
      add64(reinterpret_cast<uint64_t*>(global) + b, h);
    } else {
      atomicAdd(reinterpret_cast<unsigned int*>(global) + b, static_cast<unsigned int>(h));
    }
  }
}
template <typename G>
__device__ void load_hist(Shared& sh, int bins, const G* global) {
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += kBlock) sh.hist[b] = load_l2(global + b);
  __syncthreads();
}

// The bucket of sh.hist[0, bins) where the sum from the top bucket down
// first satisfies `reaches` (monotone, false at 0, true at the total), and
// the sum of the buckets above it. make_reaches(total) gives `reaches`.
struct Descent {
  int bucket;
  uint64_t above;
};
template <typename MakeReaches>
__device__ Descent descend(Shared& sh, int bins, MakeReaches make_reaches) {
  const int per = bins / kBlock;
  const int top = bins - 1 - static_cast<int>(threadIdx.x) * per;  // this thread's first
  uint64_t sum = 0;
  for (int j = 0; j < per; ++j) sum += sh.hist[top - j];
  uint64_t total = 0;
  uint64_t cum = block_exclusive(sh, sum, total);
  const auto reaches = make_reaches(total);
  for (int j = 0; j < per; ++j) {
    const uint64_t h = sh.hist[top - j];
    if (!reaches(cum) && reaches(cum + h)) {
      sh.bucket = top - j;
      sh.value[1] = cum;
    }
    cum += h;
  }
  __syncthreads();
  return {sh.bucket, sh.value[1]};
}

__device__ void write_token(const SampleArgs& a, int64_t row, int64_t token, uint64_t step) {
  for (int o = 0; o < a.outputs; ++o) a.out[o][row * a.out_stride[o]] = token;
  a.step[row * a.step_stride] = step + 1;
}

template <typename T>
__global__ void __launch_bounds__(kBlock, 2) sample_kernel(const SampleArgs a, const Launch l) {
  __shared__ Shared sh;
  const cg::grid_group grid = cg::this_grid();
  const int tid = static_cast<int>(threadIdx.x);
  const int c = static_cast<int>(blockIdx.x % static_cast<unsigned>(l.parts));
  const int64_t row = l.row0 + blockIdx.x / static_cast<unsigned>(l.parts);
  const int64_t begin = c * l.chunk;
  const int64_t end = begin + l.chunk < a.vocab ? begin + l.chunk : a.vocab;
  const T* x = static_cast<const T*>(a.logits) + row * a.row_stride;
  const int64_t col = a.col_stride;
  RowScratch rs(l.scratch + (row - l.row0) * l.row_bytes, l.parts);
  const RowRule rule = row_rule(a.params[row], a.vocab);

  if (tid == 0) sh.flags = 0;
  __syncthreads();
  for (int64_t r = tid; r < l.rows; r += kBlock) {
    const RowRule o = row_rule(a.params[l.row0 + r], a.vocab);
    const int f = o.greedy ? 0 : kAnySample | (o.top_k ? kAnyTopK : 0) | (o.top_p ? kAnyTopP : 0);
    if (f != 0) atomicOr(&sh.flags, f);
  }
  __syncthreads();
  const int flags = sh.flags;

  // 1. Partials of the argmax and of the largest key.
  uint64_t arg = 0, max_key = 0;
  for (int64_t i = begin + tid; i < end; i += kBlock) {
    const float v = to_acc(x[i * col]);
    arg = ::cuda::maximum<>{}(arg, argmax_pack(v, i));
    if (!rule.greedy) {
      max_key = ::cuda::maximum<>{}(max_key, uint64_t{sample_key(v / rule.temperature)});
    }
  }
  arg = block_max(sh, arg);
  max_key = block_max(sh, max_key);
  if (tid == 0) {
    rs.part_arg[c] = arg;
    rs.part_max[c] = static_cast<uint32_t>(max_key);
  }
  if ((flags & kAnySample) != 0) {
    auto* words = reinterpret_cast<uint64_t*>(rs.weight_hist);
    for (int64_t w = int64_t{c} * kBlock + tid; w < RowScratch::kHistWords;
         w += int64_t{l.parts} * kBlock) {
      words[w] = 0;
    }
  }
  const uint64_t step = a.step[row * a.step_stride];
  grid.sync();

  arg = 0;
  max_key = 0;
  for (int j = tid; j < l.parts; j += kBlock) {
    arg = ::cuda::maximum<>{}(arg, load_l2(rs.part_arg + j));
    max_key = ::cuda::maximum<>{}(max_key, load_l2(rs.part_max + j));
  }
  arg = block_max(sh, arg);
  max_key = block_max(sh, max_key);
  const bool draw = !rule.greedy && drawable(static_cast<uint32_t>(max_key));
  if (!draw && c == 0 && tid == 0) write_token(a, row, argmax_index(arg), step);
  if ((flags & kAnySample) == 0) return;  // every block of the grid alike
  const float max_s = key_float(static_cast<uint32_t>(max_key));
  const float temperature = rule.temperature;
  auto s_at = [&](int64_t i) { return to_acc(x[i * col]) / temperature; };

  // 2. top-k: the k-th largest key.
  uint32_t kth = 0;
  if ((flags & kAnyTopK) != 0) {
    const bool mine = draw && rule.top_k;
    uint32_t prefix = 0;
    uint64_t rank = static_cast<uint64_t>(rule.k);  // still sought below the prefix
    for (int d = 0; d < kDigits; ++d) {
      const int shift = digit_shift(d), bins = digit_bins(d);
      if (mine) {
        clear_hist(sh);
        for (int64_t i = begin + tid; i < end; i += kBlock) {
          const uint32_t key = sample_key(s_at(i));
          if (matches(key, prefix, d)) add64(&sh.hist[(key >> shift) & (bins - 1)], 1);
        }
        flush_hist(sh, bins, rs.count_hist + d * kBins);
      }
      grid.sync();
      if (mine) {
        load_hist(sh, bins, rs.count_hist + d * kBins);
        const Descent r = descend(sh, bins, [rank](uint64_t) {
          return [rank](uint64_t cum) { return cum >= rank; };
        });
        prefix |= static_cast<uint32_t>(r.bucket) << shift;
        rank -= r.above;
      }
    }
    if (mine) kth = prefix;
  }

  // 3. top-p: the last kept run.
  uint32_t cut = kth;
  uint64_t run_keep = ~uint64_t{0};
  if ((flags & kAnyTopP) != 0) {
    const bool mine = draw && rule.top_p;
    uint32_t prefix = 0;
    uint64_t above = 0;
    double limit = 0;
    for (int d = 0; d < kDigits; ++d) {
      const int shift = digit_shift(d), bins = digit_bins(d);
      if (mine) {
        clear_hist(sh);
        for (int64_t i = begin + tid; i < end; i += kBlock) {
          const float s = s_at(i);
          const uint32_t key = sample_key(s);
          if (key < kth || !matches(key, prefix, d)) continue;
          const uint64_t w = fixed_weight(s, max_s, l.bits);
          if (w != 0) add64(&sh.hist[(key >> shift) & (bins - 1)], w);
        }
        flush_hist(sh, bins, rs.weight_hist + d * kBins);
      }
      grid.sync();
      if (mine) {
        load_hist(sh, bins, rs.weight_hist + d * kBins);
        const Descent r = descend(sh, bins, [&](uint64_t total) {
          if (d == 0) limit = top_p_limit(rule.p, total);
          const double lim = limit;
          const uint64_t base = above;
          return [lim, base](uint64_t cum) { return static_cast<double>(base + cum) >= lim; };
        });
        prefix |= static_cast<uint32_t>(r.bucket) << shift;
        above += r.above;
      }
    }
    if (mine) {
      cut = prefix;
      run_keep = kept_in_run(above, fixed_weight(key_float(cut), max_s, l.bits), limit,
                             static_cast<uint64_t>(a.vocab));
    }
  }
  const uint64_t run_w = fixed_weight(key_float(cut), max_s, l.bits);

  // 4. Partials of the weight above cut and of the run at cut, then the draw.
  uint64_t weight = 0, run = 0;
  if (draw) {
    for (int64_t i = begin + tid; i < end; i += kBlock) {
      const float s = s_at(i);
      const uint32_t key = sample_key(s);
      if (key > cut) {
        weight += fixed_weight(s, max_s, l.bits);
      } else if (key == cut) {
        ++run;
      }
    }
    weight = block_sum(sh, weight);
    run = block_sum(sh, run);
    if (tid == 0) {
      rs.part_weight[c] = weight;
      rs.part_run[c] = static_cast<uint32_t>(run);
    }
  }
  grid.sync();
  if (!draw) return;

  // Thread j stands for block j of the row.
  uint64_t run_j = 0, weight_j = 0;
  if (tid < l.parts) {
    run_j = load_l2(rs.part_run + tid);
    weight_j = load_l2(rs.part_weight + tid);
  }
  if (tid == 0) sh.owner = -1;
  uint64_t total = 0;
  const uint64_t run_before_j = block_exclusive(sh, run_j, total);
  const uint64_t run_kept_j =
      run_keep > run_before_j ? ::cuda::minimum<>{}(run_keep - run_before_j, run_j) : 0;
  const uint64_t kept_j = weight_j + run_kept_j * run_w;
  const uint64_t kept_before_j = block_exclusive(sh, kept_j, total);
  if (total == 0) {  // no weight left: the greedy token (not reached when drawable)
    if (c == 0 && tid == 0) write_token(a, row, argmax_index(arg), step);
    return;
  }
  const uint64_t target = draw_target(draw_word(a.params[row].seed, step, row), total);
  if (tid < l.parts && kept_before_j <= target && target - kept_before_j < kept_j) {
    sh.owner = tid;
    sh.value[0] = target - kept_before_j;
    sh.value[1] = run_kept_j;
  }
  __syncthreads();
  if (c != sh.owner) return;
  const uint64_t local_target = sh.value[0], local_run_keep = sh.value[1];

  // The owner's chunk in index order, tile by tile: kItems logits a thread,
  // their weights recomputed from the keys rather than held (registers).
  auto weight_of = [&](uint32_t key, uint64_t& run_rank) -> uint64_t {
    if (key > cut) return fixed_weight(key_float(key), max_s, l.bits);
    if (key != cut) return 0;
    return run_rank++ < local_run_keep ? run_w : 0;
  };
  uint64_t carry_weight = 0, carry_run = 0;
  for (int64_t tile = begin; tile < end; tile += int64_t{kBlock} * kItems) {
    const int64_t first = tile + int64_t{tid} * kItems;
    const int64_t left = end - first;
    const int items = left <= 0 ? 0 : left < kItems ? static_cast<int>(left) : kItems;
    uint32_t key[kItems];
    uint64_t runs = 0;
    for (int j = 0; j < kItems; ++j) {
      key[j] = j < items ? sample_key(s_at(first + j)) : 0;
      if (j < items && key[j] == cut) ++runs;
    }
    uint64_t tile_runs = 0;
    const uint64_t run_rank = carry_run + block_exclusive(sh, runs, tile_runs);
    uint64_t mine = 0, rank = run_rank;
    for (int j = 0; j < items; ++j) mine += weight_of(key[j], rank);
    uint64_t tile_weight = 0;
    uint64_t lo = carry_weight + block_exclusive(sh, mine, tile_weight);
    if (lo <= local_target && local_target - lo < mine) {
      rank = run_rank;
      for (int j = 0; j < items; ++j) {
        lo += weight_of(key[j], rank);
        if (lo > local_target) {
          write_token(a, row, first + j, step);
          break;
        }
      }
    }
    carry_weight += tile_weight;
    carry_run += tile_runs;
    if (local_target < carry_weight) break;  // the same in every thread
  }
}

// Blocks of sample_kernel<T> that fit on the device at once (cached).
template <typename T>
int coresident_blocks(int device, const char* fn) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices];  // zero: not asked yet
  if (device < kMaxDevices) {
    const int n = cached[device].load(std::memory_order_relaxed);
    if (n > 0) return n;
  }
  int cooperative = 0, sms = 0, per_sm = 0;
  AOTRT_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  AOTRT_CHECK(cooperative != 0, kUnsupported, fn, ": CUDA device ", device,
              " has no cooperative launches, which the sampling kernel needs");
  AOTRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  AOTRT_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sample_kernel<T>, kBlock, 0));
  const int n = sms * per_sm;
  AOTRT_CHECK(n > 0, kUnsupported, fn, ": no block of the sampling kernel fits on CUDA device ",
              device);
  if (device < kMaxDevices) cached[device].store(n, std::memory_order_relaxed);
  return n;
}

template <typename T>
void launch(const SampleArgs& a, const char* fn) {
  const OnDevice on(a.device);
  const int capacity = coresident_blocks<T>(on.device, fn);
  const int64_t wave = std::min<int64_t>(a.rows, capacity);
  const int parts = static_cast<int>(std::clamp<int64_t>(
      (a.vocab + kChunk - 1) / kChunk, 1, std::min<int64_t>(kBlock, capacity / wave)));
  const int64_t chunk = (a.vocab + parts - 1) / parts;
  const size_t row_bytes = RowScratch::bytes(parts);
  DeviceBuffer scratch(on.device, row_bytes * static_cast<size_t>(wave));
  for (int64_t row0 = 0; row0 < a.rows; row0 += wave) {
    const Launch l{row0,  std::min(wave, a.rows - row0), parts, chunk, fixed_bits(a.vocab),
                   static_cast<char*>(scratch.data()), row_bytes};
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(l.rows * parts));
    config.blockDim = dim3(kBlock);
    config.dynamicSmemBytes = 0;
    config.stream = on.stream;
    cudaLaunchAttribute cooperative[1];
    cooperative[0].id = cudaLaunchAttributeCooperative;
    cooperative[0].val.cooperative = 1;
    config.attrs = cooperative;
    config.numAttrs = 1;
    AOTRT_CUDA_CHECK(cudaLaunchKernelEx(&config, sample_kernel<T>, a, l));
  }
}

void sample(const SampleArgs& a, const char* fn) {
  switch (a.dtype) {
    case ScalarType::Float32: return launch<float>(a, fn);
    case ScalarType::BFloat16: return launch<__nv_bfloat16>(a, fn);
    case ScalarType::Float16: return launch<__half>(a, fn);
    default: AOTRT_FAIL(kInternal, fn, ": logits of dtype ", dtype_name(a.dtype));
  }
}

constexpr SamplingKernels kSampling{.sample = sample};
AOTRT_REGISTER_KERNELS(SamplingKernels, cuda, kSampling);

}  // namespace
}  // namespace aotrt::cuda
