#include "ops/reduce.h"

#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {

std::vector<bool> reduced_dims(const TensorImpl& self, std::span<const int64_t> dim,
                               const char* fn) {
  const int64_t nd = self.dim();
  std::vector<bool> reduced(static_cast<size_t>(nd), dim.empty());
  for (int64_t d : dim) {
    const int64_t w = wrap_dim(d, nd, fn);
    if (nd == 0) continue;
    AOTRT_CHECK(!reduced[w], kInvalidArgument, fn, ": argument 'dim': dim ", w,
                " appears multiple times in the list of dims");
    reduced[w] = true;
  }
  for (int64_t d = 0; d < nd; ++d) {
    AOTRT_CHECK(!reduced[d] || self.sizes()[d] != 0, kInvalidArgument, fn,
                ": argument 'dim': Expected reduction dim ", d, " to have non-zero size");
  }
  return reduced;
}

std::unique_ptr<TensorImpl> amax(const TensorImpl& self, std::span<const int64_t> dim,
                                 bool keepdim, const char* fn) {
  AOTRT_CHECK(!is_complex(self.dtype()), kInvalidArgument, fn,
              ": \"max_values_cpu\" not implemented for '", dtype_name(self.dtype()), "'");
  const int64_t nd = self.dim();
  const std::vector<bool> reduced = reduced_dims(self, dim, fn);
  // One pass per reduced dim, each into a new contiguous tensor with that
  // dim of size 1.
  std::unique_ptr<TensorImpl> cur;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[d]) continue;
    const TensorImpl& in = cur ? *cur : self;
    std::vector<int64_t> sizes(in.sizes().begin(), in.sizes().end());
    sizes[d] = 1;
    auto out = empty_strided(sizes, contiguous_strides(sizes), self.dtype(), self.device(), fn);
    if (in.numel() > 0) {
      StridedView ov = strided_view(*out);
      std::vector<int64_t> os(out->strides().begin(), out->strides().end());
      os[d] = 0;
      ov.sizes = in.sizes();
      ov.strides = os;
      kernel(&ReduceKernels::amax, self.device(), fn)(strided_view(in), d, ov, fn);
    }
    cur = std::move(out);
  }
  if (!cur) cur = clone_tensor(self, fn);  // a 0-d self
  if (keepdim || nd == 0) {
    if (is_contiguous(cur->sizes(), cur->strides())) return cur;
    auto dense = empty_strided(cur->sizes(), contiguous_strides(cur->sizes()), cur->dtype(),
                               cur->device(), fn);
    copy_tensor(*dense, *cur, fn);
    return dense;
  }
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[d]) sizes.push_back(self.sizes()[d]);
  }
  return make_tensor(cur->storage(), sizes, contiguous_strides(sizes), 0, cur->dtype(), fn);
}

std::unique_ptr<TensorImpl> hash_tensor(const TensorImpl& self, std::span<const int64_t> dim,
                                        bool keepdim, int64_t mode, const char* fn) {
  AOTRT_CHECK(mode == 0, kInvalidArgument, fn, ": argument 'mode': unknown hash_tensor mode ",
              mode, " (ATen has mode 0, xor_sum)");
  const ScalarType t = self.dtype();
  AOTRT_CHECK(!is_complex(t) && t != ScalarType::UInt16 && t != ScalarType::UInt32 &&
                  t != ScalarType::UInt64,
              kInvalidArgument, fn, ": argument 'self' is ", dtype_name(t),
              "; ATen's xor_sum has no kernel for it");
  const int64_t nd = self.dim();
  const std::vector<bool> reduced = reduced_dims(self, dim, fn);
  // self seen kept dims first, reduced dims after; the result's sizes.
  std::vector<int64_t> sizes, strides, out_sizes, keep_sizes;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t d = 0; d < nd; ++d) {
      if (reduced[d] != (pass == 1)) continue;
      sizes.push_back(self.sizes()[d]);
      strides.push_back(self.strides()[d]);
      if (pass == 0) keep_sizes.push_back(self.sizes()[d]);
    }
  }
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[d]) {
      out_sizes.push_back(self.sizes()[d]);
    } else if (keepdim) {
      out_sizes.push_back(1);
    }
  }
  auto out = empty_strided(out_sizes, contiguous_strides(out_sizes), ScalarType::UInt64,
                           self.device(), fn);
  if (out->numel() == 0) return out;
  auto seen = make_tensor(self.storage(), sizes, strides, self.storage_offset(), t, fn);
  auto dense = make_tensor(out->storage(), keep_sizes, contiguous_strides(keep_sizes), 0,
                           ScalarType::UInt64, fn);
  kernel(&ReduceKernels::xor_sum, self.device(), fn)(
      strided_view(*seen), static_cast<int64_t>(keep_sizes.size()), strided_view(*dense), fn);
  return out;
}

}  // namespace aotrt::ops
