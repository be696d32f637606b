// inspect_package (aotrt/aotrt.h): the checks Model::load makes before
// dlopen, reported instead of thrown.
#include <algorithm>

#include "aotrt/aotrt.h"
#include "runtime/preflight.h"

namespace aotrt {

size_t PackageInfo::missing_symbol_count() const {
  return static_cast<size_t>(std::count_if(shim_symbols.begin(), shim_symbols.end(),
                                           [](const ShimSymbol& s) {
                                             return !s.provided && s.refusal.empty();
                                           }));
}

size_t PackageInfo::declined_symbol_count() const {
  return static_cast<size_t>(std::count_if(shim_symbols.begin(), shim_symbols.end(),
                                           [](const ShimSymbol& s) {
                                             return !s.provided && !s.refusal.empty();
                                           }));
}

PackageInfo inspect_package(const std::string& package_path, const std::string& model_name) {
  const runtime::OpenedPackage pkg = runtime::open_package(package_path, model_name);
  PackageInfo info;
  info.package_path = package_path;
  info.model_name = pkg.layout.model_name;
  info.so_name = pkg.layout.so.name;
  info.device_key = pkg.metadata.device_key;
  info.metadata = pkg.metadata.values;
  for (const package::ZipEntry& e : pkg.archive.entries()) info.files.push_back({e.name, e.size});
  info.machine = package::elf_machine_name(pkg.elf.machine);
  info.needed_libraries = pkg.elf.needed;
  info.shim_symbols = pkg.shim_symbols;
  info.extern_ops = pkg.extern_ops;
  info.has_weights_blob = pkg.layout.weights_blob.has_value();
  info.weights_layout = pkg.weights_layout;
  info.weights_bytes = pkg.weights_bytes;
  info.weights_in_place = pkg.weights_in_place;
  info.problems = pkg.problems;
  info.export_advice = pkg.export_advice;
  return info;
}

}  // namespace aotrt
