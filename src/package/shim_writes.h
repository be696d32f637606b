// Which C arguments of a fallback-op shim the op writes, from torch's operator
// schemas (Note [Shim arguments a run writes] in package/wrapper_source.cpp).
#pragma once

#include <optional>
#include <string_view>

namespace aotrt::package {

// What a shim does with the argument at one position of its C call.
enum class ShimArgument : char {
  kRead = 'r',     // a tensor (or tensor list) the op only reads
  kWritten = 'w',  // Tensor(a!) or an out= argument
  kOther = 'm',    // a tensor a result aliases, a scalar, a length, a result pointer
};

// One letter (a ShimArgument) per C parameter of `entry`, the full name
// ("aoti_torch_cuda_mm_out" -> "wrr"); nullopt for a name the table does not
// hold (no aten schema: aotrt's own and the mkldnn/oneDNN shims, or no shim).
std::optional<std::string_view> shim_argument_access(std::string_view entry);

}  // namespace aotrt::package
