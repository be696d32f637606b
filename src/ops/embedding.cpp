#include "ops/embedding.h"

#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dispatch.h"

namespace aotrt::ops {
namespace {

bool is_index_dtype(ScalarType t) { return t == ScalarType::Int64 || t == ScalarType::Int32; }

void check_same_device(const TensorImpl& t, const TensorImpl& weight, const char* name,
                       const char* fn) {
  AOTRT_CHECK(t.device() == weight.device(), kInvalidArgument, fn, ": ", name, " is on ",
              t.device().str(), ", weight on ", weight.device().str());
}

std::unique_ptr<TensorImpl> empty_1d(int64_t n, ScalarType dtype, Device device, const char* fn) {
  const int64_t sizes[] = {n}, strides[] = {1};
  return empty_strided(sizes, strides, dtype, device, fn);
}

}  // namespace

EmbeddingBagResult embedding_bag(const TensorImpl& weight, const TensorImpl& indices,
                                 const TensorImpl& offsets, int64_t mode,
                                 const TensorImpl* per_sample_weights, bool include_last_offset,
                                 int64_t padding_idx, bool forward_only, const char* fn) {
  const ScalarType wt = weight.dtype();
  AOTRT_CHECK(is_floating(wt), kInvalidArgument, fn,
              ": weight must be float16, bfloat16, float32 or float64 (as ATen), not ",
              dtype_name(wt));
  AOTRT_CHECK(weight.dim() == 2, kInvalidArgument, fn, ": weight must be 2-d, not ",
              weight.dim(), "-d");
  AOTRT_CHECK(is_index_dtype(indices.dtype()), kInvalidArgument, fn,
              ": indices must be int64 or int32, not ", dtype_name(indices.dtype()));
  AOTRT_CHECK(is_index_dtype(offsets.dtype()), kInvalidArgument, fn,
              ": offsets must be int64 or int32, not ", dtype_name(offsets.dtype()));
  AOTRT_CHECK(indices.dim() == 1, kInvalidArgument, fn,
              ": indices must be 1-d (F.embedding_bag flattens 2-d input), not ", indices.dim(),
              "-d");
  AOTRT_CHECK(offsets.dim() == 1, kInvalidArgument, fn, ": offsets must be 1-d, not ",
              offsets.dim(), "-d");
  AOTRT_CHECK(mode >= 0 && mode <= 2, kInvalidArgument, fn,
              ": mode must be 0 (sum), 1 (mean) or 2 (max), not ", mode);
  check_same_device(indices, weight, "indices", fn);
  check_same_device(offsets, weight, "offsets", fn);
  const auto m = static_cast<EmbeddingBagMode>(mode);
  if (per_sample_weights != nullptr) {
    AOTRT_CHECK(m == EmbeddingBagMode::kSum, kInvalidArgument, fn,
                ": per_sample_weights is only supported with mode sum (0), not mode ", mode);
    AOTRT_CHECK(per_sample_weights->dtype() == wt, kInvalidArgument, fn,
                ": per_sample_weights must have weight's dtype ", dtype_name(wt), ", not ",
                dtype_name(per_sample_weights->dtype()));
    AOTRT_CHECK(per_sample_weights->dim() == 1 &&
                    per_sample_weights->sizes()[0] == indices.sizes()[0],
                kInvalidArgument, fn, ": per_sample_weights must have indices' size [",
                indices.sizes()[0], "]");
    check_same_device(*per_sample_weights, weight, "per_sample_weights", fn);
  }
  const int64_t n_offsets = offsets.sizes()[0];
  AOTRT_CHECK(!include_last_offset || n_offsets >= 1, kInvalidArgument, fn,
              ": include_last_offset needs at least one offset");
  const int64_t bags = include_last_offset ? n_offsets - 1 : n_offsets;
  const int64_t dim = weight.sizes()[1];
  const ScalarType index_t = indices.dtype() == ScalarType::Int64 ||
                                     offsets.dtype() == ScalarType::Int64
                                 ? ScalarType::Int64
                                 : ScalarType::Int32;
  // ATen's fast path (Note [Embedding bag semantics]).
  const bool fast = wt != ScalarType::Float64 && weight.strides()[1] == 1 &&
                    (per_sample_weights == nullptr || per_sample_weights->strides()[0] == 1) &&
                    padding_idx < 0;
  const bool fast_sum = m == EmbeddingBagMode::kSum && fast;
  EmbeddingBagResult r;
  const int64_t out_sizes[] = {bags, dim};
  r.output = empty_strided(out_sizes, contiguous_strides(out_sizes), wt, weight.device(), fn);
  r.offset2bag = empty_1d(fast_sum ? 0 : indices.sizes()[0], index_t, weight.device(), fn);
  const bool all_offsets =
      forward_only && m == EmbeddingBagMode::kSum && include_last_offset;
  r.bag_size = empty_1d(all_offsets ? n_offsets : bags, index_t, weight.device(), fn);
  if (m == EmbeddingBagMode::kMax) {
    r.max_indices =
        empty_strided(out_sizes, contiguous_strides(out_sizes), index_t, weight.device(), fn);
  } else {
    r.max_indices = empty_1d(r.bag_size->sizes()[0], index_t, weight.device(), fn);
  }
  EmbeddingBagArgs a{.weight = strided_view(weight),
                     .indices = strided_view(indices),
                     .offsets = strided_view(offsets),
                     .per_sample_weights = std::nullopt,
                     .output = strided_view(*r.output),
                     .offset2bag = strided_view(*r.offset2bag),
                     .bag_size = strided_view(*r.bag_size),
                     .max_indices = strided_view(*r.max_indices),
                     .mode = m,
                     .last_bag_to_end = !include_last_offset || m == EmbeddingBagMode::kMax ||
                                        !fast,
                     .padding_idx = padding_idx};
  if (per_sample_weights != nullptr) a.per_sample_weights = strided_view(*per_sample_weights);
  kernel(&EmbeddingKernels::embedding_bag, weight.device(), fn)(a, fn);
  return r;
}

}  // namespace aotrt::ops
