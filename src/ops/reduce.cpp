#include "ops/reduce.h"

#include <vector>

#include "core/error.h"
#include "core/view.h"
#include "ops/dims.h"
#include "ops/dispatch.h"

namespace aotrt::ops {

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
  std::vector<bool> reduced(static_cast<size_t>(nd), dim.empty());
  if (dim.empty()) {
    AOTRT_CHECK(self.numel() > 0, kInvalidArgument, fn, ": argument 'dim' is empty (every dim) ",
                "but self has no elements; ATen asks for the reduction dim then");
  }
  for (int64_t d : dim) {
    const int64_t w = wrap_dim(d, nd, fn);
    AOTRT_CHECK(nd == 0 || !reduced[w], kInvalidArgument, fn, ": argument 'dim': dim ", w,
                " appears more than once");
    if (nd == 0) continue;
    reduced[w] = true;
    AOTRT_CHECK(self.sizes()[w] > 0, kInvalidArgument, fn, ": argument 'dim': reduction dim ", w,
                " has size 0 (ATen: \"Expected reduction dim ", w, " to have non-zero size\")");
  }
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
