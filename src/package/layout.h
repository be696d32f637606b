// Where a model lives inside a .pt2 archive.
//
// aoti_compile_and_package writes entries prefixed "<stem>/" (archives of
// torch 2.5-2.6 have no prefix); one model is the folder
// <stem>/data/aotinductor/<model_name>/ holding
//   <h>.wrapper.so                 the compiled model (the one file required)
//   <h>.wrapper_metadata.json      {"AOTI_DEVICE_KEY": "cpu"|"cuda", ...}
//   <h>.wrapper_weights.blob       the weights, when exported with
//                                  package_constants_in_so=False and
//                                  package_constants_on_disk_format="binary_blob"
//   *.cubin / *.fatbin             CUDA kernels, when not embedded in the .so
//   <h>.wrapper.cpp                the generated source, read for layouts
//   *.cpp, *.json ...              other sources and notes the loader does not need
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "package/zip_reader.h"

namespace aotrt::package {

struct ModelLayout {
  std::string model_name;
  std::string model_dir;  // "<stem>/data/aotinductor/<model_name>/"
  ZipEntry so;
  ZipEntry metadata;
  std::optional<ZipEntry> weights_blob;
  // <h>.wrapper.cpp, the generated source (see Note [Reading the wrapper source]).
  std::optional<ZipEntry> wrapper_source;
  std::vector<ZipEntry> kernel_binaries;  // *.cubin, *.fatbin
  // weights_config.json or data/weights/: weights saved as "pickle_weights",
  // which only torch's Python loader reads.
  bool has_pickle_weights = false;
};

// Finds model `model_name` (default "model") in the archive. Throws kPackage
// when there is none (naming the models there are), when its folder holds
// no .so or more than one, or when its metadata json is missing.
ModelLayout find_model(const ZipArchive& archive, const std::string& model_name);

// Every model folder of the archive (data/aotinductor/<name>/ holding a
// file), sorted by name.
std::vector<std::string> model_names(const ZipArchive& archive);

// The last path component of an entry name.
std::string base_name(const std::string& entry_name);

struct Metadata {
  std::string device_key;                     // AOTI_DEVICE_KEY
  std::map<std::string, std::string> values;  // every key; non-strings as JSON text
};

// Parses <h>.wrapper_metadata.json; throws kPackage if it is not a JSON
// object or has no string AOTI_DEVICE_KEY.
Metadata parse_metadata(const std::string& text, const std::string& what);

}  // namespace aotrt::package
