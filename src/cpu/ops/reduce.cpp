// CPU kernels of the reduce family (ops/reduce.h; Notes [Reduce semantics] and
// [Hash tensor semantics]): amax one line at a time along the reduced dim, lines
// in parallel; xor_sum per kept element.
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "cpu/elements.h"
#include "cpu/lines.h"
#include "ops/dispatch.h"
#include "ops/reduce.h"

namespace aotrt::cpu {
namespace {
using ops::ReduceKernels;

// The offset (elements) of the `i`-th element, row-major, of dims [begin, end).
int64_t offset_of(int64_t i, const StridedView& v, int64_t begin, int64_t end) {
  int64_t off = 0;
  for (int64_t d = end - 1; d >= begin; --d) {
    off += (i % v.sizes[d]) * v.strides[d];
    i /= v.sizes[d];
  }
  return off;
}

template <typename T>
uint64_t hash_bits(T x) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(x));
  } else {
    return std::bit_cast<uint64_t>(static_cast<double>(load(x)));
  }
}

void xor_sum(const StridedView& self, int64_t kept, const StridedView& out, const char* fn) {
  const bool served = visit_dtype(self.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T> || std::is_same_v<T, uint16_t> ||
                  std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
      AOTRT_FAIL(kInvalidArgument, fn, ": dtype ", dtype_name(self.dtype), " has no xor_sum");
    } else {
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < self.dim(); ++d) (d < kept ? outer : inner) *= self.sizes[d];
      auto* o = reinterpret_cast<uint64_t*>(out.data);
#pragma omp parallel for if (outer * inner > 32768)
      for (int64_t k = 0; k < outer; ++k) {
        const int64_t base = offset_of(k, self, 0, kept);
        uint64_t acc = 0;
        for (int64_t i = 0; i < inner; ++i) {
          acc ^= hash_bits(read_elem<T>(self.data, base + offset_of(i, self, kept, self.dim())));
        }
        o[k] = acc;
      }
    }
  });
  AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(self.dtype), " is not served");
}

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

constexpr ReduceKernels kReduce{.amax = amax, .xor_sum = xor_sum};
AOTRT_REGISTER_KERNELS(ReduceKernels, cpu, kReduce);

}  // namespace
}  // namespace aotrt::cpu
