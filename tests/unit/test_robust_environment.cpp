// Loading, running and unloading models leaves the process's environment as
// it was (Note [Model input checks]): the model's own input checks are on
// through aotrt's answer to the model's getenv, never through setenv.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "core/handles.h"
#include "package/elf_patch.h"
#include "package/temp_dir.h"
#include "package_test_util.h"
#include "robust_cases.h"

extern char** environ;

using aotrt::Error;
using aotrt::LoadOptions;
using aotrt::Model;
using aotrt::ScalarType;
using aotrt::Tensor;
using aotrt::package::TempDir;
using namespace aotrt::testing;

namespace {

std::vector<std::string> environment() {
  std::vector<std::string> all;
  for (char** e = environ; *e != nullptr; ++e) all.emplace_back(*e);
  return all;
}

std::string test_package(const TempDir& dir) {
  const std::string path = dir.path() + "/test_model.pt2";
  const std::string blob = test_model_blob();
  write_zip(path, package_items(read_file(AOTRT_TEST_MODEL_SO), &blob));
  return path;
}

// The message of the model's refusal of a float32[5] input.
std::string refusal_of_wrong_size(Model& m) {
  std::vector<float> five(5, 1.f);
  Tensor bad = Tensor::from_blob(five.data(), {5}, {1}, ScalarType::Float32);
  try {
    m.run({&bad, 1});
  } catch (const Error& e) {
    return e.what();
  }
  return "(not refused)";
}

// The host's own value of the variable, put back when the test ends.
class RobustEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* v = std::getenv("AOTI_RUNTIME_CHECK_INPUTS");
    if (v != nullptr) saved_ = v;
    ::unsetenv("AOTI_RUNTIME_CHECK_INPUTS");
  }
  void TearDown() override {
    if (saved_) ::setenv("AOTI_RUNTIME_CHECK_INPUTS", saved_->c_str(), 1);
  }
  std::optional<std::string> saved_;
};

}  // namespace

TEST_F(RobustEnvironment, LoadRunUnloadLeaveTheEnvironmentAsItWas) {
  TempDir dir;
  const std::string pkg = test_package(dir);
  char** const table = environ;
  const std::vector<std::string> before = environment();
  std::string checked;
  {
    Model a = Model::load(pkg);
    LoadOptions unchecked_options;
    unchecked_options.check_inputs = false;
    Model b = Model::load(pkg, unchecked_options);
    std::vector<float> x = {1, 2, 3, 4};
    Tensor in = Tensor::from_blob(x.data(), {4}, {1}, ScalarType::Float32);
    EXPECT_EQ(a.run({&in, 1}).size(), 4u);
    EXPECT_EQ(b.run({&in, 1}).size(), 4u);
    checked = refusal_of_wrong_size(a);
    EXPECT_NE(checked.find("x must be float32[4]"), std::string::npos) << checked;
    const std::string unchecked = refusal_of_wrong_size(b);
    EXPECT_NE(unchecked.find("x unchecked"), std::string::npos) << unchecked;
    EXPECT_EQ(std::getenv("AOTI_RUNTIME_CHECK_INPUTS"), nullptr);
  }
  EXPECT_EQ(environ, table);
  EXPECT_EQ(environment(), before);
  record_case("environment", "two models loaded (input checks on and off), run, refused, unloaded",
              "environ identical, same table; the model's own checks on for the one that asked",
              std::to_string(before.size()) + " entries before and after; " + checked);
}

TEST_F(RobustEnvironment, TheHostsOwnSettingWins) {
  TempDir dir;
  const std::string pkg = test_package(dir);
  ::setenv("AOTI_RUNTIME_CHECK_INPUTS", "0", 1);
  const std::vector<std::string> before = environment();
  {
    Model m = Model::load(pkg);
    const std::string msg = refusal_of_wrong_size(m);
    EXPECT_NE(msg.find("x unchecked"), std::string::npos) << msg;
  }
  EXPECT_EQ(environment(), before);
  record_case("environment", "host set AOTI_RUNTIME_CHECK_INPUTS=0, model loaded with check_inputs",
              "the host's setting applies (checks off); environ unchanged", "");
}

TEST(ElfPatch, InputChecksRedirectTheModelsGetenv) {
  std::string so = read_file(AOTRT_TEST_MODEL_SO);
  std::span<uint8_t> image(reinterpret_cast<uint8_t*>(so.data()), so.size());
  std::string untouched = so;
  std::span<uint8_t> plain(reinterpret_cast<uint8_t*>(untouched.data()), untouched.size());
  EXPECT_FALSE(aotrt::package::patch_for_dlclose(plain, "test model").getenv_redirected);
  EXPECT_NE(untouched.find(std::string("getenv") + '\0'), std::string::npos);
  const auto r = aotrt::package::patch_for_dlclose(image, "test model", false, /*input_checks=*/true);
  EXPECT_TRUE(r.getenv_redirected);
  EXPECT_FALSE(r.getenv_shared);
  EXPECT_NE(so.find(std::string("aotenv") + '\0'), std::string::npos);
}

// GNU ld keeps one string for "secure_getenv" and "getenv" (its suffix). The
// shared bytes are renamed for both, and both names bind to aotrt's
// (aotenv, secure_aotenv), which answer AOTI_RUNTIME_CHECK_INPUTS.
TEST(ElfPatch, GetenvMergedIntoSecureGetenvIsRedirectedWithIt) {
  std::string so = read_file(AOTRT_TEST_ENV_READER_SO);
  const size_t merged = so.find(std::string("secure_getenv") + '\0');
  ASSERT_NE(merged, std::string::npos);
  // The fixture's point: no "getenv" string of its own (the linker merged it).
  ASSERT_EQ(so.find(std::string("\0getenv\0", 8)), std::string::npos)
      << "the linker kept getenv apart; the fixture no longer tests a shared string";
  std::span<uint8_t> image(reinterpret_cast<uint8_t*>(so.data()), so.size());
  const auto r = aotrt::package::patch_for_dlclose(image, "env reader", false, /*input_checks=*/true);
  EXPECT_TRUE(r.getenv_redirected);
  EXPECT_FALSE(r.getenv_shared);
  EXPECT_NE(so.find(std::string("secure_aotenv") + '\0'), std::string::npos);

  // Loaded, both reads answer for aotrt (this test binary links libaotrt, so
  // aotenv and secure_aotenv are in the global scope).
  TempDir dir;
  const std::string path = dir.path() + "/env_reader.so";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(so.data(), 1, so.size(), f), so.size());
    std::fclose(f);
  }
  // The host's own setting wins where it has one (another test may leave one).
  const char* host = std::getenv("AOTI_RUNTIME_CHECK_INPUTS");
  const std::string expected = host ? host : "1";
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << ::dlerror();
  using Read = const char* (*)(const char*);
  auto plain = reinterpret_cast<Read>(::dlsym(h, "env_reader_plain"));
  auto secure = reinterpret_cast<Read>(::dlsym(h, "env_reader_secure"));
  ASSERT_TRUE(plain && secure);
  EXPECT_STREQ(plain("AOTI_RUNTIME_CHECK_INPUTS"), expected.c_str());
  EXPECT_STREQ(secure("AOTI_RUNTIME_CHECK_INPUTS"), expected.c_str());
  EXPECT_EQ(plain("AOTRT_SURELY_UNSET_VARIABLE"), nullptr);
  EXPECT_STREQ(secure("HOME"), std::getenv("HOME"));
  ::dlclose(h);
}
