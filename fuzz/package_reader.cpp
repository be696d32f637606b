// libFuzzer target: arbitrary bytes as a .pt2 package, through everything
// aotrt does to a package before it dlopens the model .so: the zip reader
// (ZIP_CHECKCONS, entry names, the zip bomb bound), the model layout, the
// metadata JSON, extraction into a private folder, the ELF reader and every
// preflight check (inspect_package), then the ELF reader and the pre-dlopen
// patch (package/elf_patch.h) on the bytes themselves.
//
// Invariants, beyond "no crash, no sanitizer report": only aotrt::Error is
// thrown, with a non-empty message; and every private folder is removed
// (TMPDIR points at a folder of this process that must stay empty).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "package/elf_patch.h"
#include "package/elf_reader.h"
#include "package/layout.h"

namespace {

std::string g_tmpdir;
std::string g_input;

bool empty_folder(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return false;
  bool empty = true;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
  }
  ::closedir(d);
  return empty;
}

void write_input(const uint8_t* data, size_t size) {
  const int fd = ::open(g_input.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  while (size > 0) {
    const ssize_t w = ::write(fd, data, size);
    if (w <= 0) std::abort();
    data += w;
    size -= static_cast<size_t>(w);
  }
  ::close(fd);
}

void expect_error_message(const aotrt::Error& e) {
  if (e.what()[0] == '\0') {
    std::fprintf(stderr, "aotrt::Error with an empty message\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && base[0] ? base : "/tmp") + "/aotrt-fuzz-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) std::abort();
  const std::string root = buf.data();
  g_input = root + "/input.pt2";
  g_tmpdir = root + "/tmp";
  if (::mkdir(g_tmpdir.c_str(), 0700) != 0) std::abort();
  ::setenv("TMPDIR", g_tmpdir.c_str(), 1);  // the loader's private folders go here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_input(data, size);
  try {
    const aotrt::PackageInfo info = aotrt::inspect_package(g_input);
    (void)info.missing_symbol_count();
  } catch (const aotrt::Error& e) {
    expect_error_message(e);
  }
  if (!empty_folder(g_tmpdir)) {
    std::fprintf(stderr, "inspect_package left files in %s\n", g_tmpdir.c_str());
    std::abort();
  }
  // The same bytes as a model .so and as metadata.
  try {
    aotrt::package::read_elf({data, size}, "fuzz input");
  } catch (const aotrt::Error& e) {
    expect_error_message(e);
  }
  std::vector<uint8_t> copy(data, data + size);
  try {
    aotrt::package::patch_for_dlclose(copy, "fuzz input");
  } catch (const aotrt::Error& e) {
    expect_error_message(e);
  }
  try {
    aotrt::package::parse_metadata(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const aotrt::Error& e) {
    expect_error_message(e);
  }
  return 0;
}
