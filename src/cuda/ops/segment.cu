// CUDA kernel of segment_reduce (ops/segment.h; Note [Segment reduce
// semantics]): one thread a row turns its lengths or offsets into segment
// starts, then one thread per output element folds its segment in order, in
// the CPU kernel's accumulation type (float for float16/bfloat16, double
// otherwise), so results round as the CPU's.
//
// Note [Segment bounds on CUDA]
// The CPU refuses a negative length, decreasing offsets, segments past
// data's end and (unless unsafe) lengths that do not sum to data's size.
// Here the bounds are on the device and refusing them would make the host
// wait for the kernel (ATen's CUDA kernel does not check them either): as
// Note [Indexing on CUDA], a negative length counts as 0 and every start is
// clamped to [previous start, data's size], so no memory outside data is
// read; such segments reduce what they then cover.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/segment.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using ops::SegmentKernels;
using ops::SegmentReduce;

// starts[row, 0..segments] from bounds[row, 0..k).
__global__ void segment_starts(const int64_t* bounds, int64_t outer, int64_t k, int64_t segments,
                               int64_t n, bool offsets, int64_t* starts) {
  AOTRT_GRID_STRIDE(row, outer) {
    const int64_t* b = bounds + row * k;
    int64_t* st = starts + row * (segments + 1);
    int64_t at = 0;
    for (int64_t s = 0; s <= segments; ++s) {
      int64_t v;
      if (offsets) {
        v = b[s];
      } else {
        v = s == 0 ? 0 : at + (b[s - 1] > 0 ? b[s - 1] : 0);
      }
      const int64_t lo = s == 0 ? 0 : at;
      at = v < lo ? lo : (v > n ? n : v);
      st[s] = at;
    }
  }
}

template <typename T>
__global__ void segment_kernel(SegmentReduce op, const T* data, const int64_t* starts,
                               int64_t n, int64_t segments, int64_t inner, int64_t total,
                               bool has_initial, double initial, T* out) {
  using A = std::conditional_t<std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                               float, double>;
  AOTRT_GRID_STRIDE(e, total) {  // e = (row * segments + s) * inner + i
    const int64_t i = e % inner, rs = e / inner, s = rs % segments, row = rs / segments;
    const int64_t start = starts[row * (segments + 1) + s];
    const int64_t end = starts[row * (segments + 1) + s + 1];
    A acc;
    switch (op) {
      case SegmentReduce::kProd: acc = 1; break;
      case SegmentReduce::kMax: acc = -INFINITY; break;
      case SegmentReduce::kMin: acc = INFINITY; break;
      default: acc = 0;
    }
    if (has_initial) acc = static_cast<A>(initial);
    const T* x = data + row * n * inner + i;
    for (int64_t j = start; j < end; ++j) {
      const A v = static_cast<A>(to_acc(x[j * inner]));
      switch (op) {
        case SegmentReduce::kSum:
        case SegmentReduce::kMean: acc += v; break;
        case SegmentReduce::kProd: acc *= v; break;
        case SegmentReduce::kMax: acc = v != v || v > acc ? v : acc; break;
        case SegmentReduce::kMin: acc = v != v || v < acc ? v : acc; break;
      }
    }
    if (op == SegmentReduce::kMean) {
      if (end > start) {
        acc /= static_cast<A>(end - start);
      } else if (!has_initial) {
        acc = NAN;
      }
    }
    out[e] = from_acc<T>(acc);
  }
}

void segment_reduce(SegmentReduce op, const StridedView& data, const StridedView& bounds,
                    bool offsets, const StridedView& out, std::optional<double> initial,
                    bool unsafe, const char* fn) {
  (void)unsafe;  // Note [Segment bounds on CUDA]: nothing is checked on the host
  const OnDevice on(data.device);
  const int64_t outer = data.sizes[0], n = data.sizes[1], inner = data.sizes[2];
  const int64_t k = bounds.sizes[1], segments = out.sizes[1];
  Temp<int64_t> starts(on.device, outer * (segments + 1));
  segment_starts<<<blocks_for(outer), kThreads, 0, on.stream>>>(
      reinterpret_cast<const int64_t*>(bounds.data), outer, k, segments, n, offsets,
      starts.get());
  AOTRT_CUDA_CHECK_LAUNCH();
  const int64_t total = outer * segments * inner;
  if (total == 0) return;
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    segment_kernel<T><<<blocks_for(total), kThreads, 0, on.stream>>>(
        op, reinterpret_cast<const T*>(data.data), starts.get(), n, segments, inner, total,
        initial.has_value(), initial.value_or(0), reinterpret_cast<T*>(out.data));
    AOTRT_CUDA_CHECK_LAUNCH();
  };
  switch (data.dtype) {
    case ScalarType::Float32: return launch(float{});
    case ScalarType::Float64: return launch(double{});
    case ScalarType::Float16: return launch(__half{});
    case ScalarType::BFloat16: return launch(__nv_bfloat16{});
    default:
      AOTRT_FAIL(kUnsupported, fn, ": dtype ", dtype_name(data.dtype), " is not served");
  }
}

constexpr SegmentKernels kSegment{.segment_reduce = segment_reduce};
AOTRT_REGISTER_KERNELS(SegmentKernels, cuda, kSegment);

}  // namespace
}  // namespace aotrt::cuda
