// Entry points of the histogram family (ops/histogram.h), CPU only (torch's
// CUDA header has neither). Handles are borrowed; ret* get new owning
// handles, dropped when null (Note [Unused op outputs]). See Note [Op rows].
// _histogramdd_bin_edges has no C shim: the proxy executor serves it (the row
// at the end; Note [Proxy executor]).
#include "ops/histogram.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP_CPU(histogram_bin_ct,
             (AtenTensorHandle self, int64_t bins, const double** range, int64_t range_len_,
              AtenTensorHandle* weight, int32_t density, AtenTensorHandle* ret0,
              AtenTensorHandle* ret1),
             const int64_t counts[] = {bins};
             ops::HistogramResult r = ops::histogramdd(
                 args.tensor(self, "self"), counts,
                 args.optional_floats(range, range_len_, "range"),
                 args.optional_tensor(weight, "weight"), density != 0, /*dd=*/false, fn);
             give(ret0, ret1, std::move(r.hist), std::move(r.edges[0])))

AOTRT_OP_CPU(_histogramdd_from_bin_cts,
             (AtenTensorHandle self, const int64_t* bins, int64_t bins_len_, const double** range,
              int64_t range_len_, AtenTensorHandle* weight, int32_t density,
              AtenTensorHandle* ret0),
             give(ret0, ops::histogramdd(args.tensor(self, "self"),
                                         args.ints(bins, bins_len_, "bins"),
                                         args.optional_floats(range, range_len_, "range"),
                                         args.optional_tensor(weight, "weight"), density != 0,
                                         /*dd=*/true, fn)
                            .hist))

// _histogramdd_bin_edges(Tensor self, int[] bins, *, float[]? range=None,
// Tensor? weight=None, bool density=False) -> Tensor[]: the first half of
// torch.histogramdd(x, [ints]) (the package then calls
// _histogramdd_from_bin_cts). The edges are histogramdd's own (Note
// [Histogram semantics]), so both halves agree; its counting pass is the
// price of sharing them.
AOTRT_PROXY_OP("aten::_histogramdd_bin_edges", {"self", "bins", "range", "weight", "density"},
               runtime::kProxyCpu, [](runtime::ProxyCall& c) {
                 const std::optional<std::vector<double>> range = c.optional_floats("range");
                 ops::HistogramResult r = ops::histogramdd(
                     c.tensor("self"), c.ints("bins"),
                     range ? std::optional<std::span<const double>>(*range) : std::nullopt,
                     c.optional_tensor("weight"), c.bool_arg("density", false), /*dd=*/true,
                     c.what());
                 c.set_output_list(0, std::move(r.edges));
               });
