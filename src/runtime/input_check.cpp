#include "runtime/input_check.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "core/error.h"
#include "core/view.h"

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

namespace {

// Sizes equal to the spec's, or in range on its dynamic dims.
bool sizes_fit(const TensorSpec& spec, std::span<const int64_t> sizes) {
  if (sizes.size() != spec.sizes.size()) return false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == spec.sizes[d]) continue;
    const DynamicDim* dyn = spec.dynamic(d);
    if (dyn == nullptr || sizes[d] < dyn->min || (dyn->max >= 0 && sizes[d] > dyn->max)) return false;
  }
  return true;
}

void list_dynamic(std::ostringstream& out, const TensorSpec& spec) {
  for (const DynamicDim& d : spec.dynamic_dims) {
    out << ", dim " << d.dim << " from " << d.min;
    if (d.max >= 0) out << " to " << d.max;
  }
}

}  // namespace

std::vector<int64_t> spec_strides(const TensorSpec& spec, std::span<const int64_t> sizes,
                                  const char* fn) {
  std::vector<int64_t> strides = contiguous_strides(sizes);
  if (spec.strides.size() != sizes.size()) return strides;
  if (std::equal(sizes.begin(), sizes.end(), spec.sizes.begin(), spec.sizes.end())) {
    return spec.strides;
  }
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return spec.strides[a] > spec.strides[b]; });
  int64_t step = 1;
  for (size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = step;
    step = checked_mul(step, std::max<int64_t>(sizes[order[k]], 1), fn);
  }
  return strides;
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
  const bool fits = sizes_fit(spec, sizes);
  std::vector<int64_t> strides = fits ? spec_strides(spec, sizes, fn) : spec.strides;
  const bool ok = input.dtype() == spec.dtype && fits && same_layout(sizes, input.strides(), strides);
  if (ok) return strides;
  const char* what = input.dtype() != spec.dtype ? "convert it to the dtype the model was compiled for"
                     : !fits ? "the model was compiled for these sizes only"
                             : "lay it out with Model::prepare_input";
  std::ostringstream dynamic;
  list_dynamic(dynamic, spec);
  AOTRT_FAIL(kInvalidArgument, fn, ": input ", index, " ('", name, "'): expected ",
             describe_layout(spec.dtype, spec.sizes, fits ? strides : spec.strides), dynamic.str(),
             ", got ", describe_layout(input.dtype(), sizes, input.strides()), " (", what, ")");
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
