// aomm and AppendedWeights (Note [Weights appended to the .so]), LoadingWeights
// (Note [Weights pages during load]) and MappedFile ranges, on files made here.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "package/temp_dir.h"
#include "package_test_util.h"
#include "runtime/mapped_file.h"
#include "runtime/model_mmap.h"

using aotrt::package::TempDir;
using aotrt::runtime::AppendedWeights;
using aotrt::runtime::LoadingWeights;
using aotrt::runtime::MappedFile;
using namespace aotrt::testing;

namespace {

bool mapped_in_process(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(path) != std::string::npos;
}

struct Files {
  TempDir dir;
  std::string archive = dir.path() + "/package.pt2";
  std::string so = dir.path() + "/model.so";
  std::string weights;
  static constexpr uint64_t kDataOffset = 1000;  // not on a page: the delta is returned
  static constexpr uint64_t kWeightsOffset = 16384;
  Files() {
    for (int i = 0; i < 20000; ++i) weights += static_cast<char>('a' + i % 26);
    // The "package": bytes before the entry, its ELF part, its weights.
    write_file(archive, std::string(kDataOffset, 'P') + std::string(kWeightsOffset, 'E') + weights);
    // The extracted .so: the ELF part, then a sparse tail as long as the weights.
    write_file(so, std::string(kWeightsOffset, 'E'));
    EXPECT_EQ(::truncate(so.c_str(), static_cast<off_t>(kWeightsOffset + weights.size())), 0);
  }
};

}  // namespace

TEST(ModelMmap, MapsTheWeightsRangeFromThePackage) {
  Files f;
  {
    AppendedWeights appended(f.so, f.archive, Files::kDataOffset, Files::kWeightsOffset,
                             Files::kWeightsOffset + f.weights.size());
    const int fd = ::open(f.so.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    // As torch's model does: the size from lseek, the tail mapped MAP_PRIVATE, read and write.
    const off_t end = ::lseek(fd, 0, SEEK_END);
    ASSERT_EQ(static_cast<uint64_t>(end), Files::kWeightsOffset + f.weights.size());
    void* p = aomm(nullptr, f.weights.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
                   end - static_cast<off_t>(f.weights.size()));
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_EQ(std::string(static_cast<const char*>(p), f.weights.size()), f.weights);
    static_cast<char*>(p)[0] = '!';  // private: the package is unchanged
    EXPECT_EQ(appended.mappings(), 1u);
    EXPECT_TRUE(mapped_in_process(f.archive));
    // Another range of the same file, and other files, go to mmap itself.
    void* head = aomm(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    ASSERT_NE(head, MAP_FAILED);
    EXPECT_EQ(static_cast<const char*>(head)[0], 'E');
    ::munmap(head, 4096);
    EXPECT_EQ(appended.mappings(), 1u);
    appended.drop_pages();  // read again from the file: the private write is gone
    EXPECT_EQ(static_cast<const char*>(p)[0], f.weights[0]);
    ::close(fd);
  }
  // Unregistered: unmapped, and the file maps as itself again.
  EXPECT_FALSE(mapped_in_process(f.archive));
  const int fd = ::open(f.so.c_str(), O_RDONLY);
  void* p = aomm(nullptr, f.weights.size(), PROT_READ, MAP_PRIVATE, fd, Files::kWeightsOffset);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(static_cast<const char*>(p)[0], '\0');  // the sparse tail
  ::munmap(p, f.weights.size());
  ::close(fd);
  EXPECT_EQ(read_file(f.archive).substr(Files::kDataOffset + Files::kWeightsOffset), f.weights);
}

TEST(ModelMmap, LoadingWeightsScopesNest) {
  int outer = 0, inner = 0;
  aotrt::runtime::constant_registered();  // no scope: nothing to call
  {
    LoadingWeights a([&] { ++outer; });
    aotrt::runtime::constant_registered();
    EXPECT_EQ(outer, 1);
    {
      LoadingWeights b([&] { ++inner; });
      aotrt::runtime::constant_registered();
      EXPECT_EQ(outer, 1);
      EXPECT_EQ(inner, 1);
    }
    EXPECT_EQ(inner, 2);  // once more at the end of its scope
    aotrt::runtime::constant_registered();
    EXPECT_EQ(outer, 2);
  }
  EXPECT_EQ(outer, 3);
  aotrt::runtime::constant_registered();
  EXPECT_EQ(outer, 3);
}

TEST(ModelMmap, MappedFileRange) {
  TempDir dir;
  const std::string path = dir.path() + "/f.bin";
  std::string bytes;
  for (int i = 0; i < 10000; ++i) bytes += static_cast<char>(i * 7);
  write_file(path, bytes);
  const MappedFile range(path, 4099, 3000);
  EXPECT_EQ(range.size(), 3000u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(range.data()), 3000), bytes.substr(4099, 3000));
  range.drop_pages();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(range.data()), 3000), bytes.substr(4099, 3000));
  EXPECT_THROW(MappedFile(path, 9000, 2000), aotrt::Error);
  const MappedFile whole(path);
  EXPECT_EQ(whole.size(), bytes.size());
}
