// Tokenizer::from_hf: HF tokenizers' tokenizer.json (model BPE; normalizer,
// pre_tokenizer, post_processor and decoder sections), plus
// tokenizer_config.json / special_tokens_map.json for the special tokens.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "core/text/hf_sections.hpp"
#include "core/text/tokenizer.hpp"
#include "core/text/tokenizer_impl.hpp"

namespace aph::text {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

json::object read_json_object(const fs::path& path, bool required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (required) throw invalid_argument(path.string() + ": cannot be read");
    return {};
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(buffer.str(), ec);
  if (ec) throw invalid_argument(path.string() + ": not valid JSON: " + ec.message());
  if (!v.is_object()) throw invalid_argument(path.string() + ": the top level is not an object");
  return std::move(v.as_object());
}

// "bos_token": "<s>" or {"content": "<s>", ...}
std::string special_token_content(const json::object& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return {};
  if (it->value().is_string()) return std::string(it->value().as_string());
  if (it->value().is_object()) {
    const auto& o = it->value().as_object();
    auto c = o.find("content");
    if (c != o.end() && c->value().is_string()) return std::string(c->value().as_string());
  }
  return {};
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_hf(const std::string& path) {
  fs::path file = path;
  std::error_code ec;
  if (fs::is_directory(file, ec)) file /= "tokenizer.json";
  const fs::path dir = file.parent_path();
  const json::object root = read_json_object(file, true);
  const json::object config = read_json_object(dir / "tokenizer_config.json", false);
  const json::object special_map = read_json_object(dir / "special_tokens_map.json", false);

  VocabularySpec spec;
  spec.source = file.string();
  HfSections sections(spec);
  sections.read_model(root);
  sections.read_added_tokens(root);
  sections.read_normalizer(root);
  sections.read_pre_tokenizer(root);
  sections.read_decoder(root);

  auto lookup = [&](const std::string& content) -> int32_t {
    if (content.empty()) return -1;
    for (size_t i = 0; i < spec.tokens.size(); ++i)
      if (spec.tokens[i] == content) return static_cast<int32_t>(i);
    return -1;
  };
  for (const json::object* src : {&config, &special_map}) {
    if (spec.bos_id < 0) spec.bos_id = lookup(special_token_content(*src, "bos_token"));
    if (spec.eos_id < 0) spec.eos_id = lookup(special_token_content(*src, "eos_token"));
    if (spec.unk_id < 0) spec.unk_id = lookup(special_token_content(*src, "unk_token"));
    if (spec.pad_id < 0) spec.pad_id = lookup(special_token_content(*src, "pad_token"));
  }
  // The post-processor is what HF's fast tokenizer really runs; the config
  // flags are what the slow one reads.
  if (!sections.read_post_processor(root)) {
    auto flag = [&](const char* key) {
      auto it = config.find(key);
      return it != config.end() && it->value().is_bool() && it->value().as_bool();
    };
    spec.add_bos = flag("add_bos_token");
    spec.add_eos = flag("add_eos_token");
  }
  return build_tokenizer(std::move(spec));
}

}  // namespace aph::text
