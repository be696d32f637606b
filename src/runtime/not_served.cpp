#include "runtime/not_served.h"

#include <array>
#include <regex>
#include <string>
#include <vector>

namespace aotrt::runtime {
namespace {

struct NotServed {
  const char* pattern;
  const char* reason;
};

constexpr NotServed kNotServed[] = {
#define AOTRT_NOT_SERVED(pattern, reason) {pattern, reason},
#include "shim/ops/not_served.def"
#undef AOTRT_NOT_SERVED
};

constexpr std::array<std::string_view, 3> kDevicePrefixes = {
    "aoti_torch_cpu_", "aoti_torch_cuda_", "aoti_torch_aten_"};

struct Compiled {
  std::regex pattern;
  const char* reason;
};

const std::vector<Compiled>& compiled() {
  // Compiled once, on the first package that lacks a symbol; the patterns are
  // ours and known to be valid (NotServed.EveryPatternCompiles).
  static const std::vector<Compiled> table = [] {
    std::vector<Compiled> out;
    for (const NotServed& n : kNotServed) {
      out.push_back({std::regex(n.pattern, std::regex::ECMAScript | std::regex::optimize), n.reason});
    }
    return out;
  }();
  return table;
}

}  // namespace

const char* not_served_reason(std::string_view name) {
  std::string_view op;
  for (std::string_view prefix : kDevicePrefixes) {
    if (name.substr(0, prefix.size()) == prefix) {
      op = name.substr(prefix.size());
      break;
    }
  }
  if (op.empty()) return nullptr;  // tensor functions and the like: never declined
  try {
    const std::string key(op);
    for (const Compiled& c : compiled()) {
      if (std::regex_search(key, c.pattern)) return c.reason;
    }
  } catch (const std::exception&) {
    // std::regex may throw (complexity, allocation): the symbol is then
    // reported as missing, which refuses the package all the same.
  }
  return nullptr;
}

}  // namespace aotrt::runtime
