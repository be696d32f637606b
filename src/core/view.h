// View arithmetic: the one place that decides whether sizes, strides and a
// storage offset describe memory inside a storage.
//
// Note [View span]
// A view with sizes s, strides t (all >= 0) and storage offset o, in
// elements of itemsize bytes, touches the elements
//   o + sum_i k_i * t_i  for 0 <= k_i < s_i,
// so its span is [o, o + sum_i (s_i - 1) * t_i + 1) when every s_i > 0, and
// empty otherwise. An empty view touches nothing; it may sit anywhere up to
// the end of its storage (o * itemsize <= nbytes), as ATen allows. All of it
// is computed in checked 64-bit arithmetic: a size, stride or offset whose
// span overflows int64 is refused, never wrapped. Negative strides are
// refused (ATen's as_strided refuses them too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aotrt {

struct ViewSpan {
  int64_t numel = 0;        // elements the view addresses (product of sizes)
  int64_t begin_elem = 0;   // first element touched, from the storage start
  int64_t end_elem = 0;     // one past the last element touched (== begin when empty)
  int64_t end_byte = 0;     // end_elem * itemsize: bytes of storage the view needs
  bool empty() const { return numel == 0; }
};

// Computes the span of a view or throws Error (kInvalidArgument for negative
// sizes, strides or offsets; kOutOfBounds for overflow). `what` names the
// calling function in the message.
ViewSpan view_span(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                   int64_t storage_offset, size_t itemsize, const char* what);

// view_span, then checks the span against a storage of storage_nbytes;
// throws kOutOfBounds naming both when the view reaches past it.
ViewSpan check_view_in_storage(std::span<const int64_t> sizes,
                               std::span<const int64_t> strides, int64_t storage_offset,
                               size_t itemsize, size_t storage_nbytes, const char* what);

// Row-major (C-order) strides for sizes.
std::vector<int64_t> contiguous_strides(std::span<const int64_t> sizes);

// Dense strides with channels innermost (ATen's channels_last for 3-, 4- and
// 5-d sizes): [N, C, S...] -> C, then S... row-major, N outermost.
std::vector<int64_t> channels_last_strides(std::span<const int64_t> sizes);

// ATen's is_contiguous: strides match row-major, ignoring size-1 dims; an
// empty tensor is contiguous.
bool is_contiguous(std::span<const int64_t> sizes, std::span<const int64_t> strides);

// ATen's is_non_overlapping_and_dense: the tensor is empty, or some
// permutation of its dims is row-major contiguous.
bool is_non_overlapping_and_dense(std::span<const int64_t> sizes,
                                  std::span<const int64_t> strides);

// c10's is_channels_last_strides_2d for 4-d tensors (suggest_memory_format).
bool is_channels_last_strides_2d(std::span<const int64_t> sizes,
                                 std::span<const int64_t> strides);
// c10's is_channels_last_strides_3d for 5-d tensors.
bool is_channels_last_strides_3d(std::span<const int64_t> sizes,
                                 std::span<const int64_t> strides);

// Strides of a new tensor of `sizes` in the memory format ATen's
// suggest_memory_format gives a tensor `like` (of like_sizes, like_strides):
// channels-last when like is 4-d (5-d) with channels-last strides and sizes
// has its rank, else contiguous.
std::vector<int64_t> suggested_format_strides(std::span<const int64_t> sizes,
                                              std::span<const int64_t> like_sizes,
                                              std::span<const int64_t> like_strides);

// c10::MemoryFormat, with the values the C ABI passes for it
// (aoti_torch_memory_format_*, shim/constant_shims.cpp).
enum class MemoryFormatArg : int32_t {
  kContiguous = 0,
  kPreserve = 1,
  kChannelsLast = 2,
  kChannelsLast3d = 3,
};
const char* memory_format_name(MemoryFormatArg format);

// Dense strides of `sizes` in `format` (not kPreserve): c10's
// empty_tensor_restride, which refuses channels_last below rank 4 (3d: 5).
std::vector<int64_t> memory_format_strides(std::span<const int64_t> sizes,
                                           MemoryFormatArg format, const char* what);

// Strides ATen's empty_like(preserve_format) gives: the same strides for a
// non-overlapping dense tensor, else dense strides in the same dim order
// (see Note [Preserve-format strides]).
std::vector<int64_t> preserve_format_strides(std::span<const int64_t> sizes,
                                             std::span<const int64_t> strides);

// Checked 64-bit arithmetic; throws kOutOfBounds naming `what` on overflow.
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* what);

}  // namespace aotrt
