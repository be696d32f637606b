#include "runtime/input_check.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace aotrt::runtime {
namespace {

void list(std::ostringstream& out, std::span<const int64_t> values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << ']';
}

}  // namespace

bool same_layout(std::span<const int64_t> sizes, std::span<const int64_t> a,
                 std::span<const int64_t> b) {
  if (a.size() != sizes.size() || b.size() != sizes.size()) return false;
  for (int64_t s : sizes) {
    if (s == 0) return true;
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1 && a[d] != b[d]) return false;
  }
  return true;
}

std::string describe_layout(ScalarType dtype, std::span<const int64_t> sizes,
                            std::span<const int64_t> strides) {
  std::ostringstream out;
  out << dtype_name(dtype) << ' ';
  list(out, sizes);
  out << " with strides ";
  list(out, strides);
  return out.str();
}

std::vector<int64_t> check_input_layout(const TensorSpec& spec, const TensorImpl& input,
                                        size_t index, const std::string& name, const char* fn) {
  const auto sizes = input.sizes();
  const bool same_sizes = std::equal(sizes.begin(), sizes.end(), spec.sizes.begin(), spec.sizes.end());
  const bool ok = input.dtype() == spec.dtype && same_sizes &&
                  same_layout(sizes, input.strides(), spec.strides);
  if (ok) return spec.strides;
  const char* what = input.dtype() != spec.dtype ? "convert it to the dtype the model was compiled for"
                     : !same_sizes ? "the model was compiled for these sizes only"
                                   : "lay it out with Model::prepare_input";
  AOTRT_FAIL(kInvalidArgument, fn, ": input ", index, " ('", name, "'): expected ",
             describe_layout(spec.dtype, spec.sizes, spec.strides), ", got ",
             describe_layout(input.dtype(), sizes, input.strides()), " (", what, ")");
}

std::string name_inputs_in_model_message(const std::string& message,
                                         const std::vector<std::string>& input_names) {
  static const std::string kPrefix = "input_handles[";
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t at = message.find(kPrefix, pos);
    if (at == std::string::npos) break;
    const size_t close = message.find(']', at + kPrefix.size());
    if (close == std::string::npos) break;
    const std::string digits = message.substr(at + kPrefix.size(), close - at - kPrefix.size());
    out += message.substr(pos, close + 1 - pos);
    if (!digits.empty() && digits.size() < 9 &&
        digits.find_first_not_of("0123456789") == std::string::npos) {
      const size_t i = std::stoul(digits);
      out += " (input " + digits;
      if (i < input_names.size()) out += ", '" + input_names[i] + "'";
      out += ")";
    }
    pos = close + 1;
  }
  return out + message.substr(pos);
}

}  // namespace aotrt::runtime
