// Reads what the loader must know about a model .so before it dlopens it:
// the machine it was built for, the libraries it needs (DT_NEEDED), and its
// dynamic symbols, undefined (what it will ask aotrt for) and defined (what
// it exports). Only <elf.h> and bounds-checked reads over the bytes: a
// malformed file is refused with an error, never read past its end.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace aotrt::package {

struct ElfInfo {
  uint16_t machine = 0;   // e_machine (EM_X86_64, EM_AARCH64, ...)
  int elf_class = 0;      // 32 or 64
  bool little_endian = true;
  // Same class, byte order and machine as this process; only then are the
  // lists below read (a foreign file is refused without parsing further).
  bool native = false;
  uint16_t type = 0;      // e_type; a model .so is ET_DYN
  std::vector<std::string> needed;     // DT_NEEDED, in order
  std::vector<std::string> undefined;  // undefined dynamic symbols, sorted, unique
  std::vector<std::string> defined;    // defined global/weak dynamic symbols, sorted, unique
  // Bytes between _binary_constants_bin_start and _end in .symtab, when the
  // file is not stripped: AOTInductor links the model's weights there (or,
  // for weights kept outside the .so, only an 8-byte size).
  std::optional<uint64_t> embedded_constants_bytes;
  // A model built with its weights appended to its own file (USE_MMAP_SELF,
  // Note [Weights appended to the .so] in runtime/model_mmap.h): its 16
  // constant bytes are the size of what is appended (the weights and an
  // 8-byte magic number) and that magic number. Set when the constants are
  // 16 bytes in the file and the .so imports mmap and dladdr.
  struct AppendedWeights {
    uint64_t size = 0;   // bytes at the end of the file: the weights, then the magic
    uint64_t magic = 0;  // the last 8 bytes of the file must hold it
  };
  std::optional<AppendedWeights> appended_weights;
  // Where the ELF's own contents end: its headers and every section with
  // bytes in the file. Appended weights start at or after it.
  uint64_t elf_end = 0;

  bool needs(const std::string& library_prefix) const;
};

// Parses an ELF image held in memory; `what` names it in errors (kPackage).
ElfInfo read_elf(std::span<const uint8_t> bytes, const std::string& what);
// Maps the file read-only and parses it; errors name `what` (default: the path).
ElfInfo read_elf_file(const std::string& path, const std::string& what = "");

// e_machine of the running aotrt library (read from its own ELF header).
uint16_t host_elf_machine();
// "x86_64", "aarch64", ... or "machine <n>".
std::string elf_machine_name(uint16_t machine);

}  // namespace aotrt::package
