// The safetensors header parser (runtime/safetensors.h): what it takes and
// what it refuses, on files built byte by byte.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "runtime/safetensors.h"

namespace {

std::vector<uint8_t> file_of(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> bytes(8 + header.size() + data_bytes, 0);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

std::string refusal(const std::vector<uint8_t>& bytes) {
  try {
    aotrt::safetensors::parse(bytes, "w.safetensors");
  } catch (const aotrt::Error& e) {
    EXPECT_EQ(e.kind(), aotrt::ErrorKind::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(Safetensors, ReadsEntriesAndSkipsMetadata) {
  const std::string header =
      R"({"__metadata__": {"format": "pt"}, "b": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [16, 28]},)"
      R"( "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, "s": {"dtype": "I64", "shape": [], "data_offsets": [28, 36]}})";
  const auto entries = aotrt::safetensors::parse(file_of(header, 36), "w.safetensors");
  ASSERT_EQ(entries.size(), 3u);
  const size_t data = 8 + header.size();
  for (const auto& e : entries) {
    if (e.name == "a") {
      EXPECT_EQ(e.dtype, aotrt::ScalarType::Float32);
      EXPECT_EQ(e.shape, (std::vector<int64_t>{4}));
      EXPECT_EQ(e.begin, data);
      EXPECT_EQ(e.end, data + 16);
    } else if (e.name == "b") {
      EXPECT_EQ(e.dtype, aotrt::ScalarType::BFloat16);
      EXPECT_EQ(e.shape, (std::vector<int64_t>{2, 3}));
    } else {
      EXPECT_EQ(e.name, "s");
      EXPECT_TRUE(e.shape.empty());
    }
  }
}

TEST(Safetensors, RefusesMalformedFiles) {
  EXPECT_NE(refusal({1, 2, 3}).find("too short"), std::string::npos);
  auto long_header = file_of("{}", 0);
  long_header[0] = 200;
  EXPECT_NE(refusal(long_header).find("does not fit the file"), std::string::npos);
  EXPECT_NE(refusal(file_of("[1, 2]", 0)).find("not a JSON object"), std::string::npos);
  // One tensor entry each: {header entry, data bytes, what the refusal says}.
  const struct {
    const char* entry;
    size_t data;
    const char* says;
  } cases[] = {
      {R"("dtype": "Q7", "shape": [1], "data_offsets": [0, 1])", 1, "dtype 'Q7'"},
      {R"("dtype": "F32", "shape": [-1], "data_offsets": [0, 4])", 4, "non-negative"},
      {R"("dtype": "F32", "shape": [2], "data_offsets": [0, 8])", 4, "fall outside"},
      {R"("dtype": "F32", "shape": [3], "data_offsets": [0, 8])", 8, "8 bytes of data for 3 F32 elements"},
      {R"("dtype": "F32", "shape": [1])", 4, "tensor 'x'"},
  };
  for (const auto& c : cases) {
    const std::string msg = refusal(file_of(std::string(R"({"x": {)") + c.entry + "}}", c.data));
    EXPECT_NE(msg.find(c.says), std::string::npos) << c.entry << ": " << msg;
  }
}

}  // namespace
