// CPU kernel of segment_reduce (ops/segment.h; Note [Segment reduce
// semantics]): segment bounds read per row, each output element one pass
// over its segment.
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "cpu/elements.h"
#include "ops/dispatch.h"
#include "ops/segment.h"

namespace aotrt::cpu {
namespace {
using ops::SegmentKernels;
using ops::SegmentReduce;

template <typename T>
void reduce_rows(SegmentReduce op, const StridedView& data, const std::vector<int64_t>& starts,
                 int64_t row, const StridedView& out, std::optional<double> initial) {
  using A = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float,
                               double>;
  const int64_t n = data.sizes[1], inner = data.sizes[2], segments = out.sizes[1];
  const char* base = data.data + row * n * inner * int64_t{sizeof(T)};
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t start = starts[static_cast<size_t>(s)];
    const int64_t end = starts[static_cast<size_t>(s + 1)];
    for (int64_t i = 0; i < inner; ++i) {
      A acc;
      switch (op) {
        case SegmentReduce::kProd: acc = 1; break;
        case SegmentReduce::kMax: acc = -std::numeric_limits<A>::infinity(); break;
        case SegmentReduce::kMin: acc = std::numeric_limits<A>::infinity(); break;
        default: acc = 0;
      }
      if (initial) acc = static_cast<A>(*initial);
      for (int64_t j = start; j < end; ++j) {
        const A x = static_cast<A>(load(read_elem<T>(base, j * inner + i)));
        switch (op) {
          case SegmentReduce::kSum:
          case SegmentReduce::kMean: acc += x; break;
          case SegmentReduce::kProd: acc *= x; break;
          case SegmentReduce::kMax: acc = std::isnan(x) || x > acc ? x : acc; break;
          case SegmentReduce::kMin: acc = std::isnan(x) || x < acc ? x : acc; break;
        }
      }
      if (op == SegmentReduce::kMean) {
        if (end > start) {
          acc /= static_cast<A>(end - start);
        } else if (!initial) {
          acc = std::numeric_limits<A>::quiet_NaN();
        }
      }
      write_elem<T>(out.data, (row * segments + s) * inner + i, convert_value<T>(acc));
    }
  }
}

void segment_reduce(SegmentReduce op, const StridedView& data, const StridedView& bounds,
                    bool offsets, const StridedView& out, std::optional<double> initial,
                    bool unsafe, const char* fn) {
  const int64_t outer = data.sizes[0], n = data.sizes[1], k = bounds.sizes[1];
  const int64_t segments = out.sizes[1];
  for (int64_t row = 0; row < outer; ++row) {
    std::vector<int64_t> starts(static_cast<size_t>(segments + 1), 0);
    for (int64_t s = 0; s < k; ++s) {
      const int64_t v = read_elem<int64_t>(bounds.data, row * k + s);
      if (offsets) {
        starts[static_cast<size_t>(s)] = v;
      } else {
        AOTRT_CHECK(v >= 0, kInvalidArgument, fn, ": lengths contains a negative value (", v,
                    ")");
        starts[static_cast<size_t>(s + 1)] = starts[static_cast<size_t>(s)] + v;
      }
    }
    for (int64_t s = 0; s < segments; ++s) {
      AOTRT_CHECK(starts[static_cast<size_t>(s)] >= 0 &&
                      starts[static_cast<size_t>(s + 1)] >= starts[static_cast<size_t>(s)],
                  kInvalidArgument, fn, ": offsets must not decrease and start at 0 or after");
    }
    AOTRT_CHECK(starts.back() <= n, kInvalidArgument, fn, ": the segments run to ",
                starts.back(), ", past data's size ", n, " along axis");
    AOTRT_CHECK(unsafe || offsets || starts.back() == n, kInvalidArgument, fn,
                ": every row of lengths must sum to data's size along axis (", n, "), not ",
                starts.back(), " (unless unsafe)");
    const bool served = visit_dtype(data.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        reduce_rows<T>(op, data, starts, row, out, initial);
      } else {
        AOTRT_FAIL(kInternal, fn, ": data dtype ", dtype_name(data.dtype));
      }
    });
    AOTRT_CHECK(served, kUnsupported, fn, ": dtype ", dtype_name(data.dtype), " is not served");
  }
}

constexpr SegmentKernels kSegment{.segment_reduce = segment_reduce};
AOTRT_REGISTER_KERNELS(SegmentKernels, cpu, kSegment);

}  // namespace
}  // namespace aotrt::cpu
