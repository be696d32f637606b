// A few rows times a matrix whose rows lie along K, the decode step's product
// (Note [Few-row products]).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace aotrt::cpu {

// The most rows few_rows_product serves.
inline constexpr int64_t kMaxFewRows = 8;

// Note [Few-row products]
// sums[i * ldo + n] = sum over k of x[i * K + k] * w[n * ldw + k], for i < M
// (1 <= M <= kMaxFewRows) and n < N: x float32 dense, w int8, bfloat16 or
// float16 (the weight of a linear layer as [N, K] rows, read in place). At
// decode this is memory-bound: each tile of weight rows is read once for all
// M rows, 8 values at a time widened to float32 in registers (AVX2: vpmovsxbd
// and vcvtdq2ps, a 16-bit shift, vcvtph2ps; a portable loop elsewhere, Note
// [Hand-written AVX2 kernels] in cpu/isa.h) and multiply-added into 8-lane
// float32 sums, which are added across lanes at the end. The sums are not in
// k order: they agree with ATen's to float32 accumulation error. Tiles of 16
// weight rows are split across OpenMP threads (static: each thread's rows one
// run), and each tile prefetches the next tile's lines as it reads its own
// (4 KiB pages end the hardware prefetcher's streams). At M = 1 a weight row
// is one stream; at M >= 2 the AVX2 kernel reads x packed (the M rows' 8
// values of one k step together) in blocks of K whose M rows fit 16 KiB of L1,
// so the FMAs, M per widened weight vector, do not wait on L2. Measured with
// bench/int8_gemv.cpp: int8 from DRAM at M = 1, 16-19 GB/s (was 13.5); at
// M = 8 the FMAs bound it, 4-7 GB/s (was 2.5-3.4; 2 threads, AMD EPYC).
void few_rows_product(const float* x, int64_t M, int64_t K, const void* w, ScalarType wdtype,
                      int64_t ldw, int64_t N, float* sums, int64_t ldo);

}  // namespace aotrt::cpu
