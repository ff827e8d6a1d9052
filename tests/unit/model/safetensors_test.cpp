// Safetensors headers are validated before use: each broken file is an
// aph::Error naming the file and, where there is one, the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/weights/safetensors.hpp"

namespace {

using aph::weights::SafetensorsFile;

std::vector<uint8_t> image(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    SafetensorsFile f(bytes.data(), bytes.size(), "shard.safetensors");
  } catch (const aph::Error& e) {
    EXPECT_EQ(e.code(), APH_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

TEST(Safetensors, ParsesAValidFile) {
  auto img = image(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                   R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]},"s":{"dtype":"F4","shape":[2],"data_offsets":[32,33]}})",
                   33);
  const float seven = 7.0f;  // the data section need not be 4-byte aligned
  std::memcpy(img.data() + img.size() - 33 + 5 * sizeof(float), &seven, sizeof seven);
  SafetensorsFile f(img.data(), img.size(), "x.safetensors");
  ASSERT_EQ(f.tensors().size(), 3u);
  const auto& t = f.tensors().at("a");
  EXPECT_EQ(t.dtype, APH_DTYPE_F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  float a5 = 0;
  std::memcpy(&a5, t.data + 5 * sizeof(float), sizeof a5);
  EXPECT_EQ(a5, 7.0f);
  EXPECT_EQ(f.tensors().at("b").dtype, APH_DTYPE_BF16);
  EXPECT_EQ(f.tensors().at("s").dtype, -1);  // F4: handed to plugins as raw bytes
  EXPECT_EQ(f.metadata().at("format"), "pt");
}

TEST(Safetensors, RejectsTruncatedAndLyingFiles) {
  EXPECT_NE(error_of(std::vector<uint8_t>(5, 0)).find("shard.safetensors"), std::string::npos);
  auto huge = image("{}", 0);
  huge[7] = 0x7f;  // header length far past the end
  EXPECT_NE(error_of(huge).find("header length"), std::string::npos);
  const std::string h = R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  std::string e = error_of(image(h, 8));  // data section shorter than the header claims
  EXPECT_NE(e.find("tensor 'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("shard.safetensors"), std::string::npos) << e;
  e = error_of(image(R"({"w":{"dtype":"F32","shape":[5],"data_offsets":[0,16]}})", 16));  // shape lies
  EXPECT_NE(e.find("tensor 'w'"), std::string::npos) << e;
  e = error_of(image(R"({"w":{"dtype":"Q9","shape":[4],"data_offsets":[0,16]}})", 16));
  EXPECT_NE(e.find("unknown dtype"), std::string::npos) << e;
  e = error_of(image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", 6));
  EXPECT_NE(e.find("overlap"), std::string::npos) << e;
  e = error_of(image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 9));
  EXPECT_NE(e.find("after the last tensor"), std::string::npos) << e;
  e = error_of(image(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,4]}})", 4));
  EXPECT_NE(e.find("tensor 'a'"), std::string::npos) << e;
  e = error_of(image(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})", 4));
  EXPECT_NE(e.find("too large"), std::string::npos) << e;
  e = error_of(image("[1,2]", 0));
  EXPECT_NE(e.find("not a JSON object"), std::string::npos) << e;
  e = error_of(image("{\"a\":", 0));
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
}

}  // namespace
