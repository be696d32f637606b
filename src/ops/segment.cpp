#include "ops/segment.h"

#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {
namespace {

SegmentReduce parse_reduce(std::string_view r, const char* fn) {
  if (r == "sum") return SegmentReduce::kSum;
  if (r == "prod") return SegmentReduce::kProd;
  if (r == "mean") return SegmentReduce::kMean;
  if (r == "max" || r == "amax") return SegmentReduce::kMax;
  if (r == "min" || r == "amin") return SegmentReduce::kMin;
  AOTRT_FAIL(kInvalidArgument, fn,
             ": reduce must be sum, prod, mean, max (amax) or min (amin), not '", r, "'");
}

std::unique_ptr<TensorImpl> contiguous_copy(const TensorImpl& t, ScalarType dtype,
                                            const char* fn) {
  auto out = empty_strided(t.sizes(), contiguous_strides(t.sizes()), dtype, t.device(), fn);
  copy_tensor(*out, t, fn);
  return out;
}

}  // namespace

std::unique_ptr<TensorImpl> segment_reduce(const TensorImpl& data, std::string_view reduce,
                                           const TensorImpl* lengths, const TensorImpl* indices,
                                           const TensorImpl* offsets, int64_t axis, bool unsafe,
                                           std::optional<double> initial, const char* fn) {
  const SegmentReduce op = parse_reduce(reduce, fn);
  AOTRT_CHECK(is_floating(data.dtype()), kInvalidArgument, fn,
              ": data must be float16, bfloat16, float32 or float64 (as ATen), not ",
              dtype_name(data.dtype()));
  AOTRT_CHECK(indices == nullptr, kInvalidArgument, fn,
              ": indices based reduction is not supported (ATen refuses it too)");
  AOTRT_CHECK(lengths != nullptr || offsets != nullptr, kInvalidArgument, fn,
              ": either lengths or offsets must be given");
  const TensorImpl& bounds = offsets != nullptr ? *offsets : *lengths;
  const char* bounds_name = offsets != nullptr ? "offsets" : "lengths";
  AOTRT_CHECK(bounds.dtype() == ScalarType::Int64 || bounds.dtype() == ScalarType::Int32,
              kInvalidArgument, fn, ": ", bounds_name, " must be int64 or int32, not ",
              dtype_name(bounds.dtype()));
  AOTRT_CHECK(bounds.device() == data.device(), kInvalidArgument, fn, ": ", bounds_name,
              " is on ", bounds.device().str(), ", data on ", data.device().str());
  const int64_t ax = wrap_dim(axis, data.dim(), fn);
  AOTRT_CHECK(data.dim() > 0, kInvalidArgument, fn, ": data must have at least one dim");
  AOTRT_CHECK(bounds.dim() == ax + 1, kInvalidArgument, fn, ": ", bounds_name, " must have ",
              ax + 1, " dims (data's dims before axis, then the segments), not ", bounds.dim());
  for (int64_t d = 0; d < ax; ++d) {
    AOTRT_CHECK(bounds.sizes()[d] == data.sizes()[d], kInvalidArgument, fn, ": ", bounds_name,
                " of sizes ", sizes_text(bounds.sizes()), " does not match data ",
                sizes_text(data.sizes()), " before axis ", ax);
  }
  const int64_t k = bounds.sizes()[ax];
  AOTRT_CHECK(offsets == nullptr || k >= 1, kInvalidArgument, fn,
              ": offsets needs at least one entry");
  const int64_t segments = offsets != nullptr ? k - 1 : k;
  std::vector<int64_t> out_sizes(data.sizes().begin(), data.sizes().end());
  out_sizes[static_cast<size_t>(ax)] = segments;
  auto out = empty_strided(out_sizes, contiguous_strides(out_sizes), data.dtype(), data.device(),
                           fn);
  const int64_t outer = size_product(data.sizes(), 0, static_cast<size_t>(ax));
  const int64_t inner =
      size_product(data.sizes(), static_cast<size_t>(ax) + 1, data.sizes().size());
  const int64_t n = data.sizes()[ax];
  if (outer == 0) return out;
  // Packed copies (data only when its layout is not already row-major).
  std::unique_ptr<TensorImpl> packed;
  const TensorImpl* x = &data;
  if (!is_contiguous(data.sizes(), data.strides())) {
    packed = contiguous_copy(data, data.dtype(), fn);
    x = packed.get();
  }
  auto b64 = contiguous_copy(bounds, ScalarType::Int64, fn);
  const int64_t d3[] = {outer, n, inner}, d3s[] = {n * inner, inner, 1};
  const int64_t o3[] = {outer, segments, inner}, o3s[] = {segments * inner, inner, 1};
  const int64_t b2[] = {outer, k}, b2s[] = {k, 1};
  auto xv = make_tensor(x->storage(), d3, d3s, x->storage_offset(), x->dtype(), fn);
  auto ov = make_tensor(out->storage(), o3, o3s, 0, out->dtype(), fn);
  auto bv = make_tensor(b64->storage(), b2, b2s, 0, ScalarType::Int64, fn);
  kernel(&SegmentKernels::segment_reduce, data.device(), fn)(
      op, strided_view(*xv), strided_view(*bv), offsets != nullptr, strided_view(*ov), initial,
      unsafe, fn);
  return out;
}

}  // namespace aotrt::ops
