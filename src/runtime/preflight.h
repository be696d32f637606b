// Opening a package and every check made before its .so is dlopened; shared
// by Model::load (which refuses on any problem) and inspect_package (which
// reports them).
#pragma once

#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "package/elf_reader.h"
#include "package/layout.h"
#include "package/temp_dir.h"
#include "package/zip_reader.h"
#include "runtime/proxy_executor.h"

namespace aotrt::runtime {

// The generated source of a large model runs to megabytes; more than this is
// not read (its layouts are then unknown, which is advisory).
inline constexpr uint64_t kMaxWrapperSourceBytes = uint64_t{256} << 20;

struct OpenedPackage {
  package::ZipArchive archive;
  package::ModelLayout layout;
  package::Metadata metadata;
  package::TempDir dir;  // holds the extracted .so; removed with this object
  std::string so_path;
  package::ElfInfo elf;
  std::vector<ShimSymbol> shim_symbols;  // every undefined aoti_* symbol
  // Ops called through the proxy executor (<h>.wrapper.json), when the .so
  // calls it.
  std::vector<ExternNode> extern_nodes;
  std::vector<ExternOp> extern_ops;
  // Reasons the package cannot be loaded, each a full sentence.
  std::vector<std::string> problems;
  // What the export left slow (PackageInfo::export_advice).
  std::vector<std::string> export_advice;
};

// Opens the archive, finds the model, reads its metadata, extracts the .so
// into a new private folder and reads its ELF; then runs every check.
// Throws kPackage only when the package cannot be read at all.
// `external_weights`: the caller brings the weights (LoadOptions::weights),
// so weights the package keeps in a form aotrt cannot read are no problem.
OpenedPackage open_package(const std::string& path, const std::string& model_name,
                           bool external_weights = false);

// The problems, joined into one message for an Error.
std::string describe_problems(const OpenedPackage& pkg);

}  // namespace aotrt::runtime
