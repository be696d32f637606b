// The oneDNN descriptor decoder (core/onednn_md.h, Note [Serialized oneDNN
// descriptors]) on blobs of a real torch 2.13 freezing=True export (a conv
// 8x3x3x3 and a depthwise conv 8x1x3x3 of a small conv-bn-linear model, their
// constants_info_[i].opaque_metadata), and on malformed ones. That the decoder
// puts every element where torch's own reorders put it is checked against
// torch in tests/e2e/test_cpu_freezing.py (test_decoder_gives_back_*).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "aotrt/error.h"
#include "core/onednn_md.h"
#include "onednn_blobs.h"

using namespace aotrt;
using namespace aotrt::test;

namespace {

std::string refusal(const std::vector<uint8_t>& blob, std::vector<int64_t> sizes, int64_t bytes,
                    ScalarType dtype = ScalarType::Float32) {
  try {
    decode_onednn_md(blob, sizes, dtype, bytes, "constant 'w'");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OnednnMd, DecodesARealConvBlob) {
  const auto blob = bytes_of(kConvBlob);
  ASSERT_EQ(blob.size(), 772u);
  const std::vector<int64_t> sizes = {8, 3, 3, 3};
  const OnednnBlockedDesc d = decode_onednn_md(blob, sizes, ScalarType::Float32, 896, "w");
  EXPECT_EQ(d.dims, sizes);
  EXPECT_EQ(d.strides, (std::vector<int64_t>{216, 8, 72, 24}));  // Ohwi8o
  EXPECT_EQ(d.inner_blks, (std::vector<int64_t>{8}));
  EXPECT_EQ(d.inner_idxs, (std::vector<int64_t>{0}));
  EXPECT_EQ(d.groups, 1);
  // Ohwi8o: element (o, i, h, w) at o/8*216 + h*72 + w*24 + i*8 + o%8.
  std::vector<float> blocked(224, -1.0f), plain(216, 0.0f);
  for (int o = 0; o < 8; ++o)
    for (int i = 0; i < 3; ++i)
      for (int h = 0; h < 3; ++h)
        for (int w = 0; w < 3; ++w) blocked[h * 72 + w * 24 + i * 8 + o] = float(((o * 3 + i) * 3 + h) * 3 + w);
  const int64_t strides[] = {27, 9, 3, 1};
  unpack_onednn_blocked(d, blocked.data(), plain.data(), strides, sizeof(float));
  for (int k = 0; k < 216; ++k) ASSERT_EQ(plain[k], float(k)) << k;
}

TEST(OnednnMd, DecodesARealGroupedBlobIntoTorchSizes) {
  const auto blob = bytes_of(kDepthwiseBlob);
  const std::vector<int64_t> sizes = {8, 1, 3, 3};
  const OnednnBlockedDesc d = decode_onednn_md(blob, sizes, ScalarType::Float32, 320, "w");
  EXPECT_EQ(d.dims, (std::vector<int64_t>{8, 1, 1, 3, 3}));  // [g, O/g, I/g, kh, kw]
  EXPECT_EQ(d.groups, 8);
  EXPECT_EQ(d.strides, (std::vector<int64_t>{8, 8, 8, 24, 8}));  // Goihw8g
  std::vector<float> blocked(80, -1.0f), plain(72, 0.0f);
  for (int g = 0; g < 8; ++g)
    for (int h = 0; h < 3; ++h)
      for (int w = 0; w < 3; ++w) blocked[h * 24 + w * 8 + g] = float(g * 9 + h * 3 + w);
  const int64_t strides[] = {9, 9, 3, 1};
  unpack_onednn_blocked(d, blocked.data(), plain.data(), strides, sizeof(float));
  for (int k = 0; k < 72; ++k) ASSERT_EQ(plain[k], float(k)) << k;
}

// An int8 weight of the quantized ops carries compensation data after its elements (extra
// flags 1 or 8), which is not read; scale_adjust (2) changes the elements and is refused.
TEST(OnednnMd, Int8CompensationIsReadPastAndScaleAdjustRefused) {
  auto blob = bytes_of(kConvBlob);
  put<int32_t>(blob, 104, 5);  // s8
  const std::vector<int64_t> sizes = {8, 3, 3, 3};
  // The blocked elements (one byte each) and, after them, 8 int32 compensation values.
  const int64_t bytes = 224 + 32;
  for (const uint64_t flags : {uint64_t{1}, uint64_t{8}, uint64_t{9}}) {
    put<uint64_t>(blob, 640, flags);
    EXPECT_EQ(refusal(blob, sizes, bytes, ScalarType::Int8), "") << flags;
  }
  put<uint64_t>(blob, 640, 2);
  EXPECT_NE(refusal(blob, sizes, bytes, ScalarType::Int8).find("extra flags 2"), std::string::npos);
  put<uint64_t>(blob, 640, 8 | 2);
  EXPECT_NE(refusal(blob, sizes, bytes, ScalarType::Int8).find("extra flags 10"), std::string::npos);
}

TEST(OnednnMd, RefusesMalformedBlobsNamingTheConstant) {
  const auto good = bytes_of(kConvBlob);
  const std::vector<int64_t> sizes = {8, 3, 3, 3};
  EXPECT_EQ(refusal(good, sizes, 896), "");
  auto truncated = good;
  truncated.resize(400);
  EXPECT_NE(refusal(truncated, sizes, 896).find("constant 'w': its oneDNN descriptor has 400 bytes"), std::string::npos);
  auto ndims = good;
  put<int32_t>(ndims, 4, 13);
  EXPECT_NE(refusal(ndims, sizes, 896).find("13 dims"), std::string::npos);
  auto zero = good;
  put<int32_t>(zero, 4, 0);
  EXPECT_NE(refusal(zero, sizes, 896).find("0 dims"), std::string::npos);
  auto kind = good;
  put<int32_t>(kind, 312, 3);  // wino
  EXPECT_NE(refusal(kind, sizes, 896).find("format kind 3"), std::string::npos);
  auto flags = good;
  put<uint64_t>(flags, 640, 1);  // s8s8 compensation
  EXPECT_NE(refusal(flags, sizes, 896).find("extra flags 1"), std::string::npos);
  auto version = good;
  put<int32_t>(version, 0, 2);
  EXPECT_NE(refusal(version, sizes, 896).find("starts with 2"), std::string::npos);
  auto idx = good;
  put<int64_t>(idx, 520, 7);  // inner block on dim 7 of 4
  EXPECT_NE(refusal(idx, sizes, 896).find("inner block 0"), std::string::npos);
  EXPECT_NE(refusal(good, {8, 3, 5, 5}, 896).find("dims [8, 3, 3, 3] (groups 1) but the tensor has sizes [8, 3, 5, 5]"),
            std::string::npos);
  EXPECT_NE(refusal(good, sizes, 800).find("reaches element 215 but the constant holds 200"),
            std::string::npos);
  try {
    decode_onednn_md(good, sizes, ScalarType::BFloat16, 896, "w");
    ADD_FAILURE() << "a float32 descriptor was taken for bfloat16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data type 3"), std::string::npos) << e.what();
  }
}
