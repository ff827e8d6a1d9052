// The shared tokenizer oracle (../shared/fixtures/vocab/): vocab-only GGUF
// files with input strings (.inp) and reference ids (.out).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/text/tokenizer.hpp"

namespace aph::text::testing {

// The fixture directory (APH_VOCAB_FIXTURES, else ../shared/fixtures/vocab
// beside the source tree).
std::string vocab_fixture_dir();
// Every *.gguf in it that has .inp and .out files, sorted.
std::vector<std::string> vocab_fixture_names();

struct VocabCase {
  std::string input;
  std::vector<int32_t> expected;
};
// Splits .inp on "\n__ggml_vocab_test__\n" and pairs pieces with .out lines.
std::vector<VocabCase> read_vocab_cases(const std::string& gguf_path);

// Loads the tokenizer from the GGUF's tokenizer.* keys, as the GGUF plugin
// hands them over.
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& gguf_path);

std::string read_file(const std::string& path);

}  // namespace aph::text::testing
