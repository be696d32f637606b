#include "ops/histogram.h"

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {

HistogramResult histogramdd(const TensorImpl& self, std::span<const int64_t> bins,
                            std::optional<std::span<const double>> range,
                            const TensorImpl* weight, bool density, bool dd, const char* fn) {
  const ScalarType t = self.dtype();
  AOTRT_CHECK(t == ScalarType::Float32 || t == ScalarType::Float64, kInvalidArgument, fn,
              ": self must be float32 or float64 (ATen has no ", dtype_name(t), " kernel)");
  AOTRT_CHECK(!dd || self.dim() >= 1, kInvalidArgument, fn,
              ": self must have at least one dim (its last holds the coordinates)");
  const int64_t d = dd ? self.sizes()[self.dim() - 1] : 1;
  const int64_t n = d == 0 ? 0 : self.numel() / d;
  AOTRT_CHECK(static_cast<int64_t>(bins.size()) == d, kInvalidArgument, fn, ": bins has ",
              bins.size(), " counts for ", d, " dims of self");
  for (size_t i = 0; i < bins.size(); ++i) {
    AOTRT_CHECK(bins[i] > 0, kInvalidArgument, fn, ": bins must be > 0, got ", bins[i],
                " for dim ", i);
  }
  if (range) {
    AOTRT_CHECK(static_cast<int64_t>(range->size()) == 2 * d, kInvalidArgument, fn,
                ": range has ", range->size(), " values; ", 2 * d, " (a min and a max per dim) "
                "are needed");
  }
  if (weight != nullptr) {
    AOTRT_CHECK(weight->dtype() == t, kInvalidArgument, fn, ": weight is ",
                dtype_name(weight->dtype()), ", self ", dtype_name(t),
                " (ATen wants one dtype)");
    AOTRT_CHECK(weight->numel() == n, kInvalidArgument, fn, ": weight has ", weight->numel(),
                " elements; self has ", n, " points");
    AOTRT_CHECK(weight->device() == self.device(), kInvalidArgument, fn, ": weight is on ",
                weight->device().str(), ", self on ", self.device().str());
  }
  HistogramResult r;
  r.hist = empty_strided(bins, contiguous_strides(bins), t, self.device(), fn);
  std::vector<StridedView> edge_views;
  for (int64_t b : bins) {
    const int64_t sizes[] = {b + 1}, strides[] = {1};
    r.edges.push_back(empty_strided(sizes, strides, t, self.device(), fn));
    edge_views.push_back(strided_view(*r.edges.back()));
  }
  // self and weight as [N, D] and [N] views of row-major memory (packed if need be).
  auto packed = [&](const TensorImpl& x) -> std::unique_ptr<TensorImpl> {
    auto out = empty_strided(x.sizes(), contiguous_strides(x.sizes()), x.dtype(), x.device(), fn);
    copy_tensor(*out, x, fn);
    return out;
  };
  std::unique_ptr<TensorImpl> xp = packed(self);
  const int64_t s2[] = {n, d}, s2s[] = {d, 1}, w1[] = {n}, w1s[] = {1};
  auto x2 = make_tensor(xp->storage(), s2, s2s, 0, t, fn);
  std::unique_ptr<TensorImpl> wp, w2;
  std::optional<StridedView> wv;
  if (weight != nullptr) {
    wp = packed(*weight);
    w2 = make_tensor(wp->storage(), w1, w1s, 0, t, fn);
    wv = strided_view(*w2);
  }
  kernel(&HistogramKernels::histogramdd, self.device(), fn)(
      strided_view(*x2), wv ? &*wv : nullptr, range.value_or(std::span<const double>{}),
      strided_view(*r.hist), edge_views, density, fn);
  return r;
}

}  // namespace aotrt::ops
