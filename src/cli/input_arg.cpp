#include "cli/input_arg.h"

#include "runtime/npy.h"

namespace aotrt::cli {

InputArg parse_input_arg(const std::string& text) {
  InputArg arg;
  arg.path = text;
  while (true) {
    const size_t colon = arg.path.rfind(':');
    if (colon == std::string::npos) break;
    const std::string word = arg.path.substr(colon + 1);
    ScalarType dtype{};
    if (!arg.hint.dtype && dtype_from_name(word, &dtype)) {
      arg.hint.dtype = dtype;
    } else if (!arg.hint.layout && word == "contiguous") {
      arg.hint.layout = MemoryFormat::Contiguous;
    } else if (!arg.hint.layout && word == "channels_last") {
      arg.hint.layout = MemoryFormat::ChannelsLast;
    } else if (!arg.hint.layout && word == "channels_last_3d") {
      arg.hint.layout = MemoryFormat::ChannelsLast3d;
    } else {
      break;
    }
    arg.path.resize(colon);
  }
  return arg;
}

Tensor read_input(const Model& model, size_t index, const InputArg& arg) {
  return model.prepare_input(index, npy::read(arg.path), arg.hint);
}

std::optional<Weights> weights_arg(const std::string& path, bool allow_unused) {
  if (path.empty()) return std::nullopt;
  Weights w = Weights::from_safetensors(path);
  w.allow_unused = allow_unused;
  return w;
}

}  // namespace aotrt::cli
