// ZipArchive: what it refuses before anything is extracted, and extraction.
#include <gtest/gtest.h>

#include <zlib.h>

#include <cstring>
#include <optional>

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

// Note [Stored entries read in place]: the offset of a stored entry's bytes,
// from libzip's own archives (names and extras of several lengths).
TEST(PackageZip, StoredDataOffsetPointsAtTheBytes) {
  TempDir dir;
  const std::string zip = dir.path() + "/s.zip";
  const std::string one(3000, 'a'), two = "second entry", three(70000, 'c');
  write_zip(zip, {{"x/1.bin", one}, {"x/a-longer-name/2.bin", two}, {"x/3.bin", three, /*deflate=*/true}});
  const std::string bytes = read_file(zip);
  const ZipArchive archive = ZipArchive::open(zip);
  for (const char* name : {"x/1.bin", "x/a-longer-name/2.bin"}) {
    const auto* e = archive.find(name);
    ASSERT_NE(e, nullptr);
    EXPECT_TRUE(e->stored);
    const std::optional<uint64_t> at = archive.stored_data_offset(*e);
    ASSERT_TRUE(at.has_value()) << name;
    EXPECT_EQ(bytes.substr(*at, e->size), archive.read(*e, 1 << 20)) << name;
    archive.check_crc(*e);  // intact: no throw
  }
  const auto* deflated = archive.find("x/3.bin");
  EXPECT_FALSE(deflated->stored);
  EXPECT_FALSE(archive.stored_data_offset(*deflated).has_value());
}

TEST(PackageZip, CheckCrcRefusesAFlippedStoredByte) {
  TempDir dir;
  const std::string zip = dir.path() + "/f.zip";
  // Over 64 MiB: checked in slices by several threads, combined.
  std::string big(65 << 20, '\0');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i / 4096);
  write_zip(zip, {{"x/big.bin", big}});
  const ZipArchive intact = ZipArchive::open(zip);
  intact.check_crc(intact.entries()[0]);
  std::string bytes = read_file(zip);
  const auto at = *intact.stored_data_offset(intact.entries()[0]);
  bytes[at + big.size() - 3] ^= 0x01;  // in the last slice
  write_file(zip, bytes);
  const ZipArchive flipped = ZipArchive::open(zip);
  expect_package_error([&] { flipped.check_crc(flipped.entries()[0]); }, "x/big.bin' is corrupt");
}

// A zip stored inside a zip (torch's pickle_weights): offsets count from the outer file.
TEST(PackageZip, OpenWindowReadsAZipInsideAZip) {
  TempDir dir;
  const std::string inner = dir.path() + "/inner.zip";
  const std::string payload(5000, 'p');
  write_zip(inner, {{"archive/data.pkl", "pickle"}, {"archive/data/0", payload}});
  const std::string outer = dir.path() + "/outer.zip";
  write_zip(outer, {{"pkg/readme", "x"}, {"pkg/data/weights/weight_0", read_file(inner)}});
  const ZipArchive archive = ZipArchive::open(outer);
  const auto* w = archive.find("pkg/data/weights/weight_0");
  const auto start = *archive.stored_data_offset(*w);
  const ZipArchive nested = ZipArchive::open_window(outer, start, w->size, "weight_0");
  const auto* data = nested.find("archive/data/0");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(nested.read(*data, 1 << 20), payload);
  const auto at = *nested.stored_data_offset(*data);
  EXPECT_EQ(read_file(outer).substr(at, payload.size()), payload);
  nested.check_crc(*data);
  expect_package_error([&] { ZipArchive::open_window(outer, 0, 0, "an empty window"); }, "an empty window");
}

namespace {

void put_le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace

// Zip64 records, as writers use above 4 GiB: sizes and the local header
// offset in the Zip64 extra field, the counts in the Zip64 end record.
// Written by hand with small values (a writer may always use them).
TEST(PackageZip, StoredDataOffsetReadsZip64Records) {
  TempDir dir;
  const std::string name = "pkg/data/aotinductor/model/m.wrapper.so";
  const std::string data = "zip64 entry bytes, stored";
  const uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(data.data()),
                                                   static_cast<uInt>(data.size())));
  std::string z;
  put_le(z, 0x04034b50, 4); put_le(z, 45, 2); put_le(z, 0, 2); put_le(z, 0, 2);  // sig, version, flags, stored
  put_le(z, 0, 4); put_le(z, crc, 4); put_le(z, 0xFFFFFFFF, 4); put_le(z, 0xFFFFFFFF, 4);
  put_le(z, name.size(), 2); put_le(z, 20, 2);
  z += name;
  put_le(z, 1, 2); put_le(z, 16, 2); put_le(z, data.size(), 8); put_le(z, data.size(), 8);
  const uint64_t data_at = z.size();
  z += data;
  const uint64_t cd_at = z.size();
  put_le(z, 0x02014b50, 4); put_le(z, 45, 2); put_le(z, 45, 2); put_le(z, 0, 2); put_le(z, 0, 2);
  put_le(z, 0, 4); put_le(z, crc, 4); put_le(z, 0xFFFFFFFF, 4); put_le(z, 0xFFFFFFFF, 4);
  put_le(z, name.size(), 2); put_le(z, 28, 2); put_le(z, 0, 2); put_le(z, 0, 2); put_le(z, 0, 2);
  put_le(z, 0, 4); put_le(z, 0xFFFFFFFF, 4);
  z += name;
  put_le(z, 1, 2); put_le(z, 24, 2); put_le(z, data.size(), 8); put_le(z, data.size(), 8); put_le(z, 0, 8);
  const uint64_t cd_size = z.size() - cd_at;
  const uint64_t z64_at = z.size();
  put_le(z, 0x06064b50, 4); put_le(z, 44, 8); put_le(z, 45, 2); put_le(z, 45, 2); put_le(z, 0, 4);
  put_le(z, 0, 4); put_le(z, 1, 8); put_le(z, 1, 8); put_le(z, cd_size, 8); put_le(z, cd_at, 8);
  put_le(z, 0x07064b50, 4); put_le(z, 0, 4); put_le(z, z64_at, 8); put_le(z, 1, 4);
  put_le(z, 0x06054b50, 4); put_le(z, 0, 2); put_le(z, 0, 2); put_le(z, 0xFFFF, 2); put_le(z, 0xFFFF, 2);
  put_le(z, 0xFFFFFFFF, 4); put_le(z, 0xFFFFFFFF, 4); put_le(z, 0, 2);
  const std::string path = dir.path() + "/z64.zip";
  write_file(path, z);
  const ZipArchive archive = ZipArchive::open(path);
  ASSERT_EQ(archive.entries().size(), 1u);
  EXPECT_EQ(archive.read(archive.entries()[0], 100), data);  // libzip agrees it is well formed
  EXPECT_EQ(archive.stored_data_offset(archive.entries()[0]), std::optional<uint64_t>(data_at));
  archive.check_crc(archive.entries()[0]);
}
