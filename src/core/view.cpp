#include "core/view.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace aotrt {

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  AOTRT_CHECK(!__builtin_mul_overflow(a, b, &r), kOutOfBounds, what, ": ", a, " * ", b,
              " overflows int64");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  AOTRT_CHECK(!__builtin_add_overflow(a, b, &r), kOutOfBounds, what, ": ", a, " + ", b,
              " overflows int64");
  return r;
}

ViewSpan view_span(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                   int64_t storage_offset, size_t itemsize, const char* what) {
  AOTRT_CHECK(sizes.size() == strides.size(), kInvalidArgument, what, ": ", sizes.size(),
              " sizes but ", strides.size(), " strides");
  AOTRT_CHECK(storage_offset >= 0, kInvalidArgument, what, ": storage offset ",
              storage_offset, " is negative");
  AOTRT_CHECK(itemsize > 0, kInvalidArgument, what, ": element size is 0");
  ViewSpan span;
  span.numel = 1;
  int64_t last = 0;  // offset of the last element, relative to storage_offset
  for (size_t d = 0; d < sizes.size(); ++d) {
    AOTRT_CHECK(sizes[d] >= 0, kInvalidArgument, what, ": size ", sizes[d], " of dim ", d,
                " is negative");
    AOTRT_CHECK(strides[d] >= 0, kInvalidArgument, what, ": stride ", strides[d], " of dim ",
                d, " is negative; aotrt does not serve negative strides");
    span.numel = checked_mul(span.numel, sizes[d], what);
  }
  span.begin_elem = storage_offset;
  if (span.numel == 0) {
    span.end_elem = storage_offset;
  } else {
    for (size_t d = 0; d < sizes.size(); ++d) {
      last = checked_add(last, checked_mul(sizes[d] - 1, strides[d], what), what);
    }
    span.end_elem = checked_add(checked_add(storage_offset, last, what), 1, what);
  }
  span.end_byte = checked_mul(span.end_elem, static_cast<int64_t>(itemsize), what);
  return span;
}

ViewSpan check_view_in_storage(std::span<const int64_t> sizes,
                               std::span<const int64_t> strides, int64_t storage_offset,
                               size_t itemsize, size_t storage_nbytes, const char* what) {
  ViewSpan span = view_span(sizes, strides, storage_offset, itemsize, what);
  AOTRT_CHECK(static_cast<uint64_t>(span.end_byte) <= storage_nbytes, kOutOfBounds, what,
              ": the view needs ", span.end_byte, " bytes of storage (offset ",
              storage_offset, ", elements [", span.begin_elem, ", ", span.end_elem,
              ") of ", itemsize, " bytes) but its storage has ", storage_nbytes);
  return span;
}

std::vector<int64_t> contiguous_strides(std::span<const int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    // ATen uses max(size, 1) so that size-0 dims keep sensible strides.
    running = checked_mul(running, std::max<int64_t>(sizes[i], 1), "contiguous_strides");
  }
  return strides;
}

std::vector<int64_t> channels_last_strides(std::span<const int64_t> sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t step = 1;
  s[1] = step;
  step = std::max<int64_t>(sizes[1], 1);
  for (size_t d = sizes.size() - 1; d >= 2; --d) {
    s[d] = step;
    step = checked_mul(step, std::max<int64_t>(sizes[d], 1), "channels_last_strides");
  }
  s[0] = step;
  return s;
}

bool is_contiguous(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
  }
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool is_non_overlapping_and_dense(std::span<const int64_t> sizes,
                                  std::span<const int64_t> strides) {
  const size_t n = sizes.size();
  // c10 counts an empty tensor as contiguous, hence dense, whatever its strides.
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return true;
  if (n == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<size_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  // Sort dims by stride, size-1 dims last among equals (as c10 does).
  std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t size = sizes[perm[i]];
    if (size < 2) return true;
    if (strides[perm[i]] != expected) return false;
    expected *= size;
  }
  return true;
}

namespace {

// c10's channels-last stride test: the dims in `order` (C first, then the
// spatial dims innermost first, then N) have non-decreasing strides, each at
// least the one before times its size.
bool channels_last_in_order(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                            std::span<const int> order) {
  int64_t min = 0;
  if (strides[1] == 0) return false;  // trivial C: default to NCHW
  for (int d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    // N111 and N11W tensors are ambiguous; c10 calls them NCHW.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

}  // namespace

bool is_channels_last_strides_2d(std::span<const int64_t> sizes,
                                 std::span<const int64_t> strides) {
  static constexpr int kOrder[] = {1, 3, 2, 0};
  return sizes.size() == 4 && channels_last_in_order(sizes, strides, kOrder);
}

bool is_channels_last_strides_3d(std::span<const int64_t> sizes,
                                 std::span<const int64_t> strides) {
  static constexpr int kOrder[] = {1, 4, 3, 2, 0};
  return sizes.size() == 5 && channels_last_in_order(sizes, strides, kOrder);
}

std::vector<int64_t> suggested_format_strides(std::span<const int64_t> sizes,
                                              std::span<const int64_t> like_sizes,
                                              std::span<const int64_t> like_strides) {
  const bool cl = sizes.size() == like_sizes.size() &&
                  (is_channels_last_strides_2d(like_sizes, like_strides) ||
                   is_channels_last_strides_3d(like_sizes, like_strides));
  return cl ? channels_last_strides(sizes) : contiguous_strides(sizes);
}

const char* memory_format_name(MemoryFormatArg format) {
  switch (format) {
    case MemoryFormatArg::kContiguous: return "contiguous_format";
    case MemoryFormatArg::kPreserve: return "preserve_format";
    case MemoryFormatArg::kChannelsLast: return "channels_last";
    case MemoryFormatArg::kChannelsLast3d: return "channels_last_3d";
  }
  return "an unknown memory format";
}

std::vector<int64_t> memory_format_strides(std::span<const int64_t> sizes,
                                           MemoryFormatArg format, const char* what) {
  switch (format) {
    case MemoryFormatArg::kContiguous: return contiguous_strides(sizes);
    case MemoryFormatArg::kChannelsLast:
      AOTRT_CHECK(sizes.size() == 4, kInvalidArgument, what,
                  ": required rank 4 tensor to use channels_last format");
      return channels_last_strides(sizes);
    case MemoryFormatArg::kChannelsLast3d:
      AOTRT_CHECK(sizes.size() == 5, kInvalidArgument, what,
                  ": required rank 5 tensor to use channels_last_3d format");
      return channels_last_strides(sizes);
    case MemoryFormatArg::kPreserve: break;
  }
  AOTRT_FAIL(kInvalidArgument, what, ": Unsupported memory format ", memory_format_name(format));
}

// Note [Preserve-format strides]
// empty_like(preserve_format), hence clone, keeps the strides of a
// non-overlapping dense tensor. Any other strided tensor gets dense strides
// that keep the order of its dims in memory (ATen's infer_dense_strides):
// dims are ranked innermost first by stride with a stable insertion sort in
// which a stride-0 dim never moves and, on equal strides, the smaller dim
// goes inner; strides are then assigned innermost first, size-0 and size-1
// dims not counting. A channels-last chunk thus clones channels-last, and a
// transposed slice clones transposed.
std::vector<int64_t> preserve_format_strides(std::span<const int64_t> sizes,
                                             std::span<const int64_t> strides) {
  if (is_non_overlapping_and_dense(sizes, strides)) {
    return std::vector<int64_t>(strides.begin(), strides.end());
  }
  const size_t n = sizes.size();
  std::vector<size_t> order(n);  // order[0] is the innermost dim
  for (size_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  // > 0 when dim a belongs outside dim b.
  auto outer_than = [&](size_t a, size_t b) -> int {
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] < strides[b] ? -1 : 1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  for (size_t i = 1; i < n; ++i) {
    size_t cur = i;
    for (size_t j = i; j-- > 0;) {
      const int c = outer_than(order[j], order[cur]);
      if (c < 0) break;
      if (c > 0) {
        std::swap(order[j], order[cur]);
        cur = j;
      }
    }
  }
  std::vector<int64_t> out(n);
  int64_t running = 1;
  for (size_t k = 0; k < n; ++k) {
    out[order[k]] = running;
    if (sizes[order[k]] > 1) running = checked_mul(running, sizes[order[k]], "preserve_format_strides");
  }
  return out;
}

}  // namespace aotrt
