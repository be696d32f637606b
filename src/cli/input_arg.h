// The CLI's --input FILE[:DTYPE][:LAYOUT] (e.g. x.npy:bfloat16,
// x.npy:channels_last, x.npy:float16:channels_last): a .npy file and what
// the user says about it, for a package that does not record its input's
// dtype or layout (see aotrt::InputHint and Model::prepare_input).
#pragma once

#include <optional>
#include <string>

#include "aotrt/aotrt.h"

namespace aotrt::cli {

struct InputArg {
  std::string path;
  InputHint hint;
};

// Suffixes are read from the right while they name a dtype ("bfloat16") or
// a layout ("contiguous", "channels_last", "channels_last_3d"), so a path
// may itself hold ':'.
InputArg parse_input_arg(const std::string& text);

// Reads the file and makes it input `index` of `model` (prepare_input).
Tensor read_input(const Model& model, size_t index, const InputArg& arg);

// --weights FILE (a safetensors file; "" for none) and --weights-allow-unused.
std::optional<Weights> weights_arg(const std::string& path, bool allow_unused);

}  // namespace aotrt::cli
