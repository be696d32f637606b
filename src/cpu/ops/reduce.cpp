// CPU kernels of the reduce family (ops/reduce.h; Note [Reduce semantics]):
// one line at a time along the reduced dim, lines in parallel.
#include <cmath>
#include <type_traits>

#include "core/error.h"
#include "cpu/elements.h"
#include "cpu/lines.h"
#include "ops/dispatch.h"
#include "ops/reduce.h"

namespace aotrt::cpu {
namespace {
using ops::ReduceKernels;

void amax(const StridedView& in, int64_t dim, const StridedView& out, const char* fn) {
  const bool served = visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      AOTRT_FAIL(kInternal, fn, ": amax of a complex dtype reached the kernel");
    } else {
      const int64_t n = in.sizes[dim], step = in.strides[dim];
      for_each_line(in.sizes, dim, in.strides, out.strides, [&](int64_t a, int64_t b) {
        auto best = load(read_elem<T>(in.data, a));
        for (int64_t i = 1; i < n; ++i) {
          const auto v = load(read_elem<T>(in.data, a + i * step));
          if constexpr (std::is_floating_point_v<decltype(best)>) {
            if (std::isnan(best)) break;  // NaN propagates
            if (std::isnan(v) || v > best) best = v;
          } else {
            if (v > best) best = v;
          }
        }
        write_elem<T>(out.data, b, convert_value<T>(best));
      });
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(in.dtype), " is not served");
}

constexpr ReduceKernels kReduce{.amax = amax};
AOTRT_REGISTER_KERNELS(ReduceKernels, cpu, kReduce);

}  // namespace
}  // namespace aotrt::cpu
