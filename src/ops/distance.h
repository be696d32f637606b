// Pairwise distances: _cdist_forward (torch.cdist) and _pdist_forward
// (torch.nn.functional.pdist).
//
// Note [Distance semantics]
// As ATen: p >= 0; p = 0 counts the coordinates that differ, p = inf takes
// the largest |difference|, other p give (sum |d|^p)^(1/p). cdist
// broadcasts the batch dims of x1 [..., P, M] and x2 [..., R, M] and writes
// a contiguous [..., P, R]; for p = 2 with compute_mode None (0) and P or R
// above 25, or compute_mode 1, ATen computes sqrt(clamp_min(|x|^2 + |y|^2
// - 2 x.y, 1e-30)) through a matmul, and so does aotrt (accumulating in
// double), so that equal points give 1e-15 as there, not 0 (inductor
// decomposes that path into bmm itself, so only a direct call of the shim
// takes it). pdist of
// [N, M] writes the N(N-1)/2 distances of rows i < j, row-major. Float32 and
// float64. A NaN difference gives NaN for every p (ATen's pdist agrees; its
// cdist inf-norm ignores it, a difference the rows do not test). Both
// backends compute in ops/distance_math.h.
#pragma once

#include <memory>
#include <optional>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. x1 [B, P, M], x2 [B, R, M] and
// out [B, P, R] dense, of one dtype.
struct DistanceKernels {
  void (*cdist)(const TensorImpl& out, const TensorImpl& x1, const TensorImpl& x2, double p,
                bool use_mm);
  // out [N(N-1)/2] dense, self [N, M] dense.
  void (*pdist)(const TensorImpl& out, const TensorImpl& self, double p);
};

std::unique_ptr<TensorImpl> cdist(const TensorImpl& x1, const TensorImpl& x2, double p,
                                  std::optional<int64_t> compute_mode, const char* fn);
std::unique_ptr<TensorImpl> pdist(const TensorImpl& self, double p, const char* fn);

}  // namespace aotrt::ops
