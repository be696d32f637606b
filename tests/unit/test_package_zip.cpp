// ZipArchive: what it refuses before anything is extracted, and extraction.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "package/temp_dir.h"
#include "package/zip_reader.h"
#include "package_test_util.h"

using aotrt::Error;
using aotrt::ErrorKind;
using aotrt::package::TempDir;
using aotrt::package::ZipArchive;
using namespace aotrt::testing;

namespace {

// Runs fn, which must throw Error(kPackage) with `needle` in its message.
template <typename Fn>
void expect_package_error(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kPackage) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

// Offsets of a 4-byte little-endian signature in a byte string.
std::vector<size_t> find_all(const std::string& bytes, uint32_t signature) {
  std::vector<size_t> at;
  char sig[4];
  std::memcpy(sig, &signature, 4);
  for (size_t pos = bytes.find(std::string(sig, 4)); pos != std::string::npos;
       pos = bytes.find(std::string(sig, 4), pos + 1)) {
    at.push_back(pos);
  }
  return at;
}

void put_u32(std::string& bytes, size_t offset, uint32_t v) { std::memcpy(&bytes[offset], &v, 4); }

}  // namespace

TEST(PackageZip, SafeEntryNames) {
  using aotrt::package::is_safe_entry_name;
  EXPECT_TRUE(is_safe_entry_name("pkg/data/aotinductor/model/x.so"));
  EXPECT_TRUE(is_safe_entry_name("a..b/c..d"));  // ".." only as a whole component
  EXPECT_TRUE(is_safe_entry_name("pkg/"));
  EXPECT_FALSE(is_safe_entry_name(""));
  EXPECT_FALSE(is_safe_entry_name("/etc/passwd"));
  EXPECT_FALSE(is_safe_entry_name("pkg/../../x"));
  EXPECT_FALSE(is_safe_entry_name(".."));
  EXPECT_FALSE(is_safe_entry_name("pkg/.."));
  EXPECT_FALSE(is_safe_entry_name("pkg\\..\\x"));
  EXPECT_FALSE(is_safe_entry_name("C:/x"));
  EXPECT_FALSE(is_safe_entry_name(std::string("a\0b", 3)));
}

TEST(PackageZip, OpensAndExtracts) {
  TempDir dir;
  const std::string zip = dir.path() + "/ok.zip";
  const std::string big(200000, 'z');
  write_zip(zip, {{"a/one.txt", "hello"}, {"a/big.bin", big, /*deflate=*/true}});
  const ZipArchive archive = ZipArchive::open(zip);
  ASSERT_EQ(archive.entries().size(), 2u);
  const auto* one = archive.find("a/one.txt");
  const auto* bigentry = archive.find("a/big.bin");
  ASSERT_NE(one, nullptr);
  ASSERT_NE(bigentry, nullptr);
  EXPECT_EQ(archive.find("one.txt"), nullptr);
  EXPECT_EQ(bigentry->size, big.size());
  EXPECT_LT(bigentry->compressed_size, big.size());
  EXPECT_EQ(archive.read(*one, 100), "hello");
  archive.extract(*bigentry, dir.path() + "/big.bin");
  EXPECT_EQ(read_file(dir.path() + "/big.bin"), big);
  // Never overwrites.
  expect_package_error([&] { archive.extract(*one, dir.path() + "/big.bin"); }, "cannot create");
  expect_package_error([&] { archive.read(*bigentry, 1000); }, "at most 1000");
}

TEST(PackageZip, RefusesMissingFileAndNonZip) {
  TempDir dir;
  expect_package_error([&] { ZipArchive::open(dir.path() + "/nope.pt2"); }, "cannot open package");
  expect_package_error([&] { ZipArchive::open(dir.path()); }, "not a regular file");
  write_file(dir.path() + "/text.pt2", "this is not a zip archive at all, just text\n");
  expect_package_error([&] { ZipArchive::open(dir.path() + "/text.pt2"); },
                       "is not a zip archive");
  write_file(dir.path() + "/empty.pt2", "");
  expect_package_error([&] { ZipArchive::open(dir.path() + "/empty.pt2"); }, "empty.pt2");
}

TEST(PackageZip, RefusesTruncatedArchives) {
  TempDir dir;
  const std::string zip = dir.path() + "/t.zip";
  write_zip(zip, {{"a/x.bin", std::string(5000, 'x')}, {"a/y.bin", std::string(3000, 'y')}});
  const std::string bytes = read_file(zip);
  // Cut inside the data, inside the central directory, and inside the end record.
  for (size_t keep : {bytes.size() / 2, bytes.size() - 60, bytes.size() - 5}) {
    const std::string cut = dir.path() + "/cut" + std::to_string(keep) + ".zip";
    write_file(cut, bytes.substr(0, keep));
    try {
      ZipArchive::open(cut);
      ADD_FAILURE() << "a zip cut to " << keep << " of " << bytes.size() << " bytes opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kPackage);
      EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
    }
  }
}

TEST(PackageZip, RefusesCorruptData) {
  TempDir dir;
  const std::string zip = dir.path() + "/c.zip";
  write_zip(zip, {{"a/x.bin", std::string(5000, 'x')}});
  std::string bytes = read_file(zip);
  const size_t data = bytes.find(std::string(100, 'x'));
  ASSERT_NE(data, std::string::npos);
  bytes[data + 10] = 'Q';  // the CRC no longer matches
  write_file(zip, bytes);
  const ZipArchive archive = ZipArchive::open(zip);
  expect_package_error([&] { archive.extract(archive.entries()[0], dir.path() + "/x.bin"); },
                       "corrupt");
  // The partial file is removed.
  EXPECT_THROW(read_file(dir.path() + "/x.bin"), std::runtime_error);
}

TEST(PackageZip, RefusesUnsafeEntryNames) {
  TempDir dir;
  for (const std::string name : {"pkg/../../evil.so", "/abs/evil.so", "pkg\\..\\evil.so"}) {
    const std::string zip = dir.path() + "/bad.zip";
    write_zip(zip, {{"pkg/archive_format", "pt2"}, {name, "x"}});
    expect_package_error([&] { ZipArchive::open(zip); }, "entry name '" + name + "'");
  }
}

TEST(PackageZip, RefusesZipBombDeclaredSizes) {
  TempDir dir;
  const std::string zip = dir.path() + "/bomb.zip";
  write_zip(zip, {{"pkg/data/aotinductor/model/x.so", std::string(100, 'b')}});
  std::string bytes = read_file(zip);
  // Declare 3 GB uncompressed in both the local and the central header.
  const auto local = find_all(bytes, 0x04034b50), central = find_all(bytes, 0x02014b50);
  ASSERT_EQ(local.size(), 1u);
  ASSERT_EQ(central.size(), 1u);
  put_u32(bytes, local[0] + 22, 3000000000u);
  put_u32(bytes, central[0] + 24, 3000000000u);
  write_file(zip, bytes);
  expect_package_error([&] { ZipArchive::open(zip); }, "zip bomb");

  // Just under the bound is accepted: 1100x the archive is what deflate could reach.
  std::string ok = read_file(zip);
  const uint64_t bound = ok.size() * aotrt::package::kMaxExpansion + aotrt::package::kExpansionSlack;
  put_u32(ok, local[0] + 22, static_cast<uint32_t>(bound));
  put_u32(ok, central[0] + 24, static_cast<uint32_t>(bound));
  write_file(zip, ok);
  const ZipArchive archive = ZipArchive::open(zip);
  EXPECT_EQ(archive.entries()[0].size, bound);
  // But its data does not match what it declares.
  expect_package_error([&] { archive.read(archive.entries()[0], UINT64_MAX); }, "");
}
