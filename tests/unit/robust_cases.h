// Helpers for the robustness tests (test_robust_*.cpp): each case they try
// is recorded, and docs/robustness.md is rendered from the records by
// scripts/robustness_table.py.
//
// When AOTRT_ROBUSTNESS_LOG names a file, record_case() appends one JSON line
//   {"area": ..., "case": ..., "outcome": ..., "message": ...}
// to it (tests/e2e/test_robust_*.py write the same lines). Without it,
// nothing is written and the tests check the same things.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aotrt/aotrt.h"
#include "package/temp_dir.h"

namespace aotrt::testing {

// AddressSanitizer keeps freed memory in quarantine and maps its own heap
// regions as it goes, so RSS and the count of all mappings are no measure of
// leaks there (LeakSanitizer is); the lifecycle tests skip those two bounds
// and keep the rest (the model mappings among them).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kProcessMemoryIsMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kProcessMemoryIsMeaningful = false;
#else
inline constexpr bool kProcessMemoryIsMeaningful = true;
#endif
#else
inline constexpr bool kProcessMemoryIsMeaningful = true;
#endif

inline void record_case(const std::string& area, const std::string& name,
                        const std::string& outcome, const std::string& message) {
  static std::mutex mu;
  const char* path = std::getenv("AOTRT_ROBUSTNESS_LOG");
  if (path == nullptr || path[0] == '\0') return;
  // The plain build's run records the cases; an AddressSanitizer build runs
  // the same tests later, and its RSS and mapping figures would replace the
  // plain ones in the table while meaning nothing (see above).
  if (!kProcessMemoryIsMeaningful) return;
  // A case whose test has already failed is recorded as failed, whatever
  // outcome the test meant to record.
  const std::string what = ::testing::Test::HasFailure() ? "FAILED (meant: " + outcome + ")" : outcome;
  const nlohmann::json line = {{"area", area}, {"case", name}, {"outcome", what},
                               {"message", message}, {"source", "gtest"}};
  std::lock_guard<std::mutex> lock(mu);
  std::ofstream out(path, std::ios::app);
  out << line.dump() << "\n";
}

// Runs fn, which must throw aotrt::Error of `kind` whose message holds every
// needle; records the case as refused with that message and returns it.
inline std::string expect_refused(const std::string& area, const std::string& name,
                                  ErrorKind kind, const std::vector<std::string>& needles,
                                  const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), kind) << name << ": " << msg;
    for (const std::string& needle : needles) {
      EXPECT_NE(msg.find(needle), std::string::npos)
          << name << ": message\n  " << msg << "\ndoes not contain\n  " << needle;
    }
    record_case(area, name, std::string("refused (") + error_kind_name(e.kind()) + ")", msg);
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": threw a non-aotrt exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << name << ": was not refused";
  record_case(area, name, "NOT REFUSED", "");
  return "";
}

// Points TMPDIR at a fresh, empty folder for the scope, so that whatever the
// loader writes (and leaves) there can be seen; restores TMPDIR after.
class FreshTmpdir {
 public:
  FreshTmpdir() {
    const char* old = std::getenv("TMPDIR");
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv("TMPDIR", root_.path().c_str(), 1);
  }
  ~FreshTmpdir() {
    if (had_) ::setenv("TMPDIR", old_.c_str(), 1); else ::unsetenv("TMPDIR");
  }
  FreshTmpdir(const FreshTmpdir&) = delete;
  FreshTmpdir& operator=(const FreshTmpdir&) = delete;

  const std::string& path() const { return root_.path(); }
  // Everything under the folder, recursively ("" when empty).
  std::string listing() const {
    std::string out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root_.path())) {
      out += e.path().string() + "\n";
    }
    return out;
  }

 private:
  package::TempDir root_;  // made under the old TMPDIR
  std::string old_;
  bool had_ = false;
};

// What a process holds, for the lifecycle tests.
struct ProcessCounts {
  long rss_kb = 0;
  long mappings = 0;  // lines of /proc/self/maps
  long model_mappings = 0;  // of them, files under `model_root` (where models are extracted)
  long fds = 0;       // entries of /proc/self/fd
  long threads = 0;   // entries of /proc/self/task
};

inline long count_entries(const char* dir) {
  long n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

inline ProcessCounts process_counts(const std::string& model_root) {
  ProcessCounts c;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) c.rss_kb = std::stol(line.substr(6));
  }
  std::ifstream maps("/proc/self/maps");
  while (std::getline(maps, line)) {
    ++c.mappings;
    if (!model_root.empty() && line.find(model_root + "/") != std::string::npos) ++c.model_mappings;
  }
  c.fds = count_entries("/proc/self/fd");
  c.threads = count_entries("/proc/self/task");
  return c;
}

// What n load + run + unload cycles must leave as they found it: no model
// file mapped, the same mappings, file descriptors and threads, and RSS
// within `rss_slack_kb` (RSS and mappings only where they are a measure:
// kProcessMemoryIsMeaningful).
inline void expect_process_flat(const ProcessCounts& before, const ProcessCounts& after,
                                long rss_slack_kb, int n) {
  EXPECT_EQ(after.model_mappings, 0) << "a model .so is still mapped after its unload";
  if (kProcessMemoryIsMeaningful) EXPECT_EQ(after.mappings, before.mappings);
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.threads, before.threads);
  if (kProcessMemoryIsMeaningful) {
    EXPECT_LT(after.rss_kb - before.rss_kb, rss_slack_kb)
        << "RSS grew by " << after.rss_kb - before.rss_kb << " KiB over " << n << " loads";
  }
}

inline std::string describe(const ProcessCounts& c) {
  return "RSS " + std::to_string(c.rss_kb) + " KiB, " + std::to_string(c.mappings) +
         " mappings (" + std::to_string(c.model_mappings) + " of model files), " + std::to_string(c.fds) + " fds, " + std::to_string(c.threads) +
         " threads";
}

}  // namespace aotrt::testing
