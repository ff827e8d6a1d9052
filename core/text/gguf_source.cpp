// Tokenizer::from_gguf_metadata: the tokenizer.ggml.* keys (FORMATS.md §1.2)
// with llama.cpp's defaults (llama-vocab.cpp, llama_vocab::impl::load).
#include <cmath>

#include "core/common/error.hpp"
#include "core/text/tokenizer.hpp"
#include "core/text/tokenizer_impl.hpp"

namespace aph::text {
namespace {

namespace json = boost::json;

constexpr const char* kSource = "GGUF tokenizer metadata";

std::string key_error(const std::string& key, const std::string& what) {
  return std::string(kSource) + ": " + key + " " + what;
}

const json::value* find(const json::object& obj, const std::string& key) {
  auto it = obj.find(key);
  return it == obj.end() || it->value().is_null() ? nullptr : &it->value();
}

std::string get_string(const json::object& obj, const std::string& key, const std::string& fallback) {
  const json::value* v = find(obj, key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) throw invalid_argument(key_error(key, "must be a string"));
  return std::string(v->as_string());
}

int64_t as_integer(const json::value& v, const std::string& key) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64()) {
    if (v.as_uint64() > static_cast<uint64_t>(INT64_MAX)) throw invalid_argument(key_error(key, "is out of range"));
    return static_cast<int64_t>(v.as_uint64());
  }
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  throw invalid_argument(key_error(key, "must be an integer"));
}

int32_t get_id(const json::object& obj, const std::string& key, int32_t fallback) {
  const json::value* v = find(obj, key);
  if (v == nullptr) return fallback;
  const int64_t id = as_integer(*v, key);
  // -1 and 0xFFFFFFFF both mean "none" in files written by various converters.
  if (id < 0 || id > INT32_MAX) return -1;
  return static_cast<int32_t>(id);
}

bool get_bool(const json::object& obj, const std::string& key, bool fallback) {
  const json::value* v = find(obj, key);
  if (v == nullptr) return fallback;
  if (v->is_bool()) return v->as_bool();
  return as_integer(*v, key) != 0;
}

const json::array* get_array(const json::object& obj, const std::string& key, bool required) {
  const json::value* v = find(obj, key);
  if (v == nullptr) {
    if (required) throw invalid_argument(key_error(key, "is missing"));
    return nullptr;
  }
  if (!v->is_array()) throw invalid_argument(key_error(key, "must be an array"));
  return &v->as_array();
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf_metadata(const json::object& tok) {
  VocabularySpec spec;
  spec.source = kSource;
  const std::string model = get_string(tok, "tokenizer.ggml.model", "");
  const std::string pre = get_string(tok, "tokenizer.ggml.pre", "default");

  const json::array& tokens = *get_array(tok, "tokenizer.ggml.tokens", true);
  spec.tokens.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].is_string()) {
      throw invalid_argument(key_error("tokenizer.ggml.tokens", "[" + std::to_string(i) + "] is not a string"));
    }
    spec.tokens.emplace_back(tokens[i].as_string());
  }
  if (const json::array* scores = get_array(tok, "tokenizer.ggml.scores", false)) {
    spec.scores.reserve(scores->size());
    for (size_t i = 0; i < scores->size(); ++i) {
      const json::value& s = (*scores)[i];
      if (!s.is_number()) {
        throw invalid_argument(key_error("tokenizer.ggml.scores", "[" + std::to_string(i) + "] is not a number"));
      }
      spec.scores.push_back(static_cast<float>(s.to_number<double>()));
    }
  }
  if (const json::array* types = get_array(tok, "tokenizer.ggml.token_type", false)) {
    spec.types.reserve(types->size());
    for (size_t i = 0; i < types->size(); ++i) {
      const int64_t t = as_integer((*types)[i], "tokenizer.ggml.token_type[" + std::to_string(i) + "]");
      if (t < 0 || t > 6) {
        throw invalid_argument(key_error("tokenizer.ggml.token_type",
                                         "[" + std::to_string(i) + "] = " + std::to_string(t) + " is not a token type"));
      }
      spec.types.push_back(static_cast<TokenType>(t));
    }
  }

  if (model == "llama") {
    spec.kind = ModelKind::sentencepiece_scores;
    spec.bos_id = get_id(tok, "tokenizer.ggml.bos_token_id", 1);
    spec.eos_id = get_id(tok, "tokenizer.ggml.eos_token_id", 2);
    spec.unk_id = get_id(tok, "tokenizer.ggml.unknown_token_id", 0);
    spec.add_bos = get_bool(tok, "tokenizer.ggml.add_bos_token", true);
    spec.add_eos = get_bool(tok, "tokenizer.ggml.add_eos_token", false);
    const bool add_space_prefix = get_bool(tok, "tokenizer.ggml.add_space_prefix", true);
    if (add_space_prefix) {
      spec.text_rules.push_back(
          TextRule{TextRule::Kind::prepend, "", " ", PrefixWhen::at_start_or_after_special, false});
    }
    spec.text_rules.push_back(TextRule{TextRule::Kind::replace, " ", "\xE2\x96\x81"});
    spec.strip_leading_space = add_space_prefix;
  } else if (model == "gpt2") {
    spec.kind = ModelKind::byte_level_bpe;
    const json::array& merges = *get_array(tok, "tokenizer.ggml.merges", true);
    spec.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      if (!merges[i].is_string()) {
        throw invalid_argument(key_error("tokenizer.ggml.merges", "[" + std::to_string(i) + "] is not a string"));
      }
      const std::string_view m = merges[i].as_string();
      const size_t space = m.find(' ', 1);
      if (space == std::string_view::npos) {
        throw invalid_argument(key_error("tokenizer.ggml.merges",
                                         "[" + std::to_string(i) + "] '" + std::string(m) + "' has no space"));
      }
      spec.merges.emplace_back(std::string(m.substr(0, space)), std::string(m.substr(space + 1)));
    }
    spec.pre_tokenizer = pre_tokenizer_for_gguf(pre);
    bool add_bos = false;
    if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
        pre == "falcon-h1" || pre == "pixtral" || pre == "midm-2.0" || pre == "lfm2" || pre == "tekken") {
      spec.ignore_merges = true;
      add_bos = true;
    }
    spec.bos_id = get_id(tok, "tokenizer.ggml.bos_token_id", 11);
    spec.eos_id = get_id(tok, "tokenizer.ggml.eos_token_id", 11);
    spec.unk_id = get_id(tok, "tokenizer.ggml.unknown_token_id", -1);
    spec.add_bos = get_bool(tok, "tokenizer.ggml.add_bos_token", add_bos);
    spec.add_eos = get_bool(tok, "tokenizer.ggml.add_eos_token", false);
    if (get_bool(tok, "tokenizer.ggml.add_space_prefix", false)) {
      spec.text_rules.push_back(TextRule{TextRule::Kind::prepend, "", " ", PrefixWhen::first_segment, false});
    }
  } else if (model.empty()) {
    throw invalid_argument(key_error("tokenizer.ggml.model", "is missing"));
  } else {
    throw invalid_argument(key_error("tokenizer.ggml.model", "'" + model +
                                     "' is not supported (supported: llama, gpt2)"));
  }
  spec.pad_id = get_id(tok, "tokenizer.ggml.padding_token_id", -1);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    const int32_t id = get_id(tok, key, -1);
    if (id >= 0) spec.extra_eog_ids.push_back(id);
  }
  // Defaults that point past a small vocabulary mean "none", not an error.
  const auto n = static_cast<int32_t>(spec.tokens.size());
  const std::pair<int32_t*, const char*> defaults[] = {
      {&spec.bos_id, "tokenizer.ggml.bos_token_id"},
      {&spec.eos_id, "tokenizer.ggml.eos_token_id"},
      {&spec.unk_id, "tokenizer.ggml.unknown_token_id"}};
  for (const auto& [id, key] : defaults) {
    if (*id >= n && find(tok, key) == nullptr) *id = -1;
  }

  // llama.cpp matches control, user-defined and unknown tokens in the input;
  // only user-defined ones are matched when special tokens are not parsed.
  // (A token_type array of the wrong length is refused by build_tokenizer.)
  const bool have_types = spec.types.size() == spec.tokens.size();
  for (int32_t id = 0; have_types && id < n; ++id) {
    const TokenType t = spec.types[id];
    if (t == TokenType::control || t == TokenType::unknown || t == TokenType::user_defined) {
      spec.added_tokens.push_back(AddedToken{id, spec.tokens[id], t != TokenType::user_defined, false, false});
    }
  }
  return build_tokenizer(std::move(spec));
}

}  // namespace aph::text
