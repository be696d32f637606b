#include "runtime/pickle_weights.h"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string_view>

#include "core/error.h"
#include "core/view.h"
#include "runtime/mapped_file.h"

namespace aotrt::runtime {
namespace {

constexpr uint64_t kMaxConfigBytes = uint64_t{64} << 20;

// The raw bytes of the one storage a torch.save zip stored at `entry` holds
// (its <archive>/data/<key> entry): their offset in the .pt2 file and size.
struct StorageBytes {
  uint64_t offset = 0, size = 0;
};
StorageBytes storage_bytes(const package::ZipArchive& archive, const package::ZipEntry& entry) {
  const std::string what = "package " + archive.path() + ": pickled weights " + entry.name;
  const std::optional<uint64_t> at = archive.stored_data_offset(entry);
  AOTRT_CHECK(at.has_value(), kPackage, what, " is compressed; aotrt reads pickled weights in place "
              "from a .pt2 that stores them (as torch writes it)");
  archive.check_crc(entry);
  const package::ZipArchive inner = package::ZipArchive::open_window(archive.path(), *at, entry.size, what);
  const package::ZipEntry* data = nullptr;
  for (const package::ZipEntry& e : inner.entries()) {
    const size_t first = e.name.find('/');
    if (first == std::string::npos) continue;
    const std::string_view rest = std::string_view(e.name).substr(first + 1);
    if (rest.substr(0, 5) != "data/" || rest.size() == 5 || rest.find('/', 5) != std::string_view::npos) continue;
    AOTRT_CHECK(data == nullptr, kPackage, what, " holds more than one storage (", data->name, ", ",
                e.name, "); torch writes one per file");
    data = &e;
  }
  AOTRT_CHECK(data != nullptr, kPackage, what, " holds no storage (no <archive>/data/<key> entry)");
  const std::optional<uint64_t> bytes = inner.stored_data_offset(*data);
  AOTRT_CHECK(bytes.has_value(), kPackage, what, ": its storage ", data->name, " is compressed");
  return {*bytes, data->size};
}

std::vector<int64_t> ints(const nlohmann::json& v, const std::string& what) {
  AOTRT_CHECK(v.is_array(), kPackage, what, ": sizes and strides must be lists of integers");
  std::vector<int64_t> out;
  for (const auto& x : v) {
    AOTRT_CHECK(x.is_number_integer(), kPackage, what, ": sizes and strides must be lists of integers");
    out.push_back(x.get<int64_t>());
  }
  return out;
}

}  // namespace

Weights read_pickle_weights(const OpenedPackage& pkg, const ModelInfo& info) {
  const package::ZipArchive& archive = pkg.archive;
  const std::string& path = archive.path();
  const std::string config_name = pkg.layout.model_dir + "weights_config.json";
  const package::ZipEntry* config = archive.find(config_name);
  AOTRT_CHECK(config != nullptr, kPackage, "package ", path, ": model '", pkg.layout.model_name,
              "' keeps its weights as pickle_weights (data/weights/) but has no ", config_name,
              " saying which is which");
  const auto json = nlohmann::json::parse(archive.read(*config, kMaxConfigBytes), nullptr, false);
  AOTRT_CHECK(!json.is_discarded() && json.is_object(), kPackage, "package ", path, ": ",
              config_name, " is not a JSON object");
  // Entries are named <stem>/data/weights/<file>, beside <stem>/data/aotinductor/.
  const std::string root = pkg.layout.model_dir.substr(0, pkg.layout.model_dir.find("data/aotinductor/"));
  std::map<std::string, const ConstantInfo*> constants;
  for (const ConstantInfo& c : info.constants) {
    if (!c.from_folded) constants[c.original_fqn.empty() ? c.name : c.original_fqn] = &c;
  }
  auto file = std::make_shared<MappedFile>(path, /*copy_on_write=*/true);
  std::map<std::string, StorageBytes> storages;
  Weights w;
  for (const auto& [fqn, v] : json.items()) {
    const std::string what = "package " + path + ": " + config_name + " entry '" + fqn + "'";
    const auto c = constants.find(fqn);
    if (c == constants.end()) continue;  // folded, or compiled into the code
    AOTRT_CHECK(v.is_array() && v.size() == 4 && v[0].is_string() && v[3].is_number_integer(),
                kPackage, what, " is not [file, sizes, strides, storage offset]");
    const std::string name = root + "data/weights/" + v[0].get<std::string>();
    auto s = storages.find(name);
    if (s == storages.end()) {
      const package::ZipEntry* entry = archive.find(name);
      AOTRT_CHECK(entry != nullptr, kPackage, what, " names ", name, ", which the package lacks");
      s = storages.emplace(name, storage_bytes(archive, *entry)).first;
    }
    const std::vector<int64_t> sizes = ints(v[1], what), strides = ints(v[2], what);
    const int64_t offset = v[3].get<int64_t>();
    AOTRT_CHECK(sizes.size() == strides.size() && offset >= 0, kPackage, what,
                ": sizes and strides of different lengths, or a negative offset");
    const ScalarType dtype = c->second->dtype;
    try {
      check_view_in_storage(sizes, strides, offset, element_size(dtype),
                            static_cast<size_t>(s->second.size), what.c_str());
    } catch (const Error& e) {
      AOTRT_FAIL(kPackage, e.what(), " (", name, " holds ", s->second.size, " bytes)");
    }
    w.tensors.emplace(fqn, Tensor::from_blob(file->mutable_data() + s->second.offset, sizes, strides,
                                             dtype, cpu_device(), offset));
  }
  w.source = path + " (pickle_weights)";
  w.allow_unused = true;  // the config may name constants inductor folded away
  w.mapping = std::move(file);
  return w;
}

}  // namespace aotrt::runtime
