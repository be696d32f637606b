#include "package/temp_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/error.h"

namespace aotrt::package {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string root = (base != nullptr && base[0] != '\0') ? base : "/tmp";
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  std::string templ = root + "/aotrt-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  // mkdtemp makes the folder with mode 0700: only this user can read the
  // extracted .so before it is loaded.
  if (::mkdtemp(buf.data()) == nullptr) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot make a temporary folder under ", root, " (", std::strerror(err),
               "); set TMPDIR to a writable folder");
  }
  path_ = buf.data();
}

TempDir::~TempDir() { remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

void TempDir::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);  // best effort; nothing to report to
  path_.clear();
}

}  // namespace aotrt::package
