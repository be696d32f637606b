// find_model and parse_metadata: locating one model inside a .pt2.
#include <gtest/gtest.h>

#include "core/error.h"
#include "package/layout.h"
#include "package/temp_dir.h"
#include "package_test_util.h"

using aotrt::Error;
using aotrt::package::find_model;
using aotrt::package::parse_metadata;
using aotrt::package::TempDir;
using aotrt::package::ZipArchive;
using namespace aotrt::testing;

namespace {

std::string error_of(const std::vector<ZipItem>& items, const std::string& model = "model") {
  TempDir dir;
  const std::string zip = dir.path() + "/p.pt2";
  write_zip(zip, items);
  try {
    find_model(ZipArchive::open(zip), model);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), aotrt::ErrorKind::kPackage);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PackageLayout, FindsTheModelFiles) {
  TempDir dir;
  const std::string zip = dir.path() + "/p.pt2";
  const std::string blob = "weights";
  auto items = package_items("so bytes", &blob);
  items.push_back({"pkg/data/aotinductor/model/triton_abc.cubin", "cubin"});
  items.push_back({"pkg/data/aotinductor/model/abc.kernel_metadata.json", kMetadataCpu});
  write_zip(zip, items);
  const auto layout = find_model(ZipArchive::open(zip), "model");
  EXPECT_EQ(layout.so.name, "pkg/data/aotinductor/model/abc.wrapper.so");
  EXPECT_EQ(layout.model_dir, "pkg/data/aotinductor/model/");
  EXPECT_EQ(layout.metadata.name, "pkg/data/aotinductor/model/abc.wrapper_metadata.json");
  ASSERT_TRUE(layout.weights_blob.has_value());
  EXPECT_EQ(layout.weights_blob->name, "pkg/data/aotinductor/model/abc.wrapper_weights.blob");
  ASSERT_EQ(layout.kernel_binaries.size(), 1u);
  EXPECT_EQ(layout.kernel_binaries[0].name, "pkg/data/aotinductor/model/triton_abc.cubin");
  EXPECT_FALSE(layout.has_pickle_weights);
}

TEST(PackageLayout, ArchivesWithoutStemPrefix) {
  TempDir dir;
  const std::string zip = dir.path() + "/p.pt2";
  write_zip(zip, package_items("so", nullptr, kMetadataCpu, ""));
  const auto layout = find_model(ZipArchive::open(zip), "model");
  EXPECT_EQ(layout.so.name, "data/aotinductor/model/abc.wrapper.so");
  EXPECT_FALSE(layout.weights_blob.has_value());
}

TEST(PackageLayout, RefusesPackagesWithoutOneModel) {
  EXPECT_NE(error_of({{"pkg/archive_format", "pt2"}}).find("not an AOTInductor package"),
            std::string::npos);
  // No .so (package_cpp_only).
  EXPECT_NE(error_of({{"pkg/data/aotinductor/model/abc.wrapper.cpp", "x"}}).find("package_cpp_only"),
            std::string::npos);
  // Two .so files in the model's folder.
  auto two = package_items("so");
  two.push_back({"pkg/data/aotinductor/model/other.wrapper.so", "so2"});
  const std::string e2 = error_of(two);
  EXPECT_NE(e2.find("2 .so files"), std::string::npos) << e2;
  EXPECT_NE(e2.find("other.wrapper.so"), std::string::npos) << e2;
  // Another model name is listed when the asked one is absent.
  const std::string e3 = error_of(package_items("so"), "encoder");
  EXPECT_NE(e3.find("no model 'encoder'"), std::string::npos) << e3;
  EXPECT_NE(e3.find("models there: model"), std::string::npos) << e3;
  // No metadata.
  const std::string e4 = error_of({{"pkg/data/aotinductor/model/abc.wrapper.so", "so"}});
  EXPECT_NE(e4.find("no metadata file"), std::string::npos) << e4;
}

TEST(PackageLayout, FlagsPickleWeights) {
  TempDir dir;
  const std::string zip = dir.path() + "/p.pt2";
  auto items = package_items("so");
  items.push_back({"pkg/data/weights/weight_0", "w"});
  write_zip(zip, items);
  EXPECT_TRUE(find_model(ZipArchive::open(zip), "model").has_pickle_weights);
}

TEST(PackageLayout, ParsesMetadata) {
  const auto md = parse_metadata(R"({"AOTI_DEVICE_KEY": "cuda", "AOTI_COMPUTE_CAPABILITY": "90", "n": 3})", "m");
  EXPECT_EQ(md.device_key, "cuda");
  EXPECT_EQ(md.values.at("AOTI_COMPUTE_CAPABILITY"), "90");
  EXPECT_EQ(md.values.at("n"), "3");
  EXPECT_THROW(parse_metadata("not json", "m"), Error);
  EXPECT_THROW(parse_metadata("[1, 2]", "m"), Error);
  EXPECT_THROW(parse_metadata(R"({"AOTI_PLATFORM": "linux"})", "m"), Error);
}
