// CPU kernel of the histogram family (ops/histogram.h; Note [Histogram
// semantics]): outer edges, linspace edges, one serial counting pass (ATen's
// order of additions), then density.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "cpu/elements.h"
#include "ops/dispatch.h"
#include "ops/histogram.h"

namespace aotrt::cpu {
namespace {
using ops::HistogramKernels;

template <typename T>
void histogram_of(const StridedView& x, const StridedView* w, std::span<const double> range,
                  const StridedView& hist, std::span<const StridedView> edges, bool density,
                  const char* fn) {
  const int64_t n = x.sizes[0], d = x.sizes[1];
  auto at = [&](int64_t i, int64_t k) {
    return read_elem<T>(x.data, i * x.strides[0] + k * x.strides[1]);
  };
  std::vector<std::vector<T>> e(static_cast<size_t>(d));
  for (int64_t k = 0; k < d; ++k) {
    T lo, hi;
    if (!range.empty()) {
      lo = static_cast<T>(range[static_cast<size_t>(2 * k)]);
      hi = static_cast<T>(range[static_cast<size_t>(2 * k + 1)]);
    } else if (n == 0) {
      lo = 0;
      hi = 1;
    } else {
      lo = hi = at(0, k);
      for (int64_t i = 0; i < n; ++i) {
        const T v = at(i, k);
        if (std::isnan(v) || std::isnan(lo)) {
          lo = hi = v;
          break;
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    AOTRT_CHECK(std::isfinite(lo) && std::isfinite(hi), kInvalidArgument, fn, ": dimension ", k,
                "'s range [", lo, ", ", hi, "] is not finite");
    AOTRT_CHECK(lo <= hi, kInvalidArgument, fn, ": min should not exceed max, but got min ", lo,
                " max ", hi, " for dimension ", k);
    if (lo == hi) {
      lo -= T(0.5);
      hi += T(0.5);
    }
    const int64_t steps = edges[static_cast<size_t>(k)].sizes[0];
    const T step = (hi - lo) / static_cast<T>(steps - 1);
    const int64_t halfway = steps / 2;
    auto& ek = e[static_cast<size_t>(k)];
    for (int64_t i = 0; i < steps; ++i) {
      ek.push_back(i < halfway ? lo + step * static_cast<T>(i)
                               : hi - step * static_cast<T>(steps - i - 1));
      write_elem<T>(edges[static_cast<size_t>(k)].data, i, ek.back());
    }
  }
  const int64_t cells = hist.numel();
  std::vector<T> h(static_cast<size_t>(cells), T(0));
  for (int64_t i = 0; i < n; ++i) {
    int64_t cell = 0;
    bool skip = false;
    for (int64_t k = 0; k < d && !skip; ++k) {
      const auto& ek = e[static_cast<size_t>(k)];
      const T v = at(i, k);
      if (!(v >= ek.front() && v <= ek.back())) {
        skip = true;
        break;
      }
      auto pos = static_cast<int64_t>(std::upper_bound(ek.begin(), ek.end(), v) - ek.begin()) - 1;
      const auto bins = static_cast<int64_t>(ek.size()) - 1;
      if (pos >= bins) pos = bins - 1;  // the last bin is closed
      cell = cell * bins + pos;
    }
    if (skip) continue;
    h[static_cast<size_t>(cell)] += w != nullptr ? read_elem<T>(w->data, i * w->strides[0]) : T(1);
  }
  if (density) {
    T total = 0;
    for (T v : h) total += v;
    for (int64_t c = 0; c < cells; ++c) {
      int64_t rest = c;
      T volume = 1;
      for (int64_t k = d - 1; k >= 0; --k) {
        const auto& ek = e[static_cast<size_t>(k)];
        const auto bins = static_cast<int64_t>(ek.size()) - 1;
        const int64_t pos = rest % bins;
        rest /= bins;
        volume *= ek[static_cast<size_t>(pos + 1)] - ek[static_cast<size_t>(pos)];
      }
      h[static_cast<size_t>(c)] /= total * volume;
    }
  }
  for (int64_t c = 0; c < cells; ++c) write_elem<T>(hist.data, c, h[static_cast<size_t>(c)]);
}

void histogramdd(const StridedView& x, const StridedView* w, std::span<const double> range,
                 const StridedView& hist, std::span<const StridedView> edges, bool density,
                 const char* fn) {
  if (x.dtype == ScalarType::Float64) {
    histogram_of<double>(x, w, range, hist, edges, density, fn);
  } else {
    AOTRT_CHECK(x.dtype == ScalarType::Float32, kUnsupported, fn, ": dtype ",
                dtype_name(x.dtype), " is not served");
    histogram_of<float>(x, w, range, hist, edges, density, fn);
  }
}

constexpr HistogramKernels kHistogram{.histogramdd = histogramdd};
AOTRT_REGISTER_KERNELS(HistogramKernels, cpu, kHistogram);

}  // namespace
}  // namespace aotrt::cpu
