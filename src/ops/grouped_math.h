// The index arithmetic of the grouped matmuls (Note [Grouped matmul] and Note
// [Scaled grouped matmul] in ops/matmul.h), written once for the kernels: which
// operand elements, scales (the scaled one's) and output element group g's
// product at (i, j) reads and writes, and group g's range along the grouped dim. Host and
// device functions (nvcc for src/cuda/grouped_mm.cu, the host compiler for
// src/cpu/ops/matmul.cpp), with the host-only description made from tensors.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "core/tensor.h"

namespace aotrt::ops::grouped_math {

enum GroupedMode : int32_t {
  kRows = 0,   // 2d x 3d: groups of mat_a's rows
  kCols = 1,   // 3d x 2d: groups of mat_b's columns
  kK = 2,      // 2d x 2d: groups of the contraction, out[g]
  kBatch = 3,  // 3d x 3d: out[g] = mat_a[g] @ mat_b[g]
};

// One grouped product, strides in elements. A 2-d operand's (or out's) group
// stride is 0; (g, i, k) of mat_a is at g * a_g + i * a_m + k * a_k, and so on.
struct GroupedGemm {
  int32_t mode = kBatch;
  int64_t groups = 0, M = 0, N = 0, K = 0;  // M, N: out's last two sizes; K: mat_a's last
  int64_t a_g = 0, a_m = 0, a_k = 0, b_g = 0, b_k = 0, b_n = 0;
  int64_t sa_g = 0, sa_m = 0, sb_g = 0, sb_n = 0;
  int64_t o_g = 0, o_m = 0, o_n = 0;

  // The extent of the grouped dim (rows, columns or k); 0 for kBatch.
  AOTRT_HOST_DEVICE int64_t grouped_extent() const {
    return mode == kRows ? M : mode == kCols ? N : mode == kK ? K : 0;
  }
};

// Group g's range [begin, end) along the grouped dim: [offs[g-1], offs[g]),
// from 0 for g = 0, clamped to [0, extent]; empty when reversed.
AOTRT_HOST_DEVICE inline int64_t clamp_to(int64_t v, int64_t extent) {
  return v < 0 ? 0 : v > extent ? extent : v;
}
AOTRT_HOST_DEVICE inline void group_range(const int32_t* offs, int64_t g, int64_t extent,
                                          int64_t& begin, int64_t& end) {
  begin = clamp_to(g == 0 ? 0 : offs[g - 1], extent);
  end = clamp_to(offs[g], extent);
  if (end < begin) end = begin;
}

// The description of out = grouped_mm(mat_a, mat_b, offs) (shapes checked); no scales.
inline GroupedGemm describe(const TensorImpl& out, const TensorImpl& mat_a, const TensorImpl& mat_b,
                            int64_t groups) {
  GroupedGemm d;
  const bool a2 = mat_a.dim() == 2, b2 = mat_b.dim() == 2;
  d.mode = a2 && b2 ? kK : a2 ? kRows : b2 ? kCols : kBatch;
  d.groups = groups;
  const auto as = mat_a.strides(), bs = mat_b.strides(), os = out.strides();
  d.M = out.sizes()[out.dim() - 2];
  d.N = out.sizes()[out.dim() - 1];
  d.K = mat_a.sizes().back();
  if (a2) {
    d.a_m = as[0], d.a_k = as[1];
  } else {
    d.a_g = as[0], d.a_m = as[1], d.a_k = as[2];
  }
  if (b2) {
    d.b_k = bs[0], d.b_n = bs[1];
  } else {
    d.b_g = bs[0], d.b_k = bs[1], d.b_n = bs[2];
  }
  if (out.dim() == 2) {
    d.o_m = os[0], d.o_n = os[1];
  } else {
    d.o_g = os[0], d.o_m = os[1], d.o_n = os[2];
  }
  return d;
}

// The description of out = scaled_grouped_mm(mat_a, mat_b, ...) (shapes checked).
inline GroupedGemm describe(const TensorImpl& out, const TensorImpl& mat_a, const TensorImpl& mat_b,
                            const TensorImpl& scale_a, const TensorImpl& scale_b,
                            int64_t groups) {
  GroupedGemm d = describe(out, mat_a, mat_b, groups);
  if (d.mode == kK) {  // contiguous [G * M] and [G * N] (ATen's pointers: + g * M, + g * N)
    d.sa_g = d.M, d.sa_m = 1, d.sb_g = d.N, d.sb_n = 1;
    return d;
  }
  if (scale_a.dim() == 1) {
    d.sa_m = scale_a.strides()[0];
  } else {
    d.sa_g = scale_a.strides()[0], d.sa_m = scale_a.strides()[1];
  }
  if (scale_b.dim() == 1) {
    d.sb_n = scale_b.strides()[0];
  } else {
    d.sb_g = scale_b.strides()[0], d.sb_n = scale_b.strides()[1];
  }
  return d;
}

}  // namespace aotrt::ops::grouped_math
