#include "package/layout.h"

#include <nlohmann/json.hpp>

#include <set>
#include <sstream>
#include <string_view>

#include "core/error.h"

namespace aotrt::package {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find('/', start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

// For an entry directly inside some data/aotinductor/<model>/ folder: the
// model name and the folder, with or without the archive's "<stem>/".
struct ModelFile {
  std::string model;
  std::string dir;
  std::string file;
};
std::optional<ModelFile> model_file(const std::string& name) {
  const auto parts = split(name);
  size_t base = 0;
  if (parts.size() == 5) {
    base = 1;
  } else if (parts.size() != 4) {
    return std::nullopt;
  }
  if (parts[base] != "data" || parts[base + 1] != "aotinductor") return std::nullopt;
  if (parts[base + 2].empty() || parts[base + 3].empty()) return std::nullopt;
  const std::string file(parts[base + 3]);
  return ModelFile{std::string(parts[base + 2]), name.substr(0, name.size() - file.size()), file};
}

std::string join(const std::vector<std::string>& items) {
  std::ostringstream out;
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << items[i];
  return out.str();
}

}  // namespace

std::vector<std::string> model_names(const ZipArchive& archive) {
  std::set<std::string> models;
  for (const ZipEntry& e : archive.entries()) {
    if (e.is_dir()) continue;
    if (const auto mf = model_file(e.name)) models.insert(mf->model);
  }
  return {models.begin(), models.end()};
}

std::string base_name(const std::string& entry_name) {
  const size_t slash = entry_name.rfind('/');
  return slash == std::string::npos ? entry_name : entry_name.substr(slash + 1);
}

ModelLayout find_model(const ZipArchive& archive, const std::string& model_name) {
  const std::string& path = archive.path();
  std::set<std::string> models;
  std::vector<const ZipEntry*> files;
  std::vector<std::string> dirs;
  bool pickle_weights = false;
  for (const ZipEntry& e : archive.entries()) {
    if (e.is_dir()) continue;
    const auto parts = split(e.name);
    // <stem>/data/weights/... holds weights saved as pickle_weights.
    if ((parts.size() >= 3 && parts[0] == "data" && parts[1] == "weights") ||
        (parts.size() >= 4 && parts[1] == "data" && parts[2] == "weights")) {
      pickle_weights = true;
    }
    const auto mf = model_file(e.name);
    if (!mf) continue;
    models.insert(mf->model);
    if (mf->model != model_name) continue;
    files.push_back(&e);
    dirs.push_back(mf->dir);
  }
  if (files.empty()) {
    if (models.empty()) {
      AOTRT_FAIL(kPackage, "package ", path, " has no data/aotinductor/ folder: it is not an "
                 "AOTInductor package (write one with torch._inductor.aoti_compile_and_package)");
    }
    AOTRT_FAIL(kPackage, "package ", path, " has no model '", model_name,
               "' under data/aotinductor/ (models there: ",
               join(std::vector<std::string>(models.begin(), models.end())), ")");
  }

  ModelLayout layout;
  layout.model_name = model_name;
  layout.has_pickle_weights = pickle_weights;
  std::vector<const ZipEntry*> sos, blobs;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string file = base_name(files[i]->name);
    if (ends_with(file, ".so")) sos.push_back(files[i]);
    if (ends_with(file, ".blob")) blobs.push_back(files[i]);
    if (ends_with(file, ".cubin") || ends_with(file, ".fatbin")) {
      layout.kernel_binaries.push_back(*files[i]);
    }
    if (file == "weights_config.json") layout.has_pickle_weights = true;
  }
  if (sos.empty()) {
    AOTRT_FAIL(kPackage, "package ", path, ": model '", model_name, "' has no compiled .so in ",
               dirs.front(), " (exported with aot_inductor.package_cpp_only=True? aotrt loads "
               "compiled models and does not build sources)");
  }
  if (sos.size() > 1) {
    std::vector<std::string> names;
    for (const ZipEntry* e : sos) names.push_back(e->name);
    AOTRT_FAIL(kPackage, "package ", path, ": model '", model_name, "' has ", sos.size(),
               " .so files (", join(names), "); refusing to guess which one is the model");
  }
  layout.so = *sos.front();
  layout.model_dir = layout.so.name.substr(0, layout.so.name.size() - base_name(layout.so.name).size());

  // Files that belong to the .so are named after it: <h>.wrapper.so ->
  // <h>.wrapper_metadata.json, <h>.wrapper_weights.blob.
  const std::string stem = layout.so.name.substr(0, layout.so.name.size() - 3);
  const ZipEntry* metadata = archive.find(stem + "_metadata.json");
  // A renamed .so: take the wrapper's metadata, else any (torch writes the
  // same content to <h>.wrapper_metadata.json and <h>.kernel_metadata.json).
  for (const char* suffix : {"wrapper_metadata.json", "_metadata.json"}) {
    for (const ZipEntry* e : files) {
      if (metadata == nullptr && ends_with(e->name, suffix)) metadata = e;
    }
  }
  AOTRT_CHECK(metadata != nullptr, kPackage, "package ", path, ": model '", model_name,
              "' has no metadata file ", stem, "_metadata.json next to its .so");
  layout.metadata = *metadata;

  if (const ZipEntry* source = archive.find(stem + ".cpp")) layout.wrapper_source = *source;

  if (const ZipEntry* blob = archive.find(stem + "_weights.blob")) {
    layout.weights_blob = *blob;
  } else if (blobs.size() == 1) {
    layout.weights_blob = *blobs.front();
  } else if (blobs.size() > 1) {
    std::vector<std::string> names;
    for (const ZipEntry* e : blobs) names.push_back(e->name);
    AOTRT_FAIL(kPackage, "package ", path, ": model '", model_name, "' has ", blobs.size(),
               " weight blobs (", join(names), ") and none is named ", stem, "_weights.blob");
  }
  return layout;
}

Metadata parse_metadata(const std::string& text, const std::string& what) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  AOTRT_CHECK(!json.is_discarded() && json.is_object(), kPackage, what,
              " is not a JSON object");
  Metadata md;
  for (const auto& [key, value] : json.items()) {
    md.values[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  const auto it = json.find("AOTI_DEVICE_KEY");
  AOTRT_CHECK(it != json.end() && it->is_string(), kPackage, what,
              " has no AOTI_DEVICE_KEY string (the device the model was compiled for)");
  md.device_key = it->get<std::string>();
  return md;
}

}  // namespace aotrt::package
