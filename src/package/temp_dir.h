// A private temporary folder for one loaded package: made with mkdtemp
// (mode 0700) under $TMPDIR or /tmp, removed with everything in it when the
// TempDir is destroyed, whatever path (success, failure) got there.
#pragma once

#include <string>

namespace aotrt::package {

class TempDir {
 public:
  // Makes "<$TMPDIR or /tmp>/aotrt-XXXXXX"; throws kPackage naming the
  // folder and errno when it cannot.
  TempDir();
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Removes the folder now (also done by the destructor); never throws.
  void remove() noexcept;

 private:
  std::string path_;
};

}  // namespace aotrt::package
