// Opening a package and every check made before its .so is dlopened; shared
// by Model::load (which refuses on any problem) and inspect_package (which
// reports them).
#pragma once

#include <optional>
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
  // Note [Weights appended to the .so] (runtime/model_mmap.h): a .so whose
  // weights torch appended to it. Unless `extracted`, so_path holds only
  // the ELF part, as long as the entry (sparse past weights_offset).
  struct Appended {
    uint64_t data_offset = 0;     // the entry's bytes in the archive file
    uint64_t weights_offset = 0;  // where the appended weights start in the entry
    bool extracted = false;       // the whole entry is in so_path (a compressed entry)
  };
  std::optional<Appended> appended;
  // Where the package keeps its weights (PackageInfo::weights_layout) and how many bytes.
  std::string weights_layout;
  uint64_t weights_bytes = 0;
  bool weights_in_place = false;
  // What the export left slow (PackageInfo::export_advice).
  std::vector<std::string> export_advice;
};

// Writes the rest of an appended-weights .so (from weights_offset to the
// entry's end) into so_path: the fallback when the model's mmap cannot be
// redirected. Throws kPackage.
void extract_appended_weights(const OpenedPackage& pkg);

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
