// The tuned-convolution table and its file (runtime/conv_tuning_file.h,
// Note [Convolution tuning file]): the line format, where the file lives, and
// a table that reads, merges and writes it - all host code, tested without a
// GPU. cuda/test_cuda_conv.cpp checks the same table under real tuning.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "package/temp_dir.h"
#include "runtime/conv_tuning_file.h"

namespace aotrt::runtime {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

const ConvTuningChoice kChoiceA{12, {{2, 3}, {14, 4}, {25, -1}}};
const ConvTuningChoice kChoiceB{0, {}};

TEST(ConvTuningFile, LinesRoundTrip) {
  const std::string line = format_conv_tuning_line("cudnn91900.sm90.NVIDIA_H200:1,2,3", kChoiceA);
  EXPECT_EQ(line, "cudnn91900.sm90.NVIDIA_H200:1,2,3 12 2:3,14:4,25:-1");
  const auto parsed = parse_conv_tuning_line(line);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->first, "cudnn91900.sm90.NVIDIA_H200:1,2,3");
  EXPECT_EQ(parsed->second, kChoiceA);

  EXPECT_EQ(format_conv_tuning_line("k", kChoiceB), "k 0 -");
  const auto none = parse_conv_tuning_line("k 0 -\r");  // a CRLF file's line
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->second, kChoiceB);
}

TEST(ConvTuningFile, BadLinesDoNotParse) {
  for (const char* bad : {
           "",                          // blank
           "# a comment 1 -",           // comment
           "k 1",                       // a field missing
           "k 1 - extra",               // a field too many
           "k  1 -",                    // two spaces: an empty field
           "k -1 -",                    // negative engine
           "k x -",                     // not a number
           "k 1x -",                    // trailing junk
           "k 99999999999999999999 -",  // overflows int64
           "k 1 2",                     // knob without a value
           "k 1 2:",                    // empty value
           "k 1 :3",                    // empty type
           "k 1 -2:3",                  // negative knob type
           "k 1 2:3,",                  // trailing comma
           "k 1 2:3,,4:5",              // empty pair
           "k 1 2:3:4",                 // value is not a number
           "k\t1 -",                    // a tab is not the separator
           "k\x01 1 -",                 // control character in the key
       }) {
    EXPECT_FALSE(parse_conv_tuning_line(bad).has_value()) << "'" << bad << "'";
  }
  std::string many = "k 1 ";
  for (size_t i = 0; i <= kMaxConvTuningKnobs; ++i) many += (i ? "," : "") + std::to_string(i) + ":1";
  EXPECT_FALSE(parse_conv_tuning_line(many).has_value()) << "more knobs than a config has";
  EXPECT_FALSE(parse_conv_tuning_line(std::string(5000, 'k') + " 1 -").has_value());
  EXPECT_FALSE(valid_conv_tuning_key("#k"));
  EXPECT_FALSE(valid_conv_tuning_key("a b"));
  EXPECT_TRUE(valid_conv_tuning_key("a:b,c.d-e_f"));
}

TEST(ConvTuningFile, WhereTheFileLives) {
  EXPECT_EQ(conv_tuning_path("0", "/xdg", "/home/u"), "");
  EXPECT_EQ(conv_tuning_path("/tmp/t.txt", "/xdg", "/home/u"), "/tmp/t.txt");
  EXPECT_EQ(conv_tuning_path("", "/xdg", "/home/u"), "/xdg/aotrt/cudnn-conv-tuning-v1.txt");
  EXPECT_EQ(conv_tuning_path(nullptr, "/xdg", "/home/u"), "/xdg/aotrt/cudnn-conv-tuning-v1.txt");
  EXPECT_EQ(conv_tuning_path(nullptr, "relative", "/home/u"),
            "/home/u/.cache/aotrt/cudnn-conv-tuning-v1.txt");
  EXPECT_EQ(conv_tuning_path(nullptr, nullptr, "/home/u"),
            "/home/u/.cache/aotrt/cudnn-conv-tuning-v1.txt");
  EXPECT_EQ(conv_tuning_path(nullptr, "", ""), "");
  EXPECT_EQ(conv_tuning_path(nullptr, nullptr, nullptr), "");
}

TEST(ConvTuningFile, WritesOneLinePerKeyAndAFreshTableReadsIt) {
  package::TempDir dir;
  const std::string path = dir.path() + "/made/for/it/tuning.txt";  // folders made on demand
  ConvTuningTable table(path);
  EXPECT_FALSE(table.find("b").has_value());
  EXPECT_TRUE(table.writes_file());
  table.put("b", kChoiceB);
  table.put("a", kChoiceB);
  table.put("a", kChoiceA);  // replaced, not added
  EXPECT_EQ(table.find("a"), kChoiceA);
  const auto lines = lines_of(slurp(path));
  ASSERT_EQ(lines.size(), 3u) << slurp(path);
  EXPECT_EQ(lines[0], kConvTuningHeader);
  EXPECT_EQ(lines[1], format_conv_tuning_line("a", kChoiceA));
  EXPECT_EQ(lines[2], format_conv_tuning_line("b", kChoiceB));
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path())) {
    EXPECT_EQ(entry.path().filename(), "tuning.txt") << "a temporary file was left behind";
  }

  ConvTuningTable fresh(path);  // a second process
  EXPECT_EQ(fresh.find("a"), kChoiceA);
  EXPECT_EQ(fresh.find("b"), kChoiceB);
  EXPECT_FALSE(fresh.find("c").has_value());
  table.reset(path);  // the same, through the test hook's path
  EXPECT_EQ(table.find("a"), kChoiceA);
}

TEST(ConvTuningFile, ReadsOnceAndKeepsWhatOthersWrote) {
  package::TempDir dir;
  const std::string path = dir.path() + "/tuning.txt";
  ConvTuningTable first(path), second(path);
  EXPECT_FALSE(first.find("x").has_value());  // read now: the file is missing
  second.put("y", kChoiceA);
  EXPECT_FALSE(first.find("y").has_value()) << "the file is read once, on the first lookup";
  first.put("x", kChoiceB);  // rewrites with the other's line kept
  ConvTuningTable third(path);
  EXPECT_EQ(third.find("x"), kChoiceB);
  EXPECT_EQ(third.find("y"), kChoiceA);
}

TEST(ConvTuningFile, CorruptLinesAreIgnoredAndDropped) {
  package::TempDir dir;
  const std::string path = dir.path() + "/tuning.txt";
  spit(path, std::string(kConvTuningHeader) + "\nk1 5 1:2\ngarbage\nk2 x -\n\x7f\xff\n# note\nk3 7 -");
  ConvTuningTable table(path);
  EXPECT_EQ(table.find("k1"), (ConvTuningChoice{5, {{1, 2}}}));
  EXPECT_EQ(table.find("k3"), (ConvTuningChoice{7, {}}));  // no final newline
  EXPECT_FALSE(table.find("k2").has_value());
  table.put("k4", kChoiceB);
  const auto lines = lines_of(slurp(path));
  ASSERT_EQ(lines.size(), 4u) << slurp(path);
  EXPECT_EQ(lines[1], "k1 5 1:2");
  EXPECT_EQ(lines[2], "k3 7 -");
  EXPECT_EQ(lines[3], "k4 0 -");
}

TEST(ConvTuningFile, AFileThatIsNotOursIsNeverWritten) {
  package::TempDir dir;
  const std::string path = dir.path() + "/notes.txt";
  const std::string text = "k1 5 1:2\nsomeone's notes\n";  // no header
  spit(path, text);
  ConvTuningTable table(path);
  EXPECT_FALSE(table.find("k1").has_value()) << "read as empty";
  table.put("k2", kChoiceA);
  EXPECT_EQ(table.find("k2"), kChoiceA) << "kept in memory";
  EXPECT_FALSE(table.writes_file());
  EXPECT_EQ(slurp(path), text);

  const std::string binary = dir.path() + "/binary";
  spit(binary, std::string("\0\x01\x02garbage", 10));
  ConvTuningTable corrupt(binary);
  EXPECT_FALSE(corrupt.find("k1").has_value());
  corrupt.put("k1", kChoiceB);
  EXPECT_EQ(corrupt.find("k1"), kChoiceB);
  EXPECT_EQ(slurp(binary), std::string("\0\x01\x02garbage", 10));
}

TEST(ConvTuningFile, UnwritablePlacesKeepTheTableInMemory) {
  package::TempDir dir;
  spit(dir.path() + "/a_file", "x");
  // The folder cannot be made (a file is in the way), the path is a folder,
  // and no path at all.
  for (const std::string& path :
       {dir.path() + "/a_file/sub/tuning.txt", dir.path(), std::string()}) {
    SCOPED_TRACE(path);
    ConvTuningTable table(path);
    EXPECT_FALSE(table.find("k").has_value());
    table.put("k", kChoiceA);
    table.put("j", kChoiceB);
    EXPECT_EQ(table.find("k"), kChoiceA);
    EXPECT_EQ(table.find("j"), kChoiceB);
    EXPECT_FALSE(table.writes_file());
  }
  EXPECT_EQ(slurp(dir.path() + "/a_file"), "x");
}

TEST(ConvTuningFile, ThreadsShareOneTable) {
  package::TempDir dir;
  const std::string path = dir.path() + "/tuning.txt";
  ConvTuningTable table(path);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&table, t] {
      for (int i = 0; i < 25; ++i) {
        const std::string key = "t" + std::to_string(t) + "_" + std::to_string(i);
        table.put(key, ConvTuningChoice{i, {{t, i}}});
        EXPECT_EQ(table.find(key), (ConvTuningChoice{i, {{t, i}}}));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ConvTuningTable fresh(path);
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 25; ++i) {
      EXPECT_EQ(fresh.find("t" + std::to_string(t) + "_" + std::to_string(i)),
                (ConvTuningChoice{i, {{t, i}}}));
    }
  }
  EXPECT_EQ(lines_of(slurp(path)).size(), 101u);
}

}  // namespace
}  // namespace aotrt::runtime
