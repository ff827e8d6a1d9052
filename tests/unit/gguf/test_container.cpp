// The container parser on synthetic files (every value type, splits) and on
// corrupted ones: each corruption must be an aph::Error naming the file and
// the key or tensor, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/container/gguf_file.hpp"
#include "plugins/quant-gguf/container/gguf_writer.hpp"

using namespace aph::gguf;
namespace json = boost::json;

namespace {

std::vector<uint8_t> filled(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// A small file: a few keys and two tensors (F32 [8] and Q8_0 [64, 2]).
struct Sample {
  GgufWriter w;
  std::vector<std::vector<uint8_t>> data;
  Sample() {
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 2);
    w.add_kv("tokenizer.ggml.tokens", {kVArray, kVString}, json::array{"a", "b", "c"});
    w.add_tensor("output_norm.weight", kF32, {8});
    w.add_tensor("blk.0.attn_q.weight", kQ8_0, {64, 2});
    data = {filled(32, 1), filled(4 * 34, 9)};
  }
  std::vector<uint8_t> bytes() const { return w.to_bytes(data); }
};

std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    GgufFile::parse(bytes.data(), bytes.size(), "bad.gguf");
  } catch (const aph::Error& e) {
    return e.what();
  }
  return "";
}

// Offset of the first occurrence of `needle` in the bytes.
size_t find_bytes(const std::vector<uint8_t>& b, const std::string& needle) {
  auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
  EXPECT_NE(it, b.end());
  return static_cast<size_t>(it - b.begin());
}

template <typename T>
void poke(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}

}  // namespace

TEST(GgufContainer, EveryValueTypeRoundTrips) {
  GgufWriter w(64);
  w.add_kv("u8", {kVU8, kVU8}, 200);
  w.add_kv("i8", {kVI8, kVU8}, -100);
  w.add_kv("u16", {kVU16, kVU8}, 60000);
  w.add_kv("i16", {kVI16, kVU8}, -30000);
  w.add_kv("u32", {kVU32, kVU8}, 4000000000u);
  w.add_kv("i32", {kVI32, kVU8}, -2000000000);
  w.add_kv("u64", {kVU64, kVU8}, json::value(uint64_t{18000000000000000000ull}));
  w.add_kv("i64", {kVI64, kVU8}, json::value(int64_t{-9000000000000000000ll}));
  w.add_kv("f32", {kVF32, kVU8}, 0.5);
  w.add_kv("f64", {kVF64, kVU8}, 1e300);
  w.add_kv("bool", {kVBool, kVU8}, true);
  w.add_kv("str", {kVString, kVU8}, "héllo");
  w.add_kv("arr", {kVArray, kVI32}, json::array{1, -2, 3});
  w.add_kv("nested", {kVArray, kVU16}, json::array{json::array{1, 2}, json::array{3}});
  w.add_kv("empty", {kVArray, kVString}, json::array{});
  w.add_tensor("t", kBF16, {4, 3});
  auto bytes = w.to_bytes({filled(24, 3)});
  auto f = GgufFile::parse(bytes.data(), bytes.size(), "mem.gguf");
  const auto& md = f->metadata();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(md.at("u8").as_uint64(), 200u);
  EXPECT_EQ(md.at("i8").as_int64(), -100);
  EXPECT_EQ(md.at("u16").as_uint64(), 60000u);
  EXPECT_EQ(md.at("i16").as_int64(), -30000);
  EXPECT_EQ(md.at("u32").as_uint64(), 4000000000u);
  EXPECT_EQ(md.at("i32").as_int64(), -2000000000);
  EXPECT_EQ(md.at("u64").as_uint64(), 18000000000000000000ull);
  EXPECT_EQ(md.at("i64").as_int64(), -9000000000000000000ll);
  EXPECT_EQ(md.at("f32").as_double(), 0.5);
  EXPECT_EQ(md.at("f64").as_double(), 1e300);
  EXPECT_EQ(md.at("bool").as_bool(), true);
  EXPECT_EQ(md.at("str").as_string(), "héllo");
  EXPECT_EQ(md.at("arr").as_array().size(), 3u);
  EXPECT_EQ(md.at("arr").as_array()[1].as_int64(), -2);
  EXPECT_EQ(md.at("nested").as_array()[0].as_array()[1].as_uint64(), 2u);
  EXPECT_EQ(md.at("nested").as_array()[1].as_array()[0].as_uint64(), 3u);
  EXPECT_TRUE(md.at("empty").as_array().empty());
  ASSERT_NE(f->key_type("arr"), nullptr);
  EXPECT_EQ(f->key_type("arr")->type, kVArray);
  EXPECT_EQ(f->key_type("arr")->element, kVI32);
  EXPECT_EQ(f->key_type("missing"), nullptr);
  const TensorInfo* t = f->find("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type, kBF16);
  EXPECT_EQ(t->ne, (std::vector<uint64_t>{4, 3}));
  EXPECT_EQ(t->nbytes, 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) - reinterpret_cast<uintptr_t>(bytes.data()), bytes.size() - 64);
  EXPECT_EQ(std::memcmp(t->data, filled(24, 3).data(), 24), 0);
}

TEST(GgufContainer, EveryTruncationIsAnError) {
  Sample s;
  auto bytes = s.bytes();
  // The last tensor ends 136 bytes into its slot; anything shorter is invalid.
  size_t end = s.w.header().size() + s.w.tensor_offset(1) + s.w.tensor_bytes(1);
  for (size_t len = 0; len < end; ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);
    std::string msg = parse_error(cut);
    ASSERT_FALSE(msg.empty()) << "prefix of " << len << " bytes parsed";
    EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;
  }
  std::vector<uint8_t> exact(bytes.begin(), bytes.begin() + end);
  EXPECT_EQ(parse_error(exact), "");
}

// Found by fuzz_gguf_container: a file cut inside the padding before its data
// section, whose only tensor is empty, parsed with the tensor pointing past
// the end of the buffer.
TEST(GgufContainer, FileCutBeforeItsDataSectionIsAnError) {
  GgufWriter w(64);
  w.add_kv("general.architecture", {kVString, kVU8}, "llama");
  w.add_tensor("empty", kF32, {0});
  const auto bytes = w.to_bytes({{}});
  ASSERT_EQ(bytes.size() % 64, 0u);
  EXPECT_EQ(parse_error(bytes), "");
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 1);
  const std::string msg = parse_error(cut);
  EXPECT_NE(msg.find("before its data section"), std::string::npos) << msg;
}

TEST(GgufContainer, LyingHeadersAreErrorsNamingTheCulprit) {
  Sample s;
  const auto good = s.bytes();
  auto expect = [&](std::vector<uint8_t> b, const std::string& needle) {
    std::string msg = parse_error(b);
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: '" << msg << "' lacks " << needle;
    EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;
  };
  {
    auto b = good;
    b[0] = 'X';
    expect(b, "magic");
  }
  for (uint32_t v : {0u, 1u, 4u}) {
    auto b = good;
    poke<uint32_t>(b, 4, v);
    expect(b, "version");
  }
  {
    auto b = good;
    poke<uint32_t>(b, 4, 0x03000000u);
    expect(b, "big-endian");
  }
  {
    auto b = good;
    poke<uint64_t>(b, 8, uint64_t{1} << 40);
    expect(b, "tensor count");
  }
  {
    auto b = good;
    poke<uint64_t>(b, 16, uint64_t{1} << 40);
    expect(b, "metadata count");
  }
  {  // key string length far past the end
    auto b = good;
    poke<uint64_t>(b, 24, uint64_t{1} << 60);
    expect(b, "truncated");
  }
  {  // array count lies
    auto b = good;
    size_t at = find_bytes(b, "tokenizer.ggml.tokens") + 21 + 4 + 4;
    poke<uint64_t>(b, at, uint64_t{1} << 50);
    expect(b, "tokenizer.ggml.tokens");
  }
  {  // unknown value type
    auto b = good;
    size_t at = find_bytes(b, "llama.block_count") + 17;
    poke<uint32_t>(b, at, 13);
    expect(b, "llama.block_count");
  }
  size_t q = find_bytes(good, "blk.0.attn_q.weight") + 19;  // at n_dims
  {
    auto b = good;
    poke<uint32_t>(b, q, 5);
    expect(b, "blk.0.attn_q.weight");
  }
  {  // ne[0] not a multiple of 32
    auto b = good;
    poke<uint64_t>(b, q + 4, 48);
    expect(b, "block size");
  }
  {  // unknown ggml type
    auto b = good;
    poke<uint32_t>(b, q + 20, 4);
    expect(b, "unknown ggml type");
  }
  {  // misaligned offset
    auto b = good;
    poke<uint64_t>(b, q + 24, 40);
    expect(b, "aligned");
  }
  {  // offset beyond the data
    auto b = good;
    poke<uint64_t>(b, q + 24, 1 << 20);
    expect(b, "outside the data section");
  }
  {  // overlapping tensors
    auto b = good;
    poke<uint64_t>(b, q + 24, 0);
    expect(b, "overlaps");
  }
  {  // huge ne that overflows the element count
    auto b = good;
    poke<uint64_t>(b, q + 12, uint64_t{1} << 62);
    expect(b, "blk.0.attn_q.weight");
  }
}

TEST(GgufContainer, DuplicatesAndBadAlignmentAreErrors) {
  {
    GgufWriter w;
    w.add_u32("k", 1);
    w.add_u32("k", 2);
    auto b = w.to_bytes({});
    EXPECT_NE(parse_error(b).find("duplicate key 'k'"), std::string::npos);
  }
  {
    GgufWriter w;
    w.add_tensor("x", kF32, {4});
    w.add_tensor("x", kF32, {4});
    auto b = w.to_bytes({filled(16, 0), filled(16, 0)});
    EXPECT_NE(parse_error(b).find("duplicate tensor 'x'"), std::string::npos);
  }
  {
    GgufWriter w;
    w.add_u32("general.alignment", 24);
    auto b = w.to_bytes({});
    EXPECT_NE(parse_error(b).find("general.alignment"), std::string::npos);
  }
  {
    GgufWriter w;
    w.add_string("general.alignment", "32");
    auto b = w.to_bytes({});
    EXPECT_NE(parse_error(b).find("general.alignment"), std::string::npos);
  }
  {
    GgufWriter w;
    w.add_kv("b", {kVBool, kVU8}, true);
    auto b = w.to_bytes({});
    size_t at = find_bytes(b, "b") + 1 + 4;
    b[at] = 7;
    EXPECT_NE(parse_error(b).find("bool"), std::string::npos);
  }
}

TEST(GgufContainer, DeeplyNestedArraysAreRejected) {
  // 64 levels of [array of array ...] would recurse without a limit.
  std::vector<uint8_t> b = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  auto put64 = [&](uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i))); };
  auto put32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i))); };
  put64(0);
  put64(1);
  put64(1);
  b.push_back('k');
  put32(kVArray);
  for (int i = 0; i < 64; ++i) {
    put32(kVArray);
    put64(1);
  }
  b.resize(b.size() + 64, 0);
  EXPECT_NE(parse_error(b).find("nested"), std::string::npos);
}

namespace {
std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("aph-gguf-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}
void write_file(const std::filesystem::path& p, const std::vector<uint8_t>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}
std::vector<uint8_t> split_file(uint16_t no, uint16_t count, int32_t total, const std::string& tensor,
                                uint8_t seed) {
  GgufWriter w;
  w.add_kv("split.no", {kVU16, kVU8}, no);
  w.add_kv("split.count", {kVU16, kVU8}, count);
  w.add_kv("split.tensors.count", {kVI32, kVU8}, total);
  if (no == 0) w.add_string("general.architecture", "llama");
  w.add_tensor(tensor, kF32, {8});
  return w.to_bytes({filled(32, seed)});
}
}  // namespace

TEST(GgufContainer, SplitFilesJoin) {
  auto d = temp_dir("split");
  write_file(d / "m-00001-of-00002.gguf", split_file(0, 2, 2, "a", 1));
  write_file(d / "m-00002-of-00002.gguf", split_file(1, 2, 2, "b", 2));
  auto f = GgufFile::open((d / "m-00001-of-00002.gguf").string());
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->find("b")->file_index, 1u);
  EXPECT_EQ(std::memcmp(f->find("b")->data, filled(32, 2).data(), 32), 0);
  EXPECT_EQ(f->metadata().at("general.architecture").as_string(), "llama");

  // A wrong split.no in the second file, then a missing second file.
  write_file(d / "m-00002-of-00002.gguf", split_file(0, 2, 2, "b", 2));
  try {
    GgufFile::open((d / "m-00001-of-00002.gguf").string());
    FAIL() << "wrong split.no accepted";
  } catch (const aph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("m-00002-of-00002.gguf"), std::string::npos) << e.what();
  }
  std::filesystem::remove(d / "m-00002-of-00002.gguf");
  EXPECT_THROW(GgufFile::open((d / "m-00001-of-00002.gguf").string()), aph::Error);
  // Opening the second split is refused with a hint.
  write_file(d / "m-00002-of-00002.gguf", split_file(1, 2, 2, "b", 2));
  EXPECT_THROW(GgufFile::open((d / "m-00002-of-00002.gguf").string()), aph::Error);
  // A wrong tensor total.
  write_file(d / "m-00001-of-00002.gguf", split_file(0, 2, 3, "a", 1));
  EXPECT_THROW(GgufFile::open((d / "m-00001-of-00002.gguf").string()), aph::Error);
  std::filesystem::remove_all(d);
}

TEST(GgufContainer, MissingFileIsAnIoError) {
  try {
    GgufFile::open("/nonexistent/x.gguf");
    FAIL();
  } catch (const aph::Error& e) {
    EXPECT_EQ(e.code(), APH_ERR_IO);
  }
}

TEST(GgufContainer, RealSmolLM2File) {
  const char* path = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "run scripts/fetch-default-model.sh";
  auto f = GgufFile::open(path);
  const auto& md = f->metadata();
  EXPECT_EQ(md.at("general.architecture").as_string(), "llama");
  EXPECT_EQ(md.at("llama.block_count").as_uint64(), 30u);
  EXPECT_EQ(md.at("tokenizer.ggml.tokens").as_array().size(), 49152u);
  EXPECT_EQ(f->tensors().size(), 272u);
  const TensorInfo* emb = f->find("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->ne, (std::vector<uint64_t>{576, 49152}));
  for (const auto& t : f->tensors()) {
    EXPECT_EQ(t.offset % f->alignment(), 0u) << t.name;
    EXPECT_GT(t.nbytes, 0u);
  }
}
