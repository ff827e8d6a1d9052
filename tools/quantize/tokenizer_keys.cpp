#include "tools/quantize/tokenizer_keys.hpp"

#include <filesystem>
#include <map>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/gguf_file.hpp"

namespace aph::quantize {

namespace json = boost::json;
namespace fs = std::filesystem;
using gguf::KeyType;

namespace {

constexpr KeyType kStrArr{gguf::kVArray, gguf::kVString};
constexpr KeyType kI32Arr{gguf::kVArray, gguf::kVI32};
constexpr KeyType kF32Arr{gguf::kVArray, gguf::kVF32};

enum TokenType { kNormal = 1, kControl = 3, kUserDefined = 4, kByte = 6 };

// GPT-2's reversible byte -> printable code point map (byte-level BPE).
std::string byte_char(int b) {
  int cp;
  if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
    cp = b;
  } else {
    int n = 0;
    for (int i = 0; i < b; ++i)
      if (!((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || (i >= 174 && i <= 255))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string token_text(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_object() && v.as_object().contains("content")) return std::string(v.at("content").as_string());
  return "";
}

// The pre-tokenizer name the runtime selects its split regex by.
std::string guess_pre(const json::object& tok, const std::string& arch) {
  if (arch == "qwen2" || arch == "qwen3") return "qwen2";
  std::string text = json::serialize(tok.contains("pre_tokenizer") ? tok.at("pre_tokenizer") : json::value());
  if (text.find("\\\\p{N}{1,3}") != std::string::npos) return "llama-bpe";
  if (text.find("ByteLevel") != std::string::npos) return "gpt-2";
  return "default";
}

std::string from_tokenizer_json(gguf::GgufWriter& w, const weights::ModelConfig& cfg,
                                const TokenizerOptions& opt, const fs::path& path) {
  json::object tok = weights::read_json_file(path.string()).as_object();
  const json::object& model = tok.at("model").as_object();
  if (model.at("type").as_string() != "BPE")
    throw Error(APH_ERR_UNSUPPORTED, path.string() + ": only BPE tokenizers are converted (use --vocab-from)");
  const bool byte_fallback = model.contains("byte_fallback") && model.at("byte_fallback").is_bool() &&
                             model.at("byte_fallback").as_bool();
  std::map<int64_t, std::string> by_id;
  for (const auto& kv : model.at("vocab").as_object()) by_id[kv.value().to_number<int64_t>()] = kv.key();
  std::map<int64_t, int> types;
  if (tok.contains("added_tokens"))
    for (const auto& a : tok.at("added_tokens").as_array()) {
      const auto& o = a.as_object();
      int64_t id = o.at("id").to_number<int64_t>();
      by_id[id] = std::string(o.at("content").as_string());
      types[id] = o.contains("special") && o.at("special").as_bool() ? kControl : kUserDefined;
    }
  const int64_t n = std::max<int64_t>(by_id.empty() ? 0 : by_id.rbegin()->first + 1, cfg.vocab_size);
  json::array tokens, ttypes, scores;
  for (int64_t id = 0; id < n; ++id) {
    auto it = by_id.find(id);
    // Ids the tokenizer does not use (padded embedding rows) get placeholders.
    std::string t = it != by_id.end() ? it->second : "[PAD" + std::to_string(id) + "]";
    int type = types.count(id) ? types[id] : it != by_id.end() ? kNormal : kUserDefined;
    if (byte_fallback && type == kNormal && t.size() == 6 && t.rfind("<0x", 0) == 0 && t.back() == '>') type = kByte;
    tokens.emplace_back(t);
    ttypes.emplace_back(type);
    scores.emplace_back(-static_cast<double>(id));
  }
  json::array merges;
  if (model.contains("merges"))
    for (const auto& m : model.at("merges").as_array()) {
      if (m.is_string()) {
        merges.emplace_back(m.get_string());
      } else {
        const auto& pair = m.as_array();
        merges.emplace_back(std::string(pair.at(0).as_string()) + " " + std::string(pair.at(1).as_string()));
      }
    }
  w.add_string("tokenizer.ggml.model", byte_fallback ? "llama" : "gpt2");
  w.add_string("tokenizer.ggml.pre", !opt.pre.empty() ? opt.pre : byte_fallback ? "default" : guess_pre(tok, opt.arch));
  w.add_kv("tokenizer.ggml.tokens", kStrArr, tokens);
  w.add_kv("tokenizer.ggml.token_type", kI32Arr, ttypes);
  // SentencePiece-style vocabularies rank pieces by score; HF's BPE form keeps
  // them in id order, so -id preserves that order.
  if (byte_fallback) w.add_kv("tokenizer.ggml.scores", kF32Arr, scores);
  if (!merges.empty()) w.add_kv("tokenizer.ggml.merges", kStrArr, merges);

  // Special ids: tokenizer_config.json names them, config.json numbers them.
  json::object tcfg;
  fs::path tc = fs::path(opt.hf_dir) / "tokenizer_config.json";
  if (fs::exists(tc)) tcfg = weights::read_json_file(tc.string()).as_object();
  auto id_of = [&](const char* key) -> int64_t {
    if (!tcfg.contains(key)) return -1;
    std::string text = token_text(tcfg.at(key));
    for (const auto& [id, t] : by_id)
      if (t == text) return id;
    return -1;
  };
  int64_t bos = id_of("bos_token"), eos = id_of("eos_token"), pad = id_of("pad_token"), unk = id_of("unk_token");
  if (bos < 0) bos = cfg.bos_token_id;
  if (eos < 0 && !cfg.eos_token_ids.empty()) eos = cfg.eos_token_ids[0];
  if (bos >= 0) w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(bos));
  if (eos >= 0) w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(eos));
  if (pad >= 0) w.add_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(pad));
  if (unk >= 0) w.add_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(unk));
  if (tcfg.contains("add_bos_token") && tcfg.at("add_bos_token").is_bool())
    w.add_bool("tokenizer.ggml.add_bos_token", tcfg.at("add_bos_token").as_bool());
  if (tcfg.contains("chat_template")) {
    const auto& ct = tcfg.at("chat_template");
    if (ct.is_string()) {
      w.add_string("tokenizer.chat_template", std::string(ct.as_string()));
    } else if (ct.is_array()) {
      for (const auto& e : ct.as_array()) {
        std::string name(e.at("name").as_string());
        std::string text(e.at("template").as_string());
        w.add_string(name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name, text);
      }
    }
  }
  return path.string() + " (" + std::to_string(n) + " tokens)";
}

std::string from_gguf(gguf::GgufWriter& w, const weights::ModelConfig& cfg, const std::string& path) {
  auto f = gguf::GgufFile::open(path);
  int copied = 0;
  for (const auto& kv : f->metadata()) {
    std::string_view key = kv.key();
    if (!key.starts_with("tokenizer.")) continue;
    const KeyType* t = f->key_type(key);
    w.add_kv(std::string(key), *t, kv.value());
    ++copied;
  }
  auto it = f->metadata().find("tokenizer.ggml.tokens");
  if (it == f->metadata().end()) throw invalid_argument(path + ": has no tokenizer.ggml.tokens");
  int64_t n = static_cast<int64_t>(it->value().as_array().size());
  if (cfg.vocab_size > 0 && n > cfg.vocab_size)
    throw invalid_argument(path + ": " + std::to_string(n) + " tokens exceed the model's vocab_size " +
                           std::to_string(cfg.vocab_size));
  return path + " (" + std::to_string(copied) + " tokenizer keys)";
}

std::string synthetic(gguf::GgufWriter& w, const weights::ModelConfig& cfg) {
  // Byte-level tokens for the first 256 ids, placeholders after; no merges,
  // so text encodes byte by byte. The last id doubles as bos/eos.
  const int64_t n = cfg.vocab_size;
  if (n <= 0) throw invalid_argument("config.json: vocab_size is needed for a synthetic vocabulary");
  json::array tokens, types;
  for (int64_t id = 0; id < n; ++id) {
    tokens.emplace_back(id < 256 ? byte_char(static_cast<int>(id)) : "<|synthetic_" + std::to_string(id) + "|>");
    types.emplace_back(id == n - 1 ? kControl : kNormal);
  }
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "gpt-2");
  w.add_kv("tokenizer.ggml.tokens", kStrArr, tokens);
  w.add_kv("tokenizer.ggml.token_type", kI32Arr, types);
  w.add_kv("tokenizer.ggml.merges", kStrArr, json::array{});
  w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(n - 1));
  w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(n - 1));
  return "synthetic byte-level vocabulary of " + std::to_string(n) + " tokens";
}

}  // namespace

std::string add_tokenizer_keys(gguf::GgufWriter& w, const weights::ModelConfig& cfg,
                               const TokenizerOptions& opt) {
  if (!opt.vocab_from.empty()) return from_gguf(w, cfg, opt.vocab_from);
  fs::path tj = fs::path(opt.hf_dir) / "tokenizer.json";
  if (fs::exists(tj)) return from_tokenizer_json(w, cfg, opt, tj);
  return synthetic(w, cfg);
}

}  // namespace aph::quantize
