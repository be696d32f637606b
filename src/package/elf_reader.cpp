#include "package/elf_reader.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "core/error.h"

namespace aotrt::package {
namespace {

constexpr bool kHostLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// Bounds-checked views of the image. Every offset and count in an ELF file is
// untrusted: each read checks [offset, offset + size) lies inside the bytes.
class Image {
 public:
  Image(std::span<const uint8_t> bytes, const std::string& what) : bytes_(bytes), what_(what) {}

  bool contains(uint64_t offset, uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  template <typename T>
  T read(uint64_t offset, const char* part) const {
    AOTRT_CHECK(contains(offset, sizeof(T)), kPackage, what_, ": ", part, " at offset ",
                offset, " lies outside the ", bytes_.size(), "-byte file");
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));  // no alignment assumed
    return value;
  }
  // The NUL-terminated string at `index` in a string table section.
  std::string_view string_at(const Elf64_Shdr& table, uint64_t index, const char* part) const {
    AOTRT_CHECK(contains(table.sh_offset, table.sh_size), kPackage, what_, ": ", part,
                " string table lies outside the file");
    AOTRT_CHECK(index < table.sh_size, kPackage, what_, ": ", part, " name offset ", index,
                " lies outside its ", table.sh_size, "-byte string table");
    const char* begin = reinterpret_cast<const char*>(bytes_.data() + table.sh_offset + index);
    const size_t room = static_cast<size_t>(table.sh_size - index);
    const void* nul = std::memchr(begin, '\0', room);
    AOTRT_CHECK(nul != nullptr, kPackage, what_, ": ", part, " name at offset ", index,
                " is not NUL-terminated");
    return {begin, static_cast<size_t>(static_cast<const char*>(nul) - begin)};
  }
  const std::string& what() const { return what_; }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& what_;
};

std::vector<Elf64_Shdr> section_headers(const Image& img, const Elf64_Ehdr& eh) {
  if (eh.e_shoff == 0) return {};
  AOTRT_CHECK(eh.e_shentsize == sizeof(Elf64_Shdr), kPackage, img.what(),
              ": section header size ", eh.e_shentsize, " is not ", sizeof(Elf64_Shdr));
  uint64_t count = eh.e_shnum;
  if (count == 0) {
    // More than SHN_LORESERVE sections: the real count is in section 0.
    count = img.read<Elf64_Shdr>(eh.e_shoff, "section header 0").sh_size;
  }
  AOTRT_CHECK(count <= (UINT64_MAX / sizeof(Elf64_Shdr)) &&
                  img.contains(eh.e_shoff, count * sizeof(Elf64_Shdr)),
              kPackage, img.what(), ": ", count, " section headers at offset ", eh.e_shoff,
              " lie outside the file");
  std::vector<Elf64_Shdr> headers(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    headers[i] = img.read<Elf64_Shdr>(eh.e_shoff + i * sizeof(Elf64_Shdr), "section header");
  }
  return headers;
}

const Elf64_Shdr& linked_section(const std::vector<Elf64_Shdr>& headers, const Elf64_Shdr& s,
                                 const Image& img, const char* part) {
  AOTRT_CHECK(s.sh_link < headers.size(), kPackage, img.what(), ": ", part,
              " links to section ", s.sh_link, " of ", headers.size());
  return headers[s.sh_link];
}

// Calls fn(sym, name) for every entry of a symbol table section.
template <typename Fn>
void for_each_symbol(const Image& img, const std::vector<Elf64_Shdr>& headers,
                     const Elf64_Shdr& table, const char* part, Fn&& fn) {
  AOTRT_CHECK(table.sh_entsize == sizeof(Elf64_Sym), kPackage, img.what(), ": ", part,
              " entry size ", table.sh_entsize, " is not ", sizeof(Elf64_Sym));
  AOTRT_CHECK(img.contains(table.sh_offset, table.sh_size), kPackage, img.what(), ": ", part,
              " lies outside the file");
  const Elf64_Shdr& strings = linked_section(headers, table, img, part);
  const uint64_t count = table.sh_size / sizeof(Elf64_Sym);
  for (uint64_t i = 1; i < count; ++i) {  // entry 0 is the null symbol
    const auto sym = img.read<Elf64_Sym>(table.sh_offset + i * sizeof(Elf64_Sym), part);
    fn(sym, img.string_at(strings, sym.st_name, part));
  }
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

bool ElfInfo::needs(const std::string& library_prefix) const {
  return std::any_of(needed.begin(), needed.end(), [&](const std::string& lib) {
    return lib.compare(0, library_prefix.size(), library_prefix) == 0;
  });
}

ElfInfo read_elf(std::span<const uint8_t> bytes, const std::string& what) {
  const Image img(bytes, what);
  AOTRT_CHECK(bytes.size() >= EI_NIDENT && std::memcmp(bytes.data(), ELFMAG, SELFMAG) == 0,
              kPackage, what, " is not an ELF file");
  ElfInfo info;
  const uint8_t cls = bytes[EI_CLASS], data = bytes[EI_DATA];
  AOTRT_CHECK(cls == ELFCLASS32 || cls == ELFCLASS64, kPackage, what, ": unknown ELF class ",
              int{cls});
  AOTRT_CHECK(data == ELFDATA2LSB || data == ELFDATA2MSB, kPackage, what,
              ": unknown ELF byte order ", int{data});
  info.elf_class = cls == ELFCLASS64 ? 64 : 32;
  info.little_endian = data == ELFDATA2LSB;
  // e_type and e_machine sit at offsets 16 and 18 in both classes.
  auto half = [&](uint64_t offset, const char* part) {
    auto raw = img.read<uint16_t>(offset, part);
    if (info.little_endian != kHostLittleEndian) raw = static_cast<uint16_t>((raw >> 8) | (raw << 8));
    return raw;
  };
  info.type = half(16, "e_type");
  info.machine = half(18, "e_machine");
  info.native = info.elf_class == 8 * static_cast<int>(sizeof(void*)) &&
                info.little_endian == kHostLittleEndian && info.machine == host_elf_machine();
  if (!info.native || info.elf_class != 64) return info;

  const auto eh = img.read<Elf64_Ehdr>(0, "ELF header");
  const std::vector<Elf64_Shdr> headers = section_headers(img, eh);
  bool have_dynsym = false;
  std::optional<uint64_t> const_start, const_end;
  uint16_t const_section = SHN_UNDEF;
  info.elf_end = std::max<uint64_t>({sizeof(Elf64_Ehdr), eh.e_shoff + uint64_t{eh.e_shnum} * eh.e_shentsize,
                                     eh.e_phoff + uint64_t{eh.e_phnum} * eh.e_phentsize});
  for (const Elf64_Shdr& s : headers) {
    if (s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL) info.elf_end = std::max(info.elf_end, s.sh_offset + s.sh_size);
  }
  for (const Elf64_Shdr& s : headers) {
    if (s.sh_type == SHT_DYNSYM) {
      have_dynsym = true;
      for_each_symbol(img, headers, s, ".dynsym", [&](const Elf64_Sym& sym, std::string_view name) {
        if (name.empty()) return;
        const int bind = ELF64_ST_BIND(sym.st_info);
        if (sym.st_shndx == SHN_UNDEF) {
          info.undefined.emplace_back(name);
        } else if (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) {
          info.defined.emplace_back(name);
        }
      });
    } else if (s.sh_type == SHT_SYMTAB) {
      for_each_symbol(img, headers, s, ".symtab", [&](const Elf64_Sym& sym, std::string_view name) {
        if (sym.st_shndx == SHN_UNDEF) return;
        if (name == "_binary_constants_bin_start") {
          const_start = sym.st_value;
          const_section = sym.st_shndx;
        }
        if (name == "_binary_constants_bin_end") const_end = sym.st_value;
      });
    } else if (s.sh_type == SHT_DYNAMIC) {
      AOTRT_CHECK(s.sh_entsize == sizeof(Elf64_Dyn), kPackage, what, ": .dynamic entry size ",
                  s.sh_entsize, " is not ", sizeof(Elf64_Dyn));
      AOTRT_CHECK(img.contains(s.sh_offset, s.sh_size), kPackage, what,
                  ": .dynamic lies outside the file");
      const Elf64_Shdr& strings = linked_section(headers, s, img, ".dynamic");
      for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= s.sh_size; off += sizeof(Elf64_Dyn)) {
        const auto dyn = img.read<Elf64_Dyn>(s.sh_offset + off, ".dynamic");
        if (dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag == DT_NEEDED) {
          info.needed.emplace_back(img.string_at(strings, dyn.d_un.d_val, "DT_NEEDED"));
        }
      }
    }
  }
  AOTRT_CHECK(have_dynsym, kPackage, what,
              " has no dynamic symbol table (.dynsym); it is not a shared library aotrt can check");
  if (const_start && const_end && *const_end >= *const_start) {
    info.embedded_constants_bytes = *const_end - *const_start;
  }
  sort_unique(info.undefined);
  sort_unique(info.defined);
  auto imports = [&](const char* name) {
    return std::binary_search(info.undefined.begin(), info.undefined.end(), std::string(name));
  };
  if (info.embedded_constants_bytes == 16 && const_section < headers.size() &&
      (imports("mmap") || imports("mmap64")) && imports("dladdr")) {
    const Elf64_Shdr& sec = headers[const_section];
    AOTRT_CHECK(sec.sh_type != SHT_NOBITS && *const_start >= sec.sh_addr &&
                    *const_start - sec.sh_addr <= sec.sh_size && sec.sh_size - (*const_start - sec.sh_addr) >= 16,
                kPackage, what, ": _binary_constants_bin_start lies outside its section");
    const uint64_t at = sec.sh_offset + (*const_start - sec.sh_addr);
    info.appended_weights = ElfInfo::AppendedWeights{img.read<uint64_t>(at, "the appended weights' size"),
                                                     img.read<uint64_t>(at + 8, "the appended weights' magic")};
  }
  return info;
}

ElfInfo read_elf_file(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot open ", path, ": ", std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    AOTRT_FAIL(kPackage, what.empty() ? path : what, " is empty or cannot be read");
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (map == MAP_FAILED) AOTRT_FAIL(kPackage, "cannot map ", path, ": ", std::strerror(err));
  struct Unmap {
    void* p;
    size_t n;
    // Whole pages, as in model.cpp's MappedFile (for ThreadSanitizer).
    ~Unmap() {
      const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      ::munmap(p, (n + page - 1) / page * page);
    }
  } unmap{map, size};
  return read_elf({static_cast<const uint8_t*>(map), size}, what.empty() ? path : what);
}

uint16_t host_elf_machine() {
  // The ELF header of the library this code is in, as the dynamic loader
  // mapped it: whatever machine aotrt was built for is what it can load.
  static const uint16_t machine = [] {
    Dl_info dl{};
    if (::dladdr(reinterpret_cast<void*>(&host_elf_machine), &dl) != 0 && dl.dli_fbase != nullptr) {
      uint16_t m;
      std::memcpy(&m, static_cast<const char*>(dl.dli_fbase) + 18, sizeof m);
      return m;
    }
#if defined(__x86_64__)
    return uint16_t{EM_X86_64};
#elif defined(__aarch64__)
    return uint16_t{EM_AARCH64};
#else
    return uint16_t{EM_NONE};
#endif
  }();
  return machine;
}

std::string elf_machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_ARM: return "arm";
    case EM_PPC64: return "ppc64";
    case EM_PPC: return "ppc";
    case EM_RISCV: return "riscv";
    case EM_S390: return "s390x";
    case EM_LOONGARCH: return "loongarch";
    default: return "machine " + std::to_string(machine);
  }
}

}  // namespace aotrt::package
