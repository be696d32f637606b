// The C-shim functions aotrt declines on purpose (shim/ops/not_served.def),
// so that a package importing one is refused with the reason, not as a gap.
#pragma once

#include <string_view>

namespace aotrt::runtime {

// Why aotrt does not serve the aoti_* function `name`, or nullptr when it is
// not one aotrt declines (then a symbol aotrt lacks is simply missing).
const char* not_served_reason(std::string_view name);

}  // namespace aotrt::runtime
