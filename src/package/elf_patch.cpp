#include "package/elf_patch.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <array>
#include <span>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace aotrt::package {
namespace {

// Bounds-checked access to the image; every offset in it is untrusted.
class Image {
 public:
  Image(std::span<uint8_t> bytes, const std::string& what) : bytes_(bytes), what_(what) {}

  bool contains(uint64_t offset, uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  template <typename T>
  T read(uint64_t offset, const char* part) const {
    AOTRT_CHECK(contains(offset, sizeof(T)), kPackage, what_, ": ", part, " at offset ", offset,
                " lies outside the ", bytes_.size(), "-byte file");
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  uint8_t* at(uint64_t offset) { return bytes_.data() + offset; }
  // Length of the NUL-terminated string at `offset` in [table, table + size), if it is one.
  std::optional<uint64_t> string_length(uint64_t table, uint64_t size, uint64_t offset) const {
    if (offset >= size) return std::nullopt;
    const void* nul = std::memchr(bytes_.data() + table + offset, '\0', size - offset);
    if (nul == nullptr) return std::nullopt;
    return static_cast<const uint8_t*>(nul) - (bytes_.data() + table + offset);
  }
  const std::string& what() const { return what_; }

 private:
  std::span<uint8_t> bytes_;
  const std::string& what_;
};

std::vector<Elf64_Shdr> section_headers(const Image& img, const Elf64_Ehdr& eh) {
  if (eh.e_shoff == 0 || eh.e_shnum == 0) return {};  // none, or extended numbering: left alone
  AOTRT_CHECK(eh.e_shentsize == sizeof(Elf64_Shdr) &&
                  img.contains(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr)),
              kPackage, img.what(), ": section headers lie outside the file");
  std::vector<Elf64_Shdr> headers(eh.e_shnum);
  for (size_t i = 0; i < headers.size(); ++i) {
    headers[i] = img.read<Elf64_Shdr>(eh.e_shoff + i * sizeof(Elf64_Shdr), "section header");
  }
  return headers;
}

void check_table(const Image& img, const Elf64_Shdr& s, uint64_t entsize, const char* part) {
  AOTRT_CHECK((entsize == 0 || s.sh_entsize == entsize) && img.contains(s.sh_offset, s.sh_size),
              kPackage, img.what(), ": ", part, " lies outside the file or has entries of ",
              s.sh_entsize, " bytes");
}

size_t demote_unique(Image& img, const std::vector<Elf64_Shdr>& headers) {
  size_t n = 0;
  for (const Elf64_Shdr& s : headers) {
    if (s.sh_type != SHT_DYNSYM && s.sh_type != SHT_SYMTAB) continue;
    check_table(img, s, sizeof(Elf64_Sym), "a symbol table");
    for (uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Sym); ++k) {
      uint8_t* info = img.at(s.sh_offset + k * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_info));
      if (ELF64_ST_BIND(*info) == STB_GNU_UNIQUE) {
        *info = static_cast<uint8_t>(ELF64_ST_INFO(STB_GLOBAL, ELF64_ST_TYPE(*info)));
        ++n;
      }
    }
  }
  return n;
}

// Every .dynstr offset something other than `skip_symbol` names: symbols,
// DT_NEEDED/SONAME/RPATH/RUNPATH, version needs and definitions.
std::vector<uint64_t> dynstr_references(const Image& img, const std::vector<Elf64_Shdr>& headers,
                                        uint32_t dynstr_index, uint64_t skip_symbol) {
  std::vector<uint64_t> refs;
  for (const Elf64_Shdr& s : headers) {
    if (s.sh_link != dynstr_index) continue;
    if (s.sh_type == SHT_DYNSYM) {
      check_table(img, s, sizeof(Elf64_Sym), ".dynsym");
      for (uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Sym); ++k) {
        if (k != skip_symbol) refs.push_back(img.read<Elf64_Sym>(s.sh_offset + k * sizeof(Elf64_Sym), "symbol").st_name);
      }
    } else if (s.sh_type == SHT_DYNAMIC) {
      check_table(img, s, sizeof(Elf64_Dyn), ".dynamic");
      for (uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Dyn); ++k) {
        const auto d = img.read<Elf64_Dyn>(s.sh_offset + k * sizeof(Elf64_Dyn), "dynamic entry");
        if (d.d_tag == DT_NEEDED || d.d_tag == DT_SONAME || d.d_tag == DT_RPATH ||
            d.d_tag == DT_RUNPATH) {
          refs.push_back(d.d_un.d_val);
        }
      }
    } else if (s.sh_type == SHT_GNU_verneed) {
      check_table(img, s, 0, ".gnu.version_r");
      uint64_t at = s.sh_offset;
      for (uint64_t k = 0; k < s.sh_info && at < s.sh_offset + s.sh_size; ++k) {
        const auto vn = img.read<Elf64_Verneed>(at, "version need");
        refs.push_back(vn.vn_file);
        uint64_t aux = at + vn.vn_aux;
        for (uint32_t a = 0; a < vn.vn_cnt; ++a) {
          const auto va = img.read<Elf64_Vernaux>(aux, "version need entry");
          refs.push_back(va.vna_name);
          if (va.vna_next == 0) break;
          aux += va.vna_next;
        }
        if (vn.vn_next == 0) break;
        at += vn.vn_next;
      }
    } else if (s.sh_type == SHT_GNU_verdef) {
      check_table(img, s, 0, ".gnu.version_d");
      uint64_t at = s.sh_offset;
      for (uint64_t k = 0; k < s.sh_info && at < s.sh_offset + s.sh_size; ++k) {
        const auto vd = img.read<Elf64_Verdef>(at, "version definition");
        uint64_t aux = at + vd.vd_aux;
        for (uint32_t a = 0; a < vd.vd_cnt; ++a) {
          const auto va = img.read<Elf64_Verdaux>(aux, "version definition entry");
          refs.push_back(va.vda_name);
          if (va.vda_next == 0) break;
          aux += va.vda_next;
        }
        if (vd.vd_next == 0) break;
        at += vd.vd_next;
      }
    }
  }
  return refs;
}

// Note [Thread-local destructors and dlclose]: renames the .dynsym entry
// `from` (an import, or also a definition when `definitions` is set) to `to`,
// a name of the same length that differs in a prefix only.
enum class Renamed { kNoSuchSymbol, kYes, kSharedBytes };
// A reference `k` of .dynsym `dynsym_index` asked for a version (CXXABI_1.3.7,
// GLIBC_2.18, ...); aotrt's definitions are unversioned, so it becomes
// unversioned too.
void make_unversioned(Image& img, const std::vector<Elf64_Shdr>& headers, size_t dynsym_index, uint64_t k) {
  for (const Elf64_Shdr& v : headers) {
    if (v.sh_type != SHT_GNU_versym || v.sh_link != dynsym_index) continue;
    check_table(img, v, sizeof(Elf64_Half), ".gnu.version");
    AOTRT_CHECK(k < v.sh_size / sizeof(Elf64_Half), kPackage, img.what(),
                ": .gnu.version has no entry for symbol ", k);
    const Elf64_Half global = VER_NDX_GLOBAL;
    std::memcpy(img.at(v.sh_offset + k * sizeof(Elf64_Half)), &global, sizeof global);
  }
}

// `companions`: longer names that may hold `from` as their suffix (the linker
// merges "getenv" into "secure_getenv"), each with what it becomes when the
// shared bytes change; aotrt defines those too. Any other overlap refuses.
Renamed rename_symbol(Image& img, const std::vector<Elf64_Shdr>& headers, const char* from,
                   const char* to, bool definitions,
                   std::span<const std::array<const char*, 2>> companions = {}) {
  const size_t len = std::strlen(from);
  if (std::strlen(to) != len) return Renamed::kSharedBytes;
  // The bytes that differ: "__cxa" -> "aotrt"; names that start later are unchanged.
  size_t changed = 0;
  while (from[changed] != to[changed]) ++changed;
  for (size_t c = changed; c < len; ++c) {
    if (from[c] != to[c]) return Renamed::kSharedBytes;  // not a prefix swap
  }
  for (size_t i = 0; i < headers.size(); ++i) {
    const Elf64_Shdr& dynsym = headers[i];
    if (dynsym.sh_type != SHT_DYNSYM) continue;
    check_table(img, dynsym, sizeof(Elf64_Sym), ".dynsym");
    AOTRT_CHECK(dynsym.sh_link < headers.size(), kPackage, img.what(), ": .dynsym links to section ",
                dynsym.sh_link, " of ", headers.size());
    const Elf64_Shdr& strtab = headers[dynsym.sh_link];
    check_table(img, strtab, 0, ".dynstr");
    const uint64_t count = dynsym.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 1; k < count; ++k) {
      const auto sym = img.read<Elf64_Sym>(dynsym.sh_offset + k * sizeof(Elf64_Sym), "symbol");
      if (sym.st_shndx != SHN_UNDEF && !definitions) continue;
      const auto name_len = img.string_length(strtab.sh_offset, strtab.sh_size, sym.st_name);
      if (name_len != len ||
          std::memcmp(img.at(strtab.sh_offset + sym.st_name), from, len) != 0) {
        continue;
      }
      // Another name whose bytes overlap the changed prefix would change too.
      const uint64_t start = sym.st_name;
      std::vector<uint64_t> companion_names;  // string offsets of accepted companions
      for (uint64_t o : dynstr_references(img, headers, dynsym.sh_link, k)) {
        if (o == start || o >= start + changed) continue;
        if (o > start) return Renamed::kSharedBytes;
        const auto other = img.string_length(strtab.sh_offset, strtab.sh_size, o);
        if (!other || o + *other != start + len) continue;  // ends before ours starts changing
        // Ours is its suffix: only a known companion may share the bytes.
        const std::string name(reinterpret_cast<const char*>(img.at(strtab.sh_offset + o)), *other);
        const bool known = std::any_of(companions.begin(), companions.end(), [&](const auto& c) {
          return name == c[0] && std::string(c[1]) == name.substr(0, start - o) + to;
        });
        if (!known) return Renamed::kSharedBytes;
        companion_names.push_back(o);
      }
      std::memcpy(img.at(strtab.sh_offset + start), to, changed);
      make_unversioned(img, headers, i, k);
      for (uint64_t other = 1; other < count && !companion_names.empty(); ++other) {
        const auto osym = img.read<Elf64_Sym>(dynsym.sh_offset + other * sizeof(Elf64_Sym), "symbol");
        if (std::find(companion_names.begin(), companion_names.end(), osym.st_name) != companion_names.end()) {
          make_unversioned(img, headers, i, other);
        }
      }
      return Renamed::kYes;
    }
  }
  return Renamed::kNoSuchSymbol;
}

}  // namespace

ElfPatchResult patch_for_dlclose(std::span<uint8_t> image, const std::string& what,
                                 bool kernel_modules, bool input_checks, bool appended_weights) {
  Image img(image, what);
  AOTRT_CHECK(image.size() >= sizeof(Elf64_Ehdr) && std::memcmp(image.data(), ELFMAG, SELFMAG) == 0 &&
                  image[EI_CLASS] == ELFCLASS64,
              kPackage, what, " is not a 64-bit ELF file");
  const auto eh = img.read<Elf64_Ehdr>(0, "ELF header");
  const std::vector<Elf64_Shdr> headers = section_headers(img, eh);
  ElfPatchResult result;
  result.unique_symbols_demoted = demote_unique(img, headers);
  // A model that links libstdc++ statically defines __cxa_thread_atexit
  // itself, and its calls still go through the PLT to whichever definition
  // the global scope offers first; renamed, that is aotrt's. Its copy calls
  // glibc's __cxa_thread_atexit_impl, renamed too for models linked with
  // -Bsymbolic, whose calls stay inside them.
  const bool via_libstdcxx = rename_symbol(img, headers, kThreadAtexit, kThreadAtexitReplacement,
                                           /*definitions=*/true) == Renamed::kYes;
  const bool via_glibc = rename_symbol(img, headers, kThreadAtexitImpl, kThreadAtexitImplReplacement,
                                       /*definitions=*/false) == Renamed::kYes;
  result.thread_atexit_redirected = via_libstdcxx || via_glibc;
  if (kernel_modules) {
    for (const auto& [from, to] : kModuleLoads) {
      result.module_loads_redirected +=
          rename_symbol(img, headers, from, to, /*definitions=*/false) == Renamed::kYes;
    }
  }
  if (input_checks) {
    const Renamed r = rename_symbol(img, headers, kGetenv, kGetenvReplacement, /*definitions=*/false,
                                    kGetenvCompanions);
    result.getenv_redirected = r == Renamed::kYes;
    result.getenv_shared = r == Renamed::kSharedBytes;
  }
  if (appended_weights) {
    for (const auto& [from, to] : kMmaps) {
      result.mmap_redirected |=
          rename_symbol(img, headers, from, to, /*definitions=*/false) == Renamed::kYes;
    }
  }
  return result;
}

ElfPatchResult patch_for_dlclose_in_file(const std::string& path, bool kernel_modules,
                                         bool input_checks, bool appended_weights, uint64_t elf_bytes) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot open ", path, " to prepare it for loading: ", std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    AOTRT_FAIL(kPackage, path, " is empty or cannot be read");
  }
  const auto size = static_cast<size_t>(
      elf_bytes > 0 ? std::min<uint64_t>(elf_bytes, static_cast<uint64_t>(st.st_size)) : st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) AOTRT_FAIL(kPackage, "cannot map ", path, ": ", std::strerror(err));
  struct Unmap {
    void* p;
    size_t n;
    // Whole pages, as in model.cpp's MappedFile (for ThreadSanitizer).
    ~Unmap() {
      const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      ::munmap(p, (n + page - 1) / page * page);
    }
  } unmap{p, size};
  return patch_for_dlclose({static_cast<uint8_t*>(p), size}, path, kernel_modules, input_checks,
                           appended_weights);
}

}  // namespace aotrt::package
