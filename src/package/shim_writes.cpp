#include "package/shim_writes.h"

#include <algorithm>
#include <iterator>

namespace aotrt::package {
namespace {

struct ShimRow {
  std::string_view entry;
  std::string_view access;
};

constexpr ShimRow kShimRows[] = {
#include "package/shim_writes_table.inc"
};

static_assert(std::ranges::is_sorted(kShimRows, {}, &ShimRow::entry),
              "shim_writes_table.inc must be sorted by name (scripts/gen_shim_writes.py)");

}  // namespace

std::optional<std::string_view> shim_argument_access(std::string_view entry) {
  const auto* it = std::ranges::lower_bound(kShimRows, entry, {}, &ShimRow::entry);
  if (it == std::end(kShimRows) || it->entry != entry) return std::nullopt;
  return it->access;
}

}  // namespace aotrt::package
