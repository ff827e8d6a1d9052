// Tokenizer::from_hf: HF tokenizers' tokenizer.json (model BPE; normalizer,
// pre_tokenizer, post_processor and decoder sections), plus
// tokenizer_config.json / special_tokens_map.json for the special tokens.
#include <filesystem>
#include <optional>
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

json::object parse_object(std::string_view text, const std::string& name) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) throw invalid_argument(name + ": not valid JSON: " + ec.message());
  if (!v.is_object()) throw invalid_argument(name + ": the top level is not an object");
  return std::move(v.as_object());
}

// The file's text, or nullopt when it does not exist.
std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
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
  const auto tokenizer_json = read_text(file);
  if (!tokenizer_json) throw invalid_argument(file.string() + ": cannot be read");
  return from_hf_json(*tokenizer_json, read_text(dir / "tokenizer_config.json").value_or(""),
                      read_text(dir / "special_tokens_map.json").value_or(""), file.string());
}

std::unique_ptr<Tokenizer> Tokenizer::from_hf_json(std::string_view tokenizer_json,
                                                   std::string_view tokenizer_config_json,
                                                   std::string_view special_tokens_map_json,
                                                   const std::string& source) {
  const json::object root = parse_object(tokenizer_json, source);
  const json::object config =
      tokenizer_config_json.empty() ? json::object{} : parse_object(tokenizer_config_json, source + " (tokenizer_config.json)");
  const json::object special_map = special_tokens_map_json.empty()
                                       ? json::object{}
                                       : parse_object(special_tokens_map_json, source + " (special_tokens_map.json)");

  VocabularySpec spec;
  spec.source = source;
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
