#include "core/text/hf_sections.hpp"

#include "core/common/error.hpp"
#include "core/text/pre_tokenizer.hpp"

namespace aph::text {
namespace {

namespace json = boost::json;

const json::value* member(const json::object& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

std::string string_member(const json::object& o, const char* key, const std::string& fallback = {}) {
  const json::value* v = member(o, key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : fallback;
}

bool bool_member(const json::object& o, const char* key, bool fallback) {
  const json::value* v = member(o, key);
  return v != nullptr && v->is_bool() ? v->as_bool() : fallback;
}

// {"String": "x"} or {"Regex": "x"} -> a PCRE2 pattern.
std::string pattern_of(const json::object& o) {
  const json::value* p = member(o, "pattern");
  if (p == nullptr || !p->is_object()) return {};
  const auto& po = p->as_object();
  if (const json::value* s = member(po, "String"); s && s->is_string()) {
    return "\\Q" + std::string(s->as_string()) + "\\E";
  }
  if (const json::value* r = member(po, "Regex"); r && r->is_string()) return std::string(r->as_string());
  return {};
}

const char* const kSpaceMark = "\xE2\x96\x81";  // ▁

}  // namespace

void HfSections::fail(const std::string& where, const std::string& what) const {
  throw invalid_argument(spec_.source + ": " + where + ": " + what);
}

void HfSections::read_model(const json::object& root) {
  const json::value* node = member(root, "model");
  if (node == nullptr || !node->is_object()) fail("model", "missing");
  const auto& model = node->as_object();
  const std::string type = string_member(model, "type", "BPE");
  if (type != "BPE") fail("model.type", "'" + type + "' is not supported (BPE only)");
  const json::value* vocab = member(model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) fail("model.vocab", "missing or not an object");
  for (const auto& kv : vocab->as_object()) {
    if (!kv.value().is_int64() || kv.value().as_int64() < 0 || kv.value().as_int64() > (1 << 30)) {
      fail("model.vocab", "'" + std::string(kv.key()) + "' has no valid id");
    }
    const auto id = static_cast<size_t>(kv.value().as_int64());
    if (id >= spec_.tokens.size()) {
      spec_.tokens.resize(id + 1);
      spec_.types.resize(id + 1, TokenType::unused);
    }
    spec_.tokens[id] = std::string(kv.key());
    spec_.types[id] = TokenType::normal;
  }
  if (const json::value* merges = member(model, "merges")) {
    if (!merges->is_array()) fail("model.merges", "not an array");
    for (const auto& m : merges->as_array()) {
      if (m.is_string()) {
        const std::string_view s = m.as_string();
        const size_t space = s.find(' ', 1);
        if (space == std::string_view::npos) fail("model.merges", "'" + std::string(s) + "' has no space");
        spec_.merges.emplace_back(std::string(s.substr(0, space)), std::string(s.substr(space + 1)));
      } else if (m.is_array() && m.as_array().size() == 2 && m.as_array()[0].is_string() &&
                 m.as_array()[1].is_string()) {
        spec_.merges.emplace_back(std::string(m.as_array()[0].as_string()),
                                  std::string(m.as_array()[1].as_string()));
      } else {
        fail("model.merges", "an entry is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
  }
  if (!string_member(model, "continuing_subword_prefix").empty() ||
      !string_member(model, "end_of_word_suffix").empty()) {
    fail("model", "continuing_subword_prefix/end_of_word_suffix are not supported");
  }
  spec_.byte_fallback = bool_member(model, "byte_fallback", false);
  spec_.fuse_unk = bool_member(model, "fuse_unk", false);
  spec_.ignore_merges = bool_member(model, "ignore_merges", false);
  spec_.kind = ModelKind::char_bpe;
  const std::string unk = string_member(model, "unk_token");
  for (size_t i = 0; i < spec_.tokens.size(); ++i) {
    const std::string& t = spec_.tokens[i];
    if (!unk.empty() && t == unk) {
      spec_.unk_id = static_cast<int32_t>(i);
      spec_.types[i] = TokenType::unknown;
    } else if (spec_.byte_fallback && t.size() == 6 && t.starts_with("<0x") && t.back() == '>') {
      spec_.types[i] = TokenType::byte;
    }
  }
}

void HfSections::read_added_tokens(const json::object& root) {
  const json::value* node = member(root, "added_tokens");
  if (node == nullptr) return;
  if (!node->is_array()) fail("added_tokens", "not an array");
  for (const auto& entry : node->as_array()) {
    if (!entry.is_object()) fail("added_tokens", "an entry is not an object");
    const auto& o = entry.as_object();
    const json::value* id = member(o, "id");
    const std::string content = string_member(o, "content");
    if (id == nullptr || !id->is_int64() || id->as_int64() < 0 || id->as_int64() > (1 << 30) || content.empty()) {
      fail("added_tokens", "an entry lacks a valid id or content");
    }
    const auto index = static_cast<size_t>(id->as_int64());
    if (index >= spec_.tokens.size()) {
      spec_.tokens.resize(index + 1);
      spec_.types.resize(index + 1, TokenType::unused);
    }
    const bool special = bool_member(o, "special", false);
    spec_.tokens[index] = content;
    if (spec_.types[index] != TokenType::unknown) {
      spec_.types[index] = special ? TokenType::control : TokenType::user_defined;
    }
    spec_.added_tokens.push_back(AddedToken{static_cast<int32_t>(index), content, special,
                                            bool_member(o, "lstrip", false), bool_member(o, "rstrip", false)});
  }
}

void HfSections::read_normalizer(const json::object& root) {
  if (const json::value* node = member(root, "normalizer")) normalizer(*node);
}

void HfSections::normalizer(const json::value& node) {
  if (!node.is_object()) fail("normalizer", "not an object");
  const auto& o = node.as_object();
  const std::string type = string_member(o, "type");
  if (type == "Sequence") {
    const json::value* list = member(o, "normalizers");
    if (list == nullptr || !list->is_array()) fail("normalizer.normalizers", "not an array");
    for (const auto& n : list->as_array()) normalizer(n);
  } else if (type == "Prepend") {
    spec_.text_rules.push_back(TextRule{TextRule::Kind::prepend, "", string_member(o, "prepend"),
                                        PrefixWhen::every_segment, false});
  } else if (type == "Replace") {
    const json::value* p = member(o, "pattern");
    const json::value* s = p != nullptr && p->is_object() ? member(p->as_object(), "String") : nullptr;
    if (s == nullptr || !s->is_string()) fail("normalizer Replace", "only string patterns are supported");
    spec_.text_rules.push_back(TextRule{TextRule::Kind::replace, std::string(s->as_string()),
                                        string_member(o, "content"), PrefixWhen::every_segment, false});
  } else if (type == "Lowercase") {
    spec_.text_rules.push_back(TextRule{TextRule::Kind::lowercase, "", "", PrefixWhen::every_segment, false});
  } else if (type == "NFC") {
    // Identity on text that is already NFC, which is what clients send; a
    // full composition table is not carried here.
  } else {
    fail("normalizer", "type '" + type + "' is not supported");
  }
}

void HfSections::read_pre_tokenizer(const json::object& root) {
  if (const json::value* node = member(root, "pre_tokenizer")) {
    try {
      pre_tokenizer(*node, true);
    } catch (const Error& e) {
      // A bad regex names only itself; say which file it came from.
      if (std::string(e.what()).find(spec_.source) != std::string::npos) throw;
      fail("pre_tokenizer", e.what());
    }
  }
  if (byte_level_) spec_.kind = ModelKind::byte_level_bpe;
}

void HfSections::pre_tokenizer(const json::value& node, bool first_step) {
  if (!node.is_object()) fail("pre_tokenizer", "not an object");
  const auto& o = node.as_object();
  const std::string type = string_member(o, "type");
  PreTokenizer& pre = spec_.pre_tokenizer;
  if (type == "Sequence") {
    const json::value* list = member(o, "pretokenizers");
    if (list == nullptr || !list->is_array()) fail("pre_tokenizer.pretokenizers", "not an array");
    bool first = first_step;
    for (const auto& p : list->as_array()) {
      pre_tokenizer(p, first);
      first = false;
    }
  } else if (type == "ByteLevel") {
    byte_level_ = true;
    if (bool_member(o, "add_prefix_space", false)) {
      spec_.text_rules.push_back(TextRule{TextRule::Kind::prepend, "", " ", PrefixWhen::every_segment, true});
    }
    if (bool_member(o, "use_regex", true)) pre.add_regex(kGpt2Pattern);
    pre.mark_byte_level();
  } else if (type == "Split") {
    const std::string pattern = pattern_of(o);
    if (pattern.empty()) fail("pre_tokenizer Split", "missing pattern");
    pre.add_regex(pattern, parse_split_behavior(string_member(o, "behavior", "Isolated")),
                  bool_member(o, "invert", false));
  } else if (type == "Digits") {
    pre.add_regex(bool_member(o, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
  } else if (type == "Punctuation") {
    pre.add_regex(kHfPunctuationClass, parse_split_behavior(string_member(o, "behavior", "Isolated")));
  } else if (type == "Whitespace") {
    pre.add_regex(R"(\w+|[^\w\s]+)", SplitBehavior::removed, true);
  } else if (type == "WhitespaceSplit") {
    pre.add_regex(R"(\s+)", SplitBehavior::removed);
  } else if (type == "Metaspace") {
    const std::string mark = string_member(o, "replacement", kSpaceMark);
    std::string scheme = string_member(o, "prepend_scheme");
    if (scheme.empty()) scheme = bool_member(o, "add_prefix_space", true) ? "always" : "never";
    if (!first_step && scheme != "never") {
      fail("pre_tokenizer Metaspace", "a prefix after other pre-tokenizers is not supported");
    }
    spec_.text_rules.push_back(TextRule{TextRule::Kind::replace, " ", mark, PrefixWhen::every_segment, false});
    if (scheme == "always" || scheme == "first") {
      spec_.text_rules.push_back(TextRule{TextRule::Kind::prepend, "", mark,
                                          scheme == "first" ? PrefixWhen::first_segment : PrefixWhen::every_segment,
                                          true});
      spec_.strip_leading_space = true;
    } else if (scheme != "never") {
      fail("pre_tokenizer Metaspace", "prepend_scheme '" + scheme + "' is unknown");
    }
    if (bool_member(o, "split", true)) pre.add_regex("\\Q" + mark + "\\E", SplitBehavior::merged_with_next);
  } else {
    fail("pre_tokenizer", "type '" + type + "' is not supported");
  }
}

void HfSections::read_decoder(const json::object& root) {
  if (const json::value* node = member(root, "decoder")) decoder(*node);
}

void HfSections::decoder(const json::value& node) {
  if (!node.is_object()) return;
  const auto& o = node.as_object();
  const std::string type = string_member(o, "type");
  if (type == "Sequence") {
    if (const json::value* list = member(o, "decoders"); list && list->is_array()) {
      for (const auto& d : list->as_array()) decoder(d);
    }
  } else if (type == "Strip") {
    const json::value* start = member(o, "start");
    if (start && start->is_int64() && start->as_int64() > 0) spec_.strip_leading_space = true;
  } else if (type == "ByteLevel") {
    byte_level_ = true;
    spec_.kind = ModelKind::byte_level_bpe;
  }
}

bool HfSections::read_post_processor(const json::object& root) {
  const json::value* node = member(root, "post_processor");
  return node != nullptr && post_processor(*node);
}

bool HfSections::post_processor(const json::value& node) {
  if (!node.is_object()) return false;
  const auto& o = node.as_object();
  const std::string type = string_member(o, "type");
  if (type == "Sequence") {
    bool any = false;
    if (const json::value* list = member(o, "processors"); list && list->is_array()) {
      for (const auto& p : list->as_array()) any = post_processor(p) || any;
    }
    return any;
  }
  if (type != "TemplateProcessing") return false;
  const json::value* single = member(o, "single");
  const json::value* specials = member(o, "special_tokens");
  if (single == nullptr || !single->is_array()) fail("post_processor.single", "not an array");
  bool seen_sequence = false;
  spec_.add_bos = spec_.add_eos = false;
  for (const auto& piece : single->as_array()) {
    if (!piece.is_object()) continue;
    const auto& po = piece.as_object();
    if (member(po, "Sequence")) {
      seen_sequence = true;
      continue;
    }
    const json::value* st = member(po, "SpecialToken");
    if (st == nullptr || !st->is_object()) continue;
    const std::string name = string_member(st->as_object(), "id");
    int32_t id = -1;
    if (specials && specials->is_object()) {
      if (const json::value* entry = member(specials->as_object(), name.c_str()); entry && entry->is_object()) {
        const json::value* ids = member(entry->as_object(), "ids");
        if (ids && ids->is_array() && ids->as_array().size() == 1 && ids->as_array()[0].is_int64()) {
          id = static_cast<int32_t>(ids->as_array()[0].as_int64());
        }
      }
    }
    if (id < 0) fail("post_processor", "special token '" + name + "' has no single id");
    if (seen_sequence) {
      spec_.add_eos = true;
      spec_.eos_id = id;
    } else {
      spec_.add_bos = true;
      spec_.bos_id = id;
    }
  }
  return true;
}

}  // namespace aph::text
