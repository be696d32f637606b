// Helpers for the package and loader tests: zips built with libzip, small
// synthetic ELF shared objects, and whole .pt2 packages around either.
#pragma once

#include <elf.h>
#include <zip.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "package/elf_reader.h"

namespace aotrt::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

struct ZipItem {
  std::string name;
  std::string data;
  bool deflate = false;
};

// Writes a zip with libzip; throws if libzip refuses an item.
inline void write_zip(const std::string& path, const std::vector<ZipItem>& items) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (z == nullptr) throw std::runtime_error("zip_open " + path);
  for (const ZipItem& item : items) {
    // The buffer is read at zip_close; `items` outlives it.
    zip_source_t* src = zip_source_buffer(z, item.data.data(), item.data.size(), 0);
    const zip_int64_t idx = zip_file_add(z, item.name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      const std::string msg = zip_strerror(z);
      zip_discard(z);
      throw std::runtime_error("zip_file_add " + item.name + ": " + msg);
    }
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx),
                             item.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) {
    const std::string msg = zip_strerror(z);
    zip_discard(z);
    throw std::runtime_error("zip_close: " + msg);
  }
}

// A minimal ELF64 shared object image: sections .dynstr, .dynsym, .dynamic,
// .shstrtab and nothing loadable. Enough for the ELF reader and for every
// check the loader makes before dlopen.
struct ElfSpec {
  uint16_t machine = aotrt::package::host_elf_machine();
  std::vector<std::string> needed;
  std::vector<std::string> undefined;
  std::vector<std::string> defined;
};

inline std::string make_elf(const ElfSpec& spec) {
  std::string dynstr(1, '\0');
  auto add_str = [&](const std::string& s) {
    const auto off = static_cast<uint32_t>(dynstr.size());
    dynstr += s;
    dynstr += '\0';
    return off;
  };
  std::vector<Elf64_Sym> syms(1);
  for (const auto& [names, undefined] : {std::pair{&spec.undefined, true},
                                        std::pair{&spec.defined, false}}) {
    for (const std::string& n : *names) {
      Elf64_Sym s{};
      s.st_name = add_str(n);
      s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
      s.st_shndx = undefined ? SHN_UNDEF : 2;
      syms.push_back(s);
    }
  }
  std::vector<Elf64_Dyn> dyn;
  for (const std::string& n : spec.needed) {
    Elf64_Dyn d{};
    d.d_tag = DT_NEEDED;
    d.d_un.d_val = add_str(n);
    dyn.push_back(d);
  }
  dyn.push_back(Elf64_Dyn{});  // DT_NULL
  const std::string shstr = std::string("\0.dynstr\0.dynsym\0.dynamic\0.shstrtab\0", 36);

  std::string image(sizeof(Elf64_Ehdr), '\0');
  auto append = [&](const void* data, size_t n) {
    while (image.size() % 8) image += '\0';
    const uint64_t off = image.size();
    image.append(static_cast<const char*>(data), n);
    return off;
  };
  const uint64_t dynstr_off = append(dynstr.data(), dynstr.size());
  const uint64_t dynsym_off = append(syms.data(), syms.size() * sizeof(Elf64_Sym));
  const uint64_t dynamic_off = append(dyn.data(), dyn.size() * sizeof(Elf64_Dyn));
  const uint64_t shstr_off = append(shstr.data(), shstr.size());

  Elf64_Shdr sh[5] = {};
  sh[1] = {1, SHT_STRTAB, 0, 0, dynstr_off, dynstr.size(), 0, 0, 1, 0};
  sh[2] = {9, SHT_DYNSYM, 0, 0, dynsym_off, syms.size() * sizeof(Elf64_Sym), 1, 1, 8,
           sizeof(Elf64_Sym)};
  sh[3] = {17, SHT_DYNAMIC, 0, 0, dynamic_off, dyn.size() * sizeof(Elf64_Dyn), 1, 0, 8,
           sizeof(Elf64_Dyn)};
  sh[4] = {26, SHT_STRTAB, 0, 0, shstr_off, shstr.size(), 0, 0, 1, 0};
  const uint64_t shoff = append(sh, sizeof sh);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = spec.machine;
  eh.e_version = EV_CURRENT;
  eh.e_shoff = shoff;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 5;
  eh.e_shstrndx = 4;
  std::memcpy(image.data(), &eh, sizeof eh);
  return image;
}

// The container C API every model .so exports, for synthetic ELFs that
// should pass that check.
inline std::vector<std::string> container_exports() {
  return {"AOTInductorModelContainerCreateWithDevice", "AOTInductorModelContainerDelete",
          "AOTInductorModelContainerRun", "AOTInductorModelContainerGetNumInputs",
          "AOTInductorModelContainerGetNumOutputs", "AOTInductorModelUpdateConstantsFromBlob"};
}

inline const char* kMetadataCpu =
    R"({"AOTI_DEVICE_KEY": "cpu", "AOTI_PLATFORM": "linux", "AOTI_MACHINE": "x86_64"})";

// The entries aoti_compile_and_package writes for one model; `blob` is left
// out when null.
inline std::vector<ZipItem> package_items(const std::string& so_bytes,
                                          const std::string* blob = nullptr,
                                          const std::string& metadata = kMetadataCpu,
                                          const std::string& stem = "pkg/") {
  const std::string dir = stem + "data/aotinductor/model/";
  std::vector<ZipItem> items = {
      {stem + "archive_format", "pt2"},
      {stem + "archive_version", "0"},
      {dir + "abc.wrapper.cpp", "// generated source", true},
      {dir + "abc.wrapper_metadata.json", metadata},
      {dir + "abc.wrapper.so", so_bytes},
  };
  if (blob != nullptr) items.push_back({dir + "abc.wrapper_weights.blob", *blob});
  return items;
}

// 16 float32 weights 0.5, 1.5, ..., 15.5 as the test model's blob.
inline std::string test_model_blob() {
  std::string blob(64, '\0');
  for (int i = 0; i < 16; ++i) {
    const float v = static_cast<float>(i) + 0.5f;
    std::memcpy(blob.data() + 4 * i, &v, 4);
  }
  return blob;
}

}  // namespace aotrt::testing
