// Note [CPU export advice] (runtime/preflight.cpp) at Model::load, on a real
// package torch 2.13 exported with its default options, passed in by
// tests/e2e/test_export_advice.py (which exports it); skipped without one:
//   AOTRT_EXPORT_ADVICE_PT2   the package (scalar kernels, unfolded batch norms)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "aotrt/aotrt.h"
#include "package/temp_dir.h"

using aotrt::LoadOptions;
using aotrt::Model;

namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// What loading `path` with `options` prints on stderr.
std::string load_stderr(const std::string& path, const LoadOptions& options = {}) {
  testing::internal::CaptureStderr();
  const Model m = Model::load(path, options);
  const std::string text = testing::internal::GetCapturedStderr();
  EXPECT_EQ(m.info().export_advice, aotrt::inspect_package(path).export_advice);
  return text;
}

}  // namespace

// The advice is printed at the first load of a package in the process, not at
// later ones, nor when the caller asks to show it itself.
TEST(ExportAdviceReal, LoadSaysItOncePerPackage) {
  const char* p = std::getenv("AOTRT_EXPORT_ADVICE_PT2");
  if (p == nullptr || *p == 0) GTEST_SKIP() << "AOTRT_EXPORT_ADVICE_PT2 is not set";
  const aotrt::PackageInfo info = aotrt::inspect_package(p);
  ASSERT_EQ(info.export_advice.size(), 2u) << "the package should have scalar kernels and "
                                              "unfolded batch norms";
  // A copy under another name: a package this process has not loaded yet.
  aotrt::package::TempDir dir;
  const std::string copy = dir.path() + "/copy.pt2";
  std::filesystem::copy_file(p, copy);

  LoadOptions quiet;
  quiet.report_export_advice = false;
  EXPECT_EQ(load_stderr(copy, quiet), "");
  const std::string first = load_stderr(copy);
  EXPECT_EQ(count(first, "aotrt: note: " + copy + ": "), 2u) << first;
  for (const std::string& advice : info.export_advice) EXPECT_EQ(count(first, advice), 1u) << first;
  EXPECT_EQ(load_stderr(copy), "");  // said once
  EXPECT_EQ(count(load_stderr(p), "aotrt: note: "), 2u);  // another package path
}
