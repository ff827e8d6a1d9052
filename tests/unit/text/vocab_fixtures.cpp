#include "tests/unit/text/vocab_fixtures.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "plugins/quant-gguf/container/gguf_file.hpp"

namespace aph::text::testing {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string vocab_fixture_dir() {
  if (const char* env = std::getenv("APH_VOCAB_FIXTURES")) return env;
  const char* src = std::getenv("APH_SOURCE_DIR");
  const fs::path root = src != nullptr ? fs::path(src) : fs::current_path();
  return (root / ".." / "shared" / "fixtures" / "vocab").lexically_normal().string();
}

std::vector<std::string> vocab_fixture_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(vocab_fixture_dir(), ec)) {
    const fs::path p = entry.path();
    if (p.extension() != ".gguf") continue;
    if (!fs::exists(p.string() + ".inp") || !fs::exists(p.string() + ".out")) continue;
    names.push_back(p.filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<VocabCase> read_vocab_cases(const std::string& gguf_path) {
  const std::string inp = read_file(gguf_path + ".inp");
  const std::string out = read_file(gguf_path + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t pos = 0;
  while (true) {
    const size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;
    inputs.push_back(inp.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  // The file ends with a separator; anything after the last one is a case too.
  if (pos < inp.size()) inputs.push_back(inp.substr(pos));

  std::vector<std::vector<int32_t>> lines;
  std::istringstream lines_in(out);
  std::string line;
  while (std::getline(lines_in, line)) {
    std::vector<int32_t> ids;
    std::istringstream ids_in(line);
    long long id = 0;
    while (ids_in >> id) ids.push_back(static_cast<int32_t>(id));
    lines.push_back(std::move(ids));
  }
  if (lines.size() != inputs.size()) {
    throw std::runtime_error(gguf_path + ": " + std::to_string(inputs.size()) + " inputs but " +
                             std::to_string(lines.size()) + " output lines");
  }
  std::vector<VocabCase> cases;
  for (size_t i = 0; i < inputs.size(); ++i) cases.push_back({inputs[i], lines[i]});
  return cases;
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& gguf_path) {
  auto file = aph::gguf::GgufFile::open(gguf_path);
  boost::json::object tokenizer;
  for (const auto& kv : file->metadata()) {
    if (kv.key().starts_with("tokenizer.")) tokenizer.emplace(kv.key(), kv.value());
  }
  return Tokenizer::from_gguf_metadata(tokenizer);
}

}  // namespace aph::text::testing
