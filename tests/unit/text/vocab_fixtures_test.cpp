// Every string of every fixture vocabulary must encode to the reference ids
// (add_special=false, parse_special=false, as the fixtures were made).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/unit/text/vocab_fixtures.hpp"

namespace aph::text::testing {
namespace {

std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

TEST(VocabFixtures, EveryStringOfEveryVocabMatchesTheReference) {
  const auto names = vocab_fixture_names();
  ASSERT_GE(names.size(), 6u) << "fixtures missing in " << vocab_fixture_dir();
  size_t total = 0;
  size_t passed = 0;
  for (const auto& name : names) {
    const std::string path = vocab_fixture_dir() + "/" + name;
    auto tokenizer = load_gguf_tokenizer(path);
    const auto cases = read_vocab_cases(path);
    size_t ok = 0;
    for (const auto& c : cases) {
      const auto ids = tokenizer->encode(c.input, EncodeOptions{false, false});
      if (ids == c.expected) {
        ++ok;
      } else {
        ADD_FAILURE() << name << ": input '" << c.input << "'\n  expected" << ids_to_string(c.expected)
                      << "\n  got     " << ids_to_string(ids);
      }
    }
    std::printf("%-40s %zu/%zu\n", name.c_str(), ok, cases.size());
    total += cases.size();
    passed += ok;
  }
  std::printf("all vocabularies: %zu/%zu strings match\n", passed, total);
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace aph::text::testing
