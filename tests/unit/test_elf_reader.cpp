// The ELF reader, on libaotrt.so itself, on the test model .so, and on
// synthetic images (including malformed ones).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "aotrt/shim.h"
#include "core/error.h"
#include "package/elf_reader.h"
#include "package_test_util.h"

using aotrt::Error;
using aotrt::package::ElfInfo;
using aotrt::package::host_elf_machine;
using aotrt::package::read_elf;
using aotrt::package::read_elf_file;
using namespace aotrt::testing;

namespace {

std::string libaotrt_path() {
  Dl_info info{};
  EXPECT_NE(dladdr(reinterpret_cast<void*>(&aoti_torch_empty_strided), &info), 0);
  return info.dli_fname;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

ElfInfo parse(const std::string& image) {
  return read_elf({reinterpret_cast<const uint8_t*>(image.data()), image.size()}, "image");
}

}  // namespace

TEST(ElfReader, HostMachineMatchesTheBuild) {
#if defined(__x86_64__)
  EXPECT_EQ(host_elf_machine(), EM_X86_64);
  EXPECT_EQ(aotrt::package::elf_machine_name(host_elf_machine()), "x86_64");
#elif defined(__aarch64__)
  EXPECT_EQ(host_elf_machine(), EM_AARCH64);
#endif
  EXPECT_EQ(aotrt::package::elf_machine_name(9999), "machine 9999");
}

TEST(ElfReader, ReadsLibaotrtItself) {
  const ElfInfo info = read_elf_file(libaotrt_path());
  EXPECT_TRUE(info.native);
  EXPECT_EQ(info.elf_class, 64);
  EXPECT_EQ(info.type, ET_DYN);
  EXPECT_EQ(info.machine, host_elf_machine());
  // What aotrt exports, what it imports, and what it links.
  EXPECT_TRUE(contains(info.defined, "aoti_torch_empty_strided"));
  EXPECT_TRUE(contains(info.defined, "aotrt_last_error"));
  EXPECT_FALSE(contains(info.undefined, "aoti_torch_empty_strided"));
  EXPECT_TRUE(contains(info.undefined, "zip_open"));
  EXPECT_TRUE(contains(info.undefined, "dlopen"));
  EXPECT_FALSE(contains(info.defined, "zip_open"));
  EXPECT_TRUE(info.needs("libzip"));
  EXPECT_FALSE(info.needs("libtorch"));
  EXPECT_TRUE(std::is_sorted(info.undefined.begin(), info.undefined.end()));
}

TEST(ElfReader, ReadsTheTestModel) {
  const ElfInfo info = read_elf_file(AOTRT_TEST_MODEL_SO);
  EXPECT_TRUE(info.native);
  EXPECT_TRUE(contains(info.defined, "AOTInductorModelContainerRun"));
  EXPECT_TRUE(contains(info.undefined, "aoti_torch_empty_strided"));
  EXPECT_TRUE(contains(info.undefined, "aoti_torch__reinterpret_tensor"));
  EXPECT_FALSE(contains(info.defined, "aoti_torch_empty_strided"));
}

TEST(ElfReader, SyntheticImageRoundTrips) {
  ElfSpec spec;
  spec.needed = {"libfoo.so.1", "libtorch_cpu.so"};
  spec.undefined = {"aoti_torch_b", "aoti_torch_a", "aoti_torch_a"};
  spec.defined = {"AOTInductorModelContainerRun"};
  const ElfInfo info = parse(make_elf(spec));
  EXPECT_TRUE(info.native);
  EXPECT_EQ(info.needed, (std::vector<std::string>{"libfoo.so.1", "libtorch_cpu.so"}));
  EXPECT_EQ(info.undefined, (std::vector<std::string>{"aoti_torch_a", "aoti_torch_b"}));
  EXPECT_EQ(info.defined, (std::vector<std::string>{"AOTInductorModelContainerRun"}));
  EXPECT_TRUE(info.needs("libtorch"));
  EXPECT_FALSE(info.embedded_constants_bytes.has_value());
}

TEST(ElfReader, ForeignMachineIsNotNative) {
  ElfSpec spec;
  spec.machine = host_elf_machine() == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
  spec.undefined = {"aoti_torch_a"};
  const ElfInfo info = parse(make_elf(spec));
  EXPECT_FALSE(info.native);
  EXPECT_EQ(info.machine, spec.machine);
  EXPECT_TRUE(info.undefined.empty());  // a foreign file is not read further

  std::string be = make_elf(ElfSpec{});
  be[EI_DATA] = ELFDATA2MSB;
  EXPECT_FALSE(parse(be).native);
  EXPECT_FALSE(parse(be).little_endian);
  std::string c32 = make_elf(ElfSpec{});
  c32[EI_CLASS] = ELFCLASS32;
  EXPECT_FALSE(parse(c32).native);
  EXPECT_EQ(parse(c32).elf_class, 32);
}

TEST(ElfReader, RefusesMalformedImages) {
  ElfSpec spec;
  spec.needed = {"libfoo.so"};
  spec.undefined = {"aoti_torch_a"};
  const std::string good = make_elf(spec);
  EXPECT_THROW(parse(""), Error);
  EXPECT_THROW(parse("not an elf file at all, no magic"), Error);
  // Every truncation is refused (or, cut inside the header, refused too);
  // none reads past the end.
  for (size_t keep = 0; keep < good.size(); keep += 7) {
    EXPECT_THROW(parse(good.substr(0, keep)), Error) << "kept " << keep << " bytes";
  }
  // Section headers pointing outside the file.
  std::string far = good;
  Elf64_Ehdr eh;
  std::memcpy(&eh, far.data(), sizeof eh);
  eh.e_shoff = 1ull << 40;
  std::memcpy(far.data(), &eh, sizeof eh);
  EXPECT_THROW(parse(far), Error);
  // A symbol name offset past its string table.
  std::string badname = good;
  std::memcpy(&eh, badname.data(), sizeof eh);
  Elf64_Shdr dynsym;
  std::memcpy(&dynsym, badname.data() + eh.e_shoff + 2 * sizeof(Elf64_Shdr), sizeof dynsym);
  Elf64_Sym sym;
  std::memcpy(&sym, badname.data() + dynsym.sh_offset + sizeof(Elf64_Sym), sizeof sym);
  sym.st_name = 0x7fffffff;
  std::memcpy(badname.data() + dynsym.sh_offset + sizeof(Elf64_Sym), &sym, sizeof sym);
  EXPECT_THROW(parse(badname), Error);
  // No .dynsym at all.
  std::string nodyn = good;
  dynsym.sh_type = SHT_PROGBITS;
  std::memcpy(nodyn.data() + eh.e_shoff + 2 * sizeof(Elf64_Shdr), &dynsym, sizeof dynsym);
  try {
    parse(nodyn);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(".dynsym"), std::string::npos) << e.what();
  }
}

TEST(ElfReader, RefusesMissingFile) {
  EXPECT_THROW(read_elf_file("/nonexistent/x.so"), Error);
}
