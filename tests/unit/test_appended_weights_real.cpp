// AppendedWeightsReal.*: Note [Weights appended to the .so] on a package torch
// exported with aot_inductor.force_mmap_weights=True, named by
// AOTRT_APPENDED_PACKAGE (tests/e2e/test_large_packages.py sets it); skipped,
// and reported as skipped, without one.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "aotrt/aotrt.h"
#include "runtime/preflight.h"

namespace {

const char* package_path() { return std::getenv("AOTRT_APPENDED_PACKAGE"); }

// Resident kB of every mapping of `path` in this process (/proc/self/smaps), or -1 when none.
long resident_kb(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  long total = -1;
  while (std::getline(smaps, line)) {
    const bool header = !line.empty() && line.find(':') > line.find(' ');  // "addr-addr perms ..."
    if (header) {
      in = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
      if (in && total < 0) total = 0;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      total += std::stol(line.substr(4));
    }
  }
  return total;
}

}  // namespace

TEST(AppendedWeightsReal, OnlyTheElfPartIsWrittenOut) {
  if (package_path() == nullptr) GTEST_SKIP() << "AOTRT_APPENDED_PACKAGE is not set";
  const aotrt::runtime::OpenedPackage pkg = aotrt::runtime::open_package(package_path(), "model");
  ASSERT_TRUE(pkg.problems.empty()) << aotrt::runtime::describe_problems(pkg);
  EXPECT_EQ(pkg.weights_layout, "appended");
  ASSERT_TRUE(pkg.appended.has_value());
  EXPECT_FALSE(pkg.appended->extracted);
  const uint64_t weights = pkg.layout.so.size - pkg.appended->weights_offset;
  ASSERT_GE(weights, uint64_t{1} << 20) << "the test needs a package with at least 1 MiB of weights";
  struct stat st {};
  ASSERT_EQ(::stat(pkg.so_path.c_str(), &st), 0);
  // As long as the entry (what the model's lseek sees), with blocks only for the ELF part.
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), pkg.layout.so.size);
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, pkg.appended->weights_offset + weights / 4);
}

TEST(AppendedWeightsReal, WeightsAreAMappingOfThePackageUntilUnload) {
  if (package_path() == nullptr) GTEST_SKIP() << "AOTRT_APPENDED_PACKAGE is not set";
  const std::string path = package_path();
  ASSERT_EQ(resident_kb(path), -1) << "mapped before the load";
  {
    aotrt::Model model = aotrt::Model::load(path);
    EXPECT_EQ(model.info().weights_source, "package");
    // The model's copy is made; the mapping stays (torch's code keeps the
    // pointer) with its pages dropped (Note [Weights pages during load]).
    EXPECT_EQ(resident_kb(path), 0);
    const aotrt::PackageInfo info = aotrt::inspect_package(path);
    EXPECT_EQ(info.weights_layout, "appended");
    EXPECT_TRUE(info.weights_in_place);
  }
  EXPECT_EQ(resident_kb(path), -1) << "still mapped after the model was unloaded";
}
