#include "runtime/weights.h"

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>

#include "core/handles.h"
#include "core/tensor.h"
#include "core/view.h"
#include "runtime/input_check.h"
#include "runtime/mapped_file.h"
#include "runtime/safetensors.h"

namespace aotrt {

Weights Weights::from_safetensors(const std::string& path) {
  auto file = std::make_shared<runtime::MappedFile>(path, /*copy_on_write=*/true);
  const std::vector<safetensors::Entry> entries =
      safetensors::parse({file->data(), file->size()}, path);
  Weights w;
  w.source = path;
  for (const safetensors::Entry& e : entries) {
    w.tensors.emplace(e.name, Tensor::from_blob(file->mutable_data() + e.begin, e.shape,
                                                contiguous_strides(e.shape), e.dtype));
  }
  w.mapping = std::move(file);
  return w;
}

Weights Weights::from_tensors(std::map<std::string, Tensor> tensors) {
  Weights w;
  w.tensors = std::move(tensors);
  w.source = "tensors";
  return w;
}

namespace runtime {
namespace {

std::string list(std::span<const int64_t> values) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << ']';
  return out.str();
}

// The layout the model keeps constant `c` in; for a constant whose layout
// the package does not record, row-major of the sizes given.
struct Expected {
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
};
Expected expected_layout(const ConstantInfo& c, const TensorImpl& given) {
  if (c.layout_known) return {c.sizes, c.strides, c.storage_offset};
  const std::vector<int64_t> sizes(given.sizes().begin(), given.sizes().end());
  return {sizes, contiguous_strides(sizes), 0};
}

std::string key_of(const ConstantInfo& c) { return c.original_fqn.empty() ? c.name : c.original_fqn; }

// Why `given` cannot be constant `c`, or "" when it can.
std::string mismatch(const ConstantInfo& c, const TensorImpl& given) {
  const Expected want = expected_layout(c, given);
  if (given.dtype() != c.dtype) {
    return std::string("is ") + dtype_name(given.dtype()) + ", the model expects " + dtype_name(c.dtype);
  }
  const auto sizes = given.sizes();
  if (!std::equal(sizes.begin(), sizes.end(), want.sizes.begin(), want.sizes.end())) {
    return "has sizes " + list(sizes) + ", the model expects " + list(want.sizes);
  }
  if (!c.layout_known) {
    if (!given.is_contiguous()) {
      return "has strides " + list(given.strides()) + "; the package does not record this "
             "constant's layout, so only a dense (row-major) tensor is taken";
    }
    const uint64_t bytes = static_cast<uint64_t>(given.numel()) * element_size(given.dtype());
    if (bytes != c.nbytes) {
      return "holds " + std::to_string(bytes) + " bytes, the model's constant takes " +
             std::to_string(c.nbytes);
    }
    return "";
  }
  if (!given.is_contiguous() && !same_layout(sizes, given.strides(), want.strides)) {
    return "has strides " + list(given.strides()) + " (not dense), the model keeps it with strides " +
           list(want.strides) + " (give it dense or in that layout)";
  }
  return "";
}

// `given` as constant `c` on `device`: a new handle to the same memory when
// it already is laid out there as expected, else a copy in that layout.
Tensor constant_tensor(const ConstantInfo& c, const TensorImpl& given, Device device,
                       const char* fn, bool* in_place_out) {
  const Expected want = expected_layout(c, given);
  const uintptr_t address = reinterpret_cast<uintptr_t>(given.data_ptr());
  const bool in_place = given.device() == device && same_layout(want.sizes, given.strides(), want.strides) &&
                        given.storage_offset() == want.storage_offset &&
                        address % element_size(c.dtype) == 0;
  *in_place_out = in_place;
  if (in_place) {
    return Tensor::adopt(handle_register(make_tensor(given.storage(), want.sizes, want.strides,
                                                     want.storage_offset, c.dtype, fn)));
  }
  // The model may address the whole storage it was exported with (nbytes).
  const ViewSpan span = view_span(want.sizes, want.strides, want.storage_offset,
                                  element_size(c.dtype), fn);
  const auto bytes = std::max<uint64_t>(c.nbytes, static_cast<uint64_t>(span.end_byte));
  Tensor dst = Tensor::adopt(handle_register(make_tensor(
      Storage::allocate(device, bytes), want.sizes, want.strides, want.storage_offset, c.dtype, fn)));
  const Tensor src = Tensor::adopt(handle_register(make_tensor(
      given.storage(), given.sizes(), given.strides(), given.storage_offset(), given.dtype(), fn)));
  dst.copy_(src);
  return dst;
}

}  // namespace

ConstantSet prepare_constants(const ModelInfo& info, const Weights& weights,
                              const ConstantSet* current, const char* fn) {
  const std::string& from = weights.source.empty() ? std::string("tensors") : weights.source;
  std::vector<std::string> problems;
  std::set<std::string> used;
  std::vector<std::pair<const ConstantInfo*, const TensorImpl*>> taken;
  for (const ConstantInfo& c : info.constants) {
    if (c.from_folded) continue;
    const std::string key = key_of(c);
    const auto it = weights.tensors.find(key);
    if (it == weights.tensors.end()) {
      if (current == nullptr) {
        problems.push_back("'" + key + "' (" + dtype_name(c.dtype) +
                           (c.layout_known ? " " + list(c.sizes) : std::string()) + ") is missing");
      }
      continue;
    }
    used.insert(key);
    if (!it->second.defined()) {
      problems.push_back("'" + key + "' is an empty Tensor");
      continue;
    }
    const TensorImpl& given = handle_get_defined(it->second.handle(), fn);
    const std::string why = mismatch(c, given);
    if (!why.empty()) {
      problems.push_back("'" + key + "' " + why);
      continue;
    }
    taken.emplace_back(&c, &given);
  }
  if (!weights.allow_unused) {
    for (const auto& [name, tensor] : weights.tensors) {
      if (used.count(name) == 0) {
        problems.push_back("'" + name + "' is not a constant of this model (inductor compiles "
                           "0-d and 1-d constants of up to 8 elements into the code, so its "
                           "value would be ignored; set Weights::allow_unused / "
                           "--weights-allow-unused to skip such names)");
      }
    }
  }
  if (!problems.empty()) {
    std::string text = std::string(fn) + ": the weights from " + from + " do not fit model '" +
                       info.model_name + "' of " + info.package_path + " (" +
                       std::to_string(problems.size()) + " problem" +
                       (problems.size() == 1 ? "" : "s") + "; nothing was loaded):";
    for (const std::string& p : problems) text += "\n  " + p;
    AOTRT_FAIL(kInvalidArgument, text);
  }

  ConstantSet set;
  set.source = from;
  for (const auto& [c, given] : taken) {
    set.names.push_back(c->name);
    bool in_place = false;
    set.tensors.push_back(constant_tensor(*c, *given, info.device, fn, &in_place));
    set.callers.push_back(in_place);
  }
  if (current != nullptr) {
    for (size_t i = 0; i < current->names.size(); ++i) {
      const bool replaced = std::any_of(taken.begin(), taken.end(), [&](const auto& t) {
        return t.first->name == current->names[i];
      });
      if (replaced) continue;
      set.names.push_back(current->names[i]);
      set.tensors.push_back(current->tensors[i]);
      set.callers.push_back(current->callers[i]);
    }
    set.sources = current->sources;
    set.source = current->source + " + " + from;
  }
  if (weights.mapping) set.sources.push_back(weights);
  return set;
}

}  // namespace runtime
}  // namespace aotrt
