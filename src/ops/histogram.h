// Histograms with a bin count: histogram.bin_ct (torch.histogram(x, int)) and
// _histogramdd_from_bin_cts (torch.histogramdd(x, [ints])); torch.histc is the
// indexing family's.
//
// Note [Histogram semantics]
// ATen's CPU rules, checked against torch 2.13 eager (gen_ops_reference.py's
// histogram cases):
// - self float32/float64 (ATen has no float16/bfloat16 kernel), read as
//   [N, D] (histogram: D = 1, every element; histogramdd: the last dim);
//   weight (self's dtype, N elements) adds its value instead of 1.
// - Each dim's outer edges are range (pairs, min <= max) or self's min and
//   max along it (an empty self: 0 and 1); non-finite ones are refused, equal
//   ones widened by 0.5 each way. The bins + 1 edges are linspace(min, max)
//   in self's dtype (ATen's linspace: from the start below halfway, from the
//   end after). An element goes to bin i when edges[i] <= x < edges[i + 1],
//   the last bin closed; one outside the edges (or NaN) is not counted.
// - density: hist / (sum(hist) * the bin's volume). hist has self's dtype,
//   sizes bins (contiguous); histogram also returns its edges.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. self [N, D] (any strides),
// weight [N] or null, hist contiguous [bins...], edges[d] [bins[d] + 1]
// contiguous; range: 2 * D values or empty (self's own).
struct HistogramKernels {
  void (*histogramdd)(const StridedView& self, const StridedView* weight,
                      std::span<const double> range, const StridedView& hist,
                      std::span<const StridedView> edges, bool density, const char* fn);
};

struct HistogramResult {
  std::unique_ptr<TensorImpl> hist;
  std::vector<std::unique_ptr<TensorImpl>> edges;
};

// bins: one count per dim of the [N, D] view (histogram: one); dd: self's last
// dim is D.
HistogramResult histogramdd(const TensorImpl& self, std::span<const int64_t> bins,
                            std::optional<std::span<const double>> range,
                            const TensorImpl* weight, bool density, bool dd, const char* fn);

}  // namespace aotrt::ops
