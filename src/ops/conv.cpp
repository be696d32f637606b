#include "ops/conv.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {

std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params,
                                        const char* fn) {
  return kernel(&ConvKernels::convolution, input.device(), fn)(input, weight, bias, params, fn);
}

namespace {

// The device's fused convolution (ConvKernels::convolution_fused), or null
// where it has none or declines this one.
std::unique_ptr<TensorImpl> convolution_fused(const TensorImpl& input, const TensorImpl& weight,
                                              const TensorImpl* bias, const ConvParams& params,
                                              const ConvFusion& fusion) {
  const ConvKernels* table = input.device().is_cpu() ? KernelRegistry<ConvKernels>::cpu
                                                      : KernelRegistry<ConvKernels>::cuda;
  if (table == nullptr || table->convolution_fused == nullptr) return nullptr;
  return table->convolution_fused(input, weight, bias, params, fusion);
}

}  // namespace

std::unique_ptr<TensorImpl> convolution_pointwise(const TensorImpl& input,
                                                  const TensorImpl& weight,
                                                  const TensorImpl* bias,
                                                  const ConvParams& params,
                                                  const TensorImpl* other, BinaryPost binary,
                                                  const std::optional<PostOp>& unary,
                                                  const char* fn) {
  AOTRT_CHECK(input.dim() >= 3 && input.dim() <= 5, kInvalidArgument, fn, ": X is ", input.dim(),
              "-d; a fused convolution takes 3-, 4- or 5-d input");
  // A transposed conv's prepacked weight is oneDNN's deconvolution weight,
  // [O, I/g, k...] (its torch sizes say so), where aten.convolution wants
  // [I, O/g, k...]: the same elements with (per group) dims 0 and 1 swapped,
  // a view for one group, else a packed copy.
  std::unique_ptr<TensorImpl> swapped;
  const TensorImpl* w = &weight;
  if (params.transposed) {
    const int64_t g = params.groups;
    AOTRT_CHECK(g >= 1 && weight.dim() >= 3 && weight.sizes()[0] % g == 0, kInvalidArgument, fn,
                ": W of sizes ", sizes_text(weight.sizes()), " is no deconvolution weight of ", g,
                " group(s)");
    const auto ws = weight.sizes(), wt = weight.strides();
    const int64_t og = ws[0] / g, ig = ws[1];
    // An empty W divides by any groups; the input's channels, groups * I/g,
    // must still be a number.
    AOTRT_CHECK(ig == 0 || g <= std::numeric_limits<int64_t>::max() / ig, kInvalidArgument, fn,
                ": groups ", g, " times W's dim 1 (", ig, ") overflows int64");
    // [g, O/g, I/g, k...] -> [g, I/g, O/g, k...]
    std::vector<int64_t> sizes{g, ig, og}, strides{checked_mul(og, wt[0], fn), wt[1], wt[0]};
    for (int64_t d = 2; d < weight.dim(); ++d) {
      sizes.push_back(ws[d]);
      strides.push_back(wt[d]);
    }
    std::vector<int64_t> torch_sizes{g * ig, og};
    torch_sizes.insert(torch_sizes.end(), ws.begin() + 2, ws.end());
    if (g == 1) {
      std::vector<int64_t> torch_strides{wt[1], wt[0]};
      torch_strides.insert(torch_strides.end(), wt.begin() + 2, wt.end());
      swapped = make_tensor(weight.storage(), torch_sizes, torch_strides, weight.storage_offset(),
                            weight.dtype(), fn);
    } else {
      auto grouped = make_tensor(weight.storage(), sizes, strides, weight.storage_offset(),
                                 weight.dtype(), fn);
      auto packed = empty_strided(sizes, contiguous_strides(sizes), weight.dtype(),
                                  weight.device(), fn);
      copy_tensor(*packed, *grouped, fn);
      swapped = make_tensor(packed->storage(), torch_sizes, contiguous_strides(torch_sizes), 0,
                            weight.dtype(), fn);
    }
    w = swapped.get();
  }
  if (auto fused = convolution_fused(input, *w, bias, params, ConvFusion{other, binary, unary})) {
    return fused;
  }
  auto out = convolution(input, *w, bias, params, fn);
  const std::vector<int64_t> want = channels_last_strides(out->sizes());
  if (out->numel() > 0 && !std::equal(want.begin(), want.end(), out->strides().begin(),
                                      out->strides().end())) {
    auto laid = empty_strided(out->sizes(), want, out->dtype(), out->device(), fn);
    copy_tensor(*laid, *out, fn);
    out = std::move(laid);
  }
  apply_post_ops(*out, other, binary, unary, fn);
  return out;
}

std::unique_ptr<TensorImpl> convolution_pointwise_(const TensorImpl& other,
                                                   const TensorImpl& input,
                                                   const TensorImpl& weight,
                                                   const TensorImpl* bias,
                                                   const ConvParams& params, BinaryPost binary,
                                                   const std::optional<PostOp>& unary,
                                                   const char* fn) {
  AOTRT_CHECK(input.dim() >= 3 && input.dim() <= 5, kInvalidArgument, fn, ": X is ", input.dim(),
              "-d; a fused convolution takes 3-, 4- or 5-d input");
  if (!params.transposed) {
    ConvFusion into{&other, binary, unary, /*into_other=*/true};
    if (auto view = convolution_fused(input, weight, bias, params, into)) return view;
  }
  auto result = convolution_pointwise(input, weight, bias, params, &other, binary, unary, fn);
  copy_tensor(other, *result, fn);
  return make_tensor(other.storage(), other.sizes(), other.strides(), other.storage_offset(),
                     other.dtype(), fn);
}

}  // namespace aotrt::ops
